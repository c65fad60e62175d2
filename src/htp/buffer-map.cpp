#include "buffer-map.h"

#include "proto/htp-status.h"

namespace hexnpu::htp {

void buffer_map_init(buffer_map * m, const platform * plat, uint64_t vmem_budget) {
    m->plat         = plat;
    m->vmem_budget  = vmem_budget;
    m->mapped_bytes = 0;
    m->batch_seq    = 1;
    m->count        = 0;
    m->stats        = buffer_map_stats{};
}

void buffer_map_begin_batch(buffer_map * m) { ++m->batch_seq; }

static void unmap_slot(buffer_map * m, uint32_t i) {
    const buffer_mapping & b = m->slots[i];
    m->plat->unmap_buffer(m->plat->ctx, b.npu_addr, b.size);
    m->mapped_bytes -= b.size;
    m->stats.unmaps += 1;
    m->stats.unmap_bytes += b.size;
    m->slots[i] = m->slots[--m->count];
}

// Unmaps the least recently used mapping that is neither pinned nor used by the current batch.
static bool evict_one(buffer_map * m) {
    uint32_t victim = m->count;
    for (uint32_t i = 0; i < m->count; ++i) {
        const buffer_mapping & b = m->slots[i];
        if (!b.pinned && b.last_batch != m->batch_seq &&
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

uint32_t buffer_map_acquire(buffer_map * m, int32_t fd, uint64_t size, bool pinned, uint32_t * npu_addr) {
    for (uint32_t i = 0; i < m->count; ++i) {
        buffer_mapping & b = m->slots[i];
        if (b.fd != fd) {
            continue;
        }
        if (b.size == size) {
            b.last_batch = m->batch_seq;
            b.pinned     = b.pinned || pinned;
            *npu_addr    = b.npu_addr;
            return proto::HTP_STATUS_OK;
        }
        if (b.last_batch == m->batch_seq) {
            return proto::HTP_STATUS_INVAL_PARAMS;
        }
        unmap_slot(m, i);  // the fd now names another buffer (the old one was freed and its fd reused)
        break;
    }
    if (size == 0) {
        return proto::HTP_STATUS_INVAL_PARAMS;
    }
    if (size > m->vmem_budget) {
        return proto::HTP_STATUS_NO_WINDOW;
    }
    while (m->mapped_bytes + size > m->vmem_budget || m->count == HTP_MAX_MAPPINGS) {
        if (!evict_one(m)) {
            return proto::HTP_STATUS_NO_WINDOW;
        }
    }
    uint32_t addr = 0;
    int      rc;
    while ((rc = m->plat->map_buffer(m->plat->ctx, fd, size, &addr)) == MAP_NO_ROOM) {
        if (!evict_one(m)) {  // the window is fragmented: free more of it
            return proto::HTP_STATUS_NO_WINDOW;
        }
    }
    if (rc != 0) {
        return proto::HTP_STATUS_INVAL_PARAMS;
    }
    m->slots[m->count++] = buffer_mapping{fd, addr, size, m->batch_seq, pinned};
    m->mapped_bytes += size;
    m->stats.maps += 1;
    m->stats.map_bytes += size;
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
