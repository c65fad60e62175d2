// Rotary position embedding in double: NORMAL (adjacent pairs) and NEOX (halves) rotation, frequency
// factors, and YaRN's blend of interpolated and extrapolated angles with its magnitude correction.
#include "ref-eval-ops.h"

#include <algorithm>
#include <numbers>

namespace hexnpu::optest {
namespace {

// The rotation dimension at which a frequency makes n_rot turns over the original context.
double yarn_corr_dim(int n_dims, int n_ctx_orig, double n_rot, double base) {
    return n_dims * std::log(n_ctx_orig / (n_rot * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
}

struct rope_params {
    int    n_dims, mode, n_ctx_orig;
    double freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow;
};

rope_params read_params(const ggml_tensor * node) {
    return {ggml_get_op_param<int32_t>(node, 1), ggml_get_op_param<int32_t>(node, 2),
            ggml_get_op_param<int32_t>(node, 4), ggml_get_op_param<float>(node, 5),
            ggml_get_op_param<float>(node, 6),   ggml_get_op_param<float>(node, 7),
            ggml_get_op_param<float>(node, 8),   ggml_get_op_param<float>(node, 9),
            ggml_get_op_param<float>(node, 10)};
}

} // namespace

void eval_rope(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * a            = node->src[0];
    const ggml_tensor * pos          = node->src[1];
    const ggml_tensor * freq_factors = node->src[2];
    const rope_params   p            = read_params(node);
    // Dimensions below corr_low extrapolate, above corr_high interpolate, with a linear ramp between.
    const double corr_low  = std::max(0.0, std::floor(yarn_corr_dim(p.n_dims, p.n_ctx_orig, p.beta_fast, p.freq_base)));
    const double corr_high = std::min(double(p.n_dims - 1),
                                      std::ceil(yarn_corr_dim(p.n_dims, p.n_ctx_orig, p.beta_slow, p.freq_base)));
    const bool   neox      = p.mode == GGML_ROPE_TYPE_NEOX;
    for_each_row(a, [&](int64_t i1, int64_t i2, int64_t i3) {
        std::vector<double> x        = ev.row(a, i1, i2, i3);
        const double        position = ev.get(pos, i2, 0, 0, 0);
        for (int64_t i0 = 0; i0 < p.n_dims; i0 += 2) {
            const double ff            = freq_factors ? ev.get(freq_factors, i0 / 2, 0, 0, 0) : 1.0;
            const double theta_extrap  = position * std::pow(p.freq_base, -double(i0) / p.n_dims) / ff;
            const double theta_interp  = p.freq_scale * theta_extrap;
            double       theta         = theta_interp;
            double       mscale        = p.attn_factor;
            if (p.ext_factor != 0.0) {
                const double y        = (double(i0 / 2) - corr_low) / std::max(0.001, corr_high - corr_low);
                const double ramp_mix = (1.0 - std::clamp(y, 0.0, 1.0)) * p.ext_factor;
                theta                 = theta_interp * (1.0 - ramp_mix) + theta_extrap * ramp_mix;
                mscale *= 1.0 + 0.1 * std::log(1.0 / p.freq_scale);
            }
            const double  c  = std::cos(theta) * mscale;
            const double  s  = std::sin(theta) * mscale;
            // NORMAL rotates (x[i0], x[i0+1]); NEOX rotates (x[i0/2], x[i0/2 + n_dims/2]).
            const int64_t j0 = neox ? i0 / 2 : i0;
            const int64_t j1 = neox ? i0 / 2 + p.n_dims / 2 : i0 + 1;
            const double  x0 = ev.get(a, j0, i1, i2, i3);
            const double  x1 = ev.get(a, j1, i1, i2, i3);
            x[size_t(j0)]    = x0 * c - x1 * s;
            x[size_t(j1)]    = x0 * s + x1 * c;
        }
        ev.set_row(node, i1, i2, i3, x);  // dimensions from n_dims on pass through unchanged
    });
}

} // namespace hexnpu::optest
