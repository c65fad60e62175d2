// kernel_params of TRI, DIAG and SOLVE_TRI (htp/ops/triangular-ops.cpp) and their host preparation.
// Both sides compile this header: the host plans, the kernels check and execute.
//
// TRI: dst row (i1, i2, i3) = src's row with the columns outside the kept triangle zeroed (GGML's
// types: UPPER_DIAG i0 >= i1, UPPER i0 > i1, LOWER_DIAG i0 <= i1, LOWER i0 < i1); the unary ops'
// row stream, one lane comparison per vector. DIAG: dst row (i1, i2, i3) = zeros but element i1,
// src's element (i1, 0, i2, i3); one dst row per block.
//
// SOLVE_TRI: X with A X = B by forward substitution (GGML defines only left, lower, non-unit): row
// r of X = (B[r] - sum_{t<r} A[r][t] X[t]) / A[r][r], the sum in ascending t as GGML's, each
// division correctly rounded (hvx_sf_div_rn), so per lane the same operations as GGML's CPU. A work
// item is one matrix of the batch and up to cols right-hand sides (columns of B): A's rows and the
// columns land by DMA in a slot, X is computed beside them and leaves by DMA; two slots per
// thread, the items split evenly over the threads. A device group's members split the items (X
// leaves by DMA alone).
#pragma once

#include "proto/htp-eltwise.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-prepare.h"

#include <stdint.h>

