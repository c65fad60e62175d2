// Whole-model quantization of a GGUF file, like llama-quantize without an importance matrix:
// every weight matrix (2 or more dims) whose row length is a multiple of the target's block size
// becomes the target type; the rest is copied unchanged. Float targets also convert quantized
// tensors back.
#pragma once

#include "hexnpu/ggml-types.h"
#include "hexnpu/gguf.h"

#include <string>
#include <vector>

namespace hexnpu {

struct quantize_options {
    ggml_type target           = GGML_TYPE_Q4_0;
    bool      allow_requantize = false;  // quantized -> other quantized type (lossy twice)
    int       n_threads        = 1;
};

enum class tensor_action { copy, quantize, requantize, convert };

const char * tensor_action_name(tensor_action a);

struct tensor_plan {
    size_t        index;     // into reader.tensors()
    ggml_type     out_type;
    tensor_action action;
    std::string   why_copied;  // for copies: why the tensor keeps its type
    uint64_t      out_nbytes;
};

// Decides what happens to each tensor. Throws std::invalid_argument for a target without a
// quantizer, or for requantization that was not allowed.
std::vector<tensor_plan> plan_quantize(const gguf::reader & in, const quantize_options & opt);

// A writer holding the input's metadata (general.quantization_version and general.file_type
// updated) and the planned tensors, converted lazily from the input's mapping as they are written.
gguf::writer make_quantized_writer(const gguf::reader & in, const std::vector<tensor_plan> & plan,
                                   const quantize_options & opt);

} // namespace hexnpu
