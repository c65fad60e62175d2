// The 32 x 32 fp32 (word) transpose on HVX: five rounds of word interleaves (vshuff -4), each
// pairing rows r and r + 16 into rows 2r and 2r + 1, which rotates a lane's 10-bit (row, column)
// index left by one; after five, element (row, column) sits at (column, row).
#pragma once

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

} // namespace hexnpu::htp
