// The row ops (proto/htp-rows.h). SET_ROWS (htp_set_rows_kparams), the KV cache's writes: each
// thread streams its source rows DDR -> DMA -> VTCM in blocks that never cross an (i2, i3) slice,
// converts them on HVX (F32 -> F16/BF16, a copy for an F32 destination, GGML's Q8_0, Q4_0, Q4_1,
// Q5_0, Q5_1 and IQ4_NL quantizers) into the block's output slot, and sends every row back by its own DMA
// (block types: one per block part) to the destination row its id names (a scattered writeback:
// the pipeline pops as many entries as were pushed); CPY_Q is the same without ids. GET_ROWS
// (htp_get_rows_kparams) runs the other way: one dst row per block, gathered by DMA from the
// source row its id names, widened from F16 or copied, written back in order. Ids are small DDR
// tables read with scalar loads.
#include "hvx-quant-rows.h"
#include "ops.h"
#include "stream-dst-rows.h"
#include "stream-rows.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-rows.h"
#include "proto/htp-status.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::htp_set_rows_kparams;
using proto::htp_tensor;

constexpr uint32_t SET_ROWS_STREAMS = 2;  // src0, converted rows
constexpr uint32_t GET_ROWS_STREAMS = 2;  // gathered rows, converted rows

// A block: nrows source rows from flat row `row` on, rows i1 .. i1 + nrows of slice (i2, i3).
struct set_rows_block {
    uint32_t row;
    uint32_t nrows;
    uint32_t i1, i2, i3;
};

struct set_rows_job {
    const htp_op_context * octx;
    htp_set_rows_kparams   kp;
    const htp_tensor *     src;
    const htp_tensor *     ids;
    const htp_tensor *     dst;
    eltwise_rows           rows_plan;
    volatile uint32_t      bad_id;  // set by any thread that met an id outside [0, dst.ne1)
};

// Row i1's id for slice (i2, i3): ids[i1, i2 % ids.ne1, i3 % ids.ne2]; false when outside [0, ne1).
bool destination_row(const set_rows_job & job, const uint8_t * ids, uint32_t i1, uint32_t j2, uint32_t j3,
                     uint32_t * out) {
    return read_row_id(ids + i1 * job.ids->nb[0] + j2 * job.ids->nb[1] + j3 * job.ids->nb[2], job.kp.ids_i64 != 0,
                       job.dst->ne[1], out);
}

// Block-type rows: each F32 source row (stride bytes apart in s) into its slot in d
// (hvx-quant-rows.h, layout: proto/htp-rows.h).
template <class Q>
__attribute__((noinline)) void quantize_rows_as(uint8_t * d, uint8_t * s, uint32_t nrows, uint32_t stride, uint32_t ne0) {
    for (uint32_t r = 0; r < nrows; ++r, d += stride, s += stride) {
        const auto at = [&](uint32_t offset) { return reinterpret_cast<HVX_Vector *>(d + offset); };
        hvx_quantize_block_row<Q>(reinterpret_cast<const HVX_Vector *>(s), ne0 / 32, at(0),
                                  at(proto::htp_qblock_scales_offset(ne0)), at(proto::htp_qblock_mins_offset(ne0)),
                                  at(proto::htp_qblock_qh_offset(ne0)),
                                  reinterpret_cast<HVX_Vector *>(s + proto::htp_qblock_ids_offset(ne0)));
    }
}

void quantize_block_rows(uint32_t type, uint8_t * d, uint8_t * s, uint32_t nrows, uint32_t stride, uint32_t ne0) {
    switch (type) {
        case proto::HTP_TYPE_Q4_0: return quantize_rows_as<q4_0_rows>(d, s, nrows, stride, ne0);
        case proto::HTP_TYPE_Q4_1: return quantize_rows_as<q4_1_rows>(d, s, nrows, stride, ne0);
        case proto::HTP_TYPE_Q5_0: return quantize_rows_as<q5_0_rows>(d, s, nrows, stride, ne0);
        case proto::HTP_TYPE_Q5_1: return quantize_rows_as<q5_1_rows>(d, s, nrows, stride, ne0);
        case proto::HTP_TYPE_IQ4_NL: return quantize_rows_as<iq4_nl_rows>(d, s, nrows, stride, ne0);
        default: return quantize_rows_as<q8_0_rows>(d, s, nrows, stride, ne0);
    }
}

