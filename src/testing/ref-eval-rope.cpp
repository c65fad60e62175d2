// Rotary position embedding in double: NORMAL (adjacent pairs) and NEOX (halves) rotation, the
// multi-position modes (MROPE, IMROPE, VISION), frequency factors, the rotation offset, and YaRN's
// blend of interpolated and extrapolated angles with its magnitude correction.
#include "ref-eval-ops.h"

#include <algorithm>
#include <numbers>
#include <utility>

namespace hexnpu::optest {
namespace {

// The rotation dimension at which a frequency makes n_rot turns over the original context.
double yarn_corr_dim(int n_dims, int n_ctx_orig, double n_rot, double base) {
    return n_dims * std::log(n_ctx_orig / (n_rot * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
}

struct rope_params {
    int    n_dims, mode, n_ctx_orig;
    double freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow;
    int    s[4], n_offs;
};

rope_params read_params(const ggml_tensor * node) {
    return {ggml_get_op_param<int32_t>(node, 1),  ggml_get_op_param<int32_t>(node, 2),
            ggml_get_op_param<int32_t>(node, 4),  ggml_get_op_param<float>(node, 5),
            ggml_get_op_param<float>(node, 6),    ggml_get_op_param<float>(node, 7),
            ggml_get_op_param<float>(node, 8),    ggml_get_op_param<float>(node, 9),
            ggml_get_op_param<float>(node, 10),   {ggml_get_op_param<int32_t>(node, 11), ggml_get_op_param<int32_t>(node, 12),
                                                   ggml_get_op_param<int32_t>(node, 13), ggml_get_op_param<int32_t>(node, 14)},
            ggml_get_op_param<int32_t>(node, 15)};
}

// Pair i of a multi-position mode: the position index (t 0, h 1, w 2, e 3) and the exponent of
// theta_scale. Its sector is i modulo the sections' sum. MROPE: section k's sectors use position k.
// IMROPE: sector c is t, h or w by c mod 3 while c < 3 * that section, e otherwise. VISION: as
// MROPE, the exponent counted from the start of the sector's section in this cycle.
std::pair<int, int> multi_pair(const rope_params & p, int i) {
    const int total  = p.s[0] + p.s[1] + p.s[2] + p.s[3];
    const int sector = i % total;
    if (p.mode == GGML_ROPE_TYPE_IMROPE) {
        for (int k : {1, 2, 0}) {
            if (sector % 3 == k && sector < 3 * p.s[k]) {
                return {k, i};
            }
        }
        return {3, i};
    }
    int begin = 0, k = 0;
    while (k < 3 && sector >= begin + p.s[k]) {
        begin += p.s[k++];
    }
    if (p.mode != GGML_ROPE_TYPE_VISION) {
        return {k, i};
    }
    // GGML restarts position k's powers where its section begins, unless an earlier position's
    // section begins at the same sector (an empty section before it): then it never restarts.
    bool restarts = true;
    for (int j = 0, b = 0; j < k; b += p.s[j++]) {
        restarts = restarts && b != begin;
    }
    return {k, restarts ? sector - begin : i};
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
    const bool   normal    = p.mode == GGML_ROPE_TYPE_NORMAL;
    const bool   multi     = (p.mode & GGML_ROPE_TYPE_MROPE) != 0;
    const int    rotated   = p.mode == GGML_ROPE_TYPE_VISION ? 2 * p.n_dims : p.n_dims;
    for_each_row(a, [&](int64_t i1, int64_t i2, int64_t i3) {
        std::vector<double> x = ev.row(a, i1, i2, i3);
        for (int64_t i0 = 0; i0 < rotated; i0 += 2) {
            const auto [k, power]      = multi ? multi_pair(p, int(i0 / 2)) : std::pair<int, int>{0, int(i0 / 2)};
            const double position      = ev.get(pos, i2 + k * a->ne[2], 0, 0, 0);
            const double ff            = freq_factors ? ev.get(freq_factors, i0 / 2, 0, 0, 0) : 1.0;
            const double theta_extrap  = position * std::pow(p.freq_base, -2.0 * power / p.n_dims) / ff;
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
            // NORMAL rotates (x[i0], x[i0+1]); the others (x[i0/2], x[i0/2 + rotated/2]); from n_offs on.
            const int64_t j0 = p.n_offs + (normal ? i0 : i0 / 2);
            const int64_t j1 = normal ? j0 + 1 : j0 + rotated / 2;
            const double  x0 = ev.get(a, j0, i1, i2, i3);
            const double  x1 = ev.get(a, j1, i1, i2, i3);
            x[size_t(j0)]    = x0 * c - x1 * s;
            x[size_t(j1)]    = x0 * s + x1 * c;
        }
        ev.set_row(node, i1, i2, i3, x);  // dimensions not rotated pass through unchanged
    });
}

} // namespace hexnpu::optest
