// SCALE (x * scale [+ bias]), SQR, SQRT, NEG, SILU, RELU, ABS, EXP, SIGMOID, GELU (tanh),
// GELU_QUICK, GELU_ERF, SIN, COS, LOG, SOFTPLUS, STEP, CLAMP, LEAKY_RELU, TANH, FILL; CPY between F32, F16 and BF16; the row norms RMS_NORM, NORM and
// L2_NORM; SUM_ROWS, MEAN and CUMSUM (proto/htp-unary.h). Each thread streams its rows DDR -> DMA
// -> VTCM -> HVX -> VTCM -> DMA -> DDR through n_slots slots per stream.
#include "eltwise-rows.h"
#include "htp-tensor.h"
#include "hvx-arith.h"
#include "hvx-div.h"
#include "hvx-exp.h"
#include "hvx-hf-rows.h"
#include "hvx-log.h"
#include "hvx-sigmoid.h"
#include "hvx-sincos.h"
#include "hvx-sqrt.h"
#include "ops.h"
#include "row-norm.h"
#include "stream-rows.h"
#include "proto/htp-unary.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-status.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::htp_tensor;
using proto::htp_unary_kparams;

constexpr uint32_t UNARY_STREAMS = 2;  // src0, dst

// n_vectors vectors: d = f(s). The constants are splat here, not in the caller: HVX registers do
// not survive the DMA calls around each block.
using unary_vectors_fn = void (*)(HVX_Vector * d, const HVX_Vector * s, uint32_t n_vectors,
                                  const htp_unary_kparams & kp);

template <HVX_Vector (*f)(HVX_Vector)>
void unary_vectors(HVX_Vector * d, const HVX_Vector * s, uint32_t n_vectors, const htp_unary_kparams &) {
    for (uint32_t j = 0; j < n_vectors; ++j) {
        d[j] = f(s[j]);
    }
}

// The functions with long polynomials, called once per vector: inlined, their dozens of constants
// would be hoisted out of the loop and spill; a call per vector leaves nothing live across it.
template <HVX_Vector (*f)(HVX_Vector)> __attribute__((noinline)) HVX_Vector out_of_line(HVX_Vector x) { return f(x); }

HVX_Vector sqr(HVX_Vector x) { return hvx_sf_mul(x, x); }
HVX_Vector copy(HVX_Vector x) { return x; }
HVX_Vector neg(HVX_Vector x) { return Q6_V_vxor_VV(x, hvx_splat_w(int32_t(0x80000000u))); }
HVX_Vector abs_sf(HVX_Vector x) { return Q6_V_vand_VV(x, hvx_splat_w(0x7FFFFFFF)); }
// GGML's x > 0: on the bits, exactly when 0 < bits <= +inf's (NaN, -0 and negatives are not).
HVX_VectorPred positive(HVX_Vector x) {
    return Q6_Q_and_QQ(Q6_Q_vcmp_gt_VwVw(x, Q6_V_vzero()), Q6_Q_vcmp_gt_VwVw(hvx_splat_w(0x7F800001), x));
}
// GGML's x < 0: the sign bit set and 0 < magnitude <= +inf's (-0 and NaN are not).
HVX_VectorPred negative(HVX_Vector x) {
    const HVX_Vector magnitude = Q6_V_vand_VV(x, hvx_splat_w(0x7FFFFFFF));
    return Q6_Q_and_QQ(Q6_Q_vcmp_gt_VwVw(Q6_V_vzero(), x),
                       Q6_Q_and_QQ(Q6_Q_vcmp_gt_VwVw(magnitude, Q6_V_vzero()),
                                   Q6_Q_vcmp_gt_VwVw(hvx_splat_w(0x7F800001), magnitude)));
}
HVX_Vector relu(HVX_Vector x) { return Q6_V_vmux_QVV(positive(x), x, Q6_V_vzero()); }
HVX_Vector step(HVX_Vector x) { return Q6_V_vmux_QVV(positive(x), hvx_splat_sf(1.0f), Q6_V_vzero()); }

// GGML's LEAKY_RELU, (x > 0 ? x : 0) + slope (x < 0 ? x : 0), as written: NaN gives 0, -0 gives +0.
void leaky_relu_vectors(HVX_Vector * d, const HVX_Vector * s, uint32_t n_vectors, const htp_unary_kparams & kp) {
    const HVX_Vector slope = Q6_V_vsplat_R(int32_t(kp.scale));
    for (uint32_t j = 0; j < n_vectors; ++j) {
        const HVX_Vector x = s[j];
        d[j] = hvx_sf_add(relu(x), hvx_sf_mul(slope, Q6_V_vmux_QVV(negative(x), x, Q6_V_vzero())));
    }
}
HVX_Vector sin_sf(HVX_Vector x) {
    HVX_Vector s, c;
    hvx_sf_sincos(x, &s, &c);
    return s;
}
HVX_Vector cos_sf(HVX_Vector x) {
    HVX_Vector s, c;
    hvx_sf_sincos(x, &s, &c);
    return c;
}

