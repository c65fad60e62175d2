// CPU backend: element-wise, GLU, normalization, reduction, layout and row ops on small cases
// worked out by hand (or from the textbook definition evaluated in double).
#include "test-cpu-util.h"

#include "core/fp16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>

using namespace cpu_test;

namespace {

ggml_tensor * f32_tensor(fixture & f, std::initializer_list<int64_t> shape, const std::vector<float> & values) {
    const std::vector<int64_t> ne(shape);
    ggml_tensor *              t = ggml_new_tensor(&f.ctx, GGML_TYPE_F32, int(ne.size()), ne.data());
    set_values(t, values);
    return t;
}

ggml_tensor * i32_tensor(fixture & f, std::initializer_list<int64_t> shape, const std::vector<int32_t> & values) {
    const std::vector<int64_t> ne(shape);
    ggml_tensor *              t = ggml_new_tensor(&f.ctx, GGML_TYPE_I32, int(ne.size()), ne.data());
    set_i32(t, values);
    return t;
}

void expect_values(const ggml_tensor * t, const std::vector<float> & want, float rel = 0.0f) {
    const std::vector<float> got = get_values(t);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        if (rel == 0.0f) {
            EXPECT_EQ(got[i], want[i]) << "element " << i;
        } else {
            EXPECT_NEAR(got[i], want[i], rel * std::max(1.0f, std::fabs(want[i]))) << "element " << i;
        }
    }
}

} // namespace

// ---- binary -------------------------------------------------------------------------------------

TEST(CpuBinary, BroadcastsSrc1ByRepetition) {
    fixture       f;
    ggml_tensor * a    = f32_tensor(f, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
    ggml_tensor * cols = f32_tensor(f, {2, 1}, {10, 20});    // repeats along dim 0
    ggml_tensor * rows = f32_tensor(f, {1, 2}, {100, 200});  // one value per row
    ggml_tensor * add  = ggml_add(&f.ctx, a, cols);
    ggml_tensor * sub  = ggml_sub(&f.ctx, a, rows);
    ggml_tensor * mul  = ggml_mul(&f.ctx, a, cols);
    ggml_tensor * div  = ggml_div(&f.ctx, a, rows);
    for (ggml_tensor * t : {add, sub, mul, div}) {
        f.compute(t);
    }
    expect_values(add, {11, 22, 13, 24, 15, 26, 17, 28});
    expect_values(sub, {-99, -98, -97, -96, -195, -194, -193, -192});
    expect_values(mul, {10, 40, 30, 80, 50, 120, 70, 160});
    expect_values(div, {0.01f, 0.02f, 0.03f, 0.04f, 0.025f, 0.03f, 0.035f, 0.04f}, 1e-7f);
}

TEST(CpuBinary, F16ResultIsRoundedOnceFromF32) {
    fixture       f;
    ggml_tensor * a = ggml_new_tensor_1d(&f.ctx, GGML_TYPE_F16, 3);
    set_values(a, {1, 1, 1});
    ggml_tensor * b   = f32_tensor(f, {3}, {0.0005f, 0.0004f, 0.0015f});
    ggml_tensor * sum = ggml_add(&f.ctx, a, b);
    f.compute(sum);
    // fp16 steps are 2^-10 just above 1: 1.0005 -> 1 + 2^-10, 1.0004 -> 1, 1.0015 -> 1 + 2^-9.
    expect_values(sum, {1.0009765625f, 1.0f, 1.001953125f});
}

TEST(CpuBinary, AddIdAddsTheChosenExpertRow) {
    fixture       f;
    ggml_tensor * a   = f32_tensor(f, {2, 2, 1}, {1, 2, 3, 4});
    ggml_tensor * b   = f32_tensor(f, {2, 3}, {10, 20, 30, 40, 50, 60});
    ggml_tensor * ids = i32_tensor(f, {2, 1}, {2, 0});
    ggml_tensor * out = ggml_add_id(&f.ctx, a, b, ids);
    f.compute(out);
    expect_values(out, {51, 62, 13, 24});

    set_i32(ids, {3, 0});
    EXPECT_THROW(f.compute(out), backend_error);
}

// ---- unary --------------------------------------------------------------------------------------

TEST(CpuUnary, ActivationsMatchTheirDefinitions) {
    const std::vector<float> x = {-25.0f, -3.0f, -1.0f, -0.25f, 0.0f, 0.5f, 1.0f, 2.5f, 25.0f};
    struct activation {
        ggml_unary_op                  op;
        std::function<double(double)> ref;
    };
    const double        pi = std::numbers::pi;
    const activation cases[] = {
        {GGML_UNARY_OP_ABS, [](double v) { return std::fabs(v); }},
        {GGML_UNARY_OP_NEG, [](double v) { return -v; }},
        {GGML_UNARY_OP_TANH, [](double v) { return std::tanh(v); }},
        {GGML_UNARY_OP_RELU, [](double v) { return v > 0 ? v : 0.0; }},
        {GGML_UNARY_OP_SIGMOID, [](double v) { return 1 / (1 + std::exp(-v)); }},
        {GGML_UNARY_OP_GELU,
         [=](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / pi) * (v + 0.044715 * v * v * v))); }},
        {GGML_UNARY_OP_GELU_QUICK, [](double v) { return v / (1 + std::exp(-1.702 * v)); }},
        {GGML_UNARY_OP_SILU, [](double v) { return v / (1 + std::exp(-v)); }},
        {GGML_UNARY_OP_EXP, [](double v) { return std::exp(v); }},
        {GGML_UNARY_OP_GELU_ERF, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
        {GGML_UNARY_OP_SOFTPLUS, [](double v) { return std::log(1 + std::exp(v)); }},
    };
    for (const activation & c : cases) {
        fixture       f;
        ggml_tensor * in  = f32_tensor(f, {3, 3}, x);
        ggml_tensor * out = ggml_unary(&f.ctx, in, c.op);
        f.compute(out);
        const std::vector<float> got = get_values(out);
        for (size_t i = 0; i < x.size(); ++i) {
            const double want = c.ref(x[i]);
            EXPECT_NEAR(got[i], want, 2e-6 * std::max(1.0, std::fabs(want)))
                << ggml_unary_op_name(c.op) << "(" << x[i] << ")";
        }
    }
}

