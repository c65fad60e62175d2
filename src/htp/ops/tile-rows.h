// One weight row out of the matmul's tile formats, for GET_ROWS from a quantized table: a tile
// (proto/tile-formats.h) or a flat block staged by the DMA (htp/ops/matmul-flat-dma.h) holds 32
// rows with row r in word lane r; the tile kernels' dequant() (hvx-tile-dot.h) gives each column's
// 32 values in fp32, bit for bit as the scalar reference computes them, and one lane of each
// column is collected into a row vector (32 columns = one vector of fp32).
#pragma once

#include "hvx-hmx-tiles.h"
#include "hvx-tile-dot.h"
#include "matmul-flat-dma.h"
#include "vnpu/hvx/hvx.h"

#include <stdint.h>

namespace hexnpu::htp {

// Row `lane` of 32 unpacked columns (codes w, scales sc: one tile kernel block) as fp32, column c
// in lane c. Each column's value is rotated down to lane 0 and shifted in at the top while the
// collected ones move down a lane: after 32 columns column 0 sits in lane 0.
template <class Tile>
__attribute__((always_inline)) inline HVX_Vector hvx_codes_row(const HVX_Vector * w, const HVX_Vector * sc, uint32_t lane) {
    HVX_Vector out = Q6_V_vzero();
#pragma unroll  // w[g] in registers: a rolled loop would index it on the stack
    for (uint32_t g = 0; g < 8; ++g) {
        for (int i = 0; i < 4; ++i) {
            const HVX_Vector x = Tile::dequant(hvx_word_byte_to_sf(w[g], i), sc, g >> 2);
            out                = Q6_V_valign_VVR(Q6_V_vror_VR(x, int32_t(4 * lane)), out, 4);
        }
    }
    return out;
}

// Every lane: lane `lane` of v (rotated to lane 0, the others cleared, then summed as integers:
// the bits unchanged).
inline HVX_Vector hvx_w_splat_lane(HVX_Vector v, uint32_t lane) {
    HVX_Vector x = Q6_V_vmux_QVV(Q6_Q_vsetq_R(4), Q6_V_vror_VR(v, int32_t(4 * lane)), Q6_V_vzero());
    for (int32_t bytes = 64; bytes >= 4; bytes /= 2) {
        x = Q6_Vw_vadd_VwVw(x, Q6_V_vror_VR(x, bytes));
    }
    return x;
}

// The same for a tile with one scale per row (dequant = value * sc[0]): the row's own codes (word
// lane `lane` of each of the 8 unpacked vectors: columns 4g .. 4g + 3) gathered into one vector,
// widened in column order and scaled by the row's scale. The same fp32 operations on the same
// values as the column-wise path, 1/32 of its work.
template <class Tile>
__attribute__((always_inline)) inline HVX_Vector hvx_scaled_codes_row(const HVX_Vector * w, HVX_Vector row_scale, uint32_t lane) {
    HVX_Vector codes = Q6_V_vzero();
#pragma unroll
    for (uint32_t g = 0; g < 8; ++g) {
        codes = Q6_V_valign_VVR(Q6_V_vror_VR(w[g], int32_t(4 * lane)), codes, 4);  // word 24 + g, at the end
    }
    codes                = Q6_V_vror_VR(codes, 96);  // bytes 0..31: the row's 32 codes in column order
    const HVX_Vector q32 = Q6_V_lo_W(Q6_Ww_vunpack_Vh(Q6_V_lo_W(Q6_Wh_vunpack_Vb(codes))));
    return hvx_sf_mul(hvx_w_small_to_sf(q32), row_scale);
}

// Row `lane` of one tile (its VTCM slot) into Tile::blocks vectors at out; dd as hvx_expand_tile's.
template <class Tile>
__attribute__((always_inline)) inline void hvx_tile_row(const uint8_t * slot, const HVX_Vector * dd, uint32_t lane, HVX_Vector * out) {
    const HVX_Vector * tile = reinterpret_cast<const HVX_Vector *>(slot);
    HVX_Vector         w[8];
    HVX_Vector         sc[4] = {};
    if constexpr (Tile::type == tile_q2_k::type) {
        Tile::scales(tile, dd, sc);
    } else {
        (void) dd;
        Tile::scales(tile, sc);
    }
    constexpr bool row_scaled = Tile::row_scaled;
    const HVX_Vector row_scale = row_scaled ? hvx_w_splat_lane(sc[0], lane) : Q6_V_vzero();
    for (uint32_t sub = 0; sub < Tile::blocks; ++sub) {
        if constexpr (Tile::blocks > 1) {
            Tile::unpack(tile, sub, w);
        } else {
            Tile::unpack(tile, w);
        }
        if constexpr (row_scaled) {
            out[sub] = hvx_scaled_codes_row<Tile>(w, row_scale, lane);
        } else {
            out[sub] = hvx_codes_row<Tile>(w, sc, lane);
        }
    }
}

// Row `lane` of a staged flat block (word lane r = row r; Q5_0/Q5_1 records transposed first) into
// its htp_matmul_flat_tiles vectors at out, in the staging's column order (act_order_of).
template <class Flat> __attribute__((always_inline)) inline void hvx_staged_row(HVX_Vector * staged, uint32_t lane, HVX_Vector * out) {
    if constexpr (Flat::type == flat_q5_0::type || Flat::type == flat_q5_1::type) {
        transpose_q5_records(staged);
    }
    for (uint32_t sub = 0; sub < (1u << flat_tiles_log2(Flat::type)); ++sub) {
        HVX_Vector w[8], sc[4] = {};
        Flat::unpack(staged, sub, w);
        Flat::scales(staged, sub, sc);
        out[sub] = hvx_codes_row<Flat>(w, sc, lane);
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
