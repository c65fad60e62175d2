// Dot products of one 32x32 weight tile (proto/tile-formats.h, in VTCM) with quantized activation
// blocks (hvx-quant-act.h): the tile unpacked once into vrmpy operands, then per activation row the
// 32 rows' integer sums (word lane r = row r), scaled by the block's activation scale and the rows'
// fp16 weight scales into fp32.
//
// The column-pair tiles (Q8_0, Q4_0) keep row r's two values of columns 2cp, 2cp+1 side by side,
// 32 rows per 64 (Q8_0) or, after the nibbles are split and interleaved, per 64 bytes (Q4_0). A
// halfword shuffle (vshuffh: halfword i and i+32 side by side) turns a vector of two column pairs
// into vrmpy byte order, word lane r = four consecutive columns of row r.
//
// The integer sums are exact: |sum| <= 32 * 128 * 127 (Q8_0), 32 * 32 * 127 (Q6_K) or less, below
// 2^22, so hvx_w_small_to_sf converts them exactly too.
#pragma once

#include "hvx-arith.h"
#include "hvx-hf-rows.h"
#include "proto/tile-formats.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

// A tile's quants as 8 vectors in vrmpy order (word lane r = four consecutive columns of row r,
// signed bytes), for every activation row to reuse. Q8_0: 8 vectors of two column pairs each.
inline void hvx_tile_unpack_q8_0(const HVX_Vector * tile, HVX_Vector * w) {
    for (int v = 0; v < 8; ++v) {
        w[v] = Q6_Vh_vshuff_Vh(tile[v]);
    }
}

// Q4_0: 4 vectors of four column pairs each, low nibble the even column; q - 8 as a signed byte.
inline void hvx_tile_unpack_q4_0(const HVX_Vector * tile, HVX_Vector * w) {
    const HVX_Vector nibble = hvx_splat_w(0x0F0F0F0F);
    const HVX_Vector eight  = hvx_splat_w(0x08080808);
    for (int v = 0; v < 4; ++v) {
        const HVX_Vector     lo = Q6_Vb_vsub_VbVb(Q6_V_vand_VV(tile[v], nibble), eight);
        const HVX_Vector     hi = Q6_Vb_vsub_VbVb(Q6_V_vand_VV(Q6_Vub_vlsr_VubR(tile[v], 4), nibble), eight);
        const HVX_VectorPair cp = Q6_W_vshuff_VVR(hi, lo, -1);  // byte pairs (even, odd column)
        w[2 * v]                = Q6_Vh_vshuff_Vh(Q6_V_lo_W(cp));
        w[2 * v + 1]            = Q6_Vh_vshuff_Vh(Q6_V_hi_W(cp));
    }
}

// The 32 rows' integer sums of an unpacked tile with one activation block.
inline HVX_Vector hvx_tile_isum(const HVX_Vector * w, const HVX_Vector * act) {
    HVX_Vector acc = Q6_V_vzero();
    for (int v = 0; v < 8; ++v) {
        acc = Q6_Vw_vrmpyacc_VwVbVb(acc, w[v], act[v]);
    }
    return acc;
}

// int32 -> fp32, exact for |v| < 2^22: v + 1.5 * 2^23 as float bits, minus 1.5 * 2^23.
inline HVX_Vector hvx_w_small_to_sf(HVX_Vector v) {
    return hvx_sf_sub(Q6_Vw_vadd_VwVw(v, hvx_splat_w(0x4B400000)), hvx_splat_sf(12582912.0f));
}

// Q4_K: the Q4_0 nibble layout without the offset (q in 0..15).
inline void hvx_tile_unpack_q4_k(const HVX_Vector * tile, HVX_Vector * w) {
    const HVX_Vector nibble = hvx_splat_w(0x0F0F0F0F);
    for (int v = 0; v < 4; ++v) {
        const HVX_Vector     lo = Q6_V_vand_VV(tile[v], nibble);
        const HVX_Vector     hi = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(tile[v], 4), nibble);
        const HVX_VectorPair cp = Q6_W_vshuff_VVR(hi, lo, -1);
        w[2 * v]                = Q6_Vh_vshuff_Vh(Q6_V_lo_W(cp));
        w[2 * v + 1]            = Q6_Vh_vshuff_Vh(Q6_V_hi_W(cp));
    }
}

// Q6_K: already in vrmpy order. Group g's low 4 bits are nibble g & 1 of vector g >> 1, its high
// 2 bits at shift 2 (g & 3) of vector 4 + (g >> 2); the code minus 32 as a signed byte.
inline void hvx_tile_unpack_q6_k(const HVX_Vector * tile, HVX_Vector * w) {
    const HVX_Vector nibble = hvx_splat_w(0x0F0F0F0F);
    const HVX_Vector two    = hvx_splat_w(0x03030303);
    const HVX_Vector bias   = hvx_splat_w(0x20202020);
    for (int g = 0; g < 8; ++g) {
        const HVX_Vector lo4 = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(tile[g >> 1], 4 * (g & 1)), nibble);
        const HVX_Vector hi2 = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(tile[4 + (g >> 2)], 2 * (g & 3)), two);
        // hi2 << 4 on halfwords: each byte stays below 0x40, so nothing crosses into the next byte.
        w[g] = Q6_Vb_vsub_VbVb(Q6_V_vor_VV(lo4, Q6_Vh_vasl_VhR(hi2, 4)), bias);
    }
}