TEST(CpuUnary, KnownValues) {
    fixture       f;
    ggml_tensor * x = f32_tensor(f, {4}, {0.0f, 1.0f, 4.0f, float(std::numbers::pi / 2)});
    ggml_tensor * gelu_erf = ggml_unary(&f.ctx, x, GGML_UNARY_OP_GELU_ERF);
    ggml_tensor * softplus = ggml_unary(&f.ctx, x, GGML_UNARY_OP_SOFTPLUS);
    ggml_tensor * sqr      = ggml_sqr(&f.ctx, x);
    ggml_tensor * sqrt     = ggml_sqrt(&f.ctx, x);
    ggml_tensor * log      = ggml_log(&f.ctx, x);
    ggml_tensor * sin      = ggml_sin(&f.ctx, x);
    ggml_tensor * cos      = ggml_cos(&f.ctx, x);
    for (ggml_tensor * t : {gelu_erf, softplus, sqr, sqrt, log, sin, cos}) {
        f.compute(t);
    }
    // GELU_ERF(1) = Phi(1); SOFTPLUS(0) = ln 2.
    expect_values(gelu_erf, {0.0f, 0.8413447461f, 4.0f * 0.9999683288f, 1.5707963268f * 0.9418850172f}, 1e-6f);
    EXPECT_NEAR(get_values(softplus)[0], 0.6931471806f, 1e-7f);
    expect_values(sqr, {0.0f, 1.0f, 16.0f, 2.4674011003f}, 1e-7f);
    expect_values(sqrt, {0.0f, 1.0f, 2.0f, 1.2533141373f}, 1e-7f);
    EXPECT_EQ(get_values(log)[0], -INFINITY);
    EXPECT_NEAR(get_values(log)[2], 1.3862943611f, 1e-7f);
    expect_values(sin, {0.0f, 0.8414709848f, -0.7568024953f, 1.0f}, 1e-7f);
    expect_values(cos, {1.0f, 0.5403023059f, -0.6536436209f, 0.0f}, 1e-7f);
}

