// PLACEHOLDER (HEXNPU_TODO_QUANT): replaced by the real implementation.
#include "quants.h"
#include <cstdlib>
namespace hexnpu {
void dequantize_row_q5_0_ref(const void *, float *, int64_t) { std::abort(); }
void dequantize_row_q5_0(const void *, float *, int64_t) { std::abort(); }
void quantize_row_q5_0_ref(const float *, void *, int64_t) { std::abort(); }
void quantize_row_q5_0(const float *, void *, int64_t) { std::abort(); }
void dequantize_row_q5_1_ref(const void *, float *, int64_t) { std::abort(); }
void dequantize_row_q5_1(const void *, float *, int64_t) { std::abort(); }
void quantize_row_q5_1_ref(const float *, void *, int64_t) { std::abort(); }
void quantize_row_q5_1(const float *, void *, int64_t) { std::abort(); }
}
