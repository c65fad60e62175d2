// The element-wise NPU ops (ADD, SUB, MUL, DIV, SCALE, SQR, SQRT, NEG, SILU): their HVX math
// helpers against fp64 over spread-out and special inputs (the error bounds their headers state),
// the host's kparams preparation against hand-computed plans, and whole batches on an in-process
// virtual NPU against scalar references over shapes, strides, broadcasts and thread counts, with
// the strict DMA engine watching. The emulator computes sf (and qf32) as IEEE fp32, so ADD, SUB,
// MUL, SCALE, SQR and NEG must match scalar fp32 bit for bit.
#include "htp/hvx-div.h"
#include "htp/hvx-exp.h"
#include "htp/hvx-frexp.h"
#include "htp/hvx-log.h"
#include "htp/hvx-sincos.h"
#include "htp/hvx-sigmoid.h"
#include "htp/hvx-sqrt.h"
#include "htp/htp-iface.h"
#include "proto/htp-binary.h"
#include "proto/htp-unary.h"
#include "proto/htp-status.h"
#include "proto/htp-trace.h"
#include "test-htp-util.h"
#include "vnpu/platform/in-process-session.h"

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>
#include <random>
#include <limits>
#include <set>
#include <vector>

namespace {

using namespace hexnpu;
using namespace htp_test;
using vnpu::batch_builder;
using vnpu::in_process_session;
using vnpu::packed_batch;
using vnpu::shared_buffer;

constexpr uint64_t MiB = 1 << 20;
constexpr uint32_t VTCM_8M = 8 * MiB;

// ---- ulp distances

// Floats on one integer line: +0 and -0 at 0, neighbours one apart.
int64_t ordered(float f) {
    const uint32_t b = float_bits(f);
    return (b & 0x80000000u) ? -int64_t(b & 0x7FFFFFFF) : int64_t(b);
}

// Distance in ulp of got from the fp64 value want rounded to fp32; NaN matches only NaN.
int64_t ulp_error(float got, double want) {
    const float w = float(want);
    if (std::isnan(w) || std::isnan(got)) {
        return std::isnan(w) && std::isnan(got) ? 0 : std::numeric_limits<int64_t>::max();
    }
    return std::llabs(ordered(got) - ordered(w));
}

// ---- the HVX helpers, 32 lanes at a time

using vector_fn = std::function<HVX_Vector(HVX_Vector, HVX_Vector)>;

// Inputs spread over every exponent (bits stepped by a prime), plus zeros, subnormals, extremes,
// infinities and NaNs.
std::vector<float> spread_inputs() {
    std::vector<float> v;
    for (uint64_t b = 0; b < (uint64_t(1) << 32); b += 4099) {
        v.push_back(float_of(uint32_t(b)));
    }
    for (float f : {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, 0.5f, 1e-45f, -1e-45f, 1.1754942e-38f, 1.1754944e-38f,
                    3.4028235e38f, -3.4028235e38f, INFINITY, -INFINITY, NAN, -NAN, 88.72f, 88.73f, -87.33f,
                    -103.9f, -104.0f, -150.0f, 150.0f}) {
        v.push_back(f);
    }
    while (v.size() % 32 != 0) {
        v.push_back(1.0f);
    }
    return v;
}

std::vector<float> apply(const std::vector<float> & a, const std::vector<float> & b, const vector_fn & f) {
    std::vector<float> out(a.size());
    for (size_t i = 0; i < a.size(); i += 32) {
        HVX_Vector x, y;
        std::memcpy(&x, &a[i], 128);
        std::memcpy(&y, &b[i], 128);
        const HVX_Vector r = f(x, y);
        std::memcpy(&out[i], &r, 128);
    }
    return out;
}

// Largest ulp error of a unary helper over inputs where want(x) is finite or NaN-for-NaN, and
// the input that gave it.
struct worst {
    int64_t ulp = 0;
    float   at  = 0;
};

worst unary_worst(const std::vector<float> & x, const vector_fn & f, double (*want)(double)) {
    const std::vector<float> got = apply(x, x, f);
    worst                    w;
    for (size_t i = 0; i < x.size(); ++i) {
        const int64_t e = ulp_error(got[i], want(x[i]));
        if (e > w.ulp) {
            w = worst{e, x[i]};
        }
    }
    return w;
}

double exp64(double x) { return std::exp(x); }
double sqrt64(double x) { return std::sqrt(x); }
double silu64(double x) { return x / (1.0 + std::exp(-x)); }

TEST(HtpEltwiseMath, ExpWithinTwoUlp) {
    std::vector<float> x = spread_inputs();
    x.erase(std::remove_if(x.begin(), x.end(), [](float f) { return std::isnan(f); }), x.end());
    while (x.size() % 32 != 0) {
        x.push_back(-1.0f);
    }
    const worst w = unary_worst(x, [](HVX_Vector v, HVX_Vector) {
        HVX_Vector       k;
        const HVX_Vector p = htp::hvx_sf_exp_parts(v, &k);
        return htp::hvx_sf_ldexp(p, k);
    }, exp64);
    EXPECT_LE(w.ulp, 2) << "at " << w.at;
}

double log64(double x) { return std::log(x); }

// log over every exponent of positive floats (subnormals included) within 4 ulp; the specials.
TEST(HtpEltwiseMath, LogWithinFourUlpAndSpecials) {
    std::vector<float> x = spread_inputs();
    x.erase(std::remove_if(x.begin(), x.end(), [](float f) { return !(f > 0.0f) || std::isinf(f); }), x.end());
    while (x.size() % 32 != 0) {
        x.push_back(1.0f);
    }
    const worst w = unary_worst(x, [](HVX_Vector v, HVX_Vector) { return htp::hvx_sf_log(v); }, log64);
    EXPECT_LE(w.ulp, 4) << "at " << w.at;
    std::vector<float> special(32, 1.0f);
    special[0] = 0.0f, special[1] = -0.0f, special[2] = -1.0f, special[3] = INFINITY, special[4] = -INFINITY,
    special[5] = NAN;
    const std::vector<float> got = apply(special, special, [](HVX_Vector v, HVX_Vector) { return htp::hvx_sf_log(v); });
    EXPECT_EQ(got[0], -INFINITY);
    EXPECT_EQ(got[1], -INFINITY);
    EXPECT_TRUE(std::isnan(got[2]));
    EXPECT_EQ(got[3], INFINITY);
    EXPECT_TRUE(std::isnan(got[4]));
    EXPECT_TRUE(std::isnan(got[5]));
    EXPECT_EQ(got[6], 0.0f);
}

// tanh (TANH, FLASH_ATTN_EXT's softcap): absolute error against fp64 within 2e-7 over every exponent
// (the 1 - e^(-2|x|) difference bounds it near 0), exact +-1 far out and at the infinities.
TEST(HtpEltwiseMath, TanhWithinTwoTenMillionthsAbsolute) {
    std::vector<float> x = spread_inputs();
    x.erase(std::remove_if(x.begin(), x.end(), [](float f) { return std::isnan(f); }), x.end());
    while (x.size() % 32 != 0) {
        x.push_back(0.5f);
    }
    const std::vector<float> got = apply(x, x, [](HVX_Vector v, HVX_Vector) { return htp::hvx_sf_tanh(v); });
    double                   worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        worst = std::max(worst, std::fabs(double(got[i]) - std::tanh(double(x[i]))));
    }
    EXPECT_LE(worst, 2e-7);
    const std::vector<float> ends = apply(std::vector<float>(32, INFINITY), std::vector<float>(32, 0.0f),
                                          [](HVX_Vector v, HVX_Vector) { return htp::hvx_sf_tanh(v); });
    EXPECT_EQ(ends[0], 1.0f);
}

