// The op kernels of the CPU backend, one family per cpu-ops-*.cpp file. Each family has a
// supports_* predicate (static tensor properties only, exact: true means the kernel computes the
// node correctly) and a compute_* kernel that writes the node's data.
#pragma once

#include "thread-pool.h"

#include "hexnpu/tensor.h"

#include <algorithm>
#include <cstdint>

namespace hexnpu::cpu {

// What a kernel gets besides the node: the threads to spread its work over.
struct compute_context {
    thread_pool & pool;

    // Splits [0, n) into at most pool.size() contiguous chunks of at least min_chunk items and
    // calls fn(begin, end) once per chunk. Kernels compute every output element inside a single
    // chunk with an order that does not depend on the chunk bounds, so results are identical for
    // any thread count.
    template <typename Fn> void parallel_for(int64_t n, int64_t min_chunk, Fn && fn) const {
        if (n <= 0) {
            return;
        }
        min_chunk             = std::max<int64_t>(min_chunk, 1);
        const int64_t n_tasks = std::clamp<int64_t>((n + min_chunk - 1) / min_chunk, 1, pool.size());
        const int64_t chunk   = (n + n_tasks - 1) / n_tasks;
        pool.run(int(n_tasks), [&](int task) {
            const int64_t begin = task * chunk;
            const int64_t end   = std::min(n, begin + chunk);
            if (begin < end) {
                fn(begin, end);
            }
        });
    }
};

// Rows per parallel chunk so that each chunk has at least min_elements values: a fork-join costs
// a few microseconds, worth paying only for that much work.
inline int64_t rows_per_chunk(int64_t row_len, int64_t min_elements = 16384) {
    return std::max<int64_t>(1, min_elements / std::max<int64_t>(row_len, 1));
}

// ADD, SUB, MUL, DIV, ADD_ID (cpu-ops-binary.cpp)
bool supports_binary(const ggml_tensor * op);
void compute_binary(const compute_context & ctx, ggml_tensor * dst);

// UNARY, SQR, SQRT, LOG, SIN, COS, SCALE, CLAMP, LEAKY_RELU, FILL (cpu-ops-unary.cpp)
bool supports_unary(const ggml_tensor * op);
void compute_unary(const compute_context & ctx, ggml_tensor * dst);

// GLU (cpu-ops-glu.cpp)
bool supports_glu(const ggml_tensor * op);
void compute_glu(const compute_context & ctx, ggml_tensor * dst);

// NORM, RMS_NORM, L2_NORM (cpu-ops-norm.cpp)
bool supports_norm(const ggml_tensor * op);
void compute_norm(const compute_context & ctx, ggml_tensor * dst);

// SUM, ARGMAX, SUM_ROWS, MEAN, CUMSUM, ARGSORT, TOP_K (cpu-ops-reduce.cpp)
bool supports_reduce(const ggml_tensor * op);
void compute_reduce(const compute_context & ctx, ggml_tensor * dst);

// CPY, CONT, DUP, CONCAT, REPEAT, PAD, ROLL (cpu-ops-layout.cpp)
bool supports_layout(const ggml_tensor * op);
void compute_layout(const compute_context & ctx, ggml_tensor * dst);

// GET_ROWS, SET_ROWS (cpu-ops-rows.cpp)
bool supports_rows(const ggml_tensor * op);
void compute_rows(const compute_context & ctx, ggml_tensor * dst);

// MUL_MAT, MUL_MAT_ID (cpu-ops-matmul.cpp)
bool supports_matmul(const ggml_tensor * op);
void compute_matmul(const compute_context & ctx, ggml_tensor * dst);

// IM2COL (cpu-ops-im2col.cpp)
bool supports_im2col(const ggml_tensor * op);
void compute_im2col(const compute_context & ctx, ggml_tensor * dst);

// SOFT_MAX (cpu-ops-softmax.cpp)
bool supports_softmax(const ggml_tensor * op);
void compute_softmax(const compute_context & ctx, ggml_tensor * dst);

// ROPE (cpu-ops-rope.cpp)
bool supports_rope(const ggml_tensor * op);
void compute_rope(const compute_context & ctx, ggml_tensor * dst);

// FLASH_ATTN_EXT (cpu-ops-flash-attn.cpp)
bool supports_flash_attn(const ggml_tensor * op);
void compute_flash_attn(const compute_context & ctx, ggml_tensor * dst);

// TRI, DIAG, SOLVE_TRI (cpu-ops-triangular.cpp)
bool supports_triangular(const ggml_tensor * op);
void compute_triangular(const compute_context & ctx, ggml_tensor * dst);

// SSM_CONV, GATED_DELTA_NET (cpu-ops-linear-attn.cpp)
bool supports_linear_attn(const ggml_tensor * op);
void compute_linear_attn(const compute_context & ctx, ggml_tensor * dst);

} // namespace hexnpu::cpu
