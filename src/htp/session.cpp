// The htp_iface entry points: session lifetime, hardware info, explicit buffer mappings.
#include "batch.h"
#include "htp-ctx.h"
#include "htp/htp-iface.h"
#include "proto/htp-status.h"

using namespace hexnpu;
using namespace hexnpu::htp;

extern "C" {

int htp_iface_open(const platform * plat, htp_session ** out) {
#if defined(HTP_ARCH)
    if (plat->hw.arch != HTP_ARCH) {
        plat->log(plat->ctx, 0, "htp: this library is built for another arch than the platform's");
        return proto::HTP_STATUS_NO_SUPPORT;
    }
#endif
    void * mem = plat->mem_alloc(plat->ctx, sizeof(htp_session), alignof(htp_session));
    if (mem == nullptr) {
        return proto::HTP_STATUS_INTERNAL_ERR;
    }
    // All-zero bytes are every member's idle state; start() sets up the rest.
    __builtin_memset(mem, 0, sizeof(htp_session));
    htp_session * s = static_cast<htp_session *>(mem);
    s->plat         = plat;
    *out            = s;
    return 0;
}

int htp_iface_start(htp_session * s, uint32_t n_hvx, uint32_t n_hmx, uint64_t max_vmem) {
    if (s->started) {
        return proto::HTP_STATUS_INVAL_PARAMS;
    }
    const platform * plat = s->plat;
    uint32_t         n    = n_hvx == 0 ? plat->hw.n_hvx : n_hvx;
    n                     = n < plat->hw.n_hvx ? n : plat->hw.n_hvx;
    n                     = n < plat->max_threads ? n : plat->max_threads;
    n                     = n < proto::HTP_MAX_NTHREADS ? n : proto::HTP_MAX_NTHREADS;
    n                     = n == 0 ? 1 : n;

    const uint64_t budget = max_vmem == 0 || max_vmem > plat->window_size ? plat->window_size : max_vmem;
    buffer_map_init(&s->buffers, plat, budget);
    dcache_reset(&s->dirty, plat);
    for (uint32_t i = 0; i < proto::HTP_TRACE_SLOTS; ++i) {
        trace_reset(&s->trace[i], plat, nullptr, 0);
    }
    for (uint32_t i = 0; i < n; ++i) {
        dma_queue_init(&s->dma[i], plat, i);
        s->dma[i].trace = &s->trace[i];
    }
    if (!work_queue_start(&s->work, plat, n)) {
        return proto::HTP_STATUS_INTERNAL_ERR;
    }
    s->n_hmx = n_hmx != 0 && plat->hw.n_hmx != 0 ? 1 : 0;
    if (s->n_hmx != 0 && !hmx_queue_start(&s->hmx, plat)) {
        work_queue_stop(&s->work);
        return proto::HTP_STATUS_INTERNAL_ERR;
    }
    s->n_threads = n;
    s->started   = true;
    return 0;
}

int htp_iface_stop(htp_session * s) {
    if (!s->started) {
        return proto::HTP_STATUS_INVAL_PARAMS;
    }
    if (s->n_hmx != 0) {
        hmx_queue_stop(&s->hmx);
    }
    work_queue_stop(&s->work);
    buffer_map_release_all(&s->buffers);
    s->started = false;
    return 0;
}

void htp_iface_close(htp_session * s) {
    if (s->started) {
        htp_iface_stop(s);
    }
    s->plat->mem_free(s->plat->ctx, s);
}

int htp_iface_hwinfo(htp_session * s, uint32_t * n_threads, uint32_t * n_hmx, uint32_t * vtcm_size, uint32_t * arch) {
    *n_threads = s->n_threads;
    *n_hmx     = s->n_hmx;
    *vtcm_size = s->plat->vtcm_size;
    *arch      = s->plat->hw.arch;
    return 0;
}

int htp_iface_mmap(htp_session * s, int fd, uint64_t size, uint32_t pinned) {
    if (!s->started) {
        return proto::HTP_STATUS_INVAL_PARAMS;
    }
    uint64_t       npu_addr = 0;
    const uint32_t status   = buffer_map_acquire(&s->buffers, fd, size, pinned != 0, false, &npu_addr);
    return status == proto::HTP_STATUS_OK ? 0 : int(status);
}

int htp_iface_munmap(htp_session * s, int fd) {
    if (!s->started) {
        return proto::HTP_STATUS_INVAL_PARAMS;
    }
    buffer_map_release(&s->buffers, fd);
    return 0;
}

void htp_iface_process_batch(htp_session * s, const proto::htp_opbatch_req * req, uint8_t * block, size_t block_size,
                             proto::htp_opbatch_rsp * rsp, volatile uint32_t * current_op) {
    run_batch(s, req, block, block_size, rsp, current_op);
}

} // extern "C"
