// Which graph nodes an HTP device claims, decided from static tensor properties only (types, shapes,
// strides, op params) and the options: the spec's supports_op independence rule. Buffers and
// tiling state are unknown when the scheduler asks.
#pragma once

#include "htp-op-prep.h"
#include "htp-options.h"

#include "hexnpu/tensor.h"

#include <string>

namespace hexnpu::hexagon {

// Nodes that only reinterpret memory: the device accepts them and runs nothing for them.
bool is_layout_op(ggml_op op);

// The option that keeps the node off the NPU ("GGML_HEXAGON_OPFILTER", "GGML_HEXAGON_MM_SELECT=0
// ..."), or "".
std::string htp_option_refusal(const htp_options & options, const ggml_tensor * op);

// Layout nodes always; other nodes unless an option refuses them, when they prepare for `target`.
bool htp_supports_op(const htp_options & options, const htp_op_target & target, const ggml_tensor * op);

} // namespace hexnpu::hexagon
