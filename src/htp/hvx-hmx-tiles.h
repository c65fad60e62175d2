// HVX work around the HMX unit (htp/hmx.h's tile layout): weight tiles (proto/tile-formats.h)
// expanded into fp16 HMX weight tiles, activation rows into fp16 activation tiles, fp16 output
// tiles back to fp32 rows.
//
// Weights. A tile kernel (hvx-tile-dot.h) unpacks a tile's codes into 8 vectors in vrmpy order
// (word lane r = row r, byte i of group g = column 4g + i) and reads its scales; dequant() gives
// column k's 32 values in fp32 as the scalar reference computes them, and one narrowing
// conversion interleaves columns 2c and 2c + 1 into HMX weight vector c (halfword 2r + (k & 1)).
// So every element is fp16_rne(the reference's fp32 value): exact where that value is an fp16, one
// rounding otherwise, overflow to infinity (the caller sees it in the row maxima it is given).
// Q1_0's 128-column tile becomes 4 HMX tiles, Q2_0's 64-column tile 2, one per 32 columns.
//
// Activations: rows 2v and 2v + 1 of a row tile, 32 columns each, are HMX activation vector v
// (halfword 2k + (m & 1)): the same narrowing conversion of the two rows' fp32 vectors.
// Outputs: HMX output vector v holds rows 2v and 2v + 1; the widening conversion sends the even
// halfwords (row 2v) to one vector and the odd ones (row 2v + 1) to the other, in column order.
#pragma once

#include "hvx-arith.h"
#include "hvx-hf-rows.h"
#include "hvx-tile-dot.h"
#include "vnpu/hvx/hvx.h"

#include <stdint.h>

