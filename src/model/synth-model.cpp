#include "synth-model.h"

#include "core/convert.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace hexnpu {
namespace {

// splitmix64: tiny, fast, and the same on every platform (unlike std distributions).
struct rng {
    uint64_t state;
    uint64_t next() {
        uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z          = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    float uniform() { return float(next() >> 40) * 0x1p-24f; }  // [0, 1)
    float gaussian() {                                           // Box-Muller
        const float u1 = std::max(uniform(), 1e-7f), u2 = uniform();
        return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853f * u2);
    }
};

} // namespace

bool synth_preset(const std::string & name, synth_params & out) {
    synth_params p;
    if (name == "tiny") {
        // defaults
    } else if (name == "small") {
        p.n_vocab = 4096, p.n_embd = 1024, p.n_layer = 4, p.n_head = 16, p.n_head_kv = 4, p.n_ff = 2816, p.n_ctx = 2048;
    } else if (name == "1b") {  // TinyLlama 1.1B's shapes, 4 of its 22 layers (for benchmarks)
        p.n_vocab = 32000, p.n_embd = 2048, p.n_layer = 4, p.n_head = 32, p.n_head_kv = 4, p.n_ff = 5632, p.n_ctx = 2048;
    } else if (name == "gemma3-tiny") {
        p.arch = "gemma3", p.n_embd = 128, p.n_layer = 6, p.n_head = 4, p.n_head_kv = 2, p.n_embd_head = 64, p.n_ff = 256;
        p.n_swa = 4, p.rope_base = 1000000.0f;
    } else if (name == "qwen2-tiny" || name == "qwen3-tiny") {
        p.arch = name.substr(0, 5), p.n_embd = 128, p.n_layer = 2, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 256;
        p.rope_base = 1000000.0f;
    } else if (name == "qwen3moe-tiny") {
        p.arch = "qwen3moe", p.n_embd = 128, p.n_layer = 2, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 256;
        p.n_expert = 16, p.n_expert_used = 4, p.n_ff_exp = 64, p.rope_base = 1000000.0f;
    } else if (name == "gpt-oss-tiny") {
        p.arch = "gpt-oss", p.n_embd = 128, p.n_layer = 2, p.n_head = 4, p.n_head_kv = 2, p.n_embd_head = 64, p.n_ff = 256;
        p.n_expert = 8, p.n_expert_used = 2, p.n_ff_exp = 64, p.n_swa = 4, p.rope_base = 150000.0f;
        p.yarn_factor = 4.0f, p.yarn_orig_ctx = 128;
    } else if (name == "qwen35-tiny") {
        p.arch = "qwen35", p.n_embd = 128, p.n_layer = 4, p.n_head = 4, p.n_head_kv = 2, p.n_embd_head = 64, p.n_ff = 256;
        p.n_rot = 16, p.rope_base = 10000000.0f;
        p.ssm_d_conv = 4, p.ssm_d_state = 32, p.ssm_n_group = 2, p.ssm_dt_rank = 4;
    } else if (name == "qwen35-0.8b") {  // for benchmarks: 4 of its 24 layers (3 delta net, 1 attention)
        p.arch = "qwen35", p.n_vocab = 32000, p.n_embd = 1024, p.n_layer = 4, p.n_head = 8, p.n_head_kv = 2;
        p.n_embd_head = 256, p.n_ff = 3584, p.n_ctx = 4096, p.n_rot = 64, p.rope_base = 10000000.0f;
        p.ssm_d_conv = 4, p.ssm_d_state = 128, p.ssm_n_group = 16, p.ssm_dt_rank = 16;
    } else if (name == "lfm2-tiny") {
        p.arch = "lfm2", p.n_embd = 128, p.n_layer = 4, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 256;
        p.rope_base = 1000000.0f, p.shortconv_l_cache = 3;
    } else {
        return false;
    }
    p.name = name;
    out    = p;
    return true;
}

std::string synth_preset_names() {
    return "tiny, small, 1b, gemma3-tiny, qwen2-tiny, qwen3-tiny, qwen3moe-tiny, gpt-oss-tiny, qwen35-tiny, qwen35-0.8b, lfm2-tiny";
}

