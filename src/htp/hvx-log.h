// fp32 natural logarithm (LOG, SOFTPLUS): x = m 2^e with m in [sqrt(1/2), sqrt(2)) (hvx_sf_frexp, m
// halved and e raised above sqrt(2)), f = m - 1 exact (Sterbenz), ln(1 + f) = 2 atanh(s) with
// s = f / (2 + f), |s| <= 0.1716, by its odd series to s^9 (truncation below 4e-10 relative), plus
// e ln 2 with ln 2 in two parts. Near x = 1 the result keeps its relative precision (f is exact).
//
// Error (tests/htp/test-htp-eltwise.cpp measures it against fp64): within 4 ulp for normal and
// subnormal x > 0; log(+0) = -inf, log(x < 0) = NaN, log(+inf) = +inf, NaN stays NaN.
#pragma once

#include "hvx-arith.h"
#include "hvx-div.h"
#include "hvx-frexp.h"
#include "hvx-tile-dot.h"

namespace hexnpu::htp {

inline HVX_Vector hvx_sf_log(HVX_Vector x) {
    HVX_Vector           e;
    HVX_Vector           m     = hvx_sf_frexp(x, &e);
    const HVX_VectorPred upper = Q6_Q_vcmp_gt_VwVw(m, hvx_splat_sf(1.41421356f));  // m > sqrt 2: m / 2, e + 1
    m                          = Q6_V_vmux_QVV(upper, hvx_sf_mul(m, hvx_splat_sf(0.5f)), m);
    e                          = Q6_V_vmux_QVV(upper, Q6_Vw_vadd_VwVw(e, hvx_splat_w(1)), e);
    const HVX_Vector f         = hvx_sf_sub(m, hvx_splat_sf(1.0f));
    const HVX_Vector s         = hvx_sf_div(f, hvx_sf_add(f, hvx_splat_sf(2.0f)));
    const HVX_Vector s2        = hvx_sf_mul(s, s);
    HVX_Vector       p         = hvx_splat_sf(2.0f / 9.0f);
    p                          = hvx_sf_add(hvx_sf_mul(p, s2), hvx_splat_sf(2.0f / 7.0f));
    p                          = hvx_sf_add(hvx_sf_mul(p, s2), hvx_splat_sf(2.0f / 5.0f));
    p                          = hvx_sf_add(hvx_sf_mul(p, s2), hvx_splat_sf(2.0f / 3.0f));
    // 2s + s^3 p: the leading term added last keeps the small terms' rounding small.
    const HVX_Vector ln_m = hvx_sf_add(hvx_sf_add(s, s), hvx_sf_mul(hvx_sf_mul(s, s2), p));
    const HVX_Vector ef   = hvx_w_small_to_sf(e);  // e in [-150, 128]: exact
    HVX_Vector       r    = hvx_sf_add(hvx_sf_mul(ef, hvx_splat_sf(0.693145752f)),  // ln 2, 16 bits: exact product
                                       hvx_sf_add(ln_m, hvx_sf_mul(ef, hvx_splat_sf(1.42860682e-6f))));
    // Specials by the bits: +inf and NaN pass through, then negatives (-inf too) -> NaN, then +-0 -> -inf.
    const HVX_Vector abs = Q6_V_vand_VV(x, hvx_splat_w(0x7FFFFFFF));
    r = Q6_V_vmux_QVV(Q6_Q_vcmp_gt_VwVw(abs, hvx_splat_w(0x7F7FFFFF)), x, r);
    r = Q6_V_vmux_QVV(Q6_Q_vcmp_gt_VwVw(Q6_V_vzero(), x), hvx_splat_w(0x7FC00000), r);
    return Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(abs, Q6_V_vzero()), hvx_splat_w(int32_t(0xFF800000u)), r);
}

// ln(1 + y) for y >= 0 (SOFTPLUS's 1 + e^x): with u = 1 + y rounded, ln(u) * y / (u - 1) corrects the
// rounding of u (and is y itself when u rounds to 1).
inline HVX_Vector hvx_sf_log1p(HVX_Vector y) {
    const HVX_Vector u  = hvx_sf_add(hvx_splat_sf(1.0f), y);
    const HVX_Vector du = hvx_sf_sub(u, hvx_splat_sf(1.0f));
    const HVX_Vector l  = hvx_sf_mul(hvx_sf_log(u), hvx_sf_div(y, du));
    return Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(du, Q6_V_vzero()), y, l);
}

} // namespace hexnpu::htp
