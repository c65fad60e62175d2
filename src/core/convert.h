// Row-wise conversion of tensor data between GGML types through fp32 (dequantize, then quantize).
#pragma once

#include "hexnpu/ggml-types.h"

#include <cstdint>

namespace hexnpu {

// True when data of type `from` can be converted to type `to` (both have a float path).
bool can_convert(ggml_type from, ggml_type to);

// Converts nrows rows of ne0 elements; ne0 must be a multiple of both block sizes. Same type: memcpy.
// Quantizes as model files are (GGML's ggml_quantize_chunk: IQ4_NL with its scale search).
void convert_rows(ggml_type from, const void * src, ggml_type to, void * dst, int64_t nrows, int64_t ne0,
                  int n_threads);

} // namespace hexnpu
