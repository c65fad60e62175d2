// IQ4_NL: 32 elements, 4-bit indices into the non-linear table kvalues_iq4nl, Q4_0's byte layout
// (formats.md §1.3).
#include "fp16.h"
#include "quant-avx2.h"
#include "quant-blocks.h"
#include "quant-common.h"
#include "quants.h"

#include <cmath>
#include <cstring>

namespace hexnpu {

void dequantize_row_iq4_nl_ref(const void * src, float * dst, int64_t n) {
    const auto * blocks = static_cast<const block_iq4_nl *>(src);
    for (int64_t b = 0; b < n / QK4_NL; ++b, dst += QK4_NL) {
        const float d = fp16_to_fp32(blocks[b].d);
        for (int j = 0; j < QK4_NL / 2; ++j) {
            dst[j]              = d * kvalues_iq4nl[blocks[b].qs[j] & 15];
            dst[j + QK4_NL / 2] = d * kvalues_iq4nl[blocks[b].qs[j] >> 4];
        }
    }
}

// GGML's quantize_row_iq4_nl_ref: no importance weights and no scale search. Indices come from the
// first guess d0 = max / kvalues[0]; the stored d is the weighted least-squares scale for them.
void quantize_row_iq4_nl_ref(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_iq4_nl *>(dst);
    for (int64_t b = 0; b < n / QK4_NL; ++b, src += QK4_NL) {
        const float max = first_max_abs(src, QK4_NL);
        if (std::fabs(max) < 1e-15f) {
            blocks[b].d = fp32_to_fp16(0.0f);
            std::memset(blocks[b].qs, 0, sizeof(blocks[b].qs));
            continue;
        }
        const float d0    = max / kvalues_iq4nl[0];
        const float id    = 1 / d0;
        float       sumqx = 0;
        float       sumq2 = 0;
        uint8_t     index[QK4_NL];
        for (int e = 0; e < QK4_NL; ++e) {
            index[e]      = uint8_t(best_index_int8(16, kvalues_iq4nl, id * src[e]));
            const float w = src[e] * src[e];
            const float q = kvalues_iq4nl[index[e]];
            sumqx += w * q * src[e];
            sumq2 += w * q * q;
        }
        blocks[b].d = fp32_to_fp16(sumqx / sumq2);
        for (int j = 0; j < QK4_NL / 2; ++j) {
            blocks[b].qs[j] = uint8_t(index[j] | index[j + QK4_NL / 2] << 4);
        }
    }
}

// The quantizer is a per-element table search with serial sums; it has no vector path.
void quantize_row_iq4_nl(const float * src, void * dst, int64_t n) { quantize_row_iq4_nl_ref(src, dst, n); }

#if defined(__AVX2__)

void dequantize_row_iq4_nl(const void * src, float * dst, int64_t n) {
    const auto * blocks = static_cast<const block_iq4_nl *>(src);
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(kvalues_iq4nl)));
    for (int64_t b = 0; b < n / QK4_NL; ++b, dst += QK4_NL) {
        const __m256i q = _mm256_shuffle_epi8(table, avx2::unpack_nibbles(blocks[b].qs));
        avx2::store_scaled(q, fp16_to_fp32(blocks[b].d), dst);
    }
}

#else

void dequantize_row_iq4_nl(const void * src, float * dst, int64_t n) { dequantize_row_iq4_nl_ref(src, dst, n); }

#endif

} // namespace hexnpu
