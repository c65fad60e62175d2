// ALLREDUCE: the tensor split's reduction (llama.cpp's ggml_backend_comm_allreduce_tensor). A device
// group of the 2..4 sessions that each computed a partial result: src[k] is member k's (in its own
// buffer, every member maps every buffer), and after the op every src[k] holds their element-wise
// sum, written in place (dst[k] is src[k]). The flat elements are cut into chunks; the members split
// the chunks (the partition helpers), and a thread sums each of its chunks from every source (DMA
// into VTCM, HVX adds in fp32 in source order, fp16 rounded once) and writes the sum back into every
// source by DMA: the reduce-scatter and its all-gather in one pass, since no member reads a chunk
// another member writes.
#pragma once

#include "proto/htp-msg.h"
#include "proto/htp-prepare.h"
#include "proto/htp-types.h"

#include <stdint.h>

namespace hexnpu::proto {

inline constexpr uint32_t HTP_ALLREDUCE_MAX_RANKS   = HTP_OP_MAX_OUTPUTS;  // one destination per member
inline constexpr uint32_t HTP_ALLREDUCE_CHUNK_ELEMS = 4096;                // elements per work item
// Per thread: two slots, each a chunk of every source and the sum (which leaves while the slot's
// next chunks land).
constexpr uint32_t htp_allreduce_thread_bytes(uint32_t elem_bytes, uint32_t n_ranks) {
    return 2 * (n_ranks + 1) * HTP_ALLREDUCE_CHUNK_ELEMS * elem_bytes;
}

struct htp_allreduce_kparams {
    uint32_t n_ranks;     // sources (and destinations), 2..4
    uint32_t elem_bytes;  // 4 (F32) or 2 (F16)
    uint32_t n_elems;
    uint32_t n_items;     // chunks of HTP_ALLREDUCE_CHUNK_ELEMS, the last one partial
    uint32_t n_threads;
    uint32_t vtcm_size;   // n_threads * htp_allreduce_thread_bytes
};
static_assert(sizeof(htp_allreduce_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// A source the op reduces: F32 or F16, its elements contiguous, as many as src0's.
constexpr bool htp_allreduce_source_valid(const htp_tensor & t, const htp_tensor & src0) {
    const uint32_t e = t.type == HTP_TYPE_F32 ? 4 : t.type == HTP_TYPE_F16 ? 2 : 0;
    return e != 0 && t.type == src0.type && (t.flags & HTP_TENSOR_TILED) == 0 && t.nb[0] == e &&
           uint64_t(t.nb[1]) == uint64_t(t.ne[0]) * e && uint64_t(t.nb[2]) == uint64_t(t.nb[1]) * t.ne[1] &&
           uint64_t(t.nb[3]) == uint64_t(t.nb[2]) * t.ne[2] &&
           uint64_t(t.ne[0]) * t.ne[1] * t.ne[2] * t.ne[3] ==
               uint64_t(src0.ne[0]) * src0.ne[1] * src0.ne[2] * src0.ne[3] &&
           t.size >= uint64_t(t.ne[0]) * t.ne[1] * t.ne[2] * t.ne[3] * e;
}

inline htp_verdict prepare_allreduce_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_allreduce_kparams kp{};
    const htp_tensor &    src0 = *a.src[0];
    while (kp.n_ranks < HTP_ALLREDUCE_MAX_RANKS && a.src[kp.n_ranks] != nullptr) {
        if (!htp_allreduce_source_valid(*a.src[kp.n_ranks], src0)) {
            return htp_refuse("the NPU ALLREDUCE takes contiguous F32 or F16 partial results of one type and size");
        }
        ++kp.n_ranks;
    }
    if (kp.n_ranks < 2) {
        return htp_refuse("an all-reduce needs two to four partial results");
    }
    const uint64_t n = uint64_t(src0.ne[0]) * src0.ne[1] * src0.ne[2] * src0.ne[3];
    if (n == 0 || n > UINT32_MAX - HTP_ALLREDUCE_CHUNK_ELEMS) {
        return htp_refuse("an empty all-reduce, or one of more than 2^32 elements");
    }
    if (a.n_threads == 0 || a.n_threads > HTP_MAX_NTHREADS) {
        return htp_refuse("the session's thread count is out of range");
    }
    kp.elem_bytes       = src0.type == HTP_TYPE_F32 ? 4 : 2;
    kp.n_elems          = uint32_t(n);
    kp.n_items          = (kp.n_elems + HTP_ALLREDUCE_CHUNK_ELEMS - 1) / HTP_ALLREDUCE_CHUNK_ELEMS;
    const uint32_t per  = htp_allreduce_thread_bytes(kp.elem_bytes, kp.n_ranks);
    const uint32_t fit  = a.vtcm_size / per;
    if (fit == 0) {
        return htp_refuse(HTP_REFUSED_VTCM);
    }
    kp.n_threads = htp_split_items(kp.n_items, a.n_threads < fit ? a.n_threads : fit).n_threads;
    kp.vtcm_size = kp.n_threads * per;
    return htp_store_kparams(HTP_TAKEN, kp, kparams);
}

} // namespace hexnpu::proto
