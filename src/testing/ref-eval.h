// The float64 oracle of `hexnpu test-ops`: evaluates a graph node by node in double precision,
// straight from GGML's definition of each op. It shares no code with the CPU backend; inputs are
// read through the type table's reference to_float, so quantized weights enter as their exact
// dequantized values and only the op's own arithmetic is in question.
//
// Results are kept in double, except where the result type itself rounds (F16, BF16, block types):
// there the stored value is what GGML stores, so a backend that rounds correctly matches exactly.
#pragma once

#include "hexnpu/graph.h"

#include <span>
#include <unordered_map>
#include <vector>

namespace hexnpu::optest {

class ref_evaluator {
  public:
    // Sets a leaf's contents from its bytes (the bytes every backend receives).
    void load(const ggml_tensor * leaf, const void * bytes);

    // Evaluates every node in order; throws std::invalid_argument for an op or type it does not know.
    void compute(const ggml_cgraph & graph);

    // t's values in logical order (i0 fastest).
    std::vector<double> values(const ggml_tensor * t) const;

    // Element access for the op implementations, through t's view offset and strides.
    double get(const ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) const;
    // One row (i1, i2, i3) of t, as ne[0] values.
    std::vector<double> row(const ggml_tensor * t, int64_t i1, int64_t i2, int64_t i3) const;
    // Stores one element, rounded as t's type stores it; not for block types (use set_row).
    void set(const ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, double v);
    // Stores row (i1, i2, i3) of t; block types quantize it with the reference quantizer.
    void set_row(const ggml_tensor * t, int64_t i1, int64_t i2, int64_t i3, std::span<const double> values);
    // Stores a row of values that already are values of t's type (a same-type copy) unchanged.
    void copy_row(const ggml_tensor * t, int64_t i1, int64_t i2, int64_t i3, std::span<const double> values);

  private:
    const std::vector<double> & slots_of(const ggml_tensor * t) const;
    std::vector<double> &       slots_of(const ggml_tensor * t);

    std::unordered_map<const ggml_tensor *, std::vector<double>> slots_;  // keyed by base tensor
};

} // namespace hexnpu::optest
