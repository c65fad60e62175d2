// K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K): dequantization known answers and element placement
// worked out by hand from formats.md §1.3/§4.4, hand-checked cases of the scale searches,
// quantization properties (error bounds, rounding to the nearest level, range ends, zero and
// constant blocks), and the fast paths against the scalar references bit for bit.
#include "core/fp16.h"
#include "core/quant-blocks.h"
#include "core/quant-kquant-search.h"
#include "core/quants.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace hexnpu;

namespace {

constexpr uint16_t kFp16One  = 0x3C00;
constexpr uint16_t kFp16Half = 0x3800;

using Values = std::array<float, QK_K>;

template <typename Block>
Values dequantize(void (*fn)(const void *, float *, int64_t), const Block & block) {
    Values y;
    fn(&block, y.data(), QK_K);
    return y;
}

// ---- Test-side decoders, written from formats.md §1.3 ------------------------------------------

// 6-bit Q3_K scale storage: low nibble in byte t (t < 8) or the high nibble of byte t − 8; top
// two bits in byte 8 + t % 4 at bit 2·(t / 4).
void set_q3k_raw_scale(uint8_t * scales, int t, int raw) {
    if (t < 8) {
        scales[t] = uint8_t((scales[t] & 0xF0) | (raw & 15));
    } else {
        scales[t - 8] = uint8_t((scales[t - 8] & 0x0F) | (raw & 15) << 4);
    }
    const int shift = 2 * (t / 4);
    scales[8 + t % 4] = uint8_t((scales[8 + t % 4] & ~(3 << shift)) | (raw >> 4) << shift);
}

int q3k_signed_scale(const uint8_t * scales, int t) {
    const int lo4 = t < 8 ? scales[t] & 15 : scales[t - 8] >> 4;
    const int hi2 = (scales[8 + t % 4] >> 2 * (t / 4)) & 3;
    return (lo4 | hi2 << 4) - 32;
}

// Q4_K/Q5_K (sc, m) storage, "in words" from formats.md: bytes 0..3 hold sc0..3 plus the top two
// bits of sc4..7, bytes 4..7 hold m0..3 plus the top two bits of m4..7, bytes 8..11 hold the low
// nibbles of sc4..7 (low half) and m4..7 (high half).
void set_q4k_scale_min(uint8_t * S, int t, int sc, int m) {
    if (t < 4) {
        S[t]     = uint8_t((S[t] & 0xC0) | sc);
        S[t + 4] = uint8_t((S[t + 4] & 0xC0) | m);
    } else {
        S[t + 4] = uint8_t((sc & 15) | (m & 15) << 4);
        S[t - 4] = uint8_t((S[t - 4] & 0x3F) | (sc >> 4) << 6);
        S[t]     = uint8_t((S[t] & 0x3F) | (m >> 4) << 6);
    }
}

std::array<int, 2> q4k_scale_min(const uint8_t * S, int t) {
    if (t < 4) {
        return {S[t] & 63, S[t + 4] & 63};
    }
    return {(S[t + 4] & 15) | (S[t - 4] >> 6) << 4, (S[t + 4] >> 4) | (S[t] >> 6) << 4};
}

// Reconstruction levels of one sub-block: x̂ = dl·q − ml for q in [qmin, qmax].
struct Levels {
    float dl;
    float ml;
    int   qmin;
    int   qmax;
};

Levels q2k_levels(const block_q2_K & b, int t) {
    return {fp16_to_fp32(b.d) * float(b.scales[t] & 15), fp16_to_fp32(b.dmin) * float(b.scales[t] >> 4), 0, 3};
}
Levels q3k_levels(const block_q3_K & b, int t) {
    return {fp16_to_fp32(b.d) * float(q3k_signed_scale(b.scales, t)), 0.f, -4, 3};
}
Levels q4k_levels(const block_q4_K & b, int t) {
    const auto [sc, m] = q4k_scale_min(b.scales, t);
    return {fp16_to_fp32(b.d) * float(sc), fp16_to_fp32(b.dmin) * float(m), 0, 15};
}
Levels q5k_levels(const block_q5_K & b, int t) {
    const auto [sc, m] = q4k_scale_min(b.scales, t);
    return {fp16_to_fp32(b.d) * float(sc), fp16_to_fp32(b.dmin) * float(m), 0, 31};
}
Levels q6k_levels(const block_q6_K & b, int t) { return {fp16_to_fp32(b.d) * float(b.scales[t]), 0.f, -32, 31}; }

std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.f) {
    std::mt19937                    rng(seed);
    std::normal_distribution<float> dist(0.f, sigma);
    std::vector<float>              x(n);
    for (float & v : x) {
        v = dist(rng);
    }
    return x;
}

// A test signal that is the same on every platform: xorshift32 bits turned into floats by IEEE
// operations only (no libm), in shapes that exercise the searches' corner cases.
class Signal {
public:
    explicit Signal(uint32_t seed) : state_(seed) {}

    uint32_t bits() {
        state_ ^= state_ << 13;
        state_ ^= state_ >> 17;
        state_ ^= state_ << 5;
        return state_;
    }
    float uniform() { return float(bits() >> 8) * 0x1p-24f; }  // [0, 1)
    float bell() { return uniform() + uniform() + uniform() + uniform() - 2.f; }

