// ADD, SUB, MUL, DIV on F32: dst = src0 op src1, src1 repeated over dims 1-3 (proto/htp-kparams.h).
// Each thread streams its rows DDR -> DMA -> VTCM -> HVX -> VTCM -> DMA -> DDR through n_slots
// slots per stream: a block's src0 and src1 rows come in while earlier blocks compute and go out.
#include "dma-queue.h"
#include "eltwise-rows.h"
#include "htp-tensor.h"
#include "hvx-arith.h"
#include "hvx-div.h"
#include "ops.h"
#include "row-walk.h"
#include "stream-pipeline.h"
#include "proto/htp-kparams.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-status.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::htp_binary_kparams;
using proto::htp_tensor;

constexpr uint32_t BINARY_STREAMS = 3;  // src0, src1, dst

// Rows of `n_vectors` vectors each: d = a op b, b's rows b_step vectors apart (0: one src1 row
// for the whole block).
using binary_rows_fn = void (*)(HVX_Vector * d, const HVX_Vector * a, const HVX_Vector * b, uint32_t nrows,
                                uint32_t n_vectors, uint32_t b_step);

template <HVX_Vector (*op)(HVX_Vector, HVX_Vector)>
void binary_rows(HVX_Vector * d, const HVX_Vector * a, const HVX_Vector * b, uint32_t nrows, uint32_t n_vectors,
                 uint32_t b_step) {
    for (uint32_t r = 0; r < nrows; ++r) {
        for (uint32_t j = 0; j < n_vectors; ++j) {
            d[j] = op(a[j], b[j]);
        }
        d += n_vectors;
        a += n_vectors;
        b += b_step;
    }
}

binary_rows_fn rows_fn_of(uint32_t opcode) {
    switch (opcode) {
        case proto::HTP_OP_ADD: return binary_rows<hvx_sf_add>;
        case proto::HTP_OP_SUB: return binary_rows<hvx_sf_sub>;
        case proto::HTP_OP_MUL: return binary_rows<hvx_sf_mul>;
        default: return binary_rows<hvx_sf_div>;
    }
}

// A flat dst row, its coordinates, and src1's (i11, i12, i13) = (i1 % ne11, i2 % ne12, i3 % ne13).
struct bcast_cursor {
    uint32_t row, i1, i2, i3;
    uint32_t i11, i12, i13;
};

// One DMA block: nrows dst rows from row on, all in one slice and one repetition of src1's rows.
struct binary_block {
    uint32_t row;
    uint32_t nrows;
    uint32_t src0_offset;
    uint32_t src1_offset;
    uint32_t src1_rows;  // 1 when src1 has a single row per slice, else nrows
    uint32_t dst_offset;
};

struct binary_job {
    const htp_op_context * octx;
    htp_binary_kparams     kp;
    binary_rows_fn         rows;
    const htp_tensor *     src0;
    const htp_tensor *     src1;
    const htp_tensor *     dst;
    eltwise_rows           rows_plan;
};

bcast_cursor cursor_at(uint32_t row, const htp_binary_kparams & kp) {
    const uint32_t i23 = proto::fastdiv(row, kp.div_ne1);
    const uint32_t i1  = row - i23 * kp.div_ne1.d;
    const uint32_t i3  = proto::fastdiv(i23, kp.div_ne2);
    const uint32_t i2  = i23 - i3 * kp.div_ne2.d;
    return bcast_cursor{row,
                      i1,
                      i2,
                      i3,
                      proto::fastmodulo(i1, kp.div_ne11),
                      proto::fastmodulo(i2, kp.div_ne12),
                      proto::fastmodulo(i3, kp.div_ne13)};
}

// The next block before row end, and the cursor moved past it.
binary_block take_block(bcast_cursor & c, uint32_t end, const binary_job & job) {
    const htp_binary_kparams & kp   = job.kp;
    const uint32_t             ne1  = kp.div_ne1.d;
    const uint32_t             ne11 = kp.div_ne11.d;
    uint32_t                   n    = kp.pipe.block_rows;
    n                               = n < ne1 - c.i1 ? n : ne1 - c.i1;
    n                               = n < end - c.row ? n : end - c.row;
    if (ne11 > 1) {
        n = n < ne11 - c.i11 ? n : ne11 - c.i11;
    }
    const binary_block b{c.row,
                         n,
                         row_offset(job.src0, c.i1, c.i2, c.i3),
                         row_offset(job.src1, c.i11, c.i12, c.i13),
                         ne11 > 1 ? n : 1,
                         row_offset(job.dst, c.i1, c.i2, c.i3)};
    c.row += n;
    c.i1 += n;
    if (ne11 > 1 && (c.i11 += n) == ne11) {
        c.i11 = 0;
    }
    // Each dst dim is a multiple of src1's, so src1's coordinates wrap no later than dst's.
    if (c.i1 == ne1) {
        c.i1 = 0;
        c.i12 = c.i12 + 1 == kp.div_ne12.d ? 0 : c.i12 + 1;
        if (++c.i2 == kp.div_ne2.d) {
            c.i2  = 0;
            c.i13 = c.i13 + 1 == kp.div_ne13.d ? 0 : c.i13 + 1;
            ++c.i3;
        }
    }
    return b;
}

