// CONCAT, REPEAT and ROLL (proto/htp-layout.h): each thread streams its dst rows, one per block; the
// row's pieces come from a and b by DMA into slot 0 (CONCAT along dim 0: two transfers side by side;
// REPEAT: one transfer reading the source row once per repeat, or a gather per repeat; ROLL: the
// rotated row's two pieces), HVX copies the slot to slot 1, which goes back to the dst row.
#include "eltwise-rows.h"
#include "htp-tensor.h"
#include "ops.h"
#include "row-walk.h"
#include "stream-dst-rows.h"
#include "proto/htp-layout.h"
#include "proto/htp-opcodes.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::htp_layout_kparams;
using proto::htp_tensor;

constexpr uint32_t LAYOUT_STREAMS = 2;  // the row's pieces, the row to write back

struct layout_job {
    const htp_op_context * octx;
    htp_layout_kparams     kp;
    bool                   concat;
    const htp_tensor *     a;
    const htp_tensor *     b;  // CONCAT's second source
    const htp_tensor *     dst;
    eltwise_rows           rows_plan;
};

// Source t's row (i1, i2, i3) into VTCM at `to`: one transfer of its bytes, or, when its elements
// lie apart, one 2-D transfer gathering them.
void push_source_row(const layout_job & job, dma_queue * q, dma_addr_t to, const htp_tensor * t, uint32_t i1,
                     uint32_t i2, uint32_t i3, uint16_t info) {
    const uint32_t   e    = job.kp.elem;
    const dma_addr_t from = dma_addr_at(htp_tensor_dma_addr(job.octx->plat, t), row_offset(t, i1, i2, i3));
    if (t->nb[0] == e) {
        dma_queue_push_ddr_to_vtcm(q, to, from, t->ne[0] * e, t->ne[0] * e, t->ne[0] * e, 1, info);
    } else {
        dma_queue_push_ddr_to_vtcm(q, to, from, e, t->nb[0], e, t->ne[0], info);
    }
}

// Pushes the kp.n_inputs transfers of dst row c into slot.
void push_pieces(const layout_job & job, dma_queue * q, uint8_t * slot, const row_cursor & c) {
    const htp_layout_kparams & kp = job.kp;
    const dma_addr_t           to = dma_addr_of(slot);
    if (job.concat) {
        const htp_tensor * a = job.a;
        if (kp.dim == 0) {
            push_source_row(job, q, to, a, c.i1, c.i2, c.i3, trace_info(c.row));
            push_source_row(job, q, dma_addr_at(to, a->ne[0] * kp.elem), job.b, c.i1, c.i2, c.i3, trace_info(c.row));
            return;
        }
        uint32_t i[4] = {0, c.i1, c.i2, c.i3};
        const htp_tensor * src = a;
        if (i[kp.dim] >= a->ne[kp.dim]) {
            i[kp.dim] -= a->ne[kp.dim];
            src = job.b;
        }
        push_source_row(job, q, to, src, i[1], i[2], i[3], trace_info(c.row));
        return;
    }
    const htp_tensor * a      = job.a;
    const dma_addr_t   from   = dma_addr_at(htp_tensor_dma_addr(job.octx->plat, a),
                                            row_offset(a, proto::fastmodulo(c.i1, kp.div_src1),
                                                       proto::fastmodulo(c.i2, kp.div_src2), proto::fastmodulo(c.i3, kp.div_src3)));
    const uint32_t     bytes  = a->ne[0] * kp.elem;
    if (!kp.gather) {  // the row once per repeat: a source stride of 0
        dma_queue_push_ddr_to_vtcm(q, to, from, bytes, 0, bytes, kp.repeats, trace_info(c.row));
        return;
    }
    for (uint32_t r = 0; r < kp.n_inputs; ++r) {
        dma_queue_push_ddr_to_vtcm(q, dma_addr_at(to, r * bytes), from, kp.elem, a->nb[0], kp.elem, a->ne[0],
                                   trace_info(c.row));
    }
}

void copy_slot(HVX_Vector * d, const HVX_Vector * s, uint32_t n_vectors, const row_cursor &) {
    for (uint32_t v = 0; v < n_vectors; ++v) {
        d[v] = s[v];
    }
}

void layout_thread(uint32_t, uint32_t i, void * data) {
    const layout_job & job = *static_cast<const layout_job *>(data);
    stream_dst_rows(
        job, i, job.kp.n_inputs, [&](dma_queue * q, uint8_t * slot, const row_cursor & b) { push_pieces(job, q, slot, b); },
        copy_slot);
}

struct roll_job {
    const htp_op_context *   octx;
    proto::htp_roll_kparams  kp;
    const htp_tensor *       a;
    const htp_tensor *       dst;
    eltwise_rows             rows_plan;

    uint32_t n_inputs() const { return kp.shift[0] != 0 ? 2 : 1; }
};

