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
// The integer sums are exact: |sum| <= 32 * 128 * 127 (Q8_0) or 32 * 8 * 127 (Q4_0), below 2^22, so
// hvx_w_small_to_sf converts them exactly too.
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

// acc + isum * (activation block scale) * (each row's weight scale, hvx_hf_rows_to_sf of the tile's).
inline HVX_Vector hvx_tile_accumulate(HVX_Vector acc, HVX_Vector isum, HVX_Vector w_scale, const HVX_Vector * act) {
    return hvx_sf_add(acc, hvx_sf_mul(hvx_sf_mul(hvx_w_small_to_sf(isum), act[8]), w_scale));
}

} // namespace hexnpu::htp
