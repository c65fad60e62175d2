// Tensor shapes, strides, views and graph ordering against GGML's rules, worked out by hand.
#include "hexnpu/graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>

using namespace hexnpu;

TEST(Tensor, ContiguousStridesAndSizes) {
    ggml_context  ctx;
    ggml_tensor * f = ggml_new_tensor_3d(&ctx, GGML_TYPE_F32, 5, 3, 2);
    EXPECT_EQ(f->nb[0], 4u);
    EXPECT_EQ(f->nb[1], 20u);
    EXPECT_EQ(f->nb[2], 60u);
    EXPECT_EQ(f->nb[3], 120u);
    EXPECT_EQ(ggml_nbytes(f), 120u);
    EXPECT_EQ(ggml_nrows(f), 6);
    EXPECT_EQ(ggml_n_dims(f), 3);
    EXPECT_TRUE(ggml_is_contiguous(f));

    ggml_tensor * q = ggml_new_tensor_2d(&ctx, GGML_TYPE_Q4_K, 512, 3);
    EXPECT_EQ(q->nb[0], 144u);  // one block
    EXPECT_EQ(q->nb[1], 288u);  // two blocks per row
    EXPECT_EQ(ggml_nbytes(q), 864u);
    EXPECT_THROW(ggml_new_tensor_1d(&ctx, GGML_TYPE_Q4_0, 33), std::invalid_argument);
}

TEST(Tensor, ViewsPermutesAndReshapes) {
    ggml_context  ctx;
    ggml_tensor * a = ggml_new_tensor_3d(&ctx, GGML_TYPE_F32, 8, 4, 3);  // nb = 4, 32, 128
    ggml_tensor * v = ggml_view_2d(&ctx, a, 4, 3, a->nb[1], 16);         // 4 cols x 3 rows from col 4
    EXPECT_EQ(v->view_src, a);
    EXPECT_EQ(v->view_offs, 16u);
    EXPECT_EQ(ggml_nbytes(v), 4u + 3 * 4 + 2 * 32);  // last element at 2*32 + 3*4
    EXPECT_FALSE(ggml_is_contiguous(v));

    ggml_tensor * vv = ggml_view_1d(&ctx, v, 2, 32);  // a view of a view is based on the original tensor
    EXPECT_EQ(vv->view_src, a);
    EXPECT_EQ(vv->view_offs, 48u);

    ggml_tensor * p = ggml_permute(&ctx, a, 0, 2, 1, 3);
    EXPECT_EQ(p->ne[0], 8);
    EXPECT_EQ(p->ne[1], 3);
    EXPECT_EQ(p->ne[2], 4);
    EXPECT_EQ(p->nb[1], 128u);
    EXPECT_EQ(p->nb[2], 32u);
    EXPECT_TRUE(ggml_is_permuted(p));
    EXPECT_FALSE(ggml_is_transposed(p));
    EXPECT_THROW(ggml_reshape_1d(&ctx, p, 96), std::invalid_argument);  // not contiguous

    ggml_tensor * t = ggml_transpose(&ctx, a);
    EXPECT_EQ(t->ne[0], 4);
    EXPECT_EQ(t->nb[0], 32u);
    EXPECT_TRUE(ggml_is_transposed(t));

    ggml_tensor * r = ggml_reshape_2d(&ctx, a, 32, 3);
    EXPECT_EQ(r->nb[1], 128u);
    EXPECT_EQ(r->view_src, a);
    EXPECT_THROW(ggml_reshape_2d(&ctx, a, 32, 4), std::invalid_argument);  // element count changes
    EXPECT_THROW(ggml_view_1d(&ctx, a, 97, 0), std::invalid_argument);     // past the end
    EXPECT_THROW(ggml_permute(&ctx, a, 0, 1, 1, 3), std::invalid_argument);
}

