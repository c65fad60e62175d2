#include "dma-queue.h"

#include "proto/htp-trace.h"

namespace hexnpu::htp {

static constexpr uint32_t DMA_1D_SIZE_BITS = 24;

void dma_queue_init(dma_queue * q, const platform * plat, uint32_t hw_queue) {
    q->plat     = plat;
    q->hw_queue = hw_queue;
    q->push_idx = 0;
    q->pop_idx  = 0;
    q->trace     = nullptr;
    q->overflows = 0;
    q->counts    = dma_counts{};
}

static bool fits_bits(uint64_t v, uint32_t bits) { return bits >= 64 || (v >> bits) == 0; }

static bool in_vtcm(const platform * plat, const void * p) {
    const auto * b = static_cast<const uint8_t *>(p);
    return b >= plat->vtcm_base && b < plat->vtcm_base + plat->vtcm_size;
}

static bool submit(dma_queue * q, const dma_desc & d, uint64_t * ticket) {
    const uint64_t bytes = uint64_t(d.row_size) * d.nrows;
    dma_counts &   c     = q->counts;
    ++c.descs;
    if (in_vtcm(q->plat, d.dst)) {
        c.to_vtcm += bytes;
    } else if (in_vtcm(q->plat, d.src)) {
        c.from_vtcm += bytes;
    } else {
        c.ddr += bytes;
    }
    return q->plat->dma_submit(q->plat->ctx, q->hw_queue, &d, ticket) == 0;
}

// Issues one queue entry as hardware descriptors; *ticket is the last one's (the hardware queue
// completes in order, so waiting for it waits for all).
static bool submit_entry(dma_queue * q, dma_ptr_pair p, uint32_t dst_stride, uint32_t src_stride, uint32_t row_size,
                         uint32_t nrows, uint64_t * ticket) {
    dma_desc d{dma_ptr<uint8_t>(p.dst), dma_ptr<const uint8_t>(p.src), row_size, nrows, dst_stride, src_stride};
    if (nrows == 1) {
        return submit(q, d, ticket);
    }
    const uint32_t bits = q->plat->hw.dma_2d_field_bits;
    if (fits_bits(row_size, bits) && fits_bits(nrows, bits) && fits_bits(dst_stride, bits) &&
        fits_bits(src_stride, bits)) {
        return submit(q, d, ticket);
    }
    const uint64_t total = uint64_t(row_size) * nrows;
    if (dst_stride == row_size && src_stride == row_size && fits_bits(total, DMA_1D_SIZE_BITS)) {
        d.row_size   = uint32_t(total);
        d.nrows      = 1;
        d.dst_stride = d.src_stride = d.row_size;
        return submit(q, d, ticket);
    }
    bool ok = true;
    for (uint32_t r = 0; r < nrows; ++r) {
        const dma_desc row{dma_ptr<uint8_t>(dma_addr_at(p.dst, r * dst_stride)),
                           dma_ptr<const uint8_t>(dma_addr_at(p.src, r * src_stride)), row_size, 1, row_size, row_size};
        ok = submit(q, row, ticket) && ok;
    }
    return ok;
}

bool dma_queue_push(dma_queue * q, dma_ptr_pair p, uint32_t dst_stride, uint32_t src_stride, uint32_t row_size,
                    uint32_t nrows, uint16_t info) {
    if (dma_queue_depth(q) == DMA_QUEUE_CAPACITY) {
        if (q->overflows++ == 0) {
            q->plat->log(q->plat->ctx, 0, "htp: DMA push on a full queue (every ring entry in flight): transfer not queued");
        }
        return false;
    }
    dma_queue_entry & e = q->ring[q->push_idx % DMA_QUEUE_CAPACITY];
    e.ptr    = p;
    e.info   = info;
    e.ticket = 0;
    e.token  = nrows == 0 || row_size == 0;
    bool ok  = true;
    if (!e.token) {
        ok = submit_entry(q, p, dst_stride, src_stride, row_size, nrows, &e.ticket);
    }
    ++q->push_idx;
    if (q->trace) {
        trace_event_start(q->trace, proto::HTP_TRACE_EVT_DMA, info);
    }
    return ok;
}

dma_ptr_pair dma_queue_pop(dma_queue * q) {
    if (dma_queue_empty(q)) {
        return dma_ptr_pair{0, 0};
    }
    const dma_queue_entry & e = q->ring[q->pop_idx % DMA_QUEUE_CAPACITY];
    if (!e.token) {
        q->plat->dma_wait(q->plat->ctx, q->hw_queue, e.ticket);
    }
    ++q->pop_idx;
    if (q->trace) {
        trace_event_stop(q->trace, proto::HTP_TRACE_EVT_DMA, e.info);
    }
    return e.ptr;
}

void dma_queue_flush(dma_queue * q) {
    while (!dma_queue_empty(q)) {
        dma_queue_pop(q);
    }
}

} // namespace hexnpu::htp
