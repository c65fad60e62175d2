// Q4_K and Q5_K: 256 elements in 8 sub-blocks of 32, x = (d·sc)·q − dmin·m with 6-bit sc and m
// packed into 12 bytes; 4-bit codes, plus a fifth bit plane for Q5_K (formats.md §1.3). The two
// share their scale search and header and differ in the code range and bit packing.
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

struct ScaleMin {
    int sc;
    int m;
};

// Sub-blocks 0..3 keep sc/m in bits 0..5 of bytes 0..3 / 4..7; sub-blocks 4..7 keep their low
// nibbles in bytes 8..11 and their top two bits in bits 6..7 of bytes 0..3 (sc) and 4..7 (m).
ScaleMin decode_scale_min(const uint8_t * S, int t) {
    if (t < 4) {
        return {S[t] & 63, S[t + 4] & 63};
    }
    return {(S[t + 4] & 15) | (S[t - 4] >> 6) << 4, (S[t + 4] >> 4) | (S[t] >> 6) << 4};
}

// The part Q4_K and Q5_K share: fills d, dmin and the 12 scale bytes, and leaves each element's
// code in [0, nmax] in L.
struct AffineHeader {
    uint16_t d;
    uint16_t dmin;
    uint8_t  scales[K_SCALE_SIZE];
};

void quantize_affine_block(const float * x, int nmax, const kquant::AffineSearch & search,
                           kquant::Qkx2Search make_qkx2_quants, AffineHeader & y, uint8_t * L) {
    constexpr float kScaleLevels = 63.f;

    float weights[32];
    float scales[QK_K / 32];
    float mins[QK_K / 32];
    float max_scale = 0;  // the min is subtracted, so scales are positive
    float max_min   = 0;
    for (int j = 0; j < QK_K / 32; ++j) {
        const float * xj     = x + 32 * j;
        float         sum_x2 = 0;
        for (int l = 0; l < 32; ++l) {
            sum_x2 += xj[l] * xj[l];
        }
        // Weigh by magnitude, plus the group's RMS so that small values still count.
        const float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) {
            weights[l] = av_x + std::fabs(xj[l]);
        }
        scales[j] = make_qkx2_quants(32, nmax, xj, weights, L + 32 * j, &mins[j], search);
        if (scales[j] > max_scale) {
            max_scale = scales[j];
        }
        if (mins[j] > max_min) {
            max_min = mins[j];
        }
    }

    const float inv_scale = max_scale > 0 ? kScaleLevels / max_scale : 0.f;
    const float inv_min   = max_min > 0 ? kScaleLevels / max_min : 0.f;
    for (int j = 0; j < QK_K / 32; ++j) {
        // Narrowed to a byte before the clamp, as GGML does.
        const uint8_t ls = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j])));
        const uint8_t lm = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j])));
        if (j < 4) {
            y.scales[j]     = ls;
            y.scales[j + 4] = lm;
        } else {
            y.scales[j + 4] = uint8_t((ls & 15) | (lm & 15) << 4);
            y.scales[j - 4] = uint8_t(y.scales[j - 4] | (ls >> 4) << 6);
            y.scales[j]     = uint8_t(y.scales[j] | (lm >> 4) << 6);
        }
    }
    y.d    = fp32_to_fp16(max_scale / kScaleLevels);
    y.dmin = fp32_to_fp16(max_min / kScaleLevels);

    // Requantize against the scales as stored; a sub-block whose step is 0 keeps its first-pass codes.
    const float d    = fp16_to_fp32(y.d);
    const float dmin = fp16_to_fp32(y.dmin);
    for (int j = 0; j < QK_K / 32; ++j) {
        const ScaleMin sm = decode_scale_min(y.scales, j);
        const float    dl = d * float(sm.sc);
        if (dl == 0) {
            continue;
        }
        const float dm = dmin * float(sm.m);
        for (int i = 0; i < 32; ++i) {
            const int l   = nearest_int((x[32 * j + i] + dm) / dl);
            L[32 * j + i] = uint8_t(std::max(0, std::min(nmax, l)));
        }
    }
}

