// kernel_params of the NPU ops on the binary pipeline (htp/ops/binary-ops.cpp) and their host
// preparation: ADD, SUB, MUL, DIV (dst = src0 op src1; F32, F16 or BF16 rows; src1 rows as long as
// dst rows, or one element, repeated over dims 1-3), the GLUs (a separate gate: GEGLU, SWIGLU,
// REGLU, GEGLU_ERF, GEGLU_QUICK, SWIGLU_OAI, SWIGLU_CLAMP),
// RMS_NORM_MUL (the host's fusion), ADD_ID, and SOFT_MAX (dst = softmax(src0 * scale + src1) per
// row, src1 GGML's mask). The prepare functions return why they refuse an op (htp-verdict.h).
#pragma once

#include "proto/htp-eltwise.h"
#include "proto/htp-opcodes.h"

#include <stdint.h>

namespace hexnpu::proto {

struct htp_binary_kparams {
    htp_eltwise_pipeline pipe;
    fastdiv_values       div_ne1;   // flat dst row -> (i1, i2, i3)
    fastdiv_values       div_ne2;
    fastdiv_values       div_ne11;  // dst coordinates -> src1's: i11 = i1 % ne11, ...
    fastdiv_values       div_ne12;  //   (SOFT_MAX: ne1 in div_ne11, the mask's first ne1 rows)
    fastdiv_values       div_ne13;
    uint32_t             scale;     // SOFT_MAX: float bits of the logit scale (GGML op_params 0);
                                    // RMS_NORM_MUL: of the norm's eps (its op_params 0);
                                    // SWIGLU_OAI, SWIGLU_CLAMP: of alpha (op_params 2; 1), limit in alibi_c0 (3)
    uint32_t             src1_row_size;  // bytes each src1 row DMA moves: row_size; SOFT_MAX: the mask's
                                         // (ne0 * 2 for F16), 0 without a mask
    uint32_t             flags;          // SOFT_MAX: HTP_SOFTMAX_* bits, ALiBi's n_head_log2 in bits 16..31;
                                         // ADD/SUB/MUL/DIV, GEGLU/SWIGLU: the row types (htp_binary_types)
    uint32_t             alibi_c0;       // SOFT_MAX with ALiBi: float bits of log2(m0), log2(m1): head h's
    uint32_t             alibi_c1;       //   slope 2^(c0 (h + 1)) below n_head_log2, else 2^(c1 (2 (h - n_head_log2) + 1));
                                         // RMS_NORM_MUL: alibi_c0 holds the float bits of 1 / ne0 (the
                                         // struct is full: 32 words)
};
inline constexpr uint32_t HTP_SOFTMAX_MASK_F16 = 1;
inline constexpr uint32_t HTP_SOFTMAX_SINKS    = 2;

static_assert(sizeof(htp_binary_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// ADD/SUB/MUL/DIV's row types in kparams.flags: src0 | src1 << 8 | dst << 16 (GGML ids; dst is src0's),
// and HTP_BINARY_SRC1_SCALAR where src1's rows are one element (broadcast along dim 0): each is
// landed ne0 times side by side by one 2-D transfer of source stride 0, one dst row per block.
inline constexpr uint32_t HTP_BINARY_SRC1_SCALAR = 1u << 24;
constexpr uint32_t htp_binary_types(uint32_t src0, uint32_t src1, uint32_t dst) { return src0 | src1 << 8 | dst << 16; }
constexpr bool     htp_binary_src1_scalar(const htp_tensor & src1, const htp_tensor & dst) {
    return src1.ne[0] == 1 && dst.ne[0] != 1;
}

// F32, F16 or BF16 rows on each side, dst of src0's type, all in order and inside their bytes; the
// sources' rows anywhere (permuted views), dst's apart (compares only: the NPU's guard checks it too).
constexpr bool htp_binary_shapes_layout(const htp_tensor & src0, const htp_tensor & src1, const htp_tensor & dst) {
    const uint32_t e0 = htp_cpy_elem_size(src0.type), e1 = htp_cpy_elem_size(src1.type);
    return e0 != 0 && e1 != 0 && dst.type == src0.type && dst.ne[0] <= UINT32_MAX / 4 && htp_same_shape(src0, dst) &&
           (src1.ne[0] == dst.ne[0] || src1.ne[0] == 1) && htp_rows_inside(src0, e0) && htp_rows_inside(src1, e1) &&
           htp_rows_apart(dst, e0);
}

// ... and src1 repeating evenly over dst's dims 1-3 (host only).
constexpr htp_verdict htp_binary_shapes_supported(const htp_tensor & src0, const htp_tensor & src1,
                                                  const htp_tensor & dst) {
    if (!htp_binary_shapes_layout(src0, src1, dst)) {
        return htp_refuse("the NPU kernel takes F32, F16 or BF16 rows in order (the result of src0's type and "
                          "shape, src1's rows as long or one element)");
    }
    for (int d = 1; d < 4; ++d) {
        if (src1.ne[d] == 0 || dst.ne[d] % src1.ne[d] != 0) {
            return htp_refuse("src1 does not repeat evenly over the result");
        }
    }
    return HTP_TAKEN;
}

// The pipeline and row walk of a binary op over dst's rows: src1's rows i1 % src1_rows, dims 2-3
// repeated.
inline htp_verdict htp_binary_plan(const htp_tensor & dst, uint32_t src1_rows, const htp_tensor & src1,
                                   uint32_t n_threads, uint32_t vtcm_size, htp_binary_kparams * out) {
    htp_binary_kparams kp{};
    const uint64_t     total_rows = uint64_t(dst.ne[1]) * dst.ne[2] * dst.ne[3];
    if (const htp_verdict v = htp_eltwise_plan(total_rows, dst.ne[0] * 4, 3, n_threads, vtcm_size, &kp.pipe); !v) {
        return v;
    }
    kp.div_ne1  = init_fastdiv(dst.ne[1]);
    kp.div_ne2  = init_fastdiv(dst.ne[2]);
    kp.div_ne11 = init_fastdiv(src1_rows);
    kp.div_ne12 = init_fastdiv(src1.ne[2]);
    kp.div_ne13 = init_fastdiv(src1.ne[3]);
    kp.src1_row_size = kp.pipe.row_size;
    *out        = kp;
    return HTP_TAKEN;
}

inline htp_verdict prepare_binary_kparams(uint32_t opcode, const htp_tensor & src0, const htp_tensor & src1,
                                          const htp_tensor & dst, uint32_t n_threads, uint32_t vtcm_size,
                                          htp_binary_kparams * out) {
    if (!htp_is_binary_op(opcode) || opcode == HTP_OP_SOFT_MAX || opcode == HTP_OP_ADD_ID) {
        return htp_refuse("not a two-source element-wise op");
    }
    if (const htp_verdict v = htp_binary_shapes_supported(src0, src1, dst); !v) {
        return v;
    }
    if (const htp_verdict v = htp_binary_plan(dst, src1.ne[1], src1, n_threads, vtcm_size, out); !v) {
        return v;
    }
    out->src1_row_size = dst.ne[0] * htp_cpy_elem_size(src1.type);
    out->flags         = htp_binary_types(src0.type, src1.type, dst.type);
    if (htp_binary_src1_scalar(src1, dst)) {
        out->flags |= HTP_BINARY_SRC1_SCALAR;
        out->pipe.block_rows = 1;
        out->pipe.vtcm_size  = uint32_t(htp_eltwise_vtcm_size(out->pipe, 3));
    }
    return HTP_TAKEN;
}

inline htp_verdict prepare_binary_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_binary_kparams kp{};
    return htp_store_kparams(
        prepare_binary_kparams(a.opcode, *a.src[0], *a.src[1], *a.dst, a.n_threads, a.vtcm_size, &kp), kp, kparams);
}

// The fused RMS_NORM + MUL (by the norm's weight): dst = rms_norm(src0, eps) * src1, all F32, src1
// repeated over dst as MUL repeats it. eps_bits: the norm's op_params 0.
inline htp_verdict prepare_rms_norm_mul_kparams(const htp_tensor & src0, const htp_tensor & src1, const htp_tensor & dst,
                                                uint32_t eps_bits, uint32_t n_threads, uint32_t vtcm_size,
                                                htp_binary_kparams * out) {
    if (src0.type != HTP_TYPE_F32 || src1.type != HTP_TYPE_F32 || dst.type != HTP_TYPE_F32) {
        return htp_refuse("the fused norm takes F32 rows");
    }
    if (const htp_verdict v = prepare_binary_kparams(HTP_OP_MUL, src0, src1, dst, n_threads, vtcm_size, out); !v) {
        return v;
    }
    out->scale    = eps_bits;
    out->alibi_c0 = __builtin_bit_cast(uint32_t, 1.0f / float(dst.ne[0]));  // the mean without an NPU division
    return HTP_TAKEN;
}

// params: the norm's op_params (eps in word 0).
inline htp_verdict prepare_rms_norm_mul_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_binary_kparams kp{};
    return htp_store_kparams(prepare_rms_norm_mul_kparams(*a.src[0], *a.src[1], *a.dst, uint32_t(a.params[0]),
                                                          a.n_threads, a.vtcm_size, &kp),
                             kp, kparams);
}

// ADD_ID (GPT-OSS's expert biases) on the binary pipeline: dst row (i1, i2) = src0's + src1 row
// ids[i1, i2], all F32, one row per block (ids: I32 [src0.ne1, src0.ne2] in order, a small DDR table
// the NPU reads with scalar loads; one outside [0, src1.ne1) fails the op with INVAL_PARAMS).
constexpr bool htp_add_id_layout_valid(const htp_tensor & src0, const htp_tensor & src1, const htp_tensor & ids,
                                       const htp_tensor & dst) {
    return src0.type == HTP_TYPE_F32 && src1.type == HTP_TYPE_F32 && dst.type == HTP_TYPE_F32 && ids.type == HTP_TYPE_I32 && src0.ne[3] == 1 &&
           src1.ne[2] == 1 && src1.ne[3] == 1 && ids.ne[0] == src0.ne[1] && ids.ne[1] == src0.ne[2] &&
           ids.ne[2] == 1 && ids.ne[3] == 1 && htp_rows_inside(ids, 4) && htp_binary_shapes_layout(src0, src1, dst);
}

inline htp_verdict prepare_add_id_kparams(const htp_tensor & src0, const htp_tensor & src1, const htp_tensor & ids,
                                          const htp_tensor & dst, uint32_t n_threads, uint32_t vtcm_size,
                                          htp_binary_kparams * out) {
    htp_tensor one_row{};  // src1's rows come by id: the repeat walk stays at row 0
    one_row.ne[1] = one_row.ne[2] = one_row.ne[3] = 1;
    if (!htp_add_id_layout_valid(src0, src1, ids, dst)) {
        return htp_refuse("the NPU kernel takes F32 rows in order, 3-D at most, and I32 ids [ne1, ne2] in order");
    }
    if (const htp_verdict v = htp_binary_plan(dst, 1, one_row, n_threads, vtcm_size, out); !v) {
        return v;
    }
    out->pipe.block_rows = 1;
    out->pipe.vtcm_size  = uint32_t(htp_eltwise_vtcm_size(out->pipe, 3));
    out->src1_row_size   = dst.ne[0] * 4;
    out->flags           = htp_binary_types(0, 0, 0);
    return HTP_TAKEN;
}

inline htp_verdict prepare_add_id_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_binary_kparams kp{};
    return htp_store_kparams(
        prepare_add_id_kparams(*a.src[0], *a.src[1], *a.src[2], *a.dst, a.n_threads, a.vtcm_size, &kp), kp, kparams);
}