TEST(CpuUnary, ScaleClampFill) {
    fixture       f;
    ggml_tensor * x       = f32_tensor(f, {4}, {1.0f, -2.0f, 0.0f, 7.0f});
    ggml_tensor * scaled  = ggml_scale(&f.ctx, x, -3.0f);
    ggml_tensor * biased  = ggml_scale_bias(&f.ctx, x, -3.0f, 0.5f);
    ggml_tensor * clamped = ggml_clamp(&f.ctx, x, -1.0f, 2.0f);
    ggml_tensor * half    = ggml_new_tensor_2d(&f.ctx, GGML_TYPE_F16, 3, 2);
    ggml_tensor * filled  = ggml_fill(&f.ctx, half, 2.5f);
    for (ggml_tensor * t : {scaled, biased, clamped, filled}) {
        f.compute(t);
    }
    expect_values(scaled, {-3.0f, 6.0f, -0.0f, -21.0f});
    EXPECT_TRUE(std::signbit(get_values(scaled)[2]));  // a plain scale keeps the sign of zero
    expect_values(biased, {-2.5f, 6.5f, 0.5f, -20.5f});
    expect_values(clamped, {1.0f, -1.0f, 0.0f, 2.0f});
    expect_values(filled, std::vector<float>(6, 2.5f));
}

TEST(CpuUnary, StridedSourceAndF16) {
    fixture       f;
    ggml_tensor * a = f32_tensor(f, {3, 2}, {1, 2, 3, 4, 5, 6});
    ggml_tensor * t = ggml_transpose(&f.ctx, a);  // [2, 3]: (1 4) (2 5) (3 6)
    ggml_tensor * n = ggml_unary(&f.ctx, t, GGML_UNARY_OP_NEG);
    f.compute(n);
    expect_values(n, {-1, -4, -2, -5, -3, -6});

    ggml_tensor * h = ggml_new_tensor_1d(&f.ctx, GGML_TYPE_F16, 2);
    set_values(h, {3.0f, -0.5f});
    ggml_tensor * s = ggml_sqr(&f.ctx, h);
    f.compute(s);
    expect_values(s, {9.0f, 0.25f});
}

// ---- GLU ----------------------------------------------------------------------------------------

TEST(CpuGlu, FusedSwappedAndSplitLayoutsAgree) {
    const double silu1 = 1.0 / (1.0 + std::exp(-1.0)), silu_m1 = -1.0 / (1.0 + std::exp(1.0));
    fixture      f;
    ggml_tensor * fused   = f32_tensor(f, {4}, {1, -1, 2, 3});  // [x | g]
    ggml_tensor * swapped = f32_tensor(f, {4}, {2, 3, 1, -1});  // [g | x]
    ggml_tensor * x       = f32_tensor(f, {2}, {1, -1});
    ggml_tensor * g       = f32_tensor(f, {2}, {2, 3});
    ggml_tensor * r1      = ggml_glu(&f.ctx, fused, nullptr, GGML_GLU_OP_SWIGLU, false);
    ggml_tensor * r2      = ggml_glu(&f.ctx, swapped, nullptr, GGML_GLU_OP_SWIGLU, true);
    ggml_tensor * r3      = ggml_glu(&f.ctx, x, g, GGML_GLU_OP_SWIGLU, false);
    for (ggml_tensor * t : {r1, r2, r3}) {
        f.compute(t);
        expect_values(t, {float(silu1 * 2), float(silu_m1 * 3)}, 1e-6f);
    }
}

