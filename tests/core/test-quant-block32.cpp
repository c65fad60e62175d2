// Block-32 family quantizers (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4) and Q1_0 / Q2_0:
// known answers worked out by hand from formats.md §1.3, error bounds of quantize -> dequantize on
// random data, and the fast paths against the scalar references, bit for bit.
#include "core/fp16.h"
#include "core/quant-blocks.h"
#include "core/quants.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace hexnpu {
namespace {

using Bytes        = std::vector<uint8_t>;
using QuantizeFn   = void (*)(const float *, void *, int64_t);
using DequantizeFn = void (*)(const void *, float *, int64_t);

struct Kernels {
    const char * name;
    int          block;  // elements per block
    size_t       bytes;  // bytes per block
    QuantizeFn   quantize_ref;
    QuantizeFn   quantize;
    DequantizeFn dequantize_ref;
    DequantizeFn dequantize;
};

#define KERNELS(T, QK) Kernels{#T, QK, sizeof(block_##T), quantize_row_##T##_ref, quantize_row_##T, \
                               dequantize_row_##T##_ref, dequantize_row_##T}
const Kernels kQ4_0   = KERNELS(q4_0, QK4_0);
const Kernels kQ4_1   = KERNELS(q4_1, QK4_1);
const Kernels kQ5_0   = KERNELS(q5_0, QK5_0);
const Kernels kQ5_1   = KERNELS(q5_1, QK5_1);
const Kernels kQ8_0   = KERNELS(q8_0, QK8_0);
const Kernels kIQ4_NL = KERNELS(iq4_nl, QK4_NL);
// Model files' IQ4_NL (GGML's quantize_iq4_nl: the 7-try search); the dequantizers are the same.
const Kernels kIQ4_NLSearch = {"iq4_nl_search", QK4_NL, sizeof(block_iq4_nl), quantize_row_iq4_nl_search,
                               quantize_row_iq4_nl_search, dequantize_row_iq4_nl_ref, dequantize_row_iq4_nl};
const Kernels kMXFP4  = KERNELS(mxfp4, QK_MXFP4);
const Kernels kQ1_0   = KERNELS(q1_0, QK1_0);
const Kernels kQ2_0   = KERNELS(q2_0, QK2_0);
#undef KERNELS

void PrintTo(const Kernels & k, std::ostream * os) { *os << k.name; }

const Kernels kAllTypes[] = {kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0, kIQ4_NL, kMXFP4, kQ1_0, kQ2_0};
// The types whose quantizer has a vector path of its own (the others' fast path is the reference).
const Kernels kVectorQuantizers[] = {kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0};

Bytes quantize(QuantizeFn fn, const Kernels & k, const std::vector<float> & x) {
    Bytes out(x.size() / size_t(k.block) * k.bytes, 0xA5);  // poison: every byte must be written
    fn(x.data(), out.data(), int64_t(x.size()));
    return out;
}

std::vector<float> dequantize(DequantizeFn fn, const Kernels & k, const Bytes & q) {
    std::vector<float> out(q.size() / k.bytes * size_t(k.block), -1234.5f);
    fn(q.data(), out.data(), int64_t(out.size()));
    return out;
}

std::vector<uint32_t> bits_of(const std::vector<float> & x) {
    std::vector<uint32_t> bits(x.size());
    std::transform(x.begin(), x.end(), bits.begin(), [](float v) { return std::bit_cast<uint32_t>(v); });
    return bits;
}

// Both quantizers of `k` turn x into `expected`, and both dequantizers turn `expected` into
// `values` (compared as bits, so -0.0 and +0.0 differ).
void expect_known_answer(const Kernels & k, const std::vector<float> & x, const Bytes & expected,
                         const std::vector<float> & values) {
    ASSERT_EQ(x.size(), size_t(k.block));
    ASSERT_EQ(expected.size(), k.bytes);
    EXPECT_EQ(quantize(k.quantize_ref, k, x), expected) << k.name << " reference";
    EXPECT_EQ(quantize(k.quantize, k, x), expected) << k.name << " fast path";
    if (!values.empty()) {
        ASSERT_EQ(values.size(), size_t(k.block));
        EXPECT_EQ(bits_of(dequantize(k.dequantize_ref, k, expected)), bits_of(values)) << k.name << " reference";
        EXPECT_EQ(bits_of(dequantize(k.dequantize, k, expected)), bits_of(values)) << k.name << " fast path";
    }
}

Bytes concat(std::initializer_list<Bytes> parts) {
    Bytes out;
    for (const Bytes & p : parts) {
        out.insert(out.end(), p.begin(), p.end());
    }
    return out;
}

Bytes repeat(uint8_t byte, size_t count) { return Bytes(count, byte); }

// ---------------------------------------------------------------------------------------------
// Known answers

TEST(QuantBlock32KnownAnswer, Q4_0PositiveExtreme) {
    // The first largest |x| is x[3] = 8 (x[4] = -8 ties and comes later): d = 8 / -8 = -1 (fp16 0xBC00),
    // id = -1, q = min(15, trunc(-x + 8.5)). The extreme gets code 0; x = -8 would need 16 and is
    // clamped to 15. Ties of -x + 8 at .5 round up: 2.5 -> trunc(6.0) = 6, -1 -> trunc(9.5) = 9.
    const std::vector<float> x = {0,  1,  2,  8,  -8, -7, 2.5f, -0.5f, 0.5f,  3.75f, -3.75f, 7.9f,  -7.9f, 1.5f, -1.5f, 4,
                                  -1, -2, -3, -4, -5, -6, 5,    6,     7,     0.25f, -0.25f, 0.75f, -0.75f, 6.5f, -6.5f, 3};
    // codes e0..15:  8  7  6  0 15 15  6  9  8  4 12  0 15  7 10  4
    // codes e16..31: 9 10 11 12 13 14  3  2  1  8  8  7  9  2 15  5; byte j = code j | code (j+16) << 4.
    const Bytes expected = {0x00, 0xBC, 0x98, 0xA7, 0xB6, 0xC0, 0xDF, 0xEF, 0x36, 0x29,
                            0x18, 0x84, 0x8C, 0x70, 0x9F, 0x27, 0xFA, 0x54};
    // (q - 8) * -1; code 8 gives 0 * -1 = -0.0.
    const std::vector<float> values = {-0.0f, 1,  2,  8,  -7, -7, 2, -1, -0.0f, 4,     -4,    8, -7, 1, -2, 4,
                                       -1,    -2, -3, -4, -5, -6, 5, 6,  7,     -0.0f, -0.0f, 1, -1, 6, -7, 3};
    expect_known_answer(kQ4_0, x, expected, values);
}

TEST(QuantBlock32KnownAnswer, Q4_0ScaleOverflowsFp16) {
    // max = 8 * 65520: d = -65520 rounds past the largest fp16 (65504) to -inf (0xFC00); the
    // codes use the fp32 d: the extreme gets 0, zeros get 8.
    std::vector<float> x(32, 0.0f);
    x[0] = 8 * 65520.0f;
    expect_known_answer(kQ4_0, x, concat({{0x00, 0xFC, 0x80}, repeat(0x88, 15)}), {});
    // max = -8 * 65504: d = 65504, the largest finite fp16 (0x7BFF); the extreme gets 0.
    x[0] = -8 * 65504.0f;
    expect_known_answer(kQ4_0, x, concat({{0xFF, 0x7B, 0x80}, repeat(0x88, 15)}), {});
}

TEST(QuantBlock32KnownAnswer, Q4_1) {
    // min = -1 (x[0]), max = 14 (x[15]): d = 15 / 15 = 1 (0x3C00), m = -1 (0xBC00),
    // q = min(15, trunc(x + 1 + 0.5)). x[j] = j - 1 gives code j; x[16 + j] = j - 0.5 sits half way
    // and rounds up to j + 1; x[31] = 13.75 -> trunc(15.25) = 15.
    std::vector<float> x(32);
    for (int j = 0; j < 16; ++j) {
        x[j] = float(j) - 1;
    }
    for (int j = 0; j < 15; ++j) {
        x[16 + j] = float(j) - 0.5f;
    }
    x[31] = 13.75f;
    // byte j = j | (j + 1) << 4 for j < 15; byte 15 = 15 | 15 << 4.
    const Bytes expected = {0x00, 0x3C, 0x00, 0xBC, 0x10, 0x21, 0x32, 0x43, 0x54, 0x65, 0x76, 0x87,
                            0x98, 0xA9, 0xBA, 0xCB, 0xDC, 0xED, 0xFE, 0xFF};
    std::vector<float> values(32);  // q * 1 + (-1)
    for (int j = 0; j < 16; ++j) {
        values[j]      = float(j) - 1;
        values[16 + j] = float(std::min(j + 1, 15)) - 1;
    }
    expect_known_answer(kQ4_1, x, expected, values);
}

TEST(QuantBlock32KnownAnswer, Q4_1NegativeZeroMinimum) {
    // The scan keeps the first of the equal minima -0.0 and +0.0: m = -0.0 (0x8000). max = 15,
    // d = (15 - -0) / 15 = 1; codes trunc((x + 0) * 1 + 0.5): 0 for the zeros, 15 for x[2].
    std::vector<float> x(32, 0.0f);
    x[0] = -0.0f;
    x[2] = 15.0f;
    const Bytes expected = concat({{0x00, 0x3C, 0x00, 0x80, 0x00, 0x00, 0x0F}, repeat(0x00, 13)});
    std::vector<float> values(32, 0.0f);  // 0 * 1 + -0 = +0
    values[2] = 15.0f;
    expect_known_answer(kQ4_1, x, expected, values);
}

TEST(QuantBlock32KnownAnswer, Q5_0NegativeExtreme) {
    // The first largest |x| is x[16] = -16 (x[17] = +16 ties later): d = -16 / -16 = 1 (0x3C00),
    // q = min(31, trunc(x + 16.5)). x[j] = j - 15 -> j + 1 (1..16); x[16] -> 0; x[17] = 16 -> 32,
    // clamped to 31; x[16 + k] = k - 0.5 -> k + 16 (18..31) for k >= 2.
    std::vector<float> x(32);
    for (int j = 0; j < 16; ++j) {
        x[j] = float(j) - 15;
    }
    x[16] = -16;
    x[17] = 16;
    for (int k = 2; k < 16; ++k) {
        x[16 + k] = float(k) - 0.5f;
    }
    // Low nibbles: byte 0 = 1 | 0 << 4, byte 1 = 2 | (31 & 15) << 4, byte j = (j + 1) | ((j + 16) & 15) << 4
    // for j = 2..14, byte 15 = (16 & 15) | (31 & 15) << 4. Bit 4 is set for e = 15 (16) and e = 17..31:
    // qh = 0xFFFE8000.
    const Bytes expected = {0x00, 0x3C, 0x00, 0x80, 0xFE, 0xFF, 0x01, 0xF2, 0x23, 0x34, 0x45,
                            0x56, 0x67, 0x78, 0x89, 0x9A, 0xAB, 0xBC, 0xCD, 0xDE, 0xEF, 0xF0};
    std::vector<float> values(32);  // (q - 16) * 1
    for (int j = 0; j < 16; ++j) {
        values[j] = float(j) - 15;
    }
    values[16] = -16;
    values[17] = 15;
    for (int k = 2; k < 16; ++k) {
        values[16 + k] = float(k);
    }
    expect_known_answer(kQ5_0, x, expected, values);
}

TEST(QuantBlock32KnownAnswer, Q5_1) {
    // min = -1 (x[0]), max = 30 (x[31]): d = 31 / 31 = 1, m = -1; q = trunc(x + 1 + 0.5).
    // x[j] = j - 1 -> j; x[16 + k] = 14.5 + k is half way and rounds up to 16 + k; x[31] = 30 -> 31.
    // Every element e gets code e: byte j = j | j << 4, qh = 0xFFFF0000.
    std::vector<float> x(32);
    for (int j = 0; j < 16; ++j) {
        x[j] = float(j) - 1;
    }
    for (int k = 0; k < 15; ++k) {
        x[16 + k] = 14.5f + float(k);
    }
    x[31] = 30;
    Bytes expected = {0x00, 0x3C, 0x00, 0xBC, 0x00, 0x00, 0xFF, 0xFF};
    for (int j = 0; j < 16; ++j) {
        expected.push_back(uint8_t(j | j << 4));
    }
    std::vector<float> values(32);  // e * 1 + (-1)
    for (int e = 0; e < 32; ++e) {
        values[e] = float(e) - 1;
    }
    expect_known_answer(kQ5_1, x, expected, values);
}

TEST(QuantBlock32KnownAnswer, Q8_0RoundsHalfAwayFromZero) {
    // amax = 127: d = 1 (0x3C00), id = 1, q = roundf(x): halves go away from zero (2.5 -> 3,
    // -2.5 -> -3, 0.5 -> 1, -64.5 -> -65); 0.49999997 (the float below 0.5) -> 0; -0.0 -> 0.
    const std::vector<float> x = {127, -127, 2.5f, -2.5f, 0.5f, -0.5f, 1.5f, -1.5f, 0.49999997f, -0.49999997f, 126.5f,
                                  -126.5f, 0, -0.0f, 3.25f, -3.75f, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120,
                                  -64.5f, 64.5f, 1e-3f, -99.5f};
    const std::vector<int8_t> q = {127, -127, 3, -3, 1, -1, 2, -2, 0, 0, 127, -127, 0, 0, 3, -4,
                                   10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, -65, 65, 0, -100};
    Bytes expected = {0x00, 0x3C};
    std::vector<float> values;  // q * 1
    for (const int8_t c : q) {
        expected.push_back(uint8_t(c));
        values.push_back(float(c));
    }
    expect_known_answer(kQ8_0, x, expected, values);
}

// GGML's IQ4_NL model-file search written out from its definition with a brute-force nearest entry (ties to the
// upper index): weights x^2; candidate scales max/127 and (t - 127)/max for t in -7..7 as inverse
// scales; for each, the indices and the weighted least-squares d; the largest d * sum(w q x) wins;
// the indices are taken again with the winner.
// The table entry nearest v, by brute force (ties to the upper index).
int nearest_iq4nl(float v) {
    int best = 0;
    for (int i = 1; i < 16; ++i) {
        if (std::fabs(v - kvalues_iq4nl[i]) <= std::fabs(v - kvalues_iq4nl[best])) {
            best = i;
        }
    }
    return best;
}

struct iq4nl_model {
    float   d;
    uint8_t index[32];
};
iq4nl_model iq4nl_search(const std::vector<float> & x) {
    float max = 0;
    for (float v : x) {
        max = std::fabs(v) > std::fabs(max) ? v : max;
    }
    auto fit = [&](float id, float * sumqx, float * sumq2) {
        *sumqx = *sumq2 = 0;
        for (float v : x) {
            const float q = kvalues_iq4nl[nearest_iq4nl(id * v)];
            *sumqx += v * v * q * v;
            *sumq2 += v * v * q * q;
        }
    };
    float sumqx, sumq2;
    fit(1 / (max / 127.0f), &sumqx, &sumq2);
    float d = sumqx / sumq2, best = d * sumqx;
    for (int t = -7; t <= 7; ++t) {
        fit((t - 127.0f) / max, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d    = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    iq4nl_model m{d, {}};
    for (size_t e = 0; e < x.size(); ++e) {
        m.index[e] = uint8_t(nearest_iq4nl((1 / d) * x[e]));
    }
    return m;
}

// GGML's IQ4_NL from_float (ntry = -1) written out from its definition: indices nearest x / (max /
// -127) (the first value of largest magnitude becomes entry 0), d their weighted least-squares
// scale, the indices kept.
iq4nl_model iq4nl_from_float(const std::vector<float> & x) {
    float max = 0;
    for (float v : x) {
        max = std::fabs(v) > std::fabs(max) ? v : max;
    }
    iq4nl_model m{0, {}};
    const float id    = 1 / (max / -127.0f);
    float       sumqx = 0, sumq2 = 0;
    for (size_t e = 0; e < x.size(); ++e) {
        m.index[e]    = uint8_t(nearest_iq4nl(id * x[e]));
        const float q = kvalues_iq4nl[m.index[e]];
        sumqx += x[e] * x[e] * q * x[e];
        sumq2 += x[e] * x[e] * q * q;
    }
    m.d = sumqx / sumq2;
    return m;
}

std::vector<std::vector<float>> iq4nl_blocks() {
    // The old tie and clipping cases (-127 first, 120 above the table, exact ties 7, -4.5, 101),
    // then random blocks.
    std::vector<std::vector<float>> blocks;
    std::vector<float>              x(32, 0.0f);
    const float head[] = {-127, 120, 7.125f, -4.5f, 7, 101, 6.984375f};
    std::copy(std::begin(head), std::end(head), x.begin());
    blocks.push_back(x);
    std::mt19937 rng(21);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int b = 0; b < 20; ++b) {
        for (float & v : x) {
            v = normal(rng) * (b % 2 ? 0.01f : 3.0f);
        }
        blocks.push_back(x);
    }
    return blocks;
}

void expect_iq4nl(const Kernels & k, const std::vector<float> & block, const iq4nl_model & m) {
    Bytes          expected(18);
    const uint16_t d = fp32_to_fp16(m.d);
    expected[0] = uint8_t(d), expected[1] = uint8_t(d >> 8);
    std::vector<float> values(32);
    for (int j = 0; j < 16; ++j) {
        expected[2 + j] = uint8_t(m.index[j] | m.index[j + 16] << 4);
    }
    for (int e = 0; e < 32; ++e) {
        values[size_t(e)] = fp16_to_fp32(d) * kvalues_iq4nl[m.index[e]];
    }
    expect_known_answer(k, block, expected, values);
}

TEST(QuantBlock32KnownAnswer, IQ4_NLFromFloatTakesOneScaleLikeGgml) {
    for (const auto & block : iq4nl_blocks()) {
        expect_iq4nl(kIQ4_NL, block, iq4nl_from_float(block));
    }
}

TEST(QuantBlock32KnownAnswer, IQ4_NLModelFilesSearchFifteenScalesLikeGgml) {
    for (const auto & block : iq4nl_blocks()) {
        expect_iq4nl(kIQ4_NLSearch, block, iq4nl_search(block));
    }
}

TEST(QuantBlock32KnownAnswer, IQ4_NLBelowEpsilonIsZero) {
    // amax = 1e-16 < 1e-15: d = 0, and every index 8, the entry nearest 0 (GGML's last pass with
    // id = 0); they dequantize to 0 * 1 = +0.
    std::vector<float> x(32, 0.0f);
    x[5]  = 1e-16f;
    x[20] = -5e-17f;
    expect_known_answer(kIQ4_NL, x, concat({{0x00, 0x00}, repeat(0x88, 16)}), std::vector<float>(32, 0.0f));
    expect_known_answer(kIQ4_NLSearch, x, concat({{0x00, 0x00}, repeat(0x88, 16)}), std::vector<float>(32, 0.0f));
}

TEST(QuantBlock32KnownAnswer, MXFP4CodesAndTies) {
    // amax = 7: e = floor(log2 7) - 2 + 127 = 2 - 2 + 127 = 127, d = 2^(127-128) = 0.5, so the codes
    // are worth 0, .5, 1, 1.5, 2, 3, 4, 6 (8..15: their negatives). Ties keep the lower code:
    // 0.25 -> 0 (not 1), -0.25 -> 0 (not 8 or 9), 2.5 -> 4, -2.5 -> 12, 3.5 -> 5, 5 -> 6, -5 -> 14,
    // -0.75 -> 9, -1.25 -> 10, 1.75 -> 3. Beyond 6 saturates: 7 -> 7, -7 -> 15.
    const std::vector<float> x = {0,     -0.0f, 0.25f,  -0.25f, 0.5f,  0.75f, 1.25f, 2.5f, -2.5f, 3.5f, 5,     -5,
                                  6,     -7,    7,      0.1f,   -0.5f, -0.75f, -1,   -1.25f, -1.5f, -1.75f, -2, -3,
                                  -4,    -6,    1.5f,   1.75f,  3,     4,      4.5f, 0.3f};
    // codes e0..15:  0 0 0 0 1 1 2 4 12 5 6 14 7 15 7 0
    // codes e16..31: 9 9 10 10 11 11 12 13 14 15 3 3 5 6 6 1
    const Bytes expected = {0x7F, 0x90, 0x90, 0xA0, 0xA0, 0xB1, 0xB1, 0xC2, 0xD4,
                            0xEC, 0xF5, 0x36, 0x3E, 0x57, 0x6F, 0x67, 0x10};
    const std::vector<float> values = {0,     0,     0,  0,  0.5f, 0.5f, 1,  2,  -2, 3, 4, -4, 6, -6, 6, 0,
                                       -0.5f, -0.5f, -1, -1, -1.5f, -1.5f, -2, -3, -4, -6, 1.5f, 1.5f, 3, 4, 4, 0.5f};
    expect_known_answer(kMXFP4, x, expected, values);
}

TEST(QuantBlock32KnownAnswer, MXFP4ScaleExponent) {
    // One element carries amax; e = floor(log2 amax) - 2 + 127, and amax lands on code 6 (8d) or 7 (12d).
    struct Case {
        float   amax;
        uint8_t e;
        uint8_t code;
    };
    const Case cases[] = {
        {8.0f, 128, 6},           // log2 = 3: d = 1, 8 = 8d
        {7.99f, 127, 7},          // floor(2.998) = 2: d = 0.5, 7.99 nearest to 12d = 6
        {1.0f, 125, 6},           // d = 2^-3
        {0.75f, 124, 7},          // floor(-0.415) = -1: d = 2^-4, 0.75 = 12d
        {0x1p-125f, 0, 6},        // e = 0: d = 2^-128 is a subnormal, 2^-125 = 8d
        {0x1.8p-124f, 1, 7},      // e = 1: d = 2^-127, 1.5 * 2^-124 = 12d
        {0x1p127f, 252, 6},       // d = 2^124
    };
    for (const Case & c : cases) {
        std::vector<float> x(32, 0.0f);
        x[9] = c.amax;
        const Bytes expected = concat({{c.e}, repeat(0x00, 9), {c.code}, repeat(0x00, 6)});
        expect_known_answer(kMXFP4, x, expected, {});
    }
}

TEST(QuantBlock32KnownAnswer, MXFP4DequantizesSubnormalAndHugeScales) {
    // x = kvalues[q] * 2^(e-128), the scale built exactly for every e.
    struct Case {
        uint8_t e;
        uint8_t byte0;  // codes of elements 0 (low nibble) and 16 (high nibble)
        float   x0;
        float   x16;
    };
    const Case cases[] = {
        {0, 0x71, 0x1p-128f, 0x1.8p-125f},     // d = 2^-128: codes 1 (1) and 7 (12)
        {1, 0xF9, -0x1p-127f, -0x1.8p-124f},   // d = 2^-127: codes 9 (-1) and 15 (-12)
        {252, 0xF7, 0x1.8p127f, -0x1.8p127f},  // d = 2^124: codes 7 (12) and 15 (-12)
        {255, 0x21, 0x1p127f, std::numeric_limits<float>::infinity()},  // d = 2^127: 2 * 2^127 overflows
    };
    for (const Case & c : cases) {
        const Bytes q = concat({{c.e, c.byte0}, repeat(0x00, 15)});
        for (const DequantizeFn fn : {kMXFP4.dequantize_ref, kMXFP4.dequantize}) {
            const std::vector<float> y = dequantize(fn, kMXFP4, q);
            EXPECT_EQ(std::bit_cast<uint32_t>(y[0]), std::bit_cast<uint32_t>(c.x0)) << int(c.e);
            EXPECT_EQ(std::bit_cast<uint32_t>(y[16]), std::bit_cast<uint32_t>(c.x16)) << int(c.e);
        }
    }
}

TEST(QuantBlock32KnownAnswer, Q1_0SignsAndNegativeZero) {
    // x[e] = -1.5 when e % 3 == 0, else 0.75; x[126] (e % 3 == 0) is -0.0 instead.
    // Σ|x| = 42 * 1.5 + 85 * 0.75 = 126.75, d = 126.75 / 128 = 0.990234375 = (1 + 1004/1024) / 2 (0x3BEC).
    // Bit e = x >= 0, LSB first: bytes repeat B6 6D DB; the last byte has e = 126 set by -0.0: F6.
    std::vector<float> x(128);
    for (int e = 0; e < 128; ++e) {
        x[e] = e % 3 == 0 ? -1.5f : 0.75f;
    }
    x[126] = -0.0f;
    Bytes expected = {0xEC, 0x3B};
    for (int b = 0; b < 16; ++b) {
        const uint8_t pattern[] = {0xB6, 0x6D, 0xDB};
        expected.push_back(b == 15 ? 0xF6 : pattern[b % 3]);
    }
    const float        d = 0.990234375f;
    std::vector<float> values(128);
    for (int e = 0; e < 128; ++e) {
        values[e] = x[e] >= 0 ? d : -d;
    }
    expect_known_answer(kQ1_0, x, expected, values);
}

TEST(QuantBlock32KnownAnswer, Q2_0) {
    // amax = 2: d = 2 (0x4000), id = 0.5, c = clamp(roundf(x / 2) + 1, 0, 3). Groups of four:
    //   [-2, 0, 1, 2]       -> x/2 = [-1, 0, .5, 1]      -> codes [0, 1, 2, 2] -> 0xA4
    //   [-1, -.9, .9, -0.0] -> x/2 = [-.5, -.45, .45, -0] -> codes [0, 1, 1, 1] -> 0x54
    std::vector<float> x;
    for (int g = 0; g < 8; ++g) {
        x.insert(x.end(), {-2, 0, 1, 2, -1, -0.9f, 0.9f, -0.0f});
    }
    Bytes expected = {0x00, 0x40};
    std::vector<float> values;  // (c - 1) * 2
    for (int g = 0; g < 8; ++g) {
        expected.insert(expected.end(), {0xA4, 0x54});
        values.insert(values.end(), {-2, 0, 2, 2, -2, 0, 0, 0});
    }
    expect_known_answer(kQ2_0, x, expected, values);
}

TEST(QuantBlock32KnownAnswer, Q2_0CodeThreeDequantizes) {
    // The quantizer never emits code 3 (+2d), but a block may hold it. d = 2: byte 0x1B = codes
    // 3, 2, 1, 0 -> 4, 2, 0, -2; bytes 0xFF -> 4.
    const Bytes q = concat({{0x00, 0x40, 0x1B}, repeat(0xFF, 15)});
    std::vector<float> values(64, 4.0f);
    values[1] = 2;
    values[2] = 0;
    values[3] = -2;
    EXPECT_EQ(bits_of(dequantize(kQ2_0.dequantize_ref, kQ2_0, q)), bits_of(values));
    EXPECT_EQ(bits_of(dequantize(kQ2_0.dequantize, kQ2_0, q)), bits_of(values));
}

TEST(QuantBlock32KnownAnswer, ZeroBlocks) {
    // Q4_0 / Q5_0: max stays at the scan's initial +0, so d = +0 / -8 = -0.0 (0x8000), id = 0, and
    // every code is trunc(0 + 8.5) = 8 (Q5_0: 16, i.e. nibble 0 and the qh bit). Q4_1 / Q5_1: min =
    // max = 0, d = 0, codes trunc(0.5) = 0. Q8_0: d = 0, codes 0; IQ4_NL: d = 0, index 8. MXFP4: e = 0 and code 0
    // (|0*d - 0| is already the least error). Q1_0: d = 0, every bit 1 (0 >= 0). Q2_0: d = 0,
    // codes roundf(0) + 1 = 1 -> 0x55.
    struct Case {
        const Kernels & k;
        Bytes           expected;
    };
    const Case cases[] = {
        {kQ4_0, concat({{0x00, 0x80}, repeat(0x88, 16)})},
        {kQ4_1, repeat(0x00, 20)},
        {kQ5_0, concat({{0x00, 0x80}, repeat(0xFF, 4), repeat(0x00, 16)})},
        {kQ5_1, repeat(0x00, 24)},
        {kQ8_0, repeat(0x00, 34)},
        {kIQ4_NL, concat({{0x00, 0x00}, repeat(0x88, 16)})},
        {kMXFP4, repeat(0x00, 17)},
        {kQ1_0, concat({{0x00, 0x00}, repeat(0xFF, 16)})},
        {kQ2_0, concat({{0x00, 0x00}, repeat(0x55, 16)})},
    };
    for (const Case & c : cases) {
        std::vector<float> zeros(size_t(c.k.block), 0.0f);
        expect_known_answer(c.k, zeros, c.expected, {});
        // Negative zeros give the same bytes everywhere but Q4_1/Q5_1, whose m keeps the sign of
        // the first zero; put it later so m stays +0.
        for (size_t e = 1; e < zeros.size(); e += 2) {
            zeros[e] = -0.0f;
        }
        expect_known_answer(c.k, zeros, c.expected, {});
    }
}

// ---------------------------------------------------------------------------------------------
// Error bounds of quantize -> dequantize on random data

// Random rows of `blocks` blocks: normal values with a per-block spread 2^[-3, 8), some blocks
// uniform in [-s, s], some one-sided (all >= 0), so the affine types see a nonzero minimum.
std::vector<float> random_rows(std::mt19937 & rng, const Kernels & k, int blocks) {
    std::vector<float>                     x(size_t(blocks) * size_t(k.block));
    std::uniform_real_distribution<float>  log_scale(-3.0f, 8.0f);
    std::uniform_int_distribution<int>     shape(0, 2);
    std::normal_distribution<float>        normal;
    std::uniform_real_distribution<float>  uniform(-1.0f, 1.0f);
    for (int b = 0; b < blocks; ++b) {
        const float scale = std::exp2(log_scale(rng));
        const int   kind  = shape(rng);
        for (int e = 0; e < k.block; ++e) {
            float v = kind == 1 ? uniform(rng) : normal(rng);
            if (kind == 2) {
                v = std::fabs(v) + 0.5f;
            }
            x[size_t(b) * size_t(k.block) + size_t(e)] = v * scale;
        }
    }
    return x;
}

// Largest error of rounding v to fp16 (normal range: half an ulp, 2^-11 relative; subnormal: 2^-25).
double fp16_rounding(double v) { return std::max(std::fabs(v) * 0x1p-11, 0x1p-25); }

uint16_t half_at(const uint8_t * p) { return uint16_t(p[0] | p[1] << 8); }

// Runs `check(block_index, x, y, block_bytes)` over quantize -> dequantize of random rows, for both paths.
template <typename Check> void for_each_round_trip(const Kernels & k, Check check) {
    std::mt19937 rng(1234);
    const std::vector<float> x = random_rows(rng, k, 512);
    for (const bool fast : {false, true}) {
        SCOPED_TRACE(fast ? "fast path" : "reference");
        const Bytes              q = quantize(fast ? k.quantize : k.quantize_ref, k, x);
        const std::vector<float> y = dequantize(fast ? k.dequantize : k.dequantize_ref, k, q);
        for (size_t b = 0; b < x.size() / size_t(k.block); ++b) {
            check(&x[b * size_t(k.block)], &y[b * size_t(k.block)], &q[b * k.bytes]);
        }
    }
}

// Symmetric types (Q4_0: Half 8, Q5_0: Half 16): |d| = amax / Half. With t = x / d (in [-Half, Half]) the
// code is round-half-up(t) + Half, clamped to 2*Half - 1: error <= |d|/2, or (t - (Half - 1))·|d| when
// clamped (at most |d|). The stored fp16 d adds up to Half·|d16 - d|; the fp32 arithmetic a few ulps.
void check_symmetric(const Kernels & k, int half) {
    for_each_round_trip(k, [&](const float * x, const float * y, const uint8_t * block) {
        double amax = 0;
        double max  = 0;
        for (int e = 0; e < k.block; ++e) {
            if (std::fabs(x[e]) > amax) {
                amax = std::fabs(x[e]);
                max  = x[e];
            }
        }
        const double d   = max / -half;
        const double d16 = fp16_to_fp32(half_at(block));
        ASSERT_LE(std::fabs(d16 - d), fp16_rounding(d));
        for (int e = 0; e < k.block; ++e) {
            const double t     = x[e] / d;
            const double steps = std::max(0.5, t - (half - 1));
            const double bound = steps * std::fabs(d) + half * fp16_rounding(d) + 1e-6 * amax;
            ASSERT_LE(std::fabs(x[e] - y[e]), bound) << "x=" << x[e] << " d=" << d;
        }
    });
}

// Affine types (Q4_1: 15 levels, Q5_1: 31): d = (max - min) / levels, codes round-half-up((x - min)/d):
// error <= d/2, plus levels·|d16 - d| and |m16 - min| from fp16, plus a few fp32 ulps.
void check_affine(const Kernels & k, int levels) {
    for_each_round_trip(k, [&](const float * x, const float * y, const uint8_t * block) {
        const auto   range = std::minmax_element(x, x + k.block);
        const double min   = *range.first;
        const double max   = *range.second;
        const double d     = (max - min) / levels;
        ASSERT_LE(std::fabs(fp16_to_fp32(half_at(block)) - d), fp16_rounding(d));
        ASSERT_LE(std::fabs(fp16_to_fp32(half_at(block + 2)) - min), fp16_rounding(min));
        const double bound = 0.5 * d + levels * fp16_rounding(d) + fp16_rounding(min) + 1e-6 * (max - min + std::fabs(min));
        for (int e = 0; e < k.block; ++e) {
            ASSERT_LE(std::fabs(x[e] - y[e]), bound) << "x=" << x[e] << " d=" << d << " min=" << min;
        }
    });
}

TEST(QuantBlock32ErrorBound, Q4_0) { check_symmetric(kQ4_0, 8); }
TEST(QuantBlock32ErrorBound, Q5_0) { check_symmetric(kQ5_0, 16); }
TEST(QuantBlock32ErrorBound, Q4_1) { check_affine(kQ4_1, 15); }
TEST(QuantBlock32ErrorBound, Q5_1) { check_affine(kQ5_1, 31); }

TEST(QuantBlock32ErrorBound, Q8_0) {
    // d = amax / 127 and q = roundf(x / d): error <= d/2, plus 127·|d16 - d| from fp16.
    for_each_round_trip(kQ8_0, [](const float * x, const float * y, const uint8_t * block) {
        double amax = 0;
        for (int e = 0; e < 32; ++e) {
            amax = std::max(amax, double(std::fabs(x[e])));
        }
        const double d = amax / 127;
        ASSERT_LE(std::fabs(fp16_to_fp32(half_at(block)) - d), fp16_rounding(d));
        for (int e = 0; e < 32; ++e) {
            ASSERT_LE(std::fabs(x[e] - y[e]), 0.5 * d + 127 * fp16_rounding(d) + 1e-6 * amax) << "x=" << x[e];
        }
    });
}

TEST(QuantBlock32ErrorBound, IQ4_NL) {
    // Indices come from d0 = max / -127, which maps x to t = x/d0 in [-127, 127]: the nearest table
    // entry is at most 12 away (largest gap 24, between 89 and 113) or 14 (above 113). The stored d
    // replaces d0, moving each value by |q|·|d - d0| <= 127·|d16 - d0|. And d is the least-squares
    // scale for those indices with weights x²: its weighted squared error is no larger than d0's
    // (up to the fp16 rounding of d).
    for_each_round_trip(kIQ4_NL, [](const float * x, const float * y, const uint8_t * block) {
        double amax = 0;
        double max  = 0;
        for (int e = 0; e < 32; ++e) {
            if (std::fabs(x[e]) > amax) {
                amax = std::fabs(x[e]);
                max  = x[e];
            }
        }
        const double d0  = max / -127;
        const double d16 = fp16_to_fp32(half_at(block));
        double       error_d = 0, error_d0 = 0, sum_wq2 = 0;
        for (int e = 0; e < 32; ++e) {
            ASSERT_LE(std::fabs(x[e] - y[e]), 14 * std::fabs(d0) + 127 * std::fabs(d16 - d0) + 1e-6 * amax);
            const double q = y[e] / d16;  // the table value, exactly
            const double w = double(x[e]) * x[e];
            error_d += w * (x[e] - q * d16) * (x[e] - q * d16);
            error_d0 += w * (x[e] - q * d0) * (x[e] - q * d0);
            sum_wq2 += w * q * q;
        }
        // f(d) = f(d*) + Σwq²·(d - d*)², and |d16 - d*| <= fp16 rounding.
        const double slack = sum_wq2 * fp16_rounding(d16) * fp16_rounding(d16) * 1.01 + 1e-9 * error_d0;
        ASSERT_LE(error_d, error_d0 + slack) << "d16=" << d16 << " d0=" << d0;
    });
}

TEST(QuantBlock32ErrorBound, MXFP4) {
    // d = 2^(e-128) puts amax in [8d, 16d) (up to log2f rounding just below a power of two), and each
    // value is a nearest point of the grid kvalues_mxfp4·d, so the error is at most 2d below 12d.
    for_each_round_trip(kMXFP4, [](const float * x, const float * y, const uint8_t * block) {
        const double d    = std::ldexp(1.0, block[0] - 128);
        double       amax = 0;
        for (int e = 0; e < 32; ++e) {
            amax = std::max(amax, double(std::fabs(x[e])));
        }
        ASSERT_GE(amax, 8 * d * (1 - 0x1p-20));
        ASSERT_LT(amax, 16 * d);
        for (int e = 0; e < 32; ++e) {
            double nearest = std::numeric_limits<double>::infinity();
            for (const int8_t v : kvalues_mxfp4) {
                nearest = std::min(nearest, std::fabs(x[e] - v * d));
            }
            ASSERT_EQ(std::fabs(x[e] - y[e]), nearest) << "x=" << x[e] << " d=" << d;
            ASSERT_LE(nearest, std::max(2 * d, std::fabs(x[e]) - 12 * d));
        }
    });
}

TEST(QuantBlock32ErrorBound, Q1_0) {
    // Every value is sign(x)·d16 with d16 = fp16(mean |x|) (the fp32 sum of 128 terms adds < 2^-16 relative).
    for_each_round_trip(kQ1_0, [](const float * x, const float * y, const uint8_t * block) {
        double sum = 0;
        for (int e = 0; e < 128; ++e) {
            sum += std::fabs(x[e]);
        }
        const double mean = sum / 128;
        const float  d16  = fp16_to_fp32(half_at(block));
        ASSERT_LE(std::fabs(d16 - mean), fp16_rounding(mean) + mean * 0x1p-16);
        for (int e = 0; e < 128; ++e) {
            ASSERT_EQ(y[e], x[e] >= 0 ? d16 : -d16);
        }
    });
}

TEST(QuantBlock32ErrorBound, Q2_0) {
    // d = amax, values in {-d16, 0, d16}, q = roundf(x/d): error <= d/2 + |d16 - d|.
    for_each_round_trip(kQ2_0, [](const float * x, const float * y, const uint8_t * block) {
        double amax = 0;
        for (int e = 0; e < 64; ++e) {
            amax = std::max(amax, double(std::fabs(x[e])));
        }
        const float d16 = fp16_to_fp32(half_at(block));
        ASSERT_LE(std::fabs(d16 - amax), fp16_rounding(amax));
        for (int e = 0; e < 64; ++e) {
            ASSERT_TRUE(y[e] == -d16 || y[e] == 0 || y[e] == d16) << y[e];
            ASSERT_LE(std::fabs(x[e] - y[e]), 0.5 * amax + fp16_rounding(amax) + 1e-6 * amax);
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Fast paths against the references, bit for bit

enum class Shape {
    normal,        // normal values, spread 2^[-20, 20)
    wide_range,    // magnitudes 2^[-30, 30) within one block
    zeros,         // +0 only
    signed_zeros,  // +0 and -0
    one_nonzero,   // signed zeros and one value, so min or max is a zero
    subnormal,     // fp32 subnormals (the scale's inverse overflows)
    tiny,          // around 1e-38: subnormal scales whose inverse is finite
    huge,          // near fp16 overflow of d, and near FLT_MAX (max - min overflows)
    ties,          // two magnitudes, random signs: ties for the extreme and for rounding
    halves,        // multiples of 0.5·2^k with amax a multiple of the level count: exact .5 cases
    non_finite,    // normal values with inf and NaN mixed in
    random_bits,   // any 32-bit pattern
    count,
};

float random_float_bits(std::mt19937 & rng) { return std::bit_cast<float>(uint32_t(rng())); }

void fill_block(Shape shape, std::mt19937 & rng, float * x, int n) {
    std::normal_distribution<float>       normal;
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::uniform_int_distribution<int>    position(0, n - 1);
    const auto                            sign = [&] { return rng() & 1 ? -1.0f : 1.0f; };
    switch (shape) {
    case Shape::normal: {
        const float scale = std::exp2(std::floor(unit(rng) * 40 - 20));
        for (int e = 0; e < n; ++e) {
            x[e] = normal(rng) * scale;
        }
        break;
    }
    case Shape::wide_range:
        for (int e = 0; e < n; ++e) {
            x[e] = sign() * std::exp2(unit(rng) * 60 - 30);
        }
        break;
    case Shape::zeros:
        std::fill(x, x + n, 0.0f);
        break;
    case Shape::signed_zeros:
    case Shape::one_nonzero:
        for (int e = 0; e < n; ++e) {
            x[e] = sign() * 0.0f;
        }
        if (shape == Shape::one_nonzero) {
            x[position(rng)] = normal(rng);
        }
        break;
    case Shape::subnormal:
        for (int e = 0; e < n; ++e) {
            x[e] = std::bit_cast<float>(uint32_t(rng()) & 0x807fffffu);
        }
        break;
    case Shape::tiny:
        for (int e = 0; e < n; ++e) {
            x[e] = sign() * std::exp2(unit(rng) * 14 - 136);  // 2^[-136, -122)
        }
        break;
    case Shape::huge: {
        const float bases[] = {65504.0f, 65520.0f, 8 * 65504.0f, 8 * 65520.0f, 16 * 65520.0f, 127 * 65520.0f,
                               0.5f * std::numeric_limits<float>::max(), std::numeric_limits<float>::max()};
        const float base    = bases[rng() % std::size(bases)];
        for (int e = 0; e < n; ++e) {
            x[e] = sign() * base * (1 - unit(rng) * (rng() & 1 ? 1e-6f : 1.0f));
        }
        break;
    }
    case Shape::ties: {
        const float a = std::fabs(normal(rng)) + 0.1f;
        const float b = rng() & 1 ? a : a * unit(rng);
        for (int e = 0; e < n; ++e) {
            x[e] = sign() * (rng() & 1 ? a : b);
        }
        break;
    }
    case Shape::halves: {
        const int   levels[] = {1, 2, 8, 15, 16, 31, 127};
        const int   amax     = levels[rng() % std::size(levels)];
        const float unit_2k  = std::exp2(float(int(rng() % 9) - 4));
        for (int e = 0; e < n; ++e) {
            x[e] = float(int(rng() % uint32_t(4 * amax + 1)) - 2 * amax) * 0.5f * unit_2k;
        }
        x[position(rng)] = sign() * float(amax) * unit_2k;
        break;
    }
    case Shape::non_finite:
        for (int e = 0; e < n; ++e) {
            x[e] = normal(rng);
        }
        for (int i = 0; i < 3; ++i) {
            const float specials[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                      std::numeric_limits<float>::quiet_NaN(), std::bit_cast<float>(0xff800001u)};
            x[position(rng)] = specials[rng() % 4];
        }
        break;
    case Shape::random_bits:
        for (int e = 0; e < n; ++e) {
            x[e] = random_float_bits(rng);
        }
        break;
    case Shape::count:
        break;
    }
}

class QuantBlock32FastPath : public ::testing::TestWithParam<Kernels> {};

TEST_P(QuantBlock32FastPath, QuantizeMatchesReference) {
    const Kernels & k = GetParam();
    std::mt19937    rng(42);
    constexpr int   kBlocksPerShape = 2000;
    const int       shapes          = int(Shape::count);
    std::vector<float> x(size_t(shapes * kBlocksPerShape) * size_t(k.block));
    for (int b = 0; b < shapes * kBlocksPerShape; ++b) {
        fill_block(Shape(b % shapes), rng, &x[size_t(b) * size_t(k.block)], k.block);
    }
    const Bytes ref  = quantize(k.quantize_ref, k, x);
    const Bytes fast = quantize(k.quantize, k, x);
    for (size_t b = 0; b < ref.size() / k.bytes; ++b) {
        ASSERT_TRUE(std::equal(&ref[b * k.bytes], &ref[(b + 1) * k.bytes], &fast[b * k.bytes]))
            << k.name << " block " << b << " shape " << b % size_t(shapes);
    }
}

INSTANTIATE_TEST_SUITE_P(VectorQuantizers, QuantBlock32FastPath, ::testing::ValuesIn(kVectorQuantizers),
                         [](const auto & info) { return std::string(info.param.name); });

class QuantBlock32FastDequantize : public ::testing::TestWithParam<Kernels> {};

// fp16 fields worth covering on purpose: zeros, subnormals, the largest finite, infinities, NaNs.
const uint16_t kSpecialHalves[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF,
                                   0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0x3C00};

TEST_P(QuantBlock32FastDequantize, MatchesReference) {
    // Random bytes, so every code and every scale occurs. The one exception: a Q4_1/Q5_1 block whose
    // m is NaN and whose q*d can be NaN too (d NaN, or d infinite and q = 0), where x86 propagates
    // whichever NaN the compiler put first in q*d + m.
    const Kernels & k = GetParam();
    std::mt19937    rng(7);
    constexpr int   kBlocks = 16384;
    Bytes           q(kBlocks * k.bytes);
    for (uint8_t & byte : q) {
        byte = uint8_t(rng());
    }
    const bool   has_fp16_scale = k.dequantize != kMXFP4.dequantize;
    const bool   has_fp16_min   = k.dequantize == kQ4_1.dequantize || k.dequantize == kQ5_1.dequantize;
    const auto   is_nan         = [](uint16_t h) { return (h & 0x7fff) > 0x7c00; };
    for (size_t b = 0; b < kBlocks; ++b) {
        uint8_t * block = &q[b * k.bytes];
        if (has_fp16_scale && b < std::size(kSpecialHalves) * std::size(kSpecialHalves)) {
            const uint16_t d = kSpecialHalves[b % std::size(kSpecialHalves)];
            const uint16_t m = kSpecialHalves[b / std::size(kSpecialHalves)];
            std::memcpy(block, &d, 2);
            if (has_fp16_min) {
                std::memcpy(block + 2, &m, 2);
            }
        }
        if (has_fp16_min) {
            while ((half_at(block) & 0x7c00) == 0x7c00 && is_nan(half_at(block + 2))) {
                block[3] = uint8_t(rng());
            }
        }
    }
    if (!has_fp16_scale) {
        for (int e = 0; e < 256; ++e) {  // MXFP4: every scale byte
            q[size_t(e) * k.bytes] = uint8_t(e);
        }
    }
    const std::vector<float> ref  = dequantize(k.dequantize_ref, k, q);
    const std::vector<float> fast = dequantize(k.dequantize, k, q);
    for (size_t i = 0; i < ref.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(ref[i]), std::bit_cast<uint32_t>(fast[i]))
            << k.name << " block " << i / size_t(k.block) << " element " << i % size_t(k.block);
    }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, QuantBlock32FastDequantize, ::testing::ValuesIn(kAllTypes),
                         [](const auto & info) { return std::string(info.param.name); });

} // namespace
} // namespace hexnpu
