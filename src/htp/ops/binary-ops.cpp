// ADD, SUB, MUL, DIV: dst = src0 op src1, src1 repeated over dims 1-3 (proto/htp-binary.h), rows
// of F32, F16 or BF16 (dst of src0's type), 16-bit rows widened in their slots and computed in fp32;
// the GLUs with a separate gate: dst = act(src0) * src1 for GEGLU (tanh GELU), SWIGLU, REGLU,
// GEGLU_ERF and GEGLU_QUICK, GPT-OSS's SWIGLU_OAI (x capped at limit, the gate clamped to +-limit and
// offset by 1) and SWIGLU_CLAMP (SWIGLU_OAI's clamps, alpha 1, no offset); the host's fused
// RMS_NORM_MUL: dst = rms_norm(src0) * src1 (F32, the norm's weight repeated like MUL's); SOFT_MAX:
// dst = softmax(src0 * scale + slope * mask) per row, the mask (src1) F32, F16 or absent, ALiBi
// slopes per head, attention sinks (src2) in the maximum and the denominator; ADD_ID: src1's row by
// the id of each dst row (src2).
// Each thread streams its rows DDR -> DMA -> VTCM -> HVX -> VTCM -> DMA -> DDR through n_slots
// slots per stream: a block's src0 and src1 rows come in while earlier blocks compute and go out.
#include "dma-queue.h"
#include "eltwise-rows.h"
#include "htp-tensor.h"
#include "hvx-arith.h"
#include "hvx-div.h"
#include "hvx-exp.h"
#include "hvx-frexp.h"
#include "hvx-hf-rows.h"
#include "hvx-sigmoid.h"
#include "ops.h"
#include "row-norm.h"
#include "row-walk.h"
#include "stream-pipeline.h"
#include "proto/htp-binary.h"
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
HVX_Vector geglu_quick(HVX_Vector x, HVX_Vector g) { return hvx_sf_mul(hvx_sf_gelu_quick(x), g); }
// GGML's x > 0 ? x : 0 (NaN and -0 give 0; relu in unary-ops.cpp), times the gate.
HVX_Vector reglu(HVX_Vector x, HVX_Vector g) {
    const HVX_VectorPred positive = Q6_Q_and_QQ(Q6_Q_vcmp_gt_VwVw(x, Q6_V_vzero()),
                                                Q6_Q_vcmp_gt_VwVw(hvx_splat_w(0x7F800001), x));
    return hvx_sf_mul(Q6_V_vmux_QVV(positive, x, Q6_V_vzero()), g);
}
// The erf GELU's polynomial is long: called once per vector, its constants are not hoisted into
// registers across the loop (where they would spill).
__attribute__((noinline)) HVX_Vector geglu_erf(HVX_Vector x, HVX_Vector g) { return hvx_sf_mul(hvx_sf_gelu_erf(x), g); }

// SWIGLU_OAI, GGML's x / (1 + e^(-alpha x)) (g + 1) with x = min(x, limit), g = clamp(g, -limit,
// limit), as x sigmoid(alpha x) (g + 1): alpha in kp.scale, limit in kp.alibi_c0; SWIGLU_CLAMP the
// same with alpha 1 and the gate not offset (OffsetGate false). Two passes per row (the gate term
// into d, then the product), so the sigmoid's constants fit the registers.
template <bool OffsetGate>
void clamped_glu_rows(HVX_Vector * d, const HVX_Vector * a, const HVX_Vector * b, uint32_t nrows, uint32_t n_vectors,
                     uint32_t b_step, const htp_binary_kparams & kp) {
    const HVX_Vector hi = hvx_sf_order_key(Q6_V_vsplat_R(int32_t(kp.alibi_c0)));
    for (uint32_t r = 0; r < nrows; ++r) {
        for (uint32_t j = 0; j < n_vectors; ++j) {
            const HVX_Vector lo = hvx_sf_order_key(Q6_V_vsplat_R(int32_t(kp.alibi_c0 ^ 0x80000000u)));
            const HVX_Vector g  = hvx_sf_order_key(Q6_Vw_vmax_VwVw(Q6_Vw_vmin_VwVw(hvx_sf_order_key(b[j]), hi), lo));
            d[j]                = OffsetGate ? hvx_sf_add(g, hvx_splat_sf(1.0f)) : g;
        }
        for (uint32_t j = 0; j < n_vectors; ++j) {
            const HVX_Vector x = hvx_sf_order_key(Q6_Vw_vmin_VwVw(hvx_sf_order_key(a[j]), hi));
            d[j] = hvx_sf_mul(hvx_sf_mul(x, hvx_sf_sigmoid(hvx_sf_mul(Q6_V_vsplat_R(int32_t(kp.scale)), x))), d[j]);
        }
        d += n_vectors;
        a += n_vectors;
        b += b_step;
    }
}

