// Which of a ggml node's op_params hexnpu implements. ggml zero-fills op_params, and every
// parameter that changes an op's meaning is non-zero when set (PAD's circular mode, a matmul's
// src1 precision), so the plugin claims a node only when each non-zero
// word is one hexnpu reads and its value one hexnpu honours: a parameter it does not understand
// is a refusal, never an approximation.
#pragma once

#include "ggml-abi.h"

#include <string>

namespace hexnpu::ggml_plugin {

// Empty when hexnpu implements every op_params word t carries; otherwise why not, naming the
// word and its value. Ops hexnpu does not map at all are left to the mirror's own error.
std::string unsupported_op_params(const ggml_abi::tensor * t);

} // namespace hexnpu::ggml_plugin
