// What both flash-attention kernels (HVX and HMX) share of the online softmax: the float order as
// integers (maxima by integer max), and a row's output factor at the end (the sink logit joined to
// the denominator, then 1 / l; 0 when every key was masked).
#pragma once

#include "hvx-arith.h"
#include "hvx-div.h"
#include "hvx-exp.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

// The factor a row's accumulators are multiplied by to give its output, from its running max and
// denominator l (splats), the sink logit when has_sink.
inline HVX_Vector fa_output_factor(HVX_Vector max, HVX_Vector l, bool has_sink, float sink) {
    HVX_Vector shrink = hvx_splat_sf(1.0f);
    if (has_sink) {
        const HVX_Vector neg_inf = hvx_splat_w(int32_t(0xFF800000u));
        const HVX_Vector sk      = hvx_splat_sf(sink);
        const HVX_Vector new_max = hvx_sf_order_key(Q6_Vw_vmax_VwVw(hvx_sf_order_key(sk), hvx_sf_order_key(max)));
        const HVX_Vector safe    = Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(new_max, neg_inf), Q6_V_vzero(), new_max);
        shrink                   = hvx_sf_exp(hvx_sf_sub(max, safe));
        l                        = hvx_sf_add(hvx_sf_mul(l, shrink), hvx_sf_exp(hvx_sf_sub(sk, safe)));
    }
    // l > 0 exactly when its bits are positive as integers (l is never negative or NaN).
    const HVX_Vector zero = Q6_V_vzero();
    return Q6_V_vmux_QVV(Q6_Q_vcmp_gt_VwVw(l, zero), hvx_sf_mul(hvx_sf_div(hvx_splat_sf(1.0f), l), shrink), zero);
}

} // namespace hexnpu::htp
