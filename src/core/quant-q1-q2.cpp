// Q1_0 (128 elements, one sign bit each) and Q2_0 (64 elements, 2-bit codes for -d, 0, +d, +2d),
// with bits and codes packed LSB first in element order (formats.md §1.3).
#include "dot-f32.h"
#include "fp16.h"
#include "quant-avx2.h"
#include "quant-blocks.h"
#include "quant-common.h"
#include "quants.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hexnpu {

void dequantize_row_q1_0_ref(const void * src, float * dst, int64_t n) {
    const auto * blocks = static_cast<const block_q1_0 *>(src);
    for (int64_t b = 0; b < n / QK1_0; ++b, dst += QK1_0) {
        const float d = fp16_to_fp32(blocks[b].d);
        for (int e = 0; e < QK1_0; ++e) {
            dst[e] = (blocks[b].qs[e / 8] >> (e % 8)) & 1 ? d : -d;
        }
    }
}

void quantize_row_q1_0_ref(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q1_0 *>(dst);
    for (int64_t b = 0; b < n / QK1_0; ++b, src += QK1_0) {
        float sum = 0.0f;
        for (int e = 0; e < QK1_0; ++e) {
            sum += std::fabs(src[e]);
        }
        blocks[b].d = fp32_to_fp16(sum / QK1_0);
        std::memset(blocks[b].qs, 0, sizeof(blocks[b].qs));
        for (int e = 0; e < QK1_0; ++e) {
            blocks[b].qs[e / 8] |= uint8_t((src[e] >= 0.0f) << (e % 8));  // -0.0 counts as positive
        }
    }
}

void dequantize_row_q2_0_ref(const void * src, float * dst, int64_t n) {
    const auto * blocks = static_cast<const block_q2_0 *>(src);
    for (int64_t b = 0; b < n / QK2_0; ++b, dst += QK2_0) {
        const float d = fp16_to_fp32(blocks[b].d);
        for (int e = 0; e < QK2_0; ++e) {
            dst[e] = (((blocks[b].qs[e / 4] >> (2 * (e % 4))) & 3) - 1) * d;
        }
    }
}

void quantize_row_q2_0_ref(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q2_0 *>(dst);
    for (int64_t b = 0; b < n / QK2_0; ++b, src += QK2_0) {
        const float d  = std::fabs(first_max_abs(src, QK2_0));
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        blocks[b].d    = fp32_to_fp16(d);
        std::memset(blocks[b].qs, 0, sizeof(blocks[b].qs));
        for (int e = 0; e < QK2_0; ++e) {
            // |x*id| <= 1, so code 3 (+2d) is never chosen.
            const int code = std::clamp(truncate_to_int32(std::round(src[e] * id)) + 1, 0, 3);
            blocks[b].qs[e / 4] |= uint8_t(code << (2 * (e % 4)));
        }
    }
}

// Only the dequantizers of these types are vectorized.
void quantize_row_q1_0(const float * src, void * dst, int64_t n) { quantize_row_q1_0_ref(src, dst, n); }
void quantize_row_q2_0(const float * src, void * dst, int64_t n) { quantize_row_q2_0_ref(src, dst, n); }

#if defined(__AVX2__)

void dequantize_row_q1_0(const void * src, float * dst, int64_t n) {
    const auto *  blocks = static_cast<const block_q1_0 *>(src);
    const __m256i bit    = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    for (int64_t b = 0; b < n / QK1_0; ++b) {
        const float  d        = fp16_to_fp32(blocks[b].d);
        const __m256 positive = _mm256_set1_ps(d);
        const __m256 negative = _mm256_set1_ps(-d);
        for (int k = 0; k < QK1_0 / 8; ++k, dst += 8) {
            const __m256i set = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(blocks[b].qs[k]), bit), bit);
            _mm256_storeu_ps(dst, _mm256_blendv_ps(negative, positive, _mm256_castsi256_ps(set)));
        }
    }
}

void dequantize_row_q2_0(const void * src, float * dst, int64_t n) {
    const auto * blocks = static_cast<const block_q2_0 *>(src);
    // Eight codes fill 16 bits: element i of a group sits at bit 2i of the little-endian pair of bytes.
    const __m256i shift = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    for (int64_t b = 0; b < n / QK2_0; ++b) {
        const __m256 d = _mm256_set1_ps(fp16_to_fp32(blocks[b].d));
        for (int k = 0; k < QK2_0 / 8; ++k, dst += 8) {
            const int     pair  = blocks[b].qs[2 * k] | blocks[b].qs[2 * k + 1] << 8;
            const __m256i codes = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(pair), shift), _mm256_set1_epi32(3));
            const __m256  value = _mm256_cvtepi32_ps(_mm256_sub_epi32(codes, _mm256_set1_epi32(1)));
            _mm256_storeu_ps(dst, _mm256_mul_ps(value, d));
        }
    }
}

#else

void dequantize_row_q1_0(const void * src, float * dst, int64_t n) { dequantize_row_q1_0_ref(src, dst, n); }
void dequantize_row_q2_0(const void * src, float * dst, int64_t n) { dequantize_row_q2_0_ref(src, dst, n); }

#endif

HEXNPU_DOT_VIA_DEQUANTIZE(q1_0, QK1_0, sizeof(block_q1_0))
HEXNPU_DOT_VIA_DEQUANTIZE(q2_0, QK2_0, sizeof(block_q2_0))

} // namespace hexnpu
