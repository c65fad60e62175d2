// Element-wise maps: UNARY (GGML's activation list), SQR, SQRT, LOG, SIN, COS, SCALE, CLAMP,
// LEAKY_RELU and FILL. Each value is computed in f32 from the f32 value of the input and rounded once to dst's type.
#include "cpu-activations.h"
#include "cpu-ops.h"
#include "cpu-tensor.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hexnpu::cpu {
namespace {

template <typename F> void map_rows(const compute_context & ctx, ggml_tensor * dst, F f) {
    const ggml_tensor * src = dst->src[0];
    const int64_t       ne0 = dst->ne[0];
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(ne0), [&](int64_t r0, int64_t r1) {
        std::vector<float> in_buf(ne0), out_buf(ne0);
        for (int64_t r = r0; r < r1; ++r) {
            const row_index ri  = unravel_row(dst, r);
            const float *   x   = row_f32(src, ri, in_buf.data());
            float *         out = out_row_f32(dst, ri, out_buf.data());
            for (int64_t i = 0; i < ne0; ++i) {
                out[i] = f(x[i]);
            }
            commit_row(dst, ri, out);
        }
    });
}

void fill(const compute_context & ctx, ggml_tensor * dst, float value) {
    const int64_t ne0 = dst->ne[0];
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(ne0), [&](int64_t r0, int64_t r1) {
        std::vector<float> row(ne0, value);
        for (int64_t r = r0; r < r1; ++r) {
            store_row(dst, unravel_row(dst, r), row.data());
        }
    });
}

void activation(const compute_context & ctx, ggml_tensor * dst, ggml_unary_op op) {
    switch (op) {
        case GGML_UNARY_OP_ABS:
            return map_rows(ctx, dst, [](float x) { return std::fabs(x); });
        case GGML_UNARY_OP_NEG:
            return map_rows(ctx, dst, [](float x) { return -x; });
        case GGML_UNARY_OP_TANH:
            return map_rows(ctx, dst, [](float x) { return std::tanh(x); });
        case GGML_UNARY_OP_RELU:
            return map_rows(ctx, dst, [](float x) { return x > 0.0f ? x : 0.0f; });
        case GGML_UNARY_OP_SIGMOID:
            return map_rows(ctx, dst, [](float x) { return sigmoid(x); });
        case GGML_UNARY_OP_GELU:
            return map_rows(ctx, dst, [](float x) { return gelu_tanh(x); });
        case GGML_UNARY_OP_GELU_QUICK:
            return map_rows(ctx, dst, [](float x) { return gelu_quick(x); });
        case GGML_UNARY_OP_SILU:
            return map_rows(ctx, dst, [](float x) { return silu(x); });
        case GGML_UNARY_OP_EXP:
            return map_rows(ctx, dst, [](float x) { return std::exp(x); });
        case GGML_UNARY_OP_GELU_ERF:
            return map_rows(ctx, dst, [](float x) { return gelu_erf(x); });
        case GGML_UNARY_OP_STEP:  // NaN and -0 give 0
            return map_rows(ctx, dst, [](float x) { return x > 0.0f ? 1.0f : 0.0f; });
        default:  // SOFTPLUS
            return map_rows(ctx, dst, [](float x) { return softplus(x); });
    }
}

} // namespace

bool supports_unary(const ggml_tensor * op) {
    if (!is_float_type(op->type)) {
        return false;
    }
    if (op->op == GGML_OP_FILL) {
        return true;
    }
    const ggml_tensor * src = op->src[0];
    if (!src || !is_float_type(src->type) || !ggml_are_same_shape(op, src)) {
        return false;
    }
    if (op->op == GGML_OP_LEAKY_RELU) {  // GGML's takes F32 and F16
        return op->type == src->type && (op->type == GGML_TYPE_F32 || op->type == GGML_TYPE_F16);
    }
    if (op->op == GGML_OP_UNARY) {
        const int32_t sub = ggml_get_op_param<int32_t>(op, 0);
        return sub >= 0 && sub < GGML_UNARY_OP_COUNT;
    }
    return true;
}

void compute_unary(const compute_context & ctx, ggml_tensor * dst) {
    switch (dst->op) {
        case GGML_OP_UNARY:
            return activation(ctx, dst, ggml_unary_op(ggml_get_op_param<int32_t>(dst, 0)));
        case GGML_OP_SQR:
            return map_rows(ctx, dst, [](float x) { return x * x; });
        case GGML_OP_SQRT:
            return map_rows(ctx, dst, [](float x) { return std::sqrt(x); });
        case GGML_OP_LOG:
            return map_rows(ctx, dst, [](float x) { return std::log(x); });
        case GGML_OP_SIN:
            return map_rows(ctx, dst, [](float x) { return std::sin(x); });
        case GGML_OP_COS:
            return map_rows(ctx, dst, [](float x) { return std::cos(x); });
        case GGML_OP_SCALE: {
            const float s = ggml_get_op_param<float>(dst, 0);
            const float b = ggml_get_op_param<float>(dst, 1);
            // Without a bias GGML only multiplies: x*s keeps the sign of a zero product, x*s + 0 does not.
            if (b == 0.0f) {
                return map_rows(ctx, dst, [=](float x) { return x * s; });
            }
            return map_rows(ctx, dst, [=](float x) { return x * s + b; });
        }
        case GGML_OP_CLAMP: {
            const float lo = ggml_get_op_param<float>(dst, 0);
            const float hi = ggml_get_op_param<float>(dst, 1);
            return map_rows(ctx, dst, [=](float x) { return std::min(std::max(x, lo), hi); });
        }
        case GGML_OP_LEAKY_RELU: {
            // GGML's sum of both sides: NaN gives 0 (neither comparison holds), -0 gives +0.
            const float slope = ggml_get_op_param<float>(dst, 0);
            return map_rows(ctx, dst, [=](float x) { return (x > 0.0f ? x : 0.0f) + slope * (x < 0.0f ? x : 0.0f); });
        }
        default:  // FILL
            return fill(ctx, dst, ggml_get_op_param<float>(dst, 0));
    }
}

} // namespace hexnpu::cpu