// GELU_ERF: absolute error against fp64 within 2e-7 * max(1, |x|) over [-12, 12] (the erf
// approximation's 1.5e-7, scaled by 0.5 |x|), exactly 0 far below.
TEST(HtpEltwiseMath, GeluErfWithinItsBound) {
    std::vector<float> x;
    for (int i = -12 * 512; i < 12 * 512; ++i) {
        x.push_back(float(i) / 512.0f);
    }
    const std::vector<float> got = apply(x, x, [](HVX_Vector v, HVX_Vector) { return htp::hvx_sf_gelu_erf(v); });
    for (size_t i = 0; i < x.size(); ++i) {
        const double want = 0.5 * double(x[i]) * (1.0 + std::erf(double(x[i]) / std::sqrt(2.0)));
        ASSERT_LE(std::fabs(double(got[i]) - want), 2e-7 * std::max(1.0, std::fabs(double(x[i])))) << x[i];
    }
    const std::vector<float> far = apply(std::vector<float>(32, -80.0f), std::vector<float>(32, 0.0f),
                                         [](HVX_Vector v, HVX_Vector) { return htp::hvx_sf_gelu_erf(v); });
    EXPECT_EQ(far[0], 0.0f);
}

// RoPE's angles: |x| <= 8192 every 1/64 (and their negatives), absolute error against fp64.
TEST(HtpEltwiseMath, SinCosWithinTwoTenMillionthsUpTo8192) {
    std::vector<float> x;
    for (int i = -8192 * 64; i <= 8192 * 64; i += 7) {
        x.push_back(float(i) / 64.0f);
    }
    for (float f : {0.7853981f, -0.7853981f, 1.5707963f, 3.1415927f, 4.712389f, 1e-30f, -0.0f}) {
        x.push_back(f);
    }
    while (x.size() % 32 != 0) {
        x.push_back(0.0f);
    }
    double worst_s = 0, worst_c = 0;
    for (size_t i = 0; i < x.size(); i += 32) {
        HVX_Vector v, s, c;
        std::memcpy(&v, &x[i], 128);
        htp::hvx_sf_sincos(v, &s, &c);
        float sf[32], cf[32];
        std::memcpy(sf, &s, 128);
        std::memcpy(cf, &c, 128);
        for (int l = 0; l < 32; ++l) {
            worst_s = std::max(worst_s, std::abs(double(sf[l]) - std::sin(double(x[i + l]))));
            worst_c = std::max(worst_c, std::abs(double(cf[l]) - std::cos(double(x[i + l]))));
        }
    }
    EXPECT_LE(worst_s, 2e-7);
    EXPECT_LE(worst_c, 2e-7);
}

TEST(HtpEltwiseMath, SqrtWithinOneUlpAndSpecials) {
    const worst w = unary_worst(spread_inputs(), [](HVX_Vector x, HVX_Vector) { return htp::hvx_sf_sqrt(x); }, sqrt64);
    EXPECT_LE(w.ulp, 1) << "at " << w.at;
    const std::vector<float> x{0.0f, -0.0f, INFINITY, -INFINITY, -1.0f, NAN, 4.0f, 1e-45f};
    std::vector<float>       in(32, 1.0f);
    std::copy(x.begin(), x.end(), in.begin());
    const std::vector<float> got = apply(in, in, [](HVX_Vector v, HVX_Vector) { return htp::hvx_sf_sqrt(v); });
    EXPECT_EQ(float_bits(got[0]), float_bits(0.0f));
    EXPECT_EQ(float_bits(got[1]), float_bits(-0.0f));
    EXPECT_EQ(got[2], INFINITY);
    EXPECT_TRUE(std::isnan(got[3]) && std::isnan(got[4]) && std::isnan(got[5]));
    EXPECT_EQ(got[6], 2.0f);
    EXPECT_EQ(got[7], float(std::sqrt(double(1e-45f))));
}

