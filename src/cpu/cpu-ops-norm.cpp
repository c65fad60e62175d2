// Row normalizations with GGML's definitions; the statistics are accumulated in double.
//   NORM:     (x - mean) / sqrt(var + eps)
//   RMS_NORM: x / sqrt(mean(x^2) + eps)
//   L2_NORM:  x / max(|x|_2, eps)
#include "cpu-ops.h"
#include "cpu-tensor.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hexnpu::cpu {
namespace {

// y = (x - shift) * factor, chosen per row from x.
struct affine {
    double shift;
    double factor;
};

affine row_affine(ggml_op op, const float * x, int64_t n, float eps) {
    double sum = 0.0, sum_sq = 0.0;
    switch (op) {
        case GGML_OP_NORM: {
            for (int64_t i = 0; i < n; ++i) {
                sum += x[i];
            }
            const double mean = sum / double(n);
            for (int64_t i = 0; i < n; ++i) {
                const double d = x[i] - mean;
                sum_sq += d * d;
            }
            return {mean, 1.0 / std::sqrt(sum_sq / double(n) + eps)};
        }
        case GGML_OP_RMS_NORM:
            for (int64_t i = 0; i < n; ++i) {
                sum_sq += double(x[i]) * x[i];
            }
            return {0.0, 1.0 / std::sqrt(sum_sq / double(n) + eps)};
        default:  // L2_NORM
            for (int64_t i = 0; i < n; ++i) {
                sum_sq += double(x[i]) * x[i];
            }
            return {0.0, 1.0 / std::max(std::sqrt(sum_sq), double(eps))};
    }
}

} // namespace

bool supports_norm(const ggml_tensor * op) {
    const ggml_tensor * src = op->src[0];
    return src && is_float_type(op->type) && is_float_type(src->type) && ggml_are_same_shape(op, src);
}

void compute_norm(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * src = dst->src[0];
    const float         eps = ggml_get_op_param<float>(dst, 0);
    const int64_t       ne0 = dst->ne[0];
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(ne0), [&](int64_t r0, int64_t r1) {
        std::vector<float> in_buf(ne0), out_buf(ne0);
        for (int64_t r = r0; r < r1; ++r) {
            const row_index ri  = unravel_row(dst, r);
            const float *   x   = row_f32(src, ri, in_buf.data());
            const affine    a   = row_affine(dst->op, x, ne0, eps);
            float *         out = out_row_f32(dst, ri, out_buf.data());
            for (int64_t i = 0; i < ne0; ++i) {
                out[i] = float((x[i] - a.shift) * a.factor);
            }
            commit_row(dst, ri, out);
        }
    });
}

} // namespace hexnpu::cpu