void quantize_block_q4_K(const float * x, block_q4_K & y, kquant::Qkx2Search make_qkx2_quants) {
    AffineHeader header;
    uint8_t      L[QK_K];
    quantize_affine_block(x, 15, {-1.f, 0.1f, 20, false}, make_qkx2_quants, header, L);
    y.d    = header.d;
    y.dmin = header.dmin;
    std::memcpy(y.scales, header.scales, sizeof(y.scales));
    // 64-element chunk c: sub-block 2c in the low nibbles, 2c + 1 in the high nibbles.
    for (int c = 0; c < QK_K / 64; ++c) {
        for (int l = 0; l < 32; ++l) {
            y.qs[32 * c + l] = uint8_t(L[64 * c + l] | L[64 * c + l + 32] << 4);
        }
    }
}

void quantize_block_q5_K(const float * x, block_q5_K & y, kquant::Qkx2Search make_qkx2_quants) {
    AffineHeader header;
    uint8_t      L[QK_K];
    quantize_affine_block(x, 31, {-0.5f, 0.1f, 15, false}, make_qkx2_quants, header, L);
    y.d    = header.d;
    y.dmin = header.dmin;
    std::memcpy(y.scales, header.scales, sizeof(y.scales));
    // Low nibbles as Q4_K; bit 4 of element e goes to qh[e % 32], bit e / 32.
    std::memset(y.qh, 0, sizeof(y.qh));
    for (int c = 0; c < QK_K / 64; ++c) {
        for (int l = 0; l < 32; ++l) {
            const int lo = L[64 * c + l];
            const int hi = L[64 * c + l + 32];
            y.qh[l]      = uint8_t(y.qh[l] | (lo >> 4) << (2 * c) | (hi >> 4) << (2 * c + 1));
            y.qs[32 * c + l] = uint8_t((lo & 15) | (hi & 15) << 4);
        }
    }
}

#if defined(__AVX2__)
// dl·q − ml for 32 byte codes: multiply then subtract, two roundings, as the reference does (no FMA).
inline avx2::Floats32 affine32(const avx2::Codes32 & codes, __m256 dl, __m256 ml) {
    avx2::Floats32 f;
    for (int k = 0; k < 4; ++k) {
        f.v[k] = _mm256_sub_ps(_mm256_mul_ps(dl, _mm256_cvtepi32_ps(codes.v[k])), ml);
    }
    return f;
}
inline avx2::Floats32 affine32(__m256i codes, __m256 dl, __m256 ml) {
    const __m128i  lo       = _mm256_castsi256_si128(codes);
    const __m128i  hi       = _mm256_extracti128_si256(codes, 1);
    const __m128i  parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
    avx2::Floats32 f;
    for (int k = 0; k < 4; ++k) {
        f.v[k] = _mm256_sub_ps(_mm256_mul_ps(dl, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(parts[k]))), ml);
    }
    return f;
}
#endif

} // namespace

void dequantize_row_q4_K_ref(const void * src, float * dst, int64_t n) {
    const auto * blocks = static_cast<const block_q4_K *>(src);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const block_q4_K & blk  = blocks[b];
        const float        d    = fp16_to_fp32(blk.d);
        const float        dmin = fp16_to_fp32(blk.dmin);
        float *            y    = dst + b * QK_K;
        for (int t = 0; t < QK_K / 32; ++t) {
            const ScaleMin sm = decode_scale_min(blk.scales, t);
            const float    dl = d * float(sm.sc);
            const float    ml = dmin * float(sm.m);
            for (int e = 32 * t; e < 32 * t + 32; ++e) {
                const int q = (blk.qs[32 * (e >> 6) + (e & 31)] >> 4 * (t & 1)) & 15;
                y[e] = dl * float(q) - ml;
            }
        }
    }
}

void dequantize_row_q5_K_ref(const void * src, float * dst, int64_t n) {
    const auto * blocks = static_cast<const block_q5_K *>(src);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const block_q5_K & blk  = blocks[b];
        const float        d    = fp16_to_fp32(blk.d);
        const float        dmin = fp16_to_fp32(blk.dmin);
        float *            y    = dst + b * QK_K;
        for (int t = 0; t < QK_K / 32; ++t) {
            const ScaleMin sm = decode_scale_min(blk.scales, t);
            const float    dl = d * float(sm.sc);
            const float    ml = dmin * float(sm.m);
            for (int e = 32 * t; e < 32 * t + 32; ++e) {
                const int low4 = (blk.qs[32 * (e >> 6) + (e & 31)] >> 4 * (t & 1)) & 15;
                const int high = (blk.qh[e & 31] >> t) & 1;
                y[e] = dl * float(low4 | high << 4) - ml;
            }
        }
    }
}