synth_model::synth_model(const synth_params & p) {
    if (p.n_embd % p.n_head != 0 || p.n_head % p.n_head_kv != 0) {
        throw std::invalid_argument("synth: n_embd must be a multiple of n_head and n_head of n_head_kv");
    }
    if (p.n_vocab < 259) {
        throw std::invalid_argument("synth: n_vocab must be at least 259 (3 control tokens + 256 bytes)");
    }
    rng r{p.seed};
    if (p.arch != "llama" && p.arch != "qwen2" && p.arch != "qwen3" && p.arch != "qwen3moe" && p.arch != "gemma3" &&
        p.arch != "gpt-oss" && p.arch != "qwen35" && p.arch != "lfm2") {
        throw std::invalid_argument("synth: unknown architecture " + p.arch);
    }
    const bool oss = p.arch == "gpt-oss";
    const bool moe = p.arch == "qwen3moe" || oss;
    if (moe && (p.n_expert_used < 1 || p.n_expert_used > p.n_expert || p.n_ff_exp < 1)) {
        throw std::invalid_argument("synth: a mixture of experts needs 1 <= n_expert_used <= n_expert and n_ff_exp >= 1");
    }
    const bool gemma    = p.arch == "gemma3";
    const bool q35      = p.arch == "qwen35";
    const bool lfm2     = p.arch == "lfm2";
    // The hybrids' recurrent layers: all but every full_attention_interval-th.
    auto recurrent = [&](int l) { return (q35 || lfm2) && (l + 1) % p.full_attention_interval != 0; };
    const int  head_dim = p.n_embd_head > 0 ? p.n_embd_head : p.n_embd / p.n_head;
    const int  n_embd_q = head_dim * p.n_head;
    const int n_embd_kv = head_dim * p.n_head_kv;

    auto & w = writer_;
    const std::string a = p.arch + ".";
    w.set("general.architecture", gguf::value::from_string(p.arch));
    w.set("general.name", gguf::value::from_string("hexnpu-synth-" + p.name));
    w.set(a + "vocab_size", gguf::value::from_u32(uint32_t(p.n_vocab)));
    w.set(a + "context_length", gguf::value::from_u32(uint32_t(p.n_ctx)));
    w.set(a + "embedding_length", gguf::value::from_u32(uint32_t(p.n_embd)));
    w.set(a + "block_count", gguf::value::from_u32(uint32_t(p.n_layer)));
    w.set(a + "feed_forward_length", gguf::value::from_u32(uint32_t(p.n_ff)));
    w.set(a + "attention.head_count", gguf::value::from_u32(uint32_t(p.n_head)));
    if (lfm2) {  // KV heads per layer: 0 for the short-convolution layers
        std::vector<uint8_t> kv(size_t(p.n_layer) * 4);
        for (int l = 0; l < p.n_layer; ++l) {
            const uint32_t n = recurrent(l) ? 0 : uint32_t(p.n_head_kv);
            std::memcpy(kv.data() + 4 * l, &n, 4);
        }
        w.set(a + "attention.head_count_kv", gguf::value::from_array(gguf::value_type::UINT32, uint64_t(p.n_layer), kv));
        w.set(a + "shortconv.l_cache", gguf::value::from_u32(uint32_t(p.shortconv_l_cache)));
    } else {
        w.set(a + "attention.head_count_kv", gguf::value::from_u32(uint32_t(p.n_head_kv)));
    }
    if (head_dim * p.n_head != p.n_embd) {
        w.set(a + "attention.key_length", gguf::value::from_u32(uint32_t(head_dim)));
        w.set(a + "attention.value_length", gguf::value::from_u32(uint32_t(head_dim)));
    }
    const int n_rot = p.n_rot > 0 ? p.n_rot : head_dim;
    w.set(a + "rope.dimension_count", gguf::value::from_u32(uint32_t(n_rot)));
    if (q35) {
        // IMROPE's sections over the rotated pairs (Qwen3.5's 11/11/10 of 32, scaled), the delta net.
        const int32_t        sec[4] = {n_rot / 2 - 2 * (n_rot / 6), n_rot / 6, n_rot / 6, 0};
        std::vector<uint8_t> bytes(sizeof sec);
        std::memcpy(bytes.data(), sec, sizeof sec);
        w.set(a + "rope.dimension_sections", gguf::value::from_array(gguf::value_type::INT32, 4, bytes));
        w.set(a + "ssm.conv_kernel", gguf::value::from_u32(uint32_t(p.ssm_d_conv)));
        w.set(a + "ssm.state_size", gguf::value::from_u32(uint32_t(p.ssm_d_state)));
        w.set(a + "ssm.group_count", gguf::value::from_u32(uint32_t(p.ssm_n_group)));
        w.set(a + "ssm.time_step_rank", gguf::value::from_u32(uint32_t(p.ssm_dt_rank)));
        w.set(a + "ssm.inner_size", gguf::value::from_u32(uint32_t(p.ssm_d_state * p.ssm_dt_rank)));
        w.set(a + "full_attention_interval", gguf::value::from_u32(uint32_t(p.full_attention_interval)));
    }
    w.set(a + "rope.freq_base", gguf::value::from_f32(p.rope_base));
    w.set(a + "attention.layer_norm_rms_epsilon", gguf::value::from_f32(gemma ? 1e-6f : 1e-5f));
    if (gemma || oss) {
        w.set(a + "attention.sliding_window", gguf::value::from_u32(uint32_t(p.n_swa)));
    }
    if (p.yarn_factor > 0.0f) {
        w.set(a + "rope.scaling.type", gguf::value::from_string("yarn"));
        w.set(a + "rope.scaling.factor", gguf::value::from_f32(p.yarn_factor));
        w.set(a + "rope.scaling.original_context_length", gguf::value::from_u32(uint32_t(p.yarn_orig_ctx)));
    }
    if (moe) {
        w.set(a + "expert_count", gguf::value::from_u32(uint32_t(p.n_expert)));
        w.set(a + "expert_used_count", gguf::value::from_u32(uint32_t(p.n_expert_used)));
        w.set(a + "expert_feed_forward_length", gguf::value::from_u32(uint32_t(p.n_ff_exp)));
    }

    // SentencePiece-style vocabulary: control tokens, the 256 byte tokens, then filler pieces.
    std::vector<std::string> tokens;
    std::vector<uint8_t>     scores, types;
    auto add_token = [&](std::string text, float score, int32_t type) {
        tokens.push_back(std::move(text));
        scores.resize(scores.size() + 4);
        std::memcpy(scores.data() + scores.size() - 4, &score, 4);
        types.resize(types.size() + 4);
        std::memcpy(types.data() + types.size() - 4, &type, 4);
    };
    add_token("<unk>", 0.0f, 2);
    add_token("<s>", 0.0f, 3);
    add_token("</s>", 0.0f, 3);
    for (int b = 0; b < 256; ++b) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        add_token(buf, 0.0f, 6);
    }
    for (int i = int(tokens.size()); i < p.n_vocab; ++i) {
        add_token("\xE2\x96\x81tok" + std::to_string(i), -float(i), 1);
    }
    w.set("tokenizer.ggml.model", gguf::value::from_string("llama"));
    w.set("tokenizer.ggml.tokens", gguf::value::from_strings(tokens));
    w.set("tokenizer.ggml.scores", gguf::value::from_array(gguf::value_type::FLOAT32, tokens.size(), scores));
    w.set("tokenizer.ggml.token_type", gguf::value::from_array(gguf::value_type::INT32, tokens.size(), types));
    w.set("tokenizer.ggml.bos_token_id", gguf::value::from_u32(1));
    w.set("tokenizer.ggml.eos_token_id", gguf::value::from_u32(2));

    auto add = [&](const std::string & name, std::vector<int64_t> ne, bool is_norm, ggml_type as = GGML_TYPE_COUNT) {
        int64_t n = 1;
        for (int64_t d : ne) {
            n *= d;
        }
        std::vector<float> f(static_cast<size_t>(n));
        const bool         up    = name.ends_with("ffn_up.weight");
        const float        scale = 1.0f / std::sqrt(float(ne[0])) * (up ? p.ffn_up_scale : 1.0f);
        for (float & v : f) {
            v = is_norm ? 1.0f + 0.1f * r.gaussian() : scale * r.gaussian();
        }
        const ggml_type type = is_norm ? GGML_TYPE_F32 : as != GGML_TYPE_COUNT ? as : p.type;
        auto            buf  = std::make_unique<std::vector<uint8_t>>(ggml_row_size(type, ne[0]) * size_t(n / ne[0]));
        convert_rows(GGML_TYPE_F32, f.data(), type, buf->data(), n / ne[0], ne[0], 1);
        w.add_tensor(name, type, ne, buf->data());
        buffers_.push_back(std::move(buf));
    };

    // F32 values centred on 0 (biases, attention sinks), a vector or [ne0, ne1].
    auto add_bias = [&](const std::string & name, int64_t ne0, int64_t ne1 = 1, float sigma = 0.1f) {
        auto buf = std::make_unique<std::vector<uint8_t>>(size_t(ne0 * ne1) * 4);
        for (int64_t i = 0; i < ne0 * ne1; ++i) {
            const float v = sigma * r.gaussian();
            std::memcpy(buf->data() + i * 4, &v, 4);
        }
        const std::vector<int64_t> ne = ne1 > 1 ? std::vector<int64_t>{ne0, ne1} : std::vector<int64_t>{ne0};
        w.add_tensor(name, GGML_TYPE_F32, ne, buf->data());
        buffers_.push_back(std::move(buf));
    };

    // qwen35's layer after its attn_norm: a gated delta net (q, k, v through a 4-tap convolution; the
    // decay's -exp(A_log) and dt bias, beta's and alpha's projections, the per-head gated norm) or
    // gated full attention (Q and its gate interleaved per head); then post_attention_norm and the
    // FFN. llama.cpp's names and shapes (src/models/qwen35.cpp).
    auto add_qwen35_layer = [&](const std::string & b, bool recurrent) {
        if (recurrent) {
            const int S = p.ssm_d_state, Hv = p.ssm_dt_rank, inner = S * Hv, conv_dim = inner + 2 * p.ssm_n_group * S;
            add(b + "attn_qkv.weight", {p.n_embd, conv_dim}, false);
            add(b + "attn_gate.weight", {p.n_embd, inner}, false);
            add(b + "ssm_conv1d.weight", {p.ssm_d_conv, conv_dim}, false, GGML_TYPE_F32);
            add_bias(b + "ssm_dt.bias", Hv);
            auto a_log = std::make_unique<std::vector<uint8_t>>(size_t(Hv) * 4);
            for (int i = 0; i < Hv; ++i) {
                const float v = -std::exp(0.5f * r.gaussian());  // -exp(A_log), as the converter stores it
                std::memcpy(a_log->data() + i * 4, &v, 4);
            }
            const std::vector<int64_t> ne_a = {Hv};
            w.add_tensor(b + "ssm_a", GGML_TYPE_F32, ne_a, a_log->data());
            buffers_.push_back(std::move(a_log));
            add(b + "ssm_beta.weight", {p.n_embd, Hv}, false);
            add(b + "ssm_alpha.weight", {p.n_embd, Hv}, false);
            add(b + "ssm_norm.weight", {S}, true);
            add(b + "ssm_out.weight", {inner, p.n_embd}, false);
        } else {
            add(b + "attn_q.weight", {p.n_embd, 2 * n_embd_q}, false);
            add(b + "attn_k.weight", {p.n_embd, n_embd_kv}, false);
            add(b + "attn_v.weight", {p.n_embd, n_embd_kv}, false);
            add(b + "attn_q_norm.weight", {head_dim}, true);
            add(b + "attn_k_norm.weight", {head_dim}, true);
            add(b + "attn_output.weight", {n_embd_q, p.n_embd}, false);
        }
        add(b + "post_attention_norm.weight", {p.n_embd}, true);
        add(b + "ffn_gate.weight", {p.n_embd, p.n_ff}, false);
        add(b + "ffn_up.weight", {p.n_embd, p.n_ff}, false);
        add(b + "ffn_down.weight", {p.n_ff, p.n_embd}, false);
    };

    add("token_embd.weight", {p.n_embd, p.n_vocab}, false);
    for (int l = 0; l < p.n_layer; ++l) {
        const std::string b = "blk." + std::to_string(l) + ".";
        add(b + "attn_norm.weight", {p.n_embd}, true);
        if (q35) {
            add_qwen35_layer(b, recurrent(l));
            continue;
        }
        if (lfm2 && recurrent(l)) {
            add(b + "shortconv.conv.weight", {p.shortconv_l_cache, p.n_embd}, false, GGML_TYPE_F32);
            add(b + "shortconv.in_proj.weight", {p.n_embd, 3 * p.n_embd}, false);
            add(b + "shortconv.out_proj.weight", {p.n_embd, p.n_embd}, false);
            add(b + "ffn_norm.weight", {p.n_embd}, true);
            add(b + "ffn_gate.weight", {p.n_embd, p.n_ff}, false);
            add(b + "ffn_up.weight", {p.n_embd, p.n_ff}, false);
            add(b + "ffn_down.weight", {p.n_ff, p.n_embd}, false);
            continue;
        }
        add(b + "attn_q.weight", {p.n_embd, n_embd_q}, false);
        add(b + "attn_k.weight", {p.n_embd, n_embd_kv}, false);
        add(b + "attn_v.weight", {p.n_embd, n_embd_kv}, false);
        if (p.arch == "qwen2" || oss) {  // biases: f32 vectors like the norms, centred on 0
            add_bias(b + "attn_q.bias", n_embd_q);
            add_bias(b + "attn_k.bias", n_embd_kv);
            add_bias(b + "attn_v.bias", n_embd_kv);
        }
        if (gemma || p.arch == "qwen3" || p.arch == "qwen3moe" || lfm2) {
            add(b + "attn_q_norm.weight", {head_dim}, true);
            add(b + "attn_k_norm.weight", {head_dim}, true);
        }
        add(b + "attn_output.weight", {n_embd_q, p.n_embd}, false);
        if (oss) {
            add_bias(b + "attn_output.bias", p.n_embd);
            add_bias(b + "attn_sinks.weight", p.n_head, 1, 1.0f);
        }
        if (gemma) {
            add(b + "post_attention_norm.weight", {p.n_embd}, true);
        }
        add(b + (oss ? "post_attention_norm.weight" : "ffn_norm.weight"), {p.n_embd}, true);
        if (moe) {  // the router (kept F32, as converters keep it) and the experts' stacked matrices
            add(b + "ffn_gate_inp.weight", {p.n_embd, p.n_expert}, false, GGML_TYPE_F32);
            add(b + "ffn_gate_exps.weight", {p.n_embd, p.n_ff_exp, p.n_expert}, false);
            add(b + "ffn_up_exps.weight", {p.n_embd, p.n_ff_exp, p.n_expert}, false);
            add(b + "ffn_down_exps.weight", {p.n_ff_exp, p.n_embd, p.n_expert}, false);
            if (oss) {
                add_bias(b + "ffn_gate_inp.bias", p.n_expert);
                add_bias(b + "ffn_gate_exps.bias", p.n_ff_exp, p.n_expert);
                add_bias(b + "ffn_up_exps.bias", p.n_ff_exp, p.n_expert);
                add_bias(b + "ffn_down_exps.bias", p.n_embd, p.n_expert);
            }
        } else {
            add(b + "ffn_gate.weight", {p.n_embd, p.n_ff}, false);
            add(b + "ffn_up.weight", {p.n_embd, p.n_ff}, false);
            add(b + "ffn_down.weight", {p.n_ff, p.n_embd}, false);
        }
        if (gemma) {
            add(b + "post_ffw_norm.weight", {p.n_embd}, true);
        }
    }
    add(lfm2 ? "token_embd_norm.weight" : "output_norm.weight", {p.n_embd}, true);
    if (!gemma) {  // gemma3 ties the output to token_embd
        add("output.weight", {p.n_embd, p.n_vocab}, false);
    }
}

} // namespace hexnpu
