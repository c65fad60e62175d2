// Float intrinsics of the HVX emulation (hvx-float.h): IEEE sf/hf arithmetic and conversions
// against a test-local fp16 codec (frexp/ldexp/nearbyint, round to nearest even) and plain
// float arithmetic; qf32/qf16 against the documented IEEE emulation (see hvx-float.h).
#include "test-hvx-support.h"

#include <cmath>
#include <limits>

using namespace hvx_test;

namespace {

double half_value(uint16_t h) {
    const int exp = (h >> 10) & 31, mant = h & 1023;
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (exp == 31) return mant ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
    if (exp == 0) return sign * std::ldexp(mant, -24);
    return sign * std::ldexp(1024 + mant, exp - 25);
}

// Round an exact value to fp16, nearest even; fp16 has 11 significant bits and a 2^-24 unit.
uint16_t half_of(double x) {
    if (std::isnan(x)) return 0x7E00;
    const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const double a = std::fabs(x);
    if (a >= 65520.0) return sign | 0x7C00;
    int e;
    std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
    const int ulp_exp = std::max(e - 11, -24);
    const double q = std::nearbyint(std::ldexp(a, -ulp_exp));
    const double v = std::ldexp(q, ulp_exp);
    if (v < std::ldexp(1.0, -14)) return sign | uint16_t(q); // subnormal (or zero)
    std::frexp(v, &e);
    const int mant = int(std::ldexp(v, 11 - e)) - 1024;
    return sign | uint16_t((e - 1 + 15) << 10) | uint16_t(mant);
}

float f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
uint32_t bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
bool same_float(uint32_t a, uint32_t b) { return a == b || (std::isnan(f32(a)) && std::isnan(f32(b))); }
bool same_half(uint16_t a, uint16_t b) { return a == b || (std::isnan(half_value(a)) && std::isnan(half_value(b))); }

// Interesting fp32 inputs: zeros, subnormals, fp16 edges, infinities, NaN, then random values
// spread over the fp16 range.
Bytes sf_vector(std::mt19937 &rng, int c) {
    static const float edge[] = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, 0x1p-24f, 0x1p-25f, 0x1.8p-24f,
                                 0x1p-14f, 0x1.ffcp-15f, INFINITY, -INFINITY, NAN, 1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 1e-30f};
    Bytes b;
    for (int i = 0; i < 32; ++i) {
        float f;
        if (c == 0) f = edge[i % 18];
        else if (c % 3 == 0) f = f32(uint32_t(rng()));
        else f = std::ldexp(float(int(rng() % 4096) - 2048), int(rng() % 40) - 30);
        put(b, 4, i, bits(f));
    }
    return b;
}
Bytes hf_vector(std::mt19937 &rng) {
    Bytes b;
    for (int i = 0; i < 64; ++i) put(b, 2, i, rng() & 0xFFFF);
    return b;
}

} // namespace

TEST(HvxFloat, ConvertHalfToSingleIsExactForEveryHalf) {
    for (int base = 0; base < 65536; base += 64) {
        Bytes u;
        for (int i = 0; i < 64; ++i) put(u, 2, i, base + i);
        const PairBytes w = bytes_of(Q6_Wsf_vcvt_Vhf(vec_of(u)));
        for (int i = 0; i < 64; ++i) {
            const uint32_t got = uint32_t(get(w.data() + 128 * (i % 2), 4, false, i / 2));
            const double expected = half_value(uint16_t(base + i));
            if (std::isnan(expected)) ASSERT_TRUE(std::isnan(f32(got))) << base + i;
            else ASSERT_EQ(double(f32(got)), expected) << base + i;
        }
    }
}

TEST(HvxFloat, ConvertSingleToHalfRoundsToNearestEven) {
    std::mt19937 rng(5);
    for (int c = 0; c < 400; ++c) {
        const Bytes u = sf_vector(rng, c), v = sf_vector(rng, c + 1);
        const Bytes d = bytes_of(Q6_Vhf_vcvt_VsfVsf(vec_of(u), vec_of(v)));
        for (int i = 0; i < 32; ++i) {
            // Lane 2i from Vu, 2i+1 from Vv.
            ASSERT_TRUE(same_half(uint16_t(get(d, 2, false, 2 * i)), half_of(f32(uint32_t(get(u, 4, false, i)))))) << c << " " << i;
            ASSERT_TRUE(same_half(uint16_t(get(d, 2, false, 2 * i + 1)), half_of(f32(uint32_t(get(v, 4, false, i)))))) << c << " " << i;
        }
    }
}

