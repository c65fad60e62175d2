// The `hexnpu test-ops` harness: the float64 evaluator against hand-computed answers for every op
// family (the oracle is checked on its own), the comparisons, the filters, the input fills, the
// runner with a deliberately wrong backend, and the whole catalog through the CLI.
#include "core/fp16.h"
#include "cpu/cpu-backend.h"
#include "testing/compare.h"
#include "testing/op-case.h"
#include "testing/ref-eval.h"
#include "testing/runner.h"
#include "testing/tensor-values.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <sys/wait.h>

using namespace hexnpu;
using namespace hexnpu::optest;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Tensors with hand-written contents and the evaluator that computes from them.
class Eval : public ::testing::Test {
  protected:
    ggml_tensor * f32(shape ne, const std::vector<float> & v) {
        ggml_tensor * t = ggml_new_tensor(&ctx_, GGML_TYPE_F32, 4, ne.data());
        EXPECT_EQ(size_t(ggml_nelements(t)), v.size());
        ev_.load(t, v.data());
        return t;
    }
    ggml_tensor * f16(shape ne, const std::vector<float> & v) {
        ggml_tensor *         t = ggml_new_tensor(&ctx_, GGML_TYPE_F16, 4, ne.data());
        std::vector<uint16_t> h;
        for (float x : v) {
            h.push_back(fp32_to_fp16(x));
        }
        ev_.load(t, h.data());
        return t;
    }
    ggml_tensor * i32(shape ne, const std::vector<int32_t> & v) {
        ggml_tensor * t = ggml_new_tensor(&ctx_, GGML_TYPE_I32, 4, ne.data());
        ev_.load(t, v.data());
        return t;
    }
    std::vector<double> eval(ggml_tensor * out) {
        ggml_cgraph graph;
        ggml_build_forward_expand(graph, out);
        ev_.compute(graph);
        return ev_.values(out);
    }
    static void expect_values(const std::vector<double> & got, const std::vector<double> & want, double tol = 1e-12) {
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i) {
            if (std::isinf(want[i])) {
                EXPECT_EQ(got[i], want[i]) << "at " << i;
            } else {
                EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
            }
        }
    }
    ggml_context * ctx() { return &ctx_; }

    ggml_context  ctx_;
    ref_evaluator ev_;
};

TEST_F(Eval, BinaryOpsRepeatSrc1) {
    ggml_tensor * a = f32({3, 2, 1, 1}, {1, 2, 3, 4, 5, 6});
    ggml_tensor * b = f32({3, 1, 1, 1}, {10, 20, 30});
    expect_values(eval(ggml_add(ctx(), a, b)), {11, 22, 33, 14, 25, 36});
    expect_values(eval(ggml_sub(ctx(), a, b)), {-9, -18, -27, -6, -15, -24});
    expect_values(eval(ggml_mul(ctx(), a, b)), {10, 40, 90, 40, 100, 180});
    ggml_tensor * col = f32({1, 2, 1, 1}, {2, 4});  // repeated along the row
    expect_values(eval(ggml_div(ctx(), a, col)), {0.5, 1, 1.5, 1, 1.25, 1.5});
}

TEST_F(Eval, AddIdAddsTheSelectedExpertsBias) {
    ggml_tensor * a    = f32({2, 2, 1, 1}, {1, 2, 3, 4});         // [ne0, n_used, n_tokens]
    ggml_tensor * bias = f32({2, 3, 1, 1}, {0, 0, 10, 20, 100, 200});
    ggml_tensor * ids  = i32({2, 1, 1, 1}, {2, 1});
    expect_values(eval(ggml_add_id(ctx(), a, bias, ids)), {101, 202, 13, 24});
}

TEST_F(Eval, UnaryKnownValues) {
    ggml_tensor * one = f32({1, 1, 1, 1}, {1.0f});
    const double  s1  = 1.0 / (1.0 + std::exp(-1.0));
    expect_values(eval(ggml_unary(ctx(), one, GGML_UNARY_OP_SILU)), {0.7310585786300049});
    expect_values(eval(ggml_unary(ctx(), one, GGML_UNARY_OP_SIGMOID)), {s1});
    expect_values(eval(ggml_unary(ctx(), one, GGML_UNARY_OP_GELU)), {0.8411919906082768});
    expect_values(eval(ggml_unary(ctx(), one, GGML_UNARY_OP_GELU_ERF)), {0.8413447460685429});
    expect_values(eval(ggml_unary(ctx(), one, GGML_UNARY_OP_GELU_QUICK)), {0.8457957659328212});
    expect_values(eval(ggml_unary(ctx(), one, GGML_UNARY_OP_TANH)), {0.7615941559557649});
    expect_values(eval(ggml_unary(ctx(), one, GGML_UNARY_OP_EXP)), {std::numbers::e});

    ggml_tensor * x = f32({4, 1, 1, 1}, {-2.0f, 0.0f, 30.0f, 800.0f});
    expect_values(eval(ggml_unary(ctx(), x, GGML_UNARY_OP_SOFTPLUS)),
                  {std::log1p(std::exp(-2.0)), std::numbers::ln2, 30.0 + std::exp(-30.0), 800.0});
    expect_values(eval(ggml_unary(ctx(), x, GGML_UNARY_OP_RELU)), {0, 0, 30, 800});
    expect_values(eval(ggml_unary(ctx(), x, GGML_UNARY_OP_ABS)), {2, 0, 30, 800});
    expect_values(eval(ggml_unary(ctx(), x, GGML_UNARY_OP_NEG)), {2, -0.0, -30, -800});
    expect_values(eval(ggml_sqr(ctx(), x)), {4, 0, 900, 640000});

    ggml_tensor * p = f32({2, 1, 1, 1}, {4.0f, 1.0f});
    expect_values(eval(ggml_sqrt(ctx(), p)), {2, 1});
    expect_values(eval(ggml_log(ctx(), p)), {2 * std::numbers::ln2, 0});
    expect_values(eval(ggml_sin(ctx(), p)), {std::sin(4.0), std::sin(1.0)});
    expect_values(eval(ggml_cos(ctx(), p)), {std::cos(4.0), std::cos(1.0)});
}