TEST(HtpEltwiseMath, SiluWithinFourUlp) {
    const worst w = unary_worst(spread_inputs(), [](HVX_Vector x, HVX_Vector) { return htp::hvx_sf_silu(x); }, silu64);
    EXPECT_LE(w.ulp, 4) << "at " << w.at;
}

TEST(HtpEltwiseMath, DivWithinOneUlpAndIeeeSpecials) {
    // Every spread input against a second, shuffled spread: all magnitude ratios, subnormal and
    // overflowing quotients included.
    const std::vector<float> a = spread_inputs();
    std::vector<float>       b = a;
    std::mt19937             rng(5);
    std::shuffle(b.begin(), b.end(), rng);
    const std::vector<float> got = apply(a, b, htp::hvx_sf_div);
    worst                    w;
    for (size_t i = 0; i < a.size(); ++i) {
        const int64_t e = ulp_error(got[i], double(a[i]) / double(b[i]));
        if (e > w.ulp) {
            w = worst{e, a[i]};
        }
    }
    EXPECT_LE(w.ulp, 1) << "at " << w.at;

    const std::vector<std::pair<float, float>> specials{
        {0.0f, 0.0f},      {1.0f, 0.0f},       {-1.0f, 0.0f},    {1.0f, -0.0f},     {0.0f, -3.0f},
        {INFINITY, 2.0f},  {INFINITY, -0.0f},  {INFINITY, INFINITY}, {5.0f, INFINITY}, {-5.0f, INFINITY},
        {NAN, 1.0f},       {1.0f, NAN},        {6.0f, 3.0f},     {1e-45f, 1e-45f},  {3e38f, 1e-38f},
        {1e-38f, 3e38f},   {1.0f, 1e-45f},     {-7.0f, 1e-40f},  {1e-40f, 0.5f},    {1.0f, 3.0f}};
    std::vector<float> sa(32, 1.0f), sb(32, 1.0f);
    for (size_t i = 0; i < specials.size(); ++i) {
        sa[i] = specials[i].first;
        sb[i] = specials[i].second;
    }
    const std::vector<float> sg = apply(sa, sb, htp::hvx_sf_div);
    for (size_t i = 0; i < specials.size(); ++i) {
        const float want = sa[i] / sb[i];
        if (std::isnan(want) || std::isinf(want) || want == 0.0f || sa[i] == 6.0f) {
            EXPECT_EQ(float_bits(sg[i]), float_bits(want)) << sa[i] << " / " << sb[i] << " = " << sg[i];
        } else {
            EXPECT_LE(ulp_error(sg[i], double(sa[i]) / sb[i]), 1) << sa[i] << " / " << sb[i];
        }
    }
}

// The Q8_0 quantizer's divisions, d = amax / 127 and 1 / d, against the host's IEEE division
// (correctly rounded) for every mantissa, at exponents from near the bottom of the range to the top.
TEST(HtpEltwiseMath, RoundedDivisionExactForEveryMantissa) {
    uint64_t wrong = 0;
    float    first = 0;
    for (const int exponent : {-90, -1, 0, 23, 100}) {
        for (uint32_t m = 0; m < (1u << 23); m += 32) {
            alignas(128) float x[32], got_q[32], got_r[32];
            for (int l = 0; l < 32; ++l) {
                x[l] = std::ldexp(float_of(0x3F800000u | (m + uint32_t(l))), exponent);
            }
            HVX_Vector v;
            std::memcpy(&v, x, 128);
            const HVX_Vector r = htp::hvx_sf_div_rn(htp::hvx_splat_sf(1.0f), v);
            std::memcpy(got_r, &r, 128);
            for (const float divisor : {127.0f, 31.0f, 15.0f}) {  // Q8_0's, Q5_1's and Q4_1's scales
                const HVX_Vector q = htp::hvx_sf_div_rn(v, htp::hvx_splat_sf(divisor));
                std::memcpy(got_q, &q, 128);
                for (int l = 0; l < 32; ++l) {
                    const bool ok = float_bits(got_q[l]) == float_bits(x[l] / divisor) &&
                                    (exponent > 100 || float_bits(got_r[l]) == float_bits(1.0f / x[l]));
                    if (!ok && wrong++ == 0) {
                        first = x[l];
                    }
                }
            }
        }
    }
    EXPECT_EQ(wrong, 0u) << "first at " << first << " (/127 " << first / 127.0f << ", 1/x " << 1.0f / first << ")";
}

TEST(HtpEltwiseMath, RecipOfOneToTwoWithinTwoUlp) {
    std::vector<float> d;
    for (uint32_t b = 0x3F800000; b <= 0x40000000; b += 7) {
        d.push_back(float_of(b));
    }
    while (d.size() % 32 != 0) {
        d.push_back(2.0f);
    }
    const std::vector<float> got = apply(d, d, [](HVX_Vector x, HVX_Vector) { return htp::hvx_sf_recip_1_2(x); });
    int64_t                  w   = 0;
    for (size_t i = 0; i < d.size(); ++i) {
        w = std::max(w, ulp_error(got[i], 1.0 / d[i]));
    }
    EXPECT_LE(w, 2);
}

// ---- kparams preparation (host side)

