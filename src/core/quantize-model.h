// Whole-model quantization of a GGUF file, like llama-quantize without an importance matrix:
// every weight matrix (2 or more dims) whose row length is a multiple of its target's block size
// becomes that type; the rest is copied unchanged. Float targets also convert quantized tensors
// back. A matrix's target: the first per-tensor override whose pattern it matches, else the output
// type for output.weight (for token_embd.weight too when there is no output.weight: the model ties
// its output to the embedding, as llama-quantize has it), else the token-embedding type for
// token_embd.weight, else the model's type (llama-quantize --pure: hexnpu has no per-layer mixes).
#pragma once

#include "hexnpu/ggml-types.h"
#include "hexnpu/gguf.h"

#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace hexnpu {

struct quantize_override {
    std::string pattern;  // searched in the tensor name (ECMAScript regex), as given
    std::regex  re;
    ggml_type   type;
};

struct quantize_options {
    ggml_type                      target           = GGML_TYPE_Q4_0;
    std::optional<ggml_type>       output_type;      // --output-tensor-type
    std::optional<ggml_type>       token_embd_type;  // --token-embedding-type
    std::vector<quantize_override> overrides;        // --tensor-type PATTERN=TYPE, in order
    bool                           allow_requantize = false;  // quantized -> other quantized type (lossy twice)
    int                            n_threads        = 1;
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
