// A small llama-architecture GGUF with deterministic pseudo-random weights, so demos and tests
// have a real-looking model without downloading one.
#pragma once

#include "hexnpu/ggml-types.h"
#include "hexnpu/gguf.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hexnpu {

struct synth_params {
    std::string name       = "tiny";
    std::string arch       = "llama";  // llama, qwen2, qwen3, qwen3moe, gemma3, gpt-oss, qwen35 or lfm2
    int         n_vocab    = 512;
    int         n_embd     = 256;
    int         n_layer    = 2;
    int         n_head     = 4;
    int         n_head_kv  = 2;
    int         n_ff       = 768;
    int         n_ctx      = 512;
    int         n_embd_head = 0;       // 0: n_embd / n_head
    int         n_swa      = 0;        // gemma3, gpt-oss: sliding window
    float       yarn_factor = 0.0f;    // > 0: YaRN RoPE scaling by this factor over yarn_orig_ctx positions
    int         yarn_orig_ctx = 0;
    int         n_expert   = 0;        // qwen3moe: experts, used per token, and their FFN width
    int         n_expert_used = 0;
    int         n_ff_exp   = 0;
    float       rope_base  = 10000.0f;
    int         n_rot      = 0;        // 0: the head size; qwen35: a quarter of it, over 4 IMROPE sections
    int         ssm_d_conv = 0;        // qwen35: the gated delta net's convolution taps, head size (key
    int         ssm_d_state = 0;       //   and value), key heads and value heads; every
    int         ssm_n_group = 0;       //   full_attention_interval-th layer attends
    int         ssm_dt_rank = 0;
    int         full_attention_interval = 4;
    int         shortconv_l_cache = 0;  // lfm2: the short convolution's taps; its layers are those
                                        //   with (il + 1) % full_attention_interval != 0 too
    ggml_type   type       = GGML_TYPE_F32;  // type of the weight matrices; norms stay f32
    uint64_t    seed       = 42;
    // Multiplies every layer's ffn_up.weight: 1e6 gives weights past fp16's range (to ~2e5) while
    // the attention, its KV cache and the logits stay in range (the FFN output is normalized away).
    float       ffn_up_scale = 1.0f;
};

// Named presets: "tiny" (~1.8M parameters), "small" (~53M) and "1b" (TinyLlama 1.1B's shapes with 4
// of its 22 layers, ~310M) llamas; "gemma3-tiny", "qwen2-tiny"
// and "qwen3-tiny" (the other architectures' tensors and keys at tiny sizes; gemma3 with six layers,
// head size 64 != n_embd / n_head, sliding window 4, tied embeddings); "qwen3moe-tiny" (Qwen3-30B-A3B's
// layout: 16 experts of FFN width 64, 4 used per token); "gpt-oss-tiny" (gpt-oss's: biases, attention
// sinks, sliding window 4 on even layers, YaRN by 4 over 128 positions, 8 experts of width 64, 2 used);
// "qwen35-tiny" (Qwen3.5's hybrid: three gated delta-net layers of 2 key and 4 value heads of 32, a
// 4-tap convolution, then a gated full-attention layer with IMROPE over a quarter of its head);
// "qwen35-0.8b" (Qwen3.5-0.8B's widths: hidden 1024, 8 query / 2 KV heads of 256, FFN 3584, the delta
// net's 16 key and 16 value heads of 128; 4 of its 24 layers and a 32000-token vocabulary, for
// benchmarks);
// "lfm2-tiny" (LFM2's: three 3-tap short-convolution layers, a QK-norm attention layer, the KV
// heads per layer, the final norm named token_embd_norm).
bool synth_preset(const std::string & name, synth_params & out);
// Every preset's name, for messages.
std::string synth_preset_names();

// The model's tensors and metadata; the writer references data owned by the returned object.
class synth_model {
  public:
    explicit synth_model(const synth_params & p);
    const gguf::writer & writer() const { return writer_; }

  private:
    std::vector<std::unique_ptr<std::vector<uint8_t>>> buffers_;
    gguf::writer                                       writer_;
};

} // namespace hexnpu
