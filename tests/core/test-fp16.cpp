// fp16/bf16 conversions against independent references: the CPU's own F16C instructions
// (IEEE round-to-nearest-even) for fp16, and formats.md's bit formulas for bf16.
#include "core/fp16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#if defined(__F16C__)
#include <immintrin.h>
#endif

using namespace hexnpu;

namespace {

bool is_nan32(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

} // namespace

TEST(Fp16, KnownValues) {
    EXPECT_EQ(fp32_to_fp16(0.0f), 0x0000);
    EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
    EXPECT_EQ(fp32_to_fp16(1.0f), 0x3c00);
    EXPECT_EQ(fp32_to_fp16(-2.0f), 0xc000);
    EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);           // largest finite
    EXPECT_EQ(fp32_to_fp16(65519.99f), 0x7bff);          // below the halfway point
    EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);           // tie rounds to even = overflow -> inf
    EXPECT_EQ(fp32_to_fp16(1e9f), 0x7c00);
    EXPECT_EQ(fp32_to_fp16(-INFINITY), 0xfc00);
    EXPECT_EQ(fp32_to_fp16(0x1p-24f), 0x0001);           // smallest subnormal
    EXPECT_EQ(fp32_to_fp16(0x1p-25f), 0x0000);           // tie between 0 and 2^-24: even is 0
    EXPECT_EQ(fp32_to_fp16(0x1.8p-24f), 0x0002);         // 1.5 ulp: tie to even (2)
    EXPECT_EQ(fp32_to_fp16(0x1p-14f), 0x0400);           // smallest normal
    EXPECT_EQ(fp32_to_fp16(1.0f + 0x1p-11f), 0x3c00);    // tie to even (down)
    EXPECT_EQ(fp32_to_fp16(1.0f + 0x3p-11f), 0x3c02);    // tie to even (up)
    // NaN: canonical 0x7E00 with the sign kept, whatever the payload (formats.md §1.0).
    EXPECT_EQ(fp32_to_fp16(std::bit_cast<float>(0x7fc00000u)), 0x7e00);
    EXPECT_EQ(fp32_to_fp16(std::bit_cast<float>(0xffffffffu)), 0xfe00);
    EXPECT_EQ(fp32_to_fp16(std::bit_cast<float>(0x7f800001u)), 0x7e00);

    EXPECT_EQ(fp16_to_fp32(0x3c00), 1.0f);
    EXPECT_EQ(fp16_to_fp32(0x0001), 0x1p-24f);
    EXPECT_EQ(fp16_to_fp32(0x03ff), 0x3ffp-24f);
    EXPECT_EQ(fp16_to_fp32(0x7bff), 65504.0f);
    EXPECT_EQ(std::bit_cast<uint32_t>(fp16_to_fp32(0x8000)), 0x80000000u);
    EXPECT_TRUE(std::isinf(fp16_to_fp32(0x7c00)));
    EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7e00)));
}

TEST(Fp16, HalfToFloatExhaustiveAndExact) {
    for (uint32_t h = 0; h < 65536; ++h) {
        const float f = fp16_to_fp32(uint16_t(h));
        const uint32_t exp = (h >> 10) & 0x1f;
        if (exp == 0x1f && (h & 0x3ff)) {
            ASSERT_TRUE(std::isnan(f)) << h;
            continue;
        }
        // Independent formula: (-1)^s * 2^(e-15) * (1 + m/1024), subnormals 2^-14 * m/1024.
        const double m   = double(h & 0x3ff);
        double       ref = exp == 0 ? std::ldexp(m, -24) : exp == 0x1f ? INFINITY : std::ldexp(1024.0 + m, int(exp) - 25);
        if (h & 0x8000) {
            ref = -ref;
        }
        ASSERT_EQ(double(f), ref) << h;
        ASSERT_EQ(std::signbit(f), bool(h & 0x8000)) << h;
        if (exp != 0x1f) {
            ASSERT_EQ(fp32_to_fp16(f), h) << "round trip " << h;
        }
    }
}

#if defined(__F16C__)
// Every fp32 bit pattern (stride 7 keeps it to ~0.6 G patterns worth of cheap checks; all exponents
// and mantissa residues are visited) against the CPU's vcvtps2ph with round-to-nearest-even.
TEST(Fp16, FloatToHalfMatchesHardware) {
    uint64_t checked = 0;
    for (uint64_t u = 0; u <= 0xffffffffull; u += 7) {
        const uint32_t bits = uint32_t(u);
        const float    f    = std::bit_cast<float>(bits);
        const uint16_t ours = fp32_to_fp16(f);
        if (is_nan32(bits)) {
            ASSERT_EQ(ours, uint16_t(((bits >> 16) & 0x8000) | 0x7e00));
            continue;
        }
        const uint16_t hw = _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
        ASSERT_EQ(ours, hw) << std::hex << bits;
        ++checked;
    }
    EXPECT_GT(checked, 600000000u);
}
#endif

TEST(Fp16, RowPathsMatchScalar) {
    std::mt19937                 gen(1);
    std::vector<float>           f(4099);
    std::vector<uint16_t>        h(f.size()), h_ref(f.size());
    std::vector<float>           back(f.size());
    for (int round = 0; round < 50; ++round) {
        for (auto & v : f) {
            v = std::bit_cast<float>(uint32_t(gen()));  // every class: NaNs, infs, subnormals
        }
        f[0] = 65520.0f, f[1] = -0.0f, f[2] = 0x1p-25f, f[3] = std::bit_cast<float>(0xffc12345u);
        fp32_to_fp16_row(f.data(), h.data(), int64_t(f.size()));
        for (size_t i = 0; i < f.size(); ++i) {
            ASSERT_EQ(h[i], fp32_to_fp16(f[i])) << i;
        }
        fp16_to_fp32_row(h.data(), back.data(), int64_t(h.size()));
        for (size_t i = 0; i < h.size(); ++i) {
            ASSERT_EQ(std::bit_cast<uint32_t>(back[i]), std::bit_cast<uint32_t>(fp16_to_fp32(h[i]))) << i;
        }
        fp32_to_bf16_row(f.data(), h.data(), int64_t(f.size()));
        for (size_t i = 0; i < f.size(); ++i) {
            ASSERT_EQ(h[i], fp32_to_bf16(f[i])) << i;
        }
        bf16_to_fp32_row(h.data(), back.data(), int64_t(h.size()));
        for (size_t i = 0; i < h.size(); ++i) {
            ASSERT_EQ(std::bit_cast<uint32_t>(back[i]), uint32_t(h[i]) << 16) << i;
        }
    }
}

TEST(Bf16, RoundingAndNaN) {
    // Round to nearest even on the low 16 bits (formats.md §1.0).
    EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f800000u)), 0x3f80);
    EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even stays
    EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd rounds up
    EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
    EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);  // max float rounds to inf
    EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x7f800001u)), 0x7fc0);  // sNaN -> quiet, top bits kept
    EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0xffc00000u)), 0xffc0);
    EXPECT_EQ(bf16_to_fp32(0xbf80), -1.0f);
}