// The narrowing's fast path (the host's conversion instruction where it has one) against the
// scalar definition, bit for bit: random bit patterns (NaN payloads, subnormals, overflow) and ties.
TEST(HvxFloat, ConvertSingleToHalfMatchesTheScalarDefinitionBitForBit) {
    std::mt19937 rng(17);
    for (int c = 0; c < 2000; ++c) {
        Bytes u, v;
        for (int i = 0; i < 32; ++i) {
            uint32_t a = uint32_t(rng()), b = uint32_t(rng());
            if (c % 4 == 1) {  // exact ties between two fp16 values: 13 dropped bits 1000000000000
                a = (a & 0xFFFFE000u) | 0x1000u;
                b = (b & 0x8FFFE000u) | 0x38000000u | 0x1000u;
            }
            if (c % 4 == 2) {  // NaNs with any payload
                a |= 0x7F800001u;
            }
            for (int k = 0; k < 4; ++k) {
                u[size_t(4 * i + k)] = uint8_t(a >> (8 * k));
                v[size_t(4 * i + k)] = uint8_t(b >> (8 * k));
            }
        }
        const Bytes d = bytes_of(Q6_Vhf_vcvt_VsfVsf(vec_of(u), vec_of(v)));
        for (int i = 0; i < 32; ++i) {
            const uint16_t want_u = hexnpu::hvx::intrinsics::detail_float::f32_to_f16(f32(uint32_t(get(u, 4, false, i))));
            const uint16_t want_v = hexnpu::hvx::intrinsics::detail_float::f32_to_f16(f32(uint32_t(get(v, 4, false, i))));
            ASSERT_EQ(uint16_t(get(d, 2, false, 2 * i)), want_u) << c << " " << i;
            ASSERT_EQ(uint16_t(get(d, 2, false, 2 * i + 1)), want_v) << c << " " << i;
        }
    }
}

TEST(HvxFloat, SingleArithmeticIsIeee) {
    std::mt19937 rng(9);
    for (int c = 0; c < 200; ++c) {
        const Bytes u = sf_vector(rng, c), v = sf_vector(rng, c + 2);
        const Bytes add = bytes_of(Q6_Vsf_vadd_VsfVsf(vec_of(u), vec_of(v)));
        const Bytes sub = bytes_of(Q6_Vsf_vsub_VsfVsf(vec_of(u), vec_of(v)));
        const Bytes mul = bytes_of(Q6_Vsf_vmpy_VsfVsf(vec_of(u), vec_of(v)));
        for (int i = 0; i < 32; ++i) {
            const float a = f32(uint32_t(get(u, 4, false, i))), b = f32(uint32_t(get(v, 4, false, i)));
            ASSERT_TRUE(same_float(uint32_t(get(add, 4, false, i)), bits(a + b)));
            ASSERT_TRUE(same_float(uint32_t(get(sub, 4, false, i)), bits(a - b)));
            ASSERT_TRUE(same_float(uint32_t(get(mul, 4, false, i)), bits(a * b)));
        }
    }
    const HVX_Vector x = Q6_V_vsplat_R(int32_t(bits(-2.5f)));
    EXPECT_EQ(f32(uint32_t(Q6_Vsf_vabs_Vsf(x)[3])), 2.5f);
    EXPECT_EQ(f32(uint32_t(Q6_Vsf_vfneg_Vsf(x)[3])), 2.5f);
}