proto::htp_tensor f32_tensor(std::array<uint32_t, 4> ne, uint32_t row_pad = 0) {
    proto::htp_tensor t{};
    t.type  = 0;
    t.nb[0] = 4;
    t.nb[1] = ne[0] * 4 + row_pad;
    t.nb[2] = t.nb[1] * ne[1];
    t.nb[3] = t.nb[2] * ne[2];
    for (int d = 0; d < 4; ++d) {
        t.ne[d] = ne[d];
    }
    t.size = uint64_t(t.nb[3]) * ne[3];
    return t;
}

TEST(HtpEltwiseKparams, BinaryPlanFromShapes) {
    const proto::htp_tensor  a = f32_tensor({100, 6, 4, 2}), b = f32_tensor({100, 3, 1, 2});
    proto::htp_binary_kparams kp{};
    ASSERT_TRUE(proto::prepare_binary_kparams(proto::HTP_OP_DIV, a, b, a, 4, VTCM_8M, &kp));
    // 48 rows of 400 bytes (512 in VTCM) over 4 threads: 12 each; 16 KiB / 512 = 32 rows, capped at 12.
    EXPECT_EQ(kp.pipe.n_threads, 4u);
    EXPECT_EQ(kp.pipe.row_size, 400u);
    EXPECT_EQ(kp.pipe.vtcm_row_stride, 512u);
    EXPECT_EQ(kp.pipe.block_rows, 12u);
    EXPECT_EQ(kp.pipe.n_slots, 3u);
    EXPECT_EQ(kp.pipe.vtcm_size, 4u * 3 * 3 * 12 * 512);
    EXPECT_EQ(kp.div_ne1.d, 6u);
    EXPECT_EQ(kp.div_ne2.d, 4u);
    EXPECT_EQ(kp.div_ne11.d, 3u);
    EXPECT_EQ(kp.div_ne12.d, 1u);
    EXPECT_EQ(kp.div_ne13.d, 2u);
    EXPECT_EQ(proto::fastdiv(47, kp.div_ne1), 7u);

    // Fewer rows than threads: one thread per row.
    const proto::htp_tensor r = f32_tensor({33, 2, 1, 1});
    ASSERT_TRUE(proto::prepare_binary_kparams(proto::HTP_OP_ADD, r, r, r, 6, VTCM_8M, &kp));
    EXPECT_EQ(kp.pipe.n_threads, 2u);
    EXPECT_EQ(kp.pipe.block_rows, 1u);
}

TEST(HtpEltwiseKparams, PlanShrinksRowsThenDepthToFitVtcm) {
    const proto::htp_tensor  t = f32_tensor({1024, 256, 1, 1});  // 4 KiB rows, 4 per 16 KiB block
    proto::htp_unary_kparams kp{};
    const int32_t            params[proto::HTP_OP_MAX_PARAMS] = {};
    ASSERT_TRUE(proto::prepare_unary_kparams(proto::HTP_OP_SQR, t, t, params, 2, VTCM_8M, &kp));
    EXPECT_EQ(kp.pipe.block_rows, 4u);
    EXPECT_EQ(kp.pipe.n_slots, 3u);
    // 2 threads x 2 streams x 3 slots x 4 KiB = 48 KiB for one-row blocks; 40 KiB forces depth 2.
    ASSERT_TRUE(proto::prepare_unary_kparams(proto::HTP_OP_SQR, t, t, params, 2, 40 * 1024, &kp));
    EXPECT_EQ(kp.pipe.block_rows, 1u);
    EXPECT_EQ(kp.pipe.n_slots, 2u);
    EXPECT_EQ(kp.pipe.vtcm_size, 32u * 1024);
    EXPECT_FALSE(proto::prepare_unary_kparams(proto::HTP_OP_SQR, t, t, params, 2, 32 * 1024 - 1, &kp));
    // A row of 4 MiB cannot be double buffered in 8 MiB with a source and a destination.
    const proto::htp_tensor wide = f32_tensor({1u << 20, 1, 1, 1});
    EXPECT_FALSE(proto::prepare_unary_kparams(proto::HTP_OP_NEG, wide, wide, params, 1, VTCM_8M, &kp));
}

TEST(HtpEltwiseKparams, UnsupportedShapesAndTypesAreRejected) {
    const proto::htp_tensor   a = f32_tensor({64, 6, 4, 1});
    proto::htp_binary_kparams kp{};
    proto::htp_tensor         b = f32_tensor({64, 4, 1, 1});  // 6 is no multiple of 4
    EXPECT_FALSE(proto::prepare_binary_kparams(proto::HTP_OP_ADD, a, b, a, 2, VTCM_8M, &kp));
    b = f32_tensor({32, 1, 1, 1});  // shorter rows
    EXPECT_FALSE(proto::prepare_binary_kparams(proto::HTP_OP_ADD, a, b, a, 2, VTCM_8M, &kp));
    proto::htp_tensor h = a;
    h.type              = 1;  // F16
    EXPECT_FALSE(proto::prepare_binary_kparams(proto::HTP_OP_ADD, h, a, a, 2, VTCM_8M, &kp));
    proto::htp_tensor permuted = a;
    std::swap(permuted.nb[1], permuted.nb[2]);
    EXPECT_FALSE(proto::prepare_binary_kparams(proto::HTP_OP_MUL, a, a, permuted, 2, VTCM_8M, &kp));
    proto::htp_tensor short_size = a;
    short_size.size -= 4;
    EXPECT_FALSE(proto::prepare_binary_kparams(proto::HTP_OP_MUL, short_size, a, a, 2, VTCM_8M, &kp));
    EXPECT_FALSE(proto::prepare_binary_kparams(proto::HTP_OP_SQR, a, a, a, 2, VTCM_8M, &kp));
    const int32_t            params[proto::HTP_OP_MAX_PARAMS] = {};
    proto::htp_unary_kparams ku{};
    EXPECT_FALSE(proto::prepare_unary_kparams(proto::HTP_OP_ADD, a, a, params, 2, VTCM_8M, &ku));
    EXPECT_FALSE(proto::prepare_unary_kparams(proto::HTP_OP_SQRT, a, f32_tensor({64, 6, 2, 2}), params, 2, VTCM_8M, &ku));
    // Padded rows are fine, in any operand.
    const proto::htp_tensor padded0 = f32_tensor({64, 6, 4, 1}, 64), padded1 = f32_tensor({64, 1, 4, 1}, 12);
    EXPECT_TRUE(proto::prepare_binary_kparams(proto::HTP_OP_SUB, padded0, padded1, a, 2, VTCM_8M, &kp));
}

