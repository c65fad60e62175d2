// fp16 <-> fp32 rows. fp16 -> fp32 (per-row tile scales, F16 weights): the widening conversion
// sends even halfwords to the low vector and odd ones to the high vector of a pair: for a tile's
// interleaved (D, M) pairs that is already D and M in row order; plain row scales get one halfword
// shuffle first. Exact (every fp16 is an fp32), zeros, subnormals, infinities and NaNs included.
// fp32 -> fp16 (SET_ROWS into an F16 KV cache): rounded to nearest even, overflow to infinity, as
// GGML's conversion; on v73/v75 through qf32 (see hvx-arith.h's deviation note). bf16 <-> fp32 on
// the bits: widening exact, narrowing as GGML rounds (nearest even; a NaN made quiet, top bits kept).
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

// fp16 lane 2i = a[i], lane 2i + 1 = b[i]: the narrowing conversion's own interleave (an HMX tile
// vector from two fp32 vectors: a row pair of activations, or a column pair of weight rows).
inline HVX_Vector hvx_sf_interleave_to_hf(HVX_Vector a, HVX_Vector b) {
#if defined(HTP_ARCH) && (HTP_ARCH < 79 || (defined(__hexagon__) && !defined(__HVX_IEEE_FP__)))
    // To qf32 by adding -0.0 (x + -0 = x for every x, -0 included), then narrowed.
    const HVX_Vector minus_zero = Q6_V_vsplat_R(int32_t(0x80000000u));
    return Q6_Vhf_equals_Wqf32(Q6_W_vcombine_VV(Q6_Vqf32_vadd_VsfVsf(b, minus_zero), Q6_Vqf32_vadd_VsfVsf(a, minus_zero)));
#else
    return Q6_Vhf_vcvt_VsfVsf(a, b);
#endif
}

// 64 consecutive fp32 (x0: elements 0..31, x1: 32..63) as 64 consecutive fp16: a word deal first
// puts the even elements in one vector and the odd ones in the other.
inline HVX_Vector hvx_sf_pair_to_hf(HVX_Vector x0, HVX_Vector x1) {
    const HVX_VectorPair d = Q6_W_vdeal_VVR(x1, x0, -4);  // lo: even elements, hi: odd elements
    return hvx_sf_interleave_to_hf(Q6_V_lo_W(d), Q6_V_hi_W(d));
}

// The 64 bf16 of h as fp32 in element order: *first = elements 0..31, *second = 32..63.
inline void hvx_bf16_halves_to_sf(HVX_Vector h, HVX_Vector * first, HVX_Vector * second) {
    const HVX_Vector     even = Q6_Vw_vasl_VwR(h, 16);                             // halfwords 0, 2, ..
    const HVX_Vector     odd  = Q6_V_vand_VV(h, Q6_V_vsplat_R(int32_t(0xFFFF0000u)));  // halfwords 1, 3, ..
    const HVX_VectorPair o    = Q6_W_vshuff_VVR(odd, even, -4);
    *first                    = Q6_V_lo_W(o);
    *second                   = Q6_V_hi_W(o);
}

// GGML's fp32 -> bf16 on 32 words: the result in each word's high halfword.
inline HVX_Vector hvx_sf_bf16_round(HVX_Vector u) {
    const HVX_VectorPred nan = Q6_Q_vcmp_gt_VwVw(Q6_V_vand_VV(u, Q6_V_vsplat_R(0x7FFFFFFF)), Q6_V_vsplat_R(0x7F800000));
    const HVX_Vector     odd = Q6_V_vand_VV(Q6_Vuw_vlsr_VuwR(u, 16), Q6_V_vsplat_R(1));
    const HVX_Vector     rnd = Q6_Vw_vadd_VwVw(u, Q6_Vw_vadd_VwVw(odd, Q6_V_vsplat_R(0x7FFF)));
    return Q6_V_vmux_QVV(nan, Q6_V_vor_VV(u, Q6_V_vsplat_R(0x00400000)), rnd);
}

// 64 consecutive fp32 (x0: elements 0..31, x1: 32..63) as 64 consecutive bf16.
inline HVX_Vector hvx_sf_pair_to_bf16(HVX_Vector x0, HVX_Vector x1) {
    const HVX_VectorPair e = Q6_W_vdeal_VVR(x1, x0, -4);  // lo: even elements, hi: odd elements
    return Q6_Vh_vshuffo_VhVh(hvx_sf_bf16_round(Q6_V_hi_W(e)), hvx_sf_bf16_round(Q6_V_lo_W(e)));
}

// A row of n fp32 vectors' worth held as 16-bit values (F16, or BF16 when bf16) in the first half
// of s, widened into d: from the top down, so that d may be s (no 16-bit vector is overwritten
// before it is read). Not inlined: its own loop keeps the conversion constants in registers.
__attribute__((noinline)) inline void hvx_16_row_to_sf(HVX_Vector * d, const HVX_Vector * s, uint32_t n, bool bf16) {
    for (uint32_t k = (n + 1) / 2; k-- > 0;) {
        HVX_Vector first, second;
        if (bf16) {
            hvx_bf16_halves_to_sf(s[k], &first, &second);
        } else {
            hvx_hf_halves_to_sf(s[k], &first, &second);
        }
        d[2 * k] = first;
        if (2 * k + 1 < n) {
            d[2 * k + 1] = second;
        }
    }
}

// The reverse: n fp32 vectors of s narrowed into the first half of d's row, from the bottom up
// (d may be s).
__attribute__((noinline)) inline void hvx_sf_row_to_16(HVX_Vector * d, const HVX_Vector * s, uint32_t n, bool bf16) {
    for (uint32_t v = 0; v < n; v += 2) {
        const HVX_Vector hi = v + 1 < n ? s[v + 1] : Q6_V_vzero();
        d[v / 2]            = bf16 ? hvx_sf_pair_to_bf16(s[v], hi) : hvx_sf_pair_to_hf(s[v], hi);
    }
}

} // namespace hexnpu::htp
