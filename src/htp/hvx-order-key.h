// fp32 bits as signed integers in the floats' order (negative values' magnitude bits flipped; its
// own inverse): min/max by integer compares, no float compare or subtraction, infinities included.
// Integer only (every arch, and the qemu harness's v66).
#pragma once

#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

inline HVX_Vector hvx_sf_order_key(HVX_Vector v) {
    return Q6_V_vxor_VV(v, Q6_V_vand_VV(Q6_Vw_vasr_VwR(v, 31), Q6_V_vsplat_R(0x7FFFFFFF)));
}

} // namespace hexnpu::htp
