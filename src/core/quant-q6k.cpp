// Q6_K: 256 elements in 16 sub-blocks of 16, x = (d·sc)·(q − 32) with int8 sc and 6-bit codes
// split into a 4-bit plane and a 2-bit plane (formats.md §1.3).
#include "dot-f32.h"
#include "fp16.h"
#include "quant-avx2.h"
#include "quant-blocks.h"
#include "quant-kquant-search.h"
#include "quants.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace hexnpu {
namespace {

void quantize_block_q6_K(const float * x, block_q6_K & y, kquant::QxSearch make_qx_quants) {
    int8_t L[QK_K];
    float  scales[QK_K / 16];
    for (int j = 0; j < QK_K / 16; ++j) {
        scales[j] = make_qx_quants(16, 32, x + 16 * j, L + 16 * j);
    }
    const float max_scale = first_max_abs(scales, QK_K / 16);
    if (std::fabs(max_scale) < kquant::GROUP_MAX_EPS) {
        std::memset(&y, 0, sizeof(y));
        return;
    }

    // The sign makes the largest scale encode as −128, the end of the int8 range with no clamping.
    const float iscale = -128.f / max_scale;
    y.d = fp32_to_fp16(1 / iscale);
    for (int j = 0; j < QK_K / 16; ++j) {
        y.scales[j] = int8_t(std::min(127, nearest_int(iscale * scales[j])));
    }

    // Requantize against the scales as stored; a sub-block whose step is 0 keeps its first-pass codes.
    const float d = fp16_to_fp32(y.d);
    for (int j = 0; j < QK_K / 16; ++j) {
        const float dl = d * float(y.scales[j]);
        if (dl == 0) {
            continue;
        }
        for (int i = 0; i < 16; ++i) {
            const int l   = nearest_int(x[16 * j + i] / dl);
            L[16 * j + i] = int8_t(std::max(-32, std::min(31, l)) + 32);
        }
    }

    // Per 128-element half h and 32-element group g: the low nibbles of groups 0/1 fill the low
    // nibbles of ql[64h .. 64h + 63], groups 2/3 the high nibbles; the top two bits of group g sit at
    // bit 2g of qh[32h + l].
    for (int h = 0; h < 2; ++h) {
        const int8_t * Lh = L + 128 * h;
        uint8_t *      ql = y.ql + 64 * h;
        uint8_t *      qh = y.qh + 32 * h;
        for (int l = 0; l < 32; ++l) {
            ql[l]      = uint8_t((Lh[l] & 15) | (Lh[l + 64] & 15) << 4);
            ql[l + 32] = uint8_t((Lh[l + 32] & 15) | (Lh[l + 96] & 15) << 4);
            qh[l]      = uint8_t(Lh[l] >> 4 | (Lh[l + 32] >> 4) << 2 | (Lh[l + 64] >> 4) << 4 | (Lh[l + 96] >> 4) << 6);
        }
    }
}

#if defined(__AVX2__)
// dl_low·q for the 16 low and dl_high·q for the 16 high signed byte codes of q.
inline avx2::Floats32 scaled_halves(__m256i q, float dl_low, float dl_high) {
    const __m128i lo = _mm256_castsi256_si128(q);
    const __m128i hi = _mm256_extracti128_si256(q, 1);
    const __m256  sl = _mm256_set1_ps(dl_low), sh = _mm256_set1_ps(dl_high);
    return {{_mm256_mul_ps(sl, avx2::int8x8_to_float(lo)), _mm256_mul_ps(sl, avx2::int8x8_to_float(_mm_srli_si128(lo, 8))),
             _mm256_mul_ps(sh, avx2::int8x8_to_float(hi)), _mm256_mul_ps(sh, avx2::int8x8_to_float(_mm_srli_si128(hi, 8)))}};
}
#endif

} // namespace

void dequantize_row_q6_K_ref(const void * src, float * dst, int64_t n) {
    const auto * blocks = static_cast<const block_q6_K *>(src);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const block_q6_K & blk = blocks[b];
        const float        d   = fp16_to_fp32(blk.d);
        float *            y   = dst + b * QK_K;
        for (int t = 0; t < QK_K / 16; ++t) {
            const float dl = d * float(blk.scales[t]);
            for (int e = 16 * t; e < 16 * t + 16; ++e) {
                const int h    = e >> 7;
                const int g    = (e >> 5) & 3;
                const int l    = e & 31;
                const int low4 = (blk.ql[64 * h + 32 * (g & 1) + l] >> 4 * (g >> 1)) & 15;
                const int high = (blk.qh[32 * h + l] >> 2 * g) & 3;
                y[e] = dl * float((low4 | high << 4) - 32);
            }
        }
    }
}

void quantize_row_q6_K_ref(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q6_K *>(dst);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        quantize_block_q6_K(src + b * QK_K, blocks[b], kquant::make_qx_quants);
    }
}

#if defined(__AVX2__)
namespace {
template <class Sink> void decode_q6_K(const void * src, int64_t n, Sink sink) {
    const auto *  blocks    = static_cast<const block_q6_K *>(src);
    const __m256i nibble    = _mm256_set1_epi8(15);
    const __m256i high_bits = _mm256_set1_epi8(0x30);
    const __m256i offset    = _mm256_set1_epi8(32);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const block_q6_K & blk = blocks[b];
        const float        d   = fp16_to_fp32(blk.d);
        for (int h = 0; h < 2; ++h) {
            const auto    load = [](const uint8_t * p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)); };
            const __m256i ql0  = load(blk.ql + 64 * h);
            const __m256i ql1  = load(blk.ql + 64 * h + 32);
            const __m256i qh   = load(blk.qh + 32 * h);
            // Group g's two high bits move from bit 2g to bits 4..5 of the same byte; the 16-bit
            // shifts leak bits across bytes only outside the mask.
            const __m256i codes[4] = {
                _mm256_or_si256(_mm256_and_si256(ql0, nibble), _mm256_and_si256(_mm256_slli_epi16(qh, 4), high_bits)),
                _mm256_or_si256(_mm256_and_si256(ql1, nibble), _mm256_and_si256(_mm256_slli_epi16(qh, 2), high_bits)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), nibble), _mm256_and_si256(qh, high_bits)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), nibble),
                                _mm256_and_si256(_mm256_srli_epi16(qh, 2), high_bits)),
            };
            for (int g = 0; g < 4; ++g) {
                const __m256i q = _mm256_sub_epi8(codes[g], offset);
                const int     t = 8 * h + 2 * g;
                sink(b * QK_K + 16 * t, scaled_halves(q, d * float(blk.scales[t]), d * float(blk.scales[t + 1])));
            }
        }
    }
}
} // namespace

HEXNPU_DECODED_ROW_FNS(q6_K)
#else
void dequantize_row_q6_K(const void * src, float * dst, int64_t n) { dequantize_row_q6_K_ref(src, dst, n); }
HEXNPU_DOT_VIA_DEQUANTIZE(q6_K, QK_K, sizeof(block_q6_K))
#endif

void quantize_row_q6_K(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q6_K *>(dst);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        quantize_block_q6_K(src + b * QK_K, blocks[b], kquant::make_qx_quants_fast);
    }
}

} // namespace hexnpu