TEST(CpuGlu, GegluAndSwigluOai) {
    fixture       f;
    ggml_tensor * x     = f32_tensor(f, {3}, {1.0f, 10.0f, -2.0f});
    ggml_tensor * g     = f32_tensor(f, {3}, {0.5f, -9.0f, 8.0f});
    ggml_tensor * geglu = ggml_glu(&f.ctx, x, g, GGML_GLU_OP_GEGLU, false);
    ggml_tensor * oai   = ggml_swiglu_oai(&f.ctx, x, g, 1.702f, 7.0f);
    f.compute(geglu);
    f.compute(oai);
    const auto gelu = [](double v) {
        return 0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
    };
    expect_values(geglu, {float(gelu(1) * 0.5), float(gelu(10) * -9), float(gelu(-2) * 8)}, 1e-6f);
    // x capped at 7 from above, gate clamped to [-7, 7], then x * sigmoid(1.702 x) * (gate + 1).
    const auto oai_ref = [](double v, double gate) { return v / (1 + std::exp(-1.702 * v)) * (gate + 1); };
    expect_values(oai, {float(oai_ref(1, 0.5)), float(oai_ref(7, -7)), float(oai_ref(-2, 7))}, 1e-6f);
}

// ---- norms --------------------------------------------------------------------------------------

TEST(CpuNorm, NormRmsNormL2Norm) {
    fixture       f;
    ggml_tensor * x   = f32_tensor(f, {4, 2}, {1, 2, 3, 4, 0, 0, 0, 0});
    ggml_tensor * n   = ggml_norm(&f.ctx, x, 0.0f);
    ggml_tensor * rms = ggml_rms_norm(&f.ctx, x, 0.0f);
    ggml_tensor * l2  = ggml_l2_norm(&f.ctx, x, 1e-6f);
    for (ggml_tensor * t : {n, rms, l2}) {
        f.compute(t);
    }
    // Row 1: mean 2.5, variance 1.25; mean square 7.5; |x| = sqrt(30).
    const std::vector<float> norm_row = {-1.3416407865f, -0.4472135955f, 0.4472135955f, 1.3416407865f};
    std::vector<float>       got      = get_values(n);
    for (int i = 0; i < 4; ++i) {
        EXPECT_NEAR(got[size_t(i)], norm_row[size_t(i)], 1e-6f);
    }
    got = get_values(rms);
    for (int i = 0; i < 4; ++i) {
        EXPECT_NEAR(got[size_t(i)], (i + 1) * 0.3651483717f, 1e-6f);
    }
    got = get_values(l2);
    for (int i = 0; i < 4; ++i) {
        EXPECT_NEAR(got[size_t(i)], (i + 1) / 5.4772255751f, 1e-6f);
        EXPECT_EQ(got[size_t(4 + i)], 0.0f);  // zero row: 0 / max(0, eps)
    }
}

TEST(CpuNorm, EpsilonEntersUnderTheRoot) {
    fixture       f;
    ggml_tensor * x   = f32_tensor(f, {2}, {3.0f, -3.0f});
    ggml_tensor * rms = ggml_rms_norm(&f.ctx, x, 7.0f);  // mean square 9: 3 / sqrt(16)
    ggml_tensor * n   = ggml_norm(&f.ctx, x, 7.0f);      // variance 9: 3 / sqrt(16)
    f.compute(rms);
    f.compute(n);
    expect_values(rms, {0.75f, -0.75f});
    expect_values(n, {0.75f, -0.75f});
}

// ---- reductions ---------------------------------------------------------------------------------

TEST(CpuReduce, SumMeanCumsum) {
    fixture       f;
    ggml_tensor * x   = f32_tensor(f, {3, 2}, {1, 2, 3, 4, 5, 6});
    ggml_tensor * sum = ggml_sum_rows(&f.ctx, x);
    ggml_tensor * avg = ggml_mean(&f.ctx, x);
    ggml_tensor * cum = ggml_cumsum(&f.ctx, x);
    for (ggml_tensor * t : {sum, avg, cum}) {
        f.compute(t);
    }
    expect_values(sum, {6, 15});
    expect_values(avg, {2, 5});
    expect_values(cum, {1, 3, 6, 4, 9, 15});
}

