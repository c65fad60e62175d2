// Vector kernels for the hot loops (dot products, scaled accumulation; dot_f32 itself is in
// core/dot-f32.h, shared with the quantized row dots). The summation order of
// each result depends only on n, never on where the caller's work was split, so results are the
// same for any thread count. AVX2 (+FMA, F16C where present) with a plain scalar fallback.
#pragma once

#include "core/dot-f32.h"
#include "core/fp16.h"

#include <cstdint>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace hexnpu::cpu {

// y[i] += a * x[i]
inline void axpy_f32(float * y, const float * x, float a, int64_t n) {
    int64_t i = 0;
#if defined(__AVX2__)
    const __m256 va = _mm256_set1_ps(a);
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(y + i, mul_add(_mm256_loadu_ps(x + i), va, _mm256_loadu_ps(y + i)));
    }
#endif
    for (; i < n; ++i) {
        y[i] += a * x[i];
    }
}

// sum_i fp16(a[i]) * b[i]: F16 keys against an f32 query without a separate conversion pass.
inline float dot_f16_f32(const uint16_t * a, const float * b, int64_t n) {
    int64_t i   = 0;
    float   sum = 0.0f;
#if defined(__AVX2__) && defined(__F16C__)
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (; i + 16 <= n; i += 16) {
        const __m256 a0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(a + i)));
        const __m256 a1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(a + i + 8)));
        acc0            = mul_add(a0, _mm256_loadu_ps(b + i), acc0);
        acc1            = mul_add(a1, _mm256_loadu_ps(b + i + 8), acc1);
    }
    for (; i + 8 <= n; i += 8) {
        const __m256 a0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(a + i)));
        acc0            = mul_add(a0, _mm256_loadu_ps(b + i), acc0);
    }
    sum = horizontal_sum(_mm256_add_ps(acc0, acc1));
#endif
    for (; i < n; ++i) {
        sum += fp16_to_fp32(a[i]) * b[i];
    }
    return sum;
}

// y[i] += a * fp16(x[i])
inline void axpy_f16(float * y, const uint16_t * x, float a, int64_t n) {
    int64_t i = 0;
#if defined(__AVX2__) && defined(__F16C__)
    const __m256 va = _mm256_set1_ps(a);
    for (; i + 8 <= n; i += 8) {
        const __m256 x0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(x + i)));
        _mm256_storeu_ps(y + i, mul_add(x0, va, _mm256_loadu_ps(y + i)));
    }
#endif
    for (; i < n; ++i) {
        y[i] += a * fp16_to_fp32(x[i]);
    }
}

// y[i] *= a
inline void scale_f32(float * y, float a, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        y[i] *= a;
    }
}

} // namespace hexnpu::cpu
