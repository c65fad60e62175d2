// PLACEHOLDER (HEXNPU_TODO_QUANT): replaced by the real implementation.
#include "quants.h"
#include <cstdlib>
namespace hexnpu {
void dequantize_row_iq4_nl_ref(const void *, float *, int64_t) { std::abort(); }
void dequantize_row_iq4_nl(const void *, float *, int64_t) { std::abort(); }
void quantize_row_iq4_nl_ref(const float *, void *, int64_t) { std::abort(); }
void quantize_row_iq4_nl(const float *, void *, int64_t) { std::abort(); }
}
