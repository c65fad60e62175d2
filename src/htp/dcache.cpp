#include "dcache.h"

#include "proto/htp-trace.h"

namespace hexnpu::htp {

void dcache_reset(dcache_tracker * d, const platform * plat) {
    d->plat  = plat;
    d->count = 0;
}

static void remove_range(dcache_tracker * d, uint32_t i) { d->ranges[i] = d->ranges[--d->count]; }

static void flush_range(dcache_tracker * d, const dirty_range & r, trace_buf * trace) {
    const uint16_t kib = trace_info((r.end - r.start + 1023) >> 10);
    trace_event_start(trace, proto::HTP_TRACE_EVT_L2FLUSH, kib);
    d->plat->dcache_flush(d->plat->ctx, d->plat->window_base + r.start, size_t(r.end - r.start));
    trace_event_stop(trace, proto::HTP_TRACE_EVT_L2FLUSH, kib);
}

void dcache_mark_dirty(dcache_tracker * d, uint64_t npu_addr, uint64_t size, trace_buf * trace) {
    if (size == 0) {
        return;
    }
    dirty_range merged{npu_addr, npu_addr + size};
    for (uint32_t i = 0; i < d->count;) {
        const dirty_range & r = d->ranges[i];
        if (r.start <= merged.end && merged.start <= r.end) {
            merged.start = r.start < merged.start ? r.start : merged.start;
            merged.end   = r.end > merged.end ? r.end : merged.end;
            remove_range(d, i);
            i = 0;  // the grown range may now touch one already passed
        } else {
            ++i;
        }
    }
    if (d->count == DCACHE_MAX_DIRTY) {
        flush_range(d, d->ranges[0], trace);
        remove_range(d, 0);
    }
    d->ranges[d->count++] = merged;
}

void dcache_flush_input(dcache_tracker * d, const proto::htp_tensor * t, trace_buf * trace) {
    if ((t->flags & proto::HTP_TENSOR_COMPUTE) == 0) {
        return;
    }
    const uint64_t start = t->data;
    const uint64_t end   = t->data + t->size;
    for (uint32_t i = 0; i < d->count;) {
        if (d->ranges[i].start < end && start < d->ranges[i].end) {
            flush_range(d, d->ranges[i], trace);
            remove_range(d, i);
        } else {
            ++i;
        }
    }
}

void dcache_flush_dirty(dcache_tracker * d, trace_buf * trace) {
    if (d->count == 0) {
        return;
    }
    uint64_t total = 0;
    for (uint32_t i = 0; i < d->count; ++i) {
        total += d->ranges[i].end - d->ranges[i].start;
    }
    const uint16_t n = trace_info(d->count);
    trace_event_start(trace, proto::HTP_TRACE_EVT_L2FLUSH, n);
    if (total > DCACHE_FLUSH_ALL_BYTES) {
        d->plat->dcache_flush_all(d->plat->ctx);
    } else {
        for (uint32_t i = 0; i < d->count; ++i) {
            d->plat->dcache_flush(d->plat->ctx, d->plat->window_base + d->ranges[i].start,
                                  size_t(d->ranges[i].end - d->ranges[i].start));
        }
    }
    trace_event_stop(trace, proto::HTP_TRACE_EVT_L2FLUSH, n);
    d->count = 0;
}

} // namespace hexnpu::htp
