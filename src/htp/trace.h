// Per-thread trace event recording into the batch block's trace section (one slot per HVX thread
// plus one for the HMX thread). Events carry the low 32 bits of the cycle counter, the event id and
// a 16-bit info word (bit 15 of the id marks the stop event). A full buffer drops events and counts them.
#pragma once

#include "htp/platform.h"
#include "proto/htp-msg.h"
#include "proto/htp-trace.h"

#include <stdint.h>

namespace hexnpu::htp {

inline constexpr uint32_t TRACE_MAX_EVENT_ID = 64;

struct trace_buf {
    const platform *       plat = nullptr;
    proto::htp_trace_desc * events = nullptr;  // nullptr: tracing off
    uint32_t               capacity = 0;
    uint32_t               count = 0;
    uint32_t               dropped = 0;
    // Starts recorded and not yet stopped, per id. A start is kept only while its stop, and the
    // stops of all open starts, still fit: so recorded events always pair up, and once starts are
    // dropped every later one is too (a FIFO or nested pairing keeps its first starts' stops).
    uint32_t open_total = 0;
    uint16_t open[TRACE_MAX_EVENT_ID] = {};
};

// Points buf at events[capacity] (nullptr / 0: tracing off) and empties it.
void trace_reset(trace_buf * buf, const platform * plat, proto::htp_trace_desc * events, uint32_t capacity);

void trace_event_start(trace_buf * buf, uint16_t id, uint16_t info);
void trace_event_stop(trace_buf * buf, uint16_t id, uint16_t info);

inline bool trace_enabled(const trace_buf * buf) { return buf->events != nullptr; }

// A progress index as an info word: saturates rather than wraps, so a late row never reads as row 0.
inline uint16_t trace_info(uint64_t v) { return v < 0xffff ? uint16_t(v) : uint16_t(0xffff); }

} // namespace hexnpu::htp
