#include "buffer-map.h"

#include "proto/htp-status.h"

namespace hexnpu::htp {

void buffer_map_init(buffer_map * m, const platform * plat, uint64_t vmem_budget) {
    m->plat           = plat;
    m->vmem_budget    = vmem_budget;
    m->mapped_bytes   = 0;
    m->extended_bytes = 0;
    m->batch_seq      = 1;
    m->count          = 0;
    m->stats          = buffer_map_stats{};
}

void buffer_map_begin_batch(buffer_map * m) { ++m->batch_seq; }

static void unmap_slot(buffer_map * m, uint32_t i) {
    const buffer_mapping & b = m->slots[i];
    if (b.extended) {
        m->plat->unmap_buffer_ext(m->plat->ctx, b.npu_addr, b.size);
        m->extended_bytes -= b.size;
    } else {
        m->plat->unmap_buffer(m->plat->ctx, uint32_t(b.npu_addr), b.size);
        m->mapped_bytes -= b.size;
    }
    m->stats.unmaps += 1;
    m->stats.unmap_bytes += b.size;
    m->slots[i] = m->slots[--m->count];
}

// Unmaps the least recently used mapping of the region (window or extended) that is neither pinned
// nor used by the current batch; any region when every_region (a full slot table).
static bool evict_one(buffer_map * m, bool extended, bool every_region) {
    uint32_t victim = m->count;
    for (uint32_t i = 0; i < m->count; ++i) {
        const buffer_mapping & b = m->slots[i];
        if (!b.pinned && b.last_batch != m->batch_seq && (every_region || b.extended == extended) &&
            (victim == m->count || b.last_batch < m->slots[victim].last_batch)) {
            victim = i;
        }
    }
    if (victim == m->count) {
        return false;
    }
    unmap_slot(m, victim);
    return true;
}

uint32_t buffer_map_acquire(buffer_map * m, int32_t fd, uint64_t size, bool pinned, bool extended, uint64_t * npu_addr) {
    extended = extended && !pinned && m->plat->map_buffer_ext != nullptr;
    for (uint32_t i = 0; i < m->count; ++i) {
        buffer_mapping & b = m->slots[i];
        if (b.fd != fd) {
            continue;
        }
        if (b.size == size && b.extended == extended) {
            b.last_batch = m->batch_seq;
            b.pinned     = b.pinned || pinned;
            *npu_addr    = b.npu_addr;
            return proto::HTP_STATUS_OK;
        }
        if (b.last_batch == m->batch_seq) {
            return proto::HTP_STATUS_INVAL_PARAMS;
        }
        // The fd now names another buffer (the old one was freed and its fd reused), or the
        // buffer moves between the window and the extended region.
        unmap_slot(m, i);
        break;
    }
    if (size == 0) {
        return proto::HTP_STATUS_INVAL_PARAMS;
    }
    const uint64_t budget = extended ? m->plat->extended_size : m->vmem_budget;
    if (size > budget) {
        return proto::HTP_STATUS_NO_WINDOW;
    }
    while ((extended ? m->extended_bytes : m->mapped_bytes) + size > budget) {
        if (!evict_one(m, extended, false)) {
            return proto::HTP_STATUS_NO_WINDOW;
        }
    }
    while (m->count == HTP_MAX_MAPPINGS) {
        if (!evict_one(m, extended, true)) {
            return proto::HTP_STATUS_NO_WINDOW;
        }
    }
    uint64_t addr = 0;
    int      rc;
    for (;;) {
        uint32_t addr32 = 0;
        rc   = extended ? m->plat->map_buffer_ext(m->plat->ctx, fd, size, &addr) : m->plat->map_buffer(m->plat->ctx, fd, size, &addr32);
        addr = extended ? addr : addr32;
        if (rc != MAP_NO_ROOM) {
            break;
        }
        if (!evict_one(m, extended, false)) {  // the region is fragmented: free more of it
            return proto::HTP_STATUS_NO_WINDOW;
        }
    }
    if (rc != 0) {
        return proto::HTP_STATUS_INVAL_PARAMS;
    }
    m->slots[m->count++] = buffer_mapping{fd, addr, size, m->batch_seq, pinned, extended};
    (extended ? m->extended_bytes : m->mapped_bytes) += size;
    m->stats.maps += 1;
    m->stats.map_bytes += size;
    if (extended) {
        m->stats.ext_maps += 1;
        m->stats.ext_map_bytes += size;
    }
    *npu_addr = addr;
    return proto::HTP_STATUS_OK;
}

void buffer_map_release(buffer_map * m, int32_t fd) {
    for (uint32_t i = 0; i < m->count; ++i) {
        if (m->slots[i].fd == fd) {
            unmap_slot(m, i);
            return;
        }
    }
}

void buffer_map_release_all(buffer_map * m) {
    while (m->count != 0) {
        unmap_slot(m, m->count - 1);
    }
}

} // namespace hexnpu::htp