    // Block b of a row: the shape cycles through ten kinds.
    void fill_block(int b, float * x) {
        const float scale = float(1 << (b % 7)) * 0.125f;
        for (int e = 0; e < 256; ++e) {
            const float v = bell() * scale;
            switch (b % 10) {
            case 0: x[e] = v; break;
            case 1: x[e] = (bits() & 15) == 0 ? 8.f * v : v; break;                 // outliers
            case 2: x[e] = (v < 0 ? -v : v) + 0.25f; break;                          // all positive
            case 3: x[e] = -(v < 0 ? -v : v) - 0.1f; break;                          // all negative
            case 4: x[e] = (bits() & 3) == 0 ? v : 0.f; break;                       // sparse
            case 5: x[e] = v * float(1 << (e / 16 % 8)) * 0x1p-4f; break;            // sub-block magnitudes
            case 6: x[e] = float(int(v * 8.f)) * 0.25f; break;                       // coarse grid, ties
            case 7: x[e] = e == 0 ? v : x[0]; break;                                 // constant
            case 8: x[e] = v * 1e-7f; break;                                         // tiny
            default: x[e] = e / 16 == b % 16 ? 0.f : v; break;                       // one zero sub-block
            }
        }
    }

private:
    uint32_t state_;
};

uint64_t fnv1a(const void * data, size_t bytes, uint64_t h = 0xcbf29ce484222325ull) {
    const auto * p = static_cast<const uint8_t *>(data);
    for (size_t i = 0; i < bytes; ++i) {
        h = (h ^ p[i]) * 0x100000001b3ull;
    }
    return h;
}

// ---- Per-type table for the property tests ------------------------------------------------------

struct KQuantType {
    std::string name;
    size_t      block_bytes;
    int         sub_block;  // elements per scale
    void (*dequantize_ref)(const void *, float *, int64_t);
    void (*dequantize_fast)(const void *, float *, int64_t);
    void (*quantize_ref)(const float *, void *, int64_t);
    void (*quantize_fast)(const float *, void *, int64_t);
    Levels (*levels)(const void * block, int t);
    size_t fp16_offset;  // the d (and dmin) fields
    int    fp16_count;
    // What GGML gives on the Signal test row (see MatchesGgmlOnTheTestSignal).
    uint64_t ggml_quantized_hash;
    uint64_t ggml_dequantized_hash;
    uint64_t ggml_random_bytes_hash;
    float max_relative_rmse;  // on N(0, 1) data; measured values are given in kTypes
};

void PrintTo(const KQuantType & type, std::ostream * os) { *os << type.name; }

template <typename Block, Levels (*F)(const Block &, int)>
Levels levels_of(const void * block, int t) {
    return F(*static_cast<const Block *>(block), t);
}

// Bounds sit ~10% above the relative RMSE measured on 64 blocks of N(0, 1) data
// (Q2_K 0.2966, Q3_K 0.1511, Q4_K 0.0712, Q5_K 0.0361, Q6_K 0.0176).
const KQuantType kTypes[] = {
    {"q2_K", sizeof(block_q2_K), 16, dequantize_row_q2_K_ref, dequantize_row_q2_K, quantize_row_q2_K_ref,
     quantize_row_q2_K, levels_of<block_q2_K, q2k_levels>, offsetof(block_q2_K, d), 2,
     0xb1d612b2a6e05acaull, 0xca22db156becb3d0ull, 0x24c89716bc6ceafaull, 0.33f},
    {"q3_K", sizeof(block_q3_K), 16, dequantize_row_q3_K_ref, dequantize_row_q3_K, quantize_row_q3_K_ref,
     quantize_row_q3_K, levels_of<block_q3_K, q3k_levels>, offsetof(block_q3_K, d), 1,
     0x85802486ae1165c9ull, 0x2920ad5eeb6c6429ull, 0xca226b8ff1b2555full, 0.17f},
    {"q4_K", sizeof(block_q4_K), 32, dequantize_row_q4_K_ref, dequantize_row_q4_K, quantize_row_q4_K_ref,
     quantize_row_q4_K, levels_of<block_q4_K, q4k_levels>, offsetof(block_q4_K, d), 2,
     0x6c4c362e1bac40f1ull, 0x8114680da3a4e7caull, 0x0093214497aa49d5ull, 0.08f},
    {"q5_K", sizeof(block_q5_K), 32, dequantize_row_q5_K_ref, dequantize_row_q5_K, quantize_row_q5_K_ref,
     quantize_row_q5_K, levels_of<block_q5_K, q5k_levels>, offsetof(block_q5_K, d), 2,
     0x04861637250fad75ull, 0x286353c113156ac2ull, 0xbdbc4a05c5a58178ull, 0.04f},
    {"q6_K", sizeof(block_q6_K), 16, dequantize_row_q6_K_ref, dequantize_row_q6_K, quantize_row_q6_K_ref,
     quantize_row_q6_K, levels_of<block_q6_K, q6k_levels>, offsetof(block_q6_K, d), 1,
     0x3b93bc48c921c39eull, 0x585df82476fb5d61ull, 0x3ce2f3f3bbfba417ull, 0.02f},
};

// Random blocks whose fp16 fields are finite (an inf/NaN exponent is moved down): every code and
// scale pattern appears, but no NaN payload enters a bitwise comparison.
std::vector<uint8_t> random_blocks(const KQuantType & type, int blocks, Signal & signal) {
    std::vector<uint8_t> bytes(size_t(blocks) * type.block_bytes);
    for (uint8_t & c : bytes) {
        c = uint8_t(signal.bits() >> 24);
    }
    for (size_t b = 0; b < size_t(blocks); ++b) {
        for (int f = 0; f < type.fp16_count; ++f) {
            uint8_t & high_byte = bytes[b * type.block_bytes + type.fp16_offset + 2 * size_t(f) + 1];
            if ((high_byte & 0x7C) == 0x7C) {
                high_byte &= 0xBF;  // exponent 31 → 15
            }
        }
    }
    return bytes;
}

