// The session state behind the htp_iface entry points, and the context every op runs with.
#pragma once

#include "buffer-map.h"
#include "dcache.h"
#include "dma-queue.h"
#include "fence.h"
#include "hmx-queue.h"
#include "htp/platform.h"
#include "proto/htp-msg.h"
#include "trace.h"
#include "work-queue.h"

#include <stdint.h>

// Plain data: zero-filled storage is a closed session (see htp_iface_open).
struct htp_session {
    const hexnpu::htp::platform * plat = nullptr;
    bool                          started   = false;
    uint32_t                      n_threads = 0;  // HVX threads, the caller's included
    uint32_t                      n_hmx     = 0;
    hexnpu::htp::work_queue       work;
    hexnpu::htp::hmx_queue        hmx;
    hexnpu::htp::dma_queue        dma[hexnpu::proto::HTP_MAX_NTHREADS];       // one per HVX thread
    hexnpu::htp::trace_buf        trace[hexnpu::proto::HTP_TRACE_SLOTS];      // HVX threads, then HMX
    hexnpu::htp::buffer_map       buffers;
    hexnpu::htp::dcache_tracker   dirty;
    // The running batch's multi-device place (the request's group, else the platform's) and its
    // group's fences (base nullptr: no group).
    hexnpu::htp::htp_mdev         mdev;
    hexnpu::htp::htp_fence_group  fence;
};

namespace hexnpu::htp {

inline constexpr uint32_t HMX_TRACE_SLOT = proto::HTP_MAX_NTHREADS;

struct htp_op_context {
    const platform *           plat;
    const proto::htp_op_desc * op;
    uint32_t                   op_index;
    const proto::htp_tensor *  src[proto::HTP_OP_MAX_INPUTS];   // nullptr when absent
    proto::htp_tensor *        dst[proto::HTP_OP_MAX_OUTPUTS];  // nullptr when absent
    uint32_t                   n_threads;
    work_queue *               work;
    hmx_queue *                hmx;    // nullptr without HMX
    dma_queue *                dma;    // [n_threads]: thread i uses dma[i]
    trace_buf *                trace;  // [HTP_TRACE_SLOTS]: thread i uses trace[i], HMX jobs the last
    uint8_t *                  vtcm_base;
    uint32_t                   vtcm_size;
    const htp_mdev *           mdev;   // the session's multi-device place (count 1: alone)
};

} // namespace hexnpu::htp
