#include "htp-op-prep.h"

#include "htp-buffer.h"

#include "proto/htp-flash-attn-hmx.h"
#include "proto/htp-flash-attn.h"
#include "proto/htp-get-rows-q.h"
#include "proto/htp-binary.h"
#include "proto/htp-unary.h"
#include "proto/htp-rope.h"
#include "proto/htp-rows.h"
#include "proto/htp-layout.h"
#include "proto/htp-matmul.h"
#include "proto/htp-matmul-hmx.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-sort.h"

#include <cstring>
#include <memory>

namespace hexnpu::hexagon {
namespace {

// The NPU opcode of a node, HTP_OP_NONE when it has no kernel. `stored`: preparing a batch, when a
// table's stored form (tiled or flat) may be looked at; supports_op decides from the flat form
// (every type the NPU takes tiled it also takes flat, as the spec asks).
uint32_t opcode_of(const ggml_tensor * node, bool stored) {
    switch (node->op) {
        case GGML_OP_ADD: return proto::HTP_OP_ADD;
        case GGML_OP_SUB: return proto::HTP_OP_SUB;
        case GGML_OP_MUL: return proto::HTP_OP_MUL;
        case GGML_OP_DIV: return proto::HTP_OP_DIV;
        case GGML_OP_ADD_ID: return proto::HTP_OP_ADD_ID;
        case GGML_OP_SCALE: return proto::HTP_OP_SCALE;
        case GGML_OP_SQR: return proto::HTP_OP_SQR;
        case GGML_OP_SQRT: return proto::HTP_OP_SQRT;
        case GGML_OP_SUM_ROWS: return proto::HTP_OP_SUM_ROWS;
        case GGML_OP_MEAN: return proto::HTP_OP_MEAN;
        case GGML_OP_CUMSUM: return proto::HTP_OP_CUMSUM;
        case GGML_OP_LOG: return proto::HTP_OP_LOG;
        case GGML_OP_FILL: return proto::HTP_OP_FILL;
        case GGML_OP_SIN: return proto::HTP_OP_SIN;
        case GGML_OP_COS: return proto::HTP_OP_COS;
        case GGML_OP_CLAMP: return proto::HTP_OP_CLAMP;
        case GGML_OP_MUL_MAT: return proto::HTP_OP_MUL_MAT;
        case GGML_OP_MUL_MAT_ID: return proto::HTP_OP_MUL_MAT_ID;
        case GGML_OP_RMS_NORM: return proto::HTP_OP_RMS_NORM;
        case GGML_OP_NORM: return proto::HTP_OP_NORM;
        case GGML_OP_L2_NORM: return proto::HTP_OP_L2_NORM;
        case GGML_OP_CONT:
        case GGML_OP_DUP:
        case GGML_OP_CPY:
            // F32, F16, BF16 (to or from F32, or the same type) of one shape, or into a contiguous
            // destination of another shape (a CPY node is the view of its destination src[1]);
            // F32 into a block type SET_ROWS writes (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) of one shape: CPY_Q.
            if (proto::htp_qblock_codes(uint32_t(node->type)) != 0) {
                return node->src[0]->type == GGML_TYPE_F32 && ggml_are_same_shape(node, node->src[0])
                           ? proto::HTP_OP_CPY_Q
                           : proto::HTP_OP_NONE;
            }
            if (node->type == GGML_TYPE_F32 && ggml_are_same_shape(node, node->src[0]) &&
                proto::htp_get_rows_q_type(uint32_t(node->src[0]->type), stored && htp_stored_tiled(node->src[0]))) {
                return proto::HTP_OP_CPY_DQ;  // dequantizing: GET_ROWS_Q's kernel
            }
            return proto::htp_cpy_elem_size(uint32_t(node->type)) != 0 &&
                           proto::htp_cpy_elem_size(uint32_t(node->src[0]->type)) != 0 &&
                           (ggml_are_same_shape(node, node->src[0]) ||
                            (ggml_is_contiguous(node) && ggml_nelements(node) == ggml_nelements(node->src[0])))
                       ? proto::HTP_OP_CPY
                       : proto::HTP_OP_NONE;
        case GGML_OP_PAD:
            return node->type == GGML_TYPE_F32 && node->src[0]->type == GGML_TYPE_F32 ? proto::HTP_OP_PAD
                                                                                      : proto::HTP_OP_NONE;
        case GGML_OP_ROPE:
            // F32, F16 or BF16 rows, I32 positions, F32 frequency factors or none (modes, YaRN and
            // the factors' length: the kparams).
            return node->type == node->src[0]->type && proto::htp_cpy_elem_size(uint32_t(node->type)) != 0 &&
                           node->src[1]->type == GGML_TYPE_I32 &&
                           (node->src[2] == nullptr || node->src[2]->type == GGML_TYPE_F32)
                       ? proto::HTP_OP_ROPE
                       : proto::HTP_OP_NONE;
        case GGML_OP_GET_ROWS:
            // From activations (F32/F16/BF16 rows, I32) into F32, or from a quantized table (a token
            // embedding, tiled in a REPACK buffer or flat) into F32: GET_ROWS_Q.
            if (node->src[0]->type == GGML_TYPE_F32 || node->src[0]->type == GGML_TYPE_F16 ||
                node->src[0]->type == GGML_TYPE_BF16 || node->src[0]->type == GGML_TYPE_I32) {
                return proto::HTP_OP_GET_ROWS;
            }
            return proto::htp_get_rows_q_type(uint32_t(node->src[0]->type), stored && htp_stored_tiled(node->src[0]))
                       ? proto::HTP_OP_GET_ROWS_Q
                       : proto::HTP_OP_NONE;
        case GGML_OP_SET_ROWS:
            // F32 rows into F32, F16, BF16 or a block type (the KV cache); types and layout: the kparams.
            return node->src[0]->type == GGML_TYPE_F32 ? proto::HTP_OP_SET_ROWS : proto::HTP_OP_NONE;
        case GGML_OP_FLASH_ATTN_EXT: return proto::HTP_OP_FLASH_ATTN_EXT;  // types and shapes: the kparams
        case GGML_OP_CONCAT: return proto::HTP_OP_CONCAT;  // types and layout: the kparams
        case GGML_OP_REPEAT: return proto::HTP_OP_REPEAT;
        case GGML_OP_ARGSORT: return proto::HTP_OP_ARGSORT;  // F32 keys, I32 indices: the kparams
        case GGML_OP_TOP_K: return proto::HTP_OP_TOP_K;
        case GGML_OP_SOFT_MAX: return proto::HTP_OP_SOFT_MAX;  // mask, ALiBi and sinks: the kparams
        case GGML_OP_GLU:
            // A separate gate, or the fused form: [x | gate] rows (swapped: [gate | x]) read as two
            // half-row views of src0.
            switch (ggml_get_op_param<int32_t>(node, 0)) {
                case GGML_GLU_OP_GEGLU: return proto::HTP_OP_GEGLU;
                case GGML_GLU_OP_SWIGLU: return proto::HTP_OP_SWIGLU;
                case GGML_GLU_OP_SWIGLU_OAI: return proto::HTP_OP_SWIGLU_OAI;
                default: return proto::HTP_OP_NONE;
            }
        case GGML_OP_UNARY:
            switch (ggml_get_op_param<int32_t>(node, 0)) {
                case GGML_UNARY_OP_NEG: return proto::HTP_OP_NEG;
                case GGML_UNARY_OP_SILU: return proto::HTP_OP_SILU;
                case GGML_UNARY_OP_RELU: return proto::HTP_OP_RELU;
                case GGML_UNARY_OP_ABS: return proto::HTP_OP_ABS;
                case GGML_UNARY_OP_EXP: return proto::HTP_OP_EXP;
                case GGML_UNARY_OP_SIGMOID: return proto::HTP_OP_SIGMOID;
                case GGML_UNARY_OP_GELU: return proto::HTP_OP_GELU;
                case GGML_UNARY_OP_GELU_QUICK: return proto::HTP_OP_GELU_QUICK;
                case GGML_UNARY_OP_TANH: return proto::HTP_OP_TANH;
                case GGML_UNARY_OP_SOFTPLUS: return proto::HTP_OP_SOFTPLUS;
                case GGML_UNARY_OP_GELU_ERF: return proto::HTP_OP_GELU_ERF;
                default: return proto::HTP_OP_NONE;
            }
        default: return proto::HTP_OP_NONE;
    }
}

// The descriptor the NPU will see, from static properties: the buffer offset is not known yet
// and no kernel parameter depends on it. A weight's tiles (padding rows included) only when
// preparing a batch (`stored`); supports_op sees every tensor flat.
std::optional<proto::htp_tensor> static_descriptor(const ggml_tensor * t, bool stored) {
    const bool        tiled = stored && htp_stored_tiled(t);
    proto::htp_tensor d{};
    d.size  = tiled ? htp_stored_size(t) : ggml_nbytes(t);
    d.type  = uint32_t(t->type);
    d.flags = tiled ? proto::HTP_TENSOR_TILED : 0;
    for (int i = 0; i < 4; ++i) {
        if (t->ne[i] < 0 || t->ne[i] > INT64_C(0xffffffff) || t->nb[i] > 0xffffffffu) {
            return std::nullopt;
        }
        d.ne[i] = uint32_t(t->ne[i]);
        d.nb[i] = uint32_t(t->nb[i]);
    }
    return d;
}

// Half of each row of a fused GLU's src0: elements [first, first + n).
std::shared_ptr<const ggml_tensor> half_rows(const ggml_tensor * src, int64_t first, int64_t n) {
    auto view   = std::make_shared<ggml_tensor>(*src);
    view->ne[0] = n;
    if (src->data != nullptr) {
        view->data = static_cast<uint8_t *>(src->data) + first * int64_t(src->nb[0]);
    }
    return view;
}

// A contiguous destination seen with the source's shape: the same bytes in the same order.
std::shared_ptr<const ggml_tensor> reshaped_destination(const ggml_tensor * dst, const ggml_tensor * src) {
    auto view = std::make_shared<ggml_tensor>(*dst);
    view->nb[0] = ggml_type_size(dst->type);
    for (int i = 0; i < 4; ++i) {
        view->ne[i] = src->ne[i];
        if (i > 0) {
            view->nb[i] = view->nb[i - 1] * size_t(view->ne[i - 1]);
        }
    }
    return view;
}

} // namespace

std::optional<htp_op> prepare_htp_op(const ggml_tensor * node, const htp_op_target & target) {
    const uint32_t opcode = opcode_of(node, target.stored);
    if (opcode == proto::HTP_OP_NONE) {
        return std::nullopt;
    }
    htp_op op;
    op.desc.opcode = opcode;
    op.node        = node;
    op.dst[0]      = node;
    static_assert(sizeof op.desc.params == sizeof node->op_params);
    std::memcpy(op.desc.params, node->op_params, sizeof op.desc.params);

    if (opcode == proto::HTP_OP_CPY && !ggml_are_same_shape(node, node->src[0])) {
        op.dst_view = reshaped_destination(node, node->src[0]);
        op.dst[0]   = op.dst_view.get();
    }
    op.src[0] = node->src[0];
    if (node->op == GGML_OP_GLU && node->src[1] == nullptr) {
        const int64_t n       = node->ne[0];
        const bool    swapped = ggml_get_op_param<int32_t>(node, 1) != 0;
        if (node->src[0]->ne[0] != 2 * n) {
            return std::nullopt;
        }
        op.src_views = {half_rows(node->src[0], swapped ? n : 0, n), half_rows(node->src[0], swapped ? 0 : n, n)};
        op.src[0]    = op.src_views[0].get();
        op.src[1]    = op.src_views[1].get();
    }
    const auto dst  = static_descriptor(op.dst[0], target.stored);
    const auto src0 = static_descriptor(op.src[0], target.stored);
    if (!dst || !src0) {
        return std::nullopt;
    }
    // GGML_PREC_F32 asks for fp32 outputs: the HMX unit's fp16 output tiles do not give them. A
    // weight with values past fp16's range cannot become fp16 tiles: the HVX kernels take it.
    const bool hmx_allowed = target.hmx != htp_hmx_matmul::off && ggml_get_op_param<int32_t>(node, 0) != GGML_PREC_F32 &&
                             !(target.stored && htp_stored_beyond_fp16(node->src[0]));
    if (opcode == proto::HTP_OP_MUL_MAT && hmx_allowed) {
        // Prompt-sized activations (or every shape, when forced) on the HMX unit where it takes them.
        const auto                     src1 = static_descriptor(node->src[1], target.stored);
        proto::htp_matmul_hmx_kparams kp{};
        const bool rows = target.hmx == htp_hmx_matmul::always || node->src[1]->ne[1] > int64_t(proto::HTP_MM_HMX_MIN_ROWS);
        if (src1 && rows && proto::prepare_matmul_hmx_kparams(*src0, *src1, *dst, target.n_threads, target.vtcm_size, &kp)) {
            op.desc.opcode = proto::HTP_OP_MUL_MAT_HMX;
            op.src[1]      = node->src[1];
            std::memcpy(op.desc.kparams, &kp, sizeof kp);
            return op;
        }
    }
    if (opcode == proto::HTP_OP_MUL_MAT) {
        const auto                src1 = static_descriptor(node->src[1], target.stored);
        proto::htp_matmul_kparams kp{};
        if (!src1 || !proto::prepare_matmul_kparams(*src0, *src1, *dst, target.n_threads, target.vtcm_size, &kp)) {
            return std::nullopt;
        }
        op.src[1] = node->src[1];
        std::memcpy(op.desc.kparams, &kp, sizeof kp);
        return op;
    }
    if (opcode == proto::HTP_OP_MUL_MAT_ID && hmx_allowed) {
        // Prompts: more than HTP_MM_HMX_MIN_ROWS routed rows per expert on average.
        const auto                    src1 = static_descriptor(node->src[1], target.stored);
        const auto                    ids  = static_descriptor(node->src[2], target.stored);
        proto::htp_matmul_hmx_kparams kp{};
        const int64_t                 routed = node->src[2]->ne[0] * node->src[2]->ne[1];
        const bool rows = target.hmx == htp_hmx_matmul::always ||
                          routed > int64_t(proto::HTP_MM_HMX_MIN_ROWS) * node->src[0]->ne[2];
        if (src1 && ids && rows &&
            proto::prepare_matmul_id_hmx_kparams(*src0, *src1, *ids, *dst, target.n_threads, target.vtcm_size, &kp)) {
            op.desc.opcode = proto::HTP_OP_MUL_MAT_ID_HMX;
            op.src[1]      = node->src[1];
            op.src[2]      = node->src[2];
            std::memcpy(op.desc.kparams, &kp, sizeof kp);
            return op;
        }
    }
    if (opcode == proto::HTP_OP_MUL_MAT_ID) {
        const auto                src1 = static_descriptor(node->src[1], target.stored);
        const auto                ids  = static_descriptor(node->src[2], target.stored);
        proto::htp_matmul_kparams kp{};
        if (!src1 || !ids ||
            !proto::prepare_matmul_id_kparams(*src0, *src1, *ids, *dst, target.n_threads, target.vtcm_size, &kp)) {
            return std::nullopt;
        }
        op.src[1] = node->src[1];
        op.src[2] = node->src[2];
        std::memcpy(op.desc.kparams, &kp, sizeof kp);
        return op;
    }
    if (opcode == proto::HTP_OP_ROPE) {
        const auto              pos = static_descriptor(node->src[1], target.stored);
        const auto              ff  = node->src[2] ? static_descriptor(node->src[2], target.stored) : std::nullopt;
        proto::htp_rope_kparams kp{};
        if (!pos || (node->src[2] && !ff) ||
            !proto::prepare_rope_kparams(*src0, *pos, ff ? &*ff : nullptr, *dst, op.desc.params, target.n_threads,
                                         target.vtcm_size, &kp)) {
            return std::nullopt;
        }
        op.src[1] = node->src[1];
        op.src[2] = node->src[2];
        std::memcpy(op.desc.kparams, &kp, sizeof kp);
        return op;
    }
    if (opcode == proto::HTP_OP_FLASH_ATTN_EXT) {
        const auto k     = static_descriptor(node->src[1], target.stored);
        const auto v     = static_descriptor(node->src[2], target.stored);
        const auto mask  = node->src[3] ? static_descriptor(node->src[3], target.stored) : std::nullopt;
        const auto sinks = node->src[4] ? static_descriptor(node->src[4], target.stored) : std::nullopt;
        if (!k || !v || (node->src[3] && !mask) || (node->src[4] && !sinks)) {
            return std::nullopt;
        }
        for (int i = 1; i < 5; ++i) {
            op.src[i] = node->src[i];
        }
        // A prompt's attention on the HMX unit where it takes the op (no ALiBi or softcap, head
        // size up to 256), else HVX.
        const bool prompt = target.fa_hmx == htp_hmx_matmul::always ||
                            (target.fa_hmx == htp_hmx_matmul::prompts && src0->ne[1] >= proto::HTP_FA_HMX_MIN_ROWS);
        proto::htp_fa_hmx_kparams hk{};
        if (prompt && proto::prepare_flash_attn_hmx_kparams(*src0, *k, *v, mask ? &*mask : nullptr,
                                                            sinks ? &*sinks : nullptr, *dst, op.desc.params,
                                                            target.n_threads, target.vtcm_size, &hk)) {
            op.desc.opcode = proto::HTP_OP_FLASH_ATTN_EXT_HMX;
            std::memcpy(op.desc.kparams, &hk, sizeof hk);
            return op;
        }
        proto::htp_flash_attn_kparams kp{};
        if (!proto::prepare_flash_attn_kparams(*src0, *k, *v, mask ? &*mask : nullptr, sinks ? &*sinks : nullptr, *dst,
                                               op.desc.params, target.n_threads, target.vtcm_size, &kp)) {
            return std::nullopt;
        }
        std::memcpy(op.desc.kparams, &kp, sizeof kp);
        return op;
    }
    if (opcode == proto::HTP_OP_PAD) {
        proto::htp_pad_kparams kp{};
        if (!proto::prepare_pad_kparams(*src0, *dst, op.desc.params, target.n_threads, target.vtcm_size, &kp)) {
            return std::nullopt;
        }
        std::memcpy(op.desc.kparams, &kp, sizeof kp);
        return op;
    }
    if (opcode == proto::HTP_OP_CONCAT || opcode == proto::HTP_OP_REPEAT) {
        const bool                concat = opcode == proto::HTP_OP_CONCAT;
        const auto                b      = concat ? static_descriptor(node->src[1], target.stored) : std::nullopt;
        proto::htp_layout_kparams kp{};
        if ((concat && !b) || !proto::prepare_layout_kparams(opcode, *src0, b ? &*b : nullptr, *dst, op.desc.params,
                                                             target.n_threads, target.vtcm_size, &kp)) {
            return std::nullopt;
        }
        if (concat) {
            op.src[1] = node->src[1];
        }
        std::memcpy(op.desc.kparams, &kp, sizeof kp);
        return op;
    }
    if (opcode == proto::HTP_OP_ARGSORT || opcode == proto::HTP_OP_TOP_K) {
        proto::htp_sort_kparams kp{};
        if (!proto::prepare_sort_kparams(opcode, *src0, *dst, op.desc.params, target.n_threads, target.vtcm_size, &kp)) {
            return std::nullopt;
        }
        std::memcpy(op.desc.kparams, &kp, sizeof kp);
        return op;
    }
    if (opcode == proto::HTP_OP_GET_ROWS) {
        const auto                  ids = static_descriptor(node->src[1], target.stored);
        proto::htp_get_rows_kparams kp{};
        if (!ids || !proto::prepare_get_rows_kparams(*src0, *ids, *dst, target.n_threads, target.vtcm_size, &kp)) {
            return std::nullopt;
        }
        op.src[1] = node->src[1];
        std::memcpy(op.desc.kparams, &kp, sizeof kp);
        return op;
    }
    if (opcode == proto::HTP_OP_GET_ROWS_Q) {
        const auto                    ids = static_descriptor(node->src[1], target.stored);
        proto::htp_get_rows_q_kparams kp{};
        if (!ids || !proto::prepare_get_rows_q_kparams(*src0, &*ids, *dst, target.n_threads, target.vtcm_size, &kp)) {
            return std::nullopt;
        }
        op.src[1] = node->src[1];
        std::memcpy(op.desc.kparams, &kp, sizeof kp);
        return op;
    }
    if (opcode == proto::HTP_OP_CPY_DQ) {
        proto::htp_get_rows_q_kparams kp{};
        if (!proto::prepare_get_rows_q_kparams(*src0, nullptr, *dst, target.n_threads, target.vtcm_size, &kp)) {
            return std::nullopt;
        }
        std::memcpy(op.desc.kparams, &kp, sizeof kp);
        return op;
    }
    if (opcode == proto::HTP_OP_SET_ROWS) {
        const auto                  ids = static_descriptor(node->src[1], target.stored);
        proto::htp_set_rows_kparams kp{};
        if (!ids || !proto::prepare_set_rows_kparams(*src0, &*ids, *dst, target.n_threads, target.vtcm_size, &kp)) {
            return std::nullopt;
        }
        op.src[1] = node->src[1];
        std::memcpy(op.desc.kparams, &kp, sizeof kp);
        return op;
    }
    if (opcode == proto::HTP_OP_CPY_Q) {
        proto::htp_set_rows_kparams kp{};
        if (!proto::prepare_set_rows_kparams(*src0, nullptr, *dst, target.n_threads, target.vtcm_size, &kp)) {
            return std::nullopt;
        }
        std::memcpy(op.desc.kparams, &kp, sizeof kp);
        return op;
    }
    if (opcode == proto::HTP_OP_SOFT_MAX) {
        const auto                mask  = node->src[1] ? static_descriptor(node->src[1], target.stored) : std::nullopt;
        const auto                sinks = node->src[2] ? static_descriptor(node->src[2], target.stored) : std::nullopt;
        proto::htp_binary_kparams kp{};
        if ((node->src[1] && !mask) || (node->src[2] && !sinks) ||
            !proto::prepare_softmax_kparams(*src0, mask ? &*mask : nullptr, sinks ? &*sinks : nullptr, *dst,
                                            op.desc.params, target.n_threads, target.vtcm_size, &kp)) {
            return std::nullopt;
        }
        op.src[1] = node->src[1];
        op.src[2] = node->src[2];
        std::memcpy(op.desc.kparams, &kp, sizeof kp);
        return op;
    }
    if (opcode == proto::HTP_OP_ADD_ID) {
        const auto                src1 = static_descriptor(node->src[1], target.stored);
        const auto                ids  = static_descriptor(node->src[2], target.stored);
        proto::htp_binary_kparams kp{};
        if (!src1 || !ids ||
            !proto::prepare_add_id_kparams(*src0, *src1, *ids, *dst, target.n_threads, target.vtcm_size, &kp)) {
            return std::nullopt;
        }
        op.src[1] = node->src[1];
        op.src[2] = node->src[2];
        std::memcpy(op.desc.kparams, &kp, sizeof kp);
        return op;
    }
    if (proto::htp_is_binary_op(opcode)) {
        const ggml_tensor * b    = op.src[1] ? op.src[1] : node->src[1];
        const auto          src1 = static_descriptor(b, target.stored);
        proto::htp_binary_kparams kp{};
        const bool ok = src1 && (opcode == proto::HTP_OP_SWIGLU_OAI
                                     ? proto::prepare_swiglu_oai_kparams(*src0, *src1, *dst, op.desc.params,
                                                                         target.n_threads, target.vtcm_size, &kp)
                                     : proto::prepare_binary_kparams(opcode, *src0, *src1, *dst, target.n_threads,
                                                                     target.vtcm_size, &kp));
        if (!ok) {
            return std::nullopt;
        }
        op.src[1] = b;
        std::memcpy(op.desc.kparams, &kp, sizeof kp);
        return op;
    }
    proto::htp_unary_kparams kp{};
    if (!proto::prepare_unary_kparams(opcode, *src0, *dst, op.desc.params, target.n_threads, target.vtcm_size, &kp)) {
        return std::nullopt;
    }
    std::memcpy(op.desc.kparams, &kp, sizeof kp);
    return op;
}

std::optional<htp_op> prepare_htp_rms_norm_mul(const ggml_tensor * norm, const ggml_tensor * mul,
                                               const htp_op_target & target) {
    if (norm->op != GGML_OP_RMS_NORM || mul->op != GGML_OP_MUL || mul->src[0] != norm || mul->src[1] == norm) {
        return std::nullopt;
    }
    const auto src0 = static_descriptor(norm->src[0], target.stored);
    const auto src1 = static_descriptor(mul->src[1], target.stored);
    const auto dst  = static_descriptor(mul, target.stored);
    proto::htp_binary_kparams kp{};
    if (!src0 || !src1 || !dst ||
        !proto::prepare_rms_norm_mul_kparams(*src0, *src1, *dst, uint32_t(norm->op_params[0]), target.n_threads,
                                             target.vtcm_size, &kp)) {
        return std::nullopt;
    }
    htp_op op;
    op.desc.opcode = proto::HTP_OP_RMS_NORM_MUL;
    op.node        = mul;
    op.src[0]      = norm->src[0];
    op.src[1]      = mul->src[1];
    op.dst[0]      = mul;
    std::memcpy(op.desc.params, norm->op_params, sizeof op.desc.params);
    std::memcpy(op.desc.kparams, &kp, sizeof kp);
    return op;
}

std::string htp_refusal_reason(const ggml_tensor * node, const htp_op_target & target) {
    if (prepare_htp_op(node, target)) {
        return "";
    }
    if (opcode_of(node, target.stored) == proto::HTP_OP_NONE) {
        return std::string("no NPU kernel for ") + ggml_op_desc(node);
    }
    // Taken with all the VTCM the 32-bit layouts can address: the session's VTCM is the cause.
    htp_op_target roomy = target;
    roomy.vtcm_size     = UINT32_MAX & ~uint32_t(4095);
    if (prepare_htp_op(node, roomy)) {
        return "the op does not fit the session's VTCM (" + std::to_string(target.vtcm_size >> 10) +
               " KiB; HEXNPU_VTCM_SIZE sets the virtual NPU's)";
    }
    switch (node->op) {
        case GGML_OP_MUL_MAT:
        case GGML_OP_MUL_MAT_ID: break;
        case GGML_OP_FLASH_ATTN_EXT:
            return "the NPU kernel takes F32 Q, F16 or F32 K/V of one head size (a multiple of 64 up to 512), an "
                   "F16/F32 mask, dims 3 of 1";
        case GGML_OP_ROPE:
            return "the NPU kernel takes F32/F16/BF16 rows in order, an even n_dims, NORMAL or NEOX (no MROPE), I32 "
                   "positions";
        case GGML_OP_ARGSORT:
        case GGML_OP_TOP_K:
            return "the NPU sort takes F32 rows of at most 2^22 keys (I32 indices out) whose keys and indices fit "
                   "the session's VTCM";
        case GGML_OP_GET_ROWS:
        case GGML_OP_SET_ROWS:
            return "the NPU kernel takes F32/F16/BF16 rows or a quantized table (tiled, or flat but not from the "
                   "file's mapping) with I32/I64 ids, rows in order";
        default: return "the NPU kernel does not take these types, shapes or strides";
    }
    const ggml_tensor * w = node->src[0];
    const ggml_tensor * a = node->src[1];
    if (!proto::htp_matmul_weight_type(uint32_t(w->type))) {
        return std::string("weight type ") + ggml_type_name(w->type) + " has no NPU matmul kernel (the tiled types q4_0 q4_1 q8_0 iq4_nl mxfp4 q1_0 q2_0 q2_K..q6_K, q5_0 q5_1 flat, and f32 f16 bf16)";
    }
    if (a->type != GGML_TYPE_F32 && a->type != GGML_TYPE_F16) {
        return std::string("activations of type ") + ggml_type_name(a->type) + " (the NPU matmul takes f32 and f16)";
    }
    if (w->ne[0] % proto::htp_matmul_block_elems(uint32_t(w->type)) != 0) {
        return "k = " + std::to_string(w->ne[0]) + " is not a multiple of the weight type's block";
    }
    if (node->op == GGML_OP_MUL_MAT && (a->ne[2] % w->ne[2] != 0 || a->ne[3] % w->ne[3] != 0)) {
        return "the activations do not broadcast over the weight matrices";
    }
    if (node->op == GGML_OP_MUL_MAT_ID && (node->src[2]->type != GGML_TYPE_I32 || node->src[2]->nb[0] != 4)) {
        return "expert ids of type " + std::string(ggml_type_name(node->src[2]->type)) + " (the NPU takes i32 ids in order)";
    }
    if (a->nb[0] != ggml_type_size(a->type) || node->nb[0] != 4 ||
        (proto::htp_matmul_float_weight(uint32_t(w->type)) && w->nb[0] != ggml_type_size(w->type))) {
        return "weight, activation or output elements are not consecutive (a transposed view)";
    }
    return "the matmul does not fit the session's VTCM";
}

} // namespace hexnpu::hexagon
