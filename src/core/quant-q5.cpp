// Q5_0 and Q5_1: 32 elements, 5-bit codes. The low 4 bits are stored as Q4_0's nibbles; bit 4 of
// element e is bit e of the little-endian 32-bit qh (formats.md §1.3).
#include "dot-f32.h"
#include "fp16.h"
#include "quant-avx2.h"
#include "quant-blocks.h"
#include "quant-common.h"
#include "quants.h"

#include <algorithm>
#include <cstring>

namespace hexnpu {
namespace {

uint32_t load_qh(const uint8_t * qh) {
    uint32_t bits;
    std::memcpy(&bits, qh, sizeof(bits));
    return bits;
}

// The 5-bit code of element e: low 4 bits from the low nibble of qs[e] (e < 16) or the high nibble
// of qs[e - 16], bit 4 from bit e of qh.
int code5(const uint8_t * qs, uint32_t qh, int e) {
    const int low4 = e < 16 ? qs[e] & 15 : qs[e - 16] >> 4;
    return low4 | int((qh >> e) & 1) << 4;
}

// Stores 32 five-bit codes, given in element order.
void store_codes5(const int * q, uint8_t * qs, uint8_t * qh) {
    uint32_t high_bits = 0;
    for (int j = 0; j < 16; ++j) {
        qs[j] = uint8_t((q[j] & 15) | (q[j + 16] & 15) << 4);
        high_bits |= uint32_t((q[j] >> 4) & 1) << j;
        high_bits |= uint32_t((q[j + 16] >> 4) & 1) << (j + 16);
    }
    std::memcpy(qh, &high_bits, sizeof(high_bits));
}

} // namespace

void dequantize_row_q5_0_ref(const void * src, float * dst, int64_t n) {
    const auto * blocks = static_cast<const block_q5_0 *>(src);
    for (int64_t b = 0; b < n / QK5_0; ++b, dst += QK5_0) {
        const float    d  = fp16_to_fp32(blocks[b].d);
        const uint32_t qh = load_qh(blocks[b].qh);
        for (int e = 0; e < QK5_0; ++e) {
            dst[e] = (code5(blocks[b].qs, qh, e) - 16) * d;
        }
    }
}

void quantize_row_q5_0_ref(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q5_0 *>(dst);
    for (int64_t b = 0; b < n / QK5_0; ++b, src += QK5_0) {
        const float d  = first_max_abs(src, QK5_0) / -16;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        blocks[b].d    = fp32_to_fp16(d);
        int q[QK5_0];
        for (int e = 0; e < QK5_0; ++e) {
            q[e] = std::min(31, int(int8_t(truncate_to_int32(src[e] * id + 16.5f))));
        }
        store_codes5(q, blocks[b].qs, blocks[b].qh);
    }
}

void dequantize_row_q5_1_ref(const void * src, float * dst, int64_t n) {
    const auto * blocks = static_cast<const block_q5_1 *>(src);
    for (int64_t b = 0; b < n / QK5_1; ++b, dst += QK5_1) {
        const float    d  = fp16_to_fp32(blocks[b].d);
        const float    m  = fp16_to_fp32(blocks[b].m);
        const uint32_t qh = load_qh(blocks[b].qh);
        for (int e = 0; e < QK5_1; ++e) {
            dst[e] = code5(blocks[b].qs, qh, e) * d + m;
        }
    }
}

void quantize_row_q5_1_ref(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q5_1 *>(dst);
    for (int64_t b = 0; b < n / QK5_1; ++b, src += QK5_1) {
        const MinMax range = min_max(src, QK5_1);
        const float  d     = (range.max - range.min) / 31;
        const float  id    = d != 0.0f ? 1.0f / d : 0.0f;
        blocks[b].d        = fp32_to_fp16(d);
        blocks[b].m        = fp32_to_fp16(range.min);
        int q[QK5_1];
        for (int e = 0; e < QK5_1; ++e) {
            // GGML clamps Q4_1 and Q5_0 codes but not these: (x - min)*id + 0.5 stays below 32 anyway.
            q[e] = uint8_t(truncate_to_int32((src[e] - range.min) * id + 0.5f));
        }
        store_codes5(q, blocks[b].qs, blocks[b].qh);
    }
}

#if defined(__AVX2__)
namespace {

// 32 five-bit codes (one byte each, element order) of a block as qh and low nibbles.
void store_codes5(__m256i codes, uint8_t * qs, uint8_t * qh) {
    // Shifting 16-bit lanes left by 3 moves bit 4 of every byte to that byte's bit 7.
    const uint32_t high_bits = uint32_t(_mm256_movemask_epi8(_mm256_slli_epi16(codes, 3)));
    std::memcpy(qh, &high_bits, sizeof(high_bits));
    avx2::pack_nibbles(_mm256_and_si256(codes, _mm256_set1_epi8(15)), qs);
}

// 32 five-bit codes in element order, one per byte.
__m256i load_codes5(const uint8_t * qs, const uint8_t * qh) {
    // Byte e picks qh byte e / 8 and tests bit e % 8 of it.
    const __m256i qh_bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(int(load_qh(qh))),
                                                 _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202,
                                                                    0x0303030303030303));
    const __m256i bit      = _mm256_set1_epi64x(int64_t(0x8040201008040201));
    const __m256i is_set   = _mm256_cmpeq_epi8(_mm256_and_si256(qh_bytes, bit), bit);
    return _mm256_or_si256(avx2::unpack_nibbles(qs), _mm256_and_si256(is_set, _mm256_set1_epi8(16)));
}

