// The NPU library's entry points (libhexnpu-htp-vNN.so), the analog of the FastRPC IDL interface
// htp_iface (start, stop, hwinfo, profiler) plus the batch entry the session's queue thread calls.
// Plain C ABI so the session process can dlsym them.
#pragma once

#include "htp/platform.h"
#include "proto/htp-msg.h"

#include <stdint.h>

extern "C" {

struct htp_session;

// Creates the session state on top of the platform (which must outlive the session).
int htp_iface_open(const hexnpu::htp::platform * plat, htp_session ** out);
// Starts the HVX workers and the HMX queue: n_hvx = min(requested, reported, host cores).
int htp_iface_start(htp_session * s, uint32_t n_hvx, uint32_t n_hmx, uint64_t max_vmem);
int htp_iface_stop(htp_session * s);
void htp_iface_close(htp_session * s);
// What the session offers: threads actually started, HMX units, VTCM bytes, arch.
int htp_iface_hwinfo(htp_session * s, uint32_t * n_threads, uint32_t * n_hmx, uint32_t * vtcm_size,
                     uint32_t * arch);
// Processes one batch in place: block holds the sections of proto::htp_batch_layout_of; the
// response is filled in. The current op index is published in *current_op before each op so a
// crash or fault can be attributed.
void htp_iface_process_batch(htp_session * s, const hexnpu::proto::htp_opbatch_req * req, uint8_t * block,
                             hexnpu::proto::htp_opbatch_rsp * rsp, volatile uint32_t * current_op);

}