// ---- whole batches

vnpu::platform_config quiet_config(uint32_t vtcm_size = 0, uint32_t arch = 79) {
    vnpu::platform_config cfg;
    cfg.arch         = arch;
    cfg.host_threads = 4;
    cfg.window_size  = 64 * MiB;
    cfg.vtcm_size    = vtcm_size;
    cfg.log          = [](int, const std::string &) {};
    return cfg;
}

// A tensor with rows padded by row_pad bytes and slices by slice_pad, its own shared buffer,
// filled with random floats (the gaps with a sentinel).
struct tensor_buf {
    proto::htp_tensor desc{};
    shared_buffer     buf;

    tensor_buf(std::array<uint32_t, 4> ne, uint32_t row_pad, uint32_t slice_pad, uint32_t seed)
        : buf(size_of(ne, row_pad, slice_pad)) {
        desc.type  = 0;
        desc.flags = proto::HTP_TENSOR_COMPUTE;
        desc.nb[0] = 4;
        desc.nb[1] = ne[0] * 4 + row_pad;
        desc.nb[2] = ne[1] * desc.nb[1] + slice_pad;
        desc.nb[3] = ne[2] * desc.nb[2] + slice_pad;
        for (int d = 0; d < 4; ++d) {
            desc.ne[d] = ne[d];
        }
        desc.size = buf.size();
        std::memset(buf.data(), 0x77, buf.size());
        std::vector<float> row(ne[0]);
        for (uint32_t i3 = 0; i3 < ne[3]; ++i3) {
            for (uint32_t i2 = 0; i2 < ne[2]; ++i2) {
                for (uint32_t i1 = 0; i1 < ne[1]; ++i1) {
                    fill_random(row.data(), row.size(), seed++);
                    std::memcpy(at(0, i1, i2, i3), row.data(), row.size() * 4);
                }
            }
        }
    }

    static uint64_t size_of(std::array<uint32_t, 4> ne, uint32_t row_pad, uint32_t slice_pad) {
        const uint64_t nb1 = ne[0] * 4 + row_pad, nb2 = ne[1] * nb1 + slice_pad, nb3 = ne[2] * nb2 + slice_pad;
        return nb3 * ne[3];
    }
    uint8_t * at(uint32_t i0, uint32_t i1, uint32_t i2, uint32_t i3) const {
        return buf.data() + offset_of({desc.nb[0], desc.nb[1], desc.nb[2], desc.nb[3]}, i0, i1, i2, i3);
    }
    float get(uint32_t i0, uint32_t i1, uint32_t i2, uint32_t i3) const {
        float f;
        std::memcpy(&f, at(i0, i1, i2, i3), 4);
        return f;
    }
    void set(uint32_t i0, uint32_t i1, uint32_t i2, uint32_t i3, float f) { std::memcpy(at(i0, i1, i2, i3), &f, 4); }
};

// A reference for one element: the exact fp32 result (ulp 0: bit for bit) or an fp64 value the
// result must be within ulp of.
struct reference {
    double  value;
    int64_t ulp;
};

// dst against the reference at every element, and every gap byte of dst still the sentinel.
::testing::AssertionResult matches(const tensor_buf & dst, const std::function<reference(uint32_t, uint32_t, uint32_t, uint32_t)> & ref) {
    std::vector<bool> is_element(dst.buf.size(), false);
    const auto &      ne = dst.desc.ne;
    for (uint32_t i3 = 0; i3 < ne[3]; ++i3) {
        for (uint32_t i2 = 0; i2 < ne[2]; ++i2) {
            for (uint32_t i1 = 0; i1 < ne[1]; ++i1) {
                for (uint32_t i0 = 0; i0 < ne[0]; ++i0) {
                    const float     got = dst.get(i0, i1, i2, i3);
                    const reference r   = ref(i0, i1, i2, i3);
                    const bool      ok  = r.ulp == 0 ? (float_bits(got) == float_bits(float(r.value)) ||
                                                       (std::isnan(got) && std::isnan(r.value)))
                                                     : ulp_error(got, r.value) <= r.ulp;
                    if (!ok) {
                        return ::testing::AssertionFailure() << "element (" << i0 << ", " << i1 << ", " << i2 << ", "
                                                             << i3 << "): " << got << " vs " << r.value;
                    }
                    const size_t o = dst.at(i0, i1, i2, i3) - dst.buf.data();
                    for (int k = 0; k < 4; ++k) {
                        is_element[o + k] = true;
                    }
                }
            }
        }
    }
    for (size_t i = 0; i < is_element.size(); ++i) {
        if (!is_element[i] && dst.buf.data()[i] != 0x77) {
            return ::testing::AssertionFailure() << "gap byte " << i << " was written";
        }
    }
    return ::testing::AssertionSuccess();
}

