// Tensor bytes <-> values in double, as the harness and the float64 evaluator see them.
//
// A base tensor's memory is modelled as "slots": one double per element of its storage in storage
// order (for block types, the dequantized elements of block b occupy slots b*blck .. b*blck+blck-1).
// Any tensor, view or not, finds element (i0, i1, i2, i3) in its base's slots through its own
// view offset and strides, exactly as GGML addresses the bytes.
#pragma once

#include "op-case.h"

#include "hexnpu/tensor.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace hexnpu::optest {

// Whether values of this type can be decoded (float types, block types with to_float, I32, I64).
bool has_values(ggml_type type);

// The slots of `nbytes` bytes of storage of this type (floats via the reference to_float).
std::vector<double> decode_slots(ggml_type type, const void * data, size_t nbytes);

// Number of slots of a base tensor's storage.
size_t slot_count(const ggml_tensor * base);

// Slot of element (i0, i1, i2, i3) of t in its base tensor's slots.
size_t element_slot(const ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3);

// t's values in logical order (i0 fastest), read from its base tensor's slots.
std::vector<double> gather_values(const ggml_tensor * t, std::span<const double> base_slots);

// The bytes of a new contiguous input tensor filled as `fill` says, from a seed.
std::vector<uint8_t> make_input_bytes(const ggml_tensor * t, const fill_spec & fill, uint64_t seed);

// A seed for a case's inputs, from its name and the input's position (FNV-1a).
uint64_t input_seed(const std::string & case_name, size_t input_index);

} // namespace hexnpu::optest
