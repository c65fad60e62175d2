// kernel_params of ROPE (htp/ops/rope-ops.cpp) and their host preparation.
#pragma once

#include "proto/htp-unary.h"

#include <stdint.h>

namespace hexnpu::proto {

// ROPE (GGML's): row (i1, i2, i3) rotated, for the pairs j < n_dims / 2 (NEOX: element j pairs
// with j + n_dims/2; NORMAL: 2j with 2j + 1; both from element n_offs on), by theta_j:
// theta_extrap = p theta_scale^j / ff[j] (p = positions[i2], ff the optional frequency factors,
// src2; the multi-position modes: p = positions[i2 + k ne2] and the power e(j) of
// htp_rope_pair_position), theta_interp = freq_scale
// theta_extrap, theta = theta_interp (1 - mix) + theta_extrap mix with YaRN's mix = ext_factor (1 -
// clamp((j - corr_low) inv_range, 0, 1)) (mix 0 without YaRN); cos and sin times mscale (attn_factor,
// times 1 + 0.1 ln(1/freq_scale) with YaRN); elements outside the rotated window copied. Rows in
// order, n_dims even (a multiple of 64 at offset 0: whole vectors of pairs, the fast path). VISION is
// NEOX over the whole row (n_dims = ne0 here, twice GGML's). Streams: src0, the position(s) (and the
// factors), dst; the position slot holds the block's cos and sin table (htp_rope_table_bytes).
enum htp_rope_multi : uint32_t { HTP_ROPE_SINGLE = 0, HTP_ROPE_MROPE = 1, HTP_ROPE_IMROPE = 2, HTP_ROPE_VISION = 3 };
struct htp_rope_kparams {
    htp_eltwise_pipeline pipe;
    fastdiv_values       div_ne1;  // flat row -> (i1, i2, i3)
    fastdiv_values       div_ne2;
    uint32_t             n_dims;           // the rotated elements (GGML's n_dims; VISION: ne0)
    uint32_t             neox;             // 1: NEOX pairs, 0: NORMAL
    uint32_t             ln_theta_scale;   // float bits of ln(freq_base^(-2 / n_dims))
    uint32_t             freq_scale;       // float bits (GGML op_params 6)
    uint32_t             attn_factor;      // float bits of mscale (GGML op_params 8, YaRN's factor included)
    uint32_t             row_type;         // F32 (0), F16 (1) or BF16 (30) rows in and out (widened in VTCM)
    uint32_t             ext_factor;       // float bits (GGML op_params 7), 0: no YaRN
    uint32_t             corr_low;         // float bits of YaRN's first correction dim
    uint32_t             inv_range;        // float bits of 1 / max(0.001, high - low)
    uint32_t             freq_factors;     // 1: src2 holds n_dims / 2 F32 factors
    uint32_t             n_offs;           // the first rotated element (GGML op_params 15)
    uint32_t             multi;            // htp_rope_multi: one position per token or four
    uint32_t             sections[2];      // GGML op_params 11-14, 16 bits each: t | h << 16, w | e << 16
};

// GGML's sections of a multi-position kparams, t h w e.
constexpr uint32_t htp_rope_section(const htp_rope_kparams & kp, uint32_t k) {
    return (kp.sections[k / 2] >> (16 * (k % 2))) & 0xFFFF;
}

// Which of the four positions pair j turns by, and the power of theta_scale, walked pair by pair as
// GGML's multi-position cache does (no division: the NPU walks it too). Sectors count pairs
// modulo the sections' sum. MROPE: section k's sectors take position k. IMROPE: sector c takes
// t, h or w by c mod 3 while c < 3 * that section, e after. VISION: as MROPE, each position's
// power restarting where its section begins (the first of t h w e that begins at that sector).
struct htp_rope_walk {
    uint32_t s[4];
    uint32_t total;
    uint32_t sector = 0, mod3 = 0, j = 0;
    uint32_t start[4] = {0, 0, 0, 0};

    explicit constexpr htp_rope_walk(const htp_rope_kparams & kp)
        : s{htp_rope_section(kp, 0), htp_rope_section(kp, 1), htp_rope_section(kp, 2), htp_rope_section(kp, 3)},
          total(s[0] + s[1] + s[2] + s[3]) {}

