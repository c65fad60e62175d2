// Flat (untiled) quantized weights as the matmul kernels fetch them (proto/htp-matmul.h): 32 rows
// of one flat block at a time, by the DMA engine. Block-32 types (Q4_0, Q4_1, IQ4_NL, MXFP4, Q8_0)
// are gathered into the tile layout, so the tile kernels take them as they take tiles; Q1_0, Q2_0,
// Q5_0, Q5_1 and the K-quants are staged in vrmpy order (word lane r = row r), for the flat_*
// kernels of hvx-tile-dot.h. Shared by the HVX matmul (matmul-ops.cpp) and the HMX one.
#pragma once

#include "dma-queue.h"
#include "hvx-tile-dot.h"
#include "proto/htp-matmul.h"
#include "vnpu/hvx/hvx.h"

#include <stdint.h>

namespace hexnpu::htp {

// Where a weight matrix's flat rows are: the tensor's DMA base plus the matrix's byte offset, and
// the row stride.
struct flat_weights {
    uint32_t   type;
    dma_addr_t base;
    uint32_t   nb1;
};

// Flat types whose blocks the DMA stages in vrmpy order (the others are gathered into tiles).
constexpr bool is_staged_flat(uint32_t type) {
    return proto::htp_matmul_flat_tiles(type) > 1 || proto::htp_matmul_flat_only_weight(type);
}

// Bytes of one flat GGML block (proto::htp_matmul_block_elems elements).
constexpr uint32_t flat_block_bytes(uint32_t type) { return proto::htp_matmul_flat_block_bytes(type); }

// log2 of htp_matmul_flat_tiles: a flat block's index from an activation block's by a shift.
constexpr uint32_t flat_tiles_log2(uint32_t type) {
    const uint32_t tiles = proto::htp_matmul_flat_tiles(type);
    return tiles == 8 ? 3 : tiles == 4 ? 2 : tiles == 2 ? 1 : 0;
}

// One staged flat block (Q1_0, Q2_0, Q5_0, Q5_1, K-quants) of `rows` rows into the staging at slot,
// 4 bytes of every row per transfer (Q5_0/Q5_1: whole blocks into 32-byte records, for
// transpose_q5_records); `first` is the block's byte offset in the strip's first row.
void push_flat_staged(dma_queue * q, uint8_t * slot, const flat_weights & w, uint32_t rows, uint32_t first,
                      uint16_t info);

// One block-32 flat block of `rows` rows gathered into the tile layout at slot: a 2-D transfer per
// column pair (Q8_0) or quant byte (4-bit types) of all rows, one for the row scales.
void push_flat_tile(dma_queue * q, uint8_t * slot, const flat_weights & w, uint32_t rows, uint32_t first,
                    uint16_t info);

// 32 columns (`first`: their byte offset in the strip's first row) of `rows` F32, F16 or BF16
// weight rows: vector v of the slot gets bytes 4v..4v+3 of every row (word lane r = row r), one
// 2-D transfer each (32 for F32, 16 for the 16-bit types).
void push_float_block(dma_queue * q, uint8_t * slot, const flat_weights & w, uint32_t rows, uint32_t first,
                      uint16_t info);
constexpr uint32_t float_block_transfers(uint32_t type) { return type == proto::HTP_TYPE_F32 ? 32 : 16; }

// ---- the activations that meet flat weights

// The order in which a row's elements enter each activation block: flat 4-bit bytes pair elements
// j and j + 16; flat Q1_0 byte i bit g is element 8i + g, flat Q2_0 byte i of word h at shift 2s
// element 16h + 4i + s (hvx-tile-unpack.h), where the vrmpy group wants 4g + i. The
// activations enter in the weights' order: the dot products do not change.
enum class act_order { natural, nibbles, q1_0_bits, q2_0_codes };
constexpr act_order act_order_of(uint32_t type, bool tiled) {
    if (tiled) {
        return act_order::natural;
    }
    switch (type) {
        case tile_q4_0::type: case tile_q4_1::type: case tile_iq4_nl::type: case tile_mxfp4::type:
            return act_order::nibbles;
        case tile_q1_0::type: return act_order::q1_0_bits;
        case tile_q2_0::type: return act_order::q2_0_codes;
        default: return act_order::natural;
    }
}

// Lane p takes element rotr1(p) of the 5-bit lane index: elements (j, j + 16) side by side.
inline HVX_Vector rotate_lanes_5(HVX_Vector x) { return Q6_V_lo_W(Q6_W_vshuff_VVR(Q6_V_vror_VR(x, 64), x, -4)); }
// The same within each 16-lane half (rotr1 of the low 4 bits): elements (j, j + 8) of the half.
inline HVX_Vector rotate_lanes_4(HVX_Vector x) {
    const HVX_VectorPair s = Q6_W_vshuff_VVR(Q6_V_vror_VR(x, 32), x, -4);
    return Q6_V_vmux_QVV(Q6_Q_vsetq_R(64), Q6_V_lo_W(s), Q6_V_vror_VR(Q6_V_hi_W(s), 64));
}
template <act_order Order> HVX_Vector in_order(HVX_Vector x) {
    switch (Order) {
        case act_order::nibbles: return rotate_lanes_5(x);
        case act_order::q1_0_bits: return rotate_lanes_5(rotate_lanes_5(x));  // lane 4g + i <- 8i + g
        case act_order::q2_0_codes: return rotate_lanes_4(rotate_lanes_4(x)); // lane 16h + 4s + i <- 16h + 4i + s
        default: return x;
    }
}

// Q5_0/Q5_1 records (32 rows x 8 words, row-major in 8 vectors) transposed in place into the
// staged order: 4 quant words, qh, the d word.
void transpose_q5_records(HVX_Vector * rec);

} // namespace hexnpu::htp
