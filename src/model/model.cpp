// GGUF -> hyperparameters and weights. The weights are read in place from the file's memory
// mapping (host memory) or copied into the buffer types the caller names.
#include "model/model.h"

#include "core/gguf-layout.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

namespace hexnpu::model {
namespace {

// The file's mapping seen as a read-only host buffer: weights point into it, nothing is copied.
class mapped_buffer final : public backend_buffer {
  public:
    mapped_buffer(backend_buffer_type * buft, uint8_t * base, size_t size) : backend_buffer(buft, size), base_(base) {}
    void * base() override { return base_; }
    void   set_tensor(ggml_tensor *, const void *, size_t, size_t) override {
        throw backend_error("model weights mapped from the file are read-only");
    }
    void get_tensor(const ggml_tensor * t, void * data, size_t offset, size_t size) override {
        std::memcpy(data, static_cast<const uint8_t *>(t->data) + offset, size);
    }
    void clear(uint8_t) override { throw backend_error("model weights mapped from the file are read-only"); }

  private:
    uint8_t * base_;
};

std::string shape_str(const int64_t * ne, int n) {
    std::string s = "[";
    for (int i = 0; i < n; ++i) {
        s += (i ? ", " : "") + std::to_string(ne[i]);
    }
    return s + "]";
}

} // namespace

const char * arch_name(arch a) {
    switch (a) {
        case arch::llama: return "llama";
        case arch::qwen2: return "qwen2";
        case arch::qwen3: return "qwen3";
        case arch::qwen3moe: return "qwen3moe";
        case arch::qwen35: return "qwen35";
        case arch::lfm2: return "lfm2";
        case arch::gemma3: return "gemma3";
        case arch::gpt_oss: return "gpt-oss";
    }
    return "?";
}

model::model(gguf::reader && r, std::string path) : path_(std::move(path)), reader_(std::move(r)) {}
model::~model() = default;

std::unique_ptr<model> model::load(const std::string & path, const load_options & opts) {
    std::unique_ptr<model> m(new model(gguf::reader::open(path), path));
    m->read_hparams();
    m->create_tensors(opts);
    return m;
}

void model::read_hparams() {
    const gguf::value * a = reader_.find("general.architecture");
    if (!a || !a->as_string()) {
        throw model_error("missing key general.architecture (not a model file?)");
    }
    const std::string & an = *a->as_string();
    if (an == "llama") {
        hp_.architecture = arch::llama;
    } else if (an == "qwen2") {
        hp_.architecture = arch::qwen2;
    } else if (an == "qwen3") {
        hp_.architecture = arch::qwen3;
    } else if (an == "qwen3moe") {
        hp_.architecture = arch::qwen3moe;
    } else if (an == "gemma3") {
        hp_.architecture = arch::gemma3;
    } else if (an == "gpt-oss") {
        hp_.architecture = arch::gpt_oss;
    } else if (an == "qwen35") {
        hp_.architecture = arch::qwen35;
    } else if (an == "lfm2") {
        hp_.architecture = arch::lfm2;
    } else {
        throw model_error("unknown architecture " + gguf::layout::quoted(an) +
                          " (supported: llama, qwen2, qwen3, qwen3moe, gemma3, gpt-oss, qwen35, lfm2)");
    }
    const std::string pre = an + ".";
    auto get_u = [&](const std::string & key, int64_t def, bool required) -> int64_t {
        const gguf::value * v = reader_.find(pre + key);
        if (!v) {
            if (required) {
                throw model_error("missing key " + pre + key);
            }
            return def;
        }
        const auto u = v->as_uint();
        if (!u || *u > (uint64_t(1) << 40)) {
            throw model_error("key " + pre + key + " must be a non-negative integer, is " + v->to_display());
        }
        return int64_t(*u);
    };
    auto get_f = [&](const std::string & key, float def, bool required) -> float {
        const gguf::value * v = reader_.find(pre + key);
        if (!v) {
            if (required) {
                throw model_error("missing key " + pre + key);
            }
            return def;
        }
        const auto f = v->as_float();
        if (!f || !std::isfinite(*f)) {
            throw model_error("key " + pre + key + " must be a number, is " + v->to_display());
        }
        return float(*f);
    };
    hparams & h = hp_;
    if (const gguf::value * n = reader_.find("general.name"); n && n->as_string()) {
        h.name = *n->as_string();
    } else {
        h.name = an;
    }
    h.n_ctx_train = get_u("context_length", 0, true);
    if (h.n_ctx_train == 0) {
        throw model_error("key " + pre + "context_length is 0: a model has a context of at least one token");
    }
    h.n_embd      = get_u("embedding_length", 0, true);
    h.n_layer     = get_u("block_count", 0, true);
    const bool moe = h.architecture == arch::qwen3moe || h.architecture == arch::gpt_oss;
    h.n_ff        = get_u("feed_forward_length", 0, !moe);  // a mixture of experts: each expert's width instead
    h.n_head      = get_u("attention.head_count", 0, true);
    if (const gguf::value * kv = reader_.find(pre + "attention.head_count_kv");
        kv && kv->type() == gguf::value_type::ARRAY && h.architecture == arch::lfm2) {
        // lfm2: KV heads per layer, 0 for its short-convolution layers.
        if (int64_t(kv->array_size()) != h.n_layer || kv->elem_type() != gguf::value_type::UINT32) {
            throw model_error("key " + pre + "attention.head_count_kv must be one uint32 per layer");
        }
        h.recurrent_layers.assign(size_t(h.n_layer), false);
        for (int64_t il = 0; il < h.n_layer; ++il) {
            uint32_t n;
            std::memcpy(&n, kv->array_bytes().data() + 4 * il, 4);
            if (n != 0 && h.n_head_kv != 0 && n != uint64_t(h.n_head_kv)) {
                throw model_error("key " + pre + "attention.head_count_kv: the attention layers differ in KV heads");
            }
            h.n_head_kv                    = n != 0 ? n : h.n_head_kv;
            h.recurrent_layers[size_t(il)] = n == 0;
        }
    } else {
        h.n_head_kv = get_u("attention.head_count_kv", h.n_head, false);
    }
    if (h.n_embd == 0 || h.n_layer == 0 || h.n_head == 0 || h.n_head_kv == 0 || h.n_head % h.n_head_kv != 0) {
        throw model_error("bad hyperparameters: n_embd " + std::to_string(h.n_embd) + ", n_layer " +
                          std::to_string(h.n_layer) + ", n_head " + std::to_string(h.n_head) + ", n_head_kv " +
                          std::to_string(h.n_head_kv) + " (n_head must be a multiple of n_head_kv)");
    }
    h.n_embd_head_k = get_u("attention.key_length", h.n_embd / h.n_head, false);
    h.n_embd_head_v = get_u("attention.value_length", h.n_embd / h.n_head, false);
    h.n_rot         = get_u("rope.dimension_count", h.n_embd_head_k, false);
    if (h.n_rot <= 0 || h.n_rot % 2 != 0 || h.n_rot > h.n_embd_head_k) {
        throw model_error("key " + pre + "rope.dimension_count must be even and at most the head size");
    }
    h.rms_eps        = get_f("attention.layer_norm_rms_epsilon", 0, true);
    if (!(h.rms_eps > 0.0f)) {  // 1 / sqrt(mean + eps): a zero or negative eps can divide by zero or go NaN
        throw model_error("key " + pre + "attention.layer_norm_rms_epsilon must be positive, is " +
                          std::to_string(h.rms_eps));
    }
    h.rope_freq_base = get_f("rope.freq_base", 10000.0f, false);
    h.n_ctx_orig     = get_u("rope.scaling.original_context_length", h.n_ctx_train, false);
    if (const gguf::value * st = reader_.find(pre + "rope.scaling.type")) {
        const std::string * s = st->as_string();
        if (!s || (*s != "none" && *s != "linear" && *s != "yarn")) {
            throw model_error("key " + pre + "rope.scaling.type: only 'none', 'linear' and 'yarn' are supported, is " +
                              st->to_display());
        }
        h.rope_ext_factor = *s == "yarn" ? 1.0f : 0.0f;
    }
    const float factor = get_f("rope.scaling.factor", 0.0f, false);
    h.rope_freq_scale  = factor > 0.0f ? 1.0f / factor : 1.0f;
    h.swa_layers.assign(size_t(h.n_layer), false);
    h.rope_type = h.architecture == arch::llama ? 0 : 2;  // GGML_ROPE_TYPE_NORMAL / NEOX

    if (h.architecture == arch::gemma3) {
        h.n_swa = get_u("attention.sliding_window", 0, true);
        // Every sixth layer attends globally; the others see the last n_swa positions (llama.cpp's
        // swa pattern 6) with their own RoPE base.
        for (int64_t il = 0; il < h.n_layer; ++il) {
            h.swa_layers[size_t(il)] = il % 6 < 5;
        }
        h.rope_freq_base_swa = 10000.0f;
        h.embd_scale         = true;
        h.f_attention_scale  = h.n_layer == 62 ? 1.0f / std::sqrt(float(h.n_embd / h.n_head))
                                               : 1.0f / std::sqrt(float(h.n_embd_head_k));
    }
    if (h.architecture == arch::gpt_oss) {
        // Even layers see the last n_swa positions (llama.cpp's swa pattern 2), with the global
        // layers' RoPE (base, scaling and YaRN alike).
        h.n_swa = get_u("attention.sliding_window", 0, true);
        for (int64_t il = 0; il < h.n_layer; ++il) {
            h.swa_layers[size_t(il)] = il % 2 == 0;
        }
        h.rope_freq_base_swa  = get_f("rope.freq_base_swa", h.rope_freq_base, false);
        h.rope_freq_scale_swa = h.rope_freq_scale;
        h.rope_ext_factor_swa = h.rope_ext_factor;
    }

    if (h.architecture == arch::qwen35) {
        // llama.cpp's qwen35: gated delta-net layers, and every full_attention_interval-th layer (or
        // those attention.recurrent_layers marks false) full attention with IMROPE.
        h.rope_type   = GGML_ROPE_TYPE_IMROPE;
        h.ssm_d_conv  = get_u("ssm.conv_kernel", 0, true);
        h.ssm_d_inner = get_u("ssm.inner_size", 0, true);
        h.ssm_d_state = get_u("ssm.state_size", 0, true);
        h.ssm_dt_rank = get_u("ssm.time_step_rank", 0, true);
        h.ssm_n_group = get_u("ssm.group_count", 0, true);
        if (h.ssm_d_conv < 1 || h.ssm_d_state < 1 || h.ssm_n_group < 1 || h.ssm_dt_rank % h.ssm_n_group != 0 ||
            h.ssm_d_inner != h.ssm_d_state * h.ssm_dt_rank) {
            throw model_error("bad delta-net hyperparameters: conv kernel " + std::to_string(h.ssm_d_conv) +
                              ", inner size " + std::to_string(h.ssm_d_inner) + ", state size " +
                              std::to_string(h.ssm_d_state) + ", " + std::to_string(h.ssm_dt_rank) + " value heads, " +
                              std::to_string(h.ssm_n_group) + " key heads (need inner = state x value heads, the "
                              "value heads a multiple of the key heads)");
        }
        const gguf::value * sec = reader_.find(pre + "rope.dimension_sections");
        if (!sec || sec->type() != gguf::value_type::ARRAY || sec->array_size() < 4 ||
            (sec->elem_type() != gguf::value_type::INT32 && sec->elem_type() != gguf::value_type::UINT32)) {
            throw model_error("key " + pre + "rope.dimension_sections must be an array of 4 integers");
        }
        int sum = 0;
        for (int i = 0; i < 4; ++i) {
            std::memcpy(&h.rope_sections[i], sec->array_bytes().data() + 4 * i, 4);
            if (h.rope_sections[i] < 0) {
                throw model_error("key " + pre + "rope.dimension_sections has a negative section");
            }
            sum += h.rope_sections[i];
        }
        if (sum > h.n_rot / 2) {
            throw model_error("key " + pre + "rope.dimension_sections covers more pairs than rope.dimension_count");
        }
        h.recurrent_layers.assign(size_t(h.n_layer), false);
        if (const gguf::value * rl = reader_.find(pre + "attention.recurrent_layers")) {
            if (rl->type() != gguf::value_type::ARRAY || rl->elem_type() != gguf::value_type::BOOL ||
                int64_t(rl->array_size()) != h.n_layer) {
                throw model_error("key " + pre + "attention.recurrent_layers must be one bool per layer");
            }
            for (int64_t il = 0; il < h.n_layer; ++il) {
                h.recurrent_layers[size_t(il)] = rl->array_bytes()[size_t(il)] != 0;
            }
        } else {
            const int64_t interval = get_u("full_attention_interval", 4, false);
            if (interval < 1) {
                throw model_error("key " + pre + "full_attention_interval must be at least 1");
            }
            for (int64_t il = 0; il < h.n_layer; ++il) {
                h.recurrent_layers[size_t(il)] = (il + 1) % interval != 0;
            }
        }
    }
    if (h.architecture == arch::lfm2) {
        h.ssm_d_conv  = get_u("shortconv.l_cache", 0, true);
        h.ssm_d_inner = h.n_embd;
        if (h.ssm_d_conv < 2) {
            throw model_error("key " + pre + "shortconv.l_cache must be at least 2");
        }
    }
    if (moe) {
        h.n_expert      = get_u("expert_count", 0, true);
        h.n_expert_used = get_u("expert_used_count", 0, true);
        h.n_ff_exp      = get_u("expert_feed_forward_length", 0, true);
        if (h.n_expert_used < 1 || h.n_expert_used > h.n_expert || h.n_ff_exp < 1) {
            throw model_error("bad mixture of experts: " + std::to_string(h.n_expert_used) + " of " +
                              std::to_string(h.n_expert) + " experts used per token, expert FFN width " +
                              std::to_string(h.n_ff_exp) + " (need 1 <= used <= count and a positive width)");
        }
    }

    const gguf::tensor_info * te = reader_.find_tensor("token_embd.weight");
    if (!te) {
        throw model_error("missing tensor token_embd.weight");
    }
    h.n_vocab = get_u("vocab_size", te->ne[1], false);
}

void model::create_tensors(const load_options & opts) {
    const hparams & h = hp_;
    ctx_              = std::make_unique<ggml_context>();
    std::vector<std::pair<ggml_tensor *, const gguf::tensor_info *>> loaded;
    std::vector<weight_use>                                           uses;
    int64_t                                                           layer = -1;  // of the weights get() reads

    auto get = [&](const std::string & name, std::vector<int64_t> ne, bool required, bool matmul,
                   const char * as = nullptr) -> ggml_tensor * {
        const gguf::tensor_info * ti = reader_.find_tensor(name);
        if (!ti) {
            if (required) {
                throw model_error("missing tensor " + name + " (expected shape " +
                                  shape_str(ne.data(), int(ne.size())) + ")");
            }
            return nullptr;
        }
        bool ok = int(ti->n_dims) <= int(ne.size());
        for (size_t i = 0; i < 4; ++i) {
            ok = ok && ti->ne[i] == (i < ne.size() ? ne[i] : 1);
        }
        if (!ok) {
            throw model_error("tensor " + name + " has shape " + shape_str(ti->ne.data(), int(ti->n_dims)) +
                              ", expected " + shape_str(ne.data(), int(ne.size())));
        }
        const ggml_type_traits * tr = ggml_get_type_traits(ti->type);
        if (!tr || !tr->to_float) {
            throw model_error("tensor " + name + " has type " + ggml_type_name(ti->type) +
                              ", which cannot be computed");
        }
        ggml_tensor * t = ggml_new_tensor(ctx_.get(), ti->type, 4, ti->ne.data());
        ggml_set_name(t, as ? as : name.c_str());
        loaded.emplace_back(t, ti);
        uses.push_back(weight_use{matmul, layer, h.n_layer});
        if (!as) {  // a second use of a file tensor is not counted twice
            n_params_ += uint64_t(ti->nelements());
            weight_bytes_ += ti->nbytes;
        }
        return t;
    };

    const int64_t E = h.n_embd, V = h.n_vocab;
    const int64_t Eq = h.n_embd_head_k * h.n_head, Ek = h.n_embd_k_gqa(), Ev = h.n_embd_v_gqa();
    const int64_t Eo = h.n_embd_head_v * h.n_head;
    const bool    gemma = h.architecture == arch::gemma3;
    const bool    qk_norm = gemma || h.architecture == arch::qwen3 || h.architecture == arch::qwen3moe ||
                         h.architecture == arch::lfm2;

    tok_embd    = get("token_embd.weight", {E, V}, true, false);
    uses.back().is_table = true;
    // lfm2 names its final norm token_embd_norm.
    output_norm = get(h.architecture == arch::lfm2 ? "token_embd_norm.weight" : "output_norm.weight", {E}, true, false);
    output      = get("output.weight", {E, V}, false, true);
    if (!output) {
        // Tied embeddings: the output head reads token_embd's bytes as a tensor of its own, so it can
        // live where its MUL_MAT runs (an NPU's REPACK buffer) while GET_ROWS reads token_embd; when
        // both stay in the file's mapping they share its memory.
        tied_   = true;
        output  = get("token_embd.weight", {E, V}, true, true, "output.weight (tied to token_embd.weight)");
    }
    rope_freqs = get("rope_freqs.weight", {h.n_rot / 2}, false, false);
    layers.resize(size_t(h.n_layer));
    for (int64_t il = 0; il < h.n_layer; ++il) {
        layer_weights &   L = layers[size_t(il)];
        const std::string b = "blk." + std::to_string(il) + ".";
        layer               = il;
        L.attn_norm         = get(b + "attn_norm.weight", {E}, true, false);
        if (h.architecture == arch::qwen35) {
            // Every layer: the pre-FFN norm named post_attention_norm, a dense SwiGLU FFN.
            L.ffn_norm = get(b + "post_attention_norm.weight", {E}, true, false);
            L.ffn_gate = get(b + "ffn_gate.weight", {E, h.n_ff}, true, true);
            L.ffn_up   = get(b + "ffn_up.weight", {E, h.n_ff}, true, true);
            L.ffn_down = get(b + "ffn_down.weight", {h.n_ff, E}, true, true);
            if (h.is_recurrent(il)) {
                const int64_t Hv = h.ssm_dt_rank, Di = h.ssm_d_inner;
                L.wqkv       = get(b + "attn_qkv.weight", {E, h.ssm_conv_dim()}, true, true);
                L.wqkv_gate  = get(b + "attn_gate.weight", {E, Di}, true, true);
                L.ssm_conv1d = get(b + "ssm_conv1d.weight", {h.ssm_d_conv, h.ssm_conv_dim()}, true, false);
                L.ssm_dt     = get(b + "ssm_dt.bias", {Hv}, true, false);
                L.ssm_a      = get(b + "ssm_a", {Hv}, true, false);
                L.ssm_beta   = get(b + "ssm_beta.weight", {E, Hv}, true, true);
                L.ssm_alpha  = get(b + "ssm_alpha.weight", {E, Hv}, true, true);
                L.ssm_norm   = get(b + "ssm_norm.weight", {h.ssm_d_state}, true, false);
                L.ssm_out    = get(b + "ssm_out.weight", {Di, E}, true, true);
                continue;
            }
            // Full attention: Q and its output gate interleaved per head in one projection.
            L.wq     = get(b + "attn_q.weight", {E, 2 * Eq}, true, true);
            L.wk     = get(b + "attn_k.weight", {E, Ek}, true, true);
            L.wv     = get(b + "attn_v.weight", {E, Ev}, true, true);
            L.wo     = get(b + "attn_output.weight", {Eo, E}, true, true);
            L.q_norm = get(b + "attn_q_norm.weight", {h.n_embd_head_k}, true, false);
            L.k_norm = get(b + "attn_k_norm.weight", {h.n_embd_head_k}, true, false);
            continue;
        }
        if (h.architecture == arch::lfm2 && h.is_recurrent(il)) {
            L.wqkv       = get(b + "shortconv.in_proj.weight", {E, 3 * E}, true, true);
            L.ssm_conv1d = get(b + "shortconv.conv.weight", {h.ssm_d_conv, E}, true, false);
            L.ssm_out    = get(b + "shortconv.out_proj.weight", {E, E}, true, true);
            L.ffn_norm   = get(b + "ffn_norm.weight", {E}, true, false);
            L.ffn_gate   = get(b + "ffn_gate.weight", {E, h.n_ff}, true, true);
            L.ffn_up     = get(b + "ffn_up.weight", {E, h.n_ff}, true, true);
            L.ffn_down   = get(b + "ffn_down.weight", {h.n_ff, E}, true, true);
            continue;
        }
        L.wq                = get(b + "attn_q.weight", {E, Eq}, true, true);
        L.wk                = get(b + "attn_k.weight", {E, Ek}, true, true);
        L.wv                = get(b + "attn_v.weight", {E, Ev}, true, true);
        L.wo                = get(b + "attn_output.weight", {Eo, E}, true, true);
        const bool bias     = h.architecture == arch::qwen2;
        const bool oss      = h.architecture == arch::gpt_oss;
        L.bq                = get(b + "attn_q.bias", {Eq}, bias, false);
        L.bk                = get(b + "attn_k.bias", {Ek}, bias, false);
        L.bv                = get(b + "attn_v.bias", {Ev}, bias, false);
        L.bo                = get(b + "attn_output.bias", {E}, oss, false);
        L.attn_sinks        = oss ? get(b + "attn_sinks.weight", {h.n_head}, true, false) : nullptr;
        if (qk_norm) {
            L.q_norm = get(b + "attn_q_norm.weight", {h.n_embd_head_k}, true, false);
            L.k_norm = get(b + "attn_k_norm.weight", {h.n_embd_head_k}, true, false);
        }
        if (gemma) {
            L.post_attn_norm = get(b + "post_attention_norm.weight", {E}, true, false);
            L.post_ffn_norm  = get(b + "post_ffw_norm.weight", {E}, true, false);
        }
        // gpt-oss names its pre-FFN norm post_attention_norm.
        L.ffn_norm = get(b + (oss ? "post_attention_norm.weight" : "ffn_norm.weight"), {E}, true, false);
        if (h.n_expert > 0) {
            const int64_t X = h.n_expert, F = h.n_ff_exp;
            L.ffn_gate_inp  = get(b + "ffn_gate_inp.weight", {E, X}, true, true);
            L.ffn_gate_exps = get(b + "ffn_gate_exps.weight", {E, F, X}, true, true);
            L.ffn_up_exps   = get(b + "ffn_up_exps.weight", {E, F, X}, true, true);
            L.ffn_down_exps = get(b + "ffn_down_exps.weight", {F, E, X}, true, true);
            if (oss) {
                L.ffn_gate_inp_b  = get(b + "ffn_gate_inp.bias", {X}, true, false);
                L.ffn_gate_exps_b = get(b + "ffn_gate_exps.bias", {F, X}, true, false);
                L.ffn_up_exps_b   = get(b + "ffn_up_exps.bias", {F, X}, true, false);
                L.ffn_down_exps_b = get(b + "ffn_down_exps.bias", {E, X}, true, false);
            }
            continue;
        }
        L.ffn_gate = get(b + "ffn_gate.weight", {E, h.n_ff}, true, true);
        L.ffn_up   = get(b + "ffn_up.weight", {E, h.n_ff}, true, true);
        L.ffn_down = get(b + "ffn_down.weight", {h.n_ff, E}, true, true);
    }

    // Each weight's buffer type: the matmul type where the caller wants it, else weight_buft, else
    // (nullptr) the file's mapping.
    std::vector<backend_buffer_type *> where(loaded.size(), opts.weight_buft);
    for (size_t i = 0; i < loaded.size(); ++i) {
        if (opts.placement) {
            if (backend_buffer_type * b = opts.placement(loaded[i].first, uses[i])) {
                where[i] = b;
            }
        }
    }
    bool any_mapped = false;
    for (backend_buffer_type * b : where) {
        any_mapped = any_mapped || b == nullptr;
    }
    if (any_mapped) {
        if (!opts.host_buft || !opts.host_buft->is_host()) {
            throw model_error("mapped weights need a host buffer type");
        }
        const auto &    first = reader_.tensors().front();
        const uint8_t * data0 = reader_.tensor_data(first).data();
        uint8_t *       base  = const_cast<uint8_t *>(data0 - first.file_offset);
        auto            buf   = std::make_unique<mapped_buffer>(opts.host_buft, base, size_t(reader_.file_size()));
        buf->set_usage(buffer_usage::weights);
        for (size_t i = 0; i < loaded.size(); ++i) {
            if (!where[i]) {
                tensor_alloc(buf.get(), loaded[i].first, base + loaded[i].second->file_offset);
            }
        }
        buffers_.push_back(std::move(buf));
    }
    // The other buffer types' buffers: tensors at aligned offsets, a new buffer whenever the next
    // tensor would take one past the type's max_size (GGML_HEXAGON_MBUF for the NPU's: smaller
    // buffers let its window slide over a model larger than it); then their bytes are copied in
    // (set_tensor: a REPACK type tiles them).
    std::vector<backend_buffer_type *> types;
    for (backend_buffer_type * b : where) {
        if (b && std::find(types.begin(), types.end(), b) == types.end()) {
            types.push_back(b);
        }
    }
    size_t total_copy = 0;
    for (backend_buffer_type * buft : types) {
        const size_t        align = buft->alignment();
        std::vector<size_t> members;  // the tensors of the buffer being filled
        size_t              total = 0;
        std::vector<size_t> offs(loaded.size(), 0);
        auto                flush = [&] {
            if (members.empty()) {
                return;
            }
            auto buf = buft->alloc_buffer(total);
            buf->set_usage(buffer_usage::weights);
            uint8_t * base = static_cast<uint8_t *>(buf->base());
            for (size_t i : members) {
                tensor_alloc(buf.get(), loaded[i].first, base + offs[i]);
                total_copy += loaded[i].second->nbytes;
            }
            buffers_.push_back(std::move(buf));
            members.clear();
            total = 0;
        };
        for (size_t i = 0; i < loaded.size(); ++i) {
            if (where[i] != buft) {
                continue;
            }
            const size_t need = buft->alloc_size(loaded[i].first);
            if (need > buft->max_size()) {
                throw model_error("weight '" + std::string(loaded[i].first->name) + "' needs " + std::to_string(need) +
                                  " bytes in " + buft->name() + ", more than its largest buffer (" +
                                  std::to_string(buft->max_size()) + " bytes)");
            }
            size_t at = (total + align - 1) / align * align;
            if (at + need > buft->max_size()) {
                flush();
                at = 0;
            }
            offs[i] = at;
            total   = at + need;
            members.push_back(i);
        }
        flush();
    }
    size_t done = 0;
    for (size_t i = 0; i < loaded.size(); ++i) {
        if (!where[i]) {
            continue;
        }
        const auto bytes = reader_.tensor_data(*loaded[i].second);
        tensor_set(loaded[i].first, bytes.data(), 0, bytes.size());
        done += bytes.size();
        if (opts.progress) {
            opts.progress(done, total_copy, opts.progress_user);
        }
    }
}

} // namespace hexnpu::model