// The GLUs that clamp, on the binary pipeline: SWIGLU_OAI (GPT-OSS's: alpha in op_params 2, limit
// in 3) and SWIGLU_CLAMP (limit in 3; alpha 1 and no offset of the gate).
inline htp_verdict prepare_clamped_glu_kparams(uint32_t opcode, const htp_tensor & src0, const htp_tensor & src1,
                                               const htp_tensor & dst, const int32_t params[HTP_OP_MAX_PARAMS],
                                               uint32_t n_threads, uint32_t vtcm_size, htp_binary_kparams * out) {
    if (const htp_verdict v = prepare_binary_kparams(opcode, src0, src1, dst, n_threads, vtcm_size, out); !v) {
        return v;
    }
    out->scale    = opcode == HTP_OP_SWIGLU_OAI ? uint32_t(params[2]) : __builtin_bit_cast(uint32_t, 1.0f);
    out->alibi_c0 = uint32_t(params[3]);
    return HTP_TAKEN;
}

inline htp_verdict prepare_clamped_glu_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_binary_kparams kp{};
    return htp_store_kparams(prepare_clamped_glu_kparams(a.opcode, *a.src[0], *a.src[1], *a.dst, a.params, a.n_threads,
                                                         a.vtcm_size, &kp),
                             kp, kparams);
}

