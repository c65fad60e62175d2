// ADD, SUB, MUL, DIV on F32: dst = src0 op src1, src1 repeated over dims 1-3 (proto/htp-kparams.h);
// GEGLU and SWIGLU with a separate gate: dst = gelu(src0) * src1, silu(src0) * src1; SOFT_MAX with
// an F32 mask: dst = softmax(src0 * scale + src1) per row.
// Each thread streams its rows DDR -> DMA -> VTCM -> HVX -> VTCM -> DMA -> DDR through n_slots
// slots per stream: a block's src0 and src1 rows come in while earlier blocks compute and go out.
#include "dma-queue.h"
#include "eltwise-rows.h"
#include "htp-tensor.h"
#include "hvx-arith.h"
#include "hvx-div.h"
#include "hvx-exp.h"
#include "hvx-frexp.h"
#include "hvx-sigmoid.h"
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
                                uint32_t n_vectors, uint32_t b_step, const htp_binary_kparams & kp);

template <HVX_Vector (*op)(HVX_Vector, HVX_Vector)>
void binary_rows(HVX_Vector * d, const HVX_Vector * a, const HVX_Vector * b, uint32_t nrows, uint32_t n_vectors,
                 uint32_t b_step, const htp_binary_kparams &) {
    for (uint32_t r = 0; r < nrows; ++r) {
        for (uint32_t j = 0; j < n_vectors; ++j) {
            d[j] = op(a[j], b[j]);
        }
        d += n_vectors;
        a += n_vectors;
        b += b_step;
    }
}

// GGML's tanh GELU, 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), as the identical
// x sigmoid(2u), times the gate.
HVX_Vector geglu(HVX_Vector x, HVX_Vector g) { return hvx_sf_mul(hvx_sf_gelu(x), g); }
HVX_Vector swiglu(HVX_Vector x, HVX_Vector g) { return hvx_sf_mul(hvx_sf_silu(x), g); }

// fp32 bits as signed integers in the floats' order (negative values' magnitude bits flipped; its
// own inverse): maxima by integer max, no float compare or subtraction, infinities included.
HVX_Vector sf_order_key(HVX_Vector v) {
    return Q6_V_vxor_VV(v, Q6_V_vand_VV(Q6_Vw_vasr_VwR(v, 31), hvx_splat_w(0x7FFFFFFF)));
}

// Every lane: the largest of v's 32 keys.
HVX_Vector w_allmax(HVX_Vector v) {
    for (int32_t bytes = 64; bytes >= 4; bytes /= 2) {
        v = Q6_Vw_vmax_VwVw(v, Q6_V_vror_VR(v, bytes));
    }
    return v;
}

// GGML's soft_max: w = a * scale + mask, then e^(w - max w) / sum. The lanes past the row's
// row_size bytes are set to -inf (e^-inf = 0), so stale VTCM takes no part; -inf mask entries
// give 0. w goes to d first, then d is overwritten with the normalized values. Not inlined: the
// row loop's constants are reloaded around it anyway.
__attribute__((noinline)) void softmax_row(HVX_Vector * d, const HVX_Vector * a, const HVX_Vector * b,
                                           uint32_t n_vectors, const htp_binary_kparams & kp) {
    const HVX_Vector scale   = Q6_V_vsplat_R(int32_t(kp.scale));
    const HVX_Vector neg_inf = hvx_splat_w(int32_t(0xFF800000u));
    const uint32_t   full = kp.pipe.row_size / 128, tail = kp.pipe.row_size % 128;
    HVX_Vector       mx   = sf_order_key(neg_inf);
    for (uint32_t j = 0; j < n_vectors; ++j) {
        HVX_Vector w = hvx_sf_add(hvx_sf_mul(a[j], scale), b[j]);
        if (j >= full) {
            w = j == full && tail != 0 ? Q6_V_vmux_QVV(Q6_Q_vsetq_R(int32_t(tail)), w, neg_inf) : neg_inf;
        }
        d[j] = w;
        mx   = Q6_Vw_vmax_VwVw(mx, sf_order_key(w));
    }
    mx             = sf_order_key(w_allmax(mx));
    HVX_Vector sum = Q6_V_vzero();
    for (uint32_t j = 0; j < n_vectors; ++j) {
        HVX_Vector       k;
        const HVX_Vector p = hvx_sf_exp_parts(hvx_sf_sub(d[j], mx), &k);
        d[j]               = hvx_sf_ldexp(p, k);
        sum                = hvx_sf_add(sum, d[j]);
    }
    const HVX_Vector inv = hvx_sf_div(hvx_splat_sf(1.0f), hvx_sf_allsum(sum));
    for (uint32_t j = 0; j < n_vectors; ++j) {
        d[j] = hvx_sf_mul(d[j], inv);
    }
}