void push_sources(dma_queue * q, uint8_t * s0, uint8_t * s1, dma_addr_t src0_base, dma_addr_t src1_base,
                  const binary_block & b, const binary_job & job) {
    const uint32_t stride = job.kp.pipe.vtcm_row_stride;
    const uint32_t size   = job.kp.pipe.row_size;
    dma_queue_push_ddr_to_vtcm(q, dma_addr_of(s0), dma_addr_at(src0_base, b.src0_offset), stride, job.src0->nb[1],
                               size, b.nrows, uint16_t(b.row));
    dma_queue_push_ddr_to_vtcm(q, dma_addr_of(s1), dma_addr_at(src1_base, b.src1_offset), stride, job.src1->nb[1],
                               size, b.src1_rows, uint16_t(b.row));
}

void binary_thread(uint32_t, uint32_t i, void * data) {
    const binary_job &                  job  = *static_cast<const binary_job *>(data);
    const proto::htp_eltwise_pipeline & pipe = job.kp.pipe;
    uint32_t                            ir0, ir1;
    if (!job.rows_plan.thread_range(i, &ir0, &ir1)) {
        return;
    }
    dma_queue *      q          = &job.octx->dma[i];
    const uint32_t   area       = pipe.n_slots * job.rows_plan.slot_bytes;
    uint8_t *        src0_slots = job.rows_plan.vtcm + size_t(i) * BINARY_STREAMS * area;
    uint8_t *        src1_slots = src0_slots + area;
    uint8_t *        dst_slots  = src1_slots + area;
    const dma_addr_t src0_base  = htp_tensor_dma_addr(job.octx->plat, job.src0);
    const dma_addr_t src1_base  = htp_tensor_dma_addr(job.octx->plat, job.src1);
    const dma_addr_t dst_base   = htp_tensor_dma_addr(job.octx->plat, job.dst);
    const uint32_t   n_vectors  = pipe.vtcm_row_stride / 128;
    auto slot = [&](uint8_t * slots, uint32_t k) { return slots + size_t(k) * job.rows_plan.slot_bytes; };

    bcast_cursor next = cursor_at(ir0, job.kp);
    stream_blocks<proto::HTP_ELTWISE_MAX_SLOTS, binary_block>(
        q, &job.octx->trace[i], pipe.n_slots, 2,
        [&](binary_block & b) {
            if (next.row >= ir1) {
                return false;
            }
            b = take_block(next, ir1, job);
            return true;
        },
        [&](uint32_t k, const binary_block & b) {
            uint8_t * d = slot(dst_slots, k);
            dma_queue_push(q, dma_ptr_pair{dma_addr_of(d), dma_addr_of(d)}, 0, 0, 0, 0, uint16_t(b.row));
        },
        [&](uint32_t k, const binary_block & b) {
            push_sources(q, slot(src0_slots, k), slot(src1_slots, k), src0_base, src1_base, b, job);
        },
        [&](uint32_t k, const binary_block & b) {
            job.rows(reinterpret_cast<HVX_Vector *>(slot(dst_slots, k)),
                     reinterpret_cast<const HVX_Vector *>(slot(src0_slots, k)),
                     reinterpret_cast<const HVX_Vector *>(slot(src1_slots, k)), b.nrows, n_vectors,
                     b.src1_rows > 1 ? n_vectors : 0);
        },
        [&](uint32_t k, const binary_block & b) {
            dma_queue_push_vtcm_to_ddr(q, dma_addr_at(dst_base, b.dst_offset), dma_addr_of(slot(dst_slots, k)),
                                       job.dst->nb[1], pipe.vtcm_row_stride, pipe.row_size, b.nrows, uint16_t(b.row));
        });
}

bool valid_binary_op(const htp_op_context * octx, const htp_binary_kparams & kp) {
    const htp_tensor * src0 = octx->src[0];
    const htp_tensor * src1 = octx->src[1];
    const htp_tensor * dst  = octx->dst[0];
    if (src0 == nullptr || src1 == nullptr || dst == nullptr || !proto::htp_binary_shapes_supported(*src0, *src1, *dst)) {
        return false;
    }
    const proto::htp_eltwise_pipeline & p = kp.pipe;
    return p.n_threads >= 1 && p.n_threads <= octx->n_threads && p.n_slots >= 2 &&
           p.n_slots <= proto::HTP_ELTWISE_MAX_SLOTS && p.block_rows >= 1 && p.row_size == dst->ne[0] * 4 &&
           p.vtcm_row_stride == proto::htp_vtcm_row_stride(p.row_size) &&
           p.vtcm_size == proto::htp_eltwise_vtcm_size(p, BINARY_STREAMS) && same_fastdiv(kp.div_ne1, dst->ne[1]) &&
           same_fastdiv(kp.div_ne2, dst->ne[2]) && same_fastdiv(kp.div_ne11, src1->ne[1]) &&
           same_fastdiv(kp.div_ne12, src1->ne[2]) && same_fastdiv(kp.div_ne13, src1->ne[3]);
}

} // namespace

uint32_t op_binary(htp_op_context * octx) {
    binary_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    if (!valid_binary_op(octx, job.kp)) {
        return proto::HTP_STATUS_INVAL_PARAMS;
    }
    job.octx = octx;
    job.rows = rows_fn_of(octx->op->opcode);
    job.src0 = octx->src[0];
    job.src1 = octx->src[1];
    job.dst  = octx->dst[0];

    const uint32_t status = plan_eltwise_rows(octx, job.dst, job.kp.pipe, &job.rows_plan);
    if (status != proto::HTP_STATUS_OK || job.rows_plan.nrows == 0) {
        return status;
    }

    work_queue_run(octx->work, binary_thread, &job, job.kp.pipe.n_threads);
    return proto::HTP_STATUS_OK;
}

} // namespace hexnpu::htp