// GGML's MAX(MIN(x, hi), lo), on order keys.
void clamp_vectors(HVX_Vector * d, const HVX_Vector * s, uint32_t n_vectors, const htp_unary_kparams & kp) {
    const HVX_Vector lo = hvx_sf_order_key(Q6_V_vsplat_R(int32_t(kp.scale)));
    const HVX_Vector hi = hvx_sf_order_key(Q6_V_vsplat_R(int32_t(kp.bias)));
    for (uint32_t j = 0; j < n_vectors; ++j) {
        d[j] = hvx_sf_order_key(Q6_Vw_vmax_VwVw(Q6_Vw_vmin_VwVw(hvx_sf_order_key(s[j]), hi), lo));
    }
}

// GGML multiplies only when the bias is zero: x * s keeps the sign of a zero product, x * s + 0
// would not.
void scale_vectors(HVX_Vector * d, const HVX_Vector * s, uint32_t n_vectors, const htp_unary_kparams & kp) {
    const HVX_Vector scale = Q6_V_vsplat_R(int32_t(kp.scale));
    for (uint32_t j = 0; j < n_vectors; ++j) {
        d[j] = hvx_sf_mul(s[j], scale);
    }
}

void scale_bias_vectors(HVX_Vector * d, const HVX_Vector * s, uint32_t n_vectors, const htp_unary_kparams & kp) {
    const HVX_Vector scale = Q6_V_vsplat_R(int32_t(kp.scale));
    const HVX_Vector bias  = Q6_V_vsplat_R(int32_t(kp.bias));
    for (uint32_t j = 0; j < n_vectors; ++j) {
        d[j] = hvx_sf_add(hvx_sf_mul(s[j], scale), bias);
    }
}

// The row norms (row-norm.h): eps in kp.scale, 1/ne0 in kp.bias.
inline row_norm_consts norm_consts_of(const htp_unary_kparams & kp) { return {kp.pipe.row_size, kp.scale, kp.bias}; }

// Row by row (rows vtcm_row_stride / 128 vectors apart).
template <uint32_t Op>
void norm_vectors(HVX_Vector * d, const HVX_Vector * s, uint32_t n_vectors, const htp_unary_kparams & kp) {
    const uint32_t per_row = kp.pipe.vtcm_row_stride / 128;
    for (uint32_t row = 0; row < n_vectors; row += per_row) {
        const HVX_VectorPair a = norm_affine<Op>(s + row, norm_consts_of(kp));
        for (uint32_t j = 0; j < per_row; ++j) {
            d[row + j] = hvx_sf_mul(hvx_sf_sub(s[row + j], Q6_V_lo_W(a)), Q6_V_hi_W(a));
        }
    }
}

// CPY to or from F32 through the typed rows (eltwise-rows.h: F16 as SET_ROWS/GET_ROWS convert,
// BF16 -> F32 exact, F32 -> BF16 as GGML rounds); between rows of one type, the bytes.
void cpy_vectors(HVX_Vector * d, const HVX_Vector * s, uint32_t n_vectors, const htp_unary_kparams & kp) {
    const uint32_t per_row = kp.pipe.vtcm_row_stride / 128;
    for (uint32_t row = 0; row < n_vectors; row += per_row) {  // row by row: no division
        if (kp.src_type == kp.dst_type) {
            unary_vectors<copy>(d + row, s + row, per_row, kp);
        } else if (kp.dst_type == HTP_TYPE_F32) {
            rows_to_sf(d + row, s + row, 1, per_row, kp.src_type);
        } else {
            rows_from_sf(d + row, s + row, 1, per_row, kp.dst_type);
        }
    }
}

// f applied to each row (per_row vectors) on its own.
template <void (*f)(HVX_Vector *, const HVX_Vector *, uint32_t)>
void row_by_row(HVX_Vector * d, const HVX_Vector * s, uint32_t n_vectors, const htp_unary_kparams & kp) {
    const uint32_t per_row = kp.pipe.vtcm_row_stride / 128;
    for (uint32_t row = 0; row < n_vectors; row += per_row) {
        f(d + row, s + row, per_row);
    }
}

// GGML's softplus: x above 20 (where log(1 + e^x) = x in fp32), else log1p(e^x).
HVX_Vector softplus(HVX_Vector x) {
    return Q6_V_vmux_QVV(Q6_Q_vcmp_gt_VwVw(x, hvx_splat_sf(20.0f)), x, hvx_sf_log1p(hvx_sf_exp(x)));
}

