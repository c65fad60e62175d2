// F32, F16 and BF16 as "quant" types, so every type converts through the same traits.
#include "dot-f32.h"
#include "fp16.h"
#include "quants.h"

#include <cstring>

namespace hexnpu {

void dequantize_row_f32_ref(const void * src, float * dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }
void dequantize_row_f32(const void * src, float * dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }
void quantize_row_f32_ref(const float * src, void * dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }
void quantize_row_f32(const float * src, void * dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }

void dequantize_row_f16_ref(const void * src, float * dst, int64_t n) {
    const auto * h = static_cast<const uint16_t *>(src);
    for (int64_t i = 0; i < n; ++i) {
        dst[i] = fp16_to_fp32(h[i]);
    }
}
void dequantize_row_f16(const void * src, float * dst, int64_t n) {
    fp16_to_fp32_row(static_cast<const uint16_t *>(src), dst, n);
}
void quantize_row_f16_ref(const float * src, void * dst, int64_t n) {
    auto * h = static_cast<uint16_t *>(dst);
    for (int64_t i = 0; i < n; ++i) {
        h[i] = fp32_to_fp16(src[i]);
    }
}
void quantize_row_f16(const float * src, void * dst, int64_t n) {
    fp32_to_fp16_row(src, static_cast<uint16_t *>(dst), n);
}

void dequantize_row_bf16_ref(const void * src, float * dst, int64_t n) {
    const auto * h = static_cast<const uint16_t *>(src);
    for (int64_t i = 0; i < n; ++i) {
        dst[i] = bf16_to_fp32(h[i]);
    }
}
void dequantize_row_bf16(const void * src, float * dst, int64_t n) {
    bf16_to_fp32_row(static_cast<const uint16_t *>(src), dst, n);
}
void quantize_row_bf16_ref(const float * src, void * dst, int64_t n) {
    auto * h = static_cast<uint16_t *>(dst);
    for (int64_t i = 0; i < n; ++i) {
        h[i] = fp32_to_bf16(src[i]);
    }
}
void quantize_row_bf16(const float * src, void * dst, int64_t n) {
    fp32_to_bf16_row(src, static_cast<uint16_t *>(dst), n);
}

float dot_row_f32(const void * src, const float * y, int64_t n) { return dot_f32(static_cast<const float *>(src), y, n); }
HEXNPU_DOT_VIA_DEQUANTIZE(f16, 1, 2)
HEXNPU_DOT_VIA_DEQUANTIZE(bf16, 1, 2)

} // namespace hexnpu
