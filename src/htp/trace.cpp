#include "trace.h"

namespace hexnpu::htp {

void trace_reset(trace_buf * buf, const platform * plat, proto::htp_trace_desc * events, uint32_t capacity) {
    *buf          = trace_buf{};
    buf->plat     = plat;
    buf->events   = capacity != 0 ? events : nullptr;
    buf->capacity = capacity;
}

static void trace_append(trace_buf * buf, uint16_t id, uint16_t info) {
    proto::htp_trace_desc & e = buf->events[buf->count++];
    e.cycles = uint32_t(buf->plat->cycles(buf->plat->ctx));
    e.id     = id;
    e.info   = info;
}

void trace_event_start(trace_buf * buf, uint16_t id, uint16_t info) {
    if (!trace_enabled(buf) || id >= TRACE_MAX_EVENT_ID) {
        return;
    }
    // Room for this start, its stop and the stops still owed to open starts.
    if (buf->count + buf->open_total + 2 > buf->capacity) {
        ++buf->dropped;
        return;
    }
    ++buf->open[id];
    ++buf->open_total;
    trace_append(buf, id, info);
}

void trace_event_stop(trace_buf * buf, uint16_t id, uint16_t info) {
    if (!trace_enabled(buf) || id >= TRACE_MAX_EVENT_ID) {
        return;
    }
    if (buf->open[id] == 0) {  // its start was dropped
        ++buf->dropped;
        return;
    }
    --buf->open[id];
    --buf->open_total;
    trace_append(buf, uint16_t(id | proto::HTP_TRACE_STOP), info);
}

} // namespace hexnpu::htp
