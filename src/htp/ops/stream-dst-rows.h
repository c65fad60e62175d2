// The streaming of the ops that build one dst row per block (GET_ROWS, PAD, CONCAT, REPEAT): a
// thread's dst rows one at a time, whatever the row needs landed in stream 0's slot by n_inputs
// transfers, the row computed into stream 1's slot, which goes back to the dst row.
#pragma once

#include "dma-queue.h"
#include "eltwise-rows.h"
#include "htp-tensor.h"
#include "row-walk.h"
#include "stream-pipeline.h"
#include "vnpu/hvx/hvx.h"

#include <stdint.h>

namespace hexnpu::htp {

// job: kp (pipe, div_ne1, div_ne2), rows_plan, octx, dst. push_inputs(q, slot, b) pushes the
// n_inputs transfers of dst row b into slot (a token where there is nothing to fetch keeps the
// pops paired); compute(d, s, n_vectors, b) fills slot d from slot s.
template <class Job, class PushInputs, class Compute>
void stream_dst_rows(const Job & job, uint32_t i, uint32_t n_inputs, PushInputs push_inputs, Compute compute) {
    const auto &         kp   = job.kp;
    const eltwise_rows & plan = job.rows_plan;
    uint32_t             ir0, ir1;
    if (!plan.thread_range(i, &ir0, &ir1)) {
        return;
    }
    dma_queue *      q        = &job.octx->dma[i];
    const dma_addr_t dst_base = htp_tensor_dma_addr(job.octx->plat, job.dst);
    const uint32_t   stride   = kp.pipe.vtcm_row_stride;

    row_cursor next = row_cursor_at(ir0, kp.div_ne1, kp.div_ne2);
    stream_blocks<proto::HTP_ELTWISE_MAX_SLOTS, row_cursor>(
        q, &job.octx->trace[i], kp.pipe.n_slots, n_inputs,
        [&](row_cursor & b) {
            if (next.row >= ir1) {
                return false;
            }
            b = next;
            row_cursor_advance(next, 1, kp.div_ne1.d, kp.div_ne2.d);
            return true;
        },
        [&](uint32_t k, const row_cursor & b) { dma_queue_push_token(q, plan.slot(i, 1, k), trace_info(b.row)); },
        [&](uint32_t k, const row_cursor & b) { push_inputs(q, plan.slot(i, 0, k), b); },
        [&](uint32_t k, const row_cursor & b) {
            compute(reinterpret_cast<HVX_Vector *>(plan.slot(i, 1, k)),
                    reinterpret_cast<const HVX_Vector *>(plan.slot(i, 0, k)), stride / 128, b);
        },
        [&](uint32_t k, const row_cursor & b) {
            dma_queue_push_vtcm_to_ddr(q, dma_addr_at(dst_base, row_offset(job.dst, b.i1, b.i2, b.i3)),
                                       dma_addr_of(plan.slot(i, 1, k)), kp.pipe.row_size, stride, kp.pipe.row_size,
                                       1, trace_info(b.row));
        });
}

} // namespace hexnpu::htp