// Every lane: the largest of v's 32 keys.
HVX_Vector w_allmax(HVX_Vector v) {
    for (int32_t bytes = 64; bytes >= 4; bytes /= 2) {
        v = Q6_Vw_vmax_VwVw(v, Q6_V_vror_VR(v, bytes));
    }
    return v;
}

// What a SOFT_MAX block's rows share: one head (blocks never cross a slice). Scalars: vectors held
// across the pipeline's calls would be spilled.
struct softmax_head {
    float ln_slope;  // ALiBi's factor on the mask is e^ln_slope (0: no ALiBi)
    float sink;      // the head's sink logit (-inf without sinks)
    bool  has_mask;
    bool  mask_f16;  // the mask row holds halfwords: vector j's 32 are half j % 2 of vector j / 2
};

// Vector j of the mask row b, as fp32.
inline HVX_Vector mask_vector(const HVX_Vector * b, uint32_t j, bool f16) {
    if (!f16) {
        return b[j];
    }
    HVX_Vector first, second;
    hvx_hf_halves_to_sf(b[j / 2], &first, &second);
    return j % 2 ? second : first;
}

// GGML's soft_max: w = a * scale + slope * mask, then e^(w - max) / sum, the sink (when there is
// one) taking part in max and sum. The lanes past the row's row_size bytes are set to -inf
// (e^-inf = 0), so stale VTCM takes no part; -inf mask entries give 0. w goes to d first, then d
// is overwritten with the normalized values. Not inlined: the row loop's constants are reloaded
// around it anyway.
__attribute__((noinline)) void softmax_row(HVX_Vector * d, const HVX_Vector * a, const HVX_Vector * b,
                                           uint32_t n_vectors, const htp_binary_kparams & kp, const softmax_head & h) {
    const HVX_Vector scale   = Q6_V_vsplat_R(int32_t(kp.scale));
    const HVX_Vector neg_inf = hvx_splat_w(int32_t(0xFF800000u));
    const HVX_Vector slope   = h.ln_slope != 0.0f ? hvx_sf_exp(hvx_splat_sf(h.ln_slope)) : hvx_splat_sf(1.0f);
    const HVX_Vector sink    = hvx_splat_sf(h.sink);
    const uint32_t   full = kp.pipe.row_size / 128, tail = kp.pipe.row_size % 128;
    HVX_Vector       mx   = hvx_sf_order_key(sink);
    for (uint32_t j = 0; j < n_vectors; ++j) {
        HVX_Vector w = hvx_sf_mul(a[j], scale);
        if (h.has_mask) {
            w = hvx_sf_add(w, hvx_sf_mul(slope, mask_vector(b, j, h.mask_f16)));
        }
        if (j >= full) {
            w = j == full && tail != 0 ? Q6_V_vmux_QVV(Q6_Q_vsetq_R(int32_t(tail)), w, neg_inf) : neg_inf;
        }
        d[j] = w;
        mx   = Q6_Vw_vmax_VwVw(mx, hvx_sf_order_key(w));
    }
    mx             = hvx_sf_order_key(w_allmax(mx));
    HVX_Vector sum = Q6_V_vzero();
    for (uint32_t j = 0; j < n_vectors; ++j) {
        d[j] = hvx_sf_exp(hvx_sf_sub(d[j], mx));
        sum  = hvx_sf_add(sum, d[j]);
    }
    // The sink's e^(sink - max) in lane 0 only (0 without a sink: e^-inf).
    sum = hvx_sf_add(sum, Q6_V_vmux_QVV(Q6_Q_vsetq_R(4), hvx_sf_exp(hvx_sf_sub(sink, mx)), Q6_V_vzero()));
    const HVX_Vector inv = hvx_sf_div(hvx_splat_sf(1.0f), hvx_sf_allsum(sum));
    for (uint32_t j = 0; j < n_vectors; ++j) {
        d[j] = hvx_sf_mul(d[j], inv);
    }
}