// The integer sums of groups [g0, g0 + n) only: Q6_K's two 16-column halves have their own scales.
inline HVX_Vector hvx_tile_isum_groups(const HVX_Vector * w, const HVX_Vector * act, int g0, int n) {
    HVX_Vector acc = Q6_V_vzero();
    for (int g = g0; g < g0 + n; ++g) {
        acc = Q6_Vw_vrmpyacc_VwVbVb(acc, w[g], act[g]);
    }
    return acc;
}

// acc + isum * (activation block scale) * (each row's weight scale, hvx_hf_rows_to_sf of the tile's).
inline HVX_Vector hvx_tile_accumulate(HVX_Vector acc, HVX_Vector isum, HVX_Vector w_scale, const HVX_Vector * act) {
    return hvx_sf_add(acc, hvx_sf_mul(hvx_sf_mul(hvx_w_small_to_sf(isum), act[8]), w_scale));
}

// The per-type tile kernels the matmul instantiates: unpack the quants, read the scales (sc[0..1])
// once per tile, then per activation row add the tile's fp32 contribution to the row's sums.
struct tile_q8_0 {
    static constexpr uint32_t type = 8;
    static void unpack(const HVX_Vector * t, HVX_Vector * w) { hvx_tile_unpack_q8_0(t, w); }
    static void scales(const HVX_Vector * t, HVX_Vector * sc) { sc[0] = hvx_hf_rows_to_sf(t[8]); }
    static HVX_Vector accumulate(HVX_Vector acc, const HVX_Vector * w, const HVX_Vector * sc, const HVX_Vector * a) {
        return hvx_tile_accumulate(acc, hvx_tile_isum(w, a), sc[0], a);
    }
};
struct tile_q4_0 {
    static constexpr uint32_t type = 2;
    static void unpack(const HVX_Vector * t, HVX_Vector * w) { hvx_tile_unpack_q4_0(t, w); }
    static void scales(const HVX_Vector * t, HVX_Vector * sc) { sc[0] = hvx_hf_rows_to_sf(t[4]); }
    static HVX_Vector accumulate(HVX_Vector acc, const HVX_Vector * w, const HVX_Vector * sc, const HVX_Vector * a) {
        return hvx_tile_accumulate(acc, hvx_tile_isum(w, a), sc[0], a);
    }
};
// x = D q + M per row: the dot is s (D isum + M sum(qa)).
struct tile_q4_k {
    static constexpr uint32_t type = 12;
    static void unpack(const HVX_Vector * t, HVX_Vector * w) { hvx_tile_unpack_q4_k(t, w); }
    static void scales(const HVX_Vector * t, HVX_Vector * sc) { hvx_hf_pairs_to_sf(t[4], &sc[0], &sc[1]); }
    static HVX_Vector accumulate(HVX_Vector acc, const HVX_Vector * w, const HVX_Vector * sc, const HVX_Vector * a) {
        const HVX_Vector d = hvx_sf_mul(hvx_w_small_to_sf(hvx_tile_isum(w, a)), sc[0]);
        const HVX_Vector m = hvx_sf_mul(hvx_w_small_to_sf(a[9]), sc[1]);
        return hvx_sf_add(acc, hvx_sf_mul(hvx_sf_add(d, m), a[8]));
    }
};
// x = D_s (q - 32), s the 16-column half: the dot is s (D_0 isum_0 + D_1 isum_1).
struct tile_q6_k {
    static constexpr uint32_t type = 14;
    static void unpack(const HVX_Vector * t, HVX_Vector * w) { hvx_tile_unpack_q6_k(t, w); }
    static void scales(const HVX_Vector * t, HVX_Vector * sc) {
        sc[0] = hvx_hf_rows_to_sf(t[6]);
        sc[1] = hvx_hf_rows_to_sf(Q6_V_vror_VR(t[6], 64));
    }
    static HVX_Vector accumulate(HVX_Vector acc, const HVX_Vector * w, const HVX_Vector * sc, const HVX_Vector * a) {
        const HVX_Vector h0 = hvx_sf_mul(hvx_w_small_to_sf(hvx_tile_isum_groups(w, a, 0, 4)), sc[0]);
        const HVX_Vector h1 = hvx_sf_mul(hvx_w_small_to_sf(hvx_tile_isum_groups(w, a, 4, 4)), sc[1]);
        return hvx_sf_add(acc, hvx_sf_mul(hvx_sf_add(h0, h1), a[8]));
    }
};

} // namespace hexnpu::htp
