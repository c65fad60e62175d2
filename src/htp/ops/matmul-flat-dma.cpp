#include "matmul-flat-dma.h"

namespace hexnpu::htp {

void push_flat_staged(dma_queue * q, uint8_t * slot, const flat_weights & w, uint32_t rows, uint32_t first,
                      uint16_t info) {
    const uint32_t nb1 = w.nb1, type = w.type;
    const bool     q4k = type == tile_q4_k::type, q5k = type == tile_q5_k::type;
    auto words = [&](uint32_t vector, uint32_t offset, uint32_t count, uint32_t bytes) {
        for (uint32_t i = 0; i < count; ++i) {
            dma_queue_push_ddr_to_vtcm(q, dma_addr_of(slot + (vector + i) * 128),
                                       dma_addr_at(w.base, first + offset + 4 * i), 4, nb1, bytes, rows,
                                       info);
        }
    };
    if (type == tile_q1_0::type || type == tile_q2_0::type) {
        words(0, 2, 4, 4);  // qs
        words(4, 0, 1, 2);  // d
    } else if (type == flat_q5_0::type || type == flat_q5_1::type) {
        // Whole blocks into 32-byte records; Q5_0's 2 bytes in put qh and qs on word boundaries.
        const uint32_t in = type == flat_q5_0::type ? 2 : 0;
        dma_queue_push_ddr_to_vtcm(q, dma_addr_of(slot + in), dma_addr_at(w.base, first), proto::HTP_MM_Q5_RECORD_BYTES,
                                   nb1, flat_block_bytes(type), rows, info);
    } else if (type == tile_q2_k::type) {
        words(0, 16, 16, 4);  // qs
        words(16, 0, 4, 4);   // scales
        words(20, 80, 1, 4);  // d | dmin
    } else if (q4k || q5k) {
        words(0, q4k ? 16 : 48, 32, 4);  // qs
        words(32, 0, 4, 4);              // d | dmin, scales[0..11]
        if (q5k) {
            words(36, 16, 8, 4);  // qh
        }
    } else if (type == tile_q3_k::type) {
        words(0, 32, 16, 4);   // qs
        words(16, 0, 8, 4);    // hmask
        words(24, 96, 3, 4);   // scales
        words(27, 108, 1, 2);  // d
    } else {
        words(0, 0, 32, 4);    // ql
        words(32, 128, 16, 4); // qh
        words(48, 192, 4, 4);  // scales
        words(52, 208, 1, 2);  // d
    }
}


void push_flat_tile(dma_queue * q, uint8_t * slot, const flat_weights & w, uint32_t rows, uint32_t first,
                    uint16_t info) {
    const uint32_t nb1 = w.nb1;
    // A flat block: its scale bytes (d, or d and m) then the quants.
    const bool     q8     = w.type == tile_q8_0::type;
    const uint32_t block  = flat_block_bytes(w.type);
    const uint32_t scale  = block - (q8 ? 32 : 16);  // scale bytes per row
    const uint32_t width  = q8 ? 2 : 1;              // quant bytes per row and transfer
    for (uint32_t c = 0; c < 16; ++c) {
        dma_queue_push_ddr_to_vtcm(q, dma_addr_of(slot + c * 32 * width),
                                   dma_addr_at(w.base, first + scale + c * width), width, nb1, width, rows,
                                   info);
    }
    const uint32_t scales = q8 ? proto::TILE_SCALES_Q8_0 : proto::TILE_SCALES_4BIT;
    dma_queue_push_ddr_to_vtcm(q, dma_addr_of(slot + scales), dma_addr_at(w.base, first), scale, nb1, scale, rows,
                               info);
}


void push_float_block(dma_queue * q, uint8_t * slot, const flat_weights & w, uint32_t rows, uint32_t first,
                      uint16_t info) {
    for (uint32_t v = 0; v < float_block_transfers(w.type); ++v) {
        dma_queue_push_ddr_to_vtcm(q, dma_addr_of(slot + v * 128), dma_addr_at(w.base, first + 4 * v), 4, w.nb1, 4, rows,
                                   info);
    }
}

void transpose_q5_records(HVX_Vector * rec) {
    HVX_Vector v[8];
    for (uint32_t k = 0; k < 8; ++k) {
        v[k] = rec[k];
    }
    for (uint32_t level = 0; level < 3; ++level) {
        HVX_Vector n[8];
        for (uint32_t p = 0; p < 4; ++p) {
            const HVX_VectorPair d = Q6_W_vdeal_VVR(v[2 * p + 1], v[2 * p], -4);  // evens, odds
            n[p]                   = Q6_V_lo_W(d);
            n[4 + p]               = Q6_V_hi_W(d);
        }
        for (uint32_t k = 0; k < 8; ++k) {
            v[k] = n[k];
        }
    }
    for (uint32_t j = 0; j < 4; ++j) {
        rec[j] = v[2 + j];  // qs
    }
    rec[4] = v[1];  // qh
    rec[5] = v[0];  // d (Q5_0: high halfword), d | m
}


} // namespace hexnpu::htp