void softmax_rows(HVX_Vector * d, const HVX_Vector * a, const HVX_Vector * b, uint32_t nrows, uint32_t n_vectors,
                  uint32_t b_step, const htp_binary_kparams & kp, const softmax_head & h) {
    for (uint32_t r = 0; r < nrows; ++r) {
        softmax_row(d, a, b, n_vectors, kp, h);
        d += n_vectors;
        a += n_vectors;
        b += b_step;
    }
}

// Head h's ALiBi slope (GGML: m0^(h + 1) below n_head_log2, m1^(2 (h - n_head_log2) + 1) above, as
// powers of two) and sink logit.
softmax_head softmax_head_of(const htp_binary_kparams & kp, uint32_t h, const uint8_t * sinks) {
    softmax_head   s;
    const uint32_t n_head_log2 = kp.flags >> 16;
    s.ln_slope                 = 0.0f;
    if (n_head_log2 != 0) {
        const float c = __builtin_bit_cast(float, h < n_head_log2 ? kp.alibi_c0 : kp.alibi_c1);
        s.ln_slope    = c * float(h < n_head_log2 ? h + 1 : 2 * (h - n_head_log2) + 1) * 0.693147181f;
    }
    s.sink = -__builtin_inff();
    if (kp.flags & proto::HTP_SOFTMAX_SINKS) {
        __builtin_memcpy(&s.sink, sinks + h * 4, 4);  // a small DDR table: a scalar read
    }
    s.has_mask = kp.src1_row_size != 0;
    s.mask_f16 = (kp.flags & proto::HTP_SOFTMAX_MASK_F16) != 0;
    return s;
}

// RMS_NORM_MUL: each row times its RMS factor (GGML's order: the norm's x * factor, then the weight).
// eps in kp.scale, 1/ne0 in kp.alibi_c0.
void rms_norm_mul_rows(HVX_Vector * d, const HVX_Vector * a, const HVX_Vector * b, uint32_t nrows, uint32_t n_vectors,
                       uint32_t b_step, const htp_binary_kparams & kp) {
    const row_norm_consts c{kp.pipe.row_size, kp.scale, kp.alibi_c0};
    for (uint32_t r = 0; r < nrows; ++r) {
        const HVX_Vector factor = Q6_V_hi_W(norm_affine<proto::HTP_OP_RMS_NORM>(a, c));
        for (uint32_t j = 0; j < n_vectors; ++j) {
            d[j] = hvx_sf_mul(hvx_sf_mul(a[j], factor), b[j]);
        }
        d += n_vectors;
        a += n_vectors;
        b += b_step;
    }
}