TEST(CpuReduce, ArgsortAndTopKKeepIndexOrderOnTies) {
    fixture       f;
    ggml_tensor * x    = f32_tensor(f, {5, 2}, {3, 1, 2, 1, 5, -1, -1, 0, 9, -1});
    ggml_tensor * asc  = ggml_argsort(&f.ctx, x, GGML_SORT_ORDER_ASC);
    ggml_tensor * desc = ggml_argsort(&f.ctx, x, GGML_SORT_ORDER_DESC);
    ggml_tensor * top  = ggml_top_k(&f.ctx, x, 3);
    for (ggml_tensor * t : {asc, desc, top}) {
        f.compute(t);
    }
    EXPECT_EQ(get_i32(asc), (std::vector<int32_t>{1, 3, 2, 0, 4, 0, 1, 4, 2, 3}));
    EXPECT_EQ(get_i32(desc), (std::vector<int32_t>{4, 0, 2, 1, 3, 3, 2, 0, 1, 4}));
    EXPECT_EQ(get_i32(top), (std::vector<int32_t>{4, 0, 2, 3, 2, 0}));
}

// ---- layout -------------------------------------------------------------------------------------

TEST(CpuLayout, CopyToF16RoundsLikeFp32ToFp16) {
    fixture       f;
    ggml_tensor * x   = f32_tensor(f, {4}, {1.0005f, 65520.0f, -0.0f, 1e-8f});
    ggml_tensor * out = ggml_cast(&f.ctx, x, GGML_TYPE_F16);
    f.compute(out);
    const auto * h = static_cast<const uint16_t *>(out->data);
    EXPECT_EQ(h[0], 0x3C01);  // 1 + 2^-10
    EXPECT_EQ(h[1], 0x7C00);  // 65520 rounds (ties to even) past 65504: inf
    EXPECT_EQ(h[2], 0x8000);  // -0
    EXPECT_EQ(h[3], 0x0000);  // below half the smallest subnormal
}

TEST(CpuLayout, ContOfTransposeAndPermute) {
    fixture       f;
    ggml_tensor * a = f32_tensor(f, {3, 2}, {1, 2, 3, 4, 5, 6});
    ggml_tensor * t = ggml_cont(&f.ctx, ggml_transpose(&f.ctx, a));
    f.compute(t);
    expect_values(t, {1, 4, 2, 5, 3, 6});

    ggml_tensor * b = f32_tensor(f, {2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});  // value = i0 + 2 i1 + 4 i2
    ggml_tensor * p = ggml_cont(&f.ctx, ggml_permute(&f.ctx, b, 0, 2, 1, 3));  // swap dims 1 and 2
    f.compute(p);
    expect_values(p, {0, 1, 4, 5, 2, 3, 6, 7});
}

TEST(CpuLayout, CopyBetweenShapesKeepsFlatOrder) {
    fixture       f;
    ggml_tensor * x   = f32_tensor(f, {6}, {1, 2, 3, 4, 5, 6});
    ggml_tensor * dst = ggml_new_tensor_2d(&f.ctx, GGML_TYPE_F16, 2, 3);
    ggml_tensor * cpy = ggml_cpy(&f.ctx, x, dst);
    f.compute(cpy);
    expect_values(dst, {1, 2, 3, 4, 5, 6});

    // Into a strided view: every other row of a [2, 6] tensor.
    ggml_tensor * big  = ggml_new_tensor_2d(&f.ctx, GGML_TYPE_F32, 2, 6);
    set_values(big, std::vector<float>(12, -1.0f));
    ggml_tensor * view = ggml_view_2d(&f.ctx, big, 2, 3, 2 * big->nb[1], 0);
    f.compute(ggml_cpy(&f.ctx, x, view));
    expect_values(big, {1, 2, -1, -1, 3, 4, -1, -1, 5, 6, -1, -1});
}

