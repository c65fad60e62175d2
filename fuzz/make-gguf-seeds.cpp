// Writes a few small valid GGUF files, made by hexnpu's writer, as the fuzzer's starting corpus:
// make-gguf-seeds DIR. Each one exercises a different part of the format.
#include "hexnpu/gguf.h"

#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

namespace {

using namespace hexnpu;
using gguf::value;
using gguf::value_type;

std::vector<uint8_t> counting_bytes(size_t n) {
    std::vector<uint8_t> v(n);
    std::iota(v.begin(), v.end(), uint8_t(0));
    return v;
}

gguf::writer empty_file() { return {}; }

// The shape of a tiny llama model: the usual keys, a vocabulary, a few tensor types.
gguf::writer tiny_model() {
    static const std::vector<uint8_t> data = counting_bytes(4096);
    gguf::writer w;
    w.set("general.architecture", value::from_string("llama"));
    w.set("general.name", value::from_string("seed"));
    w.set("general.quantization_version", value::from_u32(GGML_QNT_VERSION));
    w.set("llama.context_length", value::from_u32(128));
    w.set("llama.rope.freq_base", value::from_f32(10000.0f));
    w.set("tokenizer.ggml.tokens", value::from_strings({"<unk>", "<s>", "</s>", "\xe2\x96\x81the"}));
    w.set("tokenizer.ggml.scores", value::from_array(value_type::FLOAT32, 4, std::vector<uint8_t>(16, 0)));
    w.set("tokenizer.ggml.token_type", value::from_array(value_type::INT32, 4, counting_bytes(16)));
    w.set("tokenizer.ggml.add_bos_token", value::from_bool(true));
    const int64_t embd[] = {32, 4};
    const int64_t norm[] = {32};
    const int64_t k[]    = {256, 2};
    w.add_tensor("token_embd.weight", GGML_TYPE_Q8_0, embd, data.data());
    w.add_tensor("blk.0.attn_norm.weight", GGML_TYPE_F32, norm, data.data());
    w.add_tensor("blk.0.ffn_down.weight", GGML_TYPE_Q4_K, k, data.data());
    w.add_tensor("output.weight", GGML_TYPE_F16, embd, data.data());
    return w;
}

// One key of every value type, arrays of every element type, and a custom alignment.
gguf::writer every_value_type() {
    static const std::vector<uint8_t> data = counting_bytes(64);
    gguf::writer w;
    w.set_alignment(64);
    w.set("u8", value::from_u8(1));
    w.set("i8", value::from_i8(-1));
    w.set("u16", value::from_u16(2));
    w.set("i16", value::from_i16(-2));
    w.set("u32", value::from_u32(3));
    w.set("i32", value::from_i32(-3));
    w.set("f32", value::from_f32(0.5f));
    w.set("bool", value::from_bool(false));
    w.set("string", value::from_string("text"));
    w.set("u64", value::from_u64(4));
    w.set("i64", value::from_i64(-4));
    w.set("f64", value::from_f64(0.25));
    const std::pair<value_type, size_t> scalar_types[] = {
        {value_type::UINT8, 1},  {value_type::INT8, 1},    {value_type::UINT16, 2}, {value_type::INT16, 2},
        {value_type::UINT32, 4}, {value_type::INT32, 4},   {value_type::FLOAT32, 4}, {value_type::BOOL, 1},
        {value_type::UINT64, 8}, {value_type::INT64, 8},   {value_type::FLOAT64, 8},
    };
    for (const auto & [type, size] : scalar_types) {
        w.set(std::string("array.") + gguf::value_type_name(type),
              value::from_array(type, 2, std::vector<uint8_t>(2 * size, 1)));
    }
    w.set("array.string", value::from_strings({"a", ""}));
    const int64_t ne[] = {2, 2, 2, 2};
    w.add_tensor("t", GGML_TYPE_F32, ne, data.data());
    return w;
}

// One small tensor of every type that has a layout.
gguf::writer every_tensor_type() {
    static const std::vector<uint8_t> data = counting_bytes(1024);
    gguf::writer w;
    w.set_alignment(8);
    for (int id = 0; id < GGML_TYPE_COUNT; ++id) {
        if (ggml_type_is_valid(id)) {
            const int64_t ne[] = {ggml_blck_size(ggml_type(id)), 2};
            w.add_tensor(ggml_type_name(ggml_type(id)), ggml_type(id), ne, data.data());
        }
    }
    return w;
}

} // namespace

int main(int argc, char ** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 1;
    }
    const std::pair<const char *, gguf::writer (*)()> seeds[] = {
        {"empty.gguf", empty_file},
        {"tiny-model.gguf", tiny_model},
        {"every-value-type.gguf", every_value_type},
        {"every-tensor-type.gguf", every_tensor_type},
    };
    for (const auto & [name, make] : seeds) {
        make().write(std::string(argv[1]) + "/" + name);
    }
    return 0;
}
