// The session's buffer mappings: which shared DDR buffers (by fd) are mapped where in the window.
// Batches reuse mappings whose fd matches; when a new buffer does not fit (window full, or the
// vmem budget the host promised to stay under), buffers that the current batch does not use and
// that are not pinned are unmapped, least recently used first: the spec's sliding window that lets
// a session run models larger than its window. Buffers only DMA reads (weights) may instead be
// mapped in the extended region where the platform has one (v81): they take no window room.
#pragma once

#include "htp/platform.h"

#include <stdint.h>

namespace hexnpu::htp {

inline constexpr uint32_t HTP_MAX_MAPPINGS = 64;

struct buffer_mapping {
    int32_t  fd;
    uint64_t npu_addr;
    uint64_t size;
    uint64_t last_batch;  // batch_seq of the last batch that used it
    bool     pinned;
    bool     extended;    // in the extended region (DMA only)
};

// What the window did so far: mappings made and removed, and their bytes.
struct buffer_map_stats {
    uint32_t maps        = 0;
    uint32_t unmaps      = 0;
    uint64_t map_bytes   = 0;
    uint64_t unmap_bytes = 0;
    uint32_t ext_maps      = 0;  // of the maps, those in the extended region
    uint64_t ext_map_bytes = 0;
};

struct buffer_map {
    const platform * plat         = nullptr;
    uint64_t         vmem_budget  = 0;
    uint64_t         mapped_bytes = 0;  // in the window
    uint64_t         extended_bytes = 0;
    uint64_t         batch_seq    = 1;  // mappings with last_batch == batch_seq are in use
    uint32_t         count        = 0;
    buffer_map_stats stats;
    buffer_mapping   slots[HTP_MAX_MAPPINGS];
};

void buffer_map_init(buffer_map * m, const platform * plat, uint64_t vmem_budget);

// A new batch: no mapping is in use by it yet.
void buffer_map_begin_batch(buffer_map * m);

// Maps the buffer (or finds its mapping) for the current batch and writes its NPU address; in the
// extended region when `extended` and the platform has one. Returns HTP_STATUS_OK,
// HTP_STATUS_NO_WINDOW (it cannot fit next to the batch's other buffers and the pinned ones) or
// HTP_STATUS_INVAL_PARAMS (the platform cannot map it; the fd is used twice with different sizes
// or places in one batch).
uint32_t buffer_map_acquire(buffer_map * m, int32_t fd, uint64_t size, bool pinned, bool extended, uint64_t * npu_addr);

// Unmaps the buffer of fd if it is mapped.
void buffer_map_release(buffer_map * m, int32_t fd);
void buffer_map_release_all(buffer_map * m);

} // namespace hexnpu::htp
