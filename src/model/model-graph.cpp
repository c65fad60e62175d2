// The forward graphs: one decoder-only transformer skeleton with the per-architecture pieces
//   llama:  RMSNorm, GQA attention with RoPE (NORMAL), SwiGLU FFN
//   qwen2:  llama + Q/K/V biases, RoPE NEOX
//   qwen3:  llama + RMSNorm on each Q and K head (QK-norm), RoPE NEOX
//   qwen3moe: qwen3 with a mixture of experts for the FFN (moe_ffn: llama.cpp's build_moe_ffn with
//           a softmax router, the top n_expert_used experts' weights renormalized, SwiGLU experts)
//   gemma3: embeddings times sqrt(n_embd); QK-norm; post-attention and post-FFN norms; GEGLU
//           (tanh GELU); Q scaled by f_attention_scale; sliding-window attention on five of six
//           layers with their own RoPE base; tied output embedding.
//   gpt-oss: QKV and output biases, attention sinks, sliding-window attention on even layers (the
//           global RoPE, YaRN included), the pre-FFN norm named post_attention_norm, a mixture of
//           experts whose router picks by its biased logits and weighs the picked by their
//           softmax, experts with biases (ADD_ID) and SWIGLU_OAI (alpha 1.702, limit 7).
//   qwen35: gated delta-net layers (recurrent-layers.h) and, every fourth layer, full attention
//           with Q's output gate (sigmoid) and IMROPE; the pre-FFN norm named post_attention_norm.
//   lfm2:   short-convolution layers (recurrent-layers.h) where a layer has no KV heads, QK-norm
//           attention (NEOX) in the others; the final norm named token_embd_norm.
// The norms multiply by the weights as stored in the GGUF (the converter already folds Gemma's
// "1 + w" into them). K and V go to the F16 cache with SET_ROWS; attention is FLASH_ATTN_EXT over
// the cache's first n_kv rows with a causal (and, for local layers, sliding-window) mask.
#include "model/model.h"
#include "model/recurrent-layers.h"

#include <cmath>

