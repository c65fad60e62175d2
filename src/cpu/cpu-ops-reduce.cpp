// Reductions and orderings: SUM (of every element), SUM_ROWS, MEAN, CUMSUM (accumulated in double,
// rounded once per output), ARGMAX (GGML's scan), ARGSORT and TOP_K (I32 indices; equal values keep index order, NaN sorts as the
// largest value so the order is total and the result deterministic).
#include "cpu-ops.h"
#include "cpu-tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

namespace hexnpu::cpu {
namespace {

// x[i] before x[j] in ascending order; NaN above everything, ties by index.
bool ascending(const float * x, int32_t i, int32_t j) {
    const bool nan_i = std::isnan(x[i]), nan_j = std::isnan(x[j]);
    if (nan_i != nan_j) {
        return nan_j;
    }
    if (!nan_i && x[i] != x[j]) {
        return x[i] < x[j];
    }
    return i < j;
}

bool descending(const float * x, int32_t i, int32_t j) {
    const bool nan_i = std::isnan(x[i]), nan_j = std::isnan(x[j]);
    if (nan_i != nan_j) {
        return nan_i;
    }
    if (!nan_i && x[i] != x[j]) {
        return x[i] > x[j];
    }
    return i < j;
}

void store_indices(ggml_tensor * dst, row_index ri, const int32_t * idx, int64_t n) {
    uint8_t * out = row_ptr(dst, ri);
    for (int64_t i = 0; i < n; ++i) {
        std::memcpy(out + i * int64_t(dst->nb[0]), &idx[i], sizeof(int32_t));
    }
}

// GGML's ARGMAX scan: max = MAX(max, x), idx = i where they are equal. Ties go to the last index; a
// NaN makes max NaN, so the next element restarts the scan (MAX(NaN, x) = x).
int32_t argmax_of(const float * x, int64_t n) {
    float   max = -INFINITY;
    int32_t idx = 0;
    for (int64_t i = 0; i < n; ++i) {
        max = max > x[i] ? max : x[i];
        if (max == x[i]) {
            idx = int32_t(i);
        }
    }
    return idx;
}

void sum_all(ggml_tensor * dst) {
    const ggml_tensor * src = dst->src[0];
    std::vector<float>  buf(size_t(src->ne[0]));
    double              sum = 0.0;
    for (int64_t r = 0; r < ggml_nrows(src); ++r) {
        const float * x = row_f32(src, unravel_row(src, r), buf.data());
        for (int64_t i = 0; i < src->ne[0]; ++i) {
            sum += x[i];
        }
    }
    store_float(dst->type, static_cast<uint8_t *>(dst->data), float(sum));
}

void argmax_rows(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * src = dst->src[0];
    ctx.parallel_for(src->ne[1], rows_per_chunk(src->ne[0]), [&](int64_t r0, int64_t r1) {
        std::vector<float> buf(size_t(src->ne[0]));
        for (int64_t r = r0; r < r1; ++r) {
            const int32_t idx = argmax_of(row_f32(src, {r, 0, 0}, buf.data()), src->ne[0]);
            std::memcpy(static_cast<uint8_t *>(dst->data) + r * int64_t(dst->nb[0]), &idx, sizeof idx);
        }
    });
}

} // namespace

bool supports_reduce(const ggml_tensor * op) {
    const ggml_tensor * src = op->src[0];
    if (!src || !is_float_type(src->type)) {
        return false;
    }
    if (op->op == GGML_OP_SUM) {
        return is_float_type(op->type) && ggml_nelements(op) == 1;
    }
    if (op->op == GGML_OP_ARGMAX) {  // GGML's takes F32 matrices
        return src->type == GGML_TYPE_F32 && op->type == GGML_TYPE_I32 && src->ne[2] == 1 && src->ne[3] == 1 &&
               op->ne[0] == src->ne[1] && ggml_nelements(op) == op->ne[0] && src->ne[0] <= INT32_MAX;
    }
    for (int d = 1; d < GGML_MAX_DIMS; ++d) {
        if (op->ne[d] != src->ne[d]) {
            return false;
        }
    }
    switch (op->op) {
        case GGML_OP_SUM_ROWS:
        case GGML_OP_MEAN:
            return is_float_type(op->type) && op->ne[0] == 1;
        case GGML_OP_CUMSUM:
            return is_float_type(op->type) && op->ne[0] == src->ne[0];
        case GGML_OP_ARGSORT: {
            const int32_t order = ggml_get_op_param<int32_t>(op, 0);
            return op->type == GGML_TYPE_I32 && op->ne[0] == src->ne[0] &&
                   (order == GGML_SORT_ORDER_ASC || order == GGML_SORT_ORDER_DESC) && src->ne[0] <= INT32_MAX;
        }
        default:  // TOP_K: k is the output's row length (GGML's op_params are all zero)
            return op->type == GGML_TYPE_I32 && op->ne[0] >= 1 &&
                   op->ne[0] <= src->ne[0] && src->ne[0] <= INT32_MAX;
    }
}

void compute_reduce(const compute_context & ctx, ggml_tensor * dst) {
    if (dst->op == GGML_OP_SUM) {
        return sum_all(dst);
    }
    if (dst->op == GGML_OP_ARGMAX) {
        return argmax_rows(ctx, dst);
    }
    const ggml_tensor * src = dst->src[0];
    const int64_t       n   = src->ne[0];
    const ggml_op       op  = dst->op;
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(n), [&](int64_t r0, int64_t r1) {
        std::vector<float>   in_buf(n), out_buf(n);
        std::vector<int32_t> idx(op == GGML_OP_ARGSORT || op == GGML_OP_TOP_K ? size_t(n) : 0);
        for (int64_t r = r0; r < r1; ++r) {
            const row_index ri = unravel_row(dst, r);
            const float *   x  = row_f32(src, ri, in_buf.data());
            switch (op) {
                case GGML_OP_SUM_ROWS:
                case GGML_OP_MEAN: {
                    double sum = 0.0;
                    for (int64_t i = 0; i < n; ++i) {
                        sum += x[i];
                    }
                    store_float(dst->type, row_ptr(dst, ri), float(op == GGML_OP_MEAN ? sum / double(n) : sum));
                    break;
                }
                case GGML_OP_CUMSUM: {
                    float * out = out_row_f32(dst, ri, out_buf.data());
                    double  sum = 0.0;
                    for (int64_t i = 0; i < n; ++i) {
                        sum += x[i];
                        out[i] = float(sum);
                    }
                    commit_row(dst, ri, out);
                    break;
                }
                case GGML_OP_ARGSORT: {
                    std::iota(idx.begin(), idx.end(), 0);
                    if (ggml_get_op_param<int32_t>(dst, 0) == GGML_SORT_ORDER_ASC) {
                        std::sort(idx.begin(), idx.end(), [x](int32_t i, int32_t j) { return ascending(x, i, j); });
                    } else {
                        std::sort(idx.begin(), idx.end(), [x](int32_t i, int32_t j) { return descending(x, i, j); });
                    }
                    store_indices(dst, ri, idx.data(), n);
                    break;
                }
                default: {  // TOP_K: the k largest, largest first
                    const int64_t k = dst->ne[0];
                    std::iota(idx.begin(), idx.end(), 0);
                    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                                      [x](int32_t i, int32_t j) { return descending(x, i, j); });
                    store_indices(dst, ri, idx.data(), k);
                    break;
                }
            }
        }
    });
}

} // namespace hexnpu::cpu