TEST(Tensor, OpShapes) {
    ggml_context ctx;
    // mul_mat(a [K, N, 2, 1], b [K, M, 6, 2]) -> [N, M, 6, 2]
    ggml_tensor * a  = ggml_new_tensor_4d(&ctx, GGML_TYPE_Q8_0, 64, 10, 2, 1);
    ggml_tensor * b  = ggml_new_tensor_4d(&ctx, GGML_TYPE_F32, 64, 7, 6, 2);
    ggml_tensor * mm = ggml_mul_mat(&ctx, a, b);
    EXPECT_EQ(mm->type, GGML_TYPE_F32);
    EXPECT_EQ(mm->ne[0], 10);
    EXPECT_EQ(mm->ne[1], 7);
    EXPECT_EQ(mm->ne[2], 6);
    EXPECT_EQ(mm->ne[3], 2);
    EXPECT_THROW(ggml_mul_mat(&ctx, ggml_new_tensor_3d(&ctx, GGML_TYPE_F32, 64, 10, 4), b), std::invalid_argument);

    // flash attention: q [D, n_q, H, 1], k/v [D, n_kv, H_kv, 1] -> [Dv, H, n_q, 1]
    ggml_tensor * q  = ggml_new_tensor_4d(&ctx, GGML_TYPE_F32, 64, 5, 8, 1);
    ggml_tensor * k  = ggml_new_tensor_4d(&ctx, GGML_TYPE_F16, 64, 32, 2, 1);
    ggml_tensor * vv = ggml_new_tensor_4d(&ctx, GGML_TYPE_F16, 48, 32, 2, 1);
    ggml_tensor * fa = ggml_flash_attn_ext(&ctx, q, k, vv, nullptr, 0.125f, 0.0f, 0.0f);
    EXPECT_EQ(fa->ne[0], 48);
    EXPECT_EQ(fa->ne[1], 8);
    EXPECT_EQ(fa->ne[2], 5);
    EXPECT_EQ(ggml_get_op_param<float>(fa, 0), 0.125f);

    ggml_tensor * emb  = ggml_new_tensor_2d(&ctx, GGML_TYPE_Q4_0, 32, 100);
    ggml_tensor * ids  = ggml_new_tensor_1d(&ctx, GGML_TYPE_I32, 9);
    ggml_tensor * rows = ggml_get_rows(&ctx, emb, ids);
    EXPECT_EQ(rows->type, GGML_TYPE_F32);
    EXPECT_EQ(rows->ne[0], 32);
    EXPECT_EQ(rows->ne[1], 9);

    ggml_tensor * x    = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 20, 3);
    ggml_tensor * glu  = ggml_glu(&ctx, x, nullptr, GGML_GLU_OP_SWIGLU, false);
    EXPECT_EQ(glu->ne[0], 10);
    ggml_tensor * cat = ggml_concat(&ctx, x, ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 20, 5), 1);
    EXPECT_EQ(cat->ne[1], 8);
    EXPECT_THROW(ggml_add(&ctx, ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 3), x), std::invalid_argument);
    ggml_tensor * sum = ggml_add(&ctx, x, ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 20));  // row broadcast
    EXPECT_TRUE(ggml_are_same_shape(sum, x));
    ggml_tensor * u = ggml_unary(&ctx, x, GGML_UNARY_OP_SILU);
    EXPECT_STREQ(ggml_op_desc(u), "SILU");
}

