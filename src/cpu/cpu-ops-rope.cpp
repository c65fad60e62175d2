// ROPE, modes NORMAL (rotates pairs (2i, 2i+1)) and NEOX (pairs (i, i + n_dims/2)), with frequency
// factors and YaRN. Pair i of the token at position p turns by
//   theta_extrap = p * base^(-2i/n_dims) / ff[i],   theta_interp = freq_scale * theta_extrap,
//   theta = theta_interp * (1 - mix) + theta_extrap * mix,   mix = ramp(i) * ext_factor,
// and is scaled by mscale = attn_factor (times 1 + 0.1 ln(1/freq_scale) when ext_factor != 0).
// ramp(i) falls from 1 to 0 between YaRN's correction dims. Dims from n_dims on are copied.
// Angles are computed in double once per token and shared by its heads.
#include "cpu-ops.h"
#include "cpu-tensor.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

namespace hexnpu::cpu {
namespace {

struct rope_params {
    int    n_dims;
    int    mode;
    int    n_ctx_orig;
    double freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow;
};

rope_params params_of(const ggml_tensor * t) {
    return {ggml_get_op_param<int32_t>(t, 1),    ggml_get_op_param<int32_t>(t, 2), ggml_get_op_param<int32_t>(t, 4),
            ggml_get_op_param<float>(t, 5),      ggml_get_op_param<float>(t, 6),   ggml_get_op_param<float>(t, 7),
            ggml_get_op_param<float>(t, 8),      ggml_get_op_param<float>(t, 9),   ggml_get_op_param<float>(t, 10)};
}

// The pair index at which a wavelength fits n_rot times into the original context (YaRN).
double correction_dim(const rope_params & p, double n_rot) {
    return p.n_dims * std::log(p.n_ctx_orig / (n_rot * 2.0 * std::numbers::pi)) / (2.0 * std::log(p.freq_base));
}

// cos/sin (times mscale) of every pair's angle for one position.
void rotation_table(const rope_params & p, int32_t pos, const float * freq_factors, float * cos_out, float * sin_out) {
    const double low  = std::max(0.0, std::floor(correction_dim(p, p.beta_fast)));
    const double high = std::min(double(p.n_dims - 1), std::ceil(correction_dim(p, p.beta_slow)));
    double       mscale = p.attn_factor;
    if (p.ext_factor != 0.0) {
        mscale *= 1.0 + 0.1 * std::log(1.0 / p.freq_scale);
    }
    for (int i = 0; i < p.n_dims / 2; ++i) {
        double theta_extrap = pos * std::pow(p.freq_base, -2.0 * i / p.n_dims);
        if (freq_factors) {
            theta_extrap /= freq_factors[i];
        }
        double theta = p.freq_scale * theta_extrap;
        if (p.ext_factor != 0.0) {
            const double y   = (i - low) / std::max(0.001, high - low);
            const double mix = (1.0 - std::clamp(y, 0.0, 1.0)) * p.ext_factor;
            theta            = theta * (1.0 - mix) + theta_extrap * mix;
        }
        cos_out[i] = float(std::cos(theta) * mscale);
        sin_out[i] = float(std::sin(theta) * mscale);
    }
}

} // namespace

bool supports_rope(const ggml_tensor * op) {
    const ggml_tensor * a   = op->src[0];
    const ggml_tensor * pos = op->src[1];
    const ggml_tensor * ff  = op->src[2];
    if (!a || !pos || !is_float_type(a->type) || !is_float_type(op->type) || !ggml_are_same_shape(op, a)) {
        return false;
    }
    const rope_params p = params_of(op);
    return (p.mode == GGML_ROPE_TYPE_NORMAL || p.mode == GGML_ROPE_TYPE_NEOX) && p.n_dims > 0 && p.n_dims % 2 == 0 &&
           p.n_dims <= a->ne[0] && pos->type == GGML_TYPE_I32 && pos->ne[0] == a->ne[2] &&
           (!ff || (ff->type == GGML_TYPE_F32 && ff->ne[0] >= p.n_dims / 2 && ggml_is_contiguous_rows(ff)));
}

void compute_rope(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * a   = dst->src[0];
    const ggml_tensor * pos = dst->src[1];
    const ggml_tensor * ff  = dst->src[2];
    const rope_params   p   = params_of(dst);
    const int64_t       ne0 = dst->ne[0];
    const int64_t       half = p.n_dims / 2;
    // NORMAL rotates neighbours, NEOX the two halves of the rotated dims.
    const int64_t stride = p.mode == GGML_ROPE_TYPE_NEOX ? half : 1;
    const int64_t step   = p.mode == GGML_ROPE_TYPE_NEOX ? 1 : 2;

    const float * factors = ff ? static_cast<const float *>(ff->data) : nullptr;

    // One task per token (i2, i3): the angle table is built once and used for every head.
    ctx.parallel_for(a->ne[2] * a->ne[3], rows_per_chunk(ne0 * a->ne[1], 4096), [&](int64_t t0, int64_t t1) {
        std::vector<float> cos_t(half), sin_t(half), in_buf(ne0), out_buf(ne0);
        for (int64_t t = t0; t < t1; ++t) {
            const int64_t i2 = t % a->ne[2], i3 = t / a->ne[2];
            rotation_table(p, int32_t(load_index(pos, i2, 0, 0)), factors, cos_t.data(), sin_t.data());
            for (int64_t i1 = 0; i1 < a->ne[1]; ++i1) {
                const row_index ri  = {i1, i2, i3};
                const float *   x   = row_f32(a, ri, in_buf.data());
                float *         out = out_row_f32(dst, ri, out_buf.data());
                for (int64_t i = 0; i < half; ++i) {
                    const int64_t j0 = i * step, j1 = j0 + stride;
                    const float   x0 = x[j0], x1 = x[j1];
                    out[j0]          = x0 * cos_t[size_t(i)] - x1 * sin_t[size_t(i)];
                    out[j1]          = x0 * sin_t[size_t(i)] + x1 * cos_t[size_t(i)];
                }
                if (out != x) {
                    std::copy(x + p.n_dims, x + ne0, out + p.n_dims);
                }
                commit_row(dst, ri, out);
            }
        }
    });
}

} // namespace hexnpu::cpu
