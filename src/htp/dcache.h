// Dirty-tensor bookkeeping for cache coherency. HVX stores go through the L2 cache while DDR-side
// DMA bypasses it, so the bytes an op wrote must be cleaned to DDR before a later op's DMA (or a
// peer device, or the host) reads them. Outputs of each op are recorded as dirty ranges of NPU
// addresses; before an op, its compute-buffer inputs that overlap a dirty range get that range
// flushed; at the end of a batch everything still dirty is flushed. Flushes are traced (L2FLUSH).
#pragma once

#include "htp/platform.h"
#include "proto/htp-msg.h"
#include "trace.h"

#include <stdint.h>

namespace hexnpu::htp {

inline constexpr uint32_t DCACHE_MAX_DIRTY       = 16;
inline constexpr uint64_t DCACHE_FLUSH_ALL_BYTES = uint64_t(4) << 20;  // above: one whole-cache flush

struct dirty_range {
    uint64_t start;  // NPU addresses, end exclusive
    uint64_t end;
};

struct dcache_tracker {
    const platform * plat  = nullptr;
    uint32_t         count = 0;
    dirty_range      ranges[DCACHE_MAX_DIRTY];
};

void dcache_reset(dcache_tracker * d, const platform * plat);

// Records [npu_addr, npu_addr + size) as dirty, merged with the ranges it overlaps or touches.
// A full table flushes one range to make room.
void dcache_mark_dirty(dcache_tracker * d, uint64_t npu_addr, uint64_t size, trace_buf * trace);

// Before an op: flushes the dirty ranges that t overlaps, if t lives in a compute buffer.
void dcache_flush_input(dcache_tracker * d, const proto::htp_tensor * t, trace_buf * trace);

// Before completion: flushes every dirty range (one whole-cache flush when they are large).
void dcache_flush_dirty(dcache_tracker * d, trace_buf * trace);

} // namespace hexnpu::htp