// The linear-attention builders refuse what GGML's asserts and its CPU kernel's assumptions rule
// out, naming the operand (issue 30's bad input).
TEST(Tensor, LinearAttentionShapesAreChecked) {
    ggml_context ctx;
    auto         f32   = [&](int64_t a, int64_t b, int64_t c, int64_t d) { return ggml_new_tensor_4d(&ctx, GGML_TYPE_F32, a, b, c, d); };
    auto         error = [](const std::function<void()> & build) {
        try {
            build();
        } catch (const std::invalid_argument & e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    ggml_tensor * q = f32(64, 2, 5, 1), * k = f32(64, 2, 5, 1), * v = f32(64, 4, 5, 1);
    ggml_tensor * g = f32(1, 4, 5, 1), * beta = f32(1, 4, 5, 1);
    ggml_tensor * r = ggml_gated_delta_net(&ctx, q, k, v, g, beta, f32(64, 64, 4, 1), 1);
    EXPECT_EQ(r->ne[0], 64 * 4);
    EXPECT_EQ(r->ne[1], 5 + 64);
    EXPECT_EQ(error([&] { ggml_gated_delta_net(&ctx, q, k, v, g, beta, f32(64, 64, 3, 1), 1); }),
              "GATED_DELTA_NET: state must be [S, S, H, n_seqs]");
    EXPECT_EQ(error([&] { ggml_gated_delta_net(&ctx, f32(64, 3, 5, 1), k, v, g, beta, f32(64, 64, 4, 1), 1); }),
              "GATED_DELTA_NET: v's head count must be a multiple of q's and k's");
    EXPECT_EQ(error([&] { ggml_gated_delta_net(&ctx, q, k, v, g, beta, f32(64, 64, 4, 1), 0); }),
              "GATED_DELTA_NET: K (the states kept) must be at least 1");
    EXPECT_EQ(error([&] { ggml_ssm_conv(&ctx, f32(7, 96, 1, 1), f32(4, 95, 1, 1)); }),
              "SSM_CONV: sx's channels (ne[1]) must be c's (ne[1])");
    EXPECT_EQ(error([&] { ggml_solve_tri(&ctx, f32(8, 8, 1, 1), f32(3, 8, 1, 1), true, false, false); }),
              "SOLVE_TRI: only left, lower, non-unit systems are defined (as GGML)");
    EXPECT_EQ(error([&] { ggml_tri(&ctx, f32(8, 7, 1, 1), GGML_TRI_TYPE_LOWER); }), "TRI: src0 must be square (ne[0] == ne[1])");
    EXPECT_EQ(error([&] { ggml_diag(&ctx, f32(8, 2, 1, 1)); }), "DIAG: src0 must be one row per matrix (ne[1] == 1)");
}

TEST(Graph, TopologicalOrderVisitsSharedNodesOnce) {
    ggml_context  ctx;
    ggml_tensor * w  = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 16, 16);
    ggml_tensor * x  = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 16, 4);
    ggml_tensor * h  = ggml_mul_mat(&ctx, w, x);
    ggml_tensor * s  = ggml_unary(&ctx, h, GGML_UNARY_OP_SILU);
    ggml_tensor * y  = ggml_mul(&ctx, s, h);  // h is used twice
    ggml_tensor * o  = ggml_rms_norm(&ctx, y, 1e-5f);
    ggml_cgraph   gf;
    ggml_build_forward_expand(gf, o);
    ASSERT_EQ(gf.nodes.size(), 4u);
    EXPECT_EQ(gf.leafs.size(), 2u);
    auto pos = [&](const ggml_tensor * t) { return std::find(gf.nodes.begin(), gf.nodes.end(), t) - gf.nodes.begin(); };
    EXPECT_LT(pos(h), pos(s));
    EXPECT_LT(pos(s), pos(y));
    EXPECT_LT(pos(y), pos(o));
    ggml_build_forward_expand(gf, o);  // idempotent
    EXPECT_EQ(gf.nodes.size(), 4u);

    // A long chain does not overflow the stack.
    ggml_tensor * t = x;
    for (int i = 0; i < 100000; ++i) {
        t = ggml_scale(&ctx, t, 1.0f);
    }
    ggml_cgraph deep;
    ggml_build_forward_expand(deep, t);
    EXPECT_EQ(deep.nodes.size(), 100000u);
}

TEST(Context, AllocatingContextPlacesData) {
    ggml_context  ctx({1024, false});
    ggml_tensor * a = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 10);
    ggml_tensor * b = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 10);
    ASSERT_NE(a->data, nullptr);
    EXPECT_GE(static_cast<uint8_t *>(b->data) - static_cast<uint8_t *>(a->data), 40);
    ggml_tensor * v = ggml_view_1d(&ctx, a, 2, 8);
    EXPECT_EQ(v->data, static_cast<uint8_t *>(a->data) + 8);
    EXPECT_THROW(ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 1000), std::invalid_argument);
}