void softmax_rows(HVX_Vector * d, const HVX_Vector * a, const HVX_Vector * b, uint32_t nrows, uint32_t n_vectors,
                  uint32_t b_step, const htp_binary_kparams & kp) {
    for (uint32_t r = 0; r < nrows; ++r) {
        softmax_row(d, a, b, n_vectors, kp);
        d += n_vectors;
        a += n_vectors;
        b += b_step;
    }
}

binary_rows_fn rows_fn_of(uint32_t opcode) {
    switch (opcode) {
        case proto::HTP_OP_SOFT_MAX: return softmax_rows;
        case proto::HTP_OP_GEGLU: return binary_rows<geglu>;
        case proto::HTP_OP_SWIGLU: return binary_rows<swiglu>;
        case proto::HTP_OP_ADD: return binary_rows<hvx_sf_add>;
        case proto::HTP_OP_SUB: return binary_rows<hvx_sf_sub>;
        case proto::HTP_OP_MUL: return binary_rows<hvx_sf_mul>;
        default: return binary_rows<hvx_sf_div>;
    }
}

// src1's coordinates (i11, i12, i13) = (i1 % ne11, i2 % ne12, i3 % ne13) beside the dst row cursor.
struct repeat_cursor {
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

repeat_cursor repeat_at(const row_cursor & c, const htp_binary_kparams & kp) {
    return repeat_cursor{proto::fastmodulo(c.i1, kp.div_ne11), proto::fastmodulo(c.i2, kp.div_ne12),
                         proto::fastmodulo(c.i3, kp.div_ne13)};
}

// The next block before row end, and both cursors moved past it.
binary_block take_block(row_cursor & c, repeat_cursor & r, uint32_t end, const binary_job & job) {
    const htp_binary_kparams & kp   = job.kp;
    const uint32_t             ne11 = kp.div_ne11.d;
    uint32_t                   n    = block_rows_at(c, kp.pipe.block_rows, end, kp.div_ne1.d);
    if (ne11 > 1) {
        n = n < ne11 - r.i11 ? n : ne11 - r.i11;
    }
    const binary_block b{c.row,
                         n,
                         row_offset(job.src0, c.i1, c.i2, c.i3),
                         row_offset(job.src1, r.i11, r.i12, r.i13),
                         ne11 > 1 ? n : 1,
                         row_offset(job.dst, c.i1, c.i2, c.i3)};
    if (ne11 > 1 && (r.i11 += n) == ne11) {
        r.i11 = 0;
    }
    // Each dst dim is a multiple of src1's, so src1's coordinates wrap no later than dst's.
    if (row_cursor_advance(c, n, kp.div_ne1.d, kp.div_ne2.d)) {
        r.i12 = r.i12 + 1 == kp.div_ne12.d ? 0 : r.i12 + 1;
        if (c.i2 == 0) {
            r.i13 = r.i13 + 1 == kp.div_ne13.d ? 0 : r.i13 + 1;
        }
    }
    return b;
}

void push_sources(dma_queue * q, uint8_t * s0, uint8_t * s1, dma_addr_t src0_base, dma_addr_t src1_base,
                  const binary_block & b, const binary_job & job) {
    const uint32_t stride = job.kp.pipe.vtcm_row_stride;
    const uint32_t size   = job.kp.pipe.row_size;
    dma_queue_push_ddr_to_vtcm(q, dma_addr_of(s0), dma_addr_at(src0_base, b.src0_offset), stride, job.src0->nb[1],
                               size, b.nrows, trace_info(b.row));
    dma_queue_push_ddr_to_vtcm(q, dma_addr_of(s1), dma_addr_at(src1_base, b.src1_offset), stride, job.src1->nb[1],
                               size, b.src1_rows, trace_info(b.row));
}

void binary_thread(uint32_t, uint32_t i, void * data) {
    const binary_job &                  job  = *static_cast<const binary_job *>(data);
    const proto::htp_eltwise_pipeline & pipe = job.kp.pipe;
    uint32_t                            ir0, ir1;
    if (!job.rows_plan.thread_range(i, &ir0, &ir1)) {
        return;
    }
    dma_queue *          q         = &job.octx->dma[i];
    const eltwise_rows & plan      = job.rows_plan;
    const dma_addr_t     src0_base = htp_tensor_dma_addr(job.octx->plat, job.src0);
    const dma_addr_t     src1_base = htp_tensor_dma_addr(job.octx->plat, job.src1);
    const dma_addr_t     dst_base  = htp_tensor_dma_addr(job.octx->plat, job.dst);
    const uint32_t       n_vectors = pipe.vtcm_row_stride / 128;

    row_cursor    next   = row_cursor_at(ir0, job.kp.div_ne1, job.kp.div_ne2);
    repeat_cursor repeat = repeat_at(next, job.kp);
    stream_blocks<proto::HTP_ELTWISE_MAX_SLOTS, binary_block>(
        q, &job.octx->trace[i], pipe.n_slots, 2,
        [&](binary_block & b) {
            if (next.row >= ir1) {
                return false;
            }
            b = take_block(next, repeat, ir1, job);
            return true;
        },
        [&](uint32_t k, const binary_block & b) { dma_queue_push_token(q, plan.slot(i, 2, k), trace_info(b.row)); },
        [&](uint32_t k, const binary_block & b) {
            push_sources(q, plan.slot(i, 0, k), plan.slot(i, 1, k), src0_base, src1_base, b, job);
        },
        [&](uint32_t k, const binary_block & b) {
            job.rows(reinterpret_cast<HVX_Vector *>(plan.slot(i, 2, k)),
                     reinterpret_cast<const HVX_Vector *>(plan.slot(i, 0, k)),
                     reinterpret_cast<const HVX_Vector *>(plan.slot(i, 1, k)), b.nrows, n_vectors,
                     b.src1_rows > 1 ? n_vectors : 0, job.kp);
        },
        [&](uint32_t k, const binary_block & b) {
            dma_queue_push_vtcm_to_ddr(q, dma_addr_at(dst_base, b.dst_offset), dma_addr_of(plan.slot(i, 2, k)),
                                       job.dst->nb[1], pipe.vtcm_row_stride, pipe.row_size, b.nrows, trace_info(b.row));
        });
}

} // namespace