// FILL: every element the value (kp.scale), narrowed to F16 for an F16 destination.
void fill_vectors(HVX_Vector * d, const HVX_Vector *, uint32_t n_vectors, const htp_unary_kparams & kp) {
    const HVX_Vector value = Q6_V_vsplat_R(int32_t(kp.scale));
    for (uint32_t j = 0; j < n_vectors; ++j) {
        d[j] = value;
    }
    const uint32_t per_row = kp.pipe.vtcm_row_stride / 128;
    for (uint32_t row = 0; row < n_vectors; row += per_row) {
        rows_from_sf(d + row, d + row, 1, per_row, kp.dst_type);
    }
}

// SUM_ROWS and MEAN: each row's sum (times 1/ne0 for the mean, in kp.bias) in lane 0 of its output
// row, the only element that goes out.
template <bool Mean>
void reduce_vectors(HVX_Vector * d, const HVX_Vector * s, uint32_t n_vectors, const htp_unary_kparams & kp) {
    const uint32_t per_row = kp.pipe.vtcm_row_stride / 128;
    for (uint32_t row = 0; row < n_vectors; row += per_row) {
        const HVX_Vector sum = row_sum(s + row, kp.pipe.row_size, [](HVX_Vector v) { return v; });
        d[row]               = Mean ? hvx_sf_mul(sum, Q6_V_vsplat_R(int32_t(kp.bias))) : sum;
    }
}

// CUMSUM: each vector's inclusive prefix sum (shifts up by 4, 8, .. 64 bytes) plus the running
// total, which then becomes the vector's last lane (rotated to lane 0 and spread by adding zeros:
// exact). Lanes past the row come last, so they never reach a valid one.
__attribute__((noinline)) void cumsum_row(HVX_Vector * d, const HVX_Vector * s, uint32_t per_row) {
    HVX_Vector carry = Q6_V_vzero();
    for (uint32_t j = 0; j < per_row; ++j) {
        HVX_Vector v = s[j];
        for (int32_t bytes = 4; bytes <= 64; bytes *= 2) {
            v = hvx_sf_add(v, Q6_V_vlalign_VVR(v, Q6_V_vzero(), bytes));
        }
        v     = hvx_sf_add(v, carry);
        d[j]  = v;
        carry = hvx_sf_allsum(Q6_V_vmux_QVV(Q6_Q_vsetq_R(4), Q6_V_vror_VR(v, 124), Q6_V_vzero()));
    }
}

unary_vectors_fn vectors_fn_of(uint32_t opcode, const htp_unary_kparams & kp) {
    switch (opcode) {
        case proto::HTP_OP_SCALE: return (kp.bias & 0x7FFFFFFF) == 0 ? scale_vectors : scale_bias_vectors;
        case proto::HTP_OP_SQR: return unary_vectors<sqr>;
        case proto::HTP_OP_SQRT: return unary_vectors<hvx_sf_sqrt>;
        case proto::HTP_OP_NEG: return unary_vectors<neg>;
        case proto::HTP_OP_CPY: return cpy_vectors;
        case proto::HTP_OP_RMS_NORM: return norm_vectors<proto::HTP_OP_RMS_NORM>;
        case proto::HTP_OP_NORM: return norm_vectors<proto::HTP_OP_NORM>;
        case proto::HTP_OP_L2_NORM: return norm_vectors<proto::HTP_OP_L2_NORM>;
        case proto::HTP_OP_RELU: return unary_vectors<relu>;
        case proto::HTP_OP_STEP: return unary_vectors<step>;
        case proto::HTP_OP_LEAKY_RELU: return leaky_relu_vectors;
        case proto::HTP_OP_ABS: return unary_vectors<abs_sf>;
        case proto::HTP_OP_EXP: return unary_vectors<hvx_sf_exp>;
        case proto::HTP_OP_SIGMOID: return unary_vectors<hvx_sf_sigmoid>;
        case proto::HTP_OP_GELU: return unary_vectors<hvx_sf_gelu>;
        case proto::HTP_OP_GELU_QUICK: return unary_vectors<hvx_sf_gelu_quick>;
        case proto::HTP_OP_SIN: return unary_vectors<sin_sf>;
        case proto::HTP_OP_COS: return unary_vectors<cos_sf>;
        case proto::HTP_OP_CLAMP: return clamp_vectors;
        case proto::HTP_OP_TANH: return unary_vectors<hvx_sf_tanh>;
        case proto::HTP_OP_SUM_ROWS: return reduce_vectors<false>;
        case proto::HTP_OP_MEAN: return reduce_vectors<true>;
        case proto::HTP_OP_CUMSUM: return row_by_row<cumsum_row>;
        case proto::HTP_OP_LOG: return unary_vectors<out_of_line<hvx_sf_log>>;
        case proto::HTP_OP_SOFTPLUS: return unary_vectors<out_of_line<softplus>>;
        case proto::HTP_OP_FILL: return fill_vectors;
        case proto::HTP_OP_GELU_ERF: return unary_vectors<out_of_line<hvx_sf_gelu_erf>>;
        default: return unary_vectors<hvx_sf_silu>;
    }
}

