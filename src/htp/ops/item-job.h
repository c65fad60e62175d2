// The tail of the entry points whose threads take work items rather than dst's rows (SOLVE_TRI,
// SSM_CONV, GATED_DELTA_NET): the job's VTCM taken from the op's, thread_fn run over the host's
// thread count. Their items are not row slices of dst, so a device group's member 0 computes such
// an op alone and the others return at once.
#pragma once

#include "htp-ctx.h"
#include "vtcm.h"
#include "work-queue.h"
#include "proto/htp-status.h"

#include <stdint.h>

namespace hexnpu::htp {

// Thread i's items [*first, *end) of n_items, per_thread each (the host's htp_split_items).
inline void thread_items(uint32_t i, uint32_t per_thread, uint32_t n_items, uint32_t * first, uint32_t * end) {
    *first = i * per_thread;
    *end   = *first + per_thread < n_items ? *first + per_thread : n_items;
}

template <typename Job>
uint32_t run_item_job(const htp_op_context * octx, Job & job, uint32_t vtcm_size, uint32_t n_threads, work_fn thread_fn) {
    if (octx->mdev->count > 1 && octx->mdev->idx != 0) {
        return proto::HTP_STATUS_OK;
    }
    vtcm_arena vtcm(octx->vtcm_base, octx->vtcm_size);
    job.vtcm = vtcm.take(vtcm_size);
    if (!vtcm.ok()) {
        return proto::HTP_STATUS_VTCM_TOO_SMALL;
    }
    work_queue_run(octx->work, thread_fn, &job, n_threads);
    return proto::HTP_STATUS_OK;
}

} // namespace hexnpu::htp
