// The row norms' statistics, shared by the norm ops (unary-ops.cpp) and the fused RMS_NORM + MUL
// (binary-ops.cpp). GGML's definitions, y = (x - shift) * factor with (shift, factor) from the row:
//   RMS_NORM  shift 0,    factor 1 / sqrt(mean(x^2) + eps)
//   NORM      shift mean, factor 1 / sqrt(mean((x - mean)^2) + eps)
//   L2_NORM   shift 0,    factor 1 / max(sqrt(sum(x^2)), eps)
// A row's lanes past row_size bytes are stale VTCM (the DMA wrote row_size bytes): they are left out
// of the sums. Accuracy: the fp32 sums of hvx_sf_add (a vector's lanes, then hvx_sf_allsum's tree)
// and hvx_sf_sqrt / hvx_sf_div's error (their headers): a few ulp of the factor for rows of
// thousands of elements.
#pragma once

#include "hvx-arith.h"
#include "hvx-div.h"
#include "hvx-sqrt.h"
#include "proto/htp-opcodes.h"
#include "vnpu/hvx/hvx.h"

#include <stdint.h>

namespace hexnpu::htp {

// What a row norm takes from its op's kernel_params.
struct row_norm_consts {
    uint32_t row_size;  // bytes of the row (ne0 * 4)
    uint32_t eps;       // float bits
    uint32_t inv_n;     // float bits of 1 / ne0: the mean without an NPU division
};

// Vector j of the row at x with the lanes past row_size bytes zero.
inline HVX_Vector row_vector(const HVX_Vector * x, uint32_t j, uint32_t row_size) {
    const uint32_t full = row_size / 128, tail = row_size % 128;
    return j < full ? x[j] : Q6_V_vmux_QVV(Q6_Q_vsetq_R(int32_t(tail)), x[j], Q6_V_vzero());
}

// Every lane: the sum over the row of f(v) for its vectors v (lanes past the row zero before f).
template <class F> HVX_Vector row_sum(const HVX_Vector * x, uint32_t row_size, F f) {
    const uint32_t n   = (row_size + 127) / 128;
    HVX_Vector     acc = Q6_V_vzero();
    for (uint32_t j = 0; j < n; ++j) {
        acc = hvx_sf_add(acc, f(row_vector(x, j, row_size)));
    }
    return hvx_sf_allsum(acc);
}

// (shift, factor) in every lane (lo, hi). Once per row, and not inlined: a call in the row loop
// would clobber whatever constants the loop held in vector registers.
template <uint32_t Op>
__attribute__((noinline)) HVX_VectorPair norm_affine(const HVX_Vector * x, const row_norm_consts & c) {
    const HVX_Vector eps   = Q6_V_vsplat_R(int32_t(c.eps));
    const HVX_Vector inv_n = Q6_V_vsplat_R(int32_t(c.inv_n));
    const HVX_Vector one   = hvx_splat_sf(1.0f);
    auto             sq    = [](HVX_Vector v) { return hvx_sf_mul(v, v); };
    if constexpr (Op == proto::HTP_OP_NORM) {
        const HVX_Vector mean = hvx_sf_mul(row_sum(x, c.row_size, [](HVX_Vector v) { return v; }), inv_n);
        const uint32_t   full = c.row_size / 128;
        HVX_Vector       acc  = Q6_V_vzero();
        for (uint32_t j = 0; j < (c.row_size + 127) / 128; ++j) {
            HVX_Vector dev = hvx_sf_sub(x[j], mean);
            if (j == full) {
                dev = Q6_V_vmux_QVV(Q6_Q_vsetq_R(int32_t(c.row_size % 128)), dev, Q6_V_vzero());
            }
            acc = hvx_sf_add(acc, sq(dev));
        }
        const HVX_Vector var = hvx_sf_mul(hvx_sf_allsum(acc), inv_n);
        return Q6_W_vcombine_VV(hvx_sf_div(one, hvx_sf_sqrt(hvx_sf_add(var, eps))), mean);
    } else if constexpr (Op == proto::HTP_OP_L2_NORM) {
        // Both non-negative: the larger float has the larger bits.
        const HVX_Vector norm = Q6_Vw_vmax_VwVw(hvx_sf_sqrt(row_sum(x, c.row_size, sq)), eps);
        return Q6_W_vcombine_VV(hvx_sf_div(one, norm), Q6_V_vzero());
    } else {
        const HVX_Vector mean = hvx_sf_mul(row_sum(x, c.row_size, sq), inv_n);
        return Q6_W_vcombine_VV(hvx_sf_div(one, hvx_sf_sqrt(hvx_sf_add(mean, eps))), Q6_V_vzero());
    }
}

} // namespace hexnpu::htp
