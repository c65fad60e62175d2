// SOFT_MAX with GGML's extensions: w = x*scale + slope*mask (mask F16/F32 broadcast over dims 2/3,
// slope from ALiBi's max_bias, 1 without it), then softmax over each row. Attention sinks (src2,
// one logit per head = ne[2]) join the maximum and the denominator but produce no output.
#include "cpu-alibi.h"
#include "cpu-ops.h"
#include "cpu-tensor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace hexnpu::cpu {

bool supports_softmax(const ggml_tensor * op) {
    const ggml_tensor * a     = op->src[0];
    const ggml_tensor * mask  = op->src[1];
    const ggml_tensor * sinks = op->src[2];
    if (!a || !is_float_type(a->type) || !is_float_type(op->type) || !ggml_are_same_shape(op, a)) {
        return false;
    }
    if (mask && !((mask->type == GGML_TYPE_F16 || mask->type == GGML_TYPE_F32) && mask->ne[0] == a->ne[0] &&
                  mask->ne[1] >= a->ne[1] && a->ne[2] % mask->ne[2] == 0 && a->ne[3] % mask->ne[3] == 0)) {
        return false;
    }
    if (!mask && ggml_get_op_param<float>(op, 1) > 0.0f) {
        return false;  // ALiBi biases the mask: nothing to bias
    }
    return !sinks || (sinks->type == GGML_TYPE_F32 && sinks->ne[0] == a->ne[2]);
}

void compute_softmax(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * a        = dst->src[0];
    const ggml_tensor * mask     = dst->src[1];
    const ggml_tensor * sinks    = dst->src[2];
    const float         scale    = ggml_get_op_param<float>(dst, 0);
    const float         max_bias = ggml_get_op_param<float>(dst, 1);
    const int64_t       ne0      = dst->ne[0];
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(ne0, 4096), [&](int64_t r0, int64_t r1) {
        std::vector<float> in_buf(ne0), mask_buf(ne0), out_buf(ne0);
        for (int64_t r = r0; r < r1; ++r) {
            const row_index ri  = unravel_row(dst, r);
            const float *   x   = row_f32(a, ri, in_buf.data());
            float *         w   = out_row_f32(dst, ri, out_buf.data());  // logits first, then probabilities
            const float     slope = alibi_slope(max_bias, a->ne[2], ri.i2);
            if (mask) {
                const row_index mi = {ri.i1, ri.i2 % mask->ne[2], ri.i3 % mask->ne[3]};
                const float *   m  = row_f32(mask, mi, mask_buf.data());
                for (int64_t i = 0; i < ne0; ++i) {
                    w[i] = x[i] * scale + slope * m[i];
                }
            } else {
                for (int64_t i = 0; i < ne0; ++i) {
                    w[i] = x[i] * scale;
                }
            }

            float max = -std::numeric_limits<float>::infinity();
            for (int64_t i = 0; i < ne0; ++i) {
                max = std::max(max, w[i]);
            }
            float sink = 0.0f;
            if (sinks) {
                sink = load_float(GGML_TYPE_F32, static_cast<const uint8_t *>(sinks->data) + ri.i2 * sinks->nb[0]);
                max  = std::max(max, sink);
            }
            double sum = 0.0;
            for (int64_t i = 0; i < ne0; ++i) {
                w[i] = std::exp(w[i] - max);
                sum += w[i];
            }
            if (sinks) {
                sum += std::exp(sink - max);
            }
            const float inv = float(1.0 / sum);
            for (int64_t i = 0; i < ne0; ++i) {
                w[i] *= inv;
            }
            commit_row(dst, ri, w);
        }
    });
}

} // namespace hexnpu::cpu
