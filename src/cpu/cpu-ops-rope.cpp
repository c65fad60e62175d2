// ROPE, modes NORMAL (rotates pairs (2i, 2i+1)) and NEOX (pairs (i, i + n_dims/2)), MROPE and IMROPE
// (NEOX pairs, each turned by one of the token's four positions), VISION (pairs (i, i + n_dims) over
// the whole row), with frequency factors, YaRN and a rotation offset. Pair i turns by
//   theta_extrap = p_s(i) * base^(-2 e(i)/n_dims) / ff[i],   theta_interp = freq_scale * theta_extrap,
//   theta = theta_interp * (1 - mix) + theta_extrap * mix,   mix = ramp(i) * ext_factor,
// and is scaled by mscale = attn_factor (times 1 + 0.1 ln(1/freq_scale) when ext_factor != 0).
// ramp(i) falls from 1 to 0 between YaRN's correction dims; s(i) = 0 and e(i) = i but for the
// multi-position modes (pair_positions). Dims outside [n_offs, n_offs + n_dims) are copied.
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
    int    sections[GGML_MROPE_SECTIONS];
    int    n_offs;

    bool multi() const { return (mode & GGML_ROPE_TYPE_MROPE) != 0; }
    int  pairs() const { return mode == GGML_ROPE_TYPE_VISION ? n_dims : n_dims / 2; }
};

rope_params params_of(const ggml_tensor * t) {
    rope_params p{ggml_get_op_param<int32_t>(t, 1), ggml_get_op_param<int32_t>(t, 2), ggml_get_op_param<int32_t>(t, 4),
                  ggml_get_op_param<float>(t, 5),   ggml_get_op_param<float>(t, 6),   ggml_get_op_param<float>(t, 7),
                  ggml_get_op_param<float>(t, 8),   ggml_get_op_param<float>(t, 9),   ggml_get_op_param<float>(t, 10),
                  {},                               ggml_get_op_param<int32_t>(t, 15)};
    for (int k = 0; k < GGML_MROPE_SECTIONS; ++k) {
        p.sections[k] = ggml_get_op_param<int32_t>(t, 11 + k);
    }
    return p;
}

// Which of the token's four positions (t, h, w, e) pair i turns by, and the power e(i) of
// theta_scale, as GGML's multi-position cache walks them: sectors count the pairs modulo the
// sections' sum; MROPE gives each section's sectors its position, IMROPE interleaves t, h, w over
// the first sectors; VISION restarts each section's powers at its first sector.
void pair_positions(const rope_params & p, std::vector<int> & which, std::vector<int> & power) {
    const int n = p.pairs();
    which.assign(size_t(n), 0);
    power.resize(size_t(n));
    for (int i = 0; i < n; ++i) {
        power[size_t(i)] = i;
    }
    if (!p.multi()) {
        return;
    }
    const int * s     = p.sections;
    const int   total = s[0] + s[1] + s[2] + s[3];
    int         start[4] = {0, 0, 0, 0};  // VISION: the pair each position's powers restart at
    for (int i = 0, sector = 0; i < n; ++i, sector = sector + 1 == total ? 0 : sector + 1) {
        int k;
        if (p.mode == GGML_ROPE_TYPE_IMROPE) {
            const int r = sector % 3;
            k = r == 1 && sector < 3 * s[1] ? 1 : r == 2 && sector < 3 * s[2] ? 2 : r == 0 && sector < 3 * s[0] ? 0 : 3;
        } else {
            k = sector < s[0] ? 0 : sector < s[0] + s[1] ? 1 : sector < s[0] + s[1] + s[2] ? 2 : 3;
        }
        if (p.mode == GGML_ROPE_TYPE_VISION) {
            // GGML restarts one power per sector, the first of t, h, w, e whose section starts there.
            const int bounds[4] = {0, s[0], s[0] + s[1], s[0] + s[1] + s[2]};
            for (int b = 0; b < 4; ++b) {
                if (sector == bounds[b]) {
                    start[b] = i;
                    break;
                }
            }
        }
        which[size_t(i)] = k;
        power[size_t(i)] = i - start[k];
    }
}

// The pair index at which a wavelength fits n_rot times into the original context (YaRN).
double correction_dim(const rope_params & p, double n_rot) {
    return p.n_dims * std::log(p.n_ctx_orig / (n_rot * 2.0 * std::numbers::pi)) / (2.0 * std::log(p.freq_base));
}

