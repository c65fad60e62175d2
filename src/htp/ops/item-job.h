// The tail of the entry points whose threads take work items rather than dst's rows (SOLVE_TRI,
// SSM_CONV, GATED_DELTA_NET): the member's items, the job's VTCM taken from the op's, thread_fn run
// over the host's thread count. A device group's members split the items in order (each item's
// outputs leave VTCM by DMA alone, so no two members write one DDR line through L2).
#pragma once

#include "htp-ctx.h"
#include "htp-tensor.h"
#include "vtcm.h"
#include "work-queue.h"
#include "proto/htp-status.h"

#include <stdint.h>

namespace hexnpu::htp {

// A member's items [first, end) and each thread's share of them.
struct item_range {
    uint32_t first, end, per_thread;
};

// This member's items of n_items (all of them without a group), over n_threads threads.
inline item_range member_items(const htp_op_context * octx, uint32_t n_items, uint32_t n_threads) {
    item_range r{0, n_items, 0};
    if (octx->mdev->count > 1) {
        const htp_tensor_mdev_range part =
            htp_tensor_mdev_partition(n_items, 1, octx->mdev->idx, octx->mdev->count, &octx->mdev->count_div);
        r = item_range{part.start, part.start + part.count, 0};
    }
    r.per_thread = ceil_div_small(r.end - r.first, n_threads);
    return r;
}

// Thread i's items [*first, *end) of the member's.
inline void thread_items(const item_range & r, uint32_t i, uint32_t * first, uint32_t * end) {
    const uint32_t skip = i * r.per_thread;
    *first              = skip < r.end - r.first ? r.first + skip : r.end;
    *end                = r.end - *first > r.per_thread ? *first + r.per_thread : r.end;
}

// The job (with an item_range `items` and a `vtcm` pointer) over its n_items.
template <typename Job>
uint32_t run_item_job(const htp_op_context * octx, Job & job, uint32_t n_items, uint32_t vtcm_size, uint32_t n_threads,
                      work_fn thread_fn) {
    job.items = member_items(octx, n_items, n_threads);
    if (job.items.first == job.items.end) {
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
