// Triangular matrices (GGML's, all F32; a matrix is dims 0 and 1, column i0 of row i1):
//   TRI:       keeps the triangle op_params[0] names (ggml_tri_type), the rest +0.0f
//   DIAG:      [n, 1, ne2, ne3] -> [n, n, ne2, ne3]: the row on the diagonal, zeros elsewhere
//   SOLVE_TRI: X with A X = B, A [n, n, ...] lower triangular, B and X [k, n, ...]: forward
//              substitution per right-hand side column, x_r = (b_r - sum_{t<r} a_rt x_t) / a_rr with
//              the sum in f32 in ascending t (A's strict upper part is never read)
// Every operand is read and written through its byte strides; elements within a row are adjacent.
#include "cpu-ops.h"
#include "cpu-tensor.h"

#include <algorithm>
#include <cstring>

namespace hexnpu::cpu {
namespace {

// The columns [begin, end) of row i1 that TRI keeps.
struct column_range {
    int64_t begin, end;
};

column_range kept_columns(ggml_tri_type type, int64_t i1, int64_t n) {
    switch (type) {
        case GGML_TRI_TYPE_UPPER_DIAG: return {i1, n};
        case GGML_TRI_TYPE_UPPER: return {i1 + 1, n};
        case GGML_TRI_TYPE_LOWER_DIAG: return {0, i1 + 1};
        default: return {0, i1};  // LOWER
    }
}

float element(const ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return reinterpret_cast<const float *>(row_ptr(t, i1, i2, i3))[i0];
}

void compute_tri(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * src  = dst->src[0];
    const auto          type = ggml_tri_type(ggml_get_op_param<int32_t>(dst, 0));
    const int64_t       n    = dst->ne[0];
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(n), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const row_index    ri   = unravel_row(dst, r);
            const column_range keep = kept_columns(type, ri.i1, n);
            const float *      in   = reinterpret_cast<const float *>(row_ptr(src, ri));
            float *            out  = reinterpret_cast<float *>(row_ptr(dst, ri));
            std::memmove(out + keep.begin, in + keep.begin, size_t(keep.end - keep.begin) * sizeof(float));
            std::fill(out, out + keep.begin, 0.0f);
            std::fill(out + keep.end, out + n, 0.0f);
        }
    });
}

void compute_diag(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * src = dst->src[0];
    const int64_t       n   = dst->ne[0];
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(n), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const row_index ri  = unravel_row(dst, r);
            float *         out = reinterpret_cast<float *>(row_ptr(dst, ri));
            std::fill(out, out + n, 0.0f);
            out[ri.i1] = element(src, ri.i1, 0, ri.i2, ri.i3);
        }
    });
}

// One unit of work is one right-hand side column of one matrix of the batch.
void compute_solve_tri(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * a = dst->src[0];
    const ggml_tensor * b = dst->src[1];
    const int64_t       n = a->ne[0], k = b->ne[0], n2 = b->ne[2];
    ctx.parallel_for(k * n2 * b->ne[3], rows_per_chunk(n * (n + 1) / 2), [&](int64_t u0, int64_t u1) {
        for (int64_t u = u0; u < u1; ++u) {
            const int64_t col = u % k, i2 = u / k % n2, i3 = u / k / n2;
            for (int64_t r = 0; r < n; ++r) {
                const float * a_row = reinterpret_cast<const float *>(row_ptr(a, r, i2, i3));
                float         sum   = 0.0f;
                for (int64_t t = 0; t < r; ++t) {
                    sum += a_row[t] * element(dst, col, t, i2, i3);
                }
                reinterpret_cast<float *>(row_ptr(dst, r, i2, i3))[col] = (element(b, col, r, i2, i3) - sum) / a_row[r];
            }
        }
    });
}

} // namespace

bool supports_triangular(const ggml_tensor * op) {
    const ggml_tensor * a = op->src[0];
    switch (op->op) {
        case GGML_OP_TRI: {
            const int32_t type = ggml_get_op_param<int32_t>(op, 0);
            return all_dense_f32_rows({op, a}) && ggml_are_same_shape(op, a) && op->ne[0] == op->ne[1] &&
                   type >= GGML_TRI_TYPE_UPPER_DIAG && type <= GGML_TRI_TYPE_LOWER;
        }
        case GGML_OP_DIAG:
            return all_dense_f32_rows({op, a}) && a->ne[1] == 1 && op->ne[0] == a->ne[0] && op->ne[1] == a->ne[0] &&
                   op->ne[2] == a->ne[2] && op->ne[3] == a->ne[3];
        case GGML_OP_SOLVE_TRI: {
            const ggml_tensor * b = op->src[1];
            return all_dense_f32_rows({op, a, b}) && ggml_are_same_shape(op, b) && a->ne[0] == a->ne[1] &&
                   a->ne[1] == b->ne[1] && a->ne[2] == b->ne[2] && a->ne[3] == b->ne[3];
        }
        default:
            return false;
    }
}

void compute_triangular(const compute_context & ctx, ggml_tensor * dst) {
    switch (dst->op) {
        case GGML_OP_TRI: return compute_tri(ctx, dst);
        case GGML_OP_DIAG: return compute_diag(ctx, dst);
        default: return compute_solve_tri(ctx, dst);
    }
}

} // namespace hexnpu::cpu