class KQuant : public ::testing::TestWithParam<KQuantType> {
protected:
    std::vector<uint8_t> quantize(const std::vector<float> & x) const {
        std::vector<uint8_t> q(x.size() / QK_K * GetParam().block_bytes);
        GetParam().quantize_ref(x.data(), q.data(), int64_t(x.size()));
        return q;
    }
    std::vector<float> dequantize(const std::vector<uint8_t> & q) const {
        std::vector<float> y(q.size() / GetParam().block_bytes * QK_K);
        GetParam().dequantize_ref(q.data(), y.data(), int64_t(y.size()));
        return y;
    }
};

} // namespace

// ---- Scale searches ------------------------------------------------------------------------------

// The rounding every K-quant search is built on (quant-common.h).
TEST(KQuantSearch, NearestIntRoundsHalfToEven) {
    EXPECT_EQ(nearest_int(0.5f), 0);
    EXPECT_EQ(nearest_int(1.5f), 2);
    EXPECT_EQ(nearest_int(2.5f), 2);
    EXPECT_EQ(nearest_int(-0.5f), 0);
    EXPECT_EQ(nearest_int(-1.5f), -2);
    EXPECT_EQ(nearest_int(-2.5f), -2);
    EXPECT_EQ(nearest_int(2.4999998f), 2);
    EXPECT_EQ(nearest_int(-3.7f), -4);
    EXPECT_EQ(nearest_int(-0.0f), 0);
    EXPECT_EQ(nearest_int(4194303.f), 4194303);
    EXPECT_EQ(nearest_int(-4194303.f), -4194303);
}

// x = {−1, 0, 1, 2} with 4 levels: min −1, max 2, step 1 fits exactly (error 0), and no
// candidate of the search can be strictly better.
TEST(KQuantSearch, Qkx2KeepsAnExactFirstGuess) {
    const float x[4] = {-1, 0, 1, 2};
    const float w[4] = {1, 1, 1, 1};
    uint8_t     L[4];
    float       min   = -1;
    const float scale = kquant::make_qkx2_quants(4, 3, x, w, L, &min, {-0.5f, 0.1f, 15, true});
    EXPECT_EQ(scale, 1.f);
    EXPECT_EQ(min, 1.f);
    EXPECT_EQ((std::vector<int>(L, L + 4)), (std::vector<int>{0, 1, 2, 3}));
}

// x = {0, 1, 2, 2}: the first guess spreads [0, 2] over 3 steps (codes 0, 2, 3, 3, step 2/3, error
// (1/3)²). The first search step, iscale = (−1 + 3)/2 = 1, gives codes 0, 1, 2, 2 whose least-squares
// fit is scale (4·9 − 5·5)/11 = 1 and min (9·5 − 5·9)/11 = 0: exact, so it wins.
TEST(KQuantSearch, Qkx2SearchFindsABetterStep) {
    const float x[4] = {0, 1, 2, 2};
    const float w[4] = {1, 1, 1, 1};
    uint8_t     L[4];
    float       min   = -1;
    const float scale = kquant::make_qkx2_quants(4, 3, x, w, L, &min, {-1.f, 0.5f, 2, false});
    EXPECT_EQ(scale, 1.f);
    EXPECT_EQ(min, 0.f);
    EXPECT_EQ((std::vector<int>(L, L + 4)), (std::vector<int>{0, 1, 2, 2}));
}

// With no search steps the first guess is returned as is: codes 0, 2, 3, 3 with step 2/3.
TEST(KQuantSearch, Qkx2WithoutStepsReturnsTheFirstGuess) {
    const float x[4] = {0, 1, 2, 2};
    const float w[4] = {1, 1, 1, 1};
    uint8_t     L[4];
    float       min   = -1;
    const float scale = kquant::make_qkx2_quants(4, 3, x, w, L, &min, {-1.f, 0.5f, 0, false});
    EXPECT_EQ(scale, 1.f / (3.f / 2.f));
    EXPECT_EQ(min, 0.f);
    EXPECT_EQ((std::vector<int>(L, L + 4)), (std::vector<int>{0, 2, 3, 3}));
}

// x = {5, 5, 5, 6}: min is forced to 0 (positive group), codes 2, 2, 2, 3 (5·0.5 = 2.5 ties to 2).
// The free least-squares fit would be x = 1·L + 3, a positive offset, so the search falls back to
// a pure scale Σxl/Σl² = 48/21 (error 1.29 < 3 for the first guess).
TEST(KQuantSearch, Qkx2NeverShiftsUp) {
    const float x[4] = {5, 5, 5, 6};
    const float w[4] = {1, 1, 1, 1};
    uint8_t     L[4];
    float       min   = -1;
    const float scale = kquant::make_qkx2_quants(4, 3, x, w, L, &min, {0.f, 0.f, 1, false});
    EXPECT_EQ(scale, 48.f / 21.f);
    EXPECT_EQ(min, 0.f);
    EXPECT_EQ((std::vector<int>(L, L + 4)), (std::vector<int>{2, 2, 2, 3}));
}

