// The op-batch message the host sends to an NPU session and the response it gets back
// (architecture.md §4, upstream-reference.md §3.7 for what users know). One batch = one request
// on the session's queue plus one block in the pinned shared op-queue buffer laid out as
//   htp_buf_desc[n_bufs] | htp_tensor[n_tensors] | htp_op_desc[n_ops] | htp_prof_desc[n_ops]
//   | htp_trace_desc[HTP_TRACE_SLOTS * n_traces]
// Every section starts 8-byte aligned because every record size is a multiple of 8.
#pragma once

#include "proto/fastdiv.h"

#include "proto/htp-status.h"

#include <stddef.h>
#include <stdint.h>

namespace hexnpu::proto {

inline constexpr uint32_t HTP_OP_MAX_INPUTS      = 6;
inline constexpr uint32_t HTP_OP_MAX_OUTPUTS     = 4;
inline constexpr uint32_t HTP_OP_MAX_PARAMS      = 16;  // int32 words: a copy of the GGML op_params
inline constexpr uint32_t HTP_OP_MAX_KERN_PARAMS = 32;  // int32 words: host-precomputed kernel_params
inline constexpr uint32_t HTP_OP_MAX_BUFS        = 16;
inline constexpr uint32_t HTP_OP_MAX_TENSORS     = 8192;
inline constexpr uint32_t HTP_MAX_NTHREADS       = 10;
inline constexpr uint32_t HTP_DMA_QUEUE_CAPACITY = 128;  // transfers in flight per thread's DMA queue
inline constexpr uint32_t HTP_TRACE_SLOTS        = HTP_MAX_NTHREADS + 1;  // + the HMX thread
inline constexpr uint16_t HTP_NO_TENSOR          = 0xffff;
inline constexpr uint32_t HTP_FAILED_BATCH       = 0xffffffff;

// A shared DDR buffer the batch references; the session maps it by fd.
struct htp_buf_desc {
    uint64_t base;   // host address (informational, for messages)
    uint64_t size;
    int32_t  fd;
    uint32_t flags;  // HTP_BUF_*
};
inline constexpr uint32_t HTP_BUF_PINNED   = 1;  // stays mapped; otherwise mapped per batch (delayed)
// Only DMA reads it in this batch: the session may map it in its extended region (v81's
// FASTRPC_MAP_FD_DELAYED_EXTENDED, 64-bit DMA) instead of its window.
inline constexpr uint32_t HTP_BUF_EXTENDED = 2;

struct htp_tensor {
    uint64_t data;   // host: byte offset in its buffer; the NPU rewrites it to the tensor's NPU address
    uint64_t size;   // bytes the tensor occupies in its buffer
    uint32_t type;   // GGML type id
    uint32_t flags;  // HTP_TENSOR_*
    uint16_t bi;     // buffer index
    uint16_t ti;     // tensor index (its own position, for messages)
    uint32_t pad;
    uint32_t ne[4];
    uint32_t nb[4];
};
inline constexpr uint32_t HTP_TENSOR_COMPUTE = 1;  // lives in a compute (non-weight) buffer
inline constexpr uint32_t HTP_TENSOR_TILED   = 2;  // weight stored in the tiled format (proto/tile-formats.h)

struct htp_op_desc {
    uint32_t opcode;  // htp_op_code
    uint32_t flags;   // HTP_OPFLAGS_*
    int32_t  params[HTP_OP_MAX_PARAMS];
    int32_t  kparams[HTP_OP_MAX_KERN_PARAMS];
    uint16_t src[HTP_OP_MAX_INPUTS];   // tensor indices, HTP_NO_TENSOR when absent
    uint16_t dst[HTP_OP_MAX_OUTPUTS];
    uint32_t pad;
};
inline constexpr uint32_t HTP_OPFLAGS_SKIP_COMPUTE = 1;

struct htp_prof_desc {
    uint32_t opcode;
    uint32_t usecs;
    uint64_t cycles_start;
    uint64_t cycles_stop;
    // What the op's DMA queues issued (every thread's), as the NPU's dma_queue counts them: hardware
    // descriptors, and bytes into VTCM, out of VTCM, and neither (DDR to DDR).
    uint32_t dma_descs;
    uint32_t pad;
    uint64_t dma_to_vtcm;
    uint64_t dma_from_vtcm;
    uint64_t dma_ddr;
};

// One trace event: cycle stamp (low 32 bits), event id (bit 15 set on the stop event), and the
// kernel's full 16-bit info word.
struct htp_trace_desc {
    uint32_t cycles;
    uint16_t id;
    uint16_t info;
};
inline constexpr uint16_t HTP_TRACE_STOP = 0x8000;  // in htp_trace_desc::id

inline constexpr uint32_t HTP_NO_FENCE         = 0xffffffffu;
inline constexpr uint32_t HTP_FENCE_SLOT_BYTES = 128;  // one cache line per group member
// After the slots: per member and op parity, the log of 128-byte lines the member wrote through
// HVX/L2 in an op (the virtual NPU's strict check that no two members write one line).
inline constexpr uint32_t HTP_FENCE_LOG_BYTES = 16384;
constexpr uint64_t htp_fence_buffer_bytes(uint32_t count) {
    return uint64_t(count) * (HTP_FENCE_SLOT_BYTES + 2 * HTP_FENCE_LOG_BYTES);
}
// Member i's slot, the line at HTP_FENCE_SLOT_BYTES * i. Written by that member's barriers, and by
// the host when the member's session dies (a failed status far ahead in sequence, so every peer's
// barrier sees it at once) and again, back to a past sequence number, before the next batch.
struct htp_fence_slot {
    volatile uint32_t seq;
    volatile uint32_t status;  // htp_status; OK unless the member failed
    volatile uint32_t turn;    // the virtual NPU's strict group check: the last op this member finished
    uint32_t          pad[HTP_FENCE_SLOT_BYTES / 4 - 3];
};
static_assert(sizeof(htp_fence_slot) == HTP_FENCE_SLOT_BYTES);

inline htp_fence_slot * htp_mdev_fence_slot(uint8_t * fence_base, uint32_t idx) {
    return reinterpret_cast<htp_fence_slot *>(fence_base + HTP_FENCE_SLOT_BYTES * idx);
}

struct htp_opbatch_req {
    uint32_t id;        // block index in the op-queue buffer
    uint32_t n_bufs;
    uint32_t n_tensors;
    uint32_t n_ops;
    uint32_t n_traces;  // trace capacity per thread slot (0: no tracing)
    uint32_t profile;   // 0 off, 1 per-op timing, 3 timing + trace events
    // Multi-device (row split): this session is member mdev_idx of mdev_count that all run this
    // batch, each its slice of every op (0 or 1: alone, or the platform's own placement);
    // mdev_count_div is fastdiv's magic for mdev_count. After every op the members meet at a
    // barrier on the fence buffer (bufs[fence_bi], one 128-byte slot per member); the barriers use
    // sequence numbers fence_seq + 1, + 2, ... and give up after fence_timeout_us.
    uint32_t       mdev_idx;
    uint32_t       mdev_count;
    fastdiv_values mdev_count_div;
    uint32_t       fence_bi;
    uint32_t       fence_seq;
    uint32_t       fence_timeout_us;
    uint32_t       pad;
};

struct htp_opbatch_rsp {
    uint32_t id;
    uint32_t status;     // htp_status of the batch: the first failing op's status, or OK
    uint32_t failed_op;  // index of the failing op (valid when status != OK), HTP_FAILED_BATCH
                         // when the batch itself was rejected before any op ran
    uint32_t n_ops_done;
    uint32_t n_traces[HTP_TRACE_SLOTS];  // events recorded per thread slot
    uint32_t fault_addr;                 // NPU address of a faulting access (status FAULT)
    // The session window while preparing this batch's buffers (the sliding window): buffers mapped
    // and unmapped, and their bytes.
    uint32_t n_maps;
    uint32_t n_unmaps;
    uint64_t map_bytes;
    uint64_t unmap_bytes;
    uint32_t n_ext_maps;   // of the maps, those in the extended region
    uint32_t pad;
    uint64_t ext_map_bytes;
    uint64_t usecs;
    uint64_t cycles_start;
    uint64_t cycles_stop;
};

static_assert(sizeof(htp_buf_desc) == 24);
static_assert(sizeof(htp_tensor) == 64);
static_assert(sizeof(htp_op_desc) == 224);
static_assert(sizeof(htp_prof_desc) == 56);
static_assert(sizeof(htp_trace_desc) == 8);
static_assert(sizeof(htp_opbatch_req) == 64);
static_assert(sizeof(htp_opbatch_rsp) == 128);

// Byte offsets of the sections of one batch block.
struct htp_batch_layout {
    size_t bufs;
    size_t tensors;
    size_t ops;
    size_t prof;
    size_t traces;
    size_t total;
};

constexpr htp_batch_layout htp_batch_layout_of(uint32_t n_bufs, uint32_t n_tensors, uint32_t n_ops,
                                               uint32_t n_traces) {
    htp_batch_layout l{};
    l.bufs    = 0;
    l.tensors = l.bufs + size_t(n_bufs) * sizeof(htp_buf_desc);
    l.ops     = l.tensors + size_t(n_tensors) * sizeof(htp_tensor);
    l.prof    = l.ops + size_t(n_ops) * sizeof(htp_op_desc);
    l.traces  = l.prof + size_t(n_ops) * sizeof(htp_prof_desc);
    l.total   = l.traces + size_t(HTP_TRACE_SLOTS) * n_traces * sizeof(htp_trace_desc);
    return l;
}

} // namespace hexnpu::proto
