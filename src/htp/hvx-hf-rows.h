// fp16 -> fp32 for per-row tile scales: the first 32 halfwords of a vector (a tile's 32 row scales)
// as 32 fp32 lanes in row order. The widening conversion splits even and odd halfwords over a
// pair; one word shuffle puts them back in order. Exact (every fp16 is an fp32), zeros,
// subnormals, infinities and NaNs included.
#pragma once

#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

inline HVX_Vector hvx_hf_rows_to_sf(HVX_Vector h) {
#if defined(HTP_ARCH) && (HTP_ARCH < 79 || (defined(__hexagon__) && !defined(__HVX_IEEE_FP__)))
    // qf32 product by 1.0 (exact), then back to sf.
    const HVX_VectorPair q  = Q6_Wqf32_vmpy_VhfVhf(h, Q6_Vh_vsplat_R(0x3C00));
    const HVX_Vector     lo = Q6_Vsf_equals_Vqf32(Q6_V_lo_W(q));
    const HVX_Vector     hi = Q6_Vsf_equals_Vqf32(Q6_V_hi_W(q));
#else
    const HVX_VectorPair w  = Q6_Wsf_vcvt_Vhf(h);
    const HVX_Vector     lo = Q6_V_lo_W(w);
    const HVX_Vector     hi = Q6_V_hi_W(w);
#endif
    // lo holds rows 0, 2, 4, ..., hi rows 1, 3, 5, ...: interleave their words.
    return Q6_V_lo_W(Q6_W_vshuff_VVR(hi, lo, -4));
}

} // namespace hexnpu::htp
