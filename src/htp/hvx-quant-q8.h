// GGML's Q8_0 quantizer (quantize_row_q8_0_ref) on HVX, one 32-element block per vector, bit for bit:
// amax = max |x|, d = amax / 127 and id = 1 / d (0 for d = 0) correctly rounded (hvx_sf_div_rn),
// q = round(x id) half away from zero (the rounding std::round does), d stored as fp16 by the
// caller. Blocks with amax below 2^-90 or above 2^100 divide within 1 ulp instead (hvx_sf_div),
// which may move a code by one there; non-finite inputs give codes GGML leaves undefined.
#pragma once

#include "hvx-arith.h"
#include "hvx-div.h"
#include "hvx-hf-rows.h"
#include "hvx-quant-act.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

// round(y) half away from zero for |y| < 2^22, as words: |y| + 2^23 rounds to the nearest even
// integer, which sits in the low mantissa bits; where the dropped fraction (|y| minus that integer,
// exact) is exactly one half, one more.
inline HVX_Vector hvx_sf_round_away_w(HVX_Vector y) {
    const HVX_Vector sign   = Q6_V_vand_VV(y, hvx_splat_w(int32_t(0x80000000u)));
    const HVX_Vector ay     = Q6_V_vxor_VV(y, sign);
    const HVX_Vector biased = hvx_sf_add(ay, hvx_splat_sf(8388608.0f));
    const HVX_Vector frac   = hvx_sf_sub(ay, hvx_sf_sub(biased, hvx_splat_sf(8388608.0f)));
    HVX_Vector       n      = Q6_Vw_vsub_VwVw(biased, hvx_splat_w(0x4B000000));
    n = Q6_Vw_vadd_VwVw(n, Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(frac, hvx_splat_sf(0.5f)), hvx_splat_w(1), Q6_V_vzero()));
    return Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(sign, Q6_V_vzero()), n, Q6_Vw_vsub_VwVw(Q6_V_vzero(), n));
}

// The scales of 32 blocks from their amax (one per lane): d = amax / 127 and id = 1 / d (0 for
// d = 0), in place of amax / into *id. Not inlined: its constants stay out of the callers' loops.
__attribute__((noinline)) inline void hvx_q8_0_scales(HVX_Vector * amax_to_d, HVX_Vector * id) {
    const HVX_Vector     amax  = *amax_to_d;
    const HVX_VectorPred in_rn = Q6_Q_and_QQ(Q6_Q_vcmp_gt_VwVw(amax, hvx_splat_sf(0x1p-90f)),
                                             Q6_Q_vcmp_gt_VwVw(hvx_splat_sf(0x1p100f), amax));
    const HVX_Vector     c127  = hvx_splat_sf(127.0f);
    const HVX_Vector     d     = Q6_V_vmux_QVV(in_rn, hvx_sf_div_rn(amax, c127), hvx_sf_div(amax, c127));
    const HVX_Vector     one   = hvx_splat_sf(1.0f);
    const HVX_Vector     recip = Q6_V_vmux_QVV(in_rn, hvx_sf_div_rn(one, d), hvx_sf_div(one, d));
    *amax_to_d                 = d;
    *id                        = Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(d, Q6_V_vzero()), Q6_V_vzero(), recip);
}

// One row of n_blocks blocks (x, one vector each) into codes (32 bytes per block, in order) and
// scales (fp16, in order), with ids (ceil(n_blocks / 32) vectors) as scratch for the inverse
// scales: the blocks' amax gathered 32 to a vector, their scales computed a vector at a time, then
// the codes. Gathering and packing go from the last block to the first, each block's lane or
// 32 bytes shifted in at the front of the vector being filled, stored once it starts with a
// vector's first block.
// Each pass its own function: no constant lives across another's calls.
namespace detail_q8 {

__attribute__((noinline)) inline void gather_amax(const HVX_Vector * x, uint32_t n_blocks, HVX_Vector * amax) {
    HVX_Vector acc = Q6_V_vzero();
    for (uint32_t v = n_blocks; v-- > 0;) {
        acc = Q6_V_vlalign_VVR(acc, hvx_w_allmax(Q6_V_vand_VV(x[v], hvx_splat_w(0x7FFFFFFF))), 4);
        if (v % 32 == 0) {
            amax[v / 32] = acc;
        }
    }
}

__attribute__((noinline)) inline void pack_codes(const HVX_Vector * x, uint32_t n_blocks, const HVX_Vector * ids,
                                                 HVX_Vector * codes) {
    HVX_Vector acc = Q6_V_vzero();
    for (uint32_t v = n_blocks; v-- > 0;) {
        const HVX_Vector id = Q6_V_vsplat_R(Q6_R_vextract_VR(ids[v / 32], int32_t(4 * (v % 32))));
        const HVX_Vector q  = hvx_sf_round_away_w(hvx_sf_mul(x[v], id));
        const HVX_Vector h  = Q6_Vh_vpack_VwVw_sat(q, q);
        acc                 = Q6_V_vlalign_VVR(acc, Q6_Vb_vpack_VhVh_sat(h, h), 32);  // byte i = q[i % 32]
        if (v % 4 == 0) {
            codes[v / 4] = acc;
        }
    }
}

} // namespace detail_q8

inline void hvx_quantize_q8_0_row(const HVX_Vector * x, uint32_t n_blocks, HVX_Vector * codes, HVX_Vector * scales,
                                  HVX_Vector * ids) {
    detail_q8::gather_amax(x, n_blocks, scales);
    const uint32_t n_groups = (n_blocks + 31) / 32;
    for (uint32_t g = 0; g < n_groups; ++g) {
        hvx_q8_0_scales(scales + g, ids + g);
    }
    detail_q8::pack_codes(x, n_blocks, ids, codes);
    hvx_sf_row_to_16(scales, scales, n_groups, false);
}

} // namespace hexnpu::htp
