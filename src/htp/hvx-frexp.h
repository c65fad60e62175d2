// Splitting fp32 lanes into mantissa and exponent, and scaling by a power of two: the exponent
// handling of the division, square root and exponential, in integer ops (exact on every arch).
#pragma once

#include "hvx-arith.h"

namespace hexnpu::htp {

// |x| = m * 2^e with m in [1, 2), for finite nonzero x (subnormals are normalized first); returns
// m and stores e (int32 lanes) in *e. Zeros give m = 1, e = -151; infinities and NaNs are the
// caller's to handle.
inline HVX_Vector hvx_sf_frexp(HVX_Vector x, HVX_Vector * e) {
    const HVX_Vector abs = Q6_V_vand_VV(x, hvx_splat_w(0x7FFFFFFF));
    // A subnormal has 9 or more leading zeros: shift its leading one up to bit 23, where the
    // exponent field then reads 1.
    const HVX_Vector shift = Q6_Vw_vmax_VwVw(Q6_Vw_vsub_VwVw(Q6_Vuw_vcl0_Vuw(abs), hvx_splat_w(8)), Q6_V_vzero());
    const HVX_Vector normal = Q6_Vw_vasl_VwVw(abs, shift);
    *e = Q6_Vw_vsub_VwVw(Q6_Vw_vsub_VwVw(Q6_Vuw_vlsr_VuwR(normal, 23), shift), hvx_splat_w(127));
    return Q6_V_vor_VV(Q6_V_vand_VV(normal, hvx_splat_w(0x007FFFFF)), hvx_splat_w(0x3F800000));
}

// x * 2^e for e in [-250, 254] (int32 lanes), rounded once for x in [0.5, 2): two power-of-two
// factors, each within the normal range, and x * 2^(e/2) stays normal, so only the second product
// can round (into a subnormal) or overflow.
inline HVX_Vector hvx_sf_ldexp(HVX_Vector x, HVX_Vector e) {
    const HVX_Vector e1   = Q6_Vw_vasr_VwR(e, 1);
    const HVX_Vector e2   = Q6_Vw_vsub_VwVw(e, e1);
    const HVX_Vector bias = hvx_splat_w(127);
    const HVX_Vector s1   = Q6_Vw_vasl_VwR(Q6_Vw_vadd_VwVw(e1, bias), 23);
    const HVX_Vector s2   = Q6_Vw_vasl_VwR(Q6_Vw_vadd_VwVw(e2, bias), 23);
    return hvx_sf_mul(hvx_sf_mul(x, s1), s2);
}

} // namespace hexnpu::htp