TEST_F(Eval, ScaleClampFill) {
    ggml_tensor * x = f32({3, 1, 1, 1}, {-1.0f, 0.5f, 2.0f});
    expect_values(eval(ggml_scale_bias(ctx(), x, 2.0f, 0.25f)), {-1.75, 1.25, 4.25});
    expect_values(eval(ggml_clamp(ctx(), x, -0.5f, 1.0f)), {-0.5, 0.5, 1.0});
    expect_values(eval(ggml_fill(ctx(), x, 7.0f)), {7, 7, 7});
}

TEST_F(Eval, GluHalvesSwapAndSeparateGate) {
    ggml_tensor * fused = f32({4, 1, 1, 1}, {1, 2, 3, 4});  // [x | g]
    const double  silu1 = 0.7310585786300049, silu2 = 2.0 / (1.0 + std::exp(-2.0));
    expect_values(eval(ggml_glu(ctx(), fused, nullptr, GGML_GLU_OP_SWIGLU, false)), {silu1 * 3, silu2 * 4});
    const double silu3 = 3.0 / (1.0 + std::exp(-3.0)), silu4 = 4.0 / (1.0 + std::exp(-4.0));
    expect_values(eval(ggml_glu(ctx(), fused, nullptr, GGML_GLU_OP_SWIGLU, true)), {silu3 * 1, silu4 * 2});
    ggml_tensor * x = f32({1, 1, 1, 1}, {1});
    ggml_tensor * g = f32({1, 1, 1, 1}, {5});
    expect_values(eval(ggml_glu(ctx(), x, g, GGML_GLU_OP_GEGLU, false)), {0.8411919906082768 * 5});
    // SWIGLU_OAI caps x = 10 at 7 and clamps g = -9 to -7: 7 * sigmoid(1.702 * 7) * (-7 + 1).
    ggml_tensor * oai = f32({2, 1, 1, 1}, {10, -9});
    expect_values(eval(ggml_swiglu_oai(ctx(), oai, nullptr, 1.702f, 7.0f)), {-41.99971876981991}, 1e-6);
}

TEST_F(Eval, ReductionsAndScans) {
    ggml_tensor * x = f32({4, 2, 1, 1}, {1, 2, 3, 4, -1, 0.5f, 0, 2});
    expect_values(eval(ggml_sum_rows(ctx(), x)), {10, 1.5});
    expect_values(eval(ggml_mean(ctx(), x)), {2.5, 0.375});
    expect_values(eval(ggml_cumsum(ctx(), x)), {1, 3, 6, 10, -1, -0.5, -0.5, 1.5});
}

TEST_F(Eval, SortsAndTopK) {
    ggml_tensor * x = f32({4, 1, 1, 1}, {3, 1, 2, 5});
    expect_values(eval(ggml_argsort(ctx(), x, GGML_SORT_ORDER_ASC)), {1, 2, 0, 3});
    expect_values(eval(ggml_argsort(ctx(), x, GGML_SORT_ORDER_DESC)), {3, 0, 2, 1});
    expect_values(eval(ggml_top_k(ctx(), x, 2)), {3, 0});
}

TEST_F(Eval, ConcatRepeatPad) {
    ggml_tensor * a = f32({2, 2, 1, 1}, {1, 2, 3, 4});
    ggml_tensor * b = f32({1, 2, 1, 1}, {5, 6});
    expect_values(eval(ggml_concat(ctx(), a, b, 0)), {1, 2, 5, 3, 4, 6});
    ggml_tensor * c = f32({2, 1, 1, 1}, {7, 8});
    expect_values(eval(ggml_concat(ctx(), a, c, 1)), {1, 2, 3, 4, 7, 8});
    expect_values(eval(ggml_repeat(ctx(), c, ggml_new_tensor_2d(ctx(), GGML_TYPE_F32, 4, 2))), {7, 8, 7, 8, 7, 8, 7, 8});
    expect_values(eval(ggml_pad(ctx(), a, 1, 1, 0, 0)), {1, 2, 0, 3, 4, 0, 0, 0, 0});
}

