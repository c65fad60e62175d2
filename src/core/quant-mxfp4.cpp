// MXFP4: 32 elements, an E8M0 scale byte and 4-bit E2M1 codes in Q4_0's nibble order
// (formats.md §1.2, §1.3).
#include "dot-f32.h"
#include "quant-avx2.h"
#include "quant-blocks.h"
#include "quant-common.h"
#include "quants.h"

#include <bit>
#include <cmath>

namespace hexnpu {
namespace {

// GGML's ggml_e8m0_to_fp32_half: 2^(e-128) for every byte. From e = 2 on it is the normal float
// with biased exponent e - 1; e = 0 and 1 give the subnormals 2^-128 and 2^-127 (mantissa bit 21 + e).
float e8m0_to_fp32_half(uint8_t e) {
    return std::bit_cast<float>(e < 2 ? 0x00200000u << e : uint32_t(e - 1) << 23);
}

// The code whose value kvalues_mxfp4[i]*d is nearest to x; on a tie the lower code wins.
int best_index_mxfp4(float x, float d) {
    int   best     = 0;
    float best_err = std::fabs(kvalues_mxfp4[0] * d - x);
    for (int i = 1; i < 16; ++i) {
        const float err = std::fabs(kvalues_mxfp4[i] * d - x);
        if (err < best_err) {
            best     = i;
            best_err = err;
        }
    }
    return best;
}

} // namespace

void dequantize_row_mxfp4_ref(const void * src, float * dst, int64_t n) {
    const auto * blocks = static_cast<const block_mxfp4 *>(src);
    for (int64_t b = 0; b < n / QK_MXFP4; ++b, dst += QK_MXFP4) {
        const float d = e8m0_to_fp32_half(blocks[b].e);
        for (int j = 0; j < QK_MXFP4 / 2; ++j) {
            dst[j]                = kvalues_mxfp4[blocks[b].qs[j] & 15] * d;
            dst[j + QK_MXFP4 / 2] = kvalues_mxfp4[blocks[b].qs[j] >> 4] * d;
        }
    }
}

void quantize_row_mxfp4_ref(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_mxfp4 *>(dst);
    for (int64_t b = 0; b < n / QK_MXFP4; ++b, src += QK_MXFP4) {
        const float amax = std::fabs(first_max_abs(src, QK_MXFP4));
        // Puts amax in [8d, 16d) (up to log2f rounding). Below 2^-125 the value is negative and GGML's
        // uint8_t cast wraps it, as truncate_to_int32 reproduces.
        const uint8_t e = amax > 0 ? uint8_t(truncate_to_int32(std::floor(std::log2(amax)) - 2 + 127)) : 0;
        const float   d = e8m0_to_fp32_half(e);
        blocks[b].e     = e;
        for (int j = 0; j < QK_MXFP4 / 2; ++j) {
            blocks[b].qs[j] = uint8_t(best_index_mxfp4(src[j], d) | best_index_mxfp4(src[j + QK_MXFP4 / 2], d) << 4);
        }
    }
}

// The quantizer is a per-element table search; it has no vector path.
void quantize_row_mxfp4(const float * src, void * dst, int64_t n) { quantize_row_mxfp4_ref(src, dst, n); }

#if defined(__AVX2__)

namespace {
template <class Sink> void decode_mxfp4(const void * src, int64_t n, Sink sink) {
    const auto * blocks = static_cast<const block_mxfp4 *>(src);
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(kvalues_mxfp4)));
    for (int64_t b = 0; b < n / QK_MXFP4; ++b) {
        const __m256i q = _mm256_shuffle_epi8(table, avx2::unpack_nibbles(blocks[b].qs));
        sink(b * QK_MXFP4, avx2::scaled(q, e8m0_to_fp32_half(blocks[b].e)));
    }
}
} // namespace

HEXNPU_DECODED_ROW_FNS(mxfp4)

#else

void dequantize_row_mxfp4(const void * src, float * dst, int64_t n) { dequantize_row_mxfp4_ref(src, dst, n); }
HEXNPU_DOT_VIA_DEQUANTIZE(mxfp4, QK_MXFP4, sizeof(block_mxfp4))

#endif

} // namespace hexnpu