TEST(CpuLayout, QuantizedCopies) {
    fixture                  f;
    const std::vector<float> values = random_values(256, 7);
    ggml_tensor *            x      = f32_tensor(f, {128, 2}, values);
    ggml_tensor *            q      = ggml_cast(&f.ctx, x, GGML_TYPE_Q8_0);
    f.compute(q);
    std::vector<uint8_t> want(ggml_nbytes(q));
    ggml_get_type_traits(GGML_TYPE_Q8_0)->from_float_ref(values.data(), want.data(), 256);
    EXPECT_EQ(std::memcmp(q->data, want.data(), want.size()), 0);

    // Same type, different shapes, both contiguous: the blocks move unchanged.
    ggml_tensor * flat = ggml_new_tensor_1d(&f.ctx, GGML_TYPE_Q8_0, 256);
    f.compute(ggml_cpy(&f.ctx, q, flat));
    EXPECT_EQ(std::memcmp(flat->data, want.data(), want.size()), 0);

    // Back to F32 through the reference dequantizer, reshaped on the way.
    ggml_tensor * back = ggml_new_tensor_2d(&f.ctx, GGML_TYPE_F32, 64, 4);
    f.compute(ggml_cpy(&f.ctx, q, back));
    std::vector<float> deq(256);
    ggml_get_type_traits(GGML_TYPE_Q8_0)->to_float_ref(want.data(), deq.data(), 256);
    expect_values(back, deq);
}

TEST(CpuLayout, ConcatRepeatPad) {
    fixture       f;
    ggml_tensor * a  = f32_tensor(f, {2, 2}, {1, 2, 3, 4});
    ggml_tensor * b0 = f32_tensor(f, {1, 2}, {5, 6});
    ggml_tensor * b1 = f32_tensor(f, {2, 1}, {7, 8});
    ggml_tensor * c0 = ggml_concat(&f.ctx, a, b0, 0);
    ggml_tensor * c1 = ggml_concat(&f.ctx, a, b1, 1);
    ggml_tensor * r  = ggml_repeat(&f.ctx, b1, ggml_new_tensor_3d(&f.ctx, GGML_TYPE_F32, 4, 2, 2));
    ggml_tensor * p  = ggml_pad(&f.ctx, a, 1, 1, 0, 0);
    for (ggml_tensor * t : {c0, c1, r, p}) {
        f.compute(t);
    }
    expect_values(c0, {1, 2, 5, 3, 4, 6});
    expect_values(c1, {1, 2, 3, 4, 7, 8});
    expect_values(r, {7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8});
    expect_values(p, {1, 2, 0, 3, 4, 0, 0, 0, 0});
}

TEST(CpuLayout, IntegerTensorsMoveAsBytes) {
    fixture       f;
    ggml_tensor * a = i32_tensor(f, {2, 1}, {-7, 1 << 30});
    ggml_tensor * b = i32_tensor(f, {2, 1}, {3, 4});
    ggml_tensor * c = ggml_concat(&f.ctx, a, b, 1);
    ggml_tensor * r = ggml_repeat(&f.ctx, a, ggml_new_tensor_2d(&f.ctx, GGML_TYPE_I32, 4, 1));
    f.compute(c);
    f.compute(r);
    EXPECT_EQ(get_i32(c), (std::vector<int32_t>{-7, 1 << 30, 3, 4}));
    EXPECT_EQ(get_i32(r), (std::vector<int32_t>{-7, 1 << 30, -7, 1 << 30}));
}

// ---- rows ---------------------------------------------------------------------------------------

