// The float64 evaluator's op families (ref-eval-*.cpp) and the scalar functions they share.
#pragma once

#include "ref-eval.h"

#include <cmath>
#include <cstdint>

namespace hexnpu::optest {

void eval_copy(ref_evaluator & ev, const ggml_tensor * node);     // DUP, CONT, CPY
void eval_binary(ref_evaluator & ev, const ggml_tensor * node);   // ADD, SUB, MUL, DIV, ADD_ID
void eval_unary(ref_evaluator & ev, const ggml_tensor * node);    // SQR ... COS, SCALE, CLAMP, LEAKY_RELU, FILL, UNARY
void eval_glu(ref_evaluator & ev, const ggml_tensor * node);      // GLU
void eval_reduce(ref_evaluator & ev, const ggml_tensor * node);   // SUM, ARGMAX, SUM_ROWS, MEAN, CUMSUM
void eval_sort(ref_evaluator & ev, const ggml_tensor * node);     // ARGSORT, TOP_K
void eval_im2col(ref_evaluator & ev, const ggml_tensor * node);   // IM2COL (ref-eval-layout.cpp)
void eval_layout(ref_evaluator & ev, const ggml_tensor * node);   // CONCAT, REPEAT, PAD, ROLL
void eval_rows(ref_evaluator & ev, const ggml_tensor * node);     // GET_ROWS, SET_ROWS
void eval_norm(ref_evaluator & ev, const ggml_tensor * node);     // NORM, RMS_NORM, L2_NORM
void eval_matmul(ref_evaluator & ev, const ggml_tensor * node);   // MUL_MAT, MUL_MAT_ID
void eval_softmax(ref_evaluator & ev, const ggml_tensor * node);  // SOFT_MAX
void eval_rope(ref_evaluator & ev, const ggml_tensor * node);     // ROPE
void eval_flash_attn(ref_evaluator & ev, const ggml_tensor * node);  // FLASH_ATTN_EXT
// ref-eval-linear-attn.cpp
void eval_tri(ref_evaluator & ev, const ggml_tensor * node);              // TRI
void eval_diag(ref_evaluator & ev, const ggml_tensor * node);             // DIAG
void eval_solve_tri(ref_evaluator & ev, const ggml_tensor * node);        // SOLVE_TRI
void eval_ssm_conv(ref_evaluator & ev, const ggml_tensor * node);         // SSM_CONV
void eval_gated_delta_net(ref_evaluator & ev, const ggml_tensor * node);  // GATED_DELTA_NET

// fn(i0, i1, i2, i3) for every element of t, i0 fastest.
template <typename Fn> void for_each_element(const ggml_tensor * t, Fn && fn) {
    for (int64_t i3 = 0; i3 < t->ne[3]; ++i3) {
        for (int64_t i2 = 0; i2 < t->ne[2]; ++i2) {
            for (int64_t i1 = 0; i1 < t->ne[1]; ++i1) {
                for (int64_t i0 = 0; i0 < t->ne[0]; ++i0) {
                    fn(i0, i1, i2, i3);
                }
            }
        }
    }
}

// fn(i1, i2, i3) for every row of t.
template <typename Fn> void for_each_row(const ggml_tensor * t, Fn && fn) {
    for (int64_t i3 = 0; i3 < t->ne[3]; ++i3) {
        for (int64_t i2 = 0; i2 < t->ne[2]; ++i2) {
            for (int64_t i1 = 0; i1 < t->ne[1]; ++i1) {
                fn(i1, i2, i3);
            }
        }
    }
}

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline double silu(double x) { return x * sigmoid(x); }
// GGML's GELU is the tanh approximation; GELU_ERF is the exact one.
inline double gelu_tanh(double x) {
    const double sqrt_2_over_pi = 0.79788456080286535588;
    return 0.5 * x * (1.0 + std::tanh(sqrt_2_over_pi * x * (1.0 + 0.044715 * x * x)));
}
inline double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

// ALiBi: head h of n_head gets slope m0^(h+1) for the first power-of-two heads, then odd powers of
// m1; with max_bias 0 there is no bias and the mask is added as is.
inline double alibi_slope(double max_bias, int64_t head, int64_t n_head) {
    if (max_bias <= 0.0) {
        return 1.0;
    }
    const int64_t n_head_log2 = int64_t(1) << int64_t(std::floor(std::log2(double(n_head))));
    const double  m0          = std::exp2(-max_bias / double(n_head_log2));
    const double  m1          = std::exp2(-max_bias / 2.0 / double(n_head_log2));
    return head < n_head_log2 ? std::pow(m0, double(head + 1)) : std::pow(m1, double(2 * (head - n_head_log2) + 1));
}

} // namespace hexnpu::optest