TEST(KQuantSearch, Qkx2ConstantGroups) {
    const float w[4] = {1, 1, 1, 1};
    uint8_t     L[4] = {9, 9, 9, 9};
    float       min  = 0;
    // All equal and negative: nothing to scale, the min carries the value.
    const float negative[4] = {-1.5f, -1.5f, -1.5f, -1.5f};
    EXPECT_EQ(kquant::make_qkx2_quants(4, 3, negative, w, L, &min, {-0.5f, 0.1f, 15, true}), 0.f);
    EXPECT_EQ(min, 1.5f);
    EXPECT_EQ((std::vector<int>(L, L + 4)), (std::vector<int>{0, 0, 0, 0}));
    // All equal and positive: min 0, every element on the top code.
    const float positive[4] = {0.75f, 0.75f, 0.75f, 0.75f};
    EXPECT_EQ(kquant::make_qkx2_quants(4, 3, positive, w, L, &min, {-0.5f, 0.1f, 15, true}), 0.25f);
    EXPECT_EQ(min, 0.f);
    EXPECT_EQ((std::vector<int>(L, L + 4)), (std::vector<int>{3, 3, 3, 3}));
}

// x = {−4, 4, 4, 4}, 8 levels [−4, 3]: the first guess (iscale 1) gives −4, 3, 3, 3. Moving the
// first code to round(−4·Σl²/Σxl of the others) = round(−4·432/576) = −3 raises the fit from
// 832²/688 to 768²/576, and then every element sits exactly on ±3 at scale 4/3.
TEST(KQuantSearch, Q3RefinesSingleCodes) {
    const float x[4] = {-4, 4, 4, 4};
    int8_t      L[4];
    EXPECT_EQ(kquant::make_q3_quants(4, 4, x, L), 768.f / 576.f);
    EXPECT_EQ((std::vector<int>(L, L + 4)), (std::vector<int>{1, 7, 7, 7}));
}

// x = {1, 2, 3, 4}: the largest element is positive, so the scale is −1 and the codes are
// −1 .. −4 (stored +4); the fit is exact.
TEST(KQuantSearch, Q3ExactFitWithNegativeScale) {
    const float x[4] = {1, 2, 3, 4};
    int8_t      L[4];
    EXPECT_EQ(kquant::make_q3_quants(4, 4, x, L), -1.f);
    EXPECT_EQ((std::vector<int>(L, L + 4)), (std::vector<int>{3, 2, 1, 0}));
}

// x = {−4, 3.5, 3.5, 3.5}, 8 levels: iscale 1 gives −4, 3, 3, 3 (3.5 ties to 4, clamped) with
// (Σwxl)²/Σwl² = 641.875²/586.75 ≈ 702.2. iscale (4 − 0.9)/4 gives −3, 3, 3, 3 with
// 577.875²/474.75 ≈ 703.4, which is better; no other candidate beats it.
TEST(KQuantSearch, QxSearchesTheInverseScale) {
    const float x[4] = {-4, 3.5f, 3.5f, 3.5f};
    int8_t      L[4];
    EXPECT_EQ(kquant::make_qx_quants(4, 4, x, L), 577.875f / 474.75f);
    EXPECT_EQ((std::vector<int>(L, L + 4)), (std::vector<int>{1, 7, 7, 7}));
}

TEST(KQuantSearch, SymmetricSearchesTreatTinyGroupsAsZero) {
    const float x[4] = {0.f, 1e-16f, -9e-16f, 0.f};
    int8_t      L[4] = {5, 5, 5, 5};
    EXPECT_EQ(kquant::make_q3_quants(4, 4, x, L), 0.f);
    EXPECT_EQ((std::vector<int>(L, L + 4)), (std::vector<int>{0, 0, 0, 0}));
    std::fill(L, L + 4, int8_t(5));
    EXPECT_EQ(kquant::make_qx_quants(4, 32, x, L), 0.f);
    EXPECT_EQ((std::vector<int>(L, L + 4)), (std::vector<int>{0, 0, 0, 0}));
}

// ---- Dequantization known answers and element placement ---------------------------------------

// formats.md §4.4: d = 1, dmin = 0.5, scale byte 0x3A (sc 10, m 3), q = 2 → 1·10·2 − 0.5·3 = 18.5.
// Every element e: qs byte 32·(e >> 7) + e % 32, bits 2·((e >> 5) & 3); scale byte e >> 4.
TEST(Q2K, KnownAnswerAtEveryElement) {
    for (int e = 0; e < QK_K; ++e) {
        block_q2_K b{};
        b.d                            = kFp16One;
        b.dmin                         = kFp16Half;
        b.scales[e >> 4]               = 0x3A;
        b.qs[32 * (e >> 7) + (e & 31)] = uint8_t(2 << 2 * ((e >> 5) & 3));
        const Values y                 = dequantize(dequantize_row_q2_K_ref, b);
        for (int i = 0; i < QK_K; ++i) {
            const float expected = i == e ? 18.5f : (i >> 4) == (e >> 4) ? -1.5f : 0.f;
            ASSERT_EQ(y[i], expected) << "code at " << e << ", element " << i;
        }
    }
}

// Sweep every sub-block t and every raw 6-bit scale; all other sub-blocks hold raw 32 (S = 0).
// With d = 1 and all codes −4 (qs = 0, hmask = 0), sub-block t reads −4·(raw − 32).
TEST(Q3K, SignedScaleDecoding) {
    for (int t = 0; t < 16; ++t) {
        for (int raw = 0; raw < 64; ++raw) {
            block_q3_K b{};
            b.d = kFp16One;
            for (int s = 0; s < 16; ++s) {
                set_q3k_raw_scale(b.scales, s, s == t ? raw : 32);
            }
            const Values y = dequantize(dequantize_row_q3_K_ref, b);
            for (int i = 0; i < QK_K; ++i) {
                const float expected = (i >> 4) == t ? -4.f * float(raw - 32) : 0.f;
                ASSERT_EQ(y[i], expected) << "sub-block " << t << ", raw " << raw << ", element " << i;
            }
        }
    }
}

