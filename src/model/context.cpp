#include "model/context.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

namespace hexnpu::model {
namespace {

constexpr uint16_t kF16Zero   = 0x0000;
constexpr uint16_t kF16NegInf = 0xFC00;

} // namespace

context::context(const model & m, const context_params & p) : model_(m), params_(p) {
    const hparams & h = m.hp();
    if (p.backends.empty()) {
        throw model_error("context: no backends");
    }
    if (p.n_ctx <= 0 || p.n_ubatch <= 0) {
        throw model_error("context: the context size (-c) and micro-batch size (-ub) must be positive");
    }
    params_.n_ubatch = std::min(p.n_ubatch, p.n_ctx);
    if (!p.kv_layer_bufts.empty() && int64_t(p.kv_layer_bufts.size()) != h.n_layer) {
        throw model_error("context: " + std::to_string(p.kv_layer_bufts.size()) + " KV cache buffer types for " +
                          std::to_string(h.n_layer) + " layers");
    }
    backend_buffer_type * fallback = p.kv_buft ? p.kv_buft : p.backends.back()->device()->buffer_type();
    std::vector<backend_buffer_type *> bufts;
    for (int64_t il = 0; il < h.n_layer; ++il) {
        backend_buffer_type * buft = p.kv_layer_bufts.empty() ? fallback : p.kv_layer_bufts[size_t(il)];
        auto                  it   = std::find(bufts.begin(), bufts.end(), buft);
        if (it == bufts.end()) {
            it = bufts.insert(bufts.end(), buft);
            kv_ctx_.push_back(std::make_unique<ggml_context>());
        }
        ggml_context & kc = *kv_ctx_[size_t(it - bufts.begin())];
        const std::string l = "_l" + std::to_string(il);
        if (h.is_recurrent(il)) {  // one sequence's convolution inputs and delta-net state, F32
            ggml_tensor * r = ggml_new_tensor_2d(&kc, GGML_TYPE_F32, h.n_embd_r(), 1);
            ggml_tensor * s = h.n_embd_s() > 0 ? ggml_new_tensor_2d(&kc, GGML_TYPE_F32, h.n_embd_s(), 1) : nullptr;
            ggml_set_name(r, ("cache_r" + l).c_str());
            if (s != nullptr) {  // lfm2's layers keep only the convolution's inputs
                ggml_set_name(s, ("cache_s" + l).c_str());
            }
            caches_.k.push_back(nullptr);
            caches_.v.push_back(nullptr);
            caches_.conv.push_back(r);
            caches_.ssm.push_back(s);
            continue;
        }
        ggml_tensor * k = ggml_new_tensor_2d(&kc, GGML_TYPE_F16, h.n_embd_k_gqa(), p.n_ctx);
        ggml_tensor * v = ggml_new_tensor_2d(&kc, GGML_TYPE_F16, h.n_embd_v_gqa(), p.n_ctx);
        ggml_set_name(k, ("cache_k" + l).c_str());
        ggml_set_name(v, ("cache_v" + l).c_str());
        caches_.k.push_back(k);
        caches_.v.push_back(v);
        caches_.conv.push_back(nullptr);
        caches_.ssm.push_back(nullptr);
    }
    for (size_t i = 0; i < bufts.size(); ++i) {
        kv_buf_.push_back(alloc_ctx_tensors(*kv_ctx_[i], bufts[i]));
        kv_buf_.back()->clear(0);
    }
    sched_ = std::make_unique<backend_sched>(p.backends);
}

context::~context() = default;

void context::clear() {
    n_past_ = 0;
    if (!model_.hp().recurrent_layers.empty()) {  // a recurrent state carries the past: start from zeros
        for (auto & b : kv_buf_) {
            b->clear(0);
        }
    }
}

const std::vector<float> & context::decode(std::span<const int32_t> tokens, bool all_logits) {
    return decode_from(tokens, all_logits ? 0 : int64_t(tokens.size()) - 1);
}

const std::vector<float> & context::decode_from(std::span<const int32_t> tokens, int64_t first_output) {
    const hparams & h = model_.hp();
    const int64_t   n = int64_t(tokens.size());
    if (n == 0) {
        throw model_error("decode: no tokens");
    }
    if (first_output < 0 || first_output >= n) {
        throw model_error("decode: the first output must be one of the tokens");
    }
    if (n_past_ + n > params_.n_ctx) {
        throw model_error("context overflow: " + std::to_string(n_past_) + " positions used + " + std::to_string(n) +
                          " new tokens > context size " + std::to_string(params_.n_ctx) +
                          " (raise -c, or use a shorter prompt or fewer tokens to generate)");
    }
    for (int32_t t : tokens) {
        if (t < 0 || t >= h.n_vocab) {
            throw model_error("token id " + std::to_string(t) + " outside the vocabulary [0, " +
                              std::to_string(h.n_vocab) + ")");
        }
    }
    logits_.resize(size_t(n - first_output) * size_t(h.n_vocab));
    for (int64_t i = 0; i < n; i += params_.n_ubatch) {
        const int64_t nb        = std::min(params_.n_ubatch, n - i);
        const int64_t out_first = std::max<int64_t>(first_output - i, 0);  // within this ubatch
        float *       out       = out_first < nb ? logits_.data() + (i + out_first - first_output) * h.n_vocab : nullptr;
        eval_ubatch(tokens.data() + i, nb, out_first, out);
    }
    return logits_;
}

void context::eval_ubatch(const int32_t * tokens, int64_t n, int64_t out_first, float * out) {
    const hparams & h         = model_.hp();
    const int64_t   n_kv      = n_past_ + n;
    const int64_t   first     = out ? out_first : n;
    const int64_t   n_outputs = n - first;  // 0: no output head at all

    ggml_context ctx;
    ggml_cgraph  gf;
    const model::graph_inputs in = model_.build_graph(ctx, gf, n, n_kv, n_outputs, caches_);
    sched_->alloc_graph(gf);
    n_graph_nodes_ = int64_t(gf.nodes.size());
    std::optional<plan_summary> & plan = n == 1 ? decode_plan_ : prompt_plan_;
    if ((params_.plan_out || params_.record_plans) && !plan) {
        plan = summarize_plan(gf, n);
        if (FILE * f = params_.plan_out) {
            std::fprintf(f, "plan (%lld-token graph): %zu nodes, %d splits, %d copies;", (long long) n, plan->n_nodes,
                         plan->n_splits, plan->n_copies);
            for (const auto & [name, count] : plan->per_backend) {
                std::fprintf(f, " %s %d", name.c_str(), count);
            }
            std::fprintf(f, "\n");
            for (const auto & [what, count] : plan->fallbacks) {
                std::fprintf(f, "  fell back to %s: %4d x %s\n", params_.backends.back()->name(), count, what.c_str());
            }
        }
    }

    // IMROPE's positions: t for every token, then h and w (t again for text), then e (0).
    const int64_t        n_pos = in.pos->ne[0];
    std::vector<int32_t> pos(static_cast<size_t>(n_pos), 0);
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t k = 0; k < std::min<int64_t>(n_pos / n, 3); ++k) {
            pos[size_t(k * n + i)] = int32_t(n_past_ + i);
        }
        idx[size_t(i)] = n_past_ + i;
    }
    tensor_set(in.tokens, tokens, 0, size_t(n) * sizeof(int32_t));
    tensor_set(in.pos, pos.data(), 0, pos.size() * sizeof(int32_t));
    tensor_set(in.kv_idx, idx.data(), 0, idx.size() * sizeof(int64_t));
    // Causal mask: query i (position n_past + i) sees cache rows j <= its position; local layers
    // only the last n_swa of them (llama.cpp's standard sliding window: p_q - p_k < n_swa).
    std::vector<uint16_t> mask(size_t(n_kv * n));
    for (int pass = 0; pass < (in.mask_swa ? 2 : 1); ++pass) {
        for (int64_t i = 0; i < n; ++i) {
            const int64_t p = n_past_ + i;
            for (int64_t j = 0; j < n_kv; ++j) {
                const bool visible = j <= p && (pass == 0 || p - j < h.n_swa);
                mask[size_t(i * n_kv + j)] = visible ? kF16Zero : kF16NegInf;
            }
        }
        tensor_set(pass == 0 ? in.mask : in.mask_swa, mask.data(), 0, mask.size() * sizeof(uint16_t));
    }
    if (in.out_ids) {
        std::vector<int32_t> ids;
        for (int64_t i = first; i < n; ++i) {
            ids.push_back(int32_t(i));
        }
        tensor_set(in.out_ids, ids.data(), 0, ids.size() * sizeof(int32_t));
    }
    sched_->graph_compute(gf);
    n_past_ += n;
    if (out) {
        tensor_get(in.logits, out, 0, size_t(n_outputs * h.n_vocab) * sizeof(float));
    }
}

