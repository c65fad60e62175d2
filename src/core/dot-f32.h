// The one summation order of hexnpu's f32 dot products: four 8-wide accumulators over 32-element
// steps, an 8-wide step into the first, the sum of the four, then a scalar tail. dot_f32 and the
// quantized row dots (dot_row_* in quants.h, which feed dequantized blocks straight from registers)
// both go through dot_f32_accumulator, so a quantized row's dot is bit for bit the dot of its
// dequantized f32 copy, whatever the type.
#pragma once

#include <cstdint>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace hexnpu {

#if defined(__AVX2__)
inline __m256 mul_add(__m256 a, __m256 b, __m256 acc) {
#if defined(__FMA__)
    return _mm256_fmadd_ps(a, b, acc);
#else
    return _mm256_add_ps(_mm256_mul_ps(a, b), acc);
#endif
}

inline float horizontal_sum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s        = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s        = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Calls: any number of add32 (elements 0, 32, 64, ... in order), then at most a few add8, then
// sum() and the scalar tail added to it in element order.
struct dot_f32_accumulator {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};

    // Four independent accumulators hide the add latency.
    void add32(const __m256 (&a)[4], const float * y) {
        for (int k = 0; k < 4; ++k) {
            acc[k] = mul_add(a[k], _mm256_loadu_ps(y + 8 * k), acc[k]);
        }
    }
    void add32(const float * a, const float * y) {
        const __m256 v[4] = {_mm256_loadu_ps(a), _mm256_loadu_ps(a + 8), _mm256_loadu_ps(a + 16),
                             _mm256_loadu_ps(a + 24)};
        add32(v, y);
    }
    void  add8(const float * a, const float * y) { acc[0] = mul_add(_mm256_loadu_ps(a), _mm256_loadu_ps(y), acc[0]); }
    float sum() const { return horizontal_sum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]))); }
};
#endif

// The elements [i, n) of a dot after `sum` covered [0, i): the 8-wide steps (AVX2) and the tail.
#if defined(__AVX2__)
inline float finish_dot_f32(dot_f32_accumulator & acc, const float * a, const float * b, int64_t i, int64_t n) {
    for (; i + 8 <= n; i += 8) {
        acc.add8(a + i, b + i);
    }
    float sum = acc.sum();
#else
inline float finish_dot_f32(float sum, const float * a, const float * b, int64_t i, int64_t n) {
#endif
    for (; i < n; ++i) {
        sum += a[i] * b[i];
    }
    return sum;
}

// sum_i a[i] * b[i]
inline float dot_f32(const float * a, const float * b, int64_t n) {
    int64_t i = 0;
#if defined(__AVX2__)
    dot_f32_accumulator acc;
    for (; i + 32 <= n; i += 32) {
        acc.add32(a + i, b + i);
    }
    return finish_dot_f32(acc, a, b, i, n);
#else
    return finish_dot_f32(0.0f, a, b, i, n);
#endif
}

// dot_f32(dequantized row, y) for any type with a row dequantizer, without a row-sized buffer:
// chunks of 256 elements (a multiple of every block size and of 32, so only the last chunk can hold
// the 8-wide steps and the tail) are dequantized on the stack and summed in dot_f32's order.
template <void (*Dequantize)(const void *, float *, int64_t), int64_t BlockElems, int64_t BlockBytes>
float dot_via_dequantize(const void * row, const float * y, int64_t n) {
    constexpr int64_t kChunk = 256;
    static_assert(kChunk % BlockElems == 0 && kChunk % 32 == 0);
    alignas(32) float buf[kChunk];
    const auto *      src = static_cast<const uint8_t *>(row);
#if defined(__AVX2__)
    dot_f32_accumulator acc;
#else
    float acc = 0.0f;
#endif
    int64_t first = 0;
    for (; first + kChunk < n; first += kChunk, src += kChunk / BlockElems * BlockBytes) {
        Dequantize(src, buf, kChunk);
#if defined(__AVX2__)
        for (int64_t i = 0; i < kChunk; i += 32) {
            acc.add32(buf + i, y + first + i);
        }
#else
        acc = finish_dot_f32(acc, buf, y + first, 0, kChunk);
#endif
    }
    const int64_t last = n - first;
    Dequantize(src, buf, last);
    int64_t i = 0;
#if defined(__AVX2__)
    for (; i + 32 <= last; i += 32) {
        acc.add32(buf + i, y + first + i);
    }
#endif
    return finish_dot_f32(acc, buf, y + first, i, last);
}

} // namespace hexnpu

// dot_row_T of a type that has no block decoder, through its row dequantizer.
#define HEXNPU_DOT_VIA_DEQUANTIZE(T, BLOCK_ELEMS, BLOCK_BYTES)                                        \
    float dot_row_##T(const void * src, const float * y, int64_t n) {                                 \
        return dot_via_dequantize<dequantize_row_##T, BLOCK_ELEMS, BLOCK_BYTES>(src, y, n);           \
    }
