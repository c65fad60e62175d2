// What the element-wise streaming ops share around their pipeline: the dst rows an op covers
// (flattened over dims 1..3), their split over the host's kparams.n_threads and rows_per_thread,
// the per-thread VTCM slots of the shared eltwise layout (proto/htp-eltwise.h), and the structural
// guard the batch loop runs before such an op (op-table.h).
#pragma once

#include "htp-ctx.h"
#include "htp-tensor.h"
#include "hvx-hf-rows.h"
#include "proto/htp-eltwise.h"
#include "proto/htp-status.h"
#include "vtcm.h"
#include "work-queue.h"

#include <stdint.h>

namespace hexnpu::htp {

struct eltwise_rows {
    uint32_t  row_start;
    uint32_t  nrows;
    uint32_t  rows_per_thread;
    uint32_t  n_slots;
    uint32_t  slot_bytes;
    uint32_t  n_streams;
    uint8_t * vtcm;  // thread i's n_streams areas of n_slots slots start at i * n_streams * n_slots * slot_bytes

    // Thread i's rows [*ir0, *ir1); false when it has none.
    bool thread_range(uint32_t i, uint32_t * ir0, uint32_t * ir1) const {
        const uint32_t end = row_start + nrows;
        *ir0               = row_start + i * rows_per_thread;
        *ir1               = *ir0 + rows_per_thread < end ? *ir0 + rows_per_thread : end;
        return *ir0 < *ir1;
    }

