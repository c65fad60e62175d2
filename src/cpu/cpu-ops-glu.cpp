// GLU: out = act(x) * gate, with x and gate from two tensors or from the two halves of each row
// of src0 ([x | gate], or [gate | x] when swapped; with a separate gate tensor GGML ignores
// `swapped`, and so do we).
#include "cpu-activations.h"
#include "cpu-ops.h"
#include "cpu-tensor.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hexnpu::cpu {
namespace {

template <typename F> void glu_rows(const compute_context & ctx, ggml_tensor * dst, F f) {
    const ggml_tensor * a       = dst->src[0];
    const ggml_tensor * b       = dst->src[1];
    const bool          swapped = ggml_get_op_param<int32_t>(dst, 1) != 0;
    const int64_t       nc      = dst->ne[0];
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(nc), [&](int64_t r0, int64_t r1) {
        std::vector<float> a_buf(a->ne[0]), b_buf(nc), out_buf(nc);
        for (int64_t r = r0; r < r1; ++r) {
            const row_index ri  = unravel_row(dst, r);
            const float *   row = row_f32(a, ri, a_buf.data());
            const float *   x   = row;
            const float *   g   = nullptr;
            if (b) {
                g = row_f32(b, ri, b_buf.data());
            } else {
                x = swapped ? row + nc : row;
                g = swapped ? row : row + nc;
            }
            float * out = out_row_f32(dst, ri, out_buf.data());
            for (int64_t i = 0; i < nc; ++i) {
                out[i] = f(x[i], g[i]);
            }
            commit_row(dst, ri, out);
        }
    });
}

} // namespace

bool supports_glu(const ggml_tensor * op) {
    const ggml_tensor * a = op->src[0];
    const ggml_tensor * b = op->src[1];
    const int32_t       sub = ggml_get_op_param<int32_t>(op, 0);
    if (!a || sub < 0 || sub >= GGML_GLU_OP_COUNT || !is_float_type(op->type) || !is_float_type(a->type)) {
        return false;
    }
    for (int d = 1; d < GGML_MAX_DIMS; ++d) {
        if (op->ne[d] != a->ne[d]) {
            return false;
        }
    }
    if (b) {
        return is_float_type(b->type) && ggml_are_same_shape(a, b) && op->ne[0] == a->ne[0];
    }
    return a->ne[0] == 2 * op->ne[0];
}

void compute_glu(const compute_context & ctx, ggml_tensor * dst) {
    switch (ggml_glu_op(ggml_get_op_param<int32_t>(dst, 0))) {
        case GGML_GLU_OP_SWIGLU:
            return glu_rows(ctx, dst, [](float x, float g) { return silu(x) * g; });
        case GGML_GLU_OP_GEGLU:
            return glu_rows(ctx, dst, [](float x, float g) { return gelu_tanh(x) * g; });
        case GGML_GLU_OP_REGLU:
            return glu_rows(ctx, dst, [](float x, float g) { return (x > 0.0f ? x : 0.0f) * g; });
        case GGML_GLU_OP_GEGLU_ERF:
            return glu_rows(ctx, dst, [](float x, float g) { return gelu_erf(x) * g; });
        case GGML_GLU_OP_GEGLU_QUICK:
            return glu_rows(ctx, dst, [](float x, float g) { return gelu_quick(x) * g; });
        case GGML_GLU_OP_SWIGLU_CLAMP: {  // x capped above, gate clamped both ways
            const float limit = ggml_get_op_param<float>(dst, 3);
            return glu_rows(ctx, dst, [=](float x, float g) {
                x = std::min(x, limit);
                return x / (1.0f + std::exp(-x)) * std::clamp(g, -limit, limit);
            });
        }
        default: {  // SWIGLU_OAI (GPT-OSS): x capped above, gate clamped both ways, gate offset by 1
            const float alpha = ggml_get_op_param<float>(dst, 2);
            const float limit = ggml_get_op_param<float>(dst, 3);
            return glu_rows(ctx, dst, [=](float x, float g) {
                x = std::min(x, limit);
                g = std::clamp(g, -limit, limit);
                return x / (1.0f + std::exp(-alpha * x)) * (g + 1.0f);
            });
        }
    }
}

} // namespace hexnpu::cpu
