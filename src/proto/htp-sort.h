// ARGSORT and TOP_K on the NPU: dst row (i1, i2, i3), I32, = the indices of src0's F32 row sorted
// ascending or descending (ARGSORT, op_params 0 = GGML's sort order), or the indices of its k =
// dst.ne0 largest values, largest first (TOP_K). Both sides compile this header: the host's op
// preparation plans, the kernel (htp/ops/sort-ops.cpp) checks and executes.
//
// Each row is sorted whole in VTCM by a bitonic network (htp/hvx-sort.h) over n_sort = the row
// length rounded up to a power of two (at least one vector, 32): the keys in the source slot, the
// indices in the dst slot, both n_sort * 4 bytes apart. Keys order as the CPU reference orders
// values (every NaN above +inf); equal keys come out in any order (GGML leaves it open).
// Streams: src0 rows in, index rows out (the first dst.ne0 of each row's indices go back).
#pragma once

#include "fastdiv.h"
#include "proto/htp-eltwise.h"
#include "htp-msg.h"
#include "htp-opcodes.h"

#include <stdint.h>

namespace hexnpu::proto {

// The longest row the kernel sorts (2^22 keys: 16 MiB of keys and indices, more than any VTCM).
inline constexpr uint32_t HTP_SORT_MAX_LOG2 = 22;

struct htp_sort_kparams {
    htp_eltwise_pipeline pipe;      // row_size = ne0 * 4 (the keys in), vtcm_row_stride = n_sort * 4
    fastdiv_values       div_ne1;   // flat row -> (i1, i2, i3)
    fastdiv_values       div_ne2;
    uint32_t             log2_n_sort;   // n_sort = 1 << log2_n_sort, >= 5
    uint32_t             descending;    // 1: largest first (TOP_K always)
    uint32_t             dst_row_size;  // dst.ne0 * 4
    uint32_t             top_k_cap_log2;  // TOP_K of a long row by its vectors' minima (htp_top_k_cap_log2), 0: sorted whole
};
static_assert(sizeof(htp_sort_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// log2 of the power of two a row of ne0 keys sorts in (at least 5: one vector), or 0 when the row
// is longer than HTP_SORT_MAX_LOG2 allows.
constexpr uint32_t htp_sort_log2(uint32_t ne0) {
    uint32_t l = 5;
    while (l <= HTP_SORT_MAX_LOG2 && (uint32_t(1) << l) < ne0) {
        ++l;
    }
    return l <= HTP_SORT_MAX_LOG2 ? l : 0;
}

// TOP_K of a long row without sorting it whole (htp/ops/sort-ops.cpp, top_k_by_vector_minima):
// the vectors whose minimum key is at most the k-th smallest minimum, at most twice k of them (a
// power of two: 2^cap_log2), sorted in scratch after the minima. Rows from 2^15 keys on (shorter
// ones sort fast enough) whose scratch fits the index slot; 0 otherwise.
inline constexpr uint32_t HTP_TOP_K_MIN_LOG2 = 15;
constexpr uint32_t htp_top_k_cap_log2(uint32_t log2_n, uint32_t k) {
    uint32_t l = 0;
    while ((uint32_t(1) << l) < 2 * k) {
        ++l;
    }
    if (log2_n < HTP_TOP_K_MIN_LOG2 || l + 5 > HTP_SORT_MAX_LOG2) {
        return 0;
    }
    const uint32_t n_vec = uint32_t(1) << (log2_n - 5);
    return 3 * (n_vec / 32) + (uint32_t(2) << l) <= n_vec ? l : 0;
}

// The layout the sorts run on (compares only: the NPU's guard checks it too): F32 source rows
// anywhere, I32 dst rows apart with src0's rows, ne0 = src0's (ARGSORT) or 1..src0's (TOP_K).
constexpr bool htp_sort_layout_valid(uint32_t opcode, const htp_tensor & src0, const htp_tensor & dst) {
    const bool k_ok = opcode == HTP_OP_ARGSORT ? dst.ne[0] == src0.ne[0]
                                               : opcode == HTP_OP_TOP_K && dst.ne[0] >= 1 && dst.ne[0] <= src0.ne[0];
    return k_ok && dst.type == HTP_TYPE_I32 && src0.ne[1] == dst.ne[1] && src0.ne[2] == dst.ne[2] && src0.ne[3] == dst.ne[3] &&
           htp_sort_log2(src0.ne[0]) != 0 && htp_eltwise_source_rows_valid(src0) && htp_rows_apart(dst, 4);
}

// params: GGML's op_params (ARGSORT's order in 0). The most threads whose slots fit vtcm_size
// (a long row takes megabytes per thread).
inline htp_verdict prepare_sort_kparams(uint32_t opcode, const htp_tensor & src0, const htp_tensor & dst,
                                        const int32_t params[HTP_OP_MAX_PARAMS], uint32_t n_threads,
                                        uint32_t vtcm_size, htp_sort_kparams * out) {
    if (!htp_sort_layout_valid(opcode, src0, dst)) {
        return htp_refuse("the NPU sort takes F32 rows of at most 2^22 keys, I32 indices out");
    }
    if (opcode == HTP_OP_ARGSORT && params[0] != 0 && params[0] != 1) {
        return htp_refuse("an ARGSORT order other than ascending or descending");
    }
    htp_sort_kparams kp{};
    kp.log2_n_sort            = htp_sort_log2(src0.ne[0]);
    const uint64_t total_rows = uint64_t(dst.ne[1]) * dst.ne[2] * dst.ne[3];
    uint32_t       threads    = n_threads;
    while (threads > 0 && !htp_eltwise_plan(total_rows, uint32_t(4) << kp.log2_n_sort, 2, threads, vtcm_size, &kp.pipe)) {
        --threads;
    }
    if (threads == 0) {
        return htp_refuse(HTP_REFUSED_VTCM);
    }
    kp.pipe.row_size = src0.ne[0] * 4;  // the slots keep their power-of-two stride
    kp.div_ne1       = init_fastdiv(dst.ne[1]);
    kp.div_ne2       = init_fastdiv(dst.ne[2]);
    kp.descending    = opcode == HTP_OP_TOP_K || params[0] == 1;
    kp.dst_row_size  = dst.ne[0] * 4;
    kp.top_k_cap_log2 = opcode == HTP_OP_TOP_K ? htp_top_k_cap_log2(kp.log2_n_sort, dst.ne[0]) : 0;
    *out             = kp;
    return HTP_TAKEN;
}

inline htp_verdict prepare_sort_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_sort_kparams kp{};
    return htp_store_kparams(
        prepare_sort_kparams(a.opcode, *a.src[0], *a.dst, a.params, a.n_threads, a.vtcm_size, &kp), kp, kparams);
}

} // namespace hexnpu::proto
