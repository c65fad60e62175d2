// Q4_0 and Q4_1: 32 elements, 4-bit codes, byte j holding elements j and j + 16 (formats.md §1.3).
#include "dot-f32.h"
#include "fp16.h"
#include "quant-avx2.h"
#include "quant-blocks.h"
#include "quant-common.h"
#include "quants.h"

#include <algorithm>

namespace hexnpu {

void dequantize_row_q4_0_ref(const void * src, float * dst, int64_t n) {
    const auto * blocks = static_cast<const block_q4_0 *>(src);
    for (int64_t b = 0; b < n / QK4_0; ++b, dst += QK4_0) {
        const float d = fp16_to_fp32(blocks[b].d);
        for (int j = 0; j < QK4_0 / 2; ++j) {
            dst[j]             = ((blocks[b].qs[j] & 15) - 8) * d;
            dst[j + QK4_0 / 2] = ((blocks[b].qs[j] >> 4) - 8) * d;
        }
    }
}

void quantize_row_q4_0_ref(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q4_0 *>(dst);
    for (int64_t b = 0; b < n / QK4_0; ++b, src += QK4_0) {
        const float d  = first_max_abs(src, QK4_0) / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        blocks[b].d    = fp32_to_fp16(d);
        for (int j = 0; j < QK4_0 / 2; ++j) {
            const int q0     = std::min(15, int(int8_t(truncate_to_int32(src[j] * id + 8.5f))));
            const int q1     = std::min(15, int(int8_t(truncate_to_int32(src[j + QK4_0 / 2] * id + 8.5f))));
            blocks[b].qs[j] = uint8_t(q0 | q1 << 4);
        }
    }
}

void dequantize_row_q4_1_ref(const void * src, float * dst, int64_t n) {
    const auto * blocks = static_cast<const block_q4_1 *>(src);
    for (int64_t b = 0; b < n / QK4_1; ++b, dst += QK4_1) {
        const float d = fp16_to_fp32(blocks[b].d);
        const float m = fp16_to_fp32(blocks[b].m);
        for (int j = 0; j < QK4_1 / 2; ++j) {
            dst[j]             = (blocks[b].qs[j] & 15) * d + m;
            dst[j + QK4_1 / 2] = (blocks[b].qs[j] >> 4) * d + m;
        }
    }
}

void quantize_row_q4_1_ref(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q4_1 *>(dst);
    for (int64_t b = 0; b < n / QK4_1; ++b, src += QK4_1) {
        const MinMax range = min_max(src, QK4_1);
        const float  d     = (range.max - range.min) / 15;
        const float  id    = d != 0.0f ? 1.0f / d : 0.0f;
        blocks[b].d        = fp32_to_fp16(d);
        blocks[b].m        = fp32_to_fp16(range.min);
        for (int j = 0; j < QK4_1 / 2; ++j) {
            const int q0 = std::min(15, int(int8_t(truncate_to_int32((src[j] - range.min) * id + 0.5f))));
            const int q1 = std::min(15, int(int8_t(truncate_to_int32((src[j + QK4_1 / 2] - range.min) * id + 0.5f))));
            blocks[b].qs[j] = uint8_t(q0 | q1 << 4);
        }
    }
}

#if defined(__AVX2__)
namespace {

template <class Sink> void decode_q4_0(const void * src, int64_t n, Sink sink) {
    const auto * blocks = static_cast<const block_q4_0 *>(src);
    for (int64_t b = 0; b < n / QK4_0; ++b) {
        sink(b * QK4_0, avx2::scaled(avx2::minus(avx2::unpack_nibbles_i32(blocks[b].qs), 8), fp16_to_fp32(blocks[b].d)));
    }
}

template <class Sink> void decode_q4_1(const void * src, int64_t n, Sink sink) {
    const auto * blocks = static_cast<const block_q4_1 *>(src);
    for (int64_t b = 0; b < n / QK4_1; ++b) {
        sink(b * QK4_1,
             avx2::affine(avx2::unpack_nibbles_i32(blocks[b].qs), fp16_to_fp32(blocks[b].d), fp16_to_fp32(blocks[b].m)));
    }
}

} // namespace

HEXNPU_DECODED_ROW_FNS(q4_0)
HEXNPU_DECODED_ROW_FNS(q4_1)

void quantize_row_q4_0(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q4_0 *>(dst);
    for (int64_t b = 0; b < n / QK4_0; ++b, src += QK4_0) {
        avx2::BlockCodes block;
        if (!avx2::quantize_symmetric<8>(src, block)) {
            quantize_row_q4_0_ref(src, &blocks[b], QK4_0);
            continue;
        }
        blocks[b].d = fp32_to_fp16(block.d);
        avx2::pack_nibbles(block.codes, blocks[b].qs);
    }
}

void quantize_row_q4_1(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q4_1 *>(dst);
    for (int64_t b = 0; b < n / QK4_1; ++b, src += QK4_1) {
        avx2::BlockCodes block;
        if (!avx2::quantize_affine<15>(src, block)) {
            quantize_row_q4_1_ref(src, &blocks[b], QK4_1);
            continue;
        }
        blocks[b].d = fp32_to_fp16(block.d);
        blocks[b].m = fp32_to_fp16(block.min);
        avx2::pack_nibbles(block.codes, blocks[b].qs);
    }
}

#else

void dequantize_row_q4_0(const void * src, float * dst, int64_t n) { dequantize_row_q4_0_ref(src, dst, n); }
void quantize_row_q4_0(const float * src, void * dst, int64_t n) { quantize_row_q4_0_ref(src, dst, n); }
void dequantize_row_q4_1(const void * src, float * dst, int64_t n) { dequantize_row_q4_1_ref(src, dst, n); }
void quantize_row_q4_1(const float * src, void * dst, int64_t n) { quantize_row_q4_1_ref(src, dst, n); }
HEXNPU_DOT_VIA_DEQUANTIZE(q4_0, QK4_0, sizeof(block_q4_0))
HEXNPU_DOT_VIA_DEQUANTIZE(q4_1, QK4_1, sizeof(block_q4_1))

#endif

} // namespace hexnpu