plan_summary context::summarize_plan(const ggml_cgraph & gf, int64_t n_tokens) const {
    plan_summary                     s;
    std::map<std::string, int> &     per_backend = s.per_backend;
    std::map<std::string, int> &     fallbacks   = s.fallbacks;
    const std::vector<backend *> &   bs       = params_.backends;
    backend *                        fallback = bs.back();
    for (const ggml_tensor * node : gf.nodes) {
        backend * b = sched_->backend_of(node);
        if (!b || node->op == GGML_OP_VIEW || node->op == GGML_OP_RESHAPE || node->op == GGML_OP_PERMUTE ||
            node->op == GGML_OP_TRANSPOSE) {
            continue;  // views compute nothing
        }
        per_backend[b->name()]++;
        if (b != fallback || bs.size() < 2) {
            continue;
        }
        std::string sig = std::string(ggml_op_desc(node)) + " (";
        for (int i = 0; i < 3 && node->src[i]; ++i) {
            sig += std::string(i ? " x " : "") + ggml_type_name(node->src[i]->type);
        }
        sig += " -> " + std::string(ggml_type_name(node->type)) + ")";
        std::string why;
        for (size_t i = 0; i + 1 < bs.size(); ++i) {
            backend_device * dev = bs[i]->device();
            std::string reason = "its inputs or output live where it cannot go";
            if (!dev->supports_op(node)) {
                reason = params_.refusal_reason ? params_.refusal_reason(dev, node) : std::string();
                if (reason.empty()) {
                    reason = "op not supported";
                }
            }
            why += std::string(why.empty() ? "" : "; ") + dev->name() + ": " + reason;
        }
        fallbacks[sig + ": " + why]++;
    }
    s.n_tokens = n_tokens;
    s.n_nodes  = gf.nodes.size();
    s.n_splits = sched_->n_splits();
    s.n_copies = sched_->n_copies();
    return s;
}

} // namespace hexnpu::model
