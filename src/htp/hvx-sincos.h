// fp32 sin and cos of the same angle, for RoPE: x = k pi/2 + r with |r| <= pi/4 (k rounded to
// nearest with the 1.5 * 2^23 trick; pi/2 in three parts, the first with 8 significant bits, so
// that k pi/2_hi is exact for |k| < 2^16, i.e. |x| < ~1e5), then sin r and cos r by their Taylor-like
// minimax polynomials of degree 7 and 8 (Cephes' coefficients, within 1e-7 on the interval), the
// quadrant k mod 4 swapping and negating them.
//
// Error (tests/htp/test-htp-eltwise.cpp measures it against fp64): within 2e-7 absolute for
// |x| <= 8192 (RoPE angles up to position 8192 at the highest frequency); beyond, the reduction's
// third part leaves up to ~|x| * 2^-46 more. The angle itself carries fp32 rounding of |x| * 6e-8,
// as in GGML's CPU RoPE.
#pragma once

#include "hvx-arith.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

// *s = sin x, *c = cos x.
inline void hvx_sf_sincos(HVX_Vector x, HVX_Vector * s, HVX_Vector * c) {
    const HVX_Vector round_magic = hvx_splat_sf(12582912.0f);  // 1.5 * 2^23
    const HVX_Vector t           = hvx_sf_add(hvx_sf_mul(x, hvx_splat_sf(0.636619772f)), round_magic);
    const HVX_Vector k           = Q6_Vw_vsub_VwVw(t, round_magic);  // the integer, from the low bits
    const HVX_Vector kf          = hvx_sf_sub(t, round_magic);
    HVX_Vector       r           = hvx_sf_sub(x, hvx_sf_mul(kf, hvx_splat_sf(1.5703125f)));
    r                            = hvx_sf_sub(r, hvx_sf_mul(kf, hvx_splat_sf(4.837512969970703125e-4f)));
    r                            = hvx_sf_sub(r, hvx_sf_mul(kf, hvx_splat_sf(7.54978995489188216e-8f)));
    const HVX_Vector z           = hvx_sf_mul(r, r);

    HVX_Vector ps = hvx_splat_sf(-1.9515295891e-4f);
    ps            = hvx_sf_add(hvx_sf_mul(ps, z), hvx_splat_sf(8.3321608736e-3f));
    ps            = hvx_sf_add(hvx_sf_mul(ps, z), hvx_splat_sf(-1.6666654611e-1f));
    const HVX_Vector sr = hvx_sf_add(r, hvx_sf_mul(hvx_sf_mul(ps, z), r));

    HVX_Vector pc = hvx_splat_sf(2.443315711809948e-5f);
    pc            = hvx_sf_add(hvx_sf_mul(pc, z), hvx_splat_sf(-1.388731625493765e-3f));
    pc            = hvx_sf_add(hvx_sf_mul(pc, z), hvx_splat_sf(4.166664568298827e-2f));
    const HVX_Vector cr = hvx_sf_add(hvx_sf_sub(hvx_splat_sf(1.0f), hvx_sf_mul(z, hvx_splat_sf(0.5f))),
                                     hvx_sf_mul(hvx_sf_mul(pc, z), z));

    // Quadrant q = k mod 4: sin x = (s, c, -s, -c)[q], cos x = (c, -s, -c, s)[q].
    const HVX_Vector one       = hvx_splat_w(1);
    const HVX_Vector two       = hvx_splat_w(2);
    const HVX_Vector sign      = hvx_splat_w(int32_t(0x80000000u));
    const HVX_VectorPred odd   = Q6_Q_vcmp_eq_VwVw(Q6_V_vand_VV(k, one), one);
    const HVX_VectorPred neg_s = Q6_Q_vcmp_eq_VwVw(Q6_V_vand_VV(k, two), two);
    const HVX_VectorPred neg_c = Q6_Q_vcmp_eq_VwVw(Q6_V_vand_VV(Q6_Vw_vadd_VwVw(k, one), two), two);
    const HVX_Vector     sv    = Q6_V_vmux_QVV(odd, cr, sr);
    const HVX_Vector     cv    = Q6_V_vmux_QVV(odd, sr, cr);
    *s                         = Q6_V_vmux_QVV(neg_s, Q6_V_vxor_VV(sv, sign), sv);
    *c                         = Q6_V_vmux_QVV(neg_c, Q6_V_vxor_VV(cv, sign), cv);
}

} // namespace hexnpu::htp
