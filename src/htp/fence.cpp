#include "fence.h"

namespace hexnpu::htp {
namespace {

// "htp: fence: peer N ..." without any formatting library (none on the NPU).
void log_peer(const platform * plat, const char * what, uint32_t peer) {
    char text[96] = "htp: fence: peer ";
    uint32_t n = 0;
    while (text[n] != '\0') {
        ++n;
    }
    char digits[10];
    uint32_t nd = 0;
    do {
        digits[nd++] = char('0' + peer % 10u);  // a constant divisor: no division call
        peer /= 10u;
    } while (peer != 0 && nd < 10);
    while (nd != 0) {
        text[n++] = digits[--nd];
    }
    for (uint32_t i = 0; what[i] != '\0' && n + 1 < sizeof text; ++i) {
        text[n++] = what[i];
    }
    text[n] = '\0';
    plat->log(plat->ctx, 0, text);
}

} // namespace

void htp_fence_write(const platform * plat, htp_fence_slot * slot, uint32_t seq, uint32_t status) {
    slot->status = status;
    __atomic_thread_fence(__ATOMIC_RELEASE);  // syncht: status is visible no later than seq
    slot->seq = seq;
    plat->dcache_flush(plat->ctx, slot, sizeof *slot);
    plat->fence_wake(plat->ctx, &slot->seq);
}

uint32_t htp_mdev_group_barrier(htp_fence_group * g, uint32_t my_status, trace_buf * trace) {
    const platform * plat = g->plat;
    const uint32_t   seq  = ++g->seq;
    trace_event_start(trace, proto::HTP_TRACE_EVT_FENCE, trace_info(seq & 0xffffu));
    htp_fence_write(plat, htp_mdev_fence_slot(g->base, g->idx), seq, my_status);
    uint32_t result = my_status;
    if (my_status == proto::HTP_STATUS_OK) {
        const uint64_t deadline = plat->usecs(plat->ctx) + g->timeout_us;
        for (uint32_t peer = 0; peer < g->count && result == proto::HTP_STATUS_OK; ++peer) {
            if (peer == g->idx) {
                continue;
            }
            htp_fence_slot * slot = htp_mdev_fence_slot(g->base, peer);
            for (;;) {
                plat->dcache_flush(plat->ctx, slot, sizeof *slot);  // dccleaninva: fresh from DDR
                const uint32_t peer_seq = slot->seq;
                __atomic_thread_fence(__ATOMIC_ACQUIRE);
                const uint32_t peer_status = slot->status;
                // A status belongs to the barrier it was written at: an error from an earlier batch
                // (an older sequence number) is no error of this one.
                const bool reached = int32_t(peer_seq - seq) >= 0;
                if (reached && peer_status != proto::HTP_STATUS_OK) {
                    log_peer(plat, " failed: this member stops at the barrier", peer);
                    result = proto::HTP_STATUS_PEER_FAILED;
                    break;
                }
                if (reached) {
                    break;
                }
                const uint64_t now = plat->usecs(plat->ctx);
                if (now >= deadline) {
                    log_peer(plat, " did not reach the barrier before the deadline", peer);
                    result = proto::HTP_STATUS_FENCE_TIMEOUT;
                    break;
                }
                const uint64_t left = deadline - now;
                plat->fence_wait(plat->ctx, &slot->seq, peer_seq, uint32_t(left < 100000 ? left : 100000));
            }
        }
    }
    trace_event_stop(trace, proto::HTP_TRACE_EVT_FENCE, trace_info(seq & 0xffffu));
    return result;
}

} // namespace hexnpu::htp