TEST_F(Eval, CopiesRoundToTheDestinationType) {
    ggml_tensor * x = f32({2, 1, 1, 1}, {1.0f / 3.0f, 65519.0f});
    // 1/3 rounds to 0x3555 = 0.333251953125; 65519 is below the overflow threshold 65520.
    expect_values(eval(ggml_cast(ctx(), x, GGML_TYPE_F16)), {0.333251953125, 65504});
    // A row of 32 ones in Q8_0: d = fp16(1/127) = 0.00787353515625 and q = 127.
    std::vector<float> ones(32, 1.0f);
    ggml_tensor *      row = f32({32, 1, 1, 1}, ones);
    const auto         q   = eval(ggml_cast(ctx(), row, GGML_TYPE_Q8_0));
    expect_values(q, std::vector<double>(32, 127 * 0.00787353515625));
    // A permuted (transposed) source is copied in its logical order.
    ggml_tensor * m = f32({3, 2, 1, 1}, {1, 2, 3, 4, 5, 6});
    expect_values(eval(ggml_cont(ctx(), ggml_transpose(ctx(), m))), {1, 4, 2, 5, 3, 6});
}

TEST_F(Eval, GetRowsDequantizesAndSetRowsScatters) {
    // One Q8_0 block: d = 0.5 (fp16 0x3800), q[i] = i - 16.
    ggml_tensor *        q8 = ggml_new_tensor_2d(ctx(), GGML_TYPE_Q8_0, 32, 1);
    std::vector<uint8_t> block = {0x00, 0x38};
    std::vector<double>  want;
    for (int i = 0; i < 32; ++i) {
        block.push_back(uint8_t(int8_t(i - 16)));
        want.push_back(0.5 * (i - 16));
    }
    ev_.load(q8, block.data());
    expect_values(eval(ggml_get_rows(ctx(), q8, i32({1, 1, 1, 1}, {0}))), want);

    ggml_tensor * table = f32({2, 3, 1, 1}, {1, 2, 3, 4, 5, 6});
    expect_values(eval(ggml_get_rows(ctx(), table, i32({3, 1, 1, 1}, {2, 0, 2}))), {5, 6, 1, 2, 5, 6});

    ggml_tensor * dst = f32({2, 3, 1, 1}, {0, 0, 0, 0, 0, 0});
    ggml_tensor * src = f32({2, 2, 1, 1}, {7, 8, 9, 10});
    expect_values(eval(ggml_set_rows(ctx(), dst, src, i32({2, 1, 1, 1}, {2, 0}))), {9, 10, 0, 0, 7, 8});
}

TEST_F(Eval, Norms) {
    ggml_tensor * x = f32({4, 1, 1, 1}, {1, 2, 3, 4});
    expect_values(eval(ggml_norm(ctx(), x, 0.0f)),
                  {-1.3416407864998738, -0.4472135954999579, 0.4472135954999579, 1.3416407864998738});
    ggml_tensor * y = f32({2, 1, 1, 1}, {3, 4});
    expect_values(eval(ggml_rms_norm(ctx(), y, 0.0f)), {3 / std::sqrt(12.5), 4 / std::sqrt(12.5)});
    expect_values(eval(ggml_l2_norm(ctx(), y, 0.0f)), {0.6, 0.8});
    // eps bounds the L2 divisor: a tiny row is scaled by 1/eps, not normalized.
    ggml_tensor * tiny = f32({2, 1, 1, 1}, {3e-7f, 4e-7f});
    expect_values(eval(ggml_l2_norm(ctx(), tiny, 1e-3f)), {3e-4, 4e-4}, 1e-9);
}

TEST_F(Eval, MatMulBroadcastsWeightsOverDims2And3) {
    // a: one 2x3 weight matrix; b: 2 batches of one row each.
    ggml_tensor * a = f32({3, 2, 1, 1}, {1, 0, 2, 0, 1, -1});
    ggml_tensor * b = f32({3, 1, 2, 1}, {1, 2, 3, 4, 5, 6});
    expect_values(eval(ggml_mul_mat(ctx(), a, b)), {7, -1, 16, -1});
}

TEST_F(Eval, MulMatIdUsesEachSlotsExpert) {
    ggml_tensor * as  = f32({2, 1, 3, 1}, {1, 0, 0, 1, 1, 1});  // experts: e0 = [1,0], e1 = [0,1], e2 = [1,1]
    ggml_tensor * b   = f32({2, 2, 1, 1}, {2, 3, 5, 7});        // slot rows of one token
    ggml_tensor * ids = i32({2, 1, 1, 1}, {2, 1});
    expect_values(eval(ggml_mul_mat_id(ctx(), as, b, ids)), {5, 7});
    ggml_tensor * shared = f32({2, 1, 1, 1}, {2, 3});  // one row for both slots
    expect_values(eval(ggml_mul_mat_id(ctx(), as, shared, ids)), {5, 3});
}

