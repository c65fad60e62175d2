// The NPU library's entry points (libhexnpu-htp-vNN.so), the analog of the FastRPC IDL interface
// htp_iface (start, stop, mmap, munmap, hwinfo) plus the batch entry the session's queue thread calls.
// Plain C ABI so the session process can dlsym them. Return values: 0 on success, else an htp_status.
#pragma once

#include "htp/platform.h"
#include "proto/htp-msg.h"

#include <stddef.h>
#include <stdint.h>

// The shared libraries export these and nothing else.
#define HTP_IFACE_API __attribute__((visibility("default")))

extern "C" {

struct htp_session;

// Creates the session state on top of the platform (which must outlive the session). A library
// built for one arch (HTP_ARCH) refuses a platform of another.
HTP_IFACE_API int htp_iface_open(const hexnpu::htp::platform * plat, htp_session ** out);
// Starts the HVX workers and the HMX queue: n_hvx = min(requested, reported, platform threads),
// requested 0 meaning "as many as reported". max_vmem bounds the bytes mapped at once (0: the window).
HTP_IFACE_API int htp_iface_start(htp_session * s, uint32_t n_hvx, uint32_t n_hmx, uint64_t max_vmem);
HTP_IFACE_API int htp_iface_stop(htp_session * s);
HTP_IFACE_API void htp_iface_close(htp_session * s);
// What the session offers: threads actually started, HMX units, VTCM bytes, arch.
HTP_IFACE_API int htp_iface_hwinfo(htp_session * s, uint32_t * n_threads, uint32_t * n_hmx, uint32_t * vtcm_size,
                                   uint32_t * arch);
// Maps a buffer ahead of the batches that use it (pinned: it stays mapped until munmap) and
// unmaps it when the host frees it. Batches map the buffers they reference on their own.
HTP_IFACE_API int htp_iface_mmap(htp_session * s, int fd, uint64_t size, uint32_t pinned);
HTP_IFACE_API int htp_iface_munmap(htp_session * s, int fd);
// Processes one batch in place: block (block_size bytes, 8-byte aligned) holds the sections of
// proto::htp_batch_layout_of; the response is filled in. The current op index is published in
// *current_op before each op so a crash or fault can be attributed.
HTP_IFACE_API void htp_iface_process_batch(htp_session * s, const hexnpu::proto::htp_opbatch_req * req, uint8_t * block,
                                           size_t block_size, hexnpu::proto::htp_opbatch_rsp * rsp,
                                           volatile uint32_t * current_op);
}