    // Slot k of stream s (0 = first source ... n_streams - 1 = dst) of thread i.
    uint8_t * slot(uint32_t i, uint32_t s, uint32_t k) const {
        return vtcm + ((size_t(i) * n_streams + s) * n_slots + k) * slot_bytes;
    }
};

// The streaming ops' typed rows: nrows rows per_row fp32 vectors apart (slots are laid out for
// F32), a 16-bit row (type F16 or BF16) in the first half of its stride. Widened from s into d /
// narrowed from s into d; d may be s; rows of 4-byte types (F32, I32) are copied (nothing to do in
// place).
inline void rows_to_sf(HVX_Vector * d, const HVX_Vector * s, uint32_t nrows, uint32_t per_row, uint32_t type) {
    for (uint32_t r = 0; r < nrows; ++r, d += per_row, s += per_row) {
        if (type == HTP_TYPE_F16 || type == HTP_TYPE_BF16) {
            hvx_16_row_to_sf(d, s, per_row, type == HTP_TYPE_BF16);
        } else if (d != s) {
            for (uint32_t v = 0; v < per_row; ++v) {
                d[v] = s[v];
            }
        }
    }
}
inline void rows_from_sf(HVX_Vector * d, const HVX_Vector * s, uint32_t nrows, uint32_t per_row, uint32_t type) {
    for (uint32_t r = 0; r < nrows; ++r, d += per_row, s += per_row) {
        if (type == HTP_TYPE_F16 || type == HTP_TYPE_BF16) {
            hvx_sf_row_to_16(d, s, per_row, type == HTP_TYPE_BF16);
        } else if (d != s) {
            for (uint32_t v = 0; v < per_row; ++v) {
                d[v] = s[v];
            }
        }
    }
}

// Plans dst's rows (this device's share of them in a multi-device group) and takes the layout's VTCM. HTP_STATUS_OK with nrows = 0 means nothing to do.
inline uint32_t plan_eltwise_rows(const htp_op_context * octx, const proto::htp_tensor * dst,
                                  const proto::htp_eltwise_pipeline & pipe, uint32_t n_streams, eltwise_rows * out) {
    // Rows fit in 32 bits: each takes at least 4 of the tensor's (window-bounded) bytes.
    out->row_start       = 0;
    out->nrows           = uint32_t(htp_tensor_nrows(dst));
    out->rows_per_thread = pipe.rows_per_thread;
    if (octx->mdev->count > 1) {
        // The spec's row partition: whole chunks of rows that start on 128-byte lines (1 row when
        // rows start on lines, 128 / gcd(row_size, 128) packed rows), the remainder to the last
        // device; device 0 alone when no chunking keeps devices off each other's lines. Each
        // device then splits its rows over the threads afresh; the row cursors start from any row
        // (stateless coordinates).
        uint32_t rows_per_chunk = 0;
        htp_tensor_mdev_rows_per_chunk(dst, dst->nb[0], dst->ne[0] * dst->nb[0], &rows_per_chunk);
        const htp_tensor_mdev_range part = htp_tensor_mdev_partition(out->nrows, rows_per_chunk, octx->mdev->idx,
                                                                     octx->mdev->count, &octx->mdev->count_div);
        out->row_start       = part.start;
        out->nrows           = part.count;
        out->rows_per_thread = ceil_div_small(part.count, pipe.n_threads);
    }
    if (out->nrows == 0) {
        return proto::HTP_STATUS_OK;
    }
    vtcm_arena vtcm(octx->vtcm_base, octx->vtcm_size);
    out->vtcm = vtcm.take(pipe.vtcm_size);
    if (!vtcm.ok()) {
        return proto::HTP_STATUS_VTCM_TOO_SMALL;
    }
    out->n_slots    = pipe.n_slots;
    out->slot_bytes = uint32_t(proto::htp_eltwise_slot_bytes(pipe));
    out->n_streams  = n_streams;
    return proto::HTP_STATUS_OK;
}

// Plans a streaming job's rows (job.dst, job.kp.pipe -> job.rows_plan) and runs thread_fn over the
// host's n_threads: the tail of every streaming op's entry point.
template <typename Job>
uint32_t run_eltwise_job(const htp_op_context * octx, Job & job, uint32_t n_streams, work_fn thread_fn) {
    const uint32_t status = plan_eltwise_rows(octx, job.dst, job.kp.pipe, n_streams, &job.rows_plan);
    if (status != proto::HTP_STATUS_OK || job.rows_plan.nrows == 0) {
        return status;
    }
    work_queue_run(octx->work, thread_fn, &job, job.kp.pipe.n_threads);
    return proto::HTP_STATUS_OK;
}

// ---- the batch loop's structural guard: what keeps a wrong kparams from hanging the loops,
// overrunning fixed arrays or VTCM, or sending DMA outside a tensor. Compares only; the shape
// rules and the fastdiv magic are the host's (a wrong magic yields wrong rows, which the strict
// DMA engine reports when they leave the tensor's buffer).

inline bool eltwise_pipeline_fits(const htp_op_context * octx, const proto::htp_eltwise_pipeline & p,
                                  uint32_t n_streams, uint32_t max_slots) {
    return p.n_threads >= 1 && p.n_threads <= octx->n_threads && p.n_slots >= 2 && p.n_slots <= max_slots &&
           p.block_rows >= 1 && p.rows_per_thread >= 1 && p.vtcm_row_stride % proto::HTP_VTCM_ROW_ALIGN == 0 &&
           p.row_size >= 1 && p.row_size <= p.vtcm_row_stride &&
           p.vtcm_size == proto::htp_eltwise_vtcm_size(p, n_streams);  // more than the session's: VTCM_TOO_SMALL
}

// An F32 tensor whose rows of row_size bytes all lie inside its bytes.
inline bool eltwise_rows_fit(const proto::htp_tensor * t, uint32_t row_size) {
    const uint64_t last_row = uint64_t(t->ne[1] - 1) * t->nb[1] + uint64_t(t->ne[2] - 1) * t->nb[2] +
                              uint64_t(t->ne[3] - 1) * t->nb[3];
    return t->type == HTP_TYPE_F32 && last_row + row_size <= t->size;
}

// The row walk's divisors are the dst's dims 1 and 2 (a zero divisor would stall the walk).
inline bool eltwise_walk_fits(const proto::htp_tensor * dst, const proto::fastdiv_values & div_ne1,
                              const proto::fastdiv_values & div_ne2) {
    return div_ne1.d == dst->ne[1] && div_ne2.d == dst->ne[2];
}

inline bool same_dims(const proto::htp_tensor * a, const proto::htp_tensor * b) {
    return a->ne[0] == b->ne[0] && a->ne[1] == b->ne[1] && a->ne[2] == b->ne[2] && a->ne[3] == b->ne[3];
}

} // namespace hexnpu::htp