TEST_F(Eval, SoftMaxScaleMaskAlibiSinks) {
    const double  e = std::numbers::e;
    ggml_tensor * x = f32({2, 1, 1, 1}, {0.0f, 1.0f});
    expect_values(eval(ggml_soft_max_ext(ctx(), x, nullptr, 1.0f, 0.0f)), {1 / (1 + e), e / (1 + e)});
    expect_values(eval(ggml_soft_max_ext(ctx(), x, nullptr, 2.0f, 0.0f)), {1 / (1 + e * e), e * e / (1 + e * e)});
    ggml_tensor * masked = f32({2, 1, 1, 1}, {0.0f, -INFINITY});
    expect_values(eval(ggml_soft_max_ext(ctx(), x, masked, 1.0f, 0.0f)), {1, 0});
    // ALiBi with 2 heads and max_bias 8: slopes 2^-4 and 2^-8, so a mask entry of 16 adds 1 in
    // head 0 and 1/16 in head 1.
    ggml_tensor * zeros = f32({2, 1, 2, 1}, {0, 0, 0, 0});
    ggml_tensor * bias  = f16({2, 1, 1, 1}, {0.0f, 16.0f});
    const double  h1    = std::exp(1.0 / 16);
    expect_values(eval(ggml_soft_max_ext(ctx(), zeros, bias, 1.0f, 8.0f)),
                  {1 / (1 + e), e / (1 + e), 1 / (1 + h1), h1 / (1 + h1)});
    // A sink logit of 0 takes a third of the mass from a row of two zeros.
    ggml_tensor * two = f32({2, 1, 1, 1}, {0, 0});
    ggml_tensor * sm  = ggml_soft_max_ext(ctx(), two, nullptr, 1.0f, 0.0f);
    ggml_soft_max_add_sinks(sm, f32({1, 1, 1, 1}, {0}));
    expect_values(eval(sm), {1.0 / 3, 1.0 / 3});
}

TEST_F(Eval, RopeNormalNeoxFreqFactorsYarn) {
    ggml_tensor * pos = i32({1, 1, 1, 1}, {1});
    ggml_tensor * x2  = f32({2, 1, 1, 1}, {1, 0});
    // One pair: theta = pos = 1.
    expect_values(eval(ggml_rope_ext(ctx(), x2, pos, nullptr, 2, GGML_ROPE_TYPE_NORMAL, 0, 10000, 1, 0, 1, 0, 0)),
                  {std::cos(1.0), std::sin(1.0)});
    // NEOX pairs element i with i + n_dims/2: (x0, x2) turns by theta 1, (x1, x3) by 1/100.
    ggml_tensor * x4 = f32({4, 1, 1, 1}, {1, 1, 0, 0});
    expect_values(eval(ggml_rope_ext(ctx(), x4, pos, nullptr, 4, GGML_ROPE_TYPE_NEOX, 0, 10000, 1, 0, 1, 0, 0)),
                  {std::cos(1.0), std::cos(0.01), std::sin(1.0), std::sin(0.01)});
    // Frequency factor 2 halves the angle; dims past n_dims pass through.
    ggml_tensor * x3 = f32({4, 1, 1, 1}, {1, 0, 5, 6});
    ggml_tensor * ff = f32({1, 1, 1, 1}, {2});
    expect_values(eval(ggml_rope_ext(ctx(), x3, pos, ff, 2, GGML_ROPE_TYPE_NORMAL, 0, 10000, 1, 0, 1, 0, 0)),
                  {std::cos(0.5), std::sin(0.5), 5, 6});
    // YaRN, base 1e9, n_dims 4, n_ctx_orig 4096, betas 32/1: correction dims 0 and 1, so pair 0
    // extrapolates (theta = 2) and pair 1 interpolates (theta = 0.25 * 2 / sqrt(1e9)); both
    // magnitudes grow by 1 + 0.1 ln 4.
    ggml_tensor * pos2 = i32({1, 1, 1, 1}, {2});
    ggml_tensor * y    = f32({4, 1, 1, 1}, {1, 0, 1, 0});
    const double  m    = 1.138629436111989;
    const double  t1   = 0.25 * 2 / std::sqrt(1e9);
    expect_values(eval(ggml_rope_ext(ctx(), y, pos2, nullptr, 4, GGML_ROPE_TYPE_NORMAL, 4096, 1e9f, 0.25f, 1.0f, 1.0f,
                                     32.0f, 1.0f)),
                  {m * std::cos(2.0), m * std::sin(2.0), m * std::cos(t1), m * std::sin(t1)}, 1e-7);
}

TEST_F(Eval, FlashAttentionKnownAnswer) {
    // One query [1, 0] against keys [1, 0] and [0, 1]: scores 1 and 0, weights e/(e+1), 1/(e+1).
    ggml_tensor * q = f32({2, 1, 1, 1}, {1, 0});
    ggml_tensor * k = f16({2, 2, 1, 1}, {1, 0, 0, 1});
    ggml_tensor * v = f16({2, 2, 1, 1}, {1, 2, 3, 4});
    const double  e = std::numbers::e;
    expect_values(eval(ggml_flash_attn_ext(ctx(), q, k, v, nullptr, 1.0f, 0.0f, 0.0f)),
                  {(e + 3) / (e + 1), (2 * e + 4) / (e + 1)});
    // A -inf mask on key 0 leaves only value 1; a fully masked query gets zeros.
    ggml_tensor * mask = f16({2, 2, 1, 1}, {-INFINITY, 0, -INFINITY, -INFINITY});
    ggml_tensor * q2   = f32({2, 2, 1, 1}, {1, 0, 1, 0});
    expect_values(eval(ggml_flash_attn_ext(ctx(), q2, k, v, mask, 1.0f, 0.0f, 0.0f)), {3, 4, 0, 0});
    // Softcap 1 turns score 1 into tanh(1); a sink of 0 joins the denominator.
    ggml_tensor * fa = ggml_flash_attn_ext(ctx(), q, k, v, nullptr, 1.0f, 0.0f, 1.0f);
    ggml_flash_attn_ext_add_sinks(fa, f32({1, 1, 1, 1}, {0}));
    const double w0 = std::exp(std::tanh(1.0)), sum = w0 + 1 + 1;
    expect_values(eval(fa), {(w0 * 1 + 3) / sum, (w0 * 2 + 4) / sum});
}