binary_rows_fn rows_fn_of(uint32_t opcode) {
    switch (opcode) {
        case proto::HTP_OP_RMS_NORM_MUL: return rms_norm_mul_rows;
        case proto::HTP_OP_GEGLU: return binary_rows<geglu>;
        case proto::HTP_OP_SWIGLU: return binary_rows<swiglu>;
        case proto::HTP_OP_SWIGLU_OAI: return clamped_glu_rows<true>;
        case proto::HTP_OP_SWIGLU_CLAMP: return clamped_glu_rows<false>;
        case proto::HTP_OP_REGLU: return binary_rows<reglu>;
        case proto::HTP_OP_GEGLU_ERF: return binary_rows<geglu_erf>;
        case proto::HTP_OP_GEGLU_QUICK: return binary_rows<geglu_quick>;
        case proto::HTP_OP_ADD:
        case proto::HTP_OP_ADD_ID: return binary_rows<hvx_sf_add>;
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
    uint32_t i2;
};

struct binary_job {
    const htp_op_context * octx;
    htp_binary_kparams     kp;
    binary_rows_fn         rows;
    const htp_tensor *     src0;
    const htp_tensor *     src1;  // null for a SOFT_MAX without a mask
    const htp_tensor *     sinks;
    const htp_tensor *     ids;  // ADD_ID's
    const htp_tensor *     dst;
    eltwise_rows           rows_plan;
    bool                   softmax;
    mutable volatile uint32_t bad_id;  // set by any thread that met an ADD_ID id outside [0, src1.ne1)
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
                         job.src1 ? row_offset(job.src1, r.i11, r.i12, r.i13) : 0,
                         ne11 > 1 ? n : 1,
                         row_offset(job.dst, c.i1, c.i2, c.i3),
                         c.i2};
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

// The row types of ADD/SUB/MUL/DIV and the GLUs (kparams.flags); F32 for SOFT_MAX.
struct row_types {
    uint32_t src0, src1, dst;
};
row_types row_types_of(const binary_job & job) {
    if (job.softmax) {
        return {HTP_TYPE_F32, HTP_TYPE_F32, HTP_TYPE_F32};
    }
    return {job.kp.flags & 0xFF, (job.kp.flags >> 8) & 0xFF, (job.kp.flags >> 16) & 0xFF};
}

void push_sources(dma_queue * q, uint8_t * s0, uint8_t * s1, dma_addr_t src0_base, dma_addr_t src1_base,
                  const binary_block & b, const binary_job & job) {
    const uint32_t stride = job.kp.pipe.vtcm_row_stride;
    // src0's row bytes: a multiply per block (the binary kparams are full, 32 words: no room for it).
    const uint32_t size   = job.dst->ne[0] * proto::htp_cpy_elem_size(row_types_of(job).src0);
    dma_queue_push_ddr_to_vtcm(q, dma_addr_of(s0), dma_addr_at(src0_base, b.src0_offset), stride, job.src0->nb[1],
                               size, b.nrows, trace_info(b.row));
    if (job.kp.src1_row_size == 0) {
        dma_queue_push_token(q, s1, trace_info(b.row));  // no mask: the stream keeps its pops paired
        return;
    }
    if (job.kp.flags & proto::HTP_BINARY_SRC1_SCALAR) {  // one row per block: its element ne0 times
        const uint32_t e1 = proto::htp_cpy_elem_size(row_types_of(job).src1);
        dma_queue_push_ddr_to_vtcm(q, dma_addr_of(s1), dma_addr_at(src1_base, b.src1_offset), e1, 0, e1,
                                   job.dst->ne[0], trace_info(b.row));
        return;
    }
    dma_queue_push_ddr_to_vtcm(q, dma_addr_of(s1), dma_addr_at(src1_base, b.src1_offset), stride, job.src1->nb[1],
                               job.kp.src1_row_size, b.src1_rows, trace_info(b.row));
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
    const dma_addr_t     src1_base = job.src1 ? htp_tensor_dma_addr(job.octx->plat, job.src1) : dma_addr_t(0);
    const uint8_t *      sinks     = job.sinks ? htp_tensor_ptr(job.octx->plat, job.sinks) : nullptr;
    const uint8_t *      ids       = job.ids ? htp_tensor_ptr(job.octx->plat, job.ids) : nullptr;
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
            const row_cursor at = next;
            b                   = take_block(next, repeat, ir1, job);
            if (ids != nullptr) {  // ADD_ID: one row per block, src1's row by id (row 0 for a bad one)
                uint32_t id = 0;
                if (!read_row_id(ids + at.i1 * job.ids->nb[0] + at.i2 * job.ids->nb[1], false, job.src1->ne[1], &id)) {
                    job.bad_id = 1;
                }
                b.src1_offset = id * job.src1->nb[1];
            }
            return true;
        },
        [&](uint32_t k, const binary_block & b) { dma_queue_push_token(q, plan.slot(i, 2, k), trace_info(b.row)); },
        [&](uint32_t k, const binary_block & b) {
            push_sources(q, plan.slot(i, 0, k), plan.slot(i, 1, k), src0_base, src1_base, b, job);
        },
        [&](uint32_t k, const binary_block & b) {
            HVX_Vector *    d      = reinterpret_cast<HVX_Vector *>(plan.slot(i, 2, k));
            HVX_Vector *    s0     = reinterpret_cast<HVX_Vector *>(plan.slot(i, 0, k));
            HVX_Vector *    s1     = reinterpret_cast<HVX_Vector *>(plan.slot(i, 1, k));
            const uint32_t  b_step = b.src1_rows > 1 ? n_vectors : 0;
            const row_types types  = row_types_of(job);
            // 16-bit rows become fp32 in their own slots first (the slots are laid out for F32).
            rows_to_sf(s0, s0, b.nrows, n_vectors, types.src0);
            rows_to_sf(s1, s1, b.src1_rows, n_vectors, types.src1);
            if (job.softmax) {
                softmax_rows(d, s0, s1, b.nrows, n_vectors, b_step, job.kp, softmax_head_of(job.kp, b.i2, sinks));
            } else {
                job.rows(d, s0, s1, b.nrows, n_vectors, b_step, job.kp);
            }
            rows_from_sf(d, d, b.nrows, n_vectors, types.dst);
        },
        [&](uint32_t k, const binary_block & b) {
            dma_queue_push_vtcm_to_ddr(q, dma_addr_at(dst_base, b.dst_offset), dma_addr_of(plan.slot(i, 2, k)),
                                       job.dst->nb[1], pipe.vtcm_row_stride,
                                       job.dst->ne[0] * proto::htp_cpy_elem_size(row_types_of(job).dst), b.nrows,
                                       trace_info(b.row));
        });
}

} // namespace

