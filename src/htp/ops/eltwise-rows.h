// What the element-wise streaming ops share around their pipeline: the dst rows an op covers
// (flattened over dims 1..3), their split over kparams.n_threads, and the VTCM area the shared
// eltwise layout (proto/htp-kparams.h) reserves per thread.
#pragma once

#include "htp-ctx.h"
#include "htp-tensor.h"
#include "proto/htp-kparams.h"
#include "proto/htp-status.h"
#include "vtcm.h"

#include <stdint.h>

namespace hexnpu::htp {

struct eltwise_rows {
    uint32_t  row_start;
    uint32_t  nrows;
    uint32_t  rows_per_thread;
    uint32_t  slot_bytes;
    uint8_t * vtcm;  // thread i's n_streams areas of n_slots slots start at i * n_streams * n_slots * slot_bytes

    // Thread i's rows [*ir0, *ir1); false when it has none.
    bool thread_range(uint32_t i, uint32_t * ir0, uint32_t * ir1) const {
        const uint32_t end = row_start + nrows;
        *ir0               = row_start + i * rows_per_thread;
        *ir1               = *ir0 + rows_per_thread < end ? *ir0 + rows_per_thread : end;
        return *ir0 < *ir1;
    }
};

// Plans dst's rows and takes the layout's VTCM. HTP_STATUS_OK with nrows = 0 means nothing to do.
inline uint32_t plan_eltwise_rows(const htp_op_context * octx, const proto::htp_tensor * dst,
                                  const proto::htp_eltwise_pipeline & pipe, eltwise_rows * out) {
    // Rows fit in 32 bits: each takes at least 4 of the tensor's (window-bounded) bytes.
    out->row_start = 0;
    out->nrows     = uint32_t(htp_tensor_nrows(dst));
    // Multi-device row split (spec "Row-Partitioned Operators") goes here, inside
    // `if (mdev.count > 1)`, once the runtime carries mdev state: it narrows [row_start, +nrows).
    if (out->nrows == 0) {
        return proto::HTP_STATUS_OK;
    }
    out->rows_per_thread = (out->nrows + pipe.n_threads - 1) / pipe.n_threads;

    vtcm_arena vtcm(octx->vtcm_base, octx->vtcm_size);
    out->vtcm = vtcm.take(pipe.vtcm_size);
    if (!vtcm.ok()) {
        return proto::HTP_STATUS_VTCM_TOO_SMALL;
    }
    out->slot_bytes = uint32_t(proto::htp_eltwise_slot_bytes(pipe));
    return proto::HTP_STATUS_OK;
}

} // namespace hexnpu::htp
