// Multi-device synchronization (the spec's htp-fence.h): the members of a device group meet at a
// barrier after every op, on a fence buffer in shared DDR that every member maps. Member i owns the
// 128-byte line at fence_base + 128 i ({seq, status}); nobody else writes it. A barrier writes the
// member's next sequence number and status, then waits until every peer's sequence number has
// reached it (compared with signed arithmetic, so wrap-around is harmless), a peer reports an
// error at that barrier or later (the error propagates at once), or the deadline passes (a dead or
// stuck peer is an error, not a hang). Traced as FENCE events.
#pragma once

#include "htp/platform.h"
#include "proto/htp-msg.h"
#include "proto/htp-status.h"
#include "trace.h"

#include <stdint.h>

namespace hexnpu::htp {

using proto::HTP_FENCE_SLOT_BYTES;
using proto::htp_fence_slot;
using proto::htp_mdev_fence_slot;

// A member's view of its group for one batch.
struct htp_fence_group {
    const platform * plat;
    uint8_t *        base;        // the fence buffer (nullptr: no group)
    uint32_t         idx;         // this member
    uint32_t         count;
    uint32_t         seq;         // the last sequence number used
    uint32_t         timeout_us;
};

// Stores status then seq, cleans the line to DDR and wakes the peers waiting on it.
void htp_fence_write(const platform * plat, htp_fence_slot * slot, uint32_t seq, uint32_t status);

// The barrier: my_status is this member's result so far (a failure is published and returned
// without waiting). Returns OK, the own failure, HTP_STATUS_PEER_FAILED or HTP_STATUS_FENCE_TIMEOUT
// (logged with the peer's index).
uint32_t htp_mdev_group_barrier(htp_fence_group * g, uint32_t my_status, trace_buf * trace);

} // namespace hexnpu::htp