template <class Sink> void decode_q5_0(const void * src, int64_t n, Sink sink) {
    const auto * blocks = static_cast<const block_q5_0 *>(src);
    for (int64_t b = 0; b < n / QK5_0; ++b) {
        const __m256i q = _mm256_sub_epi8(load_codes5(blocks[b].qs, blocks[b].qh), _mm256_set1_epi8(16));
        sink(b * QK5_0, avx2::scaled(q, fp16_to_fp32(blocks[b].d)));
    }
}

template <class Sink> void decode_q5_1(const void * src, int64_t n, Sink sink) {
    const auto * blocks = static_cast<const block_q5_1 *>(src);
    for (int64_t b = 0; b < n / QK5_1; ++b) {
        sink(b * QK5_1, avx2::affine(load_codes5(blocks[b].qs, blocks[b].qh), fp16_to_fp32(blocks[b].d),
                                     fp16_to_fp32(blocks[b].m)));
    }
}

} // namespace

HEXNPU_DECODED_ROW_FNS(q5_0)
HEXNPU_DECODED_ROW_FNS(q5_1)

void quantize_row_q5_0(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q5_0 *>(dst);
    for (int64_t b = 0; b < n / QK5_0; ++b, src += QK5_0) {
        avx2::BlockCodes block;
        if (!avx2::quantize_symmetric<16>(src, block)) {
            quantize_row_q5_0_ref(src, &blocks[b], QK5_0);
            continue;
        }
        blocks[b].d = fp32_to_fp16(block.d);
        store_codes5(block.codes, blocks[b].qs, blocks[b].qh);
    }
}

void quantize_row_q5_1(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_q5_1 *>(dst);
    for (int64_t b = 0; b < n / QK5_1; ++b, src += QK5_1) {
        avx2::BlockCodes block;
        if (!avx2::quantize_affine<31>(src, block)) {
            quantize_row_q5_1_ref(src, &blocks[b], QK5_1);
            continue;
        }
        blocks[b].d = fp32_to_fp16(block.d);
        blocks[b].m = fp32_to_fp16(block.min);
        store_codes5(block.codes, blocks[b].qs, blocks[b].qh);
    }
}

#else

void dequantize_row_q5_0(const void * src, float * dst, int64_t n) { dequantize_row_q5_0_ref(src, dst, n); }
void quantize_row_q5_0(const float * src, void * dst, int64_t n) { quantize_row_q5_0_ref(src, dst, n); }
void dequantize_row_q5_1(const void * src, float * dst, int64_t n) { dequantize_row_q5_1_ref(src, dst, n); }
void quantize_row_q5_1(const float * src, void * dst, int64_t n) { quantize_row_q5_1_ref(src, dst, n); }
HEXNPU_DOT_VIA_DEQUANTIZE(q5_0, QK5_0, sizeof(block_q5_0))
HEXNPU_DOT_VIA_DEQUANTIZE(q5_1, QK5_1, sizeof(block_q5_1))

#endif

} // namespace hexnpu
