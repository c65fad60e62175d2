// ADD, SUB, MUL, DIV (src1 broadcast over src0 by repetition in every dimension) and ADD_ID
// (a bias row per (i1, i2) chosen by an expert id). Computed in f32, rounded once to dst's type.
#include "cpu-ops.h"
#include "cpu-tensor.h"

#include "hexnpu/backend.h"

#include <string>
#include <vector>

namespace hexnpu::cpu {
namespace {

template <typename Op> void binary_broadcast(const compute_context & ctx, ggml_tensor * dst, Op op) {
    const ggml_tensor * a   = dst->src[0];
    const ggml_tensor * b   = dst->src[1];
    const int64_t       ne0 = dst->ne[0];
    const int64_t       nb0 = b->ne[0];  // src1's row repeats ne0 / nb0 times
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(ne0), [&](int64_t r0, int64_t r1) {
        std::vector<float> a_buf(ne0), b_buf(nb0), out_buf(ne0);
        for (int64_t r = r0; r < r1; ++r) {
            const row_index ri = unravel_row(dst, r);
            const row_index bi = {ri.i1 % b->ne[1], ri.i2 % b->ne[2], ri.i3 % b->ne[3]};
            const float *   x  = row_f32(a, ri, a_buf.data());
            const float *   y  = row_f32(b, bi, b_buf.data());
            float *         out = out_row_f32(dst, ri, out_buf.data());
            for (int64_t base = 0; base < ne0; base += nb0) {
                for (int64_t i = 0; i < nb0; ++i) {
                    out[base + i] = op(x[base + i], y[i]);
                }
            }
            commit_row(dst, ri, out);
        }
    });
}

void add_id(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * a   = dst->src[0];
    const ggml_tensor * b   = dst->src[1];
    const ggml_tensor * ids = dst->src[2];
    for (int64_t i2 = 0; i2 < a->ne[2]; ++i2) {
        for (int64_t i1 = 0; i1 < a->ne[1]; ++i1) {
            const int64_t id = load_index(ids, i1, i2, 0);
            if (id < 0 || id >= b->ne[1]) {
                throw backend_error("ADD_ID: expert id " + std::to_string(id) + " outside [0, " +
                                    std::to_string(b->ne[1]) + ")");
            }
        }
    }
    const int64_t ne0 = dst->ne[0];
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(ne0), [&](int64_t r0, int64_t r1) {
        std::vector<float> a_buf(ne0), b_buf(ne0), out_buf(ne0);
        for (int64_t r = r0; r < r1; ++r) {
            const row_index ri  = unravel_row(dst, r);
            const int64_t   id  = load_index(ids, ri.i1, ri.i2, 0);
            const float *   x   = row_f32(a, ri, a_buf.data());
            const float *   y   = row_f32(b, {id, 0, 0}, b_buf.data());
            float *         out = out_row_f32(dst, ri, out_buf.data());
            for (int64_t i = 0; i < ne0; ++i) {
                out[i] = x[i] + y[i];
            }
            commit_row(dst, ri, out);
        }
    });
}

} // namespace

bool supports_binary(const ggml_tensor * op) {
    const ggml_tensor * a = op->src[0];
    const ggml_tensor * b = op->src[1];
    if (!a || !b || !is_float_type(op->type) || !is_float_type(a->type) || !is_float_type(b->type) ||
        !ggml_are_same_shape(op, a)) {
        return false;
    }
    if (op->op == GGML_OP_ADD_ID) {
        const ggml_tensor * ids = op->src[2];
        return ids && ids->type == GGML_TYPE_I32 && b->ne[0] == a->ne[0] && ids->ne[0] == a->ne[1] &&
               ids->ne[1] == a->ne[2];
    }
    return ggml_can_repeat(b, a);
}

void compute_binary(const compute_context & ctx, ggml_tensor * dst) {
    switch (dst->op) {
        case GGML_OP_ADD:
            return binary_broadcast(ctx, dst, [](float x, float y) { return x + y; });
        case GGML_OP_SUB:
            return binary_broadcast(ctx, dst, [](float x, float y) { return x - y; });
        case GGML_OP_MUL:
            return binary_broadcast(ctx, dst, [](float x, float y) { return x * y; });
        case GGML_OP_DIV:
            return binary_broadcast(ctx, dst, [](float x, float y) { return x / y; });
        default:
            return add_id(ctx, dst);
    }
}

} // namespace hexnpu::cpu
