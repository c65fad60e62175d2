// A thread's DMA queue: a strict FIFO ring of transfers over one hardware queue of the platform.
// push() starts a transfer, pop() waits for the oldest one and returns its {dst, src}. Every push
// is matched by a pop; a push with nrows == 0 is a "token" that completes at once and only keeps
// the FIFO pairing of a pipeline (e.g. the first writeback slots of a double-buffered loop).
#pragma once

#include "htp/platform.h"
#include "proto/htp-msg.h"
#include "trace.h"

#include <stdint.h>

namespace hexnpu::htp {

// A DMA address. Kernels keep one per tensor or VTCM area and form every transfer address as
// base + 32-bit byte offset, so on DMA64 parts (v81) a base may lie above 4 GiB while offsets stay
// 32-bit. On the virtual NPU addresses are host pointers, hence 64-bit there too.
#if defined(__hexagon__) && (!defined(HTP_ARCH) || HTP_ARCH < 81)
typedef uint32_t dma_addr_t;
#else
typedef uint64_t dma_addr_t;
#endif

inline dma_addr_t dma_addr_of(const void * p) { return dma_addr_t(uintptr_t(p)); }
inline dma_addr_t dma_addr_at(dma_addr_t base, uint32_t offset) { return base + offset; }
template <class T> inline T * dma_ptr(dma_addr_t a) { return reinterpret_cast<T *>(uintptr_t(a)); }

struct dma_ptr_pair {
    dma_addr_t dst;
    dma_addr_t src;
};

inline constexpr uint32_t DMA_QUEUE_CAPACITY = proto::HTP_DMA_QUEUE_CAPACITY;  // power of two
static_assert((DMA_QUEUE_CAPACITY & (DMA_QUEUE_CAPACITY - 1)) == 0);

struct dma_queue_entry {
    dma_ptr_pair ptr;
    uint64_t     ticket;  // the platform ticket to wait for; unused for tokens
    uint16_t     info;    // trace info of the transfer
    uint8_t      token;   // nrows == 0: nothing was submitted
    uint8_t      pad[5];
};

// What a queue issued since its counts were last cleared: hardware descriptors and their bytes by
// direction (GGML_HEXAGON_PROFILE=2's counters).
struct dma_counts {
    uint32_t descs     = 0;
    uint64_t to_vtcm   = 0;
    uint64_t from_vtcm = 0;
    uint64_t ddr       = 0;
};

struct dma_queue {
    const platform * plat = nullptr;
    uint32_t         hw_queue = 0;
    uint32_t         push_idx = 0;  // free-running; the ring index is idx % capacity
    uint32_t         pop_idx  = 0;
    trace_buf *      trace    = nullptr;  // DMA start at push, stop at pop; nullptr: untraced
    uint32_t         overflows = 0;       // pushes refused on a full ring since the last reset
    dma_counts       counts;
    dma_queue_entry  ring[DMA_QUEUE_CAPACITY];
};

void dma_queue_init(dma_queue * q, const platform * plat, uint32_t hw_queue);

inline uint32_t dma_queue_depth(const dma_queue * q) { return q->push_idx - q->pop_idx; }
inline uint32_t dma_queue_capacity(const dma_queue *) { return DMA_QUEUE_CAPACITY; }
inline bool     dma_queue_empty(const dma_queue * q) { return q->push_idx == q->pop_idx; }

// nrows rows of row_size bytes from src (rows src_stride apart) to dst (rows dst_stride apart);
// info tags the transfer's DMA trace events. Returns false when the queue is full (the transfer is not
// queued: counted in overflows, logged, and the batch loop fails the op with HTP_STATUS_STRICT) or
// the platform rejected the descriptor (a strict-mode violation the platform records; the entry is
// still queued, so the pipeline's pops stay paired). A 2-D transfer whose fields exceed the arch's descriptor width
// is issued as one 1-D transfer when both sides are contiguous, else row by row.
bool dma_queue_push(dma_queue * q, dma_ptr_pair p, uint32_t dst_stride, uint32_t src_stride, uint32_t row_size,
                    uint32_t nrows, uint16_t info);

// DDR rows of row_size bytes (ddr_stride apart) into VTCM rows vtcm_stride apart.
inline bool dma_queue_push_ddr_to_vtcm(dma_queue * q, dma_addr_t vtcm_dst, dma_addr_t ddr_src, uint32_t vtcm_stride,
                                       uint32_t ddr_stride, uint32_t row_size, uint32_t nrows, uint16_t info) {
    return dma_queue_push(q, dma_ptr_pair{vtcm_dst, ddr_src}, vtcm_stride, ddr_stride, row_size, nrows, info);
}

// VTCM rows (vtcm_stride apart) out to DDR rows of row_size bytes, ddr_stride apart.
inline bool dma_queue_push_vtcm_to_ddr(dma_queue * q, dma_addr_t ddr_dst, dma_addr_t vtcm_src, uint32_t ddr_stride,
                                       uint32_t vtcm_stride, uint32_t row_size, uint32_t nrows, uint16_t info) {
    return dma_queue_push(q, dma_ptr_pair{ddr_dst, vtcm_src}, ddr_stride, vtcm_stride, row_size, nrows, info);
}

// A zero-row token standing in for vtcm_slot's previous writeback in a pipeline's prologue.
inline bool dma_queue_push_token(dma_queue * q, const void * vtcm_slot, uint16_t info) {
    return dma_queue_push(q, dma_ptr_pair{dma_addr_of(vtcm_slot), dma_addr_of(vtcm_slot)}, 0, 0, 0, 0, info);
}

// Waits for the oldest transfer and returns its {dst, src}; {0, 0} when the queue is empty.
dma_ptr_pair dma_queue_pop(dma_queue * q);

// Pops everything (for the rare batch of pushes without individual pops).
void dma_queue_flush(dma_queue * q);

// Forgets every entry without waiting: for the batch loop, after an op that broke the pairing
// rule (its transfers are abandoned by the platform too).
inline void dma_queue_reset(dma_queue * q) {
    q->pop_idx   = q->push_idx;
    q->overflows = 0;
}

} // namespace hexnpu::htp