namespace hexnpu::htp {

inline constexpr uint32_t HMX_TILE_VECTORS = 16;

// Signed byte i of every word as an exact fp32.
inline HVX_Vector hvx_word_byte_to_sf(HVX_Vector w, int i) {
    return hvx_w_small_to_sf(Q6_Vw_vasr_VwR(Q6_Vw_vasl_VwR(w, 24 - 8 * i), 24));
}

inline HVX_Vector hvx_sf_abs(HVX_Vector x) { return Q6_V_vand_VV(x, hvx_splat_w(0x7FFFFFFF)); }

// Per row (lane r): the running sum of |x| and the largest |x| (as bits: non-negative floats order
// like their bit patterns) of the values a strip's expansion has produced.
struct hmx_row_stats {
    HVX_Vector l1;
    HVX_Vector max_bits;
};

inline void hvx_row_stats_add(hmx_row_stats & st, HVX_Vector x) {
    const HVX_Vector a = hvx_sf_abs(x);
    st.l1              = hvx_sf_add(st.l1, a);
    st.max_bits        = Q6_Vw_vmax_VwVw(st.max_bits, a);
}

// Groups [4 S, 4 S + 4) (16-column half S) of the codes unpacked at out[8..15], with scales sc,
// into HMX weight vectors out[2g], out[2g + 1]. Group g's outputs overwrite the codes of groups
// 2g - 8 and 2g - 7, already consumed (g = 7 reads its own codes first). A rolled loop, one group
// at a time: unrolled, the scheduler interleaves the groups' conversions and runs out of vector
// registers (spills on every arch); the codes come from VTCM, the half's scales stay in registers.
template <class Tile, uint32_t S>
__attribute__((always_inline)) inline void hvx_expand_half(const HVX_Vector * sc, HVX_Vector * out, hmx_row_stats & st) {
#pragma clang loop unroll(disable)
    for (uint32_t g = 4 * S; g < 4 * S + 4; ++g) {
        const HVX_Vector w = out[8 + g];
        HVX_Vector       x[4];
        for (int i = 0; i < 4; ++i) {
            x[i] = Tile::dequant(hvx_word_byte_to_sf(w, i), sc, S);
            hvx_row_stats_add(st, x[i]);
        }
        out[2 * g]     = hvx_sf_interleave_to_hf(x[0], x[1]);
        out[2 * g + 1] = hvx_sf_interleave_to_hf(x[2], x[3]);
    }
}

// One HMX weight tile out (16 vectors) from the 8 code vectors a tile kernel unpacked into
// out[8..15] (VTCM, not registers: see hvx_expand_half) and scales sc.
template <class Tile>
__attribute__((always_inline)) inline void hvx_expand_codes(const HVX_Vector * sc, HVX_Vector * out, hmx_row_stats & st) {
    hvx_expand_half<Tile, 0>(sc, out, st);
    hvx_expand_half<Tile, 1>(sc, out, st);
}

// One weight tile (its slot in VTCM) into 1 << log2(Tile::blocks) HMX tiles at out. Q2_K's rows'
// d and -dmin live in its super-block's tiles: dd is their tile_q2_k::group, read once per
// super-block by the caller (unused for the other types).
template <class Tile>
__attribute__((always_inline)) inline void hvx_expand_tile(const uint8_t * slot, const HVX_Vector * dd, HVX_Vector * out, hmx_row_stats & st) {
    const HVX_Vector * tile = reinterpret_cast<const HVX_Vector *>(slot);
    HVX_Vector         sc[4] = {};
    if constexpr (Tile::type == tile_q2_k::type) {
        Tile::scales(tile, dd, sc);
    } else {
        (void) dd;
        Tile::scales(tile, sc);
    }
    if constexpr (Tile::blocks > 1) {
        for (uint32_t sub = 0; sub < Tile::blocks; ++sub) {
            HVX_Vector * o = out + sub * HMX_TILE_VECTORS;
            Tile::unpack(tile, sub, o + 8);
            hvx_expand_codes<Tile>(sc, o, st);
        }
    } else {
        Tile::unpack(tile, out + 8);
        hvx_expand_codes<Tile>(sc, out, st);
    }
}

// Float weights staged by the DMA, vector v = bytes 4v..4v+3 of every row (htp/ops/matmul-flat-dma.h),
// into one HMX weight tile. F16: vector v already is HMX weight vector v (columns 2v, 2v + 1 of row
// r at halfwords 2r, 2r + 1), copied; BF16: its halves widened (exact) and narrowed to fp16; F32:
// vectors 2v and 2v + 1 are columns 2v and 2v + 1.
inline void hvx_expand_f16(const HVX_Vector * st, HVX_Vector * out, hmx_row_stats & s) {
    for (uint32_t v = 0; v < HMX_TILE_VECTORS; ++v) {
        HVX_Vector even, odd;
        hvx_hf_pairs_to_sf(st[v], &even, &odd);
        hvx_row_stats_add(s, even);
        hvx_row_stats_add(s, odd);
        out[v] = st[v];
    }
}
inline void hvx_expand_bf16(const HVX_Vector * st, HVX_Vector * out, hmx_row_stats & s) {
    for (uint32_t v = 0; v < HMX_TILE_VECTORS; ++v) {
        const HVX_Vector even = Q6_Vw_vasl_VwR(st[v], 16);
        const HVX_Vector odd  = Q6_V_vand_VV(st[v], hvx_splat_w(int32_t(0xFFFF0000u)));
        hvx_row_stats_add(s, even);
        hvx_row_stats_add(s, odd);
        out[v] = hvx_sf_interleave_to_hf(even, odd);
    }
}
inline void hvx_expand_f32(const HVX_Vector * st, HVX_Vector * out, hmx_row_stats & s) {
    for (uint32_t v = 0; v < HMX_TILE_VECTORS; ++v) {
        hvx_row_stats_add(s, st[2 * v]);
        hvx_row_stats_add(s, st[2 * v + 1]);
        out[v] = hvx_sf_interleave_to_hf(st[2 * v], st[2 * v + 1]);
    }
}

// The largest magnitude of n fp32 vectors, in every lane (as bits).
inline HVX_Vector hvx_row_max_bits(const HVX_Vector * x, uint32_t n) {
    HVX_Vector m = Q6_V_vzero();
    for (uint32_t v = 0; v < n; ++v) {
        m = Q6_Vw_vmax_VwVw(m, hvx_sf_abs(x[v]));
    }
    for (int shift = 64; shift >= 4; shift >>= 1) {
        m = Q6_Vw_vmax_VwVw(m, Q6_V_vror_VR(m, shift));
    }
    return m;
}

// For a row whose largest magnitude has the bits max_bits (biased exponent E): the power of two
// 2^(126 - E) that brings it into [0.5, 1), and its inverse 2^(E - 126), both as fp32 bits in every
// lane. The exponent is clamped to [1, 253] (the inverse then stays a normal number): a zero or
// subnormal row gets 2^126, an infinite or NaN one 2^-126 (it stays infinite or NaN, as it would).
inline void hvx_row_scale(HVX_Vector max_bits, HVX_Vector * scale, HVX_Vector * inverse) {
    const HVX_Vector e  = Q6_Vuw_vlsr_VuwR(max_bits, 23);
    HVX_Vector       bs = Q6_Vw_vsub_VwVw(hvx_splat_w(253), e);
    bs                  = Q6_Vw_vmin_VwVw(Q6_Vw_vmax_VwVw(bs, hvx_splat_w(1)), hvx_splat_w(253));
    *scale              = Q6_Vw_vasl_VwR(bs, 23);
    *inverse            = Q6_Vw_vasl_VwR(Q6_Vw_vsub_VwVw(hvx_splat_w(254), bs), 23);
}

// A strip's output columns: the bound b on |C| (fp32 lanes) gives the power of two 2^-e (e in
// [0, 24], the least with b 2^-e < 2^15) as the fp16 column scale of the HMX scale/bias block
// (bias 0), and 2^e as the fp32 factor the epilogue multiplies back. An infinite or NaN bound
// gets e = 24.
inline void hvx_column_scale(HVX_Vector bound, HVX_Vector * sb_words, HVX_Vector * factor) {
    const HVX_Vector eb = Q6_Vuw_vlsr_VuwR(hvx_sf_abs(bound), 23);
    HVX_Vector       e  = Q6_Vw_vsub_VwVw(eb, hvx_splat_w(141));  // b < 2^(eb - 126): b 2^-e < 2^15
    e                   = Q6_Vw_vmin_VwVw(Q6_Vw_vmax_VwVw(e, Q6_V_vzero()), hvx_splat_w(24));
    // fp16 2^-e: normal (15 - e) << 10 for e <= 14, subnormal 1 << (24 - e) above.
    const HVX_Vector normal    = Q6_Vw_vasl_VwR(Q6_Vw_vsub_VwVw(hvx_splat_w(15), e), 10);
    const HVX_Vector subnormal = Q6_Vw_vasl_VwVw(hvx_splat_w(1), Q6_Vw_vsub_VwVw(hvx_splat_w(24), e));
    *sb_words = Q6_V_vmux_QVV(Q6_Q_vcmp_gt_VwVw(e, hvx_splat_w(14)), subnormal, normal);
    *factor   = Q6_Vw_vasl_VwR(Q6_Vw_vadd_VwVw(e, hvx_splat_w(127)), 23);
}

// One fp16 HMX output tile as 32 fp32 rows (row m = out[m], columns in order), each multiplied by
// the strip's column factors and its row's factor (row_factor[m], every lane the same).
inline void hvx_output_tile_to_rows(const HVX_Vector * tile, HVX_Vector col_factor, const HVX_Vector * row_factor,
                                    HVX_Vector * out) {
    for (uint32_t v = 0; v < HMX_TILE_VECTORS; ++v) {
        HVX_Vector even, odd;
        hvx_hf_pairs_to_sf(tile[v], &even, &odd);
        out[2 * v]     = hvx_sf_mul(hvx_sf_mul(even, col_factor), row_factor[2 * v]);
        out[2 * v + 1] = hvx_sf_mul(hvx_sf_mul(odd, col_factor), row_factor[2 * v + 1]);
    }
}

} // namespace hexnpu::htp
