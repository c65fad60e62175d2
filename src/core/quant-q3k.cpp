// Q3_K: 256 elements in 16 sub-blocks of 16, x = (d·S)·q with a signed 6-bit S and q in [−4, 3]
// split into a 2-bit plane and a high-bit mask (formats.md §1.3).
#include "dot-f32.h"
#include "fp16.h"
#include "quant-blocks.h"
#include "quant-kquant-search.h"
#include "quants.h"

#include <algorithm>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace hexnpu {
namespace {

// Signed scale S in [−32, 31] of sub-block t: low nibble in scales[t % 8] (high nibble for t >= 8),
// top two bits in scales[8 + t % 4] at bit 2·(t / 4).
int decode_scale(const uint8_t * scales, int t) {
    const int lo4 = t < 8 ? scales[t] & 15 : scales[t - 8] >> 4;
    const int hi2 = (scales[8 + (t & 3)] >> 2 * (t >> 2)) & 3;
    return (lo4 | hi2 << 4) - 32;
}

void quantize_block_q3_K(const float * x, block_q3_K & y) {
    int8_t L[QK_K];
    float  scales[QK_K / 16];
    for (int j = 0; j < QK_K / 16; ++j) {
        scales[j] = kquant::make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
    }
    const float max_scale = first_max_abs(scales, QK_K / 16);

    std::memset(y.scales, 0, sizeof(y.scales));
    if (max_scale != 0) {
        // The sign makes the largest scale encode as −32, the end of the range with no clamping.
        const float iscale = -32.f / max_scale;
        for (int j = 0; j < QK_K / 16; ++j) {
            const int l = std::max(-32, std::min(31, nearest_int(iscale * scales[j]))) + 32;
            if (j < 8) {
                y.scales[j] = uint8_t(l & 15);
            } else {
                y.scales[j - 8] = uint8_t(y.scales[j - 8] | (l & 15) << 4);
            }
            y.scales[8 + j % 4] = uint8_t(y.scales[8 + j % 4] | (l >> 4) << 2 * (j / 4));
        }
        y.d = fp32_to_fp16(1 / iscale);
    } else {
        y.d = fp32_to_fp16(0.f);
    }

    // Requantize against the scales as stored; a sub-block whose step is 0 keeps its first-pass codes.
    const float d = fp16_to_fp32(y.d);
    for (int j = 0; j < QK_K / 16; ++j) {
        const float dl = d * float(decode_scale(y.scales, j));
        if (dl == 0) {
            continue;
        }
        for (int i = 0; i < 16; ++i) {
            const int l   = nearest_int(x[16 * j + i] / dl);
            L[16 * j + i] = int8_t(std::max(-4, std::min(3, l)) + 4);
        }
    }

    // Bit 2 of code e goes to hmask[e % 32], bit e / 32; the low two bits are packed like Q2_K.
    std::memset(y.hmask, 0, sizeof(y.hmask));
    for (int e = 0; e < QK_K; ++e) {
        if (L[e] > 3) {
            y.hmask[e % 32] = uint8_t(y.hmask[e % 32] | 1 << (e / 32));
            L[e] = int8_t(L[e] - 4);
        }
    }
    for (int h = 0; h < 2; ++h) {
        const int8_t * Lh = L + 128 * h;
        for (int l = 0; l < 32; ++l) {
            y.qs[32 * h + l] = uint8_t(Lh[l] | Lh[l + 32] << 2 | Lh[l + 64] << 4 | Lh[l + 96] << 6);
        }
    }
}

} // namespace

void dequantize_row_q3_K_ref(const void * src, float * dst, int64_t n) {
    const auto * blocks = static_cast<const block_q3_K *>(src);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const block_q3_K & blk = blocks[b];
        const float        d   = fp16_to_fp32(blk.d);
        float *            y   = dst + b * QK_K;
        for (int t = 0; t < QK_K / 16; ++t) {
            const float dl = d * float(decode_scale(blk.scales, t));
            for (int e = 16 * t; e < 16 * t + 16; ++e) {
                const int low2 = (blk.qs[32 * (e >> 7) + (e & 31)] >> 2 * ((e >> 5) & 3)) & 3;
                const int high = (blk.hmask[e & 31] >> (e >> 5)) & 1;
                y[e] = dl * float(low2 - (high ? 0 : 4));
            }
        }
    }
}

void quantize_row_q3_K_ref(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q3_K *>(dst);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        quantize_block_q3_K(src + b * QK_K, blocks[b]);
    }
}

#if defined(__AVX2__)
void dequantize_row_q3_K(const void * src, float * dst, int64_t n) {
    const auto *  blocks   = static_cast<const block_q3_K *>(src);
    const __m256i two_bits = _mm256_set1_epi8(3);
    const __m256i four     = _mm256_set1_epi8(4);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const block_q3_K & blk   = blocks[b];
        const float        d     = fp16_to_fp32(blk.d);
        float *            y     = dst + b * QK_K;
        const __m256i      hmask = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(blk.hmask));
        for (int h = 0; h < 2; ++h) {
            const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(blk.qs + 32 * h));
            for (int j = 0; j < 4; ++j) {
                // Elements 128h + 32j + l (l < 32) take their high bit from hmask[l], bit 4h + j.
                const __m256i low2   = _mm256_and_si256(_mm256_srl_epi16(packed, _mm_cvtsi32_si128(2 * j)), two_bits);
                const __m256i bit    = _mm256_set1_epi8(char(1 << (4 * h + j)));
                const __m256i clear  = _mm256_cmpeq_epi8(_mm256_and_si256(hmask, bit), _mm256_setzero_si256());
                const __m256i codes  = _mm256_sub_epi8(low2, _mm256_and_si256(clear, four));
                for (int half = 0; half < 2; ++half) {
                    const int     t     = 8 * h + 2 * j + half;
                    const __m256  dl    = _mm256_set1_ps(d * float(decode_scale(blk.scales, t)));
                    const __m128i bytes = half ? _mm256_extracti128_si256(codes, 1) : _mm256_castsi256_si128(codes);
                    const __m256  q0    = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
                    const __m256  q1    = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(bytes, 8)));
                    _mm256_storeu_ps(y + 16 * t, _mm256_mul_ps(dl, q0));
                    _mm256_storeu_ps(y + 16 * t + 8, _mm256_mul_ps(dl, q1));
                }
            }
        }
    }
}
#else
void dequantize_row_q3_K(const void * src, float * dst, int64_t n) { dequantize_row_q3_K_ref(src, dst, n); }
#endif

// make_q3_quants refines codes one at a time, each move depending on the last: nothing to batch,
// so the reference is the fast path.
void quantize_row_q3_K(const float * src, void * dst, int64_t n) { quantize_row_q3_K_ref(src, dst, n); }

HEXNPU_DOT_VIA_DEQUANTIZE(q3_K, QK_K, sizeof(block_q3_K))

} // namespace hexnpu