TEST_F(Eval, FlashAttentionEqualsSoftmaxOfScoresTimesValues) {
    // Identity: FA(q, k, v) = V softmax(scale K^T q + mask) per head, with GQA (4 query heads on
    // 2 K/V heads); checked on seeded random data, both sides in the evaluator.
    const int64_t d = 8, n_q = 3, n_kv = 5, n_head = 4, n_head_kv = 2;
    ggml_context  ctx;
    case_graph    g(ctx);
    ggml_tensor * q    = g.input(GGML_TYPE_F32, {d, n_q, n_head, 1});
    ggml_tensor * k    = g.input(GGML_TYPE_F32, {d, n_kv, n_head_kv, 1});
    ggml_tensor * v    = g.input(GGML_TYPE_F32, {d, n_kv, n_head_kv, 1});
    ggml_tensor * mask = g.input(GGML_TYPE_F32, {n_kv, n_q, 1, 1}, mask_fill());
    for (size_t i = 0; i < g.inputs().size(); ++i) {
        const auto & [t, fill] = g.inputs()[i];
        ev_.load(t, make_input_bytes(t, fill, input_seed("fa-identity", i)).data());
    }
    const float   scale = 0.3f;
    ggml_tensor * fa    = ggml_flash_attn_ext(&ctx, q, k, v, mask, scale, 0.0f, 0.0f);
    // Repeat each K/V head for its two query heads, then the plain attention graph.
    ggml_tensor * k_rep  = ggml_repeat(&ctx, ggml_reshape_4d(&ctx, k, d, n_kv, 1, n_head_kv),
                                       ggml_new_tensor_4d(&ctx, GGML_TYPE_F32, d, n_kv, 2, n_head_kv));
    ggml_tensor * v_rep  = ggml_repeat(&ctx, ggml_reshape_4d(&ctx, v, d, n_kv, 1, n_head_kv),
                                       ggml_new_tensor_4d(&ctx, GGML_TYPE_F32, d, n_kv, 2, n_head_kv));
    ggml_tensor * k_h    = ggml_reshape_3d(&ctx, k_rep, d, n_kv, n_head);
    ggml_tensor * v_h    = ggml_reshape_3d(&ctx, v_rep, d, n_kv, n_head);
    ggml_tensor * scores = ggml_mul_mat(&ctx, k_h, q);                     // [n_kv, n_q, n_head]
    ggml_tensor * probs  = ggml_soft_max_ext(&ctx, scores, mask, scale, 0.0f);
    ggml_tensor * v_t    = ggml_cont(&ctx, ggml_transpose(&ctx, v_h));     // [n_kv, d, n_head]
    ggml_tensor * out    = ggml_mul_mat(&ctx, v_t, probs);                 // [d, n_q, n_head]
    ggml_tensor * plain  = ggml_cont(&ctx, ggml_permute(&ctx, out, 0, 2, 1, 3));  // [d, n_head, n_q]
    const auto    want   = eval(plain);
    expect_values(eval(fa), want, 1e-12);
}

TEST_F(Eval, SoftMaxRowsSumToOneAndRopePreservesNorms) {
    ggml_context  ctx;
    case_graph    g(ctx);
    ggml_tensor * x    = g.input(GGML_TYPE_F32, {37, 6, 2, 1}, uniform(-5, 5));
    ggml_tensor * mask = g.input(GGML_TYPE_F16, {37, 6, 1, 1}, mask_fill());
    ggml_tensor * pos  = g.input(GGML_TYPE_I32, {2, 1, 1, 1}, indices(1000));
    for (size_t i = 0; i < g.inputs().size(); ++i) {
        const auto & [t, fill] = g.inputs()[i];
        ev_.load(t, make_input_bytes(t, fill, input_seed("identities", i)).data());
    }
    const auto p = eval(ggml_soft_max_ext(&ctx, x, mask, 0.7f, 0.0f));
    for (size_t row = 0; row < p.size() / 37; ++row) {
        double sum = 0.0;
        for (size_t i = 0; i < 37; ++i) {
            sum += p[row * 37 + i];
        }
        EXPECT_NEAR(sum, 1.0, 1e-12) << "row " << row;
    }
    // Rotations keep each rotated pair's length; NEOX pairs (i, i + 18) of a 36-dim rotation.
    const auto in = ev_.values(ggml_view_4d(&ctx, x, 36, 6, 2, 1, x->nb[1], x->nb[2], x->nb[3], 0));
    for (const int mode : {GGML_ROPE_TYPE_NORMAL, GGML_ROPE_TYPE_NEOX}) {
        const auto out = eval(ggml_rope_ext(&ctx, ggml_view_4d(&ctx, x, 36, 6, 2, 1, x->nb[1], x->nb[2], x->nb[3], 0),
                                            pos, nullptr, 36, mode, 0, 10000, 1, 0, 1, 0, 0));
        for (size_t row = 0; row < out.size() / 36; ++row) {
            for (size_t j = 0; j < 18; ++j) {
                const size_t a = row * 36 + (mode == GGML_ROPE_TYPE_NEOX ? j : 2 * j);
                const size_t b = row * 36 + (mode == GGML_ROPE_TYPE_NEOX ? j + 18 : 2 * j + 1);
                EXPECT_NEAR(std::hypot(out[a], out[b]), std::hypot(in[a], in[b]), 1e-12);
            }
        }
    }
}