TEST(HvxFloat, HalfArithmeticRoundsTheExactResultOnce) {
    std::mt19937 rng(13);
    for (int c = 0; c < 300; ++c) {
        const Bytes u = hf_vector(rng), v = hf_vector(rng);
        const Bytes add = bytes_of(Q6_Vhf_vadd_VhfVhf(vec_of(u), vec_of(v)));
        const Bytes sub = bytes_of(Q6_Vhf_vsub_VhfVhf(vec_of(u), vec_of(v)));
        const Bytes mul = bytes_of(Q6_Vhf_vmpy_VhfVhf(vec_of(u), vec_of(v)));
        const PairBytes wadd = bytes_of(Q6_Wsf_vadd_VhfVhf(vec_of(u), vec_of(v)));
        const PairBytes wsub = bytes_of(Q6_Wsf_vsub_VhfVhf(vec_of(u), vec_of(v)));
        const PairBytes wmul = bytes_of(Q6_Wsf_vmpy_VhfVhf(vec_of(u), vec_of(v)));
        for (int i = 0; i < 64; ++i) {
            // Sums and products of two halves are exact in double.
            const double a = half_value(uint16_t(get(u, 2, false, i))), b = half_value(uint16_t(get(v, 2, false, i)));
            ASSERT_TRUE(same_half(uint16_t(get(add, 2, false, i)), half_of(a + b))) << c << " " << i;
            ASSERT_TRUE(same_half(uint16_t(get(sub, 2, false, i)), half_of(a - b))) << c << " " << i;
            ASSERT_TRUE(same_half(uint16_t(get(mul, 2, false, i)), half_of(a * b))) << c << " " << i;
            const uint8_t *reg = (i % 2 ? wadd.data() + 128 : wadd.data());
            ASSERT_TRUE(same_float(uint32_t(get(reg, 4, false, i / 2)), bits(float(a + b)))) << c << " " << i;
            reg = (i % 2 ? wsub.data() + 128 : wsub.data());
            ASSERT_TRUE(same_float(uint32_t(get(reg, 4, false, i / 2)), bits(float(a - b)))) << c << " " << i;
            reg = (i % 2 ? wmul.data() + 128 : wmul.data());
            ASSERT_TRUE(same_float(uint32_t(get(reg, 4, false, i / 2)), bits(float(a * b)))) << c << " " << i;
        }
        // Fused multiply-add into fp32: one rounding of acc + a*b.
        const Bytes acc_lo = sf_vector(rng, c + 1), acc_hi = sf_vector(rng, c + 4);
        const PairBytes fma = bytes_of(Q6_Wsf_vmpyacc_WsfVhfVhf(pair_of(join(acc_lo, acc_hi)), vec_of(u), vec_of(v)));
        for (int i = 0; i < 64; ++i) {
            const double a = half_value(uint16_t(get(u, 2, false, i))), b = half_value(uint16_t(get(v, 2, false, i)));
            const float acc = f32(uint32_t(get(i % 2 ? acc_hi : acc_lo, 4, false, i / 2)));
            ASSERT_TRUE(same_float(uint32_t(get(fma.data() + 128 * (i % 2), 4, false, i / 2)), bits(float(double(acc) + a * b)))) << c << " " << i;
        }
    }
}

TEST(HvxFloat, IntegerHalfConversions) {
    HVX_CHECK(Q6_Vhf_vcvt_Vh, lanes1(2, true, 2, [](int64_t x) { return int64_t(half_of(double(x))); }));
    HVX_CHECK(Q6_Vh_vcvt_Vhf, lanes1(2, false, 2, [](int64_t h) {
        const double v = half_value(uint16_t(h));
        if (std::isnan(v)) return int64_t(0x7FFF);
        return sat(int64_t(std::nearbyint(std::fmax(-40000.0, std::fmin(40000.0, v)))), 2, true);
    }));
    HVX_CHECK(Q6_Vhf_vabs_Vhf, lanes1(2, false, 2, [](int64_t h) { return h & 0x7FFF; }));
    HVX_CHECK(Q6_Vhf_vfneg_Vhf, lanes1(2, false, 2, [](int64_t h) { return h ^ 0x8000; }));
}

