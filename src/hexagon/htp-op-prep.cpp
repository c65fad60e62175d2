#include "htp-op-prep.h"

#include "htp-buffer.h"

#include "proto/htp-ops.h"
#include "proto/htp-types.h"

#include <cstring>
#include <memory>

namespace hexnpu::hexagon {
namespace {

// proto/htp-types.h must give GGML's type ids (compared as integers: two enums).
constexpr bool same_id(int htp, int ggml) { return htp == ggml; }
static_assert(same_id(proto::HTP_TYPE_F32, GGML_TYPE_F32) && same_id(proto::HTP_TYPE_F16, GGML_TYPE_F16) &&
              same_id(proto::HTP_TYPE_Q4_0, GGML_TYPE_Q4_0) && same_id(proto::HTP_TYPE_Q4_1, GGML_TYPE_Q4_1) &&
              same_id(proto::HTP_TYPE_Q5_0, GGML_TYPE_Q5_0) && same_id(proto::HTP_TYPE_Q5_1, GGML_TYPE_Q5_1) &&
              same_id(proto::HTP_TYPE_Q8_0, GGML_TYPE_Q8_0) && same_id(proto::HTP_TYPE_Q2_K, GGML_TYPE_Q2_K) &&
              same_id(proto::HTP_TYPE_Q3_K, GGML_TYPE_Q3_K) && same_id(proto::HTP_TYPE_Q4_K, GGML_TYPE_Q4_K) &&
              same_id(proto::HTP_TYPE_Q5_K, GGML_TYPE_Q5_K) && same_id(proto::HTP_TYPE_Q6_K, GGML_TYPE_Q6_K) &&
              same_id(proto::HTP_TYPE_IQ4_NL, GGML_TYPE_IQ4_NL) && same_id(proto::HTP_TYPE_I32, GGML_TYPE_I32) &&
              same_id(proto::HTP_TYPE_I64, GGML_TYPE_I64) && same_id(proto::HTP_TYPE_BF16, GGML_TYPE_BF16) &&
              same_id(proto::HTP_TYPE_MXFP4, GGML_TYPE_MXFP4) && same_id(proto::HTP_TYPE_Q1_0, GGML_TYPE_Q1_0) &&
              same_id(proto::HTP_TYPE_Q2_0, GGML_TYPE_Q2_0),
              "proto/htp-types.h must give GGML's type ids");

bool is_float_rows(ggml_type t) { return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16; }

// The choices between NPU kernels that take the same GGML op. GGML_PREC_F32 asks for fp32
// outputs, which the HMX unit's fp16 output tiles do not give; a weight with values past fp16's
// range cannot become fp16 tiles (known once stored: a batch's choice, not supports_op's).
bool hmx_may_take(const ggml_tensor * node, const htp_op_target & target) {
    return target.hmx != htp_hmx_matmul::off && ggml_get_op_param<int32_t>(node, 0) != GGML_PREC_F32 &&
           !(target.stored && htp_stored_beyond_fp16(node->src[0]));
}
bool matmul_on_hmx(const ggml_tensor * node, const htp_op_target & target) {
    return hmx_may_take(node, target) &&
           (target.hmx == htp_hmx_matmul::always || node->src[1]->ne[1] > int64_t(proto::HTP_MM_HMX_MIN_ROWS));
}
bool matmul_id_on_hmx(const ggml_tensor * node, const htp_op_target & target) {
    // Prompts: more than HTP_MM_HMX_MIN_ROWS routed rows, so that an expert may get that many
    // (prepare_htp_ops then queues the HVX kernel for the experts routed fewer).
    const int64_t routed = node->src[2]->ne[0] * node->src[2]->ne[1];
    return hmx_may_take(node, target) &&
           (target.hmx == htp_hmx_matmul::always || routed > int64_t(proto::HTP_MM_HMX_MIN_ROWS));
}
bool attention_on_hmx(const ggml_tensor * node, const htp_op_target & target) {
    return target.fa_hmx == htp_hmx_matmul::always ||
           (target.fa_hmx == htp_hmx_matmul::prompts && node->src[0]->ne[1] >= proto::HTP_FA_HMX_MIN_ROWS);
}
bool delta_net_on_hmx(const ggml_tensor * node, const htp_op_target & target) {
    return target.gdn_hmx == htp_hmx_matmul::prompts && node->src[2]->ne[2] >= int64_t(proto::HTP_GDN_HMX_MIN_TOKENS);
}
bool into_block_type(const ggml_tensor * node, const htp_op_target &) {
    return proto::htp_qblock_codes(uint32_t(node->type)) != 0;
}
bool from_quantized(const ggml_tensor * node, const htp_op_target &) {
    return node->type == GGML_TYPE_F32 && !is_float_rows(node->src[0]->type);
}
bool from_rows(const ggml_tensor * node, const htp_op_target &) {
    return is_float_rows(node->src[0]->type) || node->src[0]->type == GGML_TYPE_I32;
}

// How a GGML node becomes an NPU op: the rows of its GGML op (and sub-op: op_params 0 of UNARY
// and GLU), tried in order. A row whose `when` says no is passed over; one marked `or_next` that
// refuses passes to the next (an HMX kernel before its HVX one); any other row's verdict is the
// node's. The NPU op's sources are the node's, in order (see the registry for how many), but
// for the views prepare_htp_op makes (fused GLU halves, a CPY into another shape).
struct ggml_row {
    ggml_op  op;
    int32_t  sub;  // -1: any
    uint32_t opcode;
    bool (*when)(const ggml_tensor * node, const htp_op_target & target) = nullptr;
    const char * when_text                                               = nullptr;  // for docs/ops.md
    bool         or_next                                                 = false;
};

constexpr ggml_row GGML_ROWS[] = {
    {GGML_OP_ADD, -1, proto::HTP_OP_ADD},
    {GGML_OP_SUB, -1, proto::HTP_OP_SUB},
    {GGML_OP_MUL, -1, proto::HTP_OP_MUL},
    {GGML_OP_DIV, -1, proto::HTP_OP_DIV},
    {GGML_OP_ADD_ID, -1, proto::HTP_OP_ADD_ID},
    {GGML_OP_SOFT_MAX, -1, proto::HTP_OP_SOFT_MAX},
    {GGML_OP_GLU, GGML_GLU_OP_GEGLU, proto::HTP_OP_GEGLU},
    {GGML_OP_GLU, GGML_GLU_OP_SWIGLU, proto::HTP_OP_SWIGLU},
    {GGML_OP_GLU, GGML_GLU_OP_SWIGLU_OAI, proto::HTP_OP_SWIGLU_OAI},
    {GGML_OP_GLU, GGML_GLU_OP_SWIGLU_CLAMP, proto::HTP_OP_SWIGLU_CLAMP},
    {GGML_OP_GLU, GGML_GLU_OP_REGLU, proto::HTP_OP_REGLU},
    {GGML_OP_GLU, GGML_GLU_OP_GEGLU_ERF, proto::HTP_OP_GEGLU_ERF},
    {GGML_OP_GLU, GGML_GLU_OP_GEGLU_QUICK, proto::HTP_OP_GEGLU_QUICK},
    {GGML_OP_SCALE, -1, proto::HTP_OP_SCALE},
    {GGML_OP_SQR, -1, proto::HTP_OP_SQR},
    {GGML_OP_SQRT, -1, proto::HTP_OP_SQRT},
    {GGML_OP_LOG, -1, proto::HTP_OP_LOG},
    {GGML_OP_SIN, -1, proto::HTP_OP_SIN},
    {GGML_OP_COS, -1, proto::HTP_OP_COS},
    {GGML_OP_CLAMP, -1, proto::HTP_OP_CLAMP},
    {GGML_OP_FILL, -1, proto::HTP_OP_FILL},
    {GGML_OP_LEAKY_RELU, -1, proto::HTP_OP_LEAKY_RELU},
    {GGML_OP_UNARY, GGML_UNARY_OP_STEP, proto::HTP_OP_STEP},
    {GGML_OP_UNARY, GGML_UNARY_OP_NEG, proto::HTP_OP_NEG},
    {GGML_OP_UNARY, GGML_UNARY_OP_SILU, proto::HTP_OP_SILU},
    {GGML_OP_UNARY, GGML_UNARY_OP_RELU, proto::HTP_OP_RELU},
    {GGML_OP_UNARY, GGML_UNARY_OP_ABS, proto::HTP_OP_ABS},
    {GGML_OP_UNARY, GGML_UNARY_OP_EXP, proto::HTP_OP_EXP},
    {GGML_OP_UNARY, GGML_UNARY_OP_SIGMOID, proto::HTP_OP_SIGMOID},
    {GGML_OP_UNARY, GGML_UNARY_OP_GELU, proto::HTP_OP_GELU},
    {GGML_OP_UNARY, GGML_UNARY_OP_GELU_QUICK, proto::HTP_OP_GELU_QUICK},
    {GGML_OP_UNARY, GGML_UNARY_OP_GELU_ERF, proto::HTP_OP_GELU_ERF},
    {GGML_OP_UNARY, GGML_UNARY_OP_TANH, proto::HTP_OP_TANH},
    {GGML_OP_UNARY, GGML_UNARY_OP_SOFTPLUS, proto::HTP_OP_SOFTPLUS},
    {GGML_OP_RMS_NORM, -1, proto::HTP_OP_RMS_NORM},
    {GGML_OP_NORM, -1, proto::HTP_OP_NORM},
    {GGML_OP_L2_NORM, -1, proto::HTP_OP_L2_NORM},
    {GGML_OP_SUM_ROWS, -1, proto::HTP_OP_SUM_ROWS},
    {GGML_OP_MEAN, -1, proto::HTP_OP_MEAN},
    {GGML_OP_CUMSUM, -1, proto::HTP_OP_CUMSUM},
    {GGML_OP_SUM, -1, proto::HTP_OP_SUM},
    {GGML_OP_ARGMAX, -1, proto::HTP_OP_ARGMAX},
    // Copies: F32 into a block type (SET_ROWS's kernel), a quantized type into F32 (GET_ROWS_Q's),
    // else between F32, F16 and BF16 (CPY nodes: src[1] is the destination's view, not a source).
    {GGML_OP_CPY, -1, proto::HTP_OP_CPY_Q, into_block_type, "into a block type"},
    {GGML_OP_CPY, -1, proto::HTP_OP_CPY_DQ, from_quantized, "from a quantized type"},
    {GGML_OP_CPY, -1, proto::HTP_OP_CPY},
    {GGML_OP_CONT, -1, proto::HTP_OP_CPY_Q, into_block_type, "into a block type"},
    {GGML_OP_CONT, -1, proto::HTP_OP_CPY_DQ, from_quantized, "from a quantized type"},
    {GGML_OP_CONT, -1, proto::HTP_OP_CPY},
    {GGML_OP_DUP, -1, proto::HTP_OP_CPY_Q, into_block_type, "into a block type"},
    {GGML_OP_DUP, -1, proto::HTP_OP_CPY_DQ, from_quantized, "from a quantized type"},
    {GGML_OP_DUP, -1, proto::HTP_OP_CPY},
    {GGML_OP_ROPE, -1, proto::HTP_OP_ROPE},
    {GGML_OP_GET_ROWS, -1, proto::HTP_OP_GET_ROWS, from_rows, "from F32, F16, BF16 or I32 rows"},
    {GGML_OP_GET_ROWS, -1, proto::HTP_OP_GET_ROWS_Q},  // a quantized table (the token embedding)
    {GGML_OP_SET_ROWS, -1, proto::HTP_OP_SET_ROWS},
    {GGML_OP_PAD, -1, proto::HTP_OP_PAD},
    {GGML_OP_CONCAT, -1, proto::HTP_OP_CONCAT},
    {GGML_OP_REPEAT, -1, proto::HTP_OP_REPEAT},
    {GGML_OP_ROLL, -1, proto::HTP_OP_ROLL},
    {GGML_OP_IM2COL, -1, proto::HTP_OP_IM2COL},
    {GGML_OP_TRI, -1, proto::HTP_OP_TRI},
    {GGML_OP_DIAG, -1, proto::HTP_OP_DIAG},
    {GGML_OP_SOLVE_TRI, -1, proto::HTP_OP_SOLVE_TRI},
    {GGML_OP_SSM_CONV, -1, proto::HTP_OP_SSM_CONV},
    {GGML_OP_GATED_DELTA_NET, -1, proto::HTP_OP_GATED_DELTA_NET_HMX, delta_net_on_hmx, "prompts (GGML_HEXAGON_GDN_SELECT)", true},
    {GGML_OP_GATED_DELTA_NET, -1, proto::HTP_OP_GATED_DELTA_NET},
    {GGML_OP_ARGSORT, -1, proto::HTP_OP_ARGSORT},
    {GGML_OP_TOP_K, -1, proto::HTP_OP_TOP_K},
    {GGML_OP_FLASH_ATTN_EXT, -1, proto::HTP_OP_FLASH_ATTN_EXT_HMX, attention_on_hmx, "prompts (GGML_HEXAGON_FA_SELECT)", true},
    {GGML_OP_FLASH_ATTN_EXT, -1, proto::HTP_OP_FLASH_ATTN_EXT},
    {GGML_OP_MUL_MAT, -1, proto::HTP_OP_MUL_MAT_HMX, matmul_on_hmx, "prompts (GGML_HEXAGON_MM_SELECT)", true},
    {GGML_OP_MUL_MAT, -1, proto::HTP_OP_MUL_MAT},
    {GGML_OP_MUL_MAT_ID, -1, proto::HTP_OP_MUL_MAT_ID_HMX, matmul_id_on_hmx,
     "more routed rows than one expert's HVX limit (GGML_HEXAGON_MM_SELECT); MUL_MAT_ID first takes the experts routed at most that many", true},
    {GGML_OP_MUL_MAT_ID, -1, proto::HTP_OP_MUL_MAT_ID},
};

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

// The one generic step: the NPU's view of op's sources and destination, then the registry's
// prepare function for its opcode, which fills the kparams or says why not.
proto::htp_verdict prepare_kparams(htp_op & op, const htp_op_target & target) {
    const proto::htp_op_info info = proto::htp_op_info_of(op.desc.opcode);
    std::array<proto::htp_tensor, proto::HTP_OP_MAX_INPUTS> src{};
    proto::htp_op_args                                       args{};
    args.opcode = op.desc.opcode;
    for (uint32_t i = 0; i < proto::HTP_OP_MAX_INPUTS; ++i) {
        if (i >= info.n_src) {
            op.src[i] = nullptr;  // e.g. a CPY node's destination view
            continue;
        }
        if (op.src[i] == nullptr) {
            if (i < info.n_required) {
                return proto::htp_refuse("a source the op requires is missing");
            }
            continue;
        }
        const auto d = static_descriptor(op.src[i], target.stored);
        if (!d) {
            return proto::htp_refuse("a source's dimensions or strides exceed 32 bits");
        }
        src[i]      = *d;
        args.src[i] = &src[i];
    }
    const auto dst = static_descriptor(op.dst[0], target.stored);
    if (!dst) {
        return proto::htp_refuse("the result's dimensions or strides exceed 32 bits");
    }
    args.dst       = &*dst;
    args.params    = op.desc.params;
    args.n_threads = target.n_threads;
    args.vtcm_size = target.vtcm_size;
    return info.prepare(args, op.desc.kparams);
}

// The NPU op the row makes of node, its sources the node's (and the views the op needs).
proto::htp_verdict prepare_row(const ggml_tensor * node, uint32_t opcode, const htp_op_target & target, htp_op * op) {
    *op            = htp_op{};
    op->desc.opcode = opcode;
    op->node        = node;
    op->dst[0]      = node;
    static_assert(sizeof op->desc.params == sizeof node->op_params);
    std::memcpy(op->desc.params, node->op_params, sizeof op->desc.params);
    for (int i = 0; i < GGML_MAX_SRC && i < int(proto::HTP_OP_MAX_INPUTS); ++i) {
        op->src[i] = node->src[i];
    }
    if (opcode == proto::HTP_OP_CPY && !ggml_are_same_shape(node, node->src[0])) {
        // Into a contiguous destination of another shape: the same bytes in the same order.
        if (!ggml_is_contiguous(node) || ggml_nelements(node) != ggml_nelements(node->src[0])) {
            return proto::htp_refuse("a copy into another shape needs a contiguous destination of as many elements");
        }
        op->dst_view = reshaped_destination(node, node->src[0]);
        op->dst[0]   = op->dst_view.get();
    }
    if (node->op == GGML_OP_GLU && node->src[1] == nullptr) {
        // The fused form: [x | gate] rows (swapped: [gate | x]) read as two half-row views of src0.
        const int64_t n       = node->ne[0];
        const bool    swapped = ggml_get_op_param<int32_t>(node, 1) != 0;
        if (node->src[0]->ne[0] != 2 * n) {
            return proto::htp_refuse("the fused GLU's rows are not twice the result's");
        }
        op->src_views = {half_rows(node->src[0], swapped ? n : 0, n), half_rows(node->src[0], swapped ? 0 : n, n)};
        op->src[0]    = op->src_views[0].get();
        op->src[1]    = op->src_views[1].get();
    }
    return prepare_kparams(*op, target);
}

} // namespace

std::optional<htp_op> prepare_htp_op(const ggml_tensor * node, const htp_op_target & target, std::string * why) {
    const int32_t sub = node->op == GGML_OP_UNARY || node->op == GGML_OP_GLU ? ggml_get_op_param<int32_t>(node, 0) : -1;
    proto::htp_verdict verdict = proto::htp_refuse(nullptr);
    bool               tried   = false;
    for (const ggml_row & row : GGML_ROWS) {
        if (row.op != node->op || (row.sub != -1 && row.sub != sub) || (row.when && !row.when(node, target))) {
            continue;
        }
        htp_op op;
        verdict = prepare_row(node, row.opcode, target, &op);
        tried   = true;
        if (verdict) {
            return op;
        }
        if (!row.or_next) {
            break;
        }
    }
    if (why != nullptr) {
        if (!tried) {
            *why = std::string("no NPU kernel for ") + ggml_op_desc(node);
        } else if (verdict.why == proto::HTP_REFUSED_VTCM) {
            *why = std::string(verdict.why) + " (" + std::to_string(target.vtcm_size >> 10) +
                   " KiB; HEXNPU_VTCM_SIZE sets the virtual NPU's)";
        } else {
            *why = verdict.why;
        }
    }
    return std::nullopt;
}

std::vector<htp_op> prepare_htp_ops(const ggml_tensor * node, const htp_op_target & target) {
    std::optional<htp_op> op = prepare_htp_op(node, target);
    if (!op) {
        return {};
    }
    if (op->desc.opcode != proto::HTP_OP_MUL_MAT_ID_HMX || target.hmx == htp_hmx_matmul::always) {
        return {*op};
    }
    // Each expert on the unit its routed row count suits, counted on the NPU: the HVX kernel
    // takes the experts routed at most HTP_MM_HMX_MIN_ROWS rows, the HMX kernel after it the rest
    // (every dst row belongs to one expert: the two write disjoint rows).
    htp_op hvx;
    if (!prepare_row(node, proto::HTP_OP_MUL_MAT_ID, target, &hvx)) {
        return {*op};
    }
    proto::htp_matmul_kparams     few;
    proto::htp_matmul_hmx_kparams many;
    std::memcpy(&few, hvx.desc.kparams, sizeof few);
    std::memcpy(&many, op->desc.kparams, sizeof many);
    few.max_expert_rows  = proto::HTP_MM_HMX_MIN_ROWS;
    many.min_expert_rows = proto::HTP_MM_HMX_MIN_ROWS + 1;
    std::memcpy(hvx.desc.kparams, &few, sizeof few);
    std::memcpy(op->desc.kparams, &many, sizeof many);
    return {hvx, *op};
}

std::vector<htp_op_route> htp_op_routes() {
    std::vector<htp_op_route> routes;
    for (const ggml_row & row : GGML_ROWS) {
        std::string op = ggml_op_name(row.op);
        if (row.sub != -1) {
            op = row.op == GGML_OP_UNARY ? ggml_unary_op_name(ggml_unary_op(row.sub)) : ggml_glu_op_name(ggml_glu_op(row.sub));
        }
        std::string when = row.when_text ? row.when_text : "";
        if (row.or_next) {
            when += when.empty() ? "else the next row" : "; else the next row";
        }
        routes.push_back({op, proto::htp_op_name(row.opcode), when});
    }
    routes.push_back({"RMS_NORM + MUL", proto::htp_op_name(proto::HTP_OP_RMS_NORM_MUL),
                      "the MUL of the norm by its weight, nothing else reading the norm (GGML_HEXAGON_OPFUSION)"});
    return routes;
}

bool prepare_htp_op_kparams(htp_op & op, const htp_op_target & target, std::string * why) {
    const proto::htp_verdict verdict = prepare_kparams(op, target);
    if (!verdict && why != nullptr) {
        *why = verdict.why;
    }
    return bool(verdict);
}

std::optional<htp_op> prepare_htp_rms_norm_mul(const ggml_tensor * norm, const ggml_tensor * mul,
                                               const htp_op_target & target) {
    if (norm->op != GGML_OP_RMS_NORM || mul->op != GGML_OP_MUL || mul->src[0] != norm || mul->src[1] == norm) {
        return std::nullopt;
    }
    htp_op op;
    op.desc.opcode = proto::HTP_OP_RMS_NORM_MUL;
    op.node        = mul;
    op.src[0]      = norm->src[0];
    op.src[1]      = mul->src[1];
    op.dst[0]      = mul;
    std::memcpy(op.desc.params, norm->op_params, sizeof op.desc.params);  // eps
    if (!prepare_kparams(op, target)) {
        return std::nullopt;
    }
    return op;
}

} // namespace hexnpu::hexagon