// formats.md §4.4: d = 0x1C00 (2^−8) with S = −32 gives a step of −0.125, exact.
TEST(Q3K, MostNegativeScale) {
    block_q3_K b{};
    b.d = 0x1C00;
    for (int s = 0; s < 16; ++s) {
        set_q3k_raw_scale(b.scales, s, 0);
    }
    b.hmask[0] = 1;     // element 0: high bit set, low2 3 → q = 3
    b.qs[0]    = 3;
    b.qs[1]    = 1;     // element 1: high bit clear, low2 1 → q = −3
    const Values y = dequantize(dequantize_row_q3_K_ref, b);
    EXPECT_EQ(y[0], -0.375f);
    EXPECT_EQ(y[1], 0.375f);
    EXPECT_EQ(y[2], 0.5f);  // q = −4
}

// All scales S = 1 and d = 1, so each element reads its code. Baseline: every high bit set and
// every low2 0 (q = 0). Element e: low2 in qs[32·(e >> 7) + e % 32] bits 2·((e >> 5) & 3), high
// bit in hmask[e % 32] bit e / 32.
TEST(Q3K, CodePlacementAtEveryElement) {
    block_q3_K base{};
    base.d = kFp16One;
    for (int s = 0; s < 16; ++s) {
        set_q3k_raw_scale(base.scales, s, 33);
    }
    std::memset(base.hmask, 0xFF, sizeof(base.hmask));
    for (int e = 0; e < QK_K; ++e) {
        block_q3_K three = base;
        three.qs[32 * (e >> 7) + (e & 31)] = uint8_t(3 << 2 * ((e >> 5) & 3));
        block_q3_K minus_four = base;
        minus_four.hmask[e & 31] = uint8_t(~(1 << (e >> 5)));
        const Values y3 = dequantize(dequantize_row_q3_K_ref, three);
        const Values y4 = dequantize(dequantize_row_q3_K_ref, minus_four);
        for (int i = 0; i < QK_K; ++i) {
            ASSERT_EQ(y3[i], i == e ? 3.f : 0.f) << "element " << e;
            ASSERT_EQ(y4[i], i == e ? -4.f : 0.f) << "element " << e;
        }
    }
}

// Hand-packed scale bytes for sc = {1, 2, 3, 63, 58, 17, 32, 47}, m = {0, 5, 63, 9, 23, 40, 1, 62}:
//   bytes 0..3  = sc0..3 | (sc4..7 >> 4) << 6   = 0xC1 0x42 0x83 0xBF
//   bytes 4..7  = m0..3  | (m4..7 >> 4) << 6    = 0x40 0x85 0x3F 0xC9
//   bytes 8..11 = (sc4..7 & 15) | (m4..7 & 15) << 4 = 0x7A 0x81 0x10 0xEF
// With d = 1, dmin = 0.5 and every code 1, sub-block t reads sc − m/2.
TEST(Q4K, HandPackedScalesAndMins) {
    const uint8_t scales[12] = {0xC1, 0x42, 0x83, 0xBF, 0x40, 0x85, 0x3F, 0xC9, 0x7A, 0x81, 0x10, 0xEF};
    const float   expected[8] = {1.f, -0.5f, -28.5f, 58.5f, 46.5f, -3.f, 31.5f, 16.f};
    block_q4_K    b4{};
    b4.d    = kFp16One;
    b4.dmin = kFp16Half;
    std::memcpy(b4.scales, scales, 12);
    std::memset(b4.qs, 0x11, sizeof(b4.qs));
    block_q5_K b5{};
    b5.d    = kFp16One;
    b5.dmin = kFp16Half;
    std::memcpy(b5.scales, scales, 12);
    std::memset(b5.qs, 0x11, sizeof(b5.qs));
    const Values y4 = dequantize(dequantize_row_q4_K_ref, b4);
    const Values y5 = dequantize(dequantize_row_q5_K_ref, b5);
    for (int i = 0; i < QK_K; ++i) {
        ASSERT_EQ(y4[i], expected[i >> 5]) << "element " << i;
        ASSERT_EQ(y5[i], expected[i >> 5]) << "element " << i;
    }
}

// Every (sc, m) pair in every sub-block, packed from formats.md's description, with all codes 1
// (x = sc − m/2); the other sub-blocks stay (0, 0).
TEST(Q4K, ScaleMinUnpackingSweep) {
    for (int t = 0; t < 8; ++t) {
        for (int sc = 0; sc < 64; ++sc) {
            for (int m = 0; m < 64; ++m) {
                block_q4_K b{};
                b.d    = kFp16One;
                b.dmin = kFp16Half;
                std::memset(b.qs, 0x11, sizeof(b.qs));
                set_q4k_scale_min(b.scales, t, sc, m);
                const Values y = dequantize(dequantize_row_q4_K_ref, b);
                for (int i = 0; i < QK_K; ++i) {
                    const float expected = (i >> 5) == t ? float(sc) - 0.5f * float(m) : 0.f;
                    ASSERT_EQ(y[i], expected) << "sub-block " << t << ", sc " << sc << ", m " << m;
                }
            }
        }
    }
}

