// fp16 -> fp32 for per-row tile scales. The widening conversion sends even halfwords to the low
// vector and odd ones to the high vector of a pair: for a tile's interleaved (D, M) pairs that is
// already D and M in row order; plain row scales get one halfword shuffle first.
// Exact (every fp16 is an fp32), zeros, subnormals, infinities and NaNs included.
#pragma once

#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

// The 64 halfwords of h as fp32: *even = halfwords 0, 2, ..., 62, *odd = 1, 3, ..., 63.
inline void hvx_hf_pairs_to_sf(HVX_Vector h, HVX_Vector * even, HVX_Vector * odd) {
#if defined(HTP_ARCH) && (HTP_ARCH < 79 || (defined(__hexagon__) && !defined(__HVX_IEEE_FP__)))
    // qf32 product by 1.0 (exact), then back to sf.
    const HVX_VectorPair q = Q6_Wqf32_vmpy_VhfVhf(h, Q6_Vh_vsplat_R(0x3C00));
    *even                  = Q6_Vsf_equals_Vqf32(Q6_V_lo_W(q));
    *odd                   = Q6_Vsf_equals_Vqf32(Q6_V_hi_W(q));
#else
    const HVX_VectorPair w = Q6_Wsf_vcvt_Vhf(h);
    *even                  = Q6_V_lo_W(w);
    *odd                   = Q6_V_hi_W(w);
#endif
}

// Halfwords 0..31 and 32..63 of h (e.g. a tile's two sets of 32 row scales) as fp32 in row order:
// vshuffh puts halfword i next to halfword i + 32, so the widening's even lanes are the first set
// and its odd lanes the second.
inline void hvx_hf_halves_to_sf(HVX_Vector h, HVX_Vector * first, HVX_Vector * second) {
    hvx_hf_pairs_to_sf(Q6_Vh_vshuff_Vh(h), first, second);
}

// The first 32 halfwords of h (a tile's 32 row scales) as 32 fp32 lanes in row order.
inline HVX_Vector hvx_hf_rows_to_sf(HVX_Vector h) {
    HVX_Vector first, second;
    hvx_hf_halves_to_sf(h, &first, &second);
    return first;
}

// n_blocks blocks of 32 fp16 (two per source vector) to n_blocks fp32 vectors. dst may lie below
// src in the same buffer (dst + 2 i never passes src + i before it is read). Not inlined: its own
// loop keeps the conversion constants in registers.
__attribute__((noinline)) inline void hvx_hf_row_to_sf(const HVX_Vector * src, HVX_Vector * dst, uint32_t n_blocks) {
    for (uint32_t b = 0; b < n_blocks; b += 2) {
        HVX_Vector second;
        hvx_hf_halves_to_sf(src[b / 2], &dst[b], &second);
        if (b + 1 < n_blocks) {
            dst[b + 1] = second;
        }
    }
}

} // namespace hexnpu::htp