struct shape_case {
    std::array<uint32_t, 4> ne;
    std::array<uint32_t, 4> ne1;  // src1 (binary ops)
    uint32_t                row_pad;
    uint32_t                slice_pad;
};

// ne0 not a multiple of 32, one row, many rows, each broadcast dim, 1 < ne11 < ne1, wide rows,
// padded (non-contiguous) rows and slices.
const shape_case SHAPES[] = {
    {{37, 5, 3, 2}, {37, 5, 3, 2}, 0, 0},  {{100, 1, 1, 1}, {100, 1, 1, 1}, 0, 0},
    {{33, 300, 1, 1}, {33, 1, 1, 1}, 0, 0}, {{64, 7, 3, 2}, {64, 1, 3, 2}, 12, 128},
    {{31, 4, 6, 2}, {31, 4, 1, 2}, 4, 0},   {{50, 3, 2, 4}, {50, 3, 2, 1}, 0, 36},
    {{19, 12, 2, 3}, {19, 4, 1, 1}, 8, 8},  {{1, 9, 2, 1}, {1, 1, 2, 1}, 0, 0},
    {{5000, 6, 1, 1}, {5000, 6, 1, 1}, 256, 0},
};

struct batch_run {
    proto::htp_opbatch_rsp rsp;
    packed_batch           batch;
};

batch_run run_op(in_process_session & s, const proto::htp_op_desc & op, std::vector<tensor_buf *> tensors,
                 uint32_t n_traces = 0) {
    batch_builder b;
    for (tensor_buf * t : tensors) {
        proto::htp_tensor d = t->desc;
        d.data              = 0;
        d.bi                = b.add_buffer(t->buf, false);
        b.add_tensor(d);
    }
    b.add_op(op);
    batch_run r{{}, b.pack(1, n_traces > 0 ? 3 : 0, n_traces)};
    r.rsp = s.process(r.batch);
    // As the host does when it frees a buffer: a later buffer may get the same fd.
    for (tensor_buf * t : tensors) {
        htp_iface_munmap(s.handle(), t->buf.fd());
    }
    return r;
}

proto::htp_op_desc binary_op(uint32_t opcode, const tensor_buf & a, const tensor_buf & b, const tensor_buf & d,
                             uint32_t n_threads) {
    proto::htp_op_desc        op = batch_builder::op(opcode, {0, 1}, {2});
    proto::htp_binary_kparams kp{};
    EXPECT_TRUE(proto::prepare_binary_kparams(opcode, a.desc, b.desc, d.desc, n_threads, VTCM_8M, &kp));
    std::memcpy(op.kparams, &kp, sizeof kp);
    return op;
}

proto::htp_op_desc unary_op(uint32_t opcode, const tensor_buf & a, const tensor_buf & d, uint32_t n_threads,
                            float scale = 0, float bias = 0) {
    proto::htp_op_desc op = batch_builder::op(opcode, {0}, {1});
    op.params[0]          = int32_t(float_bits(scale));
    op.params[1]          = int32_t(float_bits(bias));
    proto::htp_unary_kparams kp{};
    EXPECT_TRUE(proto::prepare_unary_kparams(opcode, a.desc, d.desc, op.params, n_threads, VTCM_8M, &kp));
    std::memcpy(op.kparams, &kp, sizeof kp);
    return op;
}

reference binary_reference(uint32_t opcode, float x, float y) {
    switch (opcode) {
        case proto::HTP_OP_ADD: return {x + y, 0};
        case proto::HTP_OP_SUB: return {x - y, 0};
        case proto::HTP_OP_MUL: return {x * y, 0};
        default: return {double(x) / double(y), 1};
    }
}

TEST(HtpEltwiseBatch, BinaryOpsOverShapesBroadcastsAndThreads) {
    in_process_session s(quiet_config(), 4);
    ASSERT_EQ(s.n_threads(), 4u);
    uint32_t seed = 1;
    for (const shape_case & c : SHAPES) {
        for (uint32_t opcode : {proto::HTP_OP_ADD, proto::HTP_OP_SUB, proto::HTP_OP_MUL, proto::HTP_OP_DIV}) {
            for (uint32_t n_threads : {1u, 3u, 4u}) {
                tensor_buf a(c.ne, c.row_pad, c.slice_pad, seed += 1000);
                tensor_buf b(c.ne1, c.slice_pad % 64, c.row_pad, seed += 1000);
                tensor_buf d(c.ne, c.row_pad + 4, c.slice_pad, seed += 1000);
                std::memset(d.buf.data(), 0x77, d.buf.size());
                const batch_run r = run_op(s, binary_op(opcode, a, b, d, n_threads), {&a, &b, &d});
                ASSERT_EQ(r.rsp.status, proto::HTP_STATUS_OK)
                    << proto::htp_op_name(opcode) << " " << c.ne[0] << ": " << s.platform().last_violation();
                EXPECT_TRUE(matches(d, [&](uint32_t i0, uint32_t i1, uint32_t i2, uint32_t i3) {
                    return binary_reference(opcode, a.get(i0, i1, i2, i3),
                                            b.get(i0, i1 % c.ne1[1], i2 % c.ne1[2], i3 % c.ne1[3]));
                })) << proto::htp_op_name(opcode) << " ne " << c.ne[0] << "x" << c.ne[1] << "x" << c.ne[2] << "x"
                    << c.ne[3] << ", src1 " << c.ne1[1] << "x" << c.ne1[2] << "x" << c.ne1[3] << ", " << n_threads
                    << " threads";
            }
        }
    }
    EXPECT_EQ(s.platform().last_violation(), "");
}

