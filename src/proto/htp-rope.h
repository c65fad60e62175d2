// kernel_params of ROPE (htp/ops/rope-ops.cpp) and their host preparation.
#pragma once

#include "proto/htp-unary.h"

#include <stdint.h>

namespace hexnpu::proto {

// ROPE (GGML's): row (i1, i2, i3) rotated, for the pairs j < n_dims / 2 (NEOX: element j pairs
// with j + n_dims/2; NORMAL: 2j with 2j + 1), by theta_j: theta_extrap = p theta_scale^j / ff[j]
// (p = positions[i2], ff the optional frequency factors, src2), theta_interp = freq_scale
// theta_extrap, theta = theta_interp (1 - mix) + theta_extrap mix with YaRN's mix = ext_factor (1 -
// clamp((j - corr_low) inv_range, 0, 1)) (mix 0 without YaRN); cos and sin times mscale (attn_factor,
// times 1 + 0.1 ln(1/freq_scale) with YaRN); elements from n_dims on copied. Rows in order, n_dims
// even (a multiple of 64: whole vectors of pairs, the fast path). Streams: src0, the position (and
// the factors), dst; the position slot holds the block's cos and sin table (htp_rope_table_bytes).
struct htp_rope_kparams {
    htp_eltwise_pipeline pipe;
    fastdiv_values       div_ne1;  // flat row -> (i1, i2, i3)
    fastdiv_values       div_ne2;
    uint32_t             n_dims;
    uint32_t             neox;             // 1: NEOX pairs, 0: NORMAL
    uint32_t             ln_theta_scale;   // float bits of ln(freq_base^(-2 / n_dims))
    uint32_t             freq_scale;       // float bits (GGML op_params 6)
    uint32_t             attn_factor;      // float bits of mscale (GGML op_params 8, YaRN's factor included)
    uint32_t             row_type;         // F32 (0), F16 (1) or BF16 (30) rows in and out (widened in VTCM)
    uint32_t             ext_factor;       // float bits (GGML op_params 7), 0: no YaRN
    uint32_t             corr_low;         // float bits of YaRN's first correction dim
    uint32_t             inv_range;        // float bits of 1 / max(0.001, high - low)
    uint32_t             freq_factors;     // 1: src2 holds n_dims / 2 F32 factors
};
static_assert(sizeof(htp_rope_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// The cos and sin table of one block: a vector of each per 32 pairs.
constexpr uint32_t htp_rope_table_bytes(uint32_t n_dims) { return (n_dims + 63) / 64 * 256; }

// params: GGML's ROPE op_params (n_dims 1, mode 2, freq_base 5, freq_scale 6, ext_factor 7,
// attn_factor 8, YaRN's beta_fast 9 and beta_slow 10); pos: I32, one per src0 ne2; ff: the
// frequency factors, or null.
inline htp_verdict prepare_rope_kparams(const htp_tensor & src0, const htp_tensor & pos, const htp_tensor * ff,
                                        const htp_tensor & dst, const int32_t params[HTP_OP_MAX_PARAMS],
                                        uint32_t n_threads, uint32_t vtcm_size, htp_rope_kparams * out) {
    const uint32_t n_dims = uint32_t(params[1]);
    const int32_t  mode   = params[2];
    const bool rows_ok = src0.type == HTP_TYPE_F32 ? htp_unary_shapes_supported(HTP_OP_ROPE, src0, dst)
                                        : src0.type == dst.type && htp_cpy_shapes_supported(src0, dst) &&
                                              htp_rows_apart(src0, htp_cpy_elem_size(src0.type));
    if (mode != 0 && mode != 2) {
        return htp_refuse("the NPU ROPE takes the NORMAL and NEOX modes (no MROPE, IMROPE or VISION)");
    }
    if (params[15] != 0) {
        return htp_refuse("the NPU ROPE rotates from element 0 (no rotation offset, op_params 15)");
    }
    if (n_dims == 0 || n_dims % 2 != 0 || n_dims > dst.ne[0]) {
        return htp_refuse("n_dims is not even and at most the row's length");
    }
    if (!rows_ok) {
        return htp_refuse("the NPU ROPE takes F32, F16 or BF16 rows in order, the result of the source's type");
    }
    if (pos.type != HTP_TYPE_I32 || pos.nb[0] != 4 || pos.ne[0] != dst.ne[2] || uint64_t(pos.ne[0]) * 4 > pos.size) {
        return htp_refuse("the positions are not one I32 per row slice (dim 2)");
    }
    if (ff != nullptr && (ff->type != HTP_TYPE_F32 || ff->nb[0] != 4 || ff->ne[0] < n_dims / 2 || ff->size < n_dims * 2)) {
        return htp_refuse("the frequency factors are not n_dims / 2 F32 values");
    }
    const float freq_base = __builtin_bit_cast(float, params[5]);
    if (!(freq_base > 0.0f)) {
        return htp_refuse("freq_base is not positive");
    }
    htp_rope_kparams kp{};
    const uint64_t   total_rows = uint64_t(dst.ne[1]) * dst.ne[2] * dst.ne[3];
    const uint32_t   table      = htp_rope_table_bytes(n_dims);  // a block's slots hold at least the table
    if (const htp_verdict v =
            htp_eltwise_plan(total_rows, dst.ne[0] * 4 > table ? dst.ne[0] * 4 : table, 3, n_threads, vtcm_size, &kp.pipe);
        !v) {
        return v;
    }
    kp.pipe.row_size = dst.ne[0] * 4;
    // GGML's theta_scale = powf(freq_base, -2.0f / n_dims), its logarithm for the NPU's exp.
    const float theta_scale = __builtin_powf(freq_base, -2.0f / float(n_dims));
    kp.div_ne1        = init_fastdiv(dst.ne[1]);
    kp.div_ne2        = init_fastdiv(dst.ne[2]);
    kp.n_dims         = n_dims;
    kp.neox           = mode == 2;
    kp.ln_theta_scale = __builtin_bit_cast(uint32_t, float(__builtin_log(double(theta_scale))));
    kp.freq_scale     = uint32_t(params[6]);
    kp.attn_factor    = uint32_t(params[8]);
    kp.row_type       = src0.type;
    kp.freq_factors   = ff != nullptr;
    const float ext_factor = __builtin_bit_cast(float, params[7]);
    if (ext_factor != 0.0f) {
        // GGML's correction dims: the pair index where a wavelength fits n_rot times into n_ctx_orig.
        const float freq_scale = __builtin_bit_cast(float, params[6]);
        const int32_t n_ctx_orig = params[4];
        auto corr_dim = [&](float n_rot) {
            return float(n_dims) * __builtin_logf(float(n_ctx_orig) / (n_rot * 2.0f * 3.14159265358979f)) /
                   (2.0f * __builtin_logf(freq_base));
        };
        const float low  = __builtin_fmaxf(0.0f, __builtin_floorf(corr_dim(__builtin_bit_cast(float, params[9]))));
        const float high = __builtin_fminf(float(n_dims - 1), __builtin_ceilf(corr_dim(__builtin_bit_cast(float, params[10]))));
        kp.ext_factor  = uint32_t(params[7]);
        kp.corr_low    = __builtin_bit_cast(uint32_t, low);
        kp.inv_range   = __builtin_bit_cast(uint32_t, 1.0f / __builtin_fmaxf(0.001f, high - low));
        kp.attn_factor = __builtin_bit_cast(uint32_t, __builtin_bit_cast(float, params[8]) *
                                                          (1.0f + 0.1f * __builtin_logf(1.0f / freq_scale)));
    }
    *out = kp;
    return HTP_TAKEN;
}

// src[1] the positions, src[2] the frequency factors (optional).
inline htp_verdict prepare_rope_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_rope_kparams kp{};
    return htp_store_kparams(
        prepare_rope_kparams(*a.src[0], *a.src[1], a.src[2], *a.dst, a.params, a.n_threads, a.vtcm_size, &kp), kp,
        kparams);
}

} // namespace hexnpu::proto
