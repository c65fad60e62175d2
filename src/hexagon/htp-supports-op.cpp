#include "htp-supports-op.h"

namespace hexnpu::hexagon {

bool is_layout_op(ggml_op op) {
    switch (op) {
        case GGML_OP_NONE:
        case GGML_OP_VIEW:
        case GGML_OP_RESHAPE:
        case GGML_OP_PERMUTE:
        case GGML_OP_TRANSPOSE: return true;
        default: return false;
    }
}

std::string htp_option_refusal(const htp_options & options, const ggml_tensor * op) {
    if (options.filtered_out(ggml_op_desc(op))) {
        return "GGML_HEXAGON_OPFILTER";
    }
    if (options.mm_select == 0 && (op->op == GGML_OP_MUL_MAT || op->op == GGML_OP_MUL_MAT_ID)) {
        return "GGML_HEXAGON_MM_SELECT=0 keeps matmuls on the CPU";
    }
    if (options.fa_select == 0 && op->op == GGML_OP_FLASH_ATTN_EXT) {
        return "GGML_HEXAGON_FA_SELECT=0 keeps flash attention on the CPU";
    }
    if (options.gdn_select == 0 && op->op == GGML_OP_GATED_DELTA_NET) {
        return "GGML_HEXAGON_GDN_SELECT=0 keeps the gated delta net on the CPU";
    }
    return "";
}

bool htp_supports_op(const htp_options & options, const htp_op_target & target, const ggml_tensor * op) {
    // An empty node computes nothing (the batch skips it): llama.cpp's recurrent memory builds
    // copies and gathers of the states of zero other sequences; refusing them would split the graph.
    if (is_layout_op(op->op) || ggml_nelements(op) == 0) {
        return true;
    }
    if (!htp_option_refusal(options, op).empty()) {
        return false;
    }
    return prepare_htp_op(op, target).has_value();
}

} // namespace hexnpu::hexagon