TEST(Compare, NmseAcceptsNoiseAndRejectsAPerturbation) {
    const std::vector<double> want = {1.0, -2.0, 3.0, 0.5};
    EXPECT_TRUE(compare_nmse(want, want, 0.0).ok);
    std::vector<double> got = want;
    got[2] += 3e-4;  // NMSE = 9e-8 / 14.25 = 6.3e-9
    const comparison c = compare_nmse(got, want, 1e-8);
    EXPECT_TRUE(c.ok);
    EXPECT_NEAR(c.nmse, 9e-8 / 14.25, 1e-15);
    got[2] += 3e-3;
    EXPECT_FALSE(compare_nmse(got, want, 1e-8).ok);
    // An all-zero reference is matched only exactly.
    EXPECT_TRUE(compare_nmse(std::vector<double>{0, 0}, std::vector<double>{0, 0}, 1e-8).ok);
    EXPECT_FALSE(compare_nmse(std::vector<double>{0, 1e-30}, std::vector<double>{0, 0}, 1e-8).ok);
}

TEST(Compare, NonFinitePositionsMustMatch) {
    const std::vector<double> want = {1.0, -kInf, NAN, kInf};
    EXPECT_TRUE(compare_nmse(std::vector<double>{1.0, -kInf, NAN, kInf}, want, 1e-12).ok);
    EXPECT_FALSE(compare_nmse(std::vector<double>{1.0, kInf, NAN, kInf}, want, 1e-12).ok);
    EXPECT_FALSE(compare_nmse(std::vector<double>{1.0, -kInf, 0.0, kInf}, want, 1e-12).ok);
    EXPECT_FALSE(compare_nmse(std::vector<double>{NAN, -kInf, NAN, kInf}, want, 1e-12).ok);
}

TEST(Compare, ArgsortLetsTiesComeInAnyOrder) {
    const std::vector<double> keys = {2, 1, 2, 0};
    const std::vector<double> want = {3, 1, 0, 2};
    EXPECT_TRUE(compare_argsort(want, want, keys, 4).ok);
    EXPECT_TRUE(compare_argsort(std::vector<double>{3, 1, 2, 0}, want, keys, 4).ok);   // the two 2s swapped
    EXPECT_FALSE(compare_argsort(std::vector<double>{1, 3, 0, 2}, want, keys, 4).ok);  // 1 before 0
    EXPECT_FALSE(compare_argsort(std::vector<double>{3, 1, 0, 0}, want, keys, 4).ok);  // repeated index
    EXPECT_FALSE(compare_argsort(std::vector<double>{3, 1, 0, 4}, want, keys, 4).ok);  // out of range
}

TEST(Compare, TopKIsASetOfKeys) {
    const std::vector<double> keys = {5, 9, 7, 9, 1};
    const std::vector<double> want = {1, 3, 2};
    EXPECT_TRUE(compare_top_k(std::vector<double>{2, 3, 1}, want, keys, 3, 5).ok);
    EXPECT_FALSE(compare_top_k(std::vector<double>{1, 3, 0}, want, keys, 3, 5).ok);
    EXPECT_FALSE(compare_top_k(std::vector<double>{1, 1, 2}, want, keys, 3, 5).ok);
}

TEST(Fill, SeededAndShapedAsAsked) {
    ggml_context  ctx;
    ggml_tensor * mask = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 16, 9);
    const auto    a    = make_input_bytes(mask, mask_fill(3), 42);
    EXPECT_EQ(a, make_input_bytes(mask, mask_fill(3), 42));
    EXPECT_NE(a, make_input_bytes(mask, mask_fill(3), 43));
    const auto m = decode_slots(GGML_TYPE_F32, a.data(), a.size());
    for (size_t row = 0; row < 9; ++row) {
        const bool whole = row % 3 == 2;
        EXPECT_EQ(std::isinf(m[row * 16]), whole) << "row " << row;
        for (size_t i = 0; i < 16; ++i) {
            EXPECT_TRUE(std::isinf(m[row * 16 + i]) ? m[row * 16 + i] < 0 : std::fabs(m[row * 16 + i]) <= 1.0);
        }
    }
    ggml_tensor * ids  = ggml_new_tensor_2d(&ctx, GGML_TYPE_I64, 6, 20);
    const auto    b    = make_input_bytes(ids, distinct_indices(6), 7);
    const auto    v    = decode_slots(GGML_TYPE_I64, b.data(), b.size());
    for (size_t row = 0; row < 20; ++row) {
        EXPECT_EQ(std::set<double>(v.begin() + long(row * 6), v.begin() + long(row * 6 + 6)).size(), 6u);
    }
    ggml_tensor * keys = ggml_new_tensor_1d(&ctx, GGML_TYPE_F16, 100);
    const auto    c    = make_input_bytes(keys, distinct_values(), 1);
    const auto    k    = decode_slots(GGML_TYPE_F16, c.data(), c.size());
    EXPECT_EQ(std::set<double>(k.begin(), k.end()).size(), 100u);
    EXPECT_THROW(make_input_bytes(ids, uniform(0, 1), 1), std::invalid_argument);
}

