// What the NPU-side runtime needs from the platform under it. On the virtual NPU the session
// process (src/vnpu) fills this table; a device port fills it from QuRT/HAP services. src/htp sees
// nothing else of its host: no libc I/O, no host headers.
#pragma once

#include "proto/fastdiv.h"
#include "proto/htp-msg.h"
#include "proto/hw-model.h"

#include <stddef.h>
#include <stdint.h>

namespace hexnpu::htp {

// One DMA transfer: nrows rows of row_size bytes, each side with its own stride (1-D: nrows = 1).
// Exactly one side is in VTCM; the other is a mapped window address. Addresses are host pointers
// into the window or VTCM (on a device: virtual addresses), formed by the runtime from a dma_addr_t
// base plus a 32-bit offset.
struct dma_desc {
    uint8_t *       dst;
    const uint8_t * src;
    uint32_t        row_size;
    uint32_t        nrows;
    uint32_t        dst_stride;
    uint32_t        src_stride;
};

using thread_fn = void (*)(void * arg);

inline constexpr int MAP_NO_ROOM    = 1;
inline constexpr int MAP_BAD_BUFFER = 2;

struct htp_mdev {
    uint32_t               idx   = 0;
    uint32_t               count = 1;
    proto::fastdiv_values  count_div{};
};

// One op of a device group as the platform's strict write check sees it (see mdev_check).
struct mdev_write_check {
    uint8_t * fence_base;  // the group's fence buffer (proto::htp_fence_buffer_bytes(count))
    uint32_t  idx, count;
    uint32_t  seq;         // the op's barrier sequence number
    uint32_t  timeout_us;
    uint32_t  n_dst;
    struct {
        uint8_t * ptr;     // the output's bytes in the window
        uint64_t  size;
        uint32_t  bi;      // its buffer's index in the batch (the same for every member)
        uint64_t  offset;  // its offset in that buffer
    } dst[proto::HTP_OP_MAX_OUTPUTS];
};

inline constexpr uint32_t MDEV_CHECK_BEGIN = 0;  // before the op runs
inline constexpr uint32_t MDEV_CHECK_END   = 1;  // after it, before the barrier (always called)
inline constexpr uint32_t MDEV_CHECK_PEERS = 2;  // after the barrier

struct platform {
    void * ctx;  // passed back to every call

    proto::hw_model hw;  // the arch model in force (after test overrides)

    // The session window: NPU address a (32-bit) lives at window_base + a.
    uint8_t * window_base;
    uint64_t  window_size;

    // VTCM: one contiguous region.
    uint8_t * vtcm_base;
    uint32_t  vtcm_size;

    // Hardware threads the platform can run at once (host cores on the virtual NPU): the runtime
    // starts min(requested, hw.n_hvx, max_threads) HVX workers.
    uint32_t max_threads;

    // Multi-device (the spec's mdev): this session is device mdev_idx of a group of mdev_count that
    // executes every op together, each its slice (htp-tensor.h); mdev_count_div is fastdiv's magic
    // for mdev_count, computed by the host. A lone session: index 0 of 1.
    htp_mdev mdev;

    // Maps a shared DDR buffer (fd) into the window; writes its NPU address. Returns 0,
    // MAP_NO_ROOM when the window has no room (the caller unmaps idle buffers and retries) or
    // MAP_BAD_BUFFER when the buffer cannot be mapped at all (bad fd, file shorter than size).
    int (*map_buffer)(void * ctx, int fd, uint64_t size, uint32_t * npu_addr);
    int (*unmap_buffer)(void * ctx, uint32_t npu_addr, uint64_t size);
    // The extended region (64-bit DMA, v81; FASTRPC_MAP_FD_DELAYED_EXTENDED): extended_size bytes of
    // NPU addresses from 4 GiB on, beside the window, for buffers only DMA reads. window_base + an
    // extended address is no memory the HVX/scalar units may touch (it faults); it is a valid DMA
    // address. nullptr and 0 where there is none.
    uint64_t extended_size;
    int (*map_buffer_ext)(void * ctx, int fd, uint64_t size, uint64_t * npu_addr);
    int (*unmap_buffer_ext)(void * ctx, uint64_t npu_addr, uint64_t size);

