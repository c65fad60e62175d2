// Reference quantize/dequantize per GGML type (formats.md §1.3). `n` counts elements and is a
// multiple of the block size. `*_ref` are plain scalar code; the unsuffixed versions are the fast
// paths and must produce the same bits. dot_row_T(src, y, n) is dot_f32(dequantized src, y, n) bit
// for bit (dot-f32.h), without the dequantized row.
#pragma once

#include <cstdint>

namespace hexnpu {

#define HEXNPU_DECLARE_QUANT(T)                                          \
    void dequantize_row_##T##_ref(const void * src, float * dst, int64_t n); \
    void dequantize_row_##T(const void * src, float * dst, int64_t n);       \
    void quantize_row_##T##_ref(const float * src, void * dst, int64_t n);   \
    void quantize_row_##T(const float * src, void * dst, int64_t n);        \
    float dot_row_##T(const void * src, const float * y, int64_t n);

HEXNPU_DECLARE_QUANT(f32)
HEXNPU_DECLARE_QUANT(f16)
HEXNPU_DECLARE_QUANT(bf16)
HEXNPU_DECLARE_QUANT(q4_0)
HEXNPU_DECLARE_QUANT(q4_1)
HEXNPU_DECLARE_QUANT(q5_0)
HEXNPU_DECLARE_QUANT(q5_1)
HEXNPU_DECLARE_QUANT(q8_0)
HEXNPU_DECLARE_QUANT(iq4_nl)
// IQ4_NL as model files hold it (llama-quantize, gguf-py): GGML's 7-try scale search. The
// quantize_row_iq4_nl* above are GGML's from_float (no search), what KV-cache writes use.
void quantize_row_iq4_nl_search(const float * src, void * dst, int64_t n);
HEXNPU_DECLARE_QUANT(mxfp4)
HEXNPU_DECLARE_QUANT(q1_0)
HEXNPU_DECLARE_QUANT(q2_0)
HEXNPU_DECLARE_QUANT(q2_K)
HEXNPU_DECLARE_QUANT(q3_K)
HEXNPU_DECLARE_QUANT(q4_K)
HEXNPU_DECLARE_QUANT(q5_K)
HEXNPU_DECLARE_QUANT(q6_K)

#undef HEXNPU_DECLARE_QUANT

} // namespace hexnpu