op_case silu_f16_case() {
    return {"probe", kMathTol, [](case_graph & g) {
                return ggml_unary(g.ctx(), g.input(GGML_TYPE_F16, {8, 2, 1, 1}), GGML_UNARY_OP_SILU);
            }};
}

TEST(Filter, OpByNameOrDescriptionAndType) {
    const case_info info = describe(silu_f16_case());
    EXPECT_EQ(info.name, "SILU(probe)");
    EXPECT_EQ(info.op_name, "UNARY");
    EXPECT_TRUE((case_filter{"silu", {}}.matches(info)));
    EXPECT_TRUE((case_filter{"UNARY", {}}.matches(info)));
    EXPECT_TRUE((case_filter{"", GGML_TYPE_F16}.matches(info)));
    EXPECT_FALSE((case_filter{"GELU", {}}.matches(info)));
    EXPECT_FALSE((case_filter{"SILU", GGML_TYPE_F32}.matches(info)));

    const case_info mm = describe(op_case{"probe", kExactTol, [](case_graph & g) {
                                              return ggml_mul_mat_id(g.ctx(), g.input(GGML_TYPE_Q4_0, {32, 2, 3, 1}),
                                                                     g.input(GGML_TYPE_F32, {32, 1, 1, 1}),
                                                                     g.input(GGML_TYPE_I32, {1, 1, 1, 1}, indices(3)));
                                          }});
    EXPECT_FALSE((case_filter{"MUL_MAT", {}}.matches(mm)));  // whole names only
    EXPECT_TRUE((case_filter{"mul_mat_id", GGML_TYPE_Q4_0}.matches(mm)));
}

TEST(Catalog, CoversEveryOpAndWeightTypeWithUniqueNames) {
    std::set<std::string>            names, ops;
    std::set<ggml_type>              mul_mat_weights;
    const std::vector<op_case> &     catalog = op_case_catalog();
    for (const op_case & c : catalog) {
        const case_info info = describe(c);
        EXPECT_TRUE(names.insert(info.name).second) << "duplicate " << info.name;
        ops.insert(info.op_desc);
        if (info.op_name == "MUL_MAT") {
            for (ggml_type t : info.types) {
                mul_mat_weights.insert(t);
            }
        }
    }
    EXPECT_GE(catalog.size(), 400u);
    for (const char * op : {"GET_ROWS", "SET_ROWS", "CPY", "CONT", "DUP", "ADD", "SUB", "MUL", "DIV", "ADD_ID",
                            "SCALE", "CLAMP", "SQR", "SQRT", "LOG", "SIN", "COS", "SUM_ROWS", "MEAN", "CUMSUM",
                            "ARGSORT", "TOP_K", "CONCAT", "REPEAT", "PAD", "FILL", "NORM", "RMS_NORM", "L2_NORM",
                            "NEG", "ABS", "EXP", "SIGMOID", "SILU", "GELU", "GELU_QUICK", "GELU_ERF", "TANH", "RELU",
                            "SOFTPLUS", "SWIGLU", "GEGLU", "SWIGLU_OAI", "SOFT_MAX", "ROPE", "MUL_MAT", "MUL_MAT_ID",
                            "FLASH_ATTN_EXT", "SUM", "ARGMAX", "LEAKY_RELU", "ROLL", "IM2COL", "DIAG", "TRI",
                            "SSM_CONV", "SOLVE_TRI", "GATED_DELTA_NET"}) {
        EXPECT_TRUE(ops.count(op)) << op << " has no case";
    }
    for (int id = 0; id < GGML_TYPE_COUNT; ++id) {
        const ggml_type_traits * tr = ggml_get_type_traits(id);
        if (!tr->retired && tr->to_float) {
            EXPECT_TRUE(mul_mat_weights.count(ggml_type(id))) << ggml_type_name(ggml_type(id)) << " weights untested";
        }
    }
}

// Computes with the CPU backend, then adds `error` to the first element of the result; refuses
// SOFT_MAX. Stands in for a backend under test.
class faulty_device final : public backend_device {
  public:
    explicit faulty_device(float error) : cpu_(make_cpu_device()), error_(error) {}
    const char *          name() const override { return "FAULTY"; }
    std::string           description() const override { return "CPU plus an error"; }
    backend_device_type   type() const override { return backend_device_type::accel; }
    void                  memory(size_t & free, size_t & total) const override { cpu_->memory(free, total); }
    backend_buffer_type * buffer_type() override { return cpu_->buffer_type(); }
    std::unique_ptr<backend> init_backend() override;
    bool supports_op(const ggml_tensor * op) const override { return op->op != GGML_OP_SOFT_MAX && cpu_->supports_op(op); }
    bool supports_buft(const backend_buffer_type * buft) const override { return cpu_->supports_buft(buft); }