TEST(CpuRows, GetRowsOfEveryConvertibleTypeEqualsToFloatOfThatRow) {
    for (int id = 0; id < GGML_TYPE_COUNT; ++id) {
        const ggml_type_traits * traits = ggml_get_type_traits(id);
        if (!traits->to_float || !traits->from_float) {
            continue;
        }
        fixture       f;
        const ggml_type type = ggml_type(id);
        ggml_tensor *   w    = new_filled(f.ctx, type, {256, 4}, uint32_t(id));
        ggml_tensor *   ids  = ggml_new_tensor_1d(&f.ctx, GGML_TYPE_I64, 3);
        const int64_t   pick[3] = {3, 1, 3};
        std::memcpy(ids->data, pick, sizeof pick);
        ggml_tensor * rows = ggml_get_rows(&f.ctx, w, ids);
        f.compute(rows);
        const std::vector<float> got = get_values(rows);
        for (int r = 0; r < 3; ++r) {
            std::vector<float> want(256);
            traits->to_float_ref(static_cast<const uint8_t *>(w->data) + pick[r] * w->nb[1], want.data(), 256);
            EXPECT_EQ(std::memcmp(got.data() + r * 256, want.data(), sizeof(float) * 256), 0)
                << ggml_type_name(type) << " row " << r;
        }
    }
}

TEST(CpuRows, GetRowsChecksIds) {
    fixture       f;
    ggml_tensor * w    = f32_tensor(f, {2, 3}, {1, 2, 3, 4, 5, 6});
    ggml_tensor * ids  = i32_tensor(f, {2}, {2, 0});
    ggml_tensor * rows = ggml_get_rows(&f.ctx, w, ids);
    f.compute(rows);
    expect_values(rows, {5, 6, 1, 2});
    set_i32(ids, {3, 0});
    EXPECT_THROW(f.compute(rows), backend_error);
    set_i32(ids, {-1, 0});
    EXPECT_THROW(f.compute(rows), backend_error);
}

TEST(CpuRows, SetRowsQuantizesIntoTheIndexedRows) {
    for (ggml_type type :
         {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_K}) {
        fixture                  f;
        ggml_tensor *            dst  = ggml_new_tensor_2d(&f.ctx, type, 256, 4);
        const size_t             row  = dst->nb[1];
        std::memset(dst->data, 0xA5, ggml_nbytes(dst));
        const std::vector<float> src_values = random_values(512, 11);
        ggml_tensor *            src  = f32_tensor(f, {256, 2}, src_values);
        ggml_tensor *            ids  = i32_tensor(f, {2}, {3, 0});
        f.compute(ggml_set_rows(&f.ctx, dst, src, ids));

        std::vector<uint8_t> want(row);
        const auto *         bytes = static_cast<const uint8_t *>(dst->data);
        ggml_get_type_traits(type)->from_float_ref(src_values.data(), want.data(), 256);
        EXPECT_EQ(std::memcmp(bytes + 3 * row, want.data(), row), 0) << ggml_type_name(type);
        ggml_get_type_traits(type)->from_float_ref(src_values.data() + 256, want.data(), 256);
        EXPECT_EQ(std::memcmp(bytes, want.data(), row), 0) << ggml_type_name(type);
        for (size_t i = row; i < 3 * row; ++i) {  // rows 1 and 2 untouched
            ASSERT_EQ(bytes[i], 0xA5) << ggml_type_name(type);
        }
    }
}

TEST(CpuRows, SetRowsBroadcastsIdsOverOuterDims) {
    fixture       f;
    ggml_tensor * dst = ggml_new_tensor_3d(&f.ctx, GGML_TYPE_F32, 2, 3, 2);
    set_values(dst, std::vector<float>(12, 0.0f));
    ggml_tensor * src = f32_tensor(f, {2, 1, 2}, {1, 2, 3, 4});
    ggml_tensor * ids = i32_tensor(f, {1, 1}, {2});  // the same row id for both dim-2 slices
    f.compute(ggml_set_rows(&f.ctx, dst, src, ids));
    expect_values(dst, {0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 3, 4});
}
