#include "group-write-check.h"

#include "proto/htp-msg.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace hexnpu::vnpu {
namespace {

constexpr uint64_t LINE = 128;

// A member's log for one op parity: a header, then line runs.
struct log_header {
    uint32_t seq;       // the op's barrier number (the log is current when it matches)
    uint32_t n_runs;
    uint32_t overflow;  // runs that did not fit (the check is then partial, and says so)
    uint32_t pad;
};
constexpr uint32_t MAX_RUNS = (proto::HTP_FENCE_LOG_BYTES - sizeof(log_header)) / 16;

uint8_t * log_of(const htp::mdev_write_check & c, uint32_t member, uint32_t seq) {
    return c.fence_base + uint64_t(c.count) * proto::HTP_FENCE_SLOT_BYTES +
           (uint64_t(member) * 2 + (seq & 1)) * proto::HTP_FENCE_LOG_BYTES;
}

} // namespace

uint32_t group_write_check::run(const htp::platform & plat, uint32_t phase, const htp::mdev_write_check & c,
                                std::string * message) {
    switch (phase) {
        case htp::MDEV_CHECK_BEGIN: return begin(plat, c, message);
        case htp::MDEV_CHECK_END: return end(plat, c);
        default: return peers(c, message);
    }
}

uint32_t group_write_check::begin(const htp::platform & plat, const htp::mdev_write_check & c, std::string * message) {
    dma_.track_ddr_writes(false);
    began_ = false;
    if (c.idx > 0) {
        // My turn comes when the member before me has finished this op.
        proto::htp_fence_slot * prev     = proto::htp_mdev_fence_slot(c.fence_base, c.idx - 1);
        const uint64_t        deadline = plat.usecs(plat.ctx) + c.timeout_us;
        for (;;) {
            const uint32_t turn = prev->turn;
            if (int32_t(turn - c.seq) >= 0) {
                break;
            }
            const uint64_t now = plat.usecs(plat.ctx);
            if (now >= deadline) {
                *message = "strict group check: member " + std::to_string(c.idx - 1) +
                           " did not finish its turn of the op before the deadline";
                return proto::HTP_STATUS_FENCE_TIMEOUT;
            }
            plat.fence_wait(plat.ctx, &prev->turn, turn, uint32_t(std::min<uint64_t>(deadline - now, 100000)));
        }
    }
    snapshots_.resize(c.n_dst);
    for (uint32_t i = 0; i < c.n_dst; ++i) {
        snapshots_[i].assign(c.dst[i].ptr, c.dst[i].ptr + c.dst[i].size);
    }
    std::vector<dma_engine::ddr_rows> stale;
    dma_.take_ddr_writes(&stale);
    dma_.track_ddr_writes(true);
    began_     = true;
    began_seq_ = c.seq;
    return proto::HTP_STATUS_OK;
}

uint32_t group_write_check::end(const htp::platform & plat, const htp::mdev_write_check & c) {
    dma_.track_ddr_writes(false);
    std::vector<dma_engine::ddr_rows> dma_rows;
    dma_.take_ddr_writes(&dma_rows);
    auto by_dma = [&](const uint8_t * line_lo) {
        const uint8_t * line_hi = line_lo + LINE;
        for (const dma_engine::ddr_rows & r : dma_rows) {
            for (uint32_t k = 0; k < r.nrows; ++k) {
                const uint8_t * lo = r.dst + uint64_t(k) * r.stride;
                if (lo < line_hi && line_lo < lo + r.row_size) {
                    return true;
                }
            }
        }
        return false;
    };
    mine_.clear();
    const bool diff = began_ && began_seq_ == c.seq;  // else the op never ran here
    for (uint32_t i = 0; diff && i < c.n_dst; ++i) {
        const auto &    d    = c.dst[i];
        const uint8_t * base = d.ptr - d.offset;  // the buffer's start: line-aligned in the window
        for (uint64_t at = d.offset & ~(LINE - 1); at < d.offset + d.size; at += LINE) {
            const uint64_t lo = std::max(at, d.offset), hi = std::min(at + LINE, d.offset + d.size);
            if (std::memcmp(base + lo, snapshots_[i].data() + (lo - d.offset), hi - lo) == 0 || by_dma(base + at)) {
                continue;
            }
            const uint32_t line = uint32_t(at / LINE);
            if (!mine_.empty() && mine_.back().bi == d.bi && mine_.back().first + mine_.back().count == line) {
                ++mine_.back().count;
            } else {
                mine_.push_back({d.bi, line, 1, 0});
            }
        }
    }
    uint8_t *    log = log_of(c, c.idx, c.seq);
    log_header   h{c.seq, uint32_t(std::min<size_t>(mine_.size(), MAX_RUNS)), uint32_t(mine_.size() - std::min<size_t>(mine_.size(), MAX_RUNS)), 0};
    std::memcpy(log + sizeof h, mine_.data(), h.n_runs * sizeof(line_run));
    std::memcpy(log, &h, sizeof h);
    // My turn is over: the next member may run the op.
    proto::htp_fence_slot * slot = proto::htp_mdev_fence_slot(c.fence_base, c.idx);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    slot->turn = c.seq;
    plat.fence_wake(plat.ctx, &slot->turn);
    return proto::HTP_STATUS_OK;
}

uint32_t group_write_check::peers(const htp::mdev_write_check & c, std::string * message) const {
    for (uint32_t peer = 0; peer < c.count; ++peer) {
        if (peer == c.idx) {
            continue;
        }
        const uint8_t * log = log_of(c, peer, c.seq);
        log_header      h;
        std::memcpy(&h, log, sizeof h);
        if (h.seq != c.seq) {
            continue;  // not published: the peer failed before its turn (reported by the barrier)
        }
        for (uint32_t k = 0; k < h.n_runs; ++k) {
            line_run theirs;
            std::memcpy(&theirs, log + sizeof h + k * sizeof theirs, sizeof theirs);
            for (const line_run & m : mine_) {
                const uint32_t lo = std::max(m.first, theirs.first);
                if (m.bi == theirs.bi && lo < m.first + m.count && lo < theirs.first + theirs.count) {
                    char text[256];
                    std::snprintf(text, sizeof text,
                                  "strict: members %u and %u both wrote the 128-byte line at offset 0x%llx of batch "
                                  "buffer %u through HVX/L2 in one op (only DMA writes may share a line)",
                                  std::min(c.idx, peer), std::max(c.idx, peer),
                                  (unsigned long long) (uint64_t(lo) * LINE), m.bi);
                    *message = text;
                    return proto::HTP_STATUS_STRICT;
                }
            }
        }
    }
    return proto::HTP_STATUS_OK;
}

} // namespace hexnpu::vnpu