namespace hexnpu::proto {

struct htp_tri_kparams {
    htp_eltwise_pipeline pipe;     // over the rows; TRI: src0 and dst streams, DIAG: the fetched row and dst
    fastdiv_values       div_ne1;  // flat row -> (i1, i2, i3)
    fastdiv_values       div_ne2;
    uint32_t             upper;    // TRI: keep columns above `i1 + offset`, else below it
    int32_t              offset;   // TRI: UPPER_DIAG -1, UPPER 0, LOWER_DIAG +1, LOWER 0
};
static_assert(sizeof(htp_tri_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// TRI: square F32 matrices of one shape, the rows of each inside its bytes, dst's apart.
constexpr bool htp_tri_layout_valid(const htp_tensor & src, const htp_tensor & dst) {
    return src.type == HTP_TYPE_F32 && dst.type == HTP_TYPE_F32 && htp_same_shape(src, dst) && src.ne[0] == src.ne[1] &&
           htp_eltwise_source_rows_valid(src) && htp_eltwise_rows_valid(dst, dst.ne[0] * 4);
}

// DIAG: src [n, 1, ne2, ne3] F32, dst [n, n, ne2, ne3] F32.
constexpr bool htp_diag_layout_valid(const htp_tensor & src, const htp_tensor & dst) {
    return src.type == HTP_TYPE_F32 && dst.type == HTP_TYPE_F32 && src.ne[1] == 1 && dst.ne[0] == src.ne[0] &&
           dst.ne[1] == src.ne[0] && dst.ne[2] == src.ne[2] && dst.ne[3] == src.ne[3] &&
           htp_eltwise_source_rows_valid(src) && htp_eltwise_rows_valid(dst, dst.ne[0] * 4);
}

inline htp_verdict prepare_tri_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    const htp_tensor & src = *a.src[0];
    const htp_tensor & dst = *a.dst;
    htp_tri_kparams    kp{};
    if (!htp_tri_layout_valid(src, dst)) {
        return htp_refuse("the NPU TRI takes square F32 matrices of one shape");
    }
    const int32_t type = a.params[0];
    if (type < 0 || type > 3) {
        return htp_refuse("TRI's type (op_params 0) is not one of GGML's four");
    }
    const uint64_t rows = uint64_t(dst.ne[1]) * dst.ne[2] * dst.ne[3];
    if (const htp_verdict v = htp_eltwise_plan(rows, dst.ne[0] * 4, 2, a.n_threads, a.vtcm_size, &kp.pipe); !v) {
        return v;
    }
    kp.div_ne1 = init_fastdiv(dst.ne[1]);
    kp.div_ne2 = init_fastdiv(dst.ne[2]);
    kp.upper   = type <= 1;
    kp.offset  = type == 0 ? -1 : type == 2 ? 1 : 0;
    return htp_store_kparams(HTP_TAKEN, kp, kparams);
}

inline htp_verdict prepare_diag_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    const htp_tensor & src = *a.src[0];
    const htp_tensor & dst = *a.dst;
    htp_tri_kparams    kp{};
    if (!htp_diag_layout_valid(src, dst)) {
        return htp_refuse("the NPU DIAG takes an F32 row per matrix ([n, 1, ...]) into F32 [n, n, ...]");
    }
    if (const htp_verdict v = htp_dst_row_plan(dst, a.n_threads, a.vtcm_size, &kp.pipe, &kp.div_ne1, &kp.div_ne2); !v) {
        return v;
    }
    return htp_store_kparams(HTP_TAKEN, kp, kparams);
}

// ---- SOLVE_TRI

inline constexpr uint32_t HTP_SOLVE_TRI_MAX_N    = 1024;  // A's order at most (its rows land whole)
inline constexpr uint32_t HTP_SOLVE_TRI_MAX_COLS = 128;   // right-hand sides per item at most

struct htp_solve_tri_kparams {
    uint32_t       n_threads;
    uint32_t       items_per_thread;
    uint32_t       n_items;     // batches * col_blocks
    uint32_t       cols;        // right-hand sides per item, a multiple of 32
    fastdiv_values div_blocks;  // item -> (batch, column block)
    fastdiv_values div_ne2;     // batch -> (i2, i3)
    uint32_t       a_stride;    // bytes between A's rows in the slot: n * 4 rounded up to 128
    uint32_t       x_stride;    // between X's rows: cols * 4
    uint32_t       slot_bytes;  // n * (a_stride + 2 x_stride): A's rows, B's columns, X's
    uint32_t       vtcm_size;   // n_threads * 2 slots
};
static_assert(sizeof(htp_solve_tri_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

constexpr uint64_t htp_solve_tri_vtcm_size(uint32_t n_threads, uint32_t n, uint32_t cols) {
    return uint64_t(n_threads) * 2 * n * (uint64_t(htp_vtcm_row_stride(n * 4)) + 2 * cols * 4);
}

// A [n, n, ne2, ne3] and B, X [k, n, ne2, ne3], F32, each row's elements in order.
constexpr bool htp_solve_tri_layout_valid(const htp_tensor & a, const htp_tensor & b, const htp_tensor & x) {
    return a.type == HTP_TYPE_F32 && b.type == HTP_TYPE_F32 && x.type == HTP_TYPE_F32 && a.ne[0] == a.ne[1] &&
           b.ne[1] == a.ne[1] && a.ne[2] == b.ne[2] && a.ne[3] == b.ne[3] && htp_same_shape(b, x) &&
           htp_eltwise_source_rows_valid(a) && htp_eltwise_source_rows_valid(b) && htp_eltwise_rows_valid(x, x.ne[0] * 4);
}

inline htp_verdict prepare_solve_tri_op(const htp_op_args & args, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    const htp_tensor & a = *args.src[0];
    const htp_tensor & b = *args.src[1];
    const htp_tensor & x = *args.dst;
    if (!htp_solve_tri_layout_valid(a, b, x)) {
        return htp_refuse("the NPU SOLVE_TRI takes F32 A [n, n, ...] and B [k, n, ...] with the same batch dims");
    }
    if (a.ne[0] == 0 || b.ne[0] == 0 || uint64_t(a.ne[2]) * a.ne[3] == 0) {
        return htp_refuse("an empty system");
    }
    if (a.ne[0] > HTP_SOLVE_TRI_MAX_N) {
        return htp_refuse("A is larger than 1024 x 1024");
    }
    if (args.n_threads == 0 || args.n_threads > HTP_MAX_NTHREADS) {
        return htp_refuse("the session's thread count is out of range");
    }
    htp_solve_tri_kparams kp{};
    const uint32_t        n = a.ne[0];
    kp.cols                 = (b.ne[0] + 31) / 32 * 32;
    kp.cols                 = kp.cols < HTP_SOLVE_TRI_MAX_COLS ? kp.cols : HTP_SOLVE_TRI_MAX_COLS;
    const uint64_t batches  = uint64_t(a.ne[2]) * a.ne[3];
    for (;;) {
        const uint32_t blocks = (b.ne[0] + kp.cols - 1) / kp.cols;
        const uint64_t items  = batches * blocks;
        if (items > UINT32_MAX) {
            return htp_refuse("more than 2^32 systems");
        }
        kp.n_items          = uint32_t(items);
        const htp_item_split split = htp_split_items(kp.n_items, args.n_threads);
        kp.n_threads               = split.n_threads;
        kp.items_per_thread        = split.per_thread;
        kp.div_blocks       = init_fastdiv(blocks);
        if (htp_solve_tri_vtcm_size(kp.n_threads, n, kp.cols) <= args.vtcm_size) {
            break;
        }
        if (kp.cols == 32) {
            return htp_refuse(HTP_REFUSED_VTCM);
        }
        kp.cols /= 2;
    }
    kp.div_ne2    = init_fastdiv(a.ne[2]);
    kp.a_stride   = htp_vtcm_row_stride(n * 4);
    kp.x_stride   = kp.cols * 4;
    kp.slot_bytes = n * (kp.a_stride + 2 * kp.x_stride);
    kp.vtcm_size  = uint32_t(htp_solve_tri_vtcm_size(kp.n_threads, n, kp.cols));
    return htp_store_kparams(HTP_TAKEN, kp, kparams);
}

} // namespace hexnpu::proto