    // The next pair's position index (0..3); its power in *power.
    constexpr uint32_t next(uint32_t multi, uint32_t * power) {
        const uint32_t k =
            multi == HTP_ROPE_IMROPE
                ? (mod3 == 1 && sector < 3 * s[1] ? 1 : mod3 == 2 && sector < 3 * s[2] ? 2 : mod3 == 0 && sector < 3 * s[0] ? 0 : 3)
                : (sector < s[0] ? 0 : sector < s[0] + s[1] ? 1 : sector < s[0] + s[1] + s[2] ? 2 : 3);
        if (multi == HTP_ROPE_VISION) {
            const uint32_t bounds[4] = {0, s[0], s[0] + s[1], s[0] + s[1] + s[2]};
            for (uint32_t b = 0; b < 4; ++b) {
                if (sector == bounds[b]) {
                    start[b] = j;
                    break;
                }
            }
        }
        *power = j - start[k];
        ++j;
        mod3   = mod3 == 2 ? 0 : mod3 + 1;
        sector = sector + 1 == total ? 0 : sector + 1;
        if (sector == 0) {
            mod3 = 0;
        }
        return k;
    }
};
static_assert(sizeof(htp_rope_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// The cos and sin table of one block: a vector of each per 32 pairs, and with several positions a
// third, of theta_scale's powers.
constexpr uint32_t htp_rope_table_bytes(uint32_t n_dims, uint32_t multi) {
    return (n_dims + 63) / 64 * (multi != HTP_ROPE_SINGLE ? 384 : 256);
}

// params: GGML's ROPE op_params (n_dims 1, mode 2, freq_base 5, freq_scale 6, ext_factor 7,
// attn_factor 8, YaRN's beta_fast 9 and beta_slow 10, sections 11-14, n_offs 15); pos: I32, one per
// src0 ne2 (four with MROPE, IMROPE and VISION); ff: the frequency factors, or null.
inline htp_verdict prepare_rope_kparams(const htp_tensor & src0, const htp_tensor & pos, const htp_tensor * ff,
                                        const htp_tensor & dst, const int32_t params[HTP_OP_MAX_PARAMS],
                                        uint32_t n_threads, uint32_t vtcm_size, htp_rope_kparams * out) {
    const uint32_t n_dims = uint32_t(params[1]);  // GGML's: the rotated elements but for VISION
    const int32_t  mode   = params[2];
    const bool rows_ok = src0.type == HTP_TYPE_F32 ? htp_unary_shapes_supported(HTP_OP_ROPE, src0, dst)
                                        : src0.type == dst.type && htp_cpy_shapes_supported(src0, dst) &&
                                              htp_rows_apart(src0, htp_cpy_elem_size(src0.type));
    const uint32_t multi = mode == 8 ? HTP_ROPE_MROPE : mode == 40 ? HTP_ROPE_IMROPE : mode == 24 ? HTP_ROPE_VISION
                                                                                                 : HTP_ROPE_SINGLE;
    if (mode != 0 && mode != 2 && multi == HTP_ROPE_SINGLE) {
        return htp_refuse("the NPU ROPE takes the NORMAL, NEOX, MROPE, IMROPE and VISION modes");
    }
    const uint32_t rotated = multi == HTP_ROPE_VISION ? 2 * n_dims : n_dims;  // elements
    const int32_t  n_offs  = params[15];
    if (n_dims == 0 || n_dims % 2 != 0 || n_dims > 0xFFFF || n_offs < 0 || n_offs % 2 != 0 ||
        uint64_t(n_offs) + rotated > uint64_t(dst.ne[0]) || (multi == HTP_ROPE_VISION && (rotated != dst.ne[0] || n_offs != 0))) {
        return htp_refuse("n_dims is not even or the rotated window (from the offset) is not inside the row");
    }
    if (multi != HTP_ROPE_SINGLE) {
        uint32_t sections_sum = 0;
        for (int k = 11; k < 15; ++k) {
            if (params[k] < 0 || params[k] > 0xFFFF) {
                return htp_refuse("a section is negative or above 65535");
            }
            sections_sum += uint32_t(params[k]);
        }
        if (sections_sum == 0 || sections_sum > dst.ne[0]) {
            return htp_refuse("the sections add up to zero or to more than the row");
        }
    }
    if (!rows_ok) {
        return htp_refuse("the NPU ROPE takes F32, F16 or BF16 rows in order, the result of the source's type");
    }
    const uint32_t n_pos = multi != HTP_ROPE_SINGLE ? 4 : 1;
    if (pos.type != HTP_TYPE_I32 || pos.nb[0] != 4 || pos.ne[0] != n_pos * dst.ne[2] || uint64_t(pos.ne[0]) * 4 > pos.size) {
        return htp_refuse(n_pos == 4 ? "the positions are not four I32 per row slice (dim 2)"
                                     : "the positions are not one I32 per row slice (dim 2)");
    }
    if (ff != nullptr && (ff->type != HTP_TYPE_F32 || ff->nb[0] != 4 || ff->ne[0] < rotated / 2 || ff->size < rotated * 2)) {
        return htp_refuse("the frequency factors are not one F32 value per rotated pair");
    }
    const float freq_base = __builtin_bit_cast(float, params[5]);
    if (!(freq_base > 0.0f)) {
        return htp_refuse("freq_base is not positive");
    }
    htp_rope_kparams kp{};
    const uint64_t   total_rows = uint64_t(dst.ne[1]) * dst.ne[2] * dst.ne[3];
    const uint32_t   table      = htp_rope_table_bytes(rotated, multi);  // a block's slots hold at least the table
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
    kp.n_dims         = rotated;
    kp.neox           = mode != 0;
    kp.n_offs         = uint32_t(n_offs);
    kp.multi          = multi;
    kp.sections[0]    = multi != HTP_ROPE_SINGLE ? uint32_t(params[11]) | uint32_t(params[12]) << 16 : 0;
    kp.sections[1]    = multi != HTP_ROPE_SINGLE ? uint32_t(params[13]) | uint32_t(params[14]) << 16 : 0;
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
