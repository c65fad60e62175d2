// Scalar activation functions with GGML's definitions, shared by UNARY and GLU.
#pragma once

#include <cmath>
#include <numbers>

namespace hexnpu::cpu {

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// x / (1 + e^-x) rounds once less than x * sigmoid(x).
inline float silu(float x) { return x / (1.0f + std::exp(-x)); }

// The tanh approximation GGML calls GELU.
inline float gelu_tanh(float x) {
    constexpr float sqrt_2_over_pi = float(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);
    return 0.5f * x * (1.0f + std::tanh(sqrt_2_over_pi * (x + 0.044715f * x * x * x)));
}

inline float gelu_quick(float x) { return x * sigmoid(1.702f * x); }

inline float gelu_erf(float x) {
    constexpr float inv_sqrt2 = float(1.0 / std::numbers::sqrt2);
    return 0.5f * x * (1.0f + std::erf(x * inv_sqrt2));
}

// Above 20, log(1 + e^x) rounds to x in f32; GGML returns x there (and e^x would overflow later).
inline float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

} // namespace hexnpu::cpu