namespace hexnpu::model {
namespace {

// The mixture-of-experts FFN of cur [n_embd, n_tokens], as llama.cpp's build_moe_ffn builds it.
// qwen3moe: the router's softmax over the experts, the n_used largest (TOP_K) and their
// probabilities summed to one, SwiGLU experts. gpt-oss: the router's biased logits pick, the
// softmax of the picked logits weighs, experts with biases and SWIGLU_OAI. Then per token the used
// experts' outputs weighted and added.
ggml_tensor * moe_ffn(ggml_context & ctx, const layer_weights & L, const hparams & h, ggml_tensor * cur) {
    const bool    oss      = h.architecture == arch::gpt_oss;
    const int64_t n_tokens = cur->ne[1], n_used = h.n_expert_used;
    ggml_tensor * logits   = ggml_mul_mat(&ctx, L.ffn_gate_inp, cur);  // [n_expert, n_tokens]
    if (L.ffn_gate_inp_b) {
        logits = ggml_add(&ctx, logits, L.ffn_gate_inp_b);
    }
    ggml_tensor * probs    = oss ? logits : ggml_soft_max_ext(&ctx, logits, nullptr, 1.0f, 0.0f);
    ggml_tensor * selected = ggml_top_k(&ctx, probs, int(n_used));  // [n_used, n_tokens]
    ggml_tensor * weights  = ggml_get_rows(&ctx, ggml_reshape_3d(&ctx, probs, 1, h.n_expert, n_tokens), selected);
    weights                = ggml_reshape_2d(&ctx, weights, n_used, n_tokens);
    if (oss) {
        weights = ggml_soft_max_ext(&ctx, weights, nullptr, 1.0f, 0.0f);
    } else {
        ggml_tensor * sum = ggml_clamp(&ctx, ggml_sum_rows(&ctx, weights), 6.103515625e-5f, INFINITY);
        weights           = ggml_div(&ctx, weights, sum);
    }
    weights = ggml_reshape_3d(&ctx, weights, 1, n_used, n_tokens);

    // An expert matmul [.., n_used, n_tokens], plus the picked experts' biases where there are.
    auto experts_mm = [&](ggml_tensor * w, ggml_tensor * bias, ggml_tensor * x) {
        ggml_tensor * y = ggml_mul_mat_id(&ctx, w, x, selected);
        return bias ? ggml_add_id(&ctx, y, bias, selected) : y;
    };
    cur                   = ggml_reshape_3d(&ctx, cur, cur->ne[0], 1, n_tokens);
    ggml_tensor * up      = experts_mm(L.ffn_up_exps, L.ffn_up_exps_b, cur);  // [n_ff_exp, n_used, n_tokens]
    ggml_tensor * gate    = experts_mm(L.ffn_gate_exps, L.ffn_gate_exps_b, cur);
    ggml_tensor * act     = oss ? ggml_swiglu_oai(&ctx, gate, up, 1.702f, 7.0f) : ggml_glu(&ctx, gate, up, GGML_GLU_OP_SWIGLU, false);
    ggml_tensor * experts = ggml_mul(&ctx, experts_mm(L.ffn_down_exps, L.ffn_down_exps_b, act), weights);
    ggml_tensor * out     = nullptr;  // [n_embd, n_tokens]: the n_used slices added
    for (int64_t i = 0; i < n_used; ++i) {
        ggml_tensor * e = ggml_view_2d(&ctx, experts, experts->ne[0], n_tokens, experts->nb[2], size_t(i) * experts->nb[1]);
        out             = out ? ggml_add(&ctx, out, e) : e;
    }
    return n_used == 1 ? ggml_cont(&ctx, out) : out;
}

// This batch's K and V rows stored in the layer's cache, then q [hd, n_head, n_tokens] attending
// over the cache's first n_kv rows: [hd_v n_head, n_tokens].
ggml_tensor * attention(ggml_context & ctx, const hparams & h, const layer_weights & L, ggml_tensor * q, ggml_tensor * k,
                        ggml_tensor * v, ggml_tensor * k_cache, ggml_tensor * v_cache, const model::graph_inputs & in,
                        ggml_tensor * mask, float kq_scale, int64_t n_kv) {
    const int64_t hd_k = h.n_embd_head_k, hd_v = h.n_embd_head_v, n_tokens = q->ne[2];
    ggml_tensor * k_stored = ggml_set_rows(&ctx, k_cache, ggml_reshape_2d(&ctx, k, h.n_embd_k_gqa(), n_tokens), in.kv_idx);
    ggml_tensor * v_stored = ggml_set_rows(&ctx, v_cache, ggml_reshape_2d(&ctx, v, h.n_embd_v_gqa(), n_tokens), in.kv_idx);
    ggml_tensor * K = ggml_view_3d(&ctx, k_stored, hd_k, n_kv, h.n_head_kv, k_cache->nb[1], size_t(hd_k) * k_cache->nb[0], 0);
    ggml_tensor * V = ggml_view_3d(&ctx, v_stored, hd_v, n_kv, h.n_head_kv, v_cache->nb[1], size_t(hd_v) * v_cache->nb[0], 0);
    ggml_tensor * Q    = ggml_permute(&ctx, q, 0, 2, 1, 3);  // [hd, n_tokens, n_head]
    ggml_tensor * attn = ggml_flash_attn_ext(&ctx, Q, K, V, mask, kq_scale, 0.0f, 0.0f);
    if (L.attn_sinks) {
        ggml_flash_attn_ext_add_sinks(attn, L.attn_sinks);
    }
    return ggml_reshape_2d(&ctx, attn, hd_v * h.n_head, n_tokens);
}

// qwen35's full attention: Q and its output gate interleaved per head in one projection, QK-norm,
// IMROPE over the rope sections, the attention's output times sigmoid(gate), the output projection.
ggml_tensor * gated_attention(ggml_context & ctx, const hparams & h, const layer_weights & L, ggml_tensor * cur,
                              const model::graph_inputs & in, ggml_tensor * k_cache, ggml_tensor * v_cache, int64_t n_kv) {
    const int64_t hd = h.n_embd_head_k, n_tokens = cur->ne[1];
    auto          norm = [&](ggml_tensor * x, ggml_tensor * w) { return ggml_mul(&ctx, ggml_rms_norm(&ctx, x, h.rms_eps), w); };
    ggml_tensor * qg   = ggml_mul_mat(&ctx, L.wq, cur);  // per head: q (hd), then its gate (hd)
    const size_t  e    = qg->nb[0];
    auto          half = [&](int64_t at) {
        return ggml_view_3d(&ctx, qg, hd, h.n_head, n_tokens, size_t(2 * hd) * e, size_t(2 * hd * h.n_head) * e, size_t(at) * e);
    };
    ggml_tensor * q    = norm(half(0), L.q_norm);
    ggml_tensor * gate = ggml_reshape_2d(&ctx, ggml_cont(&ctx, half(hd)), hd * h.n_head, n_tokens);
    ggml_tensor * k    = norm(ggml_reshape_3d(&ctx, ggml_mul_mat(&ctx, L.wk, cur), hd, h.n_head_kv, n_tokens), L.k_norm);
    ggml_tensor * v    = ggml_reshape_3d(&ctx, ggml_mul_mat(&ctx, L.wv, cur), hd, h.n_head_kv, n_tokens);
    auto          rope = [&](ggml_tensor * x) {
        return ggml_rope_multi(&ctx, x, in.pos, nullptr, int(h.n_rot), h.rope_sections, h.rope_type, int(h.n_ctx_orig),
                               h.rope_freq_base, h.rope_freq_scale, h.rope_ext_factor, 1.0f, 32.0f, 1.0f);
    };
    const float   kq_scale = h.f_attention_scale != 0.0f ? h.f_attention_scale : 1.0f / std::sqrt(float(hd));
    ggml_tensor * attn     = attention(ctx, h, L, rope(q), rope(k), v, k_cache, v_cache, in, in.mask, kq_scale, n_kv);
    attn                   = ggml_mul(&ctx, attn, ggml_unary(&ctx, gate, GGML_UNARY_OP_SIGMOID));
    return ggml_mul_mat(&ctx, L.wo, attn);
}

} // namespace

model::graph_inputs model::build_graph(ggml_context & ctx, ggml_cgraph & gf, int64_t n_tokens, int64_t n_kv,
                                       int64_t n_outputs, const layer_caches & caches) const {
    const hparams & h = hp_;
    graph_inputs    in;
    auto input = [&](ggml_type type, int64_t ne0, int64_t ne1, const char * name) {
        ggml_tensor * t = ggml_new_tensor_2d(&ctx, type, ne0, ne1);
        ggml_set_name(t, name);
        t->flags |= GGML_TENSOR_FLAG_INPUT;
        return t;
    };
    in.tokens = input(GGML_TYPE_I32, n_tokens, 1, "inp_tokens");
    // IMROPE takes four positions per token (t, h, w, e: for text t, t, t, 0).
    in.pos    = input(GGML_TYPE_I32, h.rope_type == GGML_ROPE_TYPE_IMROPE ? 4 * n_tokens : n_tokens, 1, "inp_pos");
    in.kv_idx = input(GGML_TYPE_I64, n_tokens, 1, "inp_kv_idx");
    in.mask   = input(GGML_TYPE_F16, n_kv, n_tokens, "kq_mask");
    bool any_swa = false;
    for (bool s : h.swa_layers) {
        any_swa = any_swa || s;
    }
    if (any_swa && h.n_swa > 0) {
        in.mask_swa = input(GGML_TYPE_F16, n_kv, n_tokens, "kq_mask_swa");
    }
    if (n_outputs > 0 && n_outputs < n_tokens) {
        in.out_ids = input(GGML_TYPE_I32, n_outputs, 1, "inp_out_ids");
    }

    const bool    gemma = h.architecture == arch::gemma3;
    const int64_t hd_k = h.n_embd_head_k;
    const float   eps  = h.rms_eps;
    auto norm = [&](ggml_tensor * x, ggml_tensor * w) { return ggml_mul(&ctx, ggml_rms_norm(&ctx, x, eps), w); };

    // Tied embeddings whose output head went to an NPU's buffer (tiled in REPACK): the token rows
    // come from those same bytes on the NPU (GET_ROWS_Q), not from the file's mapping on the CPU.
    ggml_tensor * table = tied() && output->buffer != tok_embd->buffer ? output : tok_embd;
    ggml_tensor * x     = ggml_get_rows(&ctx, table, in.tokens);
    if (h.embd_scale) {
        x = ggml_scale(&ctx, x, std::sqrt(float(h.n_embd)));
    }
    // The standard layer's attention: Q, K, V (biases, QK-norm), RoPE, attention, the output
    // projection.
    auto self_attention = [&](const layer_weights & L, int64_t il, ggml_tensor * cur) {
        const bool swa = h.swa_layers[size_t(il)] && in.mask_swa;
        ggml_tensor * q   = ggml_mul_mat(&ctx, L.wq, cur);
        ggml_tensor * k   = ggml_mul_mat(&ctx, L.wk, cur);
        ggml_tensor * v   = ggml_mul_mat(&ctx, L.wv, cur);
        if (L.bq) {
            q = ggml_add(&ctx, q, L.bq);
        }
        if (L.bk) {
            k = ggml_add(&ctx, k, L.bk);
        }
        if (L.bv) {
            v = ggml_add(&ctx, v, L.bv);
        }
        q = ggml_reshape_3d(&ctx, q, hd_k, h.n_head, n_tokens);
        k = ggml_reshape_3d(&ctx, k, hd_k, h.n_head_kv, n_tokens);
        if (L.q_norm) {
            q = norm(q, L.q_norm);
            k = norm(k, L.k_norm);
        }
        const float base  = swa ? h.rope_freq_base_swa : h.rope_freq_base;
        const float scale = swa ? h.rope_freq_scale_swa : h.rope_freq_scale;
        const float ext   = swa ? h.rope_ext_factor_swa : h.rope_ext_factor;
        q = ggml_rope_ext(&ctx, q, in.pos, rope_freqs, int(h.n_rot), h.rope_type, int(h.n_ctx_orig), base, scale,
                          ext, 1.0f, 32.0f, 1.0f);
        k = ggml_rope_ext(&ctx, k, in.pos, rope_freqs, int(h.n_rot), h.rope_type, int(h.n_ctx_orig), base, scale,
                          ext, 1.0f, 32.0f, 1.0f);
        float kq_scale = 1.0f / std::sqrt(float(hd_k));
        if (h.f_attention_scale != 0.0f) {
            q        = ggml_scale(&ctx, q, h.f_attention_scale);
            kq_scale = 1.0f;
        }

        ggml_tensor * attn = attention(ctx, h, L, q, k, v, caches.k[size_t(il)], caches.v[size_t(il)], in,
                                       swa ? in.mask_swa : in.mask, kq_scale, n_kv);
        cur = ggml_mul_mat(&ctx, L.wo, attn);
        if (L.bo) {
            cur = ggml_add(&ctx, cur, L.bo);
        }
        return cur;
    };
    for (int64_t il = 0; il < h.n_layer; ++il) {
        const layer_weights & L   = layers[size_t(il)];
        ggml_tensor *         cur = norm(x, L.attn_norm);
        if (h.is_recurrent(il) && h.architecture == arch::lfm2) {
            cur = short_conv_layer(ctx, gf, h, L, cur, caches.conv[size_t(il)]);
        } else if (h.is_recurrent(il)) {
            cur = delta_net_layer(ctx, gf, h, L, cur, caches.conv[size_t(il)], caches.ssm[size_t(il)]);
        } else if (h.architecture == arch::qwen35) {
            cur = gated_attention(ctx, h, L, cur, in, caches.k[size_t(il)], caches.v[size_t(il)], n_kv);
        } else {
            cur = self_attention(L, il, cur);
        }
        if (il == h.n_layer - 1 && in.out_ids) {
            // The last layer's FFN only for the rows whose logits are wanted (as llama.cpp does).
            cur = ggml_get_rows(&ctx, cur, in.out_ids);
            x   = ggml_get_rows(&ctx, x, in.out_ids);
        }
        if (L.post_attn_norm) {
            cur = norm(cur, L.post_attn_norm);
        }
        x = ggml_add(&ctx, cur, x);

        cur = norm(x, L.ffn_norm);
        if (L.ffn_gate_inp) {
            cur = moe_ffn(ctx, L, h, cur);
        } else {
            ggml_tensor * gate = ggml_mul_mat(&ctx, L.ffn_gate, cur);
            ggml_tensor * up   = ggml_mul_mat(&ctx, L.ffn_up, cur);
            cur = ggml_glu(&ctx, gate, up, gemma ? GGML_GLU_OP_GEGLU : GGML_GLU_OP_SWIGLU, false);
            cur = ggml_mul_mat(&ctx, L.ffn_down, cur);
        }
        if (L.post_ffn_norm) {
            cur = norm(cur, L.post_ffn_norm);
        }
        x = ggml_add(&ctx, cur, x);
        char name[32];
        std::snprintf(name, sizeof name, "l_out-%d", int(il));
        ggml_set_name(x, name);
    }
    if (n_outputs == 0) {  // a micro-batch whose logits nobody wants: the cache rows are the result
        ggml_build_forward_expand(gf, x);
        return in;
    }
    x         = norm(x, output_norm);
    in.logits = ggml_mul_mat(&ctx, output, x);
    ggml_set_name(in.logits, "result_output");
    in.logits->flags |= GGML_TENSOR_FLAG_OUTPUT;
    ggml_build_forward_expand(gf, in.logits);
    return in;
}

} // namespace hexnpu::model