TEST(HtpEltwiseBatch, UnaryOpsOverShapesAndThreads) {
    in_process_session s(quiet_config(), 4);
    uint32_t seed = 7;
    struct unary_case {
        uint32_t opcode;
        float    scale, bias;
        std::function<reference(float)> ref;
    };
    const unary_case ops[] = {
        {proto::HTP_OP_SCALE, -1.375f, 0.0f, [](float x) { return reference{x * -1.375f, 0}; }},
        {proto::HTP_OP_SCALE, 0.3f, 0.25f, [](float x) { return reference{x * 0.3f + 0.25f, 0}; }},
        {proto::HTP_OP_SQR, 0, 0, [](float x) { return reference{x * x, 0}; }},
        {proto::HTP_OP_NEG, 0, 0, [](float x) { return reference{-x, 0}; }},
        {proto::HTP_OP_SQRT, 0, 0, [](float x) { return reference{std::sqrt(double(x)), 1}; }},
        {proto::HTP_OP_SILU, 0, 0, [](float x) { return reference{silu64(x), 4}; }},
    };
    for (const shape_case & c : SHAPES) {
        for (const unary_case & u : ops) {
            for (uint32_t n_threads : {1u, 4u}) {
                tensor_buf a(c.ne, c.row_pad, c.slice_pad, seed += 1000);
                // Signed zeros, infinities, a NaN and a subnormal at the start of the first row.
                const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-41f, -3.0f};
                for (uint32_t i = 0; i < std::size(specials) && i < c.ne[0]; ++i) {
                    a.set(i, 0, 0, 0, specials[i]);
                }
                tensor_buf d(c.ne, c.slice_pad % 64, c.row_pad, seed += 1000);
                std::memset(d.buf.data(), 0x77, d.buf.size());
                const batch_run r = run_op(s, unary_op(u.opcode, a, d, n_threads, u.scale, u.bias), {&a, &d});
                ASSERT_EQ(r.rsp.status, proto::HTP_STATUS_OK) << s.platform().last_violation();
                EXPECT_TRUE(matches(d, [&](uint32_t i0, uint32_t i1, uint32_t i2, uint32_t i3) {
                    return u.ref(a.get(i0, i1, i2, i3));
                })) << proto::htp_op_name(u.opcode) << " ne " << c.ne[0] << "x" << c.ne[1] << "x" << c.ne[2] << "x"
                    << c.ne[3] << ", " << n_threads << " threads";
            }
        }
    }
    EXPECT_EQ(s.platform().last_violation(), "");
}

// Each thread computes its own share of the rows, block by block, traced with the block's first
// row; DMA starts and stops pair in FIFO order.
TEST(HtpEltwiseBatch, TracesEveryBlockOnItsThread) {
    in_process_session s(quiet_config(), 4);
    tensor_buf         a({200, 10, 3, 1}, 0, 0, 1), b({200, 10, 1, 1}, 0, 0, 2), d({200, 10, 3, 1}, 0, 0, 3);
    batch_run          r = run_op(s, binary_op(proto::HTP_OP_ADD, a, b, d, 4), {&a, &b, &d}, 1024);
    ASSERT_EQ(r.rsp.status, proto::HTP_STATUS_OK) << s.platform().last_violation();
    // 30 rows, 8 per thread, in blocks of up to 8 rows (the thread's share; 18 rows of 896 VTCM
    // bytes would fit 16 KiB), cut at thread ends and at the ne1 = ne11 = 10 slice boundaries.
    std::set<uint32_t> expected, computed;
    for (uint32_t t = 0; t < 4; ++t) {
        for (uint32_t row = t * 8; row < std::min(30u, t * 8 + 8);) {
            expected.insert(row);
            row += std::min(10 - row % 10, t * 8 + 8 - row);
        }
    }
    for (uint32_t slot = 0; slot < 4; ++slot) {
        const proto::htp_trace_desc * ev = r.batch.traces(slot);
        std::vector<uint16_t>         starts, stops;
        for (uint32_t i = 0; i < r.rsp.n_traces[slot]; ++i) {
            const uint16_t info = ev[i].info;
            const bool     stop = ev[i].id & proto::HTP_TRACE_STOP;
            const uint16_t id   = ev[i].id & ~proto::HTP_TRACE_STOP;
            if (id == proto::HTP_TRACE_EVT_DMA) {
                (stop ? stops : starts).push_back(info);
            } else if (id == proto::HTP_TRACE_EVT_HVX_COMP && !stop) {
                EXPECT_GE(info, slot * 8) << "thread " << slot;
                EXPECT_LT(info, slot * 8 + 8) << "thread " << slot;
                computed.insert(info);
            }
        }
        EXPECT_FALSE(starts.empty());
        EXPECT_EQ(starts, stops) << "thread " << slot;
    }
    EXPECT_EQ(computed, expected);
}