// GGML's SOFT_MAX: w = x * scale + slope * mask, softmax per row. The mask (optional) F16 or F32,
// rows as long as dst's, at least ne1 of them per slice, dims 2-3 repeated; ALiBi (max_bias, op_params
// 1) slopes per head (dim 2) when there is a mask; sinks (an F32 logit per head, src2) join the
// maximum and the denominator. mask and sinks may be null.
constexpr htp_verdict htp_softmax_shapes_supported(const htp_tensor & src0, const htp_tensor * mask,
                                                   const htp_tensor * sinks, const htp_tensor & dst) {
    if (dst.ne[0] > UINT32_MAX / 4 || !htp_same_shape(src0, dst)) {
        return htp_refuse("the result is not of the source's shape");
    }
    const uint32_t row_size = dst.ne[0] * 4;
    if (mask != nullptr) {
        const uint32_t elem = mask->type == HTP_TYPE_F16 ? 2 : 4;
        if ((mask->type != HTP_TYPE_F32 && mask->type != HTP_TYPE_F16) || mask->ne[0] != dst.ne[0] ||
            mask->ne[1] < dst.ne[1] || !htp_rows_inside(*mask, elem)) {
            return htp_refuse("the mask is not F16/F32 rows in order as long as the rows, ne1 of them per slice");
        }
        for (int d = 2; d < 4; ++d) {
            if (mask->ne[d] == 0 || dst.ne[d] % mask->ne[d] != 0) {
                return htp_refuse("the mask does not repeat evenly over dims 2 and 3");
            }
        }
    }
    if (sinks != nullptr && (sinks->type != HTP_TYPE_F32 || sinks->nb[0] != 4 || sinks->ne[0] != dst.ne[2] ||
                             uint64_t(sinks->ne[0]) * 4 > sinks->size)) {
        return htp_refuse("the sinks are not one F32 value per head");
    }
    if (!htp_eltwise_rows_valid(src0, row_size) || !htp_eltwise_rows_valid(dst, row_size)) {
        return htp_refuse("the NPU softmax takes F32 rows in order, apart");
    }
    return HTP_TAKEN;
}

