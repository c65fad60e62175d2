// kernel_params of the NPU's element-wise unary ops (htp/ops/unary-ops.cpp) and their host
// preparation: dst = f(src0) row by row (SCALE, SQR, SQRT, NEG, SILU, the activations, STEP,
// CLAMP, LEAKY_RELU, FILL), the row norms and reductions (RMS_NORM, NORM, L2_NORM, SUM_ROWS, MEAN, CUMSUM), and CPY
// between F32, F16 and BF16 (source rows anywhere: GGML's CONT, DUP and CPY of permuted and
// transposed views).
#pragma once

#include "proto/htp-eltwise.h"
#include "proto/htp-opcodes.h"

#include <stdint.h>

namespace hexnpu::proto {

struct htp_unary_kparams {
    htp_eltwise_pipeline pipe;
    uint32_t             scale;  // SCALE: float bits of the factor and of the bias (GGML op_params 0, 1),
                                 // CLAMP: of the minimum and the maximum (op_params 0, 1);
                                 // LEAKY_RELU: of the negative slope (op_params 0);
    uint32_t             bias;   // RMS_NORM, NORM, L2_NORM: of eps (op_params 0) and of 1 / ne0
    fastdiv_values       div_ne1;  // flat row -> (i1, i2, i3)
    fastdiv_values       div_ne2;
    uint32_t             src_type;      // CPY: F32, F16 or BF16 rows in, any of them out (one side F32,
    uint32_t             dst_type;      //   or both the same); the other ops F32 (0) both
    uint32_t             src_row_size;  // bytes each row DMA moves in and out: ne0 * element size
    uint32_t             dst_row_size;
    uint32_t             gather_elem;   // CPY of a transposed source: its element size (blocks of one
                                        // row, each gathered element by element); 0: rows in order
};

static_assert(sizeof(htp_unary_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// CPY between F32, F16 and BF16 (to or from F32, or a same-type copy): elements in order in each
// row, source rows anywhere, destination rows apart, both inside their bytes.
constexpr bool htp_cpy_shapes_supported(const htp_tensor & src0, const htp_tensor & dst) {
    const uint32_t se = htp_cpy_elem_size(src0.type), de = htp_cpy_elem_size(dst.type);
    return se != 0 && de != 0 && (src0.type == dst.type || src0.type == HTP_TYPE_F32 || dst.type == HTP_TYPE_F32) &&
           dst.ne[0] <= UINT32_MAX / 4 && htp_same_shape(src0, dst) && htp_rows_inside(src0, se) &&
           htp_rows_apart(dst, de);
}

// ... and a transposed source (CPY's gather): elements nb[0] != their size apart, all inside.
constexpr bool htp_cpy_gather_supported(const htp_tensor & src0, const htp_tensor & dst) {
    const uint32_t se = htp_cpy_elem_size(src0.type);
    if (se == 0 || src0.nb[0] == se || src0.nb[0] == 0) {
        return false;
    }
    uint64_t end = uint64_t(src0.ne[0] - 1) * src0.nb[0] + se;
    for (int d = 1; d < 4; ++d) {
        end += uint64_t(src0.ne[d] - 1) * src0.nb[d];
    }
    htp_tensor rows = src0;  // the rest as for rows in order
    rows.nb[0]      = se;
    rows.size       = UINT32_MAX;
    return end <= src0.size && htp_cpy_shapes_supported(rows, dst);
}

// SUM_ROWS and MEAN reduce each row to one element: dst [1, ne1, ne2, ne3].
constexpr bool htp_is_row_reduction(uint32_t opcode) { return opcode == HTP_OP_SUM_ROWS || opcode == HTP_OP_MEAN; }

// The element-wise unary ops that also take F16 or BF16 rows (dst of the source's type): widened in
// their slots, computed in fp32, rounded once on the way out.
constexpr bool htp_unary_takes_16bit(uint32_t opcode) {
    return opcode == HTP_OP_SCALE || opcode == HTP_OP_SQR || opcode == HTP_OP_SQRT || opcode == HTP_OP_NEG ||
           opcode == HTP_OP_SILU || opcode == HTP_OP_RELU || opcode == HTP_OP_ABS || opcode == HTP_OP_EXP ||
           opcode == HTP_OP_SIGMOID || opcode == HTP_OP_GELU || opcode == HTP_OP_GELU_QUICK || opcode == HTP_OP_SIN ||
           opcode == HTP_OP_COS || opcode == HTP_OP_CLAMP || opcode == HTP_OP_TANH || opcode == HTP_OP_LOG ||
           opcode == HTP_OP_SOFTPLUS || opcode == HTP_OP_GELU_ERF || opcode == HTP_OP_STEP || opcode == HTP_OP_LEAKY_RELU;
}

constexpr bool htp_unary_shapes_supported(uint32_t opcode, const htp_tensor & src0, const htp_tensor & dst) {
    if (htp_unary_takes_16bit(opcode) && src0.type != HTP_TYPE_F32) {
        return src0.type == dst.type && htp_cpy_shapes_supported(src0, dst) && htp_rows_apart(src0, htp_cpy_elem_size(src0.type));
    }
    if (opcode == HTP_OP_CPY) {
        return htp_cpy_shapes_supported(src0, dst) || htp_cpy_gather_supported(src0, dst);
    }
    if (opcode == HTP_OP_FILL) {  // F32 or F16 rows of one type (the source's rows are not used)
        return (dst.type == HTP_TYPE_F32 || dst.type == HTP_TYPE_F16) && src0.type == dst.type && htp_cpy_shapes_supported(src0, dst);
    }
    if (htp_is_row_reduction(opcode) || opcode == HTP_OP_CUMSUM) {
        // Read-only sources: rows anywhere (permuted views too).
        const uint32_t out_ne0 = opcode == HTP_OP_CUMSUM ? src0.ne[0] : 1;
        return src0.ne[0] <= UINT32_MAX / 4 && dst.ne[0] == out_ne0 && dst.ne[1] == src0.ne[1] &&
               dst.ne[2] == src0.ne[2] && dst.ne[3] == src0.ne[3] && htp_eltwise_source_rows_valid(src0) &&
               htp_eltwise_rows_valid(dst, out_ne0 * 4);
    }
    // F32 rows, the source's anywhere (a permuted view: L2_NORM of the delta net's q and k).
    return dst.ne[0] <= UINT32_MAX / 4 && htp_same_shape(src0, dst) && htp_eltwise_source_rows_valid(src0) &&
           htp_eltwise_rows_valid(dst, dst.ne[0] * 4);
}

// params: the op's GGML op_params (SCALE reads its factor and bias from words 0 and 1).
inline htp_verdict prepare_unary_kparams(uint32_t opcode, const htp_tensor & src0, const htp_tensor & dst,
                                  const int32_t params[HTP_OP_MAX_PARAMS], uint32_t n_threads, uint32_t vtcm_size,
                                  htp_unary_kparams * out) {
    if (!htp_is_unary_op(opcode)) {
        return htp_refuse("not an element-wise unary op");
    }
    if (!htp_unary_shapes_supported(opcode, src0, dst)) {
        return htp_refuse(opcode == HTP_OP_CPY ? "the NPU copy takes F32, F16 or BF16 (one side F32, or one type) rows "
                                                 "in order or a transposed source, the destination's rows apart"
                          : htp_unary_takes_16bit(opcode)
                              ? "the NPU kernel takes F32, F16 or BF16 rows (the result of the source's type), each "
                                "row's elements in order"
                              : "the NPU kernel takes F32 rows of one shape, each row's elements in order");
    }
    htp_unary_kparams kp{};
    const uint64_t    total_rows = uint64_t(dst.ne[1]) * dst.ne[2] * dst.ne[3];
    if (const htp_verdict v = htp_eltwise_plan(total_rows, src0.ne[0] * 4, 2, n_threads, vtcm_size, &kp.pipe); !v) {
        return v;
    }
    if (opcode == HTP_OP_SCALE || opcode == HTP_OP_CLAMP || opcode == HTP_OP_FILL) {
        kp.scale = uint32_t(params[0]);
        kp.bias  = uint32_t(params[1]);
    } else if (opcode == HTP_OP_LEAKY_RELU) {
        kp.scale = uint32_t(params[0]);
    } else if (opcode == HTP_OP_MEAN) {
        kp.bias = __builtin_bit_cast(uint32_t, 1.0f / float(src0.ne[0]));
    } else if (opcode == HTP_OP_RMS_NORM || opcode == HTP_OP_NORM || opcode == HTP_OP_L2_NORM) {
        kp.scale = uint32_t(params[0]);
        kp.bias  = __builtin_bit_cast(uint32_t, 1.0f / float(dst.ne[0]));  // the mean without an NPU division
    }
    kp.div_ne1      = init_fastdiv(dst.ne[1]);
    kp.div_ne2      = init_fastdiv(dst.ne[2]);
    const bool typed = opcode == HTP_OP_CPY || opcode == HTP_OP_FILL || htp_unary_takes_16bit(opcode);
    kp.src_type      = typed ? src0.type : 0;
    kp.dst_type      = typed ? dst.type : 0;
    kp.src_row_size  = src0.ne[0] * (typed ? htp_cpy_elem_size(src0.type) : 4);
    kp.dst_row_size  = dst.ne[0] * (typed ? htp_cpy_elem_size(dst.type) : 4);
    if (opcode == HTP_OP_CPY && htp_cpy_gather_supported(src0, dst)) {
        kp.gather_elem     = htp_cpy_elem_size(src0.type);
        kp.pipe.block_rows = 1;
        kp.pipe.vtcm_size  = uint32_t(htp_eltwise_vtcm_size(kp.pipe, 2));
    }
    *out            = kp;
    return HTP_TAKEN;
}

inline htp_verdict prepare_unary_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_unary_kparams kp{};
    return htp_store_kparams(
        prepare_unary_kparams(a.opcode, *a.src[0], *a.dst, a.params, a.n_threads, a.vtcm_size, &kp), kp, kparams);
}

} // namespace hexnpu::proto