// One block-type row's writebacks from its converted slot: each part of every block (d, the codes,
// m and qh where the type has them) by one 2-D DMA into the row's blocks.
uint32_t push_block_row(dma_queue * q, dma_addr_t row, const uint8_t * from, uint32_t type, uint32_t ne0, uint16_t info) {
    const proto::htp_qblock_layout l        = proto::htp_qblock_layout_of(type);
    const uint32_t                 n_blocks = ne0 / 32;
    const auto part = [&](uint32_t at, uint32_t offset, uint32_t bytes) {
        dma_queue_push_vtcm_to_ddr(q, dma_addr_at(row, at), dma_addr_of(from + offset), l.bytes, bytes, bytes, n_blocks,
                                   info);
    };
    part(l.codes_at, 0, l.codes);
    part(0, proto::htp_qblock_scales_offset(ne0), 2);
    if (l.min_at != 0) {
        part(l.min_at, proto::htp_qblock_mins_offset(ne0), 2);
    }
    if (l.qh_at != 0) {
        part(l.qh_at, proto::htp_qblock_qh_offset(ne0), 4);
    }
    return proto::htp_set_rows_writebacks(type);
}

void set_rows_thread(uint32_t, uint32_t i, void * data) {
    set_rows_job &               job  = *static_cast<set_rows_job *>(data);
    const htp_set_rows_kparams & kp   = job.kp;
    const eltwise_rows &         plan = job.rows_plan;
    uint32_t                     ir0, ir1;
    if (!plan.thread_range(i, &ir0, &ir1)) {
        return;
    }
    dma_queue *      q        = &job.octx->dma[i];
    const dma_addr_t src_base = htp_tensor_dma_addr(job.octx->plat, job.src);
    const dma_addr_t dst_base = htp_tensor_dma_addr(job.octx->plat, job.dst);
    const uint8_t *  ids      = kp.identity ? nullptr : htp_tensor_ptr(job.octx->plat, job.ids);
    const uint32_t   n_codes  = proto::htp_qblock_codes(kp.dst_type);  // 0: an element type
    const uint32_t   stride   = kp.pipe.vtcm_row_stride;

    row_cursor next = row_cursor_at(ir0, kp.div_ne1, kp.div_ne2);
    stream_blocks<proto::HTP_ELTWISE_MAX_SLOTS, set_rows_block>(
        q, &job.octx->trace[i], kp.pipe.n_slots, 1,
        [&](set_rows_block & b) {
            if (next.row >= ir1) {
                return false;
            }
            const uint32_t n = block_rows_at(next, kp.pipe.block_rows, ir1, kp.div_ne1.d);
            b                = set_rows_block{next.row, n, next.i1, next.i2, next.i3};
            row_cursor_advance(next, n, kp.div_ne1.d, kp.div_ne2.d);
            return true;
        },
        [&](uint32_t k, const set_rows_block & b) { dma_queue_push_token(q, plan.slot(i, 1, k), trace_info(b.row)); },
        [&](uint32_t k, const set_rows_block & b) {
            dma_queue_push_ddr_to_vtcm(q, dma_addr_of(plan.slot(i, 0, k)),
                                       dma_addr_at(src_base, row_offset(job.src, b.i1, b.i2, b.i3)), stride,
                                       job.src->nb[1], kp.pipe.row_size, b.nrows, trace_info(b.row));
        },
        [&](uint32_t k, const set_rows_block & b) {
            if (n_codes != 0) {
                quantize_block_rows(kp.dst_type, plan.slot(i, 1, k), plan.slot(i, 0, k), b.nrows, stride, job.src->ne[0]);
            } else {
                rows_from_sf(reinterpret_cast<HVX_Vector *>(plan.slot(i, 1, k)),
                             reinterpret_cast<const HVX_Vector *>(plan.slot(i, 0, k)), b.nrows, stride / 128,
                             kp.dst_type);
            }
        },
        [&](uint32_t k, const set_rows_block & b) {
            const uint32_t j2       = proto::fastmodulo(b.i2, kp.div_ids1);
            const uint32_t j3       = proto::fastmodulo(b.i3, kp.div_ids2);
            const uint32_t slice    = b.i2 * job.dst->nb[2] + b.i3 * job.dst->nb[3];
            uint32_t       pushed   = 0;
            for (uint32_t r = 0; r < b.nrows; ++r) {
                uint32_t id = b.i1 + r;
                if (!kp.identity && !destination_row(job, ids, b.i1 + r, j2, j3, &id)) {
                    job.bad_id = 1;
                    continue;
                }
                const dma_addr_t row  = dma_addr_at(dst_base, slice + id * job.dst->nb[1]);
                uint8_t *        from = plan.slot(i, 1, k) + r * stride;
                if (n_codes != 0) {
                    pushed += push_block_row(q, row, from, kp.dst_type, job.src->ne[0], trace_info(b.row + r));
                } else {
                    dma_queue_push_vtcm_to_ddr(q, row, dma_addr_of(from), kp.dst_row_size, stride, kp.dst_row_size, 1,
                                               trace_info(b.row + r));
                    ++pushed;
                }
            }
            return pushed;
        });
}