// All sc = 1, d = 1, dmin = 0, so elements read their codes. Element e's nibble: qs[32·(e >> 6) +
// e % 32], high nibble for odd sub-blocks; Q5_K's fifth bit: qh[e % 32], bit e / 32.
TEST(Q4K, CodePlacementAtEveryElement) {
    block_q4_K base{};
    base.d = kFp16One;
    for (int t = 0; t < 8; ++t) {
        set_q4k_scale_min(base.scales, t, 1, 0);
    }
    for (int e = 0; e < QK_K; ++e) {
        block_q4_K b = base;
        b.qs[32 * (e >> 6) + (e & 31)] = uint8_t(5 << 4 * ((e >> 5) & 1));
        const Values y = dequantize(dequantize_row_q4_K_ref, b);
        for (int i = 0; i < QK_K; ++i) {
            ASSERT_EQ(y[i], i == e ? 5.f : 0.f) << "element " << e;
        }
    }
}

TEST(Q5K, CodePlacementAtEveryElement) {
    block_q5_K base{};
    base.d = kFp16One;
    for (int t = 0; t < 8; ++t) {
        set_q4k_scale_min(base.scales, t, 1, 0);
    }
    for (int e = 0; e < QK_K; ++e) {
        block_q5_K high = base;
        high.qh[e & 31] = uint8_t(1 << (e >> 5));
        block_q5_K both = high;
        both.qs[32 * (e >> 6) + (e & 31)] = uint8_t(5 << 4 * ((e >> 5) & 1));
        const Values yh = dequantize(dequantize_row_q5_K_ref, high);
        const Values yb = dequantize(dequantize_row_q5_K_ref, both);
        for (int i = 0; i < QK_K; ++i) {
            ASSERT_EQ(yh[i], i == e ? 16.f : 0.f) << "element " << e;
            ASSERT_EQ(yb[i], i == e ? 21.f : 0.f) << "element " << e;
        }
    }
}

// Q5_K with real scales: d = 0.25 (0x3400), dmin = 1, sc = 3 and m = 2 everywhere; code 31 reads
// 0.75·31 − 2 = 21.25 and code 0 reads −2.
TEST(Q5K, AffineKnownAnswer) {
    block_q5_K b{};
    b.d    = 0x3400;
    b.dmin = kFp16One;
    for (int t = 0; t < 8; ++t) {
        set_q4k_scale_min(b.scales, t, 3, 2);
    }
    b.qs[0] = 0x0F;  // element 0 low nibble 15
    b.qh[0] = 0x01;  // element 0 fifth bit
    const Values y = dequantize(dequantize_row_q5_K_ref, b);
    EXPECT_EQ(y[0], 21.25f);
    for (int i = 1; i < QK_K; ++i) {
        ASSERT_EQ(y[i], -2.f) << "element " << i;
    }
}

// formats.md §4.4: scale −128. With d = 1, code 0 (q = −32) reads 4096 and code 63 (q = 31) reads
// −3968; with d = 0x2E66, d·(−128) = −12.796875 exactly, so code 33 (q = 1) reads exactly that.
TEST(Q6K, MostNegativeScale) {
    block_q6_K b{};
    b.d = kFp16One;
    std::fill(std::begin(b.scales), std::end(b.scales), int8_t(-128));
    b.ql[0] = 0x0F;  // element 0: low4 15
    b.qh[0] = 0x03;  // element 0: hi2 3 → code 63; elements 32, 64, 96 keep code 0
    Values y = dequantize(dequantize_row_q6_K_ref, b);
    EXPECT_EQ(y[0], -3968.f);
    EXPECT_EQ(y[1], 4096.f);

    b.d     = 0x2E66;
    b.ql[0] = 0x01;
    b.qh[0] = 0x02;  // element 0: low4 1, hi2 2 → code 33
    y       = dequantize(dequantize_row_q6_K_ref, b);
    EXPECT_EQ(y[0], -12.796875f);
}

// d = 1, every scale 1; baseline code 32 everywhere (ql 0, every hi2 = 2, qh = 0xAA) reads 0.
// Element e (h = e >> 7, g = (e >> 5) & 3, l = e % 32) gets code 63 → 31: low4 in
// ql[64h + 32·(g & 1) + l] at nibble g >> 1, hi2 in qh[32h + l] at bits 2g.
TEST(Q6K, CodePlacementAtEveryElement) {
    block_q6_K base{};
    base.d = kFp16One;
    std::fill(std::begin(base.scales), std::end(base.scales), int8_t(1));
    std::memset(base.qh, 0xAA, sizeof(base.qh));
    for (int e = 0; e < QK_K; ++e) {
        const int  h = e >> 7, g = (e >> 5) & 3, l = e & 31;
        block_q6_K b = base;
        b.ql[64 * h + 32 * (g & 1) + l] = uint8_t(15 << 4 * (g >> 1));
        b.qh[32 * h + l]                = uint8_t(0xAA | 3 << 2 * g);
        const Values y = dequantize(dequantize_row_q6_K_ref, b);
        for (int i = 0; i < QK_K; ++i) {
            ASSERT_EQ(y[i], i == e ? 31.f : 0.f) << "element " << e;
        }
    }
}

// Each sub-block uses its own scale: scales[t] = t − 8, all codes 33 (q = 1), d = 1.
TEST(Q6K, ScalePerSubBlock) {
    block_q6_K b{};
    b.d = kFp16One;
    for (int t = 0; t < 16; ++t) {
        b.scales[t] = int8_t(t - 8);
    }
    std::memset(b.ql, 0x11, sizeof(b.ql));
    std::memset(b.qh, 0xAA, sizeof(b.qh));
    const Values y = dequantize(dequantize_row_q6_K_ref, b);
    for (int i = 0; i < QK_K; ++i) {
        ASSERT_EQ(y[i], float((i >> 4) - 8)) << "element " << i;
    }
}

// ---- Quantization properties, every type -------------------------------------------------------