  private:
    friend class faulty_backend;
    std::unique_ptr<backend_device> cpu_;
    float                           error_;
};

class faulty_backend final : public backend {
  public:
    explicit faulty_backend(faulty_device * dev) : dev_(dev), cpu_(dev->cpu_->init_backend()) {}
    const char *     name() const override { return "FAULTY"; }
    backend_device * device() const override { return dev_; }
    void             graph_compute(ggml_cgraph & graph) override {
        cpu_->graph_compute(graph);
        ggml_tensor * out = graph.nodes.back();
        static_cast<float *>(out->data)[0] += dev_->error_;
    }

  private:
    faulty_device *          dev_;
    std::unique_ptr<backend> cpu_;
};

std::unique_ptr<backend> faulty_device::init_backend() { return std::make_unique<faulty_backend>(this); }

op_case matmul_case() {
    return {"probe", {1e-9, 1e-6}, [](case_graph & g) {
                return ggml_mul_mat(g.ctx(), g.input(GGML_TYPE_Q4_0, {64, 8, 1, 1}), g.input(GGML_TYPE_F32, {64, 3, 1, 1}));
            }};
}

TEST(Runner, JudgesABackendAgainstTheCpuAndTheCpuAgainstFloat64) {
    std::unique_ptr<backend_device> cpu = make_cpu_device();
    const op_case                   mm  = matmul_case();
    const case_info                 info = describe(mm);

    case_runner cpu_vs_f64(*cpu, nullptr);
    EXPECT_EQ(cpu_vs_f64.check(mm, info).v, verdict::pass);

    faulty_device exact(0.0f);
    case_runner   exact_vs_cpu(exact, cpu.get());
    EXPECT_EQ(exact_vs_cpu.check(mm, info).v, verdict::pass);

    faulty_device     off(0.05f);  // one element off by 0.05 in 24: far above 1e-6
    case_runner       off_vs_cpu(off, cpu.get());
    const case_result r = off_vs_cpu.check(mm, info);
    EXPECT_EQ(r.v, verdict::fail);
    EXPECT_NE(r.detail.find("NMSE="), std::string::npos);

    const op_case softmax = {"probe", kSumTol, [](case_graph & g) {
                                 return ggml_soft_max_ext(g.ctx(), g.input(GGML_TYPE_F32, {8, 2, 1, 1}), nullptr, 1.0f, 0.0f);
                             }};
    const case_result s = off_vs_cpu.check(softmax, describe(softmax));
    EXPECT_EQ(s.v, verdict::skipped);
    EXPECT_EQ(s.detail, "not supported by FAULTY");

    const auto perf = exact_vs_cpu.perf(mm, 0.0);
    ASSERT_TRUE(perf.has_value());
    EXPECT_GE(perf->runs, 3);
    EXPECT_EQ(perf->flops, 2.0 * 8 * 3 * 64);
    EXPECT_FALSE(exact_vs_cpu.perf(softmax, 0.0).has_value());
}

struct command_result {
    int         exit_code;
    std::string output;
};

command_result run_test_ops(const std::string & args) {
    const std::string command = std::string(HEXNPU_BIN_DIR "/hexnpu test-ops ") + args + " 2>&1";
    FILE *            pipe    = popen(command.c_str(), "r");
    if (!pipe) {
        return {-1, "popen failed"};
    }
    std::string output;
    char        buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) {
        output.append(buf, n);
    }
    const int status = pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

std::string last_line(const std::string & output) {
    std::istringstream lines(output);
    std::string        line, last;
    while (std::getline(lines, line)) {
        last = line;
    }
    return last;
}

TEST(Cli, WholeCatalogPassesOnCpuAgainstFloat64) {
    const command_result r = run_test_ops("-b CPU");
    std::smatch          m;
    const std::string    last = last_line(r.output);
    ASSERT_TRUE(std::regex_match(last, m, std::regex(R"((\d+) passed, 0 failed)"))) << last << "\n" << r.output;
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(std::stoul(m[1]), op_case_catalog().size());
}

TEST(Cli, FiltersAndFailures) {
    const command_result silu = run_test_ops("-o silu -t f16");
    EXPECT_EQ(silu.exit_code, 0);
    EXPECT_EQ(last_line(silu.output), "1 passed, 0 failed");
    EXPECT_NE(silu.output.find("SILU(type=f16,ne=[16,3,2,1]): NMSE="), std::string::npos) << silu.output;

    const command_result none = run_test_ops("-o NO_SUCH_OP");
    EXPECT_EQ(none.exit_code, 1);  // nothing matched: an error, not an empty run
    EXPECT_EQ(last_line(none.output).rfind("error: no op case matches -o NO_SUCH_OP", 0), 0u) << none.output;

    EXPECT_NE(run_test_ops("-b NO_SUCH_BACKEND").exit_code, 0);
    EXPECT_NE(run_test_ops("-t q9_9").exit_code, 0);
}

} // namespace