// i - shift modulo ne, for i and shift in [0, ne).
inline uint32_t unshift(uint32_t i, uint32_t shift, uint32_t ne) { return i >= shift ? i - shift : i + ne - shift; }

// dst row c = a's row c - shift: its last shift[0] elements first, then the rest.
void push_rolled(const roll_job & job, dma_queue * q, uint8_t * slot, const row_cursor & c) {
    const proto::htp_roll_kparams & kp   = job.kp;
    const htp_tensor *              a    = job.a;
    const dma_addr_t                from = dma_addr_at(
        htp_tensor_dma_addr(job.octx->plat, a),
        row_offset(a, unshift(c.i1, kp.shift[1], a->ne[1]), unshift(c.i2, kp.shift[2], a->ne[2]),
                   unshift(c.i3, kp.shift[3], a->ne[3])));
    const uint32_t tail = kp.shift[0] * kp.elem;  // bytes that wrap to the front
    const uint32_t head = a->ne[0] * kp.elem - tail;
    if (tail != 0) {
        dma_queue_push_ddr_to_vtcm(q, dma_addr_of(slot), dma_addr_at(from, head), tail, tail, tail, 1, trace_info(c.row));
    }
    dma_queue_push_ddr_to_vtcm(q, dma_addr_at(dma_addr_of(slot), tail), from, head, head, head, 1, trace_info(c.row));
}

void roll_thread(uint32_t, uint32_t i, void * data) {
    const roll_job & job = *static_cast<const roll_job *>(data);
    stream_dst_rows(
        job, i, job.n_inputs(), [&](dma_queue * q, uint8_t * slot, const row_cursor & b) { push_rolled(job, q, slot, b); },
        copy_slot);
}

} // namespace

bool guard_layout(const htp_op_context * octx) {
    htp_layout_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * a      = octx->src[0];
    const htp_tensor * b      = octx->src[1];
    const htp_tensor * dst    = octx->dst[0];
    const bool         concat = octx->op->opcode == proto::HTP_OP_CONCAT;
    bool               ok;
    if (concat) {
        ok = proto::htp_concat_layout_valid(*a, *b, *dst, kp.dim) && kp.n_inputs == (kp.dim == 0 ? 2u : 1u) &&
             kp.gather == 0;
    } else {
        // The repeat factors are the host's (fastmodulo); the divisors and the gather must be a's.
        const uint32_t elem = proto::htp_layout_elem_size(dst->type);
        ok = a->type == dst->type && elem != 0 && proto::htp_elems_inside(*a, elem) && proto::htp_rows_apart(*dst, elem) &&
             kp.div_src1.d == a->ne[1] && kp.div_src2.d == a->ne[2] && kp.div_src3.d == a->ne[3] &&
             kp.gather == (a->nb[0] != elem) && uint64_t(kp.repeats) * a->ne[0] == dst->ne[0] &&
             kp.n_inputs == (kp.gather ? kp.repeats : 1u) && kp.n_inputs <= proto::HTP_LAYOUT_MAX_INPUTS;
    }
    return ok && kp.elem == proto::htp_layout_elem_size(dst->type) &&
           eltwise_pipeline_fits(octx, kp.pipe, LAYOUT_STREAMS, proto::HTP_ELTWISE_MAX_SLOTS) && kp.pipe.block_rows == 1 &&
           eltwise_walk_fits(dst, kp.div_ne1, kp.div_ne2) && kp.pipe.row_size == dst->ne[0] * kp.elem;
}

bool guard_roll(const htp_op_context * octx) {
    proto::htp_roll_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * a   = octx->src[0];
    const htp_tensor * dst = octx->dst[0];
    return proto::htp_roll_layout_valid(*a, *dst) && kp.elem == proto::htp_layout_elem_size(dst->type) &&
           kp.shift[0] < dst->ne[0] && kp.shift[1] < dst->ne[1] && kp.shift[2] < dst->ne[2] && kp.shift[3] < dst->ne[3] &&
           eltwise_pipeline_fits(octx, kp.pipe, LAYOUT_STREAMS, proto::HTP_ELTWISE_MAX_SLOTS) && kp.pipe.block_rows == 1 &&
           eltwise_walk_fits(dst, kp.div_ne1, kp.div_ne2) && kp.pipe.row_size == dst->ne[0] * kp.elem;
}

uint32_t op_roll(htp_op_context * octx) {
    roll_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx = octx;
    job.a    = octx->src[0];
    job.dst  = octx->dst[0];
    return run_eltwise_job(octx, job, LAYOUT_STREAMS, roll_thread);
}

uint32_t op_layout(htp_op_context * octx) {
    layout_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx   = octx;
    job.concat = octx->op->opcode == proto::HTP_OP_CONCAT;
    job.a      = octx->src[0];
    job.b      = octx->src[1];
    job.dst    = octx->dst[0];
    return run_eltwise_job(octx, job, LAYOUT_STREAMS, layout_thread);
}

} // namespace hexnpu::htp
