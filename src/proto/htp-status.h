// Status codes an NPU op or batch returns to the host. The first five are the upstream values
// users know from logs; the rest are hexnpu's virtual-NPU diagnostics.
#pragma once

#include <stdint.h>

namespace hexnpu::proto {

enum htp_status : uint32_t {
    HTP_STATUS_OK             = 1,
    HTP_STATUS_INTERNAL_ERR   = 2,
    HTP_STATUS_NO_SUPPORT     = 3,
    HTP_STATUS_INVAL_PARAMS   = 4,
    HTP_STATUS_VTCM_TOO_SMALL = 5,
    HTP_STATUS_FAULT          = 6,  // an access to an unmapped window address (rsp carries the address)
    HTP_STATUS_STRICT         = 7,  // a strict-mode hardware rule was broken (DMA order, VTCM bounds ...)
    HTP_STATUS_NO_WINDOW      = 8,  // the batch's buffers do not fit in the session window
    HTP_STATUS_FENCE_TIMEOUT  = 9,  // a multi-device peer did not reach a barrier before its deadline
    HTP_STATUS_PEER_FAILED    = 10, // a multi-device peer reported an error at a barrier
};

constexpr const char * htp_status_name(uint32_t s) {
    switch (s) {
        case HTP_STATUS_OK: return "OK";
        case HTP_STATUS_INTERNAL_ERR: return "INTERNAL_ERR";
        case HTP_STATUS_NO_SUPPORT: return "NO_SUPPORT";
        case HTP_STATUS_INVAL_PARAMS: return "INVAL_PARAMS";
        case HTP_STATUS_VTCM_TOO_SMALL: return "VTCM_TOO_SMALL";
        case HTP_STATUS_FAULT: return "FAULT";
        case HTP_STATUS_STRICT: return "STRICT";
        case HTP_STATUS_NO_WINDOW: return "NO_WINDOW";
        case HTP_STATUS_FENCE_TIMEOUT: return "FENCE_TIMEOUT";
        case HTP_STATUS_PEER_FAILED: return "PEER_FAILED";
        default: return "UNKNOWN";
    }
}

} // namespace hexnpu::proto