TEST_P(KQuant, ZeroBlockIsAllZeroBytes) {
    const std::vector<float>   zeros(2 * QK_K, 0.f);
    const std::vector<uint8_t> q = quantize(zeros);
    EXPECT_TRUE(std::all_of(q.begin(), q.end(), [](uint8_t c) { return c == 0; }));
    for (float v : dequantize(q)) {
        ASSERT_EQ(v, 0.f);
    }
}

// A constant block reconstructs to one value within fp16 rounding of the super-scales.
TEST_P(KQuant, ConstantBlocks) {
    for (const float c : {0.75f, -0.75f, 5.5f, -41.5f}) {
        const std::vector<float> x(QK_K, c);
        const std::vector<float> y = dequantize(quantize(x));
        for (float v : y) {
            ASSERT_EQ(v, y[0]) << "constant " << c;
        }
        EXPECT_NEAR(y[0], c, 2e-3f * std::fabs(c)) << "constant " << c;
    }
}

TEST_P(KQuant, RelativeRmseOnGaussianData) {
    const std::vector<float> x = gaussian(64 * QK_K, 42);
    const std::vector<float> y = dequantize(quantize(x));
    double err = 0, ref = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        err += double(x[i] - y[i]) * double(x[i] - y[i]);
        ref += double(x[i]) * double(x[i]);
    }
    const double relative_rmse = std::sqrt(err / ref);
    EXPECT_LT(relative_rmse, GetParam().max_relative_rmse);
    RecordProperty("relative_rmse", std::to_string(relative_rmse));
}

// After the scales are fixed, every element sits on the level nearest to it: within half a step,
// or on the end level when it lies beyond the range. Sub-blocks with a zero step are skipped.
TEST_P(KQuant, ElementsRoundToTheNearestLevel) {
    const KQuantType &         type = GetParam();
    std::vector<float>         x    = gaussian(16 * QK_K, 7);
    // Vary magnitudes per sub-block and add outliers so some elements clamp.
    for (size_t i = 0; i < x.size(); ++i) {
        x[i] *= std::exp2(float(int(i / 16 % 6)) - 3);
        if (i % 97 == 0) {
            x[i] *= 12;
        }
    }
    const std::vector<uint8_t> q = quantize(x);
    const std::vector<float>   y = dequantize(q);
    int                        checked = 0;
    for (size_t b = 0; b < x.size() / QK_K; ++b) {
        for (int t = 0; t < QK_K / type.sub_block; ++t) {
            const Levels lv = type.levels(q.data() + b * type.block_bytes, t);
            if (lv.dl == 0) {
                continue;
            }
            const float end_lo = std::min(lv.dl * float(lv.qmin) - lv.ml, lv.dl * float(lv.qmax) - lv.ml);
            const float end_hi = std::max(lv.dl * float(lv.qmin) - lv.ml, lv.dl * float(lv.qmax) - lv.ml);
            for (int i = 0; i < type.sub_block; ++i) {
                const size_t e        = b * QK_K + size_t(t * type.sub_block + i);
                const bool   in_range = x[e] >= end_lo && x[e] <= end_hi;
                if (in_range) {
                    ASSERT_LE(std::fabs(x[e] - y[e]), 0.5f * std::fabs(lv.dl) * (1 + 1e-5f)) << "element " << e;
                } else {
                    ASSERT_EQ(y[e], x[e] < end_lo ? end_lo : end_hi) << "element " << e;
                }
                ++checked;
            }
        }
    }
    EXPECT_GT(checked, int(x.size()) / 2);
}

// Rows are independent blocks: quantizing a 3-block row equals quantizing each block alone.
TEST_P(KQuant, BlocksAreIndependent) {
    const std::vector<float>   x   = gaussian(3 * QK_K, 11);
    const std::vector<uint8_t> row = quantize(x);
    for (int b = 0; b < 3; ++b) {
        const std::vector<float>   one(x.begin() + b * QK_K, x.begin() + (b + 1) * QK_K);
        const std::vector<uint8_t> q = quantize(one);
        ASSERT_EQ(0, std::memcmp(q.data(), row.data() + b * GetParam().block_bytes, q.size())) << "block " << b;
    }
}

TEST_P(KQuant, FastPathsMatchReferenceBitForBit) {
    const KQuantType & type    = GetParam();
    constexpr int      kBlocks = 200;

    // Quantization, on data with very different magnitudes per block.
    std::vector<float> x = gaussian(size_t(kBlocks) * QK_K, 5);
    for (size_t i = 0; i < x.size(); ++i) {
        x[i] *= std::exp2(float(int(i / QK_K % 20)) - 10);
    }
    std::vector<uint8_t> q_ref(kBlocks * type.block_bytes), q_fast(kBlocks * type.block_bytes);
    type.quantize_ref(x.data(), q_ref.data(), int64_t(x.size()));
    type.quantize_fast(x.data(), q_fast.data(), int64_t(x.size()));
    ASSERT_EQ(q_ref, q_fast);

    // Blocks holding inf and NaN (with different payloads): garbage in, but the same garbage out
    // of both paths.
    std::vector<float> special = gaussian(2 * QK_K, 8);
    special[5]   = INFINITY;
    special[256] = std::bit_cast<float>(0x7fc01234u);
    special[300] = NAN;
    special[301] = -INFINITY;
    special[310] = std::bit_cast<float>(0xffc00321u);
    std::vector<uint8_t> s_ref(2 * type.block_bytes), s_fast(2 * type.block_bytes);
    type.quantize_ref(special.data(), s_ref.data(), int64_t(special.size()));
    type.quantize_fast(special.data(), s_fast.data(), int64_t(special.size()));
    ASSERT_EQ(s_ref, s_fast);

    // Dequantization of quantized data and of random bytes (every code and scale pattern).
    Signal                     signal(17);
    const std::vector<uint8_t> random = random_blocks(type, kBlocks, signal);
    for (const std::vector<uint8_t> * src : {&std::as_const(q_ref), &random}) {
        std::vector<float> y_ref(x.size()), y_fast(x.size());
        type.dequantize_ref(src->data(), y_ref.data(), int64_t(x.size()));
        type.dequantize_fast(src->data(), y_fast.data(), int64_t(x.size()));
        ASSERT_EQ(0, std::memcmp(y_ref.data(), y_fast.data(), y_ref.size() * sizeof(float)));
    }
}

