#include "quantize-model.h"

#include "convert.h"
#include "gguf-layout.h"

#include <stdexcept>

namespace hexnpu {
namespace {

bool is_float_type(ggml_type t) { return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16; }

// llama.cpp's general.file_type values for files whose weights are all of one type; -1 when
// llama.cpp has no such value, in which case the key is dropped rather than left stale.
int llama_file_type(ggml_type t) {
    switch (t) {
        case GGML_TYPE_F32: return 0;
        case GGML_TYPE_F16: return 1;
        case GGML_TYPE_Q4_0: return 2;
        case GGML_TYPE_Q4_1: return 3;
        case GGML_TYPE_Q8_0: return 7;
        case GGML_TYPE_Q5_0: return 8;
        case GGML_TYPE_Q5_1: return 9;
        case GGML_TYPE_Q2_K: return 10;
        case GGML_TYPE_Q3_K: return 11;
        case GGML_TYPE_Q4_K: return 14;
        case GGML_TYPE_Q5_K: return 16;
        case GGML_TYPE_Q6_K: return 18;
        case GGML_TYPE_IQ4_NL: return 25;
        case GGML_TYPE_BF16: return 32;
        case GGML_TYPE_MXFP4: return 38;
        default: return -1;
    }
}

// The tensor's target type under the options (quantize-model.h).
ggml_type target_of(const gguf::tensor_info & t, const quantize_options & opt, bool has_output) {
    for (const quantize_override & o : opt.overrides) {
        if (std::regex_search(t.name, o.re)) {
            return o.type;
        }
    }
    const bool is_embd = t.name == "token_embd.weight";
    if (opt.output_type && (t.name == "output.weight" || (is_embd && !has_output))) {
        return *opt.output_type;
    }
    if (opt.token_embd_type && is_embd) {
        return *opt.token_embd_type;
    }
    return opt.target;
}

void check_quantizer(ggml_type type) {
    const ggml_type_traits * tt = ggml_get_type_traits(type);
    if (!tt || tt->retired || !tt->from_float) {
        throw std::invalid_argument(std::string("hexnpu cannot quantize to type ") + ggml_type_name(type));
    }
}

// As llama-quantize: a model's biases (gpt-oss's experts' are 2-D), norms and mixture-of-experts
// router (ffn_gate_inp) keep their type.
bool converted_by_name(const std::string & name) {
    return !name.ends_with(".bias") && name.find("_norm.weight") == std::string::npos &&
           name.find("ffn_gate_inp.weight") == std::string::npos;
}

tensor_plan plan_one(size_t index, const gguf::tensor_info & t, const quantize_options & opt, bool has_output) {
    tensor_plan p{index, t.type, tensor_action::copy, "", t.nbytes};
    if (!converted_by_name(t.name)) {
        p.why_copied = t.name.ends_with(".bias") ? "a bias" : "a norm or the experts' router";
        return p;
    }
    const ggml_type target  = target_of(t, opt, has_output);
    const bool      matrix  = t.n_dims >= 2;
    const bool      in_quant = ggml_is_quantized(t.type);

    if (t.type == target) {
        p.why_copied = "already " + std::string(ggml_type_name(target));
        return p;
    }
    if (!ggml_get_type_traits(t.type)->to_float) {
        p.why_copied = "no float conversion for " + std::string(ggml_type_name(t.type));
        return p;
    }
    if (is_float_type(target)) {
        if (!in_quant && !matrix) {
            p.why_copied = "1-D tensor";
            return p;
        }
        p.action = tensor_action::convert;
    } else {
        if (!matrix) {
            p.why_copied = "1-D tensor";
            return p;
        }
        if (!is_float_type(t.type) && !in_quant) {
            p.why_copied = "integer tensor";
            return p;
        }
        if (t.ne[0] % ggml_blck_size(target) != 0) {
            p.why_copied = "row length " + std::to_string(t.ne[0]) + " not a multiple of " +
                           std::to_string(ggml_blck_size(target));
            return p;
        }
        if (in_quant && !opt.allow_requantize) {
            throw std::invalid_argument("tensor " + gguf::layout::quoted(t.name) + " is already " +
                                        ggml_type_name(t.type) +
                                        "; requantizing loses quality twice (pass --allow-requantize to do it anyway)");
        }
        p.action = in_quant ? tensor_action::requantize : tensor_action::quantize;
    }
    p.out_type   = target;
    p.out_nbytes = uint64_t(ggml_row_size(target, t.ne[0])) * uint64_t(t.nelements() / t.ne[0]);
    return p;
}

} // namespace

const char * tensor_action_name(tensor_action a) {
    switch (a) {
        case tensor_action::copy: return "copy";
        case tensor_action::quantize: return "quantize";
        case tensor_action::requantize: return "requantize";
        case tensor_action::convert: return "convert";
    }
    return "?";
}

std::vector<tensor_plan> plan_quantize(const gguf::reader & in, const quantize_options & opt) {
    check_quantizer(opt.target);
    for (const auto & t : {opt.output_type, opt.token_embd_type}) {
        if (t) {
            check_quantizer(*t);
        }
    }
    for (const quantize_override & o : opt.overrides) {
        check_quantizer(o.type);
    }
    bool has_output = false;
    for (const auto & t : in.tensors()) {
        has_output = has_output || t.name == "output.weight";
    }
    std::vector<tensor_plan> plan;
    plan.reserve(in.tensors().size());
    for (size_t i = 0; i < in.tensors().size(); ++i) {
        plan.push_back(plan_one(i, in.tensors()[i], opt, has_output));
    }
    return plan;
}

gguf::writer make_quantized_writer(const gguf::reader & in, const std::vector<tensor_plan> & plan,
                                   const quantize_options & opt) {
    gguf::writer w;
    w.set_alignment(in.alignment());
    for (const auto & e : in.metadata()) {
        if (e.key != "general.alignment") {
            w.set(e.key, e.val);
        }
    }
    bool any_quantized = false;
    for (const auto & p : plan) {
        any_quantized = any_quantized || ggml_is_quantized(p.out_type);
    }
    if (any_quantized) {
        w.set("general.quantization_version", gguf::value::from_u32(GGML_QNT_VERSION));
    }
    const int file_type = llama_file_type(opt.target);
    if (file_type >= 0) {
        w.set("general.file_type", gguf::value::from_u32(uint32_t(file_type)));
    } else {
        w.remove("general.file_type");
    }

    for (const auto & p : plan) {
        const gguf::tensor_info & t   = in.tensors()[p.index];
        const auto                src = in.tensor_data(t);
        const std::span<const int64_t> ne(t.ne.data(), t.n_dims);
        if (p.action == tensor_action::copy) {
            w.add_tensor(t.name, t.type, ne, src.data());
            continue;
        }
        const int n_threads = opt.n_threads;
        w.add_tensor(t.name, p.out_type, ne, [&t, src, out = p.out_type, n_threads](uint8_t * dst) {
            convert_rows(t.type, src.data(), out, dst, t.nelements() / t.ne[0], t.ne[0], n_threads);
        });
    }
    return w;
}

} // namespace hexnpu