// A vector's fp16 lanes with every NaN as one NaN: which NaN an operation returns (its payload, its
// sign) depends on the order the compiler gives the operands of a commutative operation, and real
// qfloat has no NaN at all.
static Bytes hf_nan_canonical(HVX_Vector v) {
    Bytes b = bytes_of(v);
    for (size_t i = 0; i < b.size(); i += 2) {
        const uint32_t h = uint32_t(b[i]) | uint32_t(b[i + 1]) << 8;
        if ((h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0) {
            b[i]     = 0x00;
            b[i + 1] = 0x7E;
        }
    }
    return b;
}

// qf32/qf16 are emulated as IEEE fp32/fp16 (the documented deviation): every qf operation equals
// its IEEE counterpart and the conversions back are identities.
TEST(HvxFloat, QfloatIsEmulatedAsIeee) {
    std::mt19937 rng(17);
    for (int c = 0; c < 50; ++c) {
        const HVX_Vector s = vec_of(sf_vector(rng, c + 1)), t = vec_of(sf_vector(rng, c + 2));
        const HVX_Vector h = vec_of(hf_vector(rng)), k = vec_of(hf_vector(rng));
        EXPECT_EQ(bytes_of(Q6_Vqf32_vadd_VsfVsf(s, t)), bytes_of(Q6_Vsf_vadd_VsfVsf(s, t)));
        EXPECT_EQ(bytes_of(Q6_Vqf32_vadd_Vqf32Vqf32(s, t)), bytes_of(Q6_Vsf_vadd_VsfVsf(s, t)));
        EXPECT_EQ(bytes_of(Q6_Vqf32_vadd_Vqf32Vsf(s, t)), bytes_of(Q6_Vsf_vadd_VsfVsf(s, t)));
        EXPECT_EQ(bytes_of(Q6_Vqf32_vsub_VsfVsf(s, t)), bytes_of(Q6_Vsf_vsub_VsfVsf(s, t)));
        EXPECT_EQ(bytes_of(Q6_Vqf32_vsub_Vqf32Vqf32(s, t)), bytes_of(Q6_Vsf_vsub_VsfVsf(s, t)));
        EXPECT_EQ(bytes_of(Q6_Vqf32_vsub_Vqf32Vsf(s, t)), bytes_of(Q6_Vsf_vsub_VsfVsf(s, t)));
        EXPECT_EQ(bytes_of(Q6_Vqf32_vmpy_VsfVsf(s, t)), bytes_of(Q6_Vsf_vmpy_VsfVsf(s, t)));
        EXPECT_EQ(bytes_of(Q6_Vqf32_vmpy_Vqf32Vqf32(s, t)), bytes_of(Q6_Vsf_vmpy_VsfVsf(s, t)));
        EXPECT_EQ(bytes_of(Q6_Vsf_equals_Vqf32(s)), bytes_of(s));
        EXPECT_EQ(hf_nan_canonical(Q6_Vqf16_vadd_VhfVhf(h, k)), hf_nan_canonical(Q6_Vhf_vadd_VhfVhf(h, k)));
        EXPECT_EQ(hf_nan_canonical(Q6_Vqf16_vadd_Vqf16Vqf16(h, k)), hf_nan_canonical(Q6_Vhf_vadd_VhfVhf(h, k)));
        EXPECT_EQ(hf_nan_canonical(Q6_Vqf16_vadd_Vqf16Vhf(h, k)), hf_nan_canonical(Q6_Vhf_vadd_VhfVhf(h, k)));
        EXPECT_EQ(hf_nan_canonical(Q6_Vqf16_vsub_VhfVhf(h, k)), hf_nan_canonical(Q6_Vhf_vsub_VhfVhf(h, k)));
        EXPECT_EQ(hf_nan_canonical(Q6_Vqf16_vsub_Vqf16Vqf16(h, k)), hf_nan_canonical(Q6_Vhf_vsub_VhfVhf(h, k)));
        EXPECT_EQ(hf_nan_canonical(Q6_Vqf16_vsub_Vqf16Vhf(h, k)), hf_nan_canonical(Q6_Vhf_vsub_VhfVhf(h, k)));
        EXPECT_EQ(hf_nan_canonical(Q6_Vqf16_vmpy_VhfVhf(h, k)), hf_nan_canonical(Q6_Vhf_vmpy_VhfVhf(h, k)));
        EXPECT_EQ(hf_nan_canonical(Q6_Vqf16_vmpy_Vqf16Vqf16(h, k)), hf_nan_canonical(Q6_Vhf_vmpy_VhfVhf(h, k)));
        EXPECT_EQ(hf_nan_canonical(Q6_Vqf16_vmpy_Vqf16Vhf(h, k)), hf_nan_canonical(Q6_Vhf_vmpy_VhfVhf(h, k)));
        EXPECT_EQ(bytes_of(Q6_Vhf_equals_Vqf16(h)), bytes_of(h));
        EXPECT_EQ(bytes_of(Q6_Wqf32_vmpy_VhfVhf(h, k)), bytes_of(Q6_Wsf_vmpy_VhfVhf(h, k)));
        // The pair conversion restores the original lane order.
        EXPECT_EQ(hf_nan_canonical(Q6_Vhf_equals_Wqf32(Q6_Wqf32_vmpy_VhfVhf(h, k))), hf_nan_canonical(Q6_Vhf_vmpy_VhfVhf(h, k)));
    }
}
