// Virtual-NPU test ops. TEST_STREAM is a complete kernel in the spec's shape (DDR -> DMA -> VTCM ->
// HVX -> VTCM -> DMA -> DDR, multi-buffered, split over the work queue, traced) with a few
// deliberate misuses the strict virtual NPU must catch; the others fault, hang or crash on purpose.
#include "dma-queue.h"
#include "htp-tensor.h"
#include "ops.h"
#include "row-walk.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-status.h"
#include "proto/htp-trace.h"
#include "vnpu/hvx/hvx.h"
#include "vtcm.h"


namespace hexnpu::htp {

namespace {

using proto::htp_tensor;
using proto::htp_test_stream_kparams;

constexpr uint32_t STREAM_MAX_SLOTS = 16;

// One DMA block: nrows rows from row on, all in one (i2, i3) slice.
struct stream_block {
    uint32_t row;
    uint32_t nrows;
    uint32_t src_offset;
    uint32_t dst_offset;
};

struct stream_job {
    const htp_op_context *  octx;
    htp_test_stream_kparams kp;
    const htp_tensor *      src;
    const htp_tensor *      dst;
    uint32_t                total_rows;
    uint32_t                rows_per_thread;
    uint32_t                row_size;
    uint32_t                slot_bytes;
    uint8_t *               vtcm_src;  // thread i's n_slots source slots start at i * n_slots * slot_bytes
    uint8_t *               vtcm_dst;
};

// The next block before row end, and the cursor moved past it.
stream_block take_block(row_cursor & c, uint32_t end, const stream_job & job) {
    const uint32_t     n = block_rows_at(c, job.kp.block_rows, end, job.src->ne[1]);
    const stream_block b{c.row, n, row_offset(job.src, c.i1, c.i2, c.i3), row_offset(job.dst, c.i1, c.i2, c.i3)};
    row_cursor_advance(c, n, job.src->ne[1], job.src->ne[2]);
    return b;
}

// The splat happens here, not in the caller: HVX registers do not survive the DMA calls around
// each block, so a vector kept across them would be spilled and reloaded every block.
void scale_vectors(uint8_t * dst, const uint8_t * src, uint32_t n_vectors, uint32_t scale_bits) {
    const HVX_Vector   vscale = Q6_V_vsplat_R(int32_t(scale_bits));
    const HVX_Vector * s      = reinterpret_cast<const HVX_Vector *>(src);
    HVX_Vector *       d = reinterpret_cast<HVX_Vector *>(dst);
    for (uint32_t j = 0; j < n_vectors; ++j) {
        d[j] = Q6_Vsf_equals_Vqf32(Q6_Vqf32_vmpy_VsfVsf(s[j], vscale));
    }
}

void stream_thread(uint32_t n, uint32_t i, void * data) {
    const stream_job &              job = *static_cast<const stream_job *>(data);
    const htp_test_stream_kparams & kp  = job.kp;
    const uint32_t                  ir0 = i * job.rows_per_thread;
    const uint32_t ir1 = ir0 + job.rows_per_thread < job.total_rows ? ir0 + job.rows_per_thread : job.total_rows;
    if (ir0 >= ir1) {
        return;
    }
    dma_queue *      q         = &job.octx->dma[i];
    trace_buf *      tr        = &job.octx->trace[i];
    uint8_t *        src_slots = job.vtcm_src + size_t(i) * kp.n_slots * job.slot_bytes;
    uint8_t *        dst_slots = job.vtcm_dst + size_t(i) * kp.n_slots * job.slot_bytes;
    const dma_addr_t src_base  = htp_tensor_dma_addr(job.octx->plat, job.src);
    const dma_addr_t dst_base  = htp_tensor_dma_addr(job.octx->plat, job.dst);
    const uint32_t   stride    = kp.vtcm_row_stride;

    row_cursor   next = row_cursor_at(ir0, kp.div_ne1, kp.div_ne2);
    stream_block blocks[STREAM_MAX_SLOTS];

    // Prologue: a token stands in for each destination slot's "previous writeback", and the first
    // source blocks start flowing in.
    uint32_t primed = 0;
    for (; primed < kp.n_slots && next.row < ir1; ++primed) {
        const stream_block & b = blocks[primed] = take_block(next, ir1, job);
        uint8_t *            d = dst_slots + size_t(primed) * job.slot_bytes;
        dma_queue_push(q, dma_ptr_pair{dma_addr_of(d), dma_addr_of(d)}, 0, 0, 0, 0, uint16_t(b.row));
        dma_queue_push_ddr_to_vtcm(q, dma_addr_of(src_slots + size_t(primed) * job.slot_bytes),
                                   dma_addr_at(src_base, b.src_offset), stride, job.src->nb[1], job.row_size, b.nrows,
                                   uint16_t(b.row));
    }

    // Block by block, slot k = block % n_slots: wait for the slot, compute, write back, prefetch.
    uint32_t in_flight = primed;
    for (uint32_t k = 0; in_flight > 0; k = k + 1 == kp.n_slots ? 0 : k + 1) {
        stream_block & b = blocks[k];
        uint8_t *      s = src_slots + size_t(k) * job.slot_bytes;
        uint8_t *      d = dst_slots + size_t(k) * job.slot_bytes;

        dma_queue_pop(q);  // d is free: its previous writeback (or the token) is done
        if (kp.misuse != proto::HTP_TEST_STREAM_READ_BEFORE_POP) {
            dma_queue_pop(q);  // the rows of s have landed
        }
        trace_event_start(tr, proto::HTP_TRACE_EVT_HVX_COMP, uint16_t(b.row));
        scale_vectors(d, s, b.nrows * (stride / 128), kp.scale);
        trace_event_stop(tr, proto::HTP_TRACE_EVT_HVX_COMP, uint16_t(b.row));
        if (kp.misuse == proto::HTP_TEST_STREAM_READ_BEFORE_POP) {
            dma_queue_pop(q);
        }

        dma_queue_push_vtcm_to_ddr(q, dma_addr_at(dst_base, b.dst_offset), dma_addr_of(d), job.dst->nb[1], stride,
                                   job.row_size, b.nrows, uint16_t(b.row));
        if (kp.misuse == proto::HTP_TEST_STREAM_WRITE_AFTER_PUSH) {
            HVX_Vector * first = reinterpret_cast<HVX_Vector *>(d);
            *first             = Q6_V_vnot_V(*first);  // surely changed, while the writeback still reads d
        }
        --in_flight;
        if (next.row < ir1) {
            b = take_block(next, ir1, job);
            dma_queue_push_ddr_to_vtcm(q, dma_addr_of(s), dma_addr_at(src_base, b.src_offset), stride, job.src->nb[1],
                                       job.row_size, b.nrows, uint16_t(b.row));
            ++in_flight;
        }
    }

    // Epilogue: the last writebacks.
    if (kp.misuse != proto::HTP_TEST_STREAM_SKIP_DRAIN) {
        for (uint32_t j = 0; j < primed; ++j) {
            dma_queue_pop(q);
        }
    }
}

// F32, nb0 = 4, rows within their stride and slices within theirs (no two rows overlap), inside
// the tensor's bytes.
bool valid_stream_tensor(const htp_tensor * t, uint32_t row_size) {
    return t->type == HTP_TYPE_F32 && t->nb[0] == 4 && t->nb[1] >= row_size &&
           t->nb[2] >= uint64_t(t->ne[1]) * t->nb[1] && t->nb[3] >= uint64_t(t->ne[2]) * t->nb[2] &&
           htp_tensor_extent(t, 4) <= t->size;
}

bool valid_stream_op(const htp_op_context * octx, const htp_test_stream_kparams & kp) {
    const htp_tensor * src = octx->src[0];
    const htp_tensor * dst = octx->dst[0];
    if (src == nullptr || dst == nullptr || src->ne[0] > UINT32_MAX / 4) {
        return false;
    }
    for (int d = 0; d < 4; ++d) {
        if (src->ne[d] != dst->ne[d]) {
            return false;
        }
    }
    const uint32_t row_size = src->ne[0] * 4;
    return valid_stream_tensor(src, row_size) && valid_stream_tensor(dst, row_size) && kp.n_threads >= 1 &&
           kp.n_threads <= octx->n_threads && kp.n_slots >= 2 && kp.n_slots <= STREAM_MAX_SLOTS &&
           kp.block_rows >= 1 && kp.vtcm_row_stride >= row_size && kp.vtcm_row_stride % 128 == 0 &&
           same_fastdiv(kp.div_ne1, src->ne[1]) && same_fastdiv(kp.div_ne2, src->ne[2]) &&
           kp.misuse <= proto::HTP_TEST_STREAM_SKIP_DRAIN;
}

} // namespace

uint32_t op_test_stream(htp_op_context * octx) {
    stream_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    if (!valid_stream_op(octx, job.kp)) {
        return proto::HTP_STATUS_INVAL_PARAMS;
    }
    job.octx            = octx;
    job.src             = octx->src[0];
    job.dst             = octx->dst[0];
    job.row_size        = job.src->ne[0] * 4;
    // Rows fit in 32 bits: each takes at least 4 of the tensor's (window-bounded) bytes.
    job.total_rows      = uint32_t(htp_tensor_nrows(job.src));
    job.rows_per_thread = (job.total_rows + job.kp.n_threads - 1) / job.kp.n_threads;

    const uint64_t slot_bytes = uint64_t(job.kp.block_rows) * job.kp.vtcm_row_stride;
    vtcm_arena     vtcm(octx->vtcm_base, octx->vtcm_size);
    job.vtcm_src = vtcm.take(slot_bytes, job.kp.n_threads * job.kp.n_slots);
    job.vtcm_dst = vtcm.take(slot_bytes, job.kp.n_threads * job.kp.n_slots);
    if (!vtcm.ok()) {
        return proto::HTP_STATUS_VTCM_TOO_SMALL;
    }
    job.slot_bytes = uint32_t(slot_bytes);

    work_queue_run(octx->work, stream_thread, &job, job.kp.n_threads);
    return proto::HTP_STATUS_OK;
}

uint32_t op_test_fault(htp_op_context * octx) {
    const volatile uint8_t * p = octx->plat->window_base + uint32_t(octx->op->params[0]);
    (void) *p;
    return proto::HTP_STATUS_OK;
}

uint32_t op_test_hang(htp_op_context * octx) {
    // Sleeps rather than spins: the session's deadline, not a busy core, is what is under test.
    const uint32_t never = 0;
    for (;;) {
        octx->plat->wait_on(octx->plat->ctx, &never, 0);
    }
}

uint32_t op_test_crash(htp_op_context *) { __builtin_trap(); }

} // namespace hexnpu::htp