// Rows of 68000 bytes exceed v73's 16-bit DMA descriptor fields: the transfers still land whole.
TEST(HtpEltwiseBatch, WideRowsOnV73) {
    in_process_session s(quiet_config(0, 73), 2);
    tensor_buf         a({17000, 3, 1, 1}, 0, 0, 1), b({17000, 1, 1, 1}, 0, 0, 2), d({17000, 3, 1, 1}, 0, 0, 3);
    std::memset(d.buf.data(), 0x77, d.buf.size());
    ASSERT_EQ(run_op(s, binary_op(proto::HTP_OP_SUB, a, b, d, 2), {&a, &b, &d}).rsp.status, proto::HTP_STATUS_OK)
        << s.platform().last_violation();
    EXPECT_TRUE(matches(d, [&](uint32_t i0, uint32_t i1, uint32_t i2, uint32_t i3) {
        return reference{a.get(i0, i1, i2, i3) - b.get(i0, 0, 0, 0), 0};
    }));
    tensor_buf e({17000, 3, 1, 1}, 0, 0, 4);
    ASSERT_EQ(run_op(s, unary_op(proto::HTP_OP_NEG, a, e, 2), {&a, &e}).rsp.status, proto::HTP_STATUS_OK);
    EXPECT_TRUE(matches(e, [&](uint32_t i0, uint32_t i1, uint32_t i2, uint32_t i3) {
        return reference{-a.get(i0, i1, i2, i3), 0};
    }));
}

TEST(HtpEltwiseBatch, LayoutBeyondSessionVtcmIsVtcmTooSmall) {
    in_process_session s(quiet_config(256 * 1024), 2);
    tensor_buf         a({1024, 64, 1, 1}, 0, 0, 1), d({1024, 64, 1, 1}, 0, 0, 2);
    // Planned for 8 MiB: 2 threads x 2 streams x 3 slots x 4 rows x 4 KiB = 192 KiB fits 256 KiB;
    // the binary op's third stream makes it 288 KiB.
    EXPECT_EQ(run_op(s, unary_op(proto::HTP_OP_SQR, a, d, 2), {&a, &d}).rsp.status, proto::HTP_STATUS_OK);
    tensor_buf b({1024, 64, 1, 1}, 0, 0, 3);
    EXPECT_EQ(run_op(s, binary_op(proto::HTP_OP_MUL, a, b, d, 2), {&a, &b, &d}).rsp.status,
              proto::HTP_STATUS_VTCM_TOO_SMALL);
    // Planned for the session's VTCM, it runs.
    proto::htp_op_desc        op = batch_builder::op(proto::HTP_OP_MUL, {0, 1}, {2});
    proto::htp_binary_kparams kp{};
    ASSERT_TRUE(proto::prepare_binary_kparams(proto::HTP_OP_MUL, a.desc, b.desc, d.desc, 2, 256 * 1024, &kp));
    std::memcpy(op.kparams, &kp, sizeof kp);
    EXPECT_EQ(run_op(s, op, {&a, &b, &d}).rsp.status, proto::HTP_STATUS_OK);
    EXPECT_TRUE(matches(d, [&](uint32_t i0, uint32_t i1, uint32_t i2, uint32_t i3) {
        return reference{a.get(i0, i1, i2, i3) * b.get(i0, i1, i2, i3), 0};
    }));
}

// The batch loop's structural guard (ops/eltwise-rows.h) refuses a kparams that would stall the row
// walk, overrun the pipeline's slots or VTCM, or move DMA past a tensor's rows; the rest (fastdiv
// magic, the split of the rows) the kernel takes from the host as given.
TEST(HtpEltwiseBatch, MalformedKparamsAreInvalParams) {
    in_process_session s(quiet_config(), 2);
    tensor_buf         a({40, 6, 2, 1}, 0, 0, 1), b({40, 3, 1, 1}, 0, 0, 2), d({40, 6, 2, 1}, 0, 0, 3);
    const proto::htp_op_desc good = binary_op(proto::HTP_OP_DIV, a, b, d, 2);
    ASSERT_EQ(run_op(s, good, {&a, &b, &d}).rsp.status, proto::HTP_STATUS_OK);

    const std::vector<std::pair<const char *, std::function<void(proto::htp_binary_kparams &)>>> breaks{
        {"more threads than the session", [](auto & kp) { kp.pipe.n_threads = 3; }},
        {"no threads", [](auto & kp) { kp.pipe.n_threads = 0; }},
        {"single slot", [](auto & kp) { kp.pipe.n_slots = 1; }},
        {"too many slots", [](auto & kp) { kp.pipe.n_slots = proto::HTP_ELTWISE_MAX_SLOTS + 1; }},
        {"no rows per block", [](auto & kp) { kp.pipe.block_rows = 0; }},
        {"no rows per thread", [](auto & kp) { kp.pipe.rows_per_thread = 0; }},
        {"row size", [](auto & kp) { kp.pipe.row_size += 4; }},
        {"row stride", [](auto & kp) { kp.pipe.vtcm_row_stride += 128; }},
        {"vtcm size", [](auto & kp) { kp.pipe.vtcm_size -= 128; }},
        {"ne2 divisor", [](auto & kp) { kp.div_ne2 = proto::init_fastdiv(1); }},
        {"ne11 divisor", [](auto & kp) { kp.div_ne11 = proto::init_fastdiv(6); }},
        {"ne13 divisor", [](auto & kp) { kp.div_ne13 = proto::init_fastdiv(2); }},
    };
    for (const auto & [what, change] : breaks) {
        proto::htp_op_desc        op = good;
        proto::htp_binary_kparams kp;
        std::memcpy(&kp, op.kparams, sizeof kp);
        change(kp);
        std::memcpy(op.kparams, &kp, sizeof kp);
        EXPECT_EQ(run_op(s, op, {&a, &b, &d}).rsp.status, proto::HTP_STATUS_INVAL_PARAMS) << what;
    }
    proto::htp_op_desc no_src1 = good;
    no_src1.src[1]             = proto::HTP_NO_TENSOR;
    EXPECT_EQ(run_op(s, no_src1, {&a, &b, &d}).rsp.status, proto::HTP_STATUS_INVAL_PARAMS);
    EXPECT_EQ(s.platform().last_violation(), "");
}

} // namespace
