// Activation quantization for the HVX matmul: one 32-element fp32 block (one vector) into the
// act-area layout of proto/htp-matmul.h — eight vrmpy operand vectors (group g = elements 4g..4g+3
// as a word in every lane), the scale d, the sum of the int8 values and the sum of the first 16,
// each in every lane. The scale rule (proto/htp-matmul.h) needs no division: d = m 2^f with m one
// of four short constants, q = round-to-even(x * fl(1/m) 2^-f), one rounding in the product and one
// in the conversion, which a scalar model reproduces. Blocks whose amax lies below 2^-100 (or is
// zero) give q = 0 and scale 0; a block holding an inf or NaN gives q = 0 and a NaN scale, so the
// NaN reaches every output it touches, as in GGML.
#pragma once

#include "hvx-arith.h"
#include "proto/htp-matmul.h"
#include "vnpu/hvx/hvx.h"

#include <stdint.h>

namespace hexnpu::htp {

// Every lane the maximum / the sum of the 32 word lanes (rotations by 64, 32, ..., 4 bytes).
inline HVX_Vector hvx_w_allmax(HVX_Vector v) {
    for (int32_t bytes = 64; bytes >= 4; bytes /= 2) {
        v = Q6_Vw_vmax_VwVw(v, Q6_V_vror_VR(v, bytes));
    }
    return v;
}
inline HVX_Vector hvx_w_allsum(HVX_Vector v) {
    for (int32_t bytes = 64; bytes >= 4; bytes /= 2) {
        v = Q6_Vw_vadd_VwVw(v, Q6_V_vror_VR(v, bytes));
    }
    return v;
}

// Not inlined: its dozen constants would otherwise be hoisted out of the caller's block loop and spill.
__attribute__((noinline)) inline void hvx_quantize_act_block(HVX_Vector x, HVX_Vector * out) {
    // |x| as bits: for non-negative floats the integer order is the float order.
    const HVX_Vector amax  = hvx_w_allmax(Q6_V_vand_VV(x, hvx_splat_w(0x7FFFFFFF)));
    const HVX_Vector e_a   = Q6_Vw_vsub_VwVw(Q6_Vuw_vlsr_VuwR(amax, 23), hvx_splat_w(127));
    // amax = m * 2^e_a with m in [1, 2): amax <= 127 * 2^(e_a - 6) exactly when m <= 127/64.
    const HVX_VectorPred big_m = Q6_Q_vcmp_gt_VwVw(Q6_V_vand_VV(amax, hvx_splat_w(0x7FFFFF)), hvx_splat_w(0x7E0000));
    const HVX_Vector     e     = Q6_Vw_vadd_VwVw(Q6_Vw_vsub_VwVw(e_a, hvx_splat_w(6)),
                                                 Q6_V_vmux_QVV(big_m, hvx_splat_w(1), Q6_V_vzero()));
    const HVX_VectorPred tiny  = Q6_Q_vcmp_gt_VwVw(hvx_splat_w(proto::HTP_MM_MIN_EXP), e);
    const HVX_VectorPred bad   = Q6_Q_vcmp_eq_VwVw(e_a, hvx_splat_w(128));  // inf or NaN
    const HVX_VectorPred none  = Q6_Q_or_QQ(tiny, bad);

    // The scale d = m 2^f, f = e - 1, m the least of 1.125, 1.25, ..., 2 (eighths) with
    // amax <= 127 m 2^f (m = 2 is 2^e): 127 m 2^f as float bits is 127 m's bits plus f in the
    // exponent field.
    const HVX_Vector f     = Q6_Vw_vsub_VwVw(e, hvx_splat_w(1));
    const HVX_Vector f_exp = Q6_Vw_vasl_VwR(f, 23);
    auto fits = [&](float m) {
        return Q6_Q_vcmp_gt_VwVw(Q6_Vw_vadd_VwVw(hvx_splat_sf(127.0f * m), f_exp), Q6_Vw_vsub_VwVw(amax, hvx_splat_w(1)));
    };
    HVX_Vector m   = hvx_splat_sf(2.0f), inv_m = hvx_splat_sf(0.5f);
    constexpr float candidates[] = {1.875f, 1.75f, 1.625f, 1.5f, 1.375f, 1.25f, 1.125f};  // the smallest that fits wins
    for (const float c : candidates) {
        const HVX_VectorPred ok = fits(c);
        m                       = Q6_V_vmux_QVV(ok, hvx_splat_sf(c), m);
        inv_m                   = Q6_V_vmux_QVV(ok, hvx_splat_sf(1.0f / c), inv_m);
    }
    // d = m 2^f and c = fl(1/m) 2^-f: f in [-101, 121] here, both normal floats.
    const HVX_Vector inv   = Q6_Vw_vsub_VwVw(inv_m, f_exp);
    HVX_Vector       scale = Q6_Vw_vadd_VwVw(m, f_exp);
    scale                  = Q6_V_vmux_QVV(tiny, Q6_V_vzero(), scale);
    scale                  = Q6_V_vmux_QVV(bad, hvx_splat_w(0x7FC00000), scale);

    // round-to-even(y) for |y| <= 127 (1 + 2^-23): y + 1.5 * 2^23 has the integer in its low
    // mantissa bits; the product may round a hair past 127, hence the clamp.
    const HVX_Vector y = hvx_sf_mul(x, inv);
    HVX_Vector       q = Q6_Vw_vsub_VwVw(hvx_sf_add(y, hvx_splat_sf(12582912.0f)), hvx_splat_w(0x4B400000));
    q                  = Q6_Vw_vmin_VwVw(Q6_Vw_vmax_VwVw(q, hvx_splat_w(-127)), hvx_splat_w(127));
    q                  = Q6_V_vmux_QVV(none, Q6_V_vzero(), q);

    // Byte i of b is q[i % 32], so word g of b is group g's four values.
    const HVX_Vector h = Q6_Vh_vpack_VwVw_sat(q, q);
    const HVX_Vector b = Q6_Vb_vpack_VhVh_sat(h, h);
    for (int32_t g = 0; g < 8; ++g) {
        out[g] = Q6_V_vsplat_R(Q6_R_vextract_VR(b, 4 * g));
    }
    out[8]  = scale;
    out[9]  = hvx_w_allsum(q);
    out[10] = hvx_w_allsum(Q6_V_vmux_QVV(Q6_Q_vsetq_R(64), q, Q6_V_vzero()));
}

} // namespace hexnpu::htp