    // DMA engine, one hardware queue per HVX thread. submit() validates the descriptor against the
    // arch (field widths, one side in VTCM, the other mapped) and returns 0 or a strict-mode error;
    // the transfer completes no later than wait() on it. Transfers of one queue complete in order.
    int (*dma_submit)(void * ctx, uint32_t queue, const dma_desc * d, uint64_t * ticket);
    int (*dma_wait)(void * ctx, uint32_t queue, uint64_t ticket);
    // Called by the batch loop after every op: returns HTP_STATUS_OK, or HTP_STATUS_STRICT when a
    // strict-mode rule was broken since the last call (a rejected descriptor, a VTCM source changed
    // in flight, a DMA queue not drained). Abandons whatever is still in flight, so the next op
    // starts from empty queues. A device port without strict checks returns OK.
    uint32_t (*op_done)(void * ctx);

    // The session's HMX unit: an opaque handle kernels pass to the htp/hmx.h calls (the virtual
    // NPU's emulated unit). hmx_acquire makes the calling thread its only user and hmx_release gives
    // it back: the HMX queue thread holds it for its lifetime (HAP_compute_res_hmx_lock on a
    // device). A broken HMX rule (operand outside VTCM, misalignment, wrong thread) is reported by
    // the next op_done as HTP_STATUS_STRICT.
    void * hmx_unit;
    int (*hmx_acquire)(void * ctx);
    void (*hmx_release)(void * ctx);

    // Runtime state (session, queues): not used by kernels, which allocate nothing.
    void * (*mem_alloc)(void * ctx, size_t size, size_t align);
    void (*mem_free)(void * ctx, void * p);

    // Threads for HVX workers and the HMX owner (QuRT threads on a device).
    int (*thread_start)(void * ctx, thread_fn fn, void * arg, uint64_t * handle);
    void (*thread_join)(void * ctx, uint64_t handle);

    // Wait until *addr != expected (or a spurious wake-up) / wake all waiters on addr: the futex
    // analog the work queue sleeps on when idle.
    void (*wait_on)(void * ctx, const volatile uint32_t * addr, uint32_t expected);
    void (*wake_all)(void * ctx, const volatile uint32_t * addr);
    // The same for a word in DDR shared with other sessions (a multi-device fence), waiting at most
    // timeout_us: the peer that changes it is another process (on a device: another NPU or PD,
    // polled with cache invalidation).
    void (*fence_wait)(void * ctx, const volatile uint32_t * addr, uint32_t expected, uint32_t timeout_us);
    void (*fence_wake)(void * ctx, const volatile uint32_t * addr);
    // The virtual NPU's strict check of the spec's rule that two members of a group never write one
    // 128-byte DDR line through HVX/L2 in one op (DMA writes are exempt): called in the three phases
    // above; returns HTP_STATUS_OK or STRICT (with the line in the log), or FENCE_TIMEOUT. nullptr
    // on a device port and with strict checks off.
    uint32_t (*mdev_check)(void * ctx, uint32_t phase, const mdev_write_check * c);

    uint64_t (*cycles)(void * ctx);  // processor cycle counter
    uint64_t (*usecs)(void * ctx);   // qtimer microseconds

    // L2/D-cache maintenance over a range (and the whole cache); counted and traced.
    void (*dcache_flush)(void * ctx, const void * addr, size_t size);
    void (*dcache_flush_all)(void * ctx);

    void (*log)(void * ctx, int level, const char * msg);  // level: 0 error, 1 info, 2 debug
};

} // namespace hexnpu::htp
