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
constexpr uint32_t flat_block_bytes(uint32_t type) {
    switch (type) {
        case tile_q8_0::type: return 34;
        case tile_q4_1::type: return 20;
        case tile_mxfp4::type: return 17;
        case tile_q2_k::type: return 84;
        case flat_q5_0::type: return 22;
        case flat_q5_1::type: return 24;
        case tile_q3_k::type: return 110;
        case tile_q4_k::type: return 144;
        case tile_q5_k::type: return 176;
        case tile_q6_k::type: return 210;
        default: return 18;  // Q4_0, IQ4_NL, Q1_0, Q2_0
    }
}

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

// Q5_0/Q5_1 records (32 rows x 8 words, row-major in 8 vectors) transposed in place into the
// staged order: 4 quant words, qh, the d word.
void transpose_q5_records(HVX_Vector * rec);

} // namespace hexnpu::htp
