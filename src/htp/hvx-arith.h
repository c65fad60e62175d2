// fp32 (sf) vector arithmetic for the kernels, one source for every arch. v79 and later use the IEEE
// sf instructions when the compiler offers them (clang: -mhvx-ieee-fp, which defines
// __HVX_IEEE_FP__); otherwise, and always on v73/v75, the ops go through qf32 and convert back at
// once. Deviation: the device's qf32 keeps a few more mantissa bits inside an operation, so there
// a result may differ from the IEEE one in the last bit; the x86 emulator computes qf32 as IEEE,
// so on x86 both paths agree.
#pragma once

#include "hvx-order-key.h"
#include "vnpu/hvx/hvx.h"

#include <stdint.h>

namespace hexnpu::htp {

#if defined(HTP_ARCH) && (HTP_ARCH < 79 || (defined(__hexagon__) && !defined(__HVX_IEEE_FP__)))
inline HVX_Vector hvx_sf_add(HVX_Vector a, HVX_Vector b) { return Q6_Vsf_equals_Vqf32(Q6_Vqf32_vadd_VsfVsf(a, b)); }
inline HVX_Vector hvx_sf_sub(HVX_Vector a, HVX_Vector b) { return Q6_Vsf_equals_Vqf32(Q6_Vqf32_vsub_VsfVsf(a, b)); }
inline HVX_Vector hvx_sf_mul(HVX_Vector a, HVX_Vector b) { return Q6_Vsf_equals_Vqf32(Q6_Vqf32_vmpy_VsfVsf(a, b)); }
#else
inline HVX_Vector hvx_sf_add(HVX_Vector a, HVX_Vector b) { return Q6_Vsf_vadd_VsfVsf(a, b); }
inline HVX_Vector hvx_sf_sub(HVX_Vector a, HVX_Vector b) { return Q6_Vsf_vsub_VsfVsf(a, b); }
inline HVX_Vector hvx_sf_mul(HVX_Vector a, HVX_Vector b) { return Q6_Vsf_vmpy_VsfVsf(a, b); }
#endif

// Every lane set to the bits of f / to the integer w.
inline HVX_Vector hvx_splat_sf(float f) { return Q6_V_vsplat_R(__builtin_bit_cast(int32_t, f)); }
inline HVX_Vector hvx_splat_w(int32_t w) { return Q6_V_vsplat_R(w); }

// Every lane: the sum of v's 32 fp32 lanes (rotations by 64, 32, ..., 4 bytes).
inline HVX_Vector hvx_sf_allsum(HVX_Vector v) {
    for (int32_t bytes = 64; bytes >= 4; bytes /= 2) {
        v = hvx_sf_add(v, Q6_V_vror_VR(v, bytes));
    }
    return v;
}

} // namespace hexnpu::htp