inline htp_verdict prepare_softmax_kparams(const htp_tensor & src0, const htp_tensor * mask, const htp_tensor * sinks,
                                           const htp_tensor & dst, const int32_t params[HTP_OP_MAX_PARAMS],
                                           uint32_t n_threads, uint32_t vtcm_size, htp_binary_kparams * out) {
    const float max_bias = __builtin_bit_cast(float, params[1]);
    if (!(max_bias >= 0.0f) || (max_bias > 0.0f && mask == nullptr)) {
        return htp_refuse("ALiBi's max_bias is negative, NaN, or has no mask");
    }
    if (const htp_verdict v = htp_softmax_shapes_supported(src0, mask, sinks, dst); !v) {
        return v;
    }
    const htp_tensor ones{};  // without a mask: one row per slice, nothing repeated
    htp_tensor       shape = mask != nullptr ? *mask : ones;
    if (mask == nullptr) {
        shape.ne[1] = shape.ne[2] = shape.ne[3] = 1;
    }
    if (const htp_verdict v = htp_binary_plan(dst, dst.ne[1], shape, n_threads, vtcm_size, out); !v) {
        return v;
    }
    out->scale         = uint32_t(params[0]);
    out->src1_row_size = mask == nullptr ? 0 : dst.ne[0] * (mask->type == HTP_TYPE_F16 ? 2 : 4);
    out->flags = (mask != nullptr && mask->type == HTP_TYPE_F16 ? HTP_SOFTMAX_MASK_F16 : 0) |
                         (sinks != nullptr ? HTP_SOFTMAX_SINKS : 0);
    if (max_bias > 0.0f) {
        // GGML: n_head_log2 = 2^floor(log2(n_head)), m0 = 2^(-max_bias / n_head_log2), m1 = 2^(-max_bias / 2 / n_head_log2).
        uint32_t n_head_log2 = 1;
        while (n_head_log2 * 2 <= dst.ne[2]) {
            n_head_log2 *= 2;
        }
        out->flags |= n_head_log2 << 16;
        out->alibi_c0 = __builtin_bit_cast(uint32_t, -max_bias / float(n_head_log2));
        out->alibi_c1 = __builtin_bit_cast(uint32_t, -max_bias / 2.0f / float(n_head_log2));
    }
    return HTP_TAKEN;
}

// src[1] the mask, src[2] the sinks: either may be absent.
inline htp_verdict prepare_softmax_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_binary_kparams kp{};
    return htp_store_kparams(
        prepare_softmax_kparams(*a.src[0], a.src[1], a.src[2], *a.dst, a.params, a.n_threads, a.vtcm_size, &kp), kp,
        kparams);
}

} // namespace hexnpu::proto
