// Q2_K: 256 elements in 16 sub-blocks of 16, x = (d·sc)·q − dmin·m with 4-bit sc and m
// (formats.md §1.3).
#include "dot-f32.h"
#include "fp16.h"
#include "quant-blocks.h"
#include "quant-kquant-search.h"
#include "quants.h"

#include <algorithm>
#include <cmath>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace hexnpu {
namespace {

void quantize_block_q2_K(const float * x, block_q2_K & y, kquant::Qkx2Search make_qkx2_quants) {
    constexpr float kScaleLevels = 15.f;
    constexpr kquant::AffineSearch kSearch{-0.5f, 0.1f, 15, true};

    uint8_t L[QK_K];
    float   weights[16];
    float   scales[QK_K / 16];
    float   mins[QK_K / 16];
    float   max_scale = 0;  // the min is subtracted, so scales are positive
    float   max_min   = 0;
    for (int j = 0; j < QK_K / 16; ++j) {
        for (int l = 0; l < 16; ++l) {
            weights[l] = std::fabs(x[16 * j + l]);
        }
        scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], kSearch);
        if (scales[j] > max_scale) {
            max_scale = scales[j];
        }
        if (mins[j] > max_min) {
            max_min = mins[j];
        }
    }

    if (max_scale > 0) {
        const float iscale = kScaleLevels / max_scale;
        for (int j = 0; j < QK_K / 16; ++j) {
            y.scales[j] = uint8_t(nearest_int(iscale * scales[j]));
        }
        y.d = fp32_to_fp16(max_scale / kScaleLevels);
    } else {
        for (uint8_t & s : y.scales) {
            s = 0;
        }
        y.d = fp32_to_fp16(0.f);
    }
    if (max_min > 0) {
        const float iscale = kScaleLevels / max_min;
        for (int j = 0; j < QK_K / 16; ++j) {
            y.scales[j] = uint8_t(y.scales[j] | nearest_int(iscale * mins[j]) << 4);
        }
        y.dmin = fp32_to_fp16(max_min / kScaleLevels);
    } else {
        y.dmin = fp32_to_fp16(0.f);
    }

    // Requantize against the scales as stored; a sub-block whose step is 0 keeps its first-pass codes.
    const float d    = fp16_to_fp32(y.d);
    const float dmin = fp16_to_fp32(y.dmin);
    for (int j = 0; j < QK_K / 16; ++j) {
        const float dl = d * float(y.scales[j] & 15);
        if (dl == 0) {
            continue;
        }
        const float dm = dmin * float(y.scales[j] >> 4);
        for (int i = 0; i < 16; ++i) {
            const int l = nearest_int((x[16 * j + i] + dm) / dl);
            L[16 * j + i] = uint8_t(std::max(0, std::min(3, l)));
        }
    }

    for (int h = 0; h < 2; ++h) {
        const uint8_t * Lh = L + 128 * h;
        for (int l = 0; l < 32; ++l) {
            y.qs[32 * h + l] = uint8_t(Lh[l] | Lh[l + 32] << 2 | Lh[l + 64] << 4 | Lh[l + 96] << 6);
        }
    }
}

} // namespace

void dequantize_row_q2_K_ref(const void * src, float * dst, int64_t n) {
    const auto * blocks = static_cast<const block_q2_K *>(src);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const block_q2_K & blk  = blocks[b];
        const float        d    = fp16_to_fp32(blk.d);
        const float        dmin = fp16_to_fp32(blk.dmin);
        float *            y    = dst + b * QK_K;
        for (int t = 0; t < QK_K / 16; ++t) {
            const float dl = d * float(blk.scales[t] & 15);
            const float ml = dmin * float(blk.scales[t] >> 4);
            for (int e = 16 * t; e < 16 * t + 16; ++e) {
                const int q = (blk.qs[32 * (e >> 7) + (e & 31)] >> 2 * ((e >> 5) & 3)) & 3;
                y[e] = dl * float(q) - ml;
            }
        }
    }
}

void quantize_row_q2_K_ref(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q2_K *>(dst);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        quantize_block_q2_K(src + b * QK_K, blocks[b], kquant::make_qkx2_quants);
    }
}

#if defined(__AVX2__)
void dequantize_row_q2_K(const void * src, float * dst, int64_t n) {
    const auto *  blocks   = static_cast<const block_q2_K *>(src);
    const __m256i two_bits = _mm256_set1_epi8(3);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const block_q2_K & blk  = blocks[b];
        const float        d    = fp16_to_fp32(blk.d);
        const float        dmin = fp16_to_fp32(blk.dmin);
        float *            y    = dst + b * QK_K;
        for (int h = 0; h < 2; ++h) {
            const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(blk.qs + 32 * h));
            for (int j = 0; j < 4; ++j) {
                // Codes of elements 128h + 32j + 0..31, i.e. sub-blocks 8h + 2j and 8h + 2j + 1.
                const __m256i codes = _mm256_and_si256(_mm256_srl_epi16(packed, _mm_cvtsi32_si128(2 * j)), two_bits);
                for (int half = 0; half < 2; ++half) {
                    const int     t     = 8 * h + 2 * j + half;
                    const __m256  dl    = _mm256_set1_ps(d * float(blk.scales[t] & 15));
                    const __m256  ml    = _mm256_set1_ps(dmin * float(blk.scales[t] >> 4));
                    const __m128i bytes = half ? _mm256_extracti128_si256(codes, 1) : _mm256_castsi256_si128(codes);
                    const __m256  q0    = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
                    const __m256  q1    = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8)));
                    // Multiply then subtract, two roundings, as the reference does (no FMA).
                    _mm256_storeu_ps(y + 16 * t, _mm256_sub_ps(_mm256_mul_ps(dl, q0), ml));
                    _mm256_storeu_ps(y + 16 * t + 8, _mm256_sub_ps(_mm256_mul_ps(dl, q1), ml));
                }
            }
        }
    }
}
#else
void dequantize_row_q2_K(const void * src, float * dst, int64_t n) { dequantize_row_q2_K_ref(src, dst, n); }
#endif

void quantize_row_q2_K(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q2_K *>(dst);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        quantize_block_q2_K(src + b * QK_K, blocks[b], kquant::make_qkx2_quants_fast);
    }
}

HEXNPU_DOT_VIA_DEQUANTIZE(q2_K, QK_K, sizeof(block_q2_K))

} // namespace hexnpu
