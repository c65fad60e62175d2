// Q8_0: 32 elements, int8 codes, x = q*d (formats.md §1.3).
#include "dot-f32.h"
#include "fp16.h"
#include "quant-avx2.h"
#include "quant-blocks.h"
#include "quant-common.h"
#include "quants.h"

#include <cmath>

namespace hexnpu {
namespace {

// GGML's MAX(a, b) = a > b ? a : b, which a NaN element enters (and the next element leaves).
float max_abs(const float * x, int n) {
    float amax = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float a = std::fabs(x[i]);
        amax          = amax > a ? amax : a;
    }
    return amax;
}

} // namespace

void dequantize_row_q8_0_ref(const void * src, float * dst, int64_t n) {
    const auto * blocks = static_cast<const block_q8_0 *>(src);
    for (int64_t b = 0; b < n / QK8_0; ++b, dst += QK8_0) {
        const float d = fp16_to_fp32(blocks[b].d);
        for (int e = 0; e < QK8_0; ++e) {
            dst[e] = blocks[b].qs[e] * d;
        }
    }
}

void quantize_row_q8_0_ref(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q8_0 *>(dst);
    for (int64_t b = 0; b < n / QK8_0; ++b, src += QK8_0) {
        const float d  = max_abs(src, QK8_0) / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        blocks[b].d    = fp32_to_fp16(d);
        for (int e = 0; e < QK8_0; ++e) {
            blocks[b].qs[e] = int8_t(truncate_to_int32(std::round(src[e] * id)));
        }
    }
}

#if defined(__AVX2__)
namespace {

// std::round (half away from zero), exactly: truncate, then step away from zero when the dropped
// fraction, computed exactly as x - trunc(x), is at least one half.
__m256 round_half_away(__m256 x) {
    const __m256 truncated = _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 fraction  = avx2::abs_ps(_mm256_sub_ps(x, truncated));
    const __m256 step      = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(x, _mm256_set1_ps(-0.0f)));
    return _mm256_add_ps(truncated, _mm256_and_ps(_mm256_cmp_ps(fraction, _mm256_set1_ps(0.5f), _CMP_GE_OQ), step));
}

template <class Sink> void decode_q8_0(const void * src, int64_t n, Sink sink) {
    const auto * blocks = static_cast<const block_q8_0 *>(src);
    for (int64_t b = 0; b < n / QK8_0; ++b) {
        const int8_t *      qs = blocks[b].qs;
        const avx2::Codes32 q  = {{avx2::load_i8x8(qs), avx2::load_i8x8(qs + 8), avx2::load_i8x8(qs + 16),
                                   avx2::load_i8x8(qs + 24)}};
        sink(b * QK8_0, avx2::scaled(q, fp16_to_fp32(blocks[b].d)));
    }
}

} // namespace

HEXNPU_DECODED_ROW_FNS(q8_0)

void quantize_row_q8_0(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q8_0 *>(dst);
    for (int64_t b = 0; b < n / QK8_0; ++b, src += QK8_0) {
        const avx2::Floats32 v  = avx2::load_floats32(src);
        const float          d  = avx2::max_abs(v) / 127;
        const float          id = d != 0.0f ? 1.0f / d : 0.0f;
        // With finite input and a finite 1/d, |x*id| <= 127 up to rounding: the narrowing is exact.
        if (!avx2::all_finite(v) || !std::isfinite(id)) {
            quantize_row_q8_0_ref(src, &blocks[b], QK8_0);
            continue;
        }
        const __m256 scale = _mm256_set1_ps(id);
        __m256       r[4];
        for (int k = 0; k < 4; ++k) {
            r[k] = round_half_away(_mm256_mul_ps(v.v[k], scale));
        }
        blocks[b].d = fp32_to_fp16(d);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(blocks[b].qs), avx2::truncate_to_bytes<false>(r));
    }
}

#else

void dequantize_row_q8_0(const void * src, float * dst, int64_t n) { dequantize_row_q8_0_ref(src, dst, n); }
HEXNPU_DOT_VIA_DEQUANTIZE(q8_0, QK8_0, sizeof(block_q8_0))
void quantize_row_q8_0(const float * src, void * dst, int64_t n) { quantize_row_q8_0_ref(src, dst, n); }

#endif

} // namespace hexnpu