// ---- GET_ROWS

struct get_rows_job {
    const htp_op_context * octx;
    proto::htp_get_rows_kparams kp;
    const htp_tensor *     src;
    const htp_tensor *     ids;
    const htp_tensor *     dst;
    eltwise_rows           rows_plan;
    volatile uint32_t      bad_id;
};

// One dst row per block (GET_ROWS, PAD): source_of(b, &offset) names the source row's byte offset
// in src (false: none, a token instead), whose src_row_size bytes land in slot 0.
template <class Job, class Source, class Compute>
void gather_dst_rows(const Job & job, uint32_t i, uint32_t src_row_size, Source source_of, Compute compute) {
    const dma_addr_t src_base = htp_tensor_dma_addr(job.octx->plat, job.src);
    stream_dst_rows(
        job, i, 1,
        [&](dma_queue * q, uint8_t * slot, const row_cursor & b) {
            uint32_t offset;
            if (!source_of(b, &offset)) {
                dma_queue_push_token(q, slot, trace_info(b.row));
                return;
            }
            dma_queue_push_ddr_to_vtcm(q, dma_addr_of(slot), dma_addr_at(src_base, offset), job.kp.pipe.vtcm_row_stride,
                                       src_row_size, src_row_size, 1, trace_info(b.row));
        },
        compute);
}

void get_rows_thread(uint32_t, uint32_t i, void * data) {
    get_rows_job &                      job = *static_cast<get_rows_job *>(data);
    const proto::htp_get_rows_kparams & kp  = job.kp;
    const uint8_t *                     ids = htp_tensor_ptr(job.octx->plat, job.ids);
    gather_dst_rows(
        job, i, kp.src_row_size,
        [&](const row_cursor & b, uint32_t * offset) {
            uint32_t id;
            if (!read_row_id(ids + b.i1 * job.ids->nb[0] + b.i2 * job.ids->nb[1] + b.i3 * job.ids->nb[2],
                             kp.ids_i64 != 0, job.src->ne[1], &id)) {
                job.bad_id = 1;
                return false;
            }
            *offset = row_offset(job.src, id, b.i2, b.i3);
            return true;
        },
        [&](HVX_Vector * d, const HVX_Vector * s, uint32_t n_vectors, const row_cursor &) {
            rows_to_sf(d, s, 1, n_vectors, kp.src_type);
        });
}

// ---- PAD: GET_ROWS's pipeline with the source row at dst's own coordinates, or none.

struct pad_job {
    const htp_op_context *  octx;
    proto::htp_pad_kparams  kp;
    const htp_tensor *      src;
    const htp_tensor *      dst;
    eltwise_rows            rows_plan;
};

// The row's first `bytes` bytes from s (none: bytes 0), zeros after them, into d.
__attribute__((noinline)) void pad_row(HVX_Vector * d, const HVX_Vector * s, uint32_t bytes, uint32_t n_vectors) {
    const uint32_t full = bytes / 128, tail = bytes % 128;
    for (uint32_t v = 0; v < n_vectors; ++v) {
        d[v] = v < full ? s[v] : v == full && tail != 0 ? Q6_V_vmux_QVV(Q6_Q_vsetq_R(int32_t(tail)), s[v], Q6_V_vzero())
                                                         : Q6_V_vzero();
    }
}

void pad_thread(uint32_t, uint32_t i, void * data) {
    const pad_job &                job = *static_cast<const pad_job *>(data);
    const proto::htp_pad_kparams & kp  = job.kp;
    auto inside = [&](const row_cursor & b) { return b.i1 < kp.src_ne1 && b.i2 < kp.src_ne2 && b.i3 < kp.src_ne3; };
    gather_dst_rows(
        job, i, kp.src_row_size,
        [&](const row_cursor & b, uint32_t * offset) {
            if (!inside(b)) {
                return false;  // all zeros: nothing to fetch
            }
            *offset = row_offset(job.src, b.i1, b.i2, b.i3);
            return true;
        },
        [&](HVX_Vector * d, const HVX_Vector * s, uint32_t n_vectors, const row_cursor & b) {
            pad_row(d, s, inside(b) ? kp.src_row_size : 0, n_vectors);
        });
}

} // namespace

