// The 32 x 32 fp32 (word) transpose on HVX: five rounds of word interleaves (vshuff -4), each
// pairing rows r and r + 16 into rows 2r and 2r + 1, which rotates a lane's 10-bit (row, column)
// index left by one; after five, element (row, column) sits at (column, row). And the sums of 32
// vectors' lanes into one vector, by the same kind of network with adds.
#pragma once

#include "hvx-arith.h"
#include "vnpu/hvx/hvx.h"

#include <stdint.h>

namespace hexnpu::htp {

// One round: `in` rows `stride` vectors apart, `out` rows out_stride apart.
__attribute__((noinline)) inline void hvx_transpose_round(const HVX_Vector * in, uint32_t stride, HVX_Vector * out,
                                                          uint32_t out_stride = 1) {
    for (uint32_t r = 0; r < 16; ++r) {
        const HVX_VectorPair w      = Q6_W_vshuff_VVR(in[(r + 16) * stride], in[r * stride], -4);
        out[2 * r * out_stride]     = Q6_V_lo_W(w);
        out[(2 * r + 1) * out_stride] = Q6_V_hi_W(w);
    }
}

// out row c (out_stride vectors apart) = column c of in (rows in_stride apart); tmp: 64 vectors
// (neither in nor out).
__attribute__((noinline)) inline void hvx_transpose_32x32(const HVX_Vector * in, uint32_t in_stride, HVX_Vector * out,
                                                          uint32_t out_stride, HVX_Vector * tmp) {
    hvx_transpose_round(in, in_stride, tmp);
    hvx_transpose_round(tmp, 1, tmp + 32);
    hvx_transpose_round(tmp + 32, 1, tmp);
    hvx_transpose_round(tmp, 1, tmp + 32);
    hvx_transpose_round(tmp + 32, 1, out, out_stride);
}

// A square matrix of fp32 (rows `row` bytes apart, row / 4 of them: whole 32 x 32 blocks) from
// `from` into its transpose at `to` (the same row stride); tmp: 64 vectors.
__attribute__((noinline)) inline void hvx_transpose_square(const uint8_t * from, uint8_t * to, uint32_t row,
                                                           HVX_Vector * tmp) {
    const uint32_t     rv = row / 128;
    const HVX_Vector * f  = reinterpret_cast<const HVX_Vector *>(from);
    HVX_Vector *       t  = reinterpret_cast<HVX_Vector *>(to);
    for (uint32_t bi = 0; bi < rv; ++bi) {
        for (uint32_t bj = 0; bj < rv; ++bj) {
            hvx_transpose_32x32(f + bi * 32 * rv + bj, rv, t + bj * 32 * rv + bi, rv, tmp);
        }
    }
}

// Where hvx_sf_row_sums32 takes the vector whose sum lands in lane r: p[hvx_row_sums_slot(r)] (the
// network below leaves lane r with input bitrev5(r)).
constexpr uint32_t hvx_row_sums_slot(uint32_t r) {
    return ((r & 1) << 4) | ((r & 2) << 2) | (r & 4) | ((r & 8) >> 2) | ((r & 16) >> 4);
}

// Lane r of the result: the sum of the 32 fp32 lanes of p[hvx_row_sums_slot(r)]; p (32 vectors) is
// overwritten. Five stages, each pairing vectors 2i and 2i + 1 by one vshuff of 64, 32, ..., 4-byte
// pieces and adding the pair's halves: 31 shuffles and adds where summing each vector alone (five
// rotations and adds) and gathering the totals takes 32 x 6.
__attribute__((noinline)) inline HVX_Vector hvx_sf_row_sums32(HVX_Vector * p) {
    for (uint32_t n = 32, piece = 64; n > 1; n /= 2, piece /= 2) {
        for (uint32_t i = 0; i < n / 2; ++i) {
            const HVX_VectorPair w = Q6_W_vshuff_VVR(p[2 * i + 1], p[2 * i], int32_t(piece));
            p[i]                   = hvx_sf_add(Q6_V_lo_W(w), Q6_V_hi_W(w));
        }
    }
    return p[0];
}

} // namespace hexnpu::htp
