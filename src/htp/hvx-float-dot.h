// fp32 dot products of 32 weight rows with one activation row, for the HVX matmul's float weights
// (F32, F16, BF16): each row's products accumulate lane-wise into one vector, and a tree of word
// deals folds the 32 row vectors into one vector whose lane r is row r's sum (31 deal + add steps).
// 16-bit weights widen to fp32 as even/odd lane pairs, so their activations are stored with each
// 64-element chunk's even elements first and its odd elements second (matmul-float-ops.cpp).
#pragma once

#include "hvx-arith.h"
#include "hvx-hf-rows.h"
#include "vnpu/hvx/hvx.h"

#include <stdint.h>

namespace hexnpu::htp {

// Lanes 0..15 the sums of a's lane pairs (2l, 2l + 1), lanes 16..31 those of b's.
inline HVX_Vector hvx_sf_pair_sums(HVX_Vector a, HVX_Vector b) {
    const HVX_VectorPair d = Q6_W_vdeal_VVR(b, a, -4);  // lo: even lanes of a then b; hi: the odd ones
    return hvx_sf_add(Q6_V_lo_W(d), Q6_V_hi_W(d));
}

// An empty instruction that takes x in a vector register where it stands: the value must be
// computed before the code that follows (on Hexagon; nothing elsewhere).
__attribute__((always_inline)) inline void hvx_pin(HVX_Vector & x) {
#if defined(__hexagon__)
    __asm__ volatile("" : "+v"(x));
#else
    (void) x;
#endif
}

// Lane r of the result = the sum of the lanes of row(r0 + r), for the N row vectors row(r0 ..).
// Recursion on halves: after the last fold lane r holds row r0 + r. Always inlined: a call would
// clobber the partial sums held in vector registers (Hexagon saves none across calls). Each fold
// is pinned where it stands: when row() is a loop, the compiler would otherwise sink every fold
// past the last row's loop, with all N row vectors live at once (spilled); folded depth-first at
// most log2(N) + 1 partial sums are live.
template <uint32_t N, class Row>
__attribute__((always_inline)) inline HVX_Vector hvx_sf_row_sums(const Row & row, uint32_t r0) {
    if constexpr (N == 1) {
        return row(r0);
    } else {
        HVX_Vector sum = hvx_sf_pair_sums(hvx_sf_row_sums<N / 2>(row, r0), hvx_sf_row_sums<N / 2>(row, r0 + N / 2));
        hvx_pin(sum);
        return sum;
    }
}

// BF16 halfwords as fp32: even = halfwords 0, 2, ..., odd = 1, 3, ... (the high half is the fp32).
inline void hvx_bf16_pairs_to_sf(HVX_Vector h, HVX_Vector * even, HVX_Vector * odd) {
    *even = Q6_Vw_vasl_VwR(h, 16);
    *odd  = Q6_V_vand_VV(h, Q6_V_vsplat_R(int32_t(0xFFFF0000u)));
}

// Lane-wise sum over v < n of w[v] * a[v] (fp32 weights).
__attribute__((always_inline)) inline HVX_Vector hvx_sf_dot_f32(const HVX_Vector * w, const HVX_Vector * a, uint32_t n) {
    HVX_Vector acc = Q6_V_vzero();
    for (uint32_t v = 0; v < n; ++v) {
        acc = hvx_sf_add(acc, hvx_sf_mul(w[v], a[v]));
    }
    return acc;
}

// The same for n vectors of 64 16-bit weights (F16, or BF16 when Bf16) against 2n activation
// vectors in even/odd order.
template <bool Bf16> __attribute__((always_inline)) inline HVX_Vector hvx_sf_dot_16(const HVX_Vector * w, const HVX_Vector * a, uint32_t n) {
    HVX_Vector acc = Q6_V_vzero();
    for (uint32_t v = 0; v < n; ++v) {
        HVX_Vector even, odd;
        if constexpr (Bf16) {
            hvx_bf16_pairs_to_sf(w[v], &even, &odd);
        } else {
            hvx_hf_pairs_to_sf(w[v], &even, &odd);
        }
        acc = hvx_sf_add(acc, hvx_sf_add(hvx_sf_mul(even, a[2 * v]), hvx_sf_mul(odd, a[2 * v + 1])));
    }
    return acc;
}

} // namespace hexnpu::htp
