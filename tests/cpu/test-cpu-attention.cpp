// CPU SOFT_MAX, ROPE and FLASH_ATTN_EXT: hand-worked probabilities (mask, scale, ALiBi slopes,
// sinks), rotations by known angles (NORMAL, NEOX, frequency factors, YaRN), norm preservation,
// and flash attention against softmax(Q Kᵀ scale + mask) V composed from MUL_MAT and SOFT_MAX.
#include "test-cpu-util.h"

#include "core/fp16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace cpu_test;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

ggml_tensor * f32_tensor(fixture & f, std::initializer_list<int64_t> shape, const std::vector<float> & values) {
    const std::vector<int64_t> ne(shape);
    ggml_tensor *              t = ggml_new_tensor(&f.ctx, GGML_TYPE_F32, int(ne.size()), ne.data());
    set_values(t, values);
    return t;
}

void expect_near(const std::vector<float> & got, const std::vector<double> & want, double tol) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
    }
}

} // namespace

// ---- SOFT_MAX -----------------------------------------------------------------------------------

TEST(CpuSoftmax, MaskAndScale) {
    fixture       f;
    const float   ln2 = std::log(2.0f), ln3 = std::log(3.0f);
    ggml_tensor * x    = f32_tensor(f, {3, 2}, {0, ln2, ln3, 0, ln2, ln3});
    ggml_tensor * mask = f32_tensor(f, {3, 2}, {0, 0, 0, 0, -kInf, 0});
    ggml_tensor * p    = ggml_soft_max_ext(&f.ctx, x, mask, 1.0f, 0.0f);
    f.compute(p);
    expect_near(get_values(p), {1 / 6.0, 2 / 6.0, 3 / 6.0, 1 / 4.0, 0.0, 3 / 4.0}, 1e-7);

    ggml_tensor * y = f32_tensor(f, {2}, {1, 2});
    ggml_tensor * q = ggml_soft_max_ext(&f.ctx, y, nullptr, ln2, 0.0f);  // logits ln2, 2 ln2: weights 2, 4
    f.compute(q);
    expect_near(get_values(q), {1 / 3.0, 2 / 3.0}, 1e-7);
}

TEST(CpuSoftmax, AlibiSlopesForSixHeads) {
    // n_head = 6: n_head_log2 = 4; max_bias 8: m0 = 2^-2, m1 = 2^-1. Heads 0..3 get m0^1..m0^4,
    // heads 4, 5 the odd powers m1^1, m1^3. The mask bias 8 ln2 times slope s gives weights 1 : 2^(8s).
    fixture       f;
    ggml_tensor * x    = f32_tensor(f, {2, 1, 6}, std::vector<float>(12, 0.0f));
    ggml_tensor * mask = f32_tensor(f, {2, 1}, {0, 8 * std::log(2.0f)});
    ggml_tensor * p    = ggml_soft_max_ext(&f.ctx, x, mask, 1.0f, 8.0f);
    f.compute(p);
    std::vector<double> want;
    for (double ratio : {4.0, std::sqrt(2.0), std::pow(2.0, 1.0 / 8), std::pow(2.0, 1.0 / 32), 16.0, 2.0}) {
        want.push_back(1 / (1 + ratio));
        want.push_back(ratio / (1 + ratio));
    }
    expect_near(get_values(p), want, 1e-7);
}

TEST(CpuSoftmax, SinksJoinTheDenominatorOnly) {
    fixture       f;
    ggml_tensor * x     = f32_tensor(f, {2, 1, 2}, {0, 0, 5, 5});
    ggml_tensor * sinks = f32_tensor(f, {2}, {std::log(2.0f), 100.0f});
    ggml_tensor * p     = ggml_soft_max_ext(&f.ctx, x, nullptr, 1.0f, 0.0f);
    ggml_soft_max_add_sinks(p, sinks);
    f.compute(p);
    // Head 0: e^0 + e^0 + 2 = 4. Head 1: the sink (100) dominates: e^(5 - 100) ~ 5.6e-42.
    const std::vector<float> got = get_values(p);
    EXPECT_NEAR(got[0], 0.25f, 1e-7f);
    EXPECT_NEAR(got[1], 0.25f, 1e-7f);
    EXPECT_LT(got[2], 1e-40f);
    EXPECT_GT(got[2], 0.0f);  // still a (subnormal) probability, not flushed
}