struct unary_job {
    const htp_op_context * octx;
    htp_unary_kparams      kp;
    unary_vectors_fn       vectors;
    bool                   widens;  // an element-wise op that may take 16-bit rows
    const htp_tensor *     src;
    const htp_tensor *     dst;
    eltwise_rows           rows_plan;
};

void unary_thread(uint32_t, uint32_t i, void * data) {
    const unary_job &    job  = *static_cast<const unary_job *>(data);
    const eltwise_rows & plan = job.rows_plan;
    stream_rows(job.octx, i, job.kp.pipe, job.kp.div_ne1, job.kp.div_ne2, plan, job.src, job.dst,
                job.kp.src_row_size, job.kp.dst_row_size, 0,
                [](dma_queue *, uint32_t, const row_block &) {},
                [&](uint32_t k, const row_block & b) {
                    HVX_Vector *   d       = reinterpret_cast<HVX_Vector *>(plan.slot(i, 1, k));
                    HVX_Vector *   s       = reinterpret_cast<HVX_Vector *>(plan.slot(i, 0, k));
                    const uint32_t per_row = job.kp.pipe.vtcm_row_stride / 128;
                    // 16-bit rows of the element-wise ops: fp32 in their slots, then back (CPY and
                    // FILL convert themselves).
                    if (job.widens) {
                        rows_to_sf(s, s, b.nrows, per_row, job.kp.src_type);
                    }
                    job.vectors(d, s, b.nrows * per_row, job.kp);
                    if (job.widens) {
                        rows_from_sf(d, d, b.nrows, per_row, job.kp.dst_type);
                    }
                },
                job.kp.gather_elem);
}

} // namespace

bool guard_unary(const htp_op_context * octx) {
    htp_unary_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * src = octx->src[0];
    const htp_tensor * dst = octx->dst[0];
    const uint32_t     op  = octx->op->opcode;
    // CPY converts between its rows' types (the sizes follow them); SUM_ROWS and MEAN write one
    // element per row; the other ops stay in F32 of one shape.
    bool layout_ok;
    if (op == proto::HTP_OP_CPY || op == proto::HTP_OP_FILL ||
        (proto::htp_unary_takes_16bit(op) && src->type != HTP_TYPE_F32)) {
        const bool gather = op == proto::HTP_OP_CPY && proto::htp_cpy_gather_supported(*src, *dst);
        layout_ok = proto::htp_unary_shapes_supported(op, *src, *dst) && kp.src_type == src->type && kp.dst_type == dst->type &&
                    kp.gather_elem == (gather ? proto::htp_cpy_elem_size(src->type) : 0) &&
                    (!gather || kp.pipe.block_rows == 1) &&
                    kp.src_row_size == dst->ne[0] * proto::htp_cpy_elem_size(src->type) &&
                    kp.dst_row_size == dst->ne[0] * proto::htp_cpy_elem_size(dst->type);
    } else if (proto::htp_is_row_reduction(op) || op == proto::HTP_OP_CUMSUM) {
        layout_ok = proto::htp_unary_shapes_supported(op, *src, *dst) && kp.src_row_size == kp.pipe.row_size &&
                    kp.dst_row_size == dst->ne[0] * 4;
    } else {
        layout_ok = same_dims(src, dst) && eltwise_rows_fit(src, kp.pipe.row_size) &&
                    eltwise_rows_fit(dst, kp.pipe.row_size) && kp.src_row_size == kp.pipe.row_size &&
                    kp.dst_row_size == kp.pipe.row_size;
    }
    return eltwise_pipeline_fits(octx, kp.pipe, UNARY_STREAMS, proto::HTP_ELTWISE_MAX_SLOTS) &&
           eltwise_walk_fits(dst, kp.div_ne1, kp.div_ne2) && kp.pipe.row_size == src->ne[0] * 4 &&
           src->ne[1] == dst->ne[1] && src->ne[2] == dst->ne[2] && src->ne[3] == dst->ne[3] &&
           (kp.gather_elem == 0 || op == proto::HTP_OP_CPY) && layout_ok;
}

uint32_t op_unary(htp_op_context * octx) {
    unary_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx    = octx;
    job.vectors = vectors_fn_of(octx->op->opcode, job.kp);
    job.widens  = proto::htp_unary_takes_16bit(octx->op->opcode);
    job.src     = octx->src[0];
    job.dst     = octx->dst[0];

    return run_eltwise_job(octx, job, UNARY_STREAMS, unary_thread);
}

} // namespace hexnpu::htp
