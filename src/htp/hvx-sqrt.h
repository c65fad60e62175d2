// fp32 square root: a reciprocal square root by Newton-Raphson on the mantissa, one correction of
// the root, and the halved exponent put back in integer ops.
//
// Error (tests/htp/test-htp-eltwise.cpp measures it against fp64): within 1 ulp of the correctly
// rounded root for every non-negative finite input, subnormals included; sqrt(+-0) = +-0,
// sqrt(+inf) = +inf, NaN for negative inputs and NaNs.
#pragma once

#include "hvx-arith.h"
#include "hvx-frexp.h"

namespace hexnpu::htp {

inline HVX_Vector hvx_sf_sqrt(HVX_Vector x) {
    HVX_Vector       e;
    const HVX_Vector m = hvx_sf_frexp(x, &e);
    // x = m' * 2^(2h) with m' in [1, 4): an odd exponent moves into the mantissa (exponent field + 1).
    const HVX_Vector odd    = Q6_V_vand_VV(e, hvx_splat_w(1));
    const HVX_Vector m4     = Q6_Vw_vadd_VwVw(m, Q6_Vw_vasl_VwR(odd, 23));
    const HVX_Vector half_e = Q6_Vw_vasr_VwR(e, 1);

    // 1/sqrt(m'): the classic bit-level first guess (within 3.5e-2), then three steps
    // y (3/2 - m'/2 y^2), each about squaring the error: 1.8e-3, 5e-6, 4e-11.
    const HVX_Vector half_m = hvx_sf_mul(m4, hvx_splat_sf(0.5f));
    const HVX_Vector three_halves = hvx_splat_sf(1.5f);
    HVX_Vector       y = Q6_Vw_vsub_VwVw(hvx_splat_w(0x5F3759DF), Q6_Vuw_vlsr_VuwR(m4, 1));
    for (int i = 0; i < 3; ++i) {
        y = hvx_sf_mul(y, hvx_sf_sub(three_halves, hvx_sf_mul(half_m, hvx_sf_mul(y, y))));
    }
    // s = m' y, corrected once by y/2 (m' - s^2): the root in [1, 2].
    HVX_Vector s = hvx_sf_mul(m4, y);
    s            = hvx_sf_add(s, hvx_sf_mul(hvx_sf_mul(y, hvx_splat_sf(0.5f)), hvx_sf_sub(m4, hvx_sf_mul(s, s))));
    const HVX_Vector root = Q6_Vw_vadd_VwVw(s, Q6_Vw_vasl_VwR(half_e, 23));

    // Zeros, +inf and NaNs are their own roots; anything else negative has none.
    const HVX_Vector     abs       = Q6_V_vand_VV(x, hvx_splat_w(0x7FFFFFFF));
    const HVX_VectorPred itself    = Q6_Q_or_QQ(Q6_Q_vcmp_eq_VwVw(abs, Q6_V_vzero()),
                                                Q6_Q_vcmp_gt_VwVw(abs, hvx_splat_w(0x7F7FFFFF)));
    const HVX_VectorPred negative  = Q6_Q_vcmp_gt_VuwVuw(x, hvx_splat_w(int32_t(0x80000000u)));
    const HVX_Vector     qnan      = hvx_splat_w(0x7FC00000);
    return Q6_V_vmux_QVV(negative, qnan, Q6_V_vmux_QVV(itself, x, root));
}

} // namespace hexnpu::htp
