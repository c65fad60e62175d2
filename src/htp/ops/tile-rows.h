// One weight row out of the matmul's tile formats, for GET_ROWS from a quantized table: a tile
// (proto/tile-formats.h) or a flat block staged by the DMA (htp/ops/matmul-flat-dma.h) holds 32
// rows with row r in word lane r; the row's own codes and scales are gathered into lanes and the
// tile kernels' dequant() (hvx-tile-dot.h) applied to them: fp32 bit for bit as the scalar
// reference computes them (32 columns = one vector of fp32).
#pragma once

#include "hvx-hmx-tiles.h"
#include "hvx-tile-dot.h"
#include "matmul-flat-dma.h"
#include "vnpu/hvx/hvx.h"

#include <stdint.h>

namespace hexnpu::htp {

// Every lane: lane `lane` of v (rotated to lane 0, the others cleared, then summed as integers:
// the bits unchanged).
inline HVX_Vector hvx_w_splat_lane(HVX_Vector v, uint32_t lane) {
    HVX_Vector x = Q6_V_vmux_QVV(Q6_Q_vsetq_R(4), Q6_V_vror_VR(v, int32_t(4 * lane)), Q6_V_vzero());
    for (int32_t bytes = 64; bytes >= 4; bytes /= 2) {
        x = Q6_Vw_vadd_VwVw(x, Q6_V_vror_VR(x, bytes));
    }
    return x;
}

// The row's scales: lane `lane` of the block's scale vectors in every lane (one for the tiles with
// one scale per row, all four otherwise: dequant(q, sc, s) reads sc[s] and sc[2 + s]).
template <class Tile>
__attribute__((always_inline)) inline void hvx_row_scales(const HVX_Vector * sc, uint32_t lane, HVX_Vector * out) {
    for (uint32_t k = 0; k < (Tile::row_scaled ? 1u : 4u); ++k) {
        out[k] = hvx_w_splat_lane(sc[k], lane);
    }
}

// Row `lane` of 32 unpacked columns (codes w: word lane r of w[g] holds row r's columns 4g..4g+3)
// as fp32, column c in lane c: the row's own codes gathered into one vector (one word of each w[g]),
// widened in column order and dequantized with the row's scales (sc_row, hvx_row_scales), columns
// 0..15 as the block's first 16-column half and 16..31 as its second. The same fp32 operations on
// the same values as dequantizing every column and taking lane `lane`, 1/32 of the work.
template <class Tile>
__attribute__((always_inline)) inline HVX_Vector hvx_codes_row(const HVX_Vector * w, const HVX_Vector * sc_row, uint32_t lane) {
    HVX_Vector codes = Q6_V_vzero();
#pragma unroll  // w[g] in registers: a rolled loop would index it on the stack
    for (uint32_t g = 0; g < 8; ++g) {
        codes = Q6_V_valign_VVR(Q6_V_vror_VR(w[g], int32_t(4 * lane)), codes, 4);  // word 24 + g, at the end
    }
    codes                = Q6_V_vror_VR(codes, 96);  // bytes 0..31: the row's 32 codes in column order
    const HVX_Vector q   = hvx_w_small_to_sf(Q6_V_lo_W(Q6_Ww_vunpack_Vh(Q6_V_lo_W(Q6_Wh_vunpack_Vb(codes)))));
    if constexpr (Tile::row_scaled) {
        return Tile::dequant(q, sc_row, 0);
    } else {
        return Q6_V_vmux_QVV(Q6_Q_vsetq_R(64), Tile::dequant(q, sc_row, 0), Tile::dequant(q, sc_row, 1));
    }
}

// Row `lane` of one tile (its VTCM slot) into Tile::blocks vectors at out; dd as hvx_expand_tile's.
template <class Tile>
__attribute__((always_inline)) inline void hvx_tile_row(const uint8_t * slot, const HVX_Vector * dd, uint32_t lane, HVX_Vector * out) {
    const HVX_Vector * tile = reinterpret_cast<const HVX_Vector *>(slot);
    HVX_Vector         w[8];
    HVX_Vector         sc[4] = {}, sc_row[4];
    if constexpr (Tile::type == tile_q2_k::type) {
        Tile::scales(tile, dd, sc);
    } else {
        (void) dd;
        Tile::scales(tile, sc);
    }
    hvx_row_scales<Tile>(sc, lane, sc_row);
    for (uint32_t sub = 0; sub < Tile::blocks; ++sub) {
        if constexpr (Tile::blocks > 1) {
            Tile::unpack(tile, sub, w);
        } else {
            Tile::unpack(tile, w);
        }
        out[sub] = hvx_codes_row<Tile>(w, sc_row, lane);
    }
}

// Row `lane` of a staged flat block (word lane r = row r; Q5_0/Q5_1 records transposed first) into
// its htp_matmul_flat_tiles vectors at out, in the staging's column order (act_order_of).
template <class Flat> __attribute__((always_inline)) inline void hvx_staged_row(HVX_Vector * staged, uint32_t lane, HVX_Vector * out) {
    if constexpr (Flat::type == flat_q5_0::type || Flat::type == flat_q5_1::type) {
        transpose_q5_records(staged);
    }
    for (uint32_t sub = 0; sub < (1u << flat_tiles_log2(Flat::type)); ++sub) {
        HVX_Vector w[8], sc[4] = {}, sc_row[4];
        Flat::unpack(staged, sub, w);
        Flat::scales(staged, sub, sc);
        hvx_row_scales<Flat>(sc, lane, sc_row);
        out[sub] = hvx_codes_row<Flat>(w, sc_row, lane);
    }
}

// A flat block's 32 columns from the staging's order (act_order_of: staged column p holds element
// perm(p)) back to element order: the inverse of the activations' reordering. rotate_lanes_5 is a
// 5-bit rotation (five make the identity), rotate_lanes_4 a 4-bit one (four do).
inline HVX_Vector hvx_row_to_element_order(HVX_Vector x, act_order order) {
    switch (order) {
        case act_order::nibbles: return rotate_lanes_5(rotate_lanes_5(rotate_lanes_5(rotate_lanes_5(x))));
        case act_order::q1_0_bits: return rotate_lanes_5(rotate_lanes_5(rotate_lanes_5(x)));
        case act_order::q2_0_codes: return rotate_lanes_4(rotate_lanes_4(x));
        default: return x;
    }
}

} // namespace hexnpu::htp