bool guard_binary(const htp_op_context * octx) {
    htp_binary_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * src1 = octx->src[1];
    const htp_tensor * dst  = octx->dst[0];
    // SOFT_MAX reads the mask's first ne1 rows of each slice; the other ops all of src1's rows.
    const bool src1_rows_fit = octx->op->opcode == proto::HTP_OP_SOFT_MAX
                                   ? kp.div_ne11.d == dst->ne[1] && src1->ne[1] >= dst->ne[1]
                                   : kp.div_ne11.d == src1->ne[1];
    return eltwise_pipeline_fits(octx, kp.pipe, BINARY_STREAMS, proto::HTP_ELTWISE_MAX_SLOTS) &&
           same_dims(octx->src[0], dst) && eltwise_walk_fits(dst, kp.div_ne1, kp.div_ne2) && src1_rows_fit &&
           kp.div_ne12.d == src1->ne[2] && kp.div_ne13.d == src1->ne[3] &&
           eltwise_rows_fit(octx->src[0], kp.pipe.row_size) && eltwise_rows_fit(src1, kp.pipe.row_size) &&
           eltwise_rows_fit(dst, kp.pipe.row_size);
}

uint32_t op_binary(htp_op_context * octx) {
    binary_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx = octx;
    job.rows = rows_fn_of(octx->op->opcode);
    job.src0 = octx->src[0];
    job.src1 = octx->src[1];
    job.dst  = octx->dst[0];

    return run_eltwise_job(octx, job, BINARY_STREAMS, binary_thread);
}

} // namespace hexnpu::htp
