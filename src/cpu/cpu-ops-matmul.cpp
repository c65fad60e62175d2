// MUL_MAT and MUL_MAT_ID: dst[i, j] = dot(src0 row i, src1 row j) in f32, src0 of any type with a
// float path (quantized weights are dequantized block of rows by block of rows, once per task) and
// F32/F16/BF16 activations (converted once per op unless already dense f32). Where at most
// kMaxDirectRows activation rows share a weight block (token generation), each weight row is dotted
// straight from its stored form instead (the type's dot_row, core/dot-f32.h): decoding it again
// per activation row costs less than storing and reloading a dequantized block.
//
// MUL_MAT broadcasts src0 over dims 2/3: src1 batch (i12, i13) uses src0 matrix
// (i12 / (ne12/ne02), i13 / (ne13/ne03)). MUL_MAT_ID picks, for output slot e of token t, expert
// ids[e, t] and activation row b[:, e % b.ne1, t].
//
// Every output is one dot_f32 over the full row (dot_row keeps its order), so results do not depend
// on the thread count, on how rows are grouped into tasks or on the path; a quantized weight gives
// exactly what its dequantized F32 copy gives.
#include "cpu-ops.h"
#include "cpu-tensor.h"
#include "cpu-vec.h"

#include "hexnpu/backend.h"

#include <algorithm>
#include <string>
#include <vector>

namespace hexnpu::cpu {
namespace {

constexpr int64_t kMaxBlockRows  = 16;
constexpr int64_t kMaxDirectRows = 1;  // bench-ops -b CPU: direct wins 1.7x at n = 1, loses for K-quants at n = 2

// src1 seen as dense f32 rows: src1's own memory or a converted copy.
struct activation_rows {
    const uint8_t * data;
    int64_t         nb1, nb2, nb3;

    const float * row(int64_t i1, int64_t i2, int64_t i3) const {
        return reinterpret_cast<const float *>(data + i1 * nb1 + i2 * nb2 + i3 * nb3);
    }
};

activation_rows activations_f32(const compute_context & ctx, const ggml_tensor * b, std::vector<float> & storage) {
    if (has_dense_f32_rows(b)) {
        return {static_cast<const uint8_t *>(b->data), int64_t(b->nb[1]), int64_t(b->nb[2]), int64_t(b->nb[3])};
    }
    const int64_t k = b->ne[0];
    storage.resize(size_t(ggml_nelements(b)));
    ctx.parallel_for(ggml_nrows(b), rows_per_chunk(k), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            load_row(b, unravel_row(b, r), storage.data() + r * k);
        }
    });
    const int64_t row = k * int64_t(sizeof(float));
    return {reinterpret_cast<const uint8_t *>(storage.data()), row, row * b->ne[1], row * b->ne[1] * b->ne[2]};
}

// Rows per task: enough tasks to keep every thread busy, at most kMaxBlockRows rows and ~256 KiB of
// dequantized weights (the block stays in L2 while every activation row streams past it).
int64_t block_rows(int64_t k, int64_t n_rows, int64_t n_matrices, int n_threads) {
    const int64_t by_cache   = std::max<int64_t>(1, 65536 / std::max<int64_t>(k, 1));
    const int64_t want_tasks = 4 * int64_t(n_threads);
    const int64_t by_threads = std::max<int64_t>(1, (n_rows * n_matrices + want_tasks - 1) / want_tasks);
    return std::clamp<int64_t>(std::min(by_cache, by_threads), 1, kMaxBlockRows);
}

// Weight rows [first, first + n) of one matrix, ready for dots with activation rows: as stored
// (direct) or as f32 rows (in place or dequantized into a per-task buffer).
class weight_block {
  public:
    explicit weight_block(const ggml_tensor * w) : w_(w) {}

    // Rows [first, first + n) of matrix (i2, i3), to be dotted with act_rows activation rows.
    void load(int64_t first, int64_t n, int64_t i2, int64_t i3, int64_t act_rows) {
        direct_ = act_rows <= kMaxDirectRows && w_->nb[0] == ggml_type_size(w_->type) ?
                      ggml_get_type_traits(w_->type)->dot_row :
                      nullptr;
        if (!direct_) {
            buf_.resize(size_t(kMaxBlockRows * w_->ne[0]));
        }
        for (int64_t r = 0; r < n; ++r) {
            if (direct_) {
                raw_[r] = row_ptr(w_, first + r, i2, i3);
            } else {
                f32_[r] = row_f32(w_, {first + r, i2, i3}, buf_.data() + r * w_->ne[0]);
            }
        }
    }
    float dot(int64_t r, const float * y) const {
        return direct_ ? direct_(raw_[r], y, w_->ne[0]) : dot_f32(f32_[r], y, w_->ne[0]);
    }

  private:
    const ggml_tensor * w_;
    ggml_dot_row_fn     direct_ = nullptr;
    std::vector<float>  buf_;
    const void *        raw_[kMaxBlockRows] = {};
    const float *       f32_[kMaxBlockRows] = {};
};

float * dst_row(const ggml_tensor * dst, int64_t i1, int64_t i2, int64_t i3) {
    return reinterpret_cast<float *>(row_ptr(dst, i1, i2, i3));
}

