// The row streaming of the element-wise ops with one source row per dst row (the unary ops, ROPE):
// a thread's rows in DMA blocks that never cross an (i2, i3) slice, source rows into stream 0's
// slot, whatever else a block needs into the middle streams, the result from the last stream's
// slot back to dst. The ops differ only in those extra inputs and in their compute.
#pragma once

#include "dma-queue.h"
#include "eltwise-rows.h"
#include "htp-tensor.h"
#include "row-walk.h"
#include "stream-pipeline.h"
#include "proto/htp-eltwise.h"

#include <stdint.h>

namespace hexnpu::htp {

// One DMA block: nrows rows from row on, all in slice (i2, i3).
struct row_block {
    uint32_t row;
    uint32_t nrows;
    uint32_t i2;
    uint32_t src_offset;
    uint32_t dst_offset;
};

// Thread i's rows of dst (plan and pipe from the host's kparams): push_extra(k, b) pushes
// n_extra more transfers per block (none: a no-op), compute(k, b) fills slot k of the last
// stream from the others'. Source rows bring src_row_size bytes each and dst rows take
// dst_row_size (the pipe's row_size unless the op converts types; slots are laid out for the
// pipe's F32 rows). Rows are computed whole, pad lanes included: only those bytes go out.
// gather_elem != 0: the source's elements lie src->nb[0] bytes apart (a transposed view), each
// row gathered by one 2-D transfer of ne0 elements of gather_elem bytes (blocks of one row).
template <class PushExtra, class Compute>
void stream_rows(const htp_op_context * octx, uint32_t i, const proto::htp_eltwise_pipeline & pipe,
                 const proto::fastdiv_values & div_ne1, const proto::fastdiv_values & div_ne2,
                 const eltwise_rows & plan, const proto::htp_tensor * src, const proto::htp_tensor * dst,
                 uint32_t src_row_size, uint32_t dst_row_size, uint32_t n_extra, PushExtra push_extra,
                 Compute compute, uint32_t gather_elem = 0) {
    uint32_t ir0, ir1;
    if (!plan.thread_range(i, &ir0, &ir1)) {
        return;
    }
    dma_queue *      q        = &octx->dma[i];
    const dma_addr_t src_base = htp_tensor_dma_addr(octx->plat, src);
    const dma_addr_t dst_base = htp_tensor_dma_addr(octx->plat, dst);
    const uint32_t   stride   = pipe.vtcm_row_stride;
    const uint32_t   out      = plan.n_streams - 1;

    row_cursor next = row_cursor_at(ir0, div_ne1, div_ne2);
    stream_blocks<proto::HTP_ELTWISE_MAX_SLOTS, row_block>(
        q, &octx->trace[i], pipe.n_slots, 1 + n_extra,
        [&](row_block & b) {
            if (next.row >= ir1) {
                return false;
            }
            const uint32_t n = block_rows_at(next, pipe.block_rows, ir1, div_ne1.d);
            b = row_block{next.row, n, next.i2, row_offset(src, next.i1, next.i2, next.i3),
                          row_offset(dst, next.i1, next.i2, next.i3)};
            row_cursor_advance(next, n, div_ne1.d, div_ne2.d);
            return true;
        },
        [&](uint32_t k, const row_block & b) { dma_queue_push_token(q, plan.slot(i, out, k), trace_info(b.row)); },
        [&](uint32_t k, const row_block & b) {
            if (gather_elem != 0) {
                dma_queue_push_ddr_to_vtcm(q, dma_addr_of(plan.slot(i, 0, k)), dma_addr_at(src_base, b.src_offset),
                                           gather_elem, src->nb[0], gather_elem, src->ne[0], trace_info(b.row));
            } else {
                dma_queue_push_ddr_to_vtcm(q, dma_addr_of(plan.slot(i, 0, k)), dma_addr_at(src_base, b.src_offset),
                                           stride, src->nb[1], src_row_size, b.nrows, trace_info(b.row));
            }
            push_extra(q, k, b);
        },
        compute,
        [&](uint32_t k, const row_block & b) {
            dma_queue_push_vtcm_to_ddr(q, dma_addr_at(dst_base, b.dst_offset), dma_addr_of(plan.slot(i, out, k)),
                                       dst->nb[1], stride, dst_row_size, b.nrows, trace_info(b.row));
        });
}

} // namespace hexnpu::htp
