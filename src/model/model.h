// A GGUF language model: hyperparameters and weights (memory-mapped), and the per-architecture
// forward graphs (llama, qwen2, qwen3, qwen3moe, gemma3, gpt-oss, qwen35, lfm2). See context.h for the KV cache and evaluation.
#pragma once

#include "hexnpu/backend.h"
#include "hexnpu/gguf.h"
#include "hexnpu/graph.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace hexnpu::model {

// A model file that cannot be used: unknown architecture, missing or misshapen tensor, missing
// hyperparameter key. what() names the tensor or key.
class model_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

enum class arch { llama, qwen2, qwen3, qwen3moe, gemma3, gpt_oss, qwen35, lfm2 };

const char * arch_name(arch a);

struct hparams {
    arch        architecture = arch::llama;
    std::string name;  // general.name, or the architecture
    int64_t     n_vocab       = 0;
    int64_t     n_ctx_train   = 0;
    int64_t     n_embd        = 0;
    int64_t     n_layer       = 0;
    int64_t     n_ff          = 0;
    int64_t     n_head        = 0;
    int64_t     n_head_kv     = 0;
    int64_t     n_embd_head_k = 0;
    int64_t     n_embd_head_v = 0;
    int64_t     n_rot         = 0;
    float       rms_eps       = 1e-5f;
    int         rope_type     = 0;  // GGML_ROPE_TYPE_NORMAL or _NEOX
    float       rope_freq_base     = 10000.0f;
    float       rope_freq_scale    = 1.0f;
    float       rope_ext_factor    = 0.0f;      // YaRN: 1 when rope.scaling.type = yarn
    float       rope_freq_base_swa = 10000.0f;  // sliding-window layers: gemma3's own base, no scaling;
    float       rope_freq_scale_swa = 1.0f;     //   gpt-oss's the global ones
    float       rope_ext_factor_swa = 0.0f;
    int64_t     n_ctx_orig         = 0;         // RoPE's original context (YaRN), n_ctx_train by default
    int64_t     n_swa              = 0;         // sliding window (0: none)
    std::vector<bool> swa_layers;               // per layer: uses the sliding window
    float       f_attention_scale  = 0.0f;      // Q scale (gemma3); 0: 1/sqrt(head size) in the softmax
    bool        embd_scale         = false;     // gemma: embeddings times sqrt(n_embd)
    int64_t     n_expert           = 0;         // qwen3moe, gpt-oss: experts per layer, used per token, their FFN width
    int64_t     n_expert_used      = 0;
    int64_t     n_ff_exp           = 0;
    // qwen35: the gated delta net's layers (the others attend, gated, with IMROPE over rope_sections):
    // the short convolution's taps, the value width (heads x head size), the head size, the key
    // heads (groups) and the value heads. lfm2: its short-convolution layers (those with no KV
    // heads): the taps (shortconv.l_cache) over n_embd channels (d_inner), no delta net.
    std::vector<bool> recurrent_layers;
    int64_t     ssm_d_conv  = 0;
    int64_t     ssm_d_inner = 0;
    int64_t     ssm_d_state = 0;
    int64_t     ssm_n_group = 0;
    int64_t     ssm_dt_rank = 0;
    int         rope_sections[4] = {0, 0, 0, 0};

    int64_t n_embd_k_gqa() const { return n_embd_head_k * n_head_kv; }
    int64_t n_embd_v_gqa() const { return n_embd_head_v * n_head_kv; }
    bool    is_recurrent(int64_t il) const { return !recurrent_layers.empty() && recurrent_layers[size_t(il)]; }
    // The convolution's channels (q, k and v before the convolution) and the per-sequence state sizes
    // (llama.cpp's n_embd_r and n_embd_s): the last d_conv - 1 inputs of each channel, the delta
    // net's S x S matrix per value head.
    int64_t ssm_conv_dim() const { return ssm_d_inner + 2 * ssm_n_group * ssm_d_state; }
    int64_t n_embd_r() const { return (ssm_d_conv - 1) * ssm_conv_dim(); }
    int64_t n_embd_s() const { return ssm_d_state * ssm_d_inner; }
};

