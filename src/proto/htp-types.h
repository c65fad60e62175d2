// The GGML type ids the NPU side reads in htp_tensor::type and in kernel_params (GGML's own
// numbers: the host passes ggml_type through unchanged; src/hexagon checks they agree).
#pragma once

#include <stdint.h>

namespace hexnpu::proto {

enum htp_type : uint32_t {
    HTP_TYPE_F32    = 0,
    HTP_TYPE_F16    = 1,
    HTP_TYPE_Q4_0   = 2,
    HTP_TYPE_Q4_1   = 3,
    HTP_TYPE_Q5_0   = 6,
    HTP_TYPE_Q5_1   = 7,
    HTP_TYPE_Q8_0   = 8,
    HTP_TYPE_Q2_K   = 10,
    HTP_TYPE_Q3_K   = 11,
    HTP_TYPE_Q4_K   = 12,
    HTP_TYPE_Q5_K   = 13,
    HTP_TYPE_Q6_K   = 14,
    HTP_TYPE_IQ4_NL = 20,
    HTP_TYPE_I32    = 26,
    HTP_TYPE_I64    = 27,
    HTP_TYPE_BF16   = 30,
    HTP_TYPE_MXFP4  = 39,
    HTP_TYPE_Q1_0   = 41,
    HTP_TYPE_Q2_0   = 42,
};

// The block types SET_ROWS writes and flash attention reads from KV caches, as GGML lays out a
// 32-element block: its bytes, its fp16 scale d at 0, its codes (qs: `codes` bytes, 32 int8 or 16
// bytes of nibble pairs) at codes_at, its fp16 minimum m at min_at and its fifth bits qh (a word)
// at qh_at (0: the type has none). All zero for the other types.
struct htp_qblock_layout {
    uint32_t bytes, codes, codes_at, min_at, qh_at;
};
constexpr htp_qblock_layout htp_qblock_layout_of(uint32_t type) {
    switch (type) {
        case HTP_TYPE_Q8_0: return {34, 32, 2, 0, 0};
        case HTP_TYPE_Q4_0: return {18, 16, 2, 0, 0};
        case HTP_TYPE_Q4_1: return {20, 16, 4, 2, 0};
        case HTP_TYPE_Q5_0: return {22, 16, 6, 0, 2};
        case HTP_TYPE_Q5_1: return {24, 16, 8, 2, 4};
        case HTP_TYPE_IQ4_NL: return {18, 16, 2, 0, 0};
        default: return {};
    }
}

// Bytes of one 32-element block of the KV-cache types flash attention dequantizes in VTCM
// (llama.cpp's -ctk/-ctv beyond F16 and F32: the block types above, BF16 as blocks of 32
// halfwords); 0 for the others.
constexpr uint32_t htp_kv_block_bytes(uint32_t type) {
    return type == HTP_TYPE_BF16 ? 64 : htp_qblock_layout_of(type).bytes;
}

} // namespace hexnpu::proto
