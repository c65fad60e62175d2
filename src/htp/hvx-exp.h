// fp32 e^x as p * 2^k (hvx_sf_ldexp(p, k) is e^x), so that a caller can scale p before the power
// of two applies: x = k ln2 + r with |r| <= ln2/2 (k rounded to nearest with the 1.5 * 2^23 trick, ln2 in
// two parts so that k ln2_hi is exact), e^r by its Taylor polynomial to degree 7 (truncation below
// 6e-9), then times 2^k in integer-built factors.
//
// Error (tests/htp/test-htp-eltwise.cpp measures it against fp64): hvx_sf_ldexp(p, k) within 2 ulp
// of the correctly rounded e^x, subnormal results included (there in units of the smallest
// subnormal); +inf above ~88.72, +0 below ~-103.97 and for -inf.
#pragma once

#include "hvx-arith.h"
#include "hvx-frexp.h"

namespace hexnpu::htp {

// e^x = p * 2^k with p in [0.7, 1.42]: returns p and stores k (int32 lanes, in [-163, 129]) in
// *k. x is clamped to [-113, 89] first, past where e^x has rounded to 0 or overflowed, also
// when p is scaled by a factor up to 2^7 before 2^k (SILU's x e^x). NaNs give garbage.
inline HVX_Vector hvx_sf_exp_parts(HVX_Vector x, HVX_Vector * k) {
    // Compares on the bits: a positive float is above 89 iff its bits are (signed), a negative one
    // below -113 iff its bits are above -113's (unsigned).
    const HVX_Vector hi = hvx_splat_sf(89.0f);
    const HVX_Vector lo = hvx_splat_sf(-113.0f);
    HVX_Vector       xc = Q6_V_vmux_QVV(Q6_Q_vcmp_gt_VwVw(x, hi), hi, x);
    xc                  = Q6_V_vmux_QVV(Q6_Q_vcmp_gt_VuwVuw(xc, lo), lo, xc);

    const HVX_Vector round_magic = hvx_splat_sf(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
    const HVX_Vector t           = hvx_sf_add(hvx_sf_mul(xc, hvx_splat_sf(1.44269504f)), round_magic);
    *k                           = Q6_Vw_vsub_VwVw(t, round_magic);  // the integer, from the low bits
    const HVX_Vector kf          = hvx_sf_sub(t, round_magic);
    // ln2_hi = 0.693359375 has 9 significant bits: k ln2_hi and xc - k ln2_hi are exact.
    HVX_Vector r = hvx_sf_sub(xc, hvx_sf_mul(kf, hvx_splat_sf(0.693359375f)));
    r            = hvx_sf_sub(r, hvx_sf_mul(kf, hvx_splat_sf(-2.12194440e-4f)));

    HVX_Vector p = hvx_splat_sf(1.0f / 5040.0f);
    p            = hvx_sf_add(hvx_sf_mul(p, r), hvx_splat_sf(1.0f / 720.0f));
    p            = hvx_sf_add(hvx_sf_mul(p, r), hvx_splat_sf(1.0f / 120.0f));
    p            = hvx_sf_add(hvx_sf_mul(p, r), hvx_splat_sf(1.0f / 24.0f));
    p            = hvx_sf_add(hvx_sf_mul(p, r), hvx_splat_sf(1.0f / 6.0f));
    p            = hvx_sf_add(hvx_sf_mul(p, r), hvx_splat_sf(0.5f));
    p            = hvx_sf_add(hvx_sf_mul(p, r), hvx_splat_sf(1.0f));
    return hvx_sf_add(hvx_sf_mul(p, r), hvx_splat_sf(1.0f));
}

// e^x in every lane: hvx_sf_ldexp of the parts (0 for -inf, +inf past ~88.72).
inline HVX_Vector hvx_sf_exp(HVX_Vector x) {
    HVX_Vector       k;
    const HVX_Vector p = hvx_sf_exp_parts(x, &k);
    return hvx_sf_ldexp(p, k);
}

} // namespace hexnpu::htp
