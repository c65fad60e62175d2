// fp32 division without a divide instruction: a reciprocal by Newton-Raphson on the mantissa, the
// quotient of the mantissas refined once with an exactly computed residual, the exponents handled
// in integer ops.
//
// Error (tests/htp/test-htp-eltwise.cpp measures it against fp64): hvx_sf_recip_1_2 within 2 ulp,
// hvx_sf_div within 1 ulp of the correctly rounded quotient for all finite operands, subnormal
// quotients included (there in units of the smallest subnormal); zeros, infinities and NaNs as
// IEEE division gives them (NaN for 0/0 and inf/inf). hvx_sf_div_rn: the correctly rounded
// quotient of positive normal operands whose quotient is at least 2^-100 (tested exhaustively over
// every mantissa for a / 127, a / 31, a / 15 and 1 / b, as the block quantizers divide; on the
// device's v73/v75 qf32 path a residual's last bit may differ).
#pragma once

#include "hvx-arith.h"
#include "hvx-frexp.h"

namespace hexnpu::htp {

// 1/d for d in [1, 2]. The line 24/17 - 8/17 d is within 1/17 of 1/d over the interval; each
// step r (2 - d r) squares the relative error: 1/17 -> 3.5e-3 -> 1.2e-5 -> 1.5e-10, below the
// rounding of the last step.
inline HVX_Vector hvx_sf_recip_1_2(HVX_Vector d) {
    const HVX_Vector two = hvx_splat_sf(2.0f);
    HVX_Vector       r   = hvx_sf_sub(hvx_splat_sf(24.0f / 17.0f), hvx_sf_mul(hvx_splat_sf(8.0f / 17.0f), d));
    for (int i = 0; i < 3; ++i) {
        r = hvx_sf_mul(r, hvx_sf_sub(two, hvx_sf_mul(d, r)));
    }
    return r;
}

// The high 12 significant bits of x (the rest cleared): products of two such halves are exact.
inline HVX_Vector hvx_sf_high_half(HVX_Vector x) { return Q6_V_vand_VV(x, hvx_splat_w(int32_t(0xFFFFF000u))); }

// n - d q for q ~ n/d, from the exact partial products of d and q split in halves (n - d_hi q_hi
// is exact, being the difference of two close values), so only the last steps round noticeably.
inline HVX_Vector hvx_sf_residual(HVX_Vector n, HVX_Vector d, HVX_Vector q) {
    const HVX_Vector d_hi = hvx_sf_high_half(d), d_lo = hvx_sf_sub(d, d_hi);
    const HVX_Vector q_hi = hvx_sf_high_half(q), q_lo = hvx_sf_sub(q, q_hi);
    HVX_Vector       residual = hvx_sf_sub(n, hvx_sf_mul(d_hi, q_hi));
    residual                  = hvx_sf_sub(residual, hvx_sf_mul(d_hi, q_lo));
    residual                  = hvx_sf_sub(residual, hvx_sf_mul(d_lo, q_hi));
    return hvx_sf_sub(residual, hvx_sf_mul(d_lo, q_lo));
}

// q + (n - d q) r for n, d in [1, 2), q ~ n/d and r ~ 1/d.
inline HVX_Vector hvx_sf_refine_quotient(HVX_Vector n, HVX_Vector d, HVX_Vector q, HVX_Vector r) {
    return hvx_sf_add(q, hvx_sf_mul(hvx_sf_residual(n, d, q), r));
}

inline HVX_Vector hvx_sf_div(HVX_Vector a, HVX_Vector b) {
    HVX_Vector       ea, eb;
    const HVX_Vector ma = hvx_sf_frexp(a, &ea);
    const HVX_Vector mb = hvx_sf_frexp(b, &eb);
    const HVX_Vector r  = hvx_sf_recip_1_2(mb);
    const HVX_Vector q  = hvx_sf_refine_quotient(ma, mb, hvx_sf_mul(ma, r), r);  // in (0.5, 2)
    // Below 2^-152 the quotient rounds to zero, above 2^129 it overflows: clamping changes neither.
    const HVX_Vector e = Q6_Vw_vmin_VwVw(Q6_Vw_vmax_VwVw(Q6_Vw_vsub_VwVw(ea, eb), hvx_splat_w(-152)), hvx_splat_w(129));
    const HVX_Vector sign_mask = hvx_splat_w(int32_t(0x80000000u));
    const HVX_Vector sign_b    = Q6_V_vand_VV(b, sign_mask);
    const HVX_Vector quotient  = Q6_V_vor_VV(hvx_sf_ldexp(q, e), Q6_V_vand_VV(Q6_V_vxor_VV(a, b), sign_mask));

    // A zero, infinite or NaN operand: a * (1/|b| as IEEE has it for b = 0, inf, NaN, and 1 for a
    // finite b), with b's sign. That gives 0/0 = inf/inf = NaN, x/0 = inf, x/inf = 0, NaN in -> NaN.
    const HVX_Vector     inf     = hvx_splat_w(0x7F800000);
    const HVX_Vector     abs_a   = Q6_V_vand_VV(a, hvx_splat_w(0x7FFFFFFF));
    const HVX_Vector     abs_b   = Q6_V_vand_VV(b, hvx_splat_w(0x7FFFFFFF));
    const HVX_VectorPred b_zero  = Q6_Q_vcmp_eq_VwVw(abs_b, Q6_V_vzero());
    const HVX_VectorPred b_inf   = Q6_Q_vcmp_eq_VwVw(abs_b, inf);
    const HVX_VectorPred b_nan   = Q6_Q_vcmp_gt_VwVw(abs_b, inf);
    const HVX_VectorPred special = Q6_Q_or_QQ(Q6_Q_or_QQ(b_zero, Q6_Q_vcmp_eq_VwVw(abs_a, Q6_V_vzero())),
                                              Q6_Q_or_QQ(Q6_Q_vcmp_gt_VwVw(abs_b, hvx_splat_w(0x7F7FFFFF)),
                                                         Q6_Q_vcmp_gt_VwVw(abs_a, hvx_splat_w(0x7F7FFFFF))));
    HVX_Vector recip_b = Q6_V_vmux_QVV(b_nan, abs_b, hvx_splat_sf(1.0f));
    recip_b            = Q6_V_vmux_QVV(b_inf, Q6_V_vzero(), recip_b);
    recip_b            = Q6_V_vmux_QVV(b_zero, inf, recip_b);
    const HVX_Vector special_quotient = Q6_V_vxor_VV(hvx_sf_mul(a, recip_b), sign_b);
    return Q6_V_vmux_QVV(special, special_quotient, quotient);
}

// RN(a / b): hvx_sf_div's quotient q (within 1 ulp) moved one ulp where the residual a - b q
// (hvx_sf_residual) says the quotient lies more than half an ulp away
// (b times half q's ulp; below a power of two the ulp is half as large). Quotients of floats are
// never exactly halfway between two floats, so the comparison has no tie to break.
inline HVX_Vector hvx_sf_div_rn(HVX_Vector a, HVX_Vector b) {
    const HVX_Vector q = hvx_sf_div(a, b);
    const HVX_Vector r = hvx_sf_residual(a, b, q);
    const HVX_Vector exponent = Q6_V_vand_VV(q, hvx_splat_w(0x7F800000));
    const HVX_Vector half_up  = hvx_sf_mul(b, Q6_Vw_vsub_VwVw(exponent, hvx_splat_w(24 << 23)));
    const HVX_VectorPred pow2 = Q6_Q_vcmp_eq_VwVw(Q6_V_vand_VV(q, hvx_splat_w(0x7FFFFF)), Q6_V_vzero());
    const HVX_Vector half_down = Q6_V_vmux_QVV(pow2, hvx_sf_mul(half_up, hvx_splat_sf(0.5f)), half_up);
    const HVX_Vector key       = hvx_sf_order_key(r);
    const HVX_VectorPred up    = Q6_Q_vcmp_gt_VwVw(key, hvx_sf_order_key(half_up));
    const HVX_VectorPred down  = Q6_Q_vcmp_gt_VwVw(hvx_sf_order_key(Q6_V_vxor_VV(half_down, hvx_splat_w(int32_t(0x80000000u)))), key);
    const HVX_Vector step = Q6_V_vmux_QVV(up, hvx_splat_w(1), Q6_V_vmux_QVV(down, hvx_splat_w(-1), Q6_V_vzero()));
    return Q6_Vw_vadd_VwVw(q, step);
}

} // namespace hexnpu::htp