bool guard_pad(const htp_op_context * octx) {
    proto::htp_pad_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * src = octx->src[0];
    const htp_tensor * dst = octx->dst[0];
    return eltwise_pipeline_fits(octx, kp.pipe, 2, proto::HTP_ELTWISE_MAX_SLOTS) && kp.pipe.block_rows == 1 &&
           eltwise_walk_fits(dst, kp.div_ne1, kp.div_ne2) && kp.pipe.row_size == dst->ne[0] * 4 &&
           kp.src_ne1 == src->ne[1] && kp.src_ne2 == src->ne[2] && kp.src_ne3 == src->ne[3] &&
           kp.src_row_size == src->ne[0] * 4 && proto::htp_pad_layout_valid(*src, *dst);
}

uint32_t op_pad(htp_op_context * octx) {
    pad_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx = octx;
    job.src  = octx->src[0];
    job.dst  = octx->dst[0];
    return run_eltwise_job(octx, job, 2, pad_thread);
}

bool guard_get_rows(const htp_op_context * octx) {
    proto::htp_get_rows_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * src = octx->src[0];
    const htp_tensor * ids = octx->src[1];
    const htp_tensor * dst = octx->dst[0];
    return eltwise_pipeline_fits(octx, kp.pipe, GET_ROWS_STREAMS, proto::HTP_ELTWISE_MAX_SLOTS) &&
           kp.pipe.block_rows == 1 && eltwise_walk_fits(dst, kp.div_ne1, kp.div_ne2) && kp.pipe.row_size == dst->ne[0] * 4 &&
           kp.src_type == src->type && kp.ids_i64 == (ids->type == HTP_TYPE_I64) &&
           kp.src_row_size == dst->ne[0] * (src->type == HTP_TYPE_I32 ? 4 : proto::htp_cpy_elem_size(src->type)) &&
           proto::htp_get_rows_layout_valid(*src, *ids, *dst);
}

uint32_t op_get_rows(htp_op_context * octx) {
    get_rows_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx = octx;
    job.src  = octx->src[0];
    job.ids  = octx->src[1];
    job.dst  = octx->dst[0];
    const uint32_t status = run_eltwise_job(octx, job, GET_ROWS_STREAMS, get_rows_thread);
    return status == proto::HTP_STATUS_OK && job.bad_id ? proto::HTP_STATUS_INVAL_PARAMS : status;
}

bool guard_set_rows(const htp_op_context * octx) {
    htp_set_rows_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * src = octx->src[0];
    const htp_tensor * ids = octx->src[1];
    const htp_tensor * dst = octx->dst[0];
    const bool         cpy = octx->op->opcode == proto::HTP_OP_CPY_Q;
    const bool ids_ok = cpy ? kp.identity == 1 && ids == nullptr && kp.div_ids1.d == 1 && kp.div_ids2.d == 1 &&
                                  proto::htp_cpy_q_layout_valid(*src, *dst)
                            : kp.identity == 0 && kp.div_ids1.d == ids->ne[1] &&
                                  kp.div_ids2.d == ids->ne[2] && kp.ids_i64 == (ids->type == HTP_TYPE_I64) &&
                                  proto::htp_set_rows_layout_valid(*src, *ids, *dst);
    const uint32_t slot_row = proto::htp_qblock_codes(dst->type) != 0 ? proto::htp_qblock_slot_stride(src->ne[0])
                                                                   : proto::htp_vtcm_row_stride(src->ne[0] * 4);
    return eltwise_pipeline_fits(octx, kp.pipe, SET_ROWS_STREAMS, proto::HTP_ELTWISE_MAX_SLOTS) &&
           kp.pipe.block_rows * proto::htp_set_rows_writebacks(dst->type) <= proto::HTP_SET_ROWS_MAX_BLOCK_ROWS &&
           eltwise_walk_fits(src, kp.div_ne1, kp.div_ne2) && kp.pipe.row_size == src->ne[0] * 4 &&
           kp.pipe.vtcm_row_stride == slot_row && kp.dst_type == dst->type && ids_ok &&
           kp.dst_row_size == proto::htp_set_rows_dst_row_size(*dst);
}

uint32_t op_set_rows(htp_op_context * octx) {
    set_rows_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx = octx;
    job.src  = octx->src[0];
    job.ids  = octx->src[1];
    job.dst  = octx->dst[0];
    // The rows walked are the source's (plan_eltwise_rows counts its dst argument's rows).
    const uint32_t status = plan_eltwise_rows(octx, job.src, job.kp.pipe, SET_ROWS_STREAMS, &job.rows_plan);
    if (status != proto::HTP_STATUS_OK || job.rows_plan.nrows == 0) {
        return status;
    }
    work_queue_run(octx->work, set_rows_thread, &job, job.kp.pipe.n_threads);
    return job.bad_id ? proto::HTP_STATUS_INVAL_PARAMS : proto::HTP_STATUS_OK;
}

} // namespace hexnpu::htp
