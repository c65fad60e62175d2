// The sigmoid family: silu(x) = x sigmoid(x), from e = e^-|x| in (0, 1] so nothing overflows:
// sigmoid(|x|) = 1 / (1 + e) and sigmoid(-|x|) = e / (1 + e), with 1 + e in [1, 2]. For x < 0 the
// product x e / (1 + e) is formed before e's power of two is applied, so that a subnormal e costs
// no precision.
//
// Error (tests/htp/test-htp-eltwise.cpp measures it against fp64 x / (1 + e^-x)): within 4 ulp,
// subnormal results included (there in units of the smallest subnormal); silu(+inf) = +inf,
// silu(-inf) = NaN (as x / (1 + e^-x) gives it), NaN stays NaN.
#pragma once

#include "hvx-arith.h"
#include "hvx-div.h"
#include "hvx-exp.h"
#include "hvx-frexp.h"

namespace hexnpu::htp {

// sigmoid(x) = 1 / (1 + e^-x) by the same pieces: 1 / (1 + e) for x >= 0, e / (1 + e) below;
// below -113 it has rounded to 0 (0 * |x|: NaN stays NaN).
inline HVX_Vector hvx_sf_sigmoid(HVX_Vector x) {
    const HVX_Vector sign = hvx_splat_w(int32_t(0x80000000u));
    HVX_Vector       k;
    const HVX_Vector p     = hvx_sf_exp_parts(Q6_V_vor_VV(x, sign), &k);
    const HVX_Vector recip = hvx_sf_recip_1_2(hvx_sf_add(hvx_splat_sf(1.0f), hvx_sf_ldexp(p, k)));
    const HVX_Vector below = hvx_sf_ldexp(hvx_sf_mul(recip, p), k);
    const HVX_Vector s     = Q6_V_vmux_QVV(Q6_Q_vcmp_gt_VwVw(Q6_V_vzero(), x), below, recip);
    const HVX_VectorPred vanishing = Q6_Q_vcmp_gt_VuwVuw(x, hvx_splat_sf(-113.0f));
    return Q6_V_vmux_QVV(vanishing, hvx_sf_mul(Q6_V_vzero(), Q6_V_vand_VV(x, hvx_splat_w(0x7FFFFFFF))), s);
}

inline HVX_Vector hvx_sf_silu(HVX_Vector x) {
    const HVX_Vector sign = hvx_splat_w(int32_t(0x80000000u));
    HVX_Vector       k;
    const HVX_Vector p     = hvx_sf_exp_parts(Q6_V_vor_VV(x, sign), &k);
    const HVX_Vector recip = hvx_sf_recip_1_2(hvx_sf_add(hvx_splat_sf(1.0f), hvx_sf_ldexp(p, k)));
    const HVX_Vector below = hvx_sf_ldexp(hvx_sf_mul(hvx_sf_mul(x, recip), p), k);
    const HVX_Vector above = hvx_sf_mul(x, recip);
    const HVX_Vector silu  = Q6_V_vmux_QVV(Q6_Q_vcmp_gt_VwVw(Q6_V_vzero(), x), below, above);
    // Below -113 (and for -inf and negative NaNs) the clamped exponential does not apply:
    // x e^x has rounded to -0, and x * 0 gives that (NaN for -inf and NaN).
    const HVX_VectorPred vanishing = Q6_Q_vcmp_gt_VuwVuw(x, hvx_splat_sf(-113.0f));
    return Q6_V_vmux_QVV(vanishing, hvx_sf_mul(x, Q6_V_vzero()), silu);
}

// GGML's tanh GELU, 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), as the equal
// x sigmoid(2u) (GEGLU's gelu too). The error is the sigmoid's plus the rounding of u.
inline HVX_Vector hvx_sf_gelu(HVX_Vector x) {
    const HVX_Vector x3 = hvx_sf_mul(hvx_sf_mul(x, x), x);
    const HVX_Vector u2 = hvx_sf_mul(hvx_splat_sf(2.0f * 0.7978845608f), hvx_sf_add(x, hvx_sf_mul(hvx_splat_sf(0.044715f), x3)));
    return hvx_sf_mul(x, hvx_sf_sigmoid(u2));
}

// GGML's GELU_QUICK: x sigmoid(1.702 x).
inline HVX_Vector hvx_sf_gelu_quick(HVX_Vector x) { return hvx_sf_mul(x, hvx_sf_sigmoid(hvx_sf_mul(hvx_splat_sf(1.702f), x))); }

// tanh x = sign(x) (1 - e) / (1 + e), e = e^(-2|x|) in (0, 1]: nothing overflows; for small |x| the
// difference 1 - e loses relative precision (absolute error stays ~1e-7). tanh(+-inf) = +-1, NaN
// stays NaN.
inline HVX_Vector hvx_sf_tanh(HVX_Vector x) {
    const HVX_Vector sign = Q6_V_vand_VV(x, hvx_splat_w(int32_t(0x80000000u)));
    const HVX_Vector ax   = Q6_V_vand_VV(x, hvx_splat_w(0x7FFFFFFF));
    const HVX_Vector e    = hvx_sf_exp(hvx_sf_mul(ax, hvx_splat_sf(-2.0f)));
    const HVX_Vector one  = hvx_splat_sf(1.0f);
    const HVX_Vector t    = hvx_sf_mul(hvx_sf_sub(one, e), hvx_sf_recip_1_2(hvx_sf_add(one, e)));
    return Q6_V_vor_VV(t, sign);
}

// GGML's GELU_ERF, 0.5 x (1 + erf(x / sqrt 2)), with 1 + erf(z) = erfc(-z) for z < 0 and
// 2 - erfc(z) above, erfc(|z|) = t P(t) e^(-z^2), t = 1 / (1 + 0.3275911 |z|) (Abramowitz & Stegun
// 7.1.26, |error| <= 1.5e-7 on erf): no cancellation for negative x, exactly 0 far below.
inline HVX_Vector hvx_sf_gelu_erf(HVX_Vector x) {
    const HVX_Vector z = hvx_sf_mul(Q6_V_vand_VV(x, hvx_splat_w(0x7FFFFFFF)), hvx_splat_sf(0.707106781f));
    const HVX_Vector t = hvx_sf_div(hvx_splat_sf(1.0f), hvx_sf_add(hvx_splat_sf(1.0f), hvx_sf_mul(hvx_splat_sf(0.3275911f), z)));
    HVX_Vector       p = hvx_splat_sf(1.061405429f);
    p                  = hvx_sf_add(hvx_sf_mul(p, t), hvx_splat_sf(-1.453152027f));
    p                  = hvx_sf_add(hvx_sf_mul(p, t), hvx_splat_sf(1.421413741f));
    p                  = hvx_sf_add(hvx_sf_mul(p, t), hvx_splat_sf(-0.284496736f));
    p                  = hvx_sf_add(hvx_sf_mul(p, t), hvx_splat_sf(0.254829592f));
    const HVX_Vector erfc = hvx_sf_mul(hvx_sf_mul(p, t), hvx_sf_exp(hvx_sf_mul(hvx_sf_mul(z, z), hvx_splat_sf(-1.0f))));
    const HVX_Vector one_plus =
        Q6_V_vmux_QVV(Q6_Q_vcmp_gt_VwVw(Q6_V_vzero(), x), erfc, hvx_sf_sub(hvx_splat_sf(2.0f), erfc));
    return hvx_sf_mul(hvx_sf_mul(hvx_splat_sf(0.5f), x), one_plus);
}

} // namespace hexnpu::htp