TEST(CpuSoftmax, RowsSumToOneWithBroadcastF16Mask) {
    fixture       f;
    ggml_tensor * x    = new_filled(f.ctx, GGML_TYPE_F32, {45, 7, 4, 2}, 1, -6.0f, 6.0f);
    ggml_tensor * mask = new_filled(f.ctx, GGML_TYPE_F16, {45, 8, 2, 1}, 2, -3.0f, 3.0f);
    ggml_tensor * p    = ggml_soft_max_ext(&f.ctx, x, mask, 0.7f, 0.0f);
    f.compute(p);
    const std::vector<float> xv = get_values(x), mv = get_values(mask), pv = get_values(p);
    for (int64_t r = 0; r < 7 * 4 * 2; ++r) {
        const int64_t i1 = r % 7, i2 = (r / 7) % 4;
        // double reference: mask row (i1, i2 % 2, 0)
        std::vector<double> w(45);
        double              max = -INFINITY, sum = 0.0, got_sum = 0.0;
        for (int i = 0; i < 45; ++i) {
            w[size_t(i)] = 0.7 * xv[size_t(r * 45 + i)] + mv[size_t(((i2 % 2) * 8 + i1) * 45 + i)];
            max          = std::max(max, w[size_t(i)]);
        }
        for (double & v : w) {
            v = std::exp(v - max);
            sum += v;
        }
        for (int i = 0; i < 45; ++i) {
            EXPECT_NEAR(pv[size_t(r * 45 + i)], w[size_t(i)] / sum, 1e-6);
            got_sum += pv[size_t(r * 45 + i)];
        }
        EXPECT_NEAR(got_sum, 1.0, 1e-6);
    }
}

// ---- ROPE ---------------------------------------------------------------------------------------

namespace {

ggml_tensor * positions(fixture & f, const std::vector<int32_t> & pos) {
    ggml_tensor * t = ggml_new_tensor_1d(&f.ctx, GGML_TYPE_I32, int64_t(pos.size()));
    set_i32(t, pos);
    return t;
}

} // namespace

