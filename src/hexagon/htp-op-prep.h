// Host-side op preparation: which NPU op a graph node becomes (the table in htp-op-prep.cpp), and
// its kernel_params, computed by the prepare function the registry names for the opcode
// (proto/htp-op-list.inc) in the family header the kernel checks them against. The same code
// answers supports_op (from static tensor properties, before any buffer exists) and prepares the
// ops graph_compute sends, so a claimed node always has its kernel_params.
#pragma once

#include "htp-batch.h"

#include "hexnpu/tensor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hexnpu::hexagon {

// Where MUL_MAT goes to the HMX unit: nowhere (no HMX, GGML_HEXAGON_NHMX=0, MM_SELECT <= 2), for
// more than HTP_MM_HMX_MIN_ROWS activation rows (MM_SELECT=3), for every shape it takes (4).
enum class htp_hmx_matmul : uint32_t { off, prompts, always };

// What the preparation plans for: the threads and VTCM of the session the op runs on.
struct htp_op_target {
    uint32_t n_threads;
    uint32_t vtcm_size;
    htp_hmx_matmul hmx    = htp_hmx_matmul::off;
    htp_hmx_matmul fa_hmx = htp_hmx_matmul::off;  // FLASH_ATTN_EXT on HMX: the same three choices
    htp_hmx_matmul gdn_hmx = htp_hmx_matmul::off;  // GATED_DELTA_NET on HMX: off or prompts
    // Preparing a batch (not answering supports_op): what a stored weight's buffer recorded may
    // choose between kernels that both take the op.
    bool           stored = false;
};

// The NPU op for the node (operands, params, kernel_params), or nullopt when the node has no NPU
// kernel or its shapes, strides or VTCM needs rule it out; then *why (when given) says which, in
// words a user can act on ("the weight type has no NPU matmul kernel ...").
std::optional<htp_op> prepare_htp_op(const ggml_tensor * node, const htp_op_target & target,
                                     std::string * why = nullptr);
// The NPU ops that compute node (empty: the NPU does not): prepare_htp_op's, but for a MUL_MAT_ID
// on the HMX unit for prompts: the HVX kernel for the experts routed few rows, then the HMX kernel
// for the others, each expert's count taken on the NPU when the batch runs.
std::vector<htp_op> prepare_htp_ops(const ggml_tensor * node, const htp_op_target & target);

// The fused RMS_NORM_MUL for a MUL of `norm`'s result (src0) by a weight (src1), or nullopt when
// the pair does not make one (types, shapes, VTCM). Whether the norm has other readers is the
// caller's to know.
std::optional<htp_op> prepare_htp_rms_norm_mul(const ggml_tensor * norm, const ggml_tensor * mul,
                                               const htp_op_target & target);

// An op built without a graph node (the tensor split's ALLREDUCE): its kparams from its operands by
// the registry's prepare function, or false with *why.
bool prepare_htp_op_kparams(htp_op & op, const htp_op_target & target, std::string * why);

// The table above as words, for docs/ops.md: per row, the GGML op (or unary/GLU op), the NPU op
// it becomes and when.
struct htp_op_route {
    std::string ggml_op, npu_op, when;
};
std::vector<htp_op_route> htp_op_routes();

} // namespace hexnpu::hexagon