void quantize_row_q4_K_ref(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q4_K *>(dst);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        quantize_block_q4_K(src + b * QK_K, blocks[b], kquant::make_qkx2_quants);
    }
}

void quantize_row_q5_K_ref(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q5_K *>(dst);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        quantize_block_q5_K(src + b * QK_K, blocks[b], kquant::make_qkx2_quants);
    }
}

#if defined(__AVX2__)
namespace {
template <class Sink> void decode_q4_K(const void * src, int64_t n, Sink sink) {
    const auto *  blocks = static_cast<const block_q4_K *>(src);
    const __m256i nibble = _mm256_set1_epi32(15);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const block_q4_K & blk  = blocks[b];
        const float        d    = fp16_to_fp32(blk.d);
        const float        dmin = fp16_to_fp32(blk.dmin);
        for (int c = 0; c < QK_K / 64; ++c) {
            // 32 bytes: sub-block 2c in the low nibbles, 2c + 1 in the high ones.
            avx2::Codes32 codes[2];
            for (int k = 0; k < 4; ++k) {
                const __m256i bytes = avx2::load_u8x8(blk.qs + 32 * c + 8 * k);
                codes[0].v[k]       = _mm256_and_si256(bytes, nibble);
                codes[1].v[k]       = _mm256_srli_epi32(bytes, 4);
            }
            for (int half = 0; half < 2; ++half) {
                const ScaleMin sm = decode_scale_min(blk.scales, 2 * c + half);
                sink(b * QK_K + 64 * c + 32 * half,
                     affine32(codes[half], _mm256_set1_ps(d * float(sm.sc)), _mm256_set1_ps(dmin * float(sm.m))));
            }
        }
    }
}

template <class Sink> void decode_q5_K(const void * src, int64_t n, Sink sink) {
    const auto *  blocks  = static_cast<const block_q5_K *>(src);
    const __m256i nibble  = _mm256_set1_epi8(15);
    const __m256i sixteen = _mm256_set1_epi8(16);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const block_q5_K & blk  = blocks[b];
        const float        d    = fp16_to_fp32(blk.d);
        const float        dmin = fp16_to_fp32(blk.dmin);
        const __m256i      qh   = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(blk.qh));
        for (int c = 0; c < QK_K / 64; ++c) {
            const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(blk.qs + 32 * c));
            const __m256i low4[2] = {_mm256_and_si256(packed, nibble),
                                     _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble)};
            for (int half = 0; half < 2; ++half) {
                const int     t     = 2 * c + half;
                const __m256i bit   = _mm256_set1_epi8(char(1 << t));
                const __m256i high  = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bit), bit), sixteen);
                const ScaleMin sm   = decode_scale_min(blk.scales, t);
                sink(b * QK_K + 32 * t, affine32(_mm256_or_si256(low4[half], high), _mm256_set1_ps(d * float(sm.sc)),
                                                 _mm256_set1_ps(dmin * float(sm.m))));
            }
        }
    }
}
} // namespace

HEXNPU_DECODED_ROW_FNS(q4_K)
HEXNPU_DECODED_ROW_FNS(q5_K)
#else
void dequantize_row_q4_K(const void * src, float * dst, int64_t n) { dequantize_row_q4_K_ref(src, dst, n); }
void dequantize_row_q5_K(const void * src, float * dst, int64_t n) { dequantize_row_q5_K_ref(src, dst, n); }
HEXNPU_DOT_VIA_DEQUANTIZE(q4_K, QK_K, sizeof(block_q4_K))
HEXNPU_DOT_VIA_DEQUANTIZE(q5_K, QK_K, sizeof(block_q5_K))
#endif

void quantize_row_q4_K(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q4_K *>(dst);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        quantize_block_q4_K(src + b * QK_K, blocks[b], kquant::make_qkx2_quants_fast);
    }
}

void quantize_row_q5_K(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q5_K *>(dst);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        quantize_block_q5_K(src + b * QK_K, blocks[b], kquant::make_qkx2_quants_fast);
    }
}

} // namespace hexnpu
