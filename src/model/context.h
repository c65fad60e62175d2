// An inference context over a model: the F16 KV cache (one K and one V matrix per attention layer, a
// row per position; a recurrent layer's convolution and delta-net states instead), the scheduler that runs the forward graphs on the given backends, and decode(): a
// prompt in micro-batches, or one token at a time.
#pragma once

#include "model/model.h"

#include "hexnpu/sched.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <memory>
#include <span>
#include <vector>

namespace hexnpu::model {

struct context_params {
    int64_t n_ctx    = 4096;  // positions the cache holds
    int64_t n_ubatch = 512;   // tokens per forward graph
    // Priority order, CPU last (the scheduler's fallback). Not owned.
    std::vector<backend *> backends;
    // Where the KV cache lives (host-visible); nullptr: the last backend's device default.
    backend_buffer_type * kv_buft = nullptr;
    // Per layer, where its K and V cache live (a layer split puts them on the layer's device);
    // empty: all in kv_buft.
    std::vector<backend_buffer_type *> kv_layer_bufts;
    // When set: the plan summary of the first prompt graph and of the first single-token graph
    // (nodes per backend, splits, copies, and each op that fell back to the last backend and why).
    FILE * plan_out = nullptr;
    // Keep those summaries (context::prompt_plan / decode_plan) even without plan_out.
    bool record_plans = false;
    // Why a device refuses a node, in the device's words ("" when it does not say); optional.
    std::function<std::string(const backend_device *, const ggml_tensor *)> refusal_reason;
};

// How the scheduler placed one forward graph.
struct plan_summary {
    int64_t                    n_tokens = 0;
    size_t                     n_nodes  = 0;
    int                        n_splits = 0, n_copies = 0;
    std::map<std::string, int> per_backend;  // backend name -> nodes that compute (views skipped)
    std::map<std::string, int> fallbacks;    // "OP (types -> type): device: reason" -> nodes on the last backend
};

class context {
  public:
    context(const model & m, const context_params & p);
    ~context();

    // Appends tokens at positions n_past() ..; returns the logits of every token (all_logits) or of
    // the last one, n_vocab floats per token. Throws model_error when the tokens do not fit the
    // context (nothing is evaluated then) or a token id is outside the vocabulary.
    const std::vector<float> & decode(std::span<const int32_t> tokens, bool all_logits = false);
    // The same with the logits of tokens [first_output, n) only (n_vocab floats each), e.g. the
    // scored half of a perplexity chunk: the output head runs only for those.
    const std::vector<float> & decode_from(std::span<const int32_t> tokens, int64_t first_output);

    int64_t n_past() const { return n_past_; }
    int64_t n_ctx() const { return params_.n_ctx; }
    // Forgets every position (and zeroes a recurrent state).
    void    clear();
    const model & get_model() const { return model_; }

    int64_t n_graph_nodes() const { return n_graph_nodes_; }
    // The first prompt graph's and the first single-token graph's plans (plan_out or record_plans).
    const std::optional<plan_summary> & prompt_plan() const { return prompt_plan_; }
    const std::optional<plan_summary> & decode_plan() const { return decode_plan_; }

  private:
    // Outputs the logits of the ubatch's tokens [out_first, n) into out (none when out_first >= n).
    void eval_ubatch(const int32_t * tokens, int64_t n, int64_t out_first, float * out);
    plan_summary summarize_plan(const ggml_cgraph & gf, int64_t n_tokens) const;

    const model &                   model_;
    context_params                  params_;
    std::vector<std::unique_ptr<ggml_context>>   kv_ctx_;  // one per buffer type
    std::vector<std::unique_ptr<backend_buffer>> kv_buf_;
    layer_caches                    caches_;
    std::unique_ptr<backend_sched>  sched_;
    std::vector<float>              logits_;
    int64_t                         n_past_        = 0;
    int64_t                         n_graph_nodes_ = 0;
    std::optional<plan_summary>     prompt_plan_, decode_plan_;
};

} // namespace hexnpu::model