// GGML's own results on the Signal row, as FNV-1a hashes of: the quantized bytes, their
// dequantization, and the dequantization of random blocks. They were taken once from a local GGML
// build (the sources vendored in the ggml-python 0.0.45 package, built with GGML_NATIVE=OFF so that
// no FMA contraction can occur) and pin the quantizers to GGML's algorithm byte for byte.
TEST_P(KQuant, MatchesGgmlOnTheTestSignal) {
    const KQuantType & type    = GetParam();
    constexpr int      kBlocks = 200;
    Signal             signal(0x9e3779b9u);
    std::vector<float> x(size_t(kBlocks) * QK_K);
    for (int b = 0; b < kBlocks; ++b) {
        signal.fill_block(b, x.data() + size_t(b) * QK_K);
    }
    const std::vector<uint8_t> random = random_blocks(type, kBlocks, signal);
    for (const bool fast : {false, true}) {
        const auto quantize   = fast ? type.quantize_fast : type.quantize_ref;
        const auto dequantize = fast ? type.dequantize_fast : type.dequantize_ref;
        const char * path     = fast ? "fast path" : "reference";
        std::vector<uint8_t> q(kBlocks * type.block_bytes);
        std::vector<float>   y(x.size());
        quantize(x.data(), q.data(), int64_t(x.size()));
        EXPECT_EQ(fnv1a(q.data(), q.size()), type.ggml_quantized_hash) << path;
        dequantize(q.data(), y.data(), int64_t(y.size()));
        EXPECT_EQ(fnv1a(y.data(), y.size() * sizeof(float)), type.ggml_dequantized_hash) << path;
        dequantize(random.data(), y.data(), int64_t(y.size()));
        EXPECT_EQ(fnv1a(y.data(), y.size() * sizeof(float)), type.ggml_random_bytes_hash) << path;
    }
}

INSTANTIATE_TEST_SUITE_P(AllKQuants, KQuant, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<KQuantType> & info) { return info.param.name; });

// Error ordering: more bits, less error.
TEST(KQuantOrder, MoreBitsGiveLessError) {
    const std::vector<float> x = gaussian(32 * QK_K, 3);
    double                   previous = 1e9;
    for (const KQuantType & type : kTypes) {
        std::vector<uint8_t> q(32 * type.block_bytes);
        std::vector<float>   y(x.size());
        type.quantize_ref(x.data(), q.data(), int64_t(x.size()));
        type.dequantize_ref(q.data(), y.data(), int64_t(y.size()));
        double err = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            err += double(x[i] - y[i]) * double(x[i] - y[i]);
        }
        EXPECT_LT(err, previous) << type.name;
        previous = err;
    }
}

// The largest sub-block scale lands on the end of the scale code range (the reason for the sign
// games in Q3_K and Q6_K): sc 15 for Q2_K, S −32 for Q3_K, sc/m 63 for Q4_K and Q5_K, −128 for Q6_K.
TEST(KQuantScales, LargestScaleUsesTheWholeCodeRange) {
    const std::vector<float> x = gaussian(8 * QK_K, 21);
    for (int b = 0; b < 8; ++b) {
        const float * xb = x.data() + b * QK_K;
        block_q2_K    b2;
        quantize_row_q2_K_ref(xb, &b2, QK_K);
        int max_sc = 0, max_m = 0;
        for (uint8_t s : b2.scales) {
            max_sc = std::max(max_sc, s & 15);
            max_m  = std::max(max_m, s >> 4);
        }
        EXPECT_EQ(max_sc, 15);
        EXPECT_EQ(max_m, 15);

        block_q3_K b3;
        quantize_row_q3_K_ref(xb, &b3, QK_K);
        int min_s = 31;
        for (int t = 0; t < 16; ++t) {
            min_s = std::min(min_s, q3k_signed_scale(b3.scales, t));
        }
        EXPECT_EQ(min_s, -32);

        block_q4_K b4;
        quantize_row_q4_K_ref(xb, &b4, QK_K);
        block_q5_K b5;
        quantize_row_q5_K_ref(xb, &b5, QK_K);
        int max4[2] = {0, 0}, max5[2] = {0, 0};
        for (int t = 0; t < 8; ++t) {
            const auto s4 = q4k_scale_min(b4.scales, t);
            const auto s5 = q4k_scale_min(b5.scales, t);
            for (int k = 0; k < 2; ++k) {
                max4[k] = std::max(max4[k], s4[k]);
                max5[k] = std::max(max5[k], s5[k]);
            }
        }
        EXPECT_EQ(max4[0], 63);
        EXPECT_EQ(max4[1], 63);
        EXPECT_EQ(max5[0], 63);
        EXPECT_EQ(max5[1], 63);

        block_q6_K b6;
        quantize_row_q6_K_ref(xb, &b6, QK_K);
        EXPECT_EQ(*std::min_element(std::begin(b6.scales), std::end(b6.scales)), -128);
    }
}
