// SUM and ARGMAX on the NPU (htp/ops/reduce-ops.cpp): whole-tensor and whole-row reductions whose
// rows may be longer than VTCM holds. Both sides compile this header: the host plans, the kernel
// checks and executes.
//
// SUM: dst (one element, src0's type) = the sum of every element of src0 (F32, F16 or BF16 rows
// anywhere). ARGMAX: dst (I32 [ne1]) element i1 = the index of the largest value of src0's F32 row
// i1, the last of equal ones (GGML's scan), a NaN restarting the scan (htp/ops/reduce-ops.cpp).
//
// Each thread takes rows_per_thread consecutive rows of src0 (flattened over dims 1..3) and streams
// each row in chunks of at most chunk_elems elements through n_slots VTCM slots; a chunk never
// crosses a row. Per thread, after its slots, an area of out_bytes: HTP_REDUCE_STATE_BYTES of
// running state (SUM: the partial sums, added in thread order at the end; ARGMAX: the row's running
// maxima and their indices), then ARGMAX's indices of the thread's rows (one DMA out at the end).
// A device group's member 0 computes the op alone (the others' share of a whole-tensor sum would
// need one more reduction across devices; ARGMAX rows are small next to the matmuls around them).
#pragma once

#include "proto/htp-eltwise.h"
#include "proto/htp-opcodes.h"

#include <stdint.h>

namespace hexnpu::proto {

inline constexpr uint32_t HTP_REDUCE_CHUNK_BYTES = 16384;  // the chunk a DMA brings aims at this many bytes
inline constexpr uint32_t HTP_REDUCE_STATE_BYTES = 384;    // three vectors

// Bytes of a thread's area after its slots.
constexpr uint64_t htp_reduce_out_bytes(uint32_t opcode, uint32_t rows_per_thread) {
    const uint64_t indices = opcode == HTP_OP_ARGMAX ? uint64_t(rows_per_thread) * 4 : 0;
    return HTP_REDUCE_STATE_BYTES + (indices + 127) / 128 * 128;
}

struct htp_reduce_kparams {
    uint32_t       n_threads;        // threads the rows are split over, <= the session's
    uint32_t       rows_per_thread;  // ceil(rows / n_threads)
    uint32_t       n_slots;          // chunks in flight per thread, 2..HTP_ELTWISE_MAX_SLOTS
    uint32_t       chunk_elems;      // elements per chunk, a multiple of 32 (one vector of fp32)
    uint32_t       elem_size;        // src0's element: 4 (F32) or 2 (F16, BF16; widened in the slot)
    uint32_t       out_bytes;        // each thread's output area, a multiple of 128
    uint32_t       vtcm_size;        // n_threads * (n_slots * chunk_elems * 4 + out_bytes)
    fastdiv_values div_ne1;          // flat src0 row -> (i1, i2, i3)
    fastdiv_values div_ne2;
};
static_assert(sizeof(htp_reduce_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

constexpr uint64_t htp_reduce_vtcm_size(const htp_reduce_kparams & kp) {
    return uint64_t(kp.n_threads) * (uint64_t(kp.n_slots) * kp.chunk_elems * 4 + kp.out_bytes);
}

// The layouts the kernel takes (compares only: the NPU's guard checks them too).
constexpr bool htp_reduce_layout_valid(uint32_t opcode, const htp_tensor & src0, const htp_tensor & dst) {
    if (opcode == HTP_OP_SUM) {
        const uint32_t e = htp_cpy_elem_size(src0.type);
        return e != 0 && dst.type == src0.type && dst.ne[0] == 1 && dst.ne[1] == 1 && dst.ne[2] == 1 &&
               dst.ne[3] == 1 && dst.size >= e && htp_rows_inside(src0, e);
    }
    return opcode == HTP_OP_ARGMAX && src0.type == HTP_TYPE_F32 && dst.type == HTP_TYPE_I32 && src0.ne[2] == 1 &&
           src0.ne[3] == 1 && dst.ne[0] == src0.ne[1] && dst.ne[1] == 1 && dst.ne[2] == 1 && dst.ne[3] == 1 &&
           dst.nb[0] == 4 && uint64_t(dst.ne[0]) * 4 <= dst.size && src0.ne[0] <= 0x7FFFFFFF &&
           htp_rows_inside(src0, 4);
}

inline htp_verdict prepare_reduce_kparams(uint32_t opcode, const htp_tensor & src0, const htp_tensor & dst,
                                          uint32_t n_threads, uint32_t vtcm_size, htp_reduce_kparams * out) {
    if (!htp_reduce_layout_valid(opcode, src0, dst)) {
        return htp_refuse(opcode == HTP_OP_SUM ? "the NPU sum takes F32, F16 or BF16 rows, each row's elements in order"
                                               : "the NPU argmax takes an F32 matrix, each row's elements in order, "
                                                 "I32 indices out");
    }
    if (n_threads == 0 || n_threads > HTP_MAX_NTHREADS) {
        return htp_refuse("the session's thread count is out of range");
    }
    htp_reduce_kparams kp{};
    const uint64_t rows = uint64_t(src0.ne[1]) * src0.ne[2] * src0.ne[3];
    if (rows > UINT32_MAX) {
        return htp_refuse("more than 2^32 rows");
    }
    kp.n_threads       = rows < n_threads ? uint32_t(rows) : n_threads;
    kp.rows_per_thread = uint32_t((rows + kp.n_threads - 1) / kp.n_threads);
    kp.elem_size       = htp_cpy_elem_size(src0.type);
    const uint64_t row_vectors = (uint64_t(src0.ne[0]) + 31) / 32;
    const uint64_t max_vectors = HTP_REDUCE_CHUNK_BYTES / 128;
    kp.chunk_elems = uint32_t(32 * (row_vectors < max_vectors ? row_vectors : max_vectors));
    kp.n_slots     = 3;
    kp.out_bytes       = uint32_t(htp_reduce_out_bytes(opcode, kp.rows_per_thread));
    while (htp_reduce_vtcm_size(kp) > vtcm_size) {
        if (kp.chunk_elems > 32) {
            kp.chunk_elems = (kp.chunk_elems / 2 + 31) / 32 * 32;
        } else if (kp.n_slots > 2) {
            --kp.n_slots;
        } else {
            return htp_refuse(HTP_REFUSED_VTCM);
        }
    }
    kp.vtcm_size = uint32_t(htp_reduce_vtcm_size(kp));
    kp.div_ne1   = init_fastdiv(src0.ne[1]);
    kp.div_ne2   = init_fastdiv(src0.ne[2]);
    *out         = kp;
    return HTP_TAKEN;
}

inline htp_verdict prepare_reduce_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_reduce_kparams kp{};
    return htp_store_kparams(prepare_reduce_kparams(a.opcode, *a.src[0], *a.dst, a.n_threads, a.vtcm_size, &kp), kp,
                             kparams);
}

} // namespace hexnpu::proto