// src1's rows (of src1_row_size bytes) all inside its bytes.
inline bool src1_rows_fit(const htp_tensor * t, uint32_t row_size) {
    const uint64_t last = uint64_t(t->ne[1] - 1) * t->nb[1] + uint64_t(t->ne[2] - 1) * t->nb[2] +
                          uint64_t(t->ne[3] - 1) * t->nb[3];
    return last + row_size <= t->size;
}

bool guard_binary(const htp_op_context * octx) {
    htp_binary_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * src1 = octx->src[1];
    const htp_tensor * dst  = octx->dst[0];
    bool               src1_ok;
    if (octx->op->opcode == proto::HTP_OP_SOFT_MAX) {
        // The mask's first ne1 rows of each slice; without a mask nothing is read.
        const bool     f16   = (kp.flags & proto::HTP_SOFTMAX_MASK_F16) != 0;
        const bool     sinks = (kp.flags & proto::HTP_SOFTMAX_SINKS) != 0;
        const htp_tensor * s = octx->src[2];
        src1_ok = kp.div_ne11.d == dst->ne[1] && (sinks == (s != nullptr)) &&
                  (!sinks || (s->type == HTP_TYPE_F32 && s->ne[0] == dst->ne[2] && uint64_t(s->ne[0]) * 4 <= s->size)) &&
                  (src1 == nullptr ? kp.src1_row_size == 0 && !f16 && kp.div_ne12.d == 1 && kp.div_ne13.d == 1
                                   : src1->ne[1] >= dst->ne[1] && src1->ne[0] == dst->ne[0] &&
                                         src1->type == (f16 ? HTP_TYPE_F16 : HTP_TYPE_F32) &&
                                         kp.src1_row_size == dst->ne[0] * (f16 ? 2 : 4) &&
                                         kp.div_ne12.d == src1->ne[2] && kp.div_ne13.d == src1->ne[3] &&
                                         src1_rows_fit(src1, kp.src1_row_size));
        return eltwise_pipeline_fits(octx, kp.pipe, BINARY_STREAMS, proto::HTP_ELTWISE_MAX_SLOTS) &&
               same_dims(octx->src[0], dst) && eltwise_walk_fits(dst, kp.div_ne1, kp.div_ne2) && src1_ok &&
               eltwise_rows_fit(octx->src[0], kp.pipe.row_size) && eltwise_rows_fit(dst, kp.pipe.row_size);
    }
    const htp_tensor * src0 = octx->src[0];
    if (octx->op->opcode == proto::HTP_OP_ADD_ID) {
        const htp_tensor * ids = octx->src[2];
        return proto::htp_add_id_layout_valid(*src0, *src1, *ids, *dst) &&
               eltwise_pipeline_fits(octx, kp.pipe, BINARY_STREAMS, proto::HTP_ELTWISE_MAX_SLOTS) &&
               kp.pipe.block_rows == 1 && eltwise_walk_fits(dst, kp.div_ne1, kp.div_ne2) &&
               kp.pipe.row_size == dst->ne[0] * 4 && kp.div_ne11.d == 1 && kp.div_ne12.d == 1 && kp.div_ne13.d == 1 &&
               kp.flags == proto::htp_binary_types(0, 0, 0) && kp.src1_row_size == dst->ne[0] * 4;
    }
    // ADD/SUB/MUL/DIV, the GLUs: F32, F16, BF16 rows, dst of src0's type; RMS_NORM_MUL: F32.
    const bool norm_types_ok = octx->op->opcode != proto::HTP_OP_RMS_NORM_MUL ||
                               (src0->type == HTP_TYPE_F32 && src1->type == HTP_TYPE_F32);
    src1_ok = norm_types_ok && kp.div_ne11.d == src1->ne[1] && kp.div_ne12.d == src1->ne[2] &&
              kp.div_ne13.d == src1->ne[3] &&
              kp.flags == (proto::htp_binary_types(src0->type, src1->type, dst->type) |
                           (proto::htp_binary_src1_scalar(*src1, *dst) ? proto::HTP_BINARY_SRC1_SCALAR : 0)) &&
              (!proto::htp_binary_src1_scalar(*src1, *dst) || kp.pipe.block_rows == 1) &&
              proto::htp_binary_shapes_layout(*src0, *src1, *dst) &&
              kp.src1_row_size == dst->ne[0] * proto::htp_cpy_elem_size(src1->type);
    return eltwise_pipeline_fits(octx, kp.pipe, BINARY_STREAMS, proto::HTP_ELTWISE_MAX_SLOTS) &&
           eltwise_walk_fits(dst, kp.div_ne1, kp.div_ne2) && kp.pipe.row_size == dst->ne[0] * 4 && src1_ok;
}

uint32_t op_binary(htp_op_context * octx) {
    binary_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx = octx;
    job.rows = rows_fn_of(octx->op->opcode);
    job.src0 = octx->src[0];
    job.src1    = octx->src[1];
    job.sinks   = octx->op->opcode == proto::HTP_OP_SOFT_MAX ? octx->src[2] : nullptr;
    job.ids     = octx->op->opcode == proto::HTP_OP_ADD_ID ? octx->src[2] : nullptr;
    job.dst     = octx->dst[0];
    job.softmax = octx->op->opcode == proto::HTP_OP_SOFT_MAX;

    const uint32_t status = run_eltwise_job(octx, job, BINARY_STREAMS, binary_thread);
    return status == proto::HTP_STATUS_OK && job.bad_id ? proto::HTP_STATUS_INVAL_PARAMS : status;
}

} // namespace hexnpu::htp