void mul_mat(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * w = dst->src[0];
    const ggml_tensor * b = dst->src[1];
    std::vector<float>  converted;
    const activation_rows act = activations_f32(ctx, b, converted);

    const int64_t k = w->ne[0], n_rows = w->ne[1];
    const int64_t r2 = b->ne[2] / w->ne[2], r3 = b->ne[3] / w->ne[3];
    const int64_t n_matrices = w->ne[2] * w->ne[3];
    const int64_t rows       = block_rows(k, n_rows, n_matrices, ctx.pool.size());
    const int64_t n_blocks   = (n_rows + rows - 1) / rows;
    const int64_t stride0    = int64_t(dst->nb[0]) / int64_t(sizeof(float));

    ctx.parallel_for(n_matrices * n_blocks, 1, [&](int64_t t0, int64_t t1) {
        weight_block block(w);
        for (int64_t t = t0; t < t1; ++t) {
            const int64_t matrix = t / n_blocks;
            const int64_t i02 = matrix % w->ne[2], i03 = matrix / w->ne[2];
            const int64_t first = (t % n_blocks) * rows;
            const int64_t n     = std::min(rows, n_rows - first);
            block.load(first, n, i02, i03, b->ne[1] * r2 * r3);
            for (int64_t i13 = i03 * r3; i13 < (i03 + 1) * r3; ++i13) {
                for (int64_t i12 = i02 * r2; i12 < (i02 + 1) * r2; ++i12) {
                    for (int64_t j = 0; j < b->ne[1]; ++j) {
                        const float * y   = act.row(j, i12, i13);
                        float *       out = dst_row(dst, j, i12, i13);
                        for (int64_t r = 0; r < n; ++r) {
                            out[(first + r) * stride0] = block.dot(r, y);
                        }
                    }
                }
            }
        }
    });
}

void mul_mat_id(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * as  = dst->src[0];
    const ggml_tensor * b   = dst->src[1];
    const ggml_tensor * ids = dst->src[2];
    const int64_t       n_experts = as->ne[2];

    // (slot, token) pairs per expert, so each expert's weights are dequantized once.
    struct slot {
        int64_t e, t;
    };
    std::vector<std::vector<slot>> by_expert(n_experts);
    for (int64_t t = 0; t < ids->ne[1]; ++t) {
        for (int64_t e = 0; e < ids->ne[0]; ++e) {
            const int64_t x = load_index(ids, e, t, 0);
            if (x < 0 || x >= n_experts) {
                throw backend_error("MUL_MAT_ID: expert id " + std::to_string(x) + " outside [0, " +
                                    std::to_string(n_experts) + ")");
            }
            by_expert[size_t(x)].push_back({e, t});
        }
    }
    std::vector<int64_t> used;
    for (int64_t x = 0; x < n_experts; ++x) {
        if (!by_expert[size_t(x)].empty()) {
            used.push_back(x);
        }
    }

    std::vector<float>    converted;
    const activation_rows act = activations_f32(ctx, b, converted);

    const int64_t k = as->ne[0], n_rows = as->ne[1];
    const int64_t rows     = block_rows(k, n_rows, int64_t(used.size()), ctx.pool.size());
    const int64_t n_blocks = (n_rows + rows - 1) / rows;
    const int64_t stride0  = int64_t(dst->nb[0]) / int64_t(sizeof(float));

    ctx.parallel_for(int64_t(used.size()) * n_blocks, 1, [&](int64_t t0, int64_t t1) {
        weight_block block(as);
        for (int64_t task = t0; task < t1; ++task) {
            const int64_t expert = used[size_t(task / n_blocks)];
            const int64_t first  = (task % n_blocks) * rows;
            const int64_t n      = std::min(rows, n_rows - first);
            block.load(first, n, expert, 0, int64_t(by_expert[size_t(expert)].size()));
            for (const slot & s : by_expert[size_t(expert)]) {
                const float * y   = act.row(s.e % b->ne[1], s.t, 0);
                float *       out = dst_row(dst, s.e, s.t, 0);
                for (int64_t r = 0; r < n; ++r) {
                    out[(first + r) * stride0] = block.dot(r, y);
                }
            }
        }
    });
}

} // namespace

bool supports_matmul(const ggml_tensor * op) {
    const ggml_tensor * w = op->src[0];
    const ggml_tensor * b = op->src[1];
    if (!w || !b || op->type != GGML_TYPE_F32 || op->nb[0] % sizeof(float) != 0 || !can_load_rows(w) ||
        !is_float_type(b->type) || w->ne[0] != b->ne[0]) {
        return false;
    }
    if (op->op == GGML_OP_MUL_MAT) {
        return w->ne[2] > 0 && w->ne[3] > 0 && b->ne[2] % w->ne[2] == 0 && b->ne[3] % w->ne[3] == 0 &&
               op->ne[0] == w->ne[1] && op->ne[1] == b->ne[1] && op->ne[2] == b->ne[2] && op->ne[3] == b->ne[3];
    }
    const ggml_tensor * ids = op->src[2];
    return ids && ids->type == GGML_TYPE_I32 && w->ne[3] == 1 && b->ne[3] == 1 && ids->ne[2] == 1 &&
           ids->ne[3] == 1 && ids->ne[1] == b->ne[2] && b->ne[1] > 0 && ids->ne[0] % b->ne[1] == 0 &&
           op->ne[0] == w->ne[1] && op->ne[1] == ids->ne[0] && op->ne[2] == b->ne[2] && op->ne[3] == 1;
}

void compute_matmul(const compute_context & ctx, ggml_tensor * dst) {
    if (dst->op == GGML_OP_MUL_MAT) {
        mul_mat(ctx, dst);
    } else {
        mul_mat_id(ctx, dst);
    }
}

} // namespace hexnpu::cpu