TEST(CpuRope, NormalAndNeoxTurnTheirPairsByKnownAngles) {
    // head_dim 4, base 10000, position 1: pair 0 turns by 1 rad, pair 1 by 10000^(-1/2) = 0.01 rad.
    fixture       f;
    ggml_tensor * x      = f32_tensor(f, {4}, {1, 0, 1, 0});
    ggml_tensor * normal = ggml_rope_ext(&f.ctx, x, positions(f, {1}), nullptr, 4, GGML_ROPE_TYPE_NORMAL, 0, 10000.0f,
                                         1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    ggml_tensor * y      = f32_tensor(f, {4}, {1, 1, 0, 0});
    ggml_tensor * neox   = ggml_rope_ext(&f.ctx, y, positions(f, {1}), nullptr, 4, GGML_ROPE_TYPE_NEOX, 0, 10000.0f,
                                         1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    f.compute(normal);
    f.compute(neox);
    expect_near(get_values(normal), {std::cos(1.0), std::sin(1.0), std::cos(0.01), std::sin(0.01)}, 1e-7);
    expect_near(get_values(neox), {std::cos(1.0), std::cos(0.01), std::sin(1.0), std::sin(0.01)}, 1e-7);
}

TEST(CpuRope, FreqFactorsFreqScaleAttnFactorAndUnrotatedTail) {
    // head_dim 6, n_dims 4, position 3: pair 0 turns by 3 * 0.5, pair 1 by 3 * 0.01 * 0.5 / 2; dims 4, 5 copied.
    fixture       f;
    ggml_tensor * x  = f32_tensor(f, {6}, {1, 0, 0, 1, 7, -8});
    ggml_tensor * ff = f32_tensor(f, {2}, {1, 2});
    ggml_tensor * r  = ggml_rope_ext(&f.ctx, x, positions(f, {3}), ff, 4, GGML_ROPE_TYPE_NORMAL, 0, 10000.0f, 0.5f,
                                     0.0f, 2.0f, 0.0f, 0.0f);
    f.compute(r);
    const double a0 = 1.5, a1 = 0.0075;
    expect_near(get_values(r), {2 * std::cos(a0), 2 * std::sin(a0), -2 * std::sin(a1), 2 * std::cos(a1), 7, -8}, 1e-6);
}

TEST(CpuRope, YarnRampsBetweenCorrectionDims) {
    // n_dims 8, n_ctx_orig 4096, base 10000, beta_fast 32, beta_slow 1: correction dims
    // floor(1.309) = 1 and ceil(2.814) = 3, so ramp = 1, 1, 0.5, 0 for pairs 0..3. With ext_factor
    // 1 pairs 0, 1 extrapolate, pair 3 interpolates (freq_scale 0.25), pair 2 is halfway; every pair
    // is scaled by 1 + 0.1 ln 4.
    fixture       f;
    ggml_tensor * x = f32_tensor(f, {8}, {1, 0, 1, 0, 1, 0, 1, 0});
    const int32_t p = 100;
    ggml_tensor * r = ggml_rope_ext(&f.ctx, x, positions(f, {p}), nullptr, 8, GGML_ROPE_TYPE_NORMAL, 4096, 10000.0f,
                                    0.25f, 1.0f, 1.0f, 32.0f, 1.0f);
    f.compute(r);
    const double mscale = 1 + 0.1 * std::log(4.0);
    const double theta[4] = {p * 1.0, p * 0.1, p * 0.01 * (0.5 * 0.25 + 0.5), p * 0.001 * 0.25};
    std::vector<double> want;
    for (double t : theta) {
        want.push_back(mscale * std::cos(t));
        want.push_back(mscale * std::sin(t));
    }
    expect_near(get_values(r), want, 2e-6);
}

TEST(CpuRope, PreservesPairNormsAndPositionZeroIsIdentity) {
    for (int mode : {GGML_ROPE_TYPE_NORMAL, GGML_ROPE_TYPE_NEOX}) {
        fixture       f;
        const int64_t d = 64, heads = 3, tokens = 5, n_dims = 48;
        ggml_tensor * x = new_filled(f.ctx, GGML_TYPE_F32, {d, heads, tokens}, 3);
        ggml_tensor * r = ggml_rope_ext(&f.ctx, x, positions(f, {0, 1, 17, 4095, 100000}), nullptr, int(n_dims), mode,
                                        0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
        f.compute(r);
        const std::vector<float> xv = get_values(x), rv = get_values(r);
        const int64_t            half = n_dims / 2;
        for (int64_t row = 0; row < heads * tokens; ++row) {
            const float * a = xv.data() + row * d;
            const float * b = rv.data() + row * d;
            for (int64_t i = 0; i < half; ++i) {
                const int64_t j0 = mode == GGML_ROPE_TYPE_NEOX ? i : 2 * i;
                const int64_t j1 = mode == GGML_ROPE_TYPE_NEOX ? i + half : 2 * i + 1;
                EXPECT_NEAR(std::hypot(b[j0], b[j1]), std::hypot(a[j0], a[j1]), 1e-6);
                if (row / heads == 0) {  // position 0: cos 1, sin 0
                    EXPECT_EQ(b[j0], a[j0]);
                    EXPECT_EQ(b[j1], a[j1]);
                }
            }
            for (int64_t i = n_dims; i < d; ++i) {
                EXPECT_EQ(b[i], a[i]);
            }
        }
    }
}

TEST(CpuRope, StridedViewSourceAndF16) {
    // Rope on a view that skips half of each row (as on a fused QKV tensor), and the F16 version.
    fixture       f;
    ggml_tensor * qkv = new_filled(f.ctx, GGML_TYPE_F32, {8, 2, 3}, 4);  // [2 heads x 4 dims | 4 other] per token
    ggml_tensor * q   = ggml_view_3d(&f.ctx, qkv, 4, 1, 3, qkv->nb[1], qkv->nb[2], 0);
    ggml_tensor * qc  = ggml_cont(&f.ctx, q);
    ggml_tensor * pos = positions(f, {2, 5, 9});
    ggml_tensor * a   = ggml_rope_ext(&f.ctx, q, pos, nullptr, 4, GGML_ROPE_TYPE_NEOX, 0, 500.0f, 1, 0, 1, 0, 0);
    ggml_tensor * b   = ggml_rope_ext(&f.ctx, qc, pos, nullptr, 4, GGML_ROPE_TYPE_NEOX, 0, 500.0f, 1, 0, 1, 0, 0);
    ggml_tensor * h   = ggml_cast(&f.ctx, qc, GGML_TYPE_F16);
    ggml_tensor * c   = ggml_rope_ext(&f.ctx, h, pos, nullptr, 4, GGML_ROPE_TYPE_NEOX, 0, 500.0f, 1, 0, 1, 0, 0);
    for (ggml_tensor * t : {a, b, c}) {
        f.compute(t);
    }
    EXPECT_EQ(get_values(a), get_values(b));
    const std::vector<float> want = get_values(b), got = get_values(c);
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_NEAR(got[i], want[i], 2e-3 * std::max(1.0f, std::fabs(want[i])));  // fp16 input and output
    }
}

// ---- FLASH_ATTN_EXT -----------------------------------------------------------------------------

namespace {

struct attention_case {
    int64_t   d, dv, n_q, n_kv, n_head, n_head_kv;
    ggml_type kv_type;
    float     scale, max_bias, softcap;
    bool      sinks;
};

// The same attention twice: one FLASH_ATTN_EXT node, and the unfused graph
// softmax(softcap(Q Kᵀ scale) + slope mask) V built from MUL_MAT, SCALE, TANH, SOFT_MAX, CONT, PERMUTE.
void check_against_composition(const attention_case & c) {
    fixture       f;
    ggml_tensor * q    = new_filled(f.ctx, GGML_TYPE_F32, {c.d, c.n_q, c.n_head}, 1);
    ggml_tensor * k    = new_filled(f.ctx, c.kv_type, {c.d, c.n_kv, c.n_head_kv}, 2);
    ggml_tensor * v    = new_filled(f.ctx, c.kv_type, {c.dv, c.n_kv, c.n_head_kv}, 3);
    ggml_tensor * mask = ggml_new_tensor_2d(&f.ctx, GGML_TYPE_F16, c.n_kv, c.n_q + 3);  // padded rows, as in llama.cpp
    std::vector<float> mv = random_values(size_t(c.n_kv * (c.n_q + 3)), 4, -2.0f, 2.0f);
    for (size_t i = 0; i < mv.size(); i += 3) {
        mv[i] = -kInf;  // causal-style holes
    }
    set_values(mask, mv);
    ggml_tensor * sinks = c.sinks ? new_filled(f.ctx, GGML_TYPE_F32, {c.n_head}, 5, -1.0f, 3.0f) : nullptr;

    ggml_tensor * fa = ggml_flash_attn_ext(&f.ctx, q, k, v, mask, c.scale, c.max_bias, c.softcap);
    if (sinks) {
        ggml_flash_attn_ext_add_sinks(fa, sinks);
    }
    f.compute(fa);

    ggml_tensor * kq = ggml_mul_mat(&f.ctx, k, q);  // [n_kv, n_q, n_head]; GQA by dim-2 broadcast
    float         softmax_scale = c.scale;
    if (c.softcap > 0.0f) {
        kq            = ggml_scale(&f.ctx, kq, c.scale / c.softcap);
        kq            = ggml_scale(&f.ctx, ggml_unary(&f.ctx, kq, GGML_UNARY_OP_TANH), c.softcap);
        softmax_scale = 1.0f;
    }
    ggml_tensor * p = ggml_soft_max_ext(&f.ctx, kq, mask, softmax_scale, c.max_bias);
    if (sinks) {
        ggml_soft_max_add_sinks(p, sinks);
    }
    ggml_tensor * vt  = ggml_cont(&f.ctx, ggml_transpose(&f.ctx, v));     // [n_kv, dv, n_head_kv]
    ggml_tensor * kqv = ggml_mul_mat(&f.ctx, vt, p);                      // [dv, n_q, n_head]
    ggml_tensor * ref = ggml_cont(&f.ctx, ggml_permute(&f.ctx, kqv, 0, 2, 1, 3));  // [dv, n_head, n_q]
    f.compute(ref);

    ASSERT_TRUE(ggml_are_same_shape(fa, ref));
    const std::vector<float> got = get_values(fa), want = get_values(ref);
    for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], 2e-6) << "element " << i;
    }
}

} // namespace

