// PLACEHOLDER (HEXNPU_TODO_QUANT): replaced by the real implementation.
#include "quants.h"
#include <cstdlib>
namespace hexnpu {
void dequantize_row_q2_K_ref(const void *, float *, int64_t) { std::abort(); }
void dequantize_row_q2_K(const void *, float *, int64_t) { std::abort(); }
void quantize_row_q2_K_ref(const float *, void *, int64_t) { std::abort(); }
void quantize_row_q2_K(const float *, void *, int64_t) { std::abort(); }
}