// cos/sin (times mscale) of every pair's angle for one token (its four positions when multi).
void rotation_table(const rope_params & p, const int32_t pos[4], const std::vector<int> & which,
                    const std::vector<int> & power, const float * freq_factors, float * cos_out, float * sin_out) {
    const double low  = std::max(0.0, std::floor(correction_dim(p, p.beta_fast)));
    const double high = std::min(double(p.n_dims - 1), std::ceil(correction_dim(p, p.beta_slow)));
    double       mscale = p.attn_factor;
    if (p.ext_factor != 0.0) {
        mscale *= 1.0 + 0.1 * std::log(1.0 / p.freq_scale);
    }
    for (int i = 0; i < p.pairs(); ++i) {
        double theta_extrap = pos[which[size_t(i)]] * std::pow(p.freq_base, -2.0 * power[size_t(i)] / p.n_dims);
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
    const rope_params p       = params_of(op);
    const bool        vision  = p.mode == GGML_ROPE_TYPE_VISION;
    const bool        mode_ok = p.mode == GGML_ROPE_TYPE_NORMAL || p.mode == GGML_ROPE_TYPE_NEOX ||
                         p.mode == GGML_ROPE_TYPE_MROPE || p.mode == GGML_ROPE_TYPE_IMROPE || vision;
    const int rotated = vision ? 2 * p.n_dims : p.n_dims;
    int       total   = 0;
    for (int k = 0; k < GGML_MROPE_SECTIONS; ++k) {
        total += p.sections[k];
    }
    return mode_ok && p.n_dims > 0 && p.n_dims % 2 == 0 && p.n_offs >= 0 && p.n_offs % 2 == 0 &&
           p.n_offs + rotated <= a->ne[0] && (!vision || (rotated == a->ne[0] && p.n_offs == 0)) &&
           (!p.multi() || (total > 0 && total <= a->ne[0])) && pos->type == GGML_TYPE_I32 &&
           pos->ne[0] == (p.multi() ? 4 : 1) * a->ne[2] &&
           (!ff || (ff->type == GGML_TYPE_F32 && ff->ne[0] >= p.pairs() && ggml_is_contiguous_rows(ff)));
}

void compute_rope(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * a    = dst->src[0];
    const ggml_tensor * pos  = dst->src[1];
    const ggml_tensor * ff   = dst->src[2];
    const rope_params   p    = params_of(dst);
    const int64_t       ne0  = dst->ne[0];
    const int64_t       half = p.pairs();
    // NORMAL rotates neighbours, the others the two halves of the rotated dims.
    const bool    normal = p.mode == GGML_ROPE_TYPE_NORMAL;
    const int64_t stride = normal ? 1 : half;
    const int64_t step   = normal ? 2 : 1;
    const int64_t first  = p.n_offs, last = p.n_offs + 2 * half;  // the rotated dims

    const float * factors = ff ? static_cast<const float *>(ff->data) : nullptr;
    std::vector<int> which, power;
    pair_positions(p, which, power);

    // One task per token (i2, i3): the angle table is built once and used for every head.
    ctx.parallel_for(a->ne[2] * a->ne[3], rows_per_chunk(ne0 * a->ne[1], 4096), [&](int64_t t0, int64_t t1) {
        std::vector<float> cos_t(static_cast<size_t>(half)), sin_t(static_cast<size_t>(half)), in_buf(ne0), out_buf(ne0);
        for (int64_t t = t0; t < t1; ++t) {
            const int64_t i2 = t % a->ne[2], i3 = t / a->ne[2];
            int32_t       positions[4] = {};
            for (int k = 0; k < (p.multi() ? 4 : 1); ++k) {
                positions[k] = int32_t(load_index(pos, i2 + k * a->ne[2], 0, 0));
            }
            rotation_table(p, positions, which, power, factors, cos_t.data(), sin_t.data());
            for (int64_t i1 = 0; i1 < a->ne[1]; ++i1) {
                const row_index ri  = {i1, i2, i3};
                const float *   x   = row_f32(a, ri, in_buf.data());
                float *         out = out_row_f32(dst, ri, out_buf.data());
                if (out != x) {
                    std::copy(x, x + first, out);
                    std::copy(x + last, x + ne0, out + last);
                }
                for (int64_t i = 0; i < half; ++i) {
                    const int64_t j0 = first + i * step, j1 = j0 + stride;
                    const float   x0 = x[j0], x1 = x[j1];
                    out[j0]          = x0 * cos_t[size_t(i)] - x1 * sin_t[size_t(i)];
                    out[j1]          = x0 * sin_t[size_t(i)] + x1 * cos_t[size_t(i)];
                }
                commit_row(dst, ri, out);
            }
        }
    });
}

} // namespace hexnpu::cpu