struct layer_weights {
    ggml_tensor * attn_norm      = nullptr;
    ggml_tensor * wq             = nullptr;
    ggml_tensor * wk             = nullptr;
    ggml_tensor * wv             = nullptr;
    ggml_tensor * wo             = nullptr;
    ggml_tensor * bq             = nullptr;  // qwen2
    ggml_tensor * bk             = nullptr;
    ggml_tensor * bv             = nullptr;
    ggml_tensor * bo             = nullptr;  // gpt-oss
    ggml_tensor * attn_sinks     = nullptr;  // gpt-oss: one logit per head that takes part in the softmax
    ggml_tensor * q_norm         = nullptr;  // qwen3, gemma3
    ggml_tensor * k_norm         = nullptr;
    ggml_tensor * post_attn_norm = nullptr;  // gemma3
    ggml_tensor * ffn_norm       = nullptr;
    ggml_tensor * ffn_gate       = nullptr;
    ggml_tensor * ffn_up         = nullptr;
    ggml_tensor * ffn_down       = nullptr;
    ggml_tensor * ffn_gate_inp   = nullptr;  // qwen3moe: the router [n_embd, n_expert]
    ggml_tensor * ffn_gate_exps  = nullptr;  //   the experts' [n_embd, n_ff_exp, n_expert]
    ggml_tensor * ffn_up_exps    = nullptr;
    ggml_tensor * ffn_down_exps  = nullptr;  //   [n_ff_exp, n_embd, n_expert]
    ggml_tensor * ffn_gate_inp_b = nullptr;  // gpt-oss: the router's and the experts' biases
    ggml_tensor * ffn_gate_exps_b = nullptr;
    ggml_tensor * ffn_up_exps_b  = nullptr;
    ggml_tensor * ffn_down_exps_b = nullptr;
    ggml_tensor * post_ffn_norm  = nullptr;  // gemma3
    ggml_tensor * wqkv           = nullptr;  // qwen35 delta-net layers: q, k, v in [n_embd, conv_dim]
                                             //   (lfm2's convolution layers: b, c, x in [n_embd, 3 n_embd];
                                             //   their kernel in ssm_conv1d, out_proj in ssm_out)
    ggml_tensor * wqkv_gate      = nullptr;  //   z, the output gate [n_embd, d_inner]
    ggml_tensor * ssm_conv1d     = nullptr;  //   the convolution [d_conv, conv_dim]
    ggml_tensor * ssm_dt         = nullptr;  //   the decay's bias [H_v]
    ggml_tensor * ssm_a          = nullptr;  //   -exp(A_log) [H_v]
    ggml_tensor * ssm_beta       = nullptr;  //   [n_embd, H_v]
    ggml_tensor * ssm_alpha      = nullptr;  //   [n_embd, H_v]
    ggml_tensor * ssm_norm       = nullptr;  //   the gated RMS norm's weight [head size]
    ggml_tensor * ssm_out        = nullptr;  //   [d_inner, n_embd]
};

// The caches one forward graph reads and writes, per layer (nullptr where the layer has none): an
// attention layer's K and V rows (a row per position), a recurrent layer's convolution and
// delta-net states (one row per sequence: n_embd_r and n_embd_s floats).
struct layer_caches {
    std::vector<ggml_tensor *> k, v, conv, ssm;
};

// How the model uses a weight: read by MUL_MAT or not, and the layer it belongs to (-1: the
// embeddings, the output head and norm).
struct weight_use {
    bool    is_matmul = false;
    int64_t layer     = -1;
    int64_t n_layer   = 0;
    bool    is_table  = false;  // rows looked up by GET_ROWS (the token embedding)
};

struct load_options {
    // Where the weights go. nullptr: the file's memory mapping itself, read in place (the weights
    // are then host memory belonging to `host_buft`, which must be host-visible).
    backend_buffer_type * weight_buft = nullptr;
    // The CPU device's buffer type: the mapped weights are tagged with it.
    backend_buffer_type * host_buft = nullptr;
    // A weight for which this returns a buffer type goes there, e.g. an NPU's REPACK type when the
    // NPU computes MUL_MAT with that weight, or its compute buffers for the norms, on the device
    // its layer is assigned to; everything else follows weight_buft.
    std::function<backend_buffer_type *(const ggml_tensor * weight, const weight_use & use)> placement;
    // Called while weights are copied (done, total bytes).
    void (*progress)(size_t done, size_t total, void * user) = nullptr;
    void * progress_user = nullptr;
};

class model {
  public:
    // Reads hyperparameters and tensors; throws model_error (or gguf::error) on a bad file.
    static std::unique_ptr<model> load(const std::string & path, const load_options & opts);
    ~model();

    const hparams &      hp() const { return hp_; }
    const gguf::reader & file() const { return reader_; }
    const std::string &  path() const { return path_; }
    uint64_t             n_params() const { return n_params_; }
    uint64_t             weight_bytes() const { return weight_bytes_; }  // each file tensor once
    bool                 tied() const { return tied_; }  // output head = token embedding

    ggml_tensor *              tok_embd    = nullptr;
    ggml_tensor *              output_norm = nullptr;
    ggml_tensor *              output      = nullptr;  // token_embd's data when tied()
    ggml_tensor *              rope_freqs  = nullptr;  // optional per-dimension RoPE factors
    std::vector<layer_weights> layers;

    // The forward graph of one micro-batch (see context.cpp for the inputs it expects).
    struct graph_inputs {
        ggml_tensor * tokens   = nullptr;  // I32 [n_tokens]
        ggml_tensor * pos      = nullptr;  // I32 [n_tokens] (qwen35's IMROPE: [4 n_tokens], t h w e)
        ggml_tensor * kv_idx   = nullptr;  // I64 [n_tokens]: cache rows to write
        ggml_tensor * mask     = nullptr;  // F16 [n_kv, n_tokens]
        ggml_tensor * mask_swa = nullptr;  // F16 [n_kv, n_tokens], sliding-window layers
        ggml_tensor * out_ids  = nullptr;  // I32 [n_outputs], nullptr: every token (or none)
        ggml_tensor * logits   = nullptr;  // F32 [n_vocab, n_outputs]; nullptr when n_outputs == 0
    };
    graph_inputs build_graph(ggml_context & ctx, ggml_cgraph & graph, int64_t n_tokens, int64_t n_kv,
                             int64_t n_outputs, const layer_caches & caches) const;

  private:
    model(gguf::reader && r, std::string path);
    void read_hparams();
    void create_tensors(const load_options & opts);

    std::string                                  path_;
    gguf::reader                                 reader_;
    hparams                                      hp_;
    std::unique_ptr<ggml_context>                ctx_;
    std::vector<std::unique_ptr<backend_buffer>> buffers_;
    uint64_t                                     n_params_     = 0;
    uint64_t                                     weight_bytes_ = 0;
    bool                                         tied_         = false;
};

} // namespace hexnpu::model
