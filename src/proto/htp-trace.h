// Trace event ids (the 16-bit info word carries a progress index: row, chunk or token, saturated at
// 0xffff; the stop flag is bit 15 of the recorded id, not of info). Ids match the upstream
// backend's, so its users' tooling reads our traces. L2FLUSH's info: the KiB flushed for one dirty
// range before an op reads it, or the number of ranges for the end-of-batch flush.
#pragma once

#include <stdint.h>

namespace hexnpu::proto {

enum htp_trace_event : uint16_t {
    HTP_TRACE_EVT_DMA           = 0,
    HTP_TRACE_EVT_L2FLUSH       = 1,
    HTP_TRACE_EVT_INIT          = 2,
    HTP_TRACE_EVT_BUFF          = 3,
    HTP_TRACE_EVT_FENCE         = 4,
    HTP_TRACE_EVT_HVX_COMP      = 20,
    HTP_TRACE_EVT_HVX_A_QUANT   = 21,
    HTP_TRACE_EVT_HVX_A_PREP    = 22,
    HTP_TRACE_EVT_HVX_W_DEQUANT = 23,
    HTP_TRACE_EVT_HVX_W_PREP    = 24,
    HTP_TRACE_EVT_HVX_O_PROC    = 25,
    HTP_TRACE_EVT_HMX_COMP      = 40,
};

constexpr const char * htp_trace_event_name(uint16_t id) {
    switch (id) {
        case HTP_TRACE_EVT_DMA: return "DMA";
        case HTP_TRACE_EVT_L2FLUSH: return "L2FLUSH";
        case HTP_TRACE_EVT_INIT: return "INIT";
        case HTP_TRACE_EVT_BUFF: return "BUFF";
        case HTP_TRACE_EVT_FENCE: return "FENCE";
        case HTP_TRACE_EVT_HVX_COMP: return "HVX_COMP";
        case HTP_TRACE_EVT_HVX_A_QUANT: return "HVX_A_QUANT";
        case HTP_TRACE_EVT_HVX_A_PREP: return "HVX_A_PREP";
        case HTP_TRACE_EVT_HVX_W_DEQUANT: return "HVX_W_DEQUANT";
        case HTP_TRACE_EVT_HVX_W_PREP: return "HVX_W_PREP";
        case HTP_TRACE_EVT_HVX_O_PROC: return "HVX_O_PROC";
        case HTP_TRACE_EVT_HMX_COMP: return "HMX_COMP";
        default: return "UNKNOWN";
    }
}

} // namespace hexnpu::proto