TEST(CpuFlashAttn, EqualsSoftmaxOfScaledScoresTimesValues) {
    check_against_composition({64, 64, 5, 37, 4, 4, GGML_TYPE_F16, 0.125f, 0.0f, 0.0f, false});
}

TEST(CpuFlashAttn, GroupedQueryHeadsAndF32KV) {
    check_against_composition({40, 24, 3, 19, 6, 2, GGML_TYPE_F32, 0.3f, 0.0f, 0.0f, false});
}

TEST(CpuFlashAttn, AlibiSoftcapAndSinks) {
    check_against_composition({32, 32, 4, 21, 6, 3, GGML_TYPE_F16, 0.2f, 8.0f, 0.0f, true});
    check_against_composition({32, 16, 2, 50, 2, 1, GGML_TYPE_F16, 0.5f, 0.0f, 1.5f, true});
}

TEST(CpuFlashAttn, FullyMaskedQueryGivesZeros) {
    fixture       f;
    ggml_tensor * q    = new_filled(f.ctx, GGML_TYPE_F32, {8, 2, 1}, 1);
    ggml_tensor * k    = new_filled(f.ctx, GGML_TYPE_F16, {8, 3, 1}, 2);
    ggml_tensor * v    = new_filled(f.ctx, GGML_TYPE_F16, {8, 3, 1}, 3);
    ggml_tensor * mask = ggml_new_tensor_2d(&f.ctx, GGML_TYPE_F16, 3, 2);
    set_values(mask, {-kInf, -kInf, -kInf, 0, -kInf, -kInf});
    ggml_tensor * fa = ggml_flash_attn_ext(&f.ctx, q, k, v, mask, 1.0f, 0.0f, 0.0f);
    f.compute(fa);
    const std::vector<float> out = get_values(fa), vv = get_values(v);
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(out[size_t(i)], 0.0f);          // query 0: nothing to attend to
        EXPECT_EQ(out[size_t(8 + i)], vv[size_t(i)]);  // query 1: only key 0, weight exactly 1
    }
}
