// Token sampling as llama.cpp's default chain: repetition penalty over the last tokens, then
// greedy (temp <= 0) or top-k -> top-p -> min-p -> temperature -> a draw from a seeded RNG.
// The same seed and settings on the same logits give the same tokens.
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <span>

namespace hexnpu::model {

struct sampler_params {
    float    temp           = 0.8f;  // <= 0: greedy
    int      top_k          = 40;    // <= 0: all
    float    top_p          = 0.95f; // 1: off
    float    min_p          = 0.05f; // 0: off
    float    repeat_penalty = 1.0f;  // 1: off
    int      repeat_last_n  = 64;
    uint64_t seed           = 0xFFFFFFFF;
};

class sampler {
  public:
    explicit sampler(const sampler_params & p);
    int32_t sample(std::span<const float> logits);
    void    accept(int32_t token);  // remember for the repetition penalty

  private:
    sampler_params      p_;
    std::mt19937_64     rng_;
    std::deque<int32_t> last_;
};

// Index of the largest logit (the first one on ties).
int32_t argmax(std::span<const float> logits);

} // namespace hexnpu::model
