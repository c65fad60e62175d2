// IQ4_NL: 32 elements, 4-bit indices into the non-linear table kvalues_iq4nl, Q4_0's byte layout
// (formats.md §1.3).
#include "dot-f32.h"
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

// Weighted least squares for the indices that scale id gives: index[], sum w q x and sum w q^2.
struct iq4nl_fit {
    float sumqx = 0, sumq2 = 0;
};
iq4nl_fit fit_iq4nl(const float * x, const float * w, float id, uint8_t * index) {
    iq4nl_fit f;
    for (int e = 0; e < QK4_NL; ++e) {
        const int   l = best_index_int8(16, kvalues_iq4nl, id * x[e]);
        const float q = kvalues_iq4nl[l];
        if (index) {
            index[e] = uint8_t(l);
        }
        f.sumqx += w[e] * q * x[e];
        f.sumq2 += w[e] * q * q;
    }
    return f;
}

// A block's bytes: fp16 d and the indices as nibble pairs (element j low, element j + 16 high).
void store_iq4nl(block_iq4_nl & block, float d, const uint8_t * index) {
    block.d = fp32_to_fp16(d);
    for (int j = 0; j < QK4_NL / 2; ++j) {
        block.qs[j] = uint8_t(index[j] | index[j + QK4_NL / 2] << 4);
    }
}

// GGML's from_float for IQ4_NL (quantize_row_iq4_nl_ref: quantize_row_iq4_nl_impl with no importance
// weights and ntry = -1, what ggml's CPU backend writes KV caches with): max = the first value of
// largest magnitude, the indices nearest x / (max / kvalues[0]) (max maps to entry 0, -127), then
// d = the weighted least-squares scale of those indices (weights x^2). No further scales are tried
// and the indices are not taken again. A block with amax < 1e-15 gets d = 0; GGML leaves its
// indices as the previous block's (the first block's uninitialized), hexnpu writes 8, the entry
// nearest 0 (all dequantize to 0 either way).
void quantize_row_iq4_nl_ref(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_iq4_nl *>(dst);
    for (int64_t b = 0; b < n / QK4_NL; ++b, src += QK4_NL) {
        const float max = first_max_abs(src, QK4_NL);
        uint8_t     index[QK4_NL];
        float       d = 0;
        if (std::fabs(max) >= 1e-15f) {
            float w[QK4_NL];
            for (int e = 0; e < QK4_NL; ++e) {
                w[e] = src[e] * src[e];
            }
            const iq4nl_fit f = fit_iq4nl(src, w, 1 / (max / kvalues_iq4nl[0]), index);
            d                 = f.sumq2 > 0 ? f.sumqx / f.sumq2 : 0.0f;
        } else {
            std::memset(index, 8, sizeof index);
        }
        store_iq4nl(blocks[b], d, index);
    }
}

// GGML's model quantizer for IQ4_NL (quantize_iq4_nl without importance weights, what
// llama-quantize and gguf-py write: quantize_row_iq4_nl_impl with 7 tries): weights x^2; a first
// scale maps the signed extreme max to +127, then 15 scales map it to kvalues[0] + t (t in -7..7);
// the best weighted least-squares d wins, and the indices are taken again with it. A block with
// amax < 1e-15 gets d = 0 and every index 8 (the table's entry nearest zero, as GGML's final pass
// picks it).
void quantize_row_iq4_nl_search(const float * src, void * dst, int64_t n) {
    auto * blocks = static_cast<block_iq4_nl *>(dst);
    for (int64_t b = 0; b < n / QK4_NL; ++b, src += QK4_NL) {
        const float max = first_max_abs(src, QK4_NL);
        float       d   = 0;
        if (std::fabs(max) >= 1e-15f) {
            float w[QK4_NL];
            for (int e = 0; e < QK4_NL; ++e) {
                w[e] = src[e] * src[e];
            }
            iq4nl_fit f = fit_iq4nl(src, w, 1 / (-max / kvalues_iq4nl[0]), nullptr);
            d           = f.sumqx / f.sumq2;
            float best  = d * f.sumqx;
            for (int t = -7; t <= 7; ++t) {
                f = fit_iq4nl(src, w, (t + kvalues_iq4nl[0]) / max, nullptr);
                if (f.sumq2 > 0 && f.sumqx * f.sumqx > best * f.sumq2) {
                    d    = f.sumqx / f.sumq2;
                    best = d * f.sumqx;
                }
            }
        }
        uint8_t index[QK4_NL];
        const float id = d != 0 ? 1 / d : 0;
        for (int e = 0; e < QK4_NL; ++e) {
            index[e] = uint8_t(best_index_int8(16, kvalues_iq4nl, id * src[e]));
        }
        store_iq4nl(blocks[b], d, index);
    }
}

// The quantizer is a per-element table search with serial sums; it has no vector path.
void quantize_row_iq4_nl(const float * src, void * dst, int64_t n) { quantize_row_iq4_nl_ref(src, dst, n); }

#if defined(__AVX2__)

namespace {
template <class Sink> void decode_iq4_nl(const void * src, int64_t n, Sink sink) {
    const auto * blocks = static_cast<const block_iq4_nl *>(src);
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(kvalues_iq4nl)));
    for (int64_t b = 0; b < n / QK4_NL; ++b) {
        const __m256i q = _mm256_shuffle_epi8(table, avx2::unpack_nibbles(blocks[b].qs));
        sink(b * QK4_NL, avx2::scaled(q, fp16_to_fp32(blocks[b].d)));
    }
}
} // namespace

HEXNPU_DECODED_ROW_FNS(iq4_nl)

#else

void dequantize_row_iq4_nl(const void * src, float * dst, int64_t n) { dequantize_row_iq4_nl_ref(src, dst, n); }
HEXNPU_DOT_VIA_DEQUANTIZE(iq4_nl, QK4_NL, sizeof(block_iq4_nl))

#endif

} // namespace hexnpu
