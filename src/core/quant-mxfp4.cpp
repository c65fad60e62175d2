// PLACEHOLDER (HEXNPU_TODO_QUANT): replaced by the real implementation.
#include "quants.h"
#include <cstdlib>
namespace hexnpu {
void dequantize_row_mxfp4_ref(const void *, float *, int64_t) { std::abort(); }
void dequantize_row_mxfp4(const void *, float *, int64_t) { std::abort(); }
void quantize_row_mxfp4_ref(const float *, void *, int64_t) { std::abort(); }
void quantize_row_mxfp4(const float *, void *, int64_t) { std::abort(); }
}
