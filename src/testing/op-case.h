// One case of `hexnpu test-ops`: a small graph around one op, how its inputs are filled, and how
// far a result may be from the reference and still count as correct.
#pragma once

#include "hexnpu/graph.h"

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace hexnpu::optest {

using shape = std::array<int64_t, 4>;

// How an input tensor's values are drawn. Every draw is seeded by the case, so each backend and
// the float64 evaluator see the same bytes.
struct fill_spec {
    enum class kind {
        uniform,           // floats in [lo, hi)
        away_from_zero,    // floats with |x| in [lo, hi) and a random sign (divisors)
        mask,              // attention mask: each entry -inf (1/4), 0 (3/8) or a bias in [lo, hi) (3/8); entry 0
                           // of a row stays finite, except that with n > 0 every n-th row is -inf throughout
        causal_mask,       // row q: entries past n + q are -inf, the others 0 (1/2) or a bias in [lo, hi)
        indices,           // integers in [0, n)
        distinct_indices,  // each row a sample without repetition from [0, n) (rows to set, experts of a token)
        distinct_values,   // each row a shuffle of distinct multiples of 1/4 (sorting without ties)
        small_integers,    // integers in [lo, hi] (sorting with ties)
        lower_triangular,  // square matrices: below the diagonal floats in [lo, hi), above it 0; on it
                           // floats in [lo, hi) too, or 1 with n = 1 (unit lower triangular)
    };
    kind    k  = kind::uniform;
    double  lo = -1.0;
    double  hi = 1.0;
    int64_t n  = 0;
};

inline fill_spec uniform(double lo, double hi) { return {fill_spec::kind::uniform, lo, hi, 0}; }
inline fill_spec away_from_zero(double lo, double hi) { return {fill_spec::kind::away_from_zero, lo, hi, 0}; }
inline fill_spec mask_fill(int64_t masked_row_every = 0) { return {fill_spec::kind::mask, -1.0, 1.0, masked_row_every}; }
// A prompt's mask after n cached positions: query q sees keys 0 .. n + q.
inline fill_spec causal_mask_fill(int64_t n) { return {fill_spec::kind::causal_mask, -1.0, 1.0, n}; }
inline fill_spec indices(int64_t n) { return {fill_spec::kind::indices, 0, 0, n}; }
inline fill_spec distinct_indices(int64_t n) { return {fill_spec::kind::distinct_indices, 0, 0, n}; }
// As distinct_indices, index 0 first in every row: one expert routed every token, the others few.
inline fill_spec distinct_indices_hot_first(int64_t n) { return {fill_spec::kind::distinct_indices, 1, 0, n}; }
inline fill_spec distinct_values() { return {fill_spec::kind::distinct_values, 0, 0, 0}; }
inline fill_spec small_integers(int lo, int hi) { return {fill_spec::kind::small_integers, double(lo), double(hi), 0}; }
inline fill_spec lower_triangular(double lo, double hi) { return {fill_spec::kind::lower_triangular, lo, hi, 0}; }
inline fill_spec unit_lower_triangular(double lo, double hi) { return {fill_spec::kind::lower_triangular, lo, hi, 1}; }

// Largest accepted normalized mean squared error, sum((a - b)^2) / sum(b^2).
struct tolerance {
    double vs_f64;  // the CPU backend against the float64 evaluation
    double vs_cpu;  // another backend against the CPU backend
    double vs_cpu_tiled = 0;  // ... with src0 in the backend's extra (tiled) buffer type; 0: vs_cpu
};

// Copies, row gathers/scatters, layout ops and element-wise ops made of one or two correctly rounded
// fp32 operations: every element is within 2^-23 relative, so NMSE <= (2^-23)^2 ~ 1.4e-14 against
// float64. Another backend is held to test-backend-ops' default for such ops.
inline constexpr tolerance kExactTol{1e-13, 1e-7};
// Transcendental element-wise functions: libm or SIMD approximations are good to a few ulp and
// composite formulas (silu, gelu) lose a few more; 1e-12 allows 16 ulp rms and still rejects a
// constant off by 3e-4 (GELU's 0.044715 written 0.0447 costs 8e-12). NPU HVX approximations of
// exp/tanh are good to ~1e-4 relative.
inline constexpr tolerance kMathTol{1e-12, 1e-6};
// Row reductions and anything that sums or accumulates in fp32 (norms, softmax, cumsum, dot
// products, attention): a sum of n terms errs by ~sqrt(n) ulp rms, NMSE ~1.5e-11 for the longest
// rows here (4096); rope angles formed in fp32 at positions below 128 err by ~1e-5 rad, NMSE ~1e-11.
inline constexpr tolerance kSumTol{1e-10, 1e-6};
// Indices (ARGMAX): every element exactly.
inline constexpr tolerance kIndexTol{0.0, 0.0};

// A result stored as F16 or BF16 may land on the other side of a rounding boundary from the
// reference wherever it was computed in fp32 first: up to one ulp of the result type per element,
// NMSE (2^-10)^2 ~ 1e-6 for F16 and (2^-7)^2 ~ 6e-5 for BF16. Copies never need this: both sides
// round the same fp32 value.
tolerance for_result_type(tolerance tol, ggml_type type);

// A case's graph under construction: the context plus the fill of every input tensor.
class case_graph {
  public:
    explicit case_graph(ggml_context & ctx) : ctx_(ctx) {}

    ggml_context * ctx() { return &ctx_; }

    // A new input tensor (a graph leaf) filled as `fill` says.
    ggml_tensor * input(ggml_type type, shape ne, fill_spec fill = uniform(-1.0, 1.0));
    // An input whose rows are `row_pad` elements apart beyond ne[0]: a non-contiguous view.
    ggml_tensor * strided_input(ggml_type type, shape ne, int64_t row_pad, fill_spec fill = uniform(-1.0, 1.0));
    // An input laid out in memory in another dimension order, viewed back to shape ne through
    // ggml_permute(axes): a permuted view.
    ggml_tensor * permuted_input(ggml_type type, shape ne, std::array<int, 4> axes,
                                 fill_spec fill = uniform(-1.0, 1.0));

    const std::vector<std::pair<ggml_tensor *, fill_spec>> & inputs() const { return inputs_; }

  private:
    ggml_context &                                   ctx_;
    std::vector<std::pair<ggml_tensor *, fill_spec>> inputs_;
};

struct op_case {
    std::string                                params;  // "type=q4_0,m=16,n=1,k=256": what tells cases apart
    tolerance                                  tol;
    std::function<ggml_tensor *(case_graph &)> build;   // returns the tensor whose values are compared (the
                                                        // op's result or a view of part of it)
};

// Parameter-string helpers: "[10,5,4,3]", "f32", "0.125".
std::string shape_str(const shape & ne);
std::string type_str(ggml_type type);
std::string num_str(double v);

// The catalog, one family per op-cases-*.cpp file.
void add_binary_cases(std::vector<op_case> & cases);
void add_unary_cases(std::vector<op_case> & cases);
void add_glu_cases(std::vector<op_case> & cases);
void add_reduce_cases(std::vector<op_case> & cases);
void add_sort_cases(std::vector<op_case> & cases);
void add_layout_cases(std::vector<op_case> & cases);
void add_im2col_cases(std::vector<op_case> & cases);
void add_copy_cases(std::vector<op_case> & cases);
void add_rows_cases(std::vector<op_case> & cases);
void add_norm_cases(std::vector<op_case> & cases);
void add_matmul_cases(std::vector<op_case> & cases);
void add_softmax_cases(std::vector<op_case> & cases);
void add_rope_cases(std::vector<op_case> & cases);
void add_flash_attn_cases(std::vector<op_case> & cases);
void add_linear_attn_cases(std::vector<op_case> & cases);  // TRI, DIAG, SOLVE_TRI, SSM_CONV, GATED_DELTA_NET

// Every case of every family, in a fixed order.
const std::vector<op_case> & op_case_catalog();

// The benchmark cases of `hexnpu bench-ops` (op-perf-cases.cpp): model-sized shapes (MUL_MAT with a
// 4096 x 4096 weight of every type, 1..8 activation rows; a transformer layer's other ops at llama
// and Gemma 3 sizes); with `large`, weights beyond a server's last-level cache.
std::vector<op_case> op_perf_catalog(bool large);
void                 add_matmul_perf_cases(std::vector<op_case> & cases, bool large);

} // namespace hexnpu::optest
