// CPU MUL_MAT / MUL_MAT_ID: a hand-worked product, broadcasting over dims 2/3 against a double
// reference, quantized weights against their dequantized F32 copy (bit for bit), F16 and
// non-contiguous activations, and the expert selection of MUL_MAT_ID.
#include "test-cpu-util.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace cpu_test;

namespace {

// Element (i0, i1, i2, i3) of a contiguous f32 vector shaped like t.
float at(const std::vector<float> & v, const ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2 = 0, int64_t i3 = 0) {
    return v[size_t(((i3 * t->ne[2] + i2) * t->ne[1] + i1) * t->ne[0] + i0)];
}

void expect_bits_equal(const ggml_tensor * a, const ggml_tensor * b) {
    ASSERT_EQ(ggml_nbytes(a), ggml_nbytes(b));
    EXPECT_EQ(std::memcmp(a->data, b->data, ggml_nbytes(a)), 0);
}

} // namespace

TEST(CpuMatmul, HandWorkedProduct) {
    fixture       f;
    ggml_tensor * w = ggml_new_tensor_2d(&f.ctx, GGML_TYPE_F32, 3, 2);
    ggml_tensor * x = ggml_new_tensor_2d(&f.ctx, GGML_TYPE_F32, 3, 2);
    set_values(w, {1, 2, 3, 4, 5, 6});
    set_values(x, {1, 0, -1, 2, 1, 0});
    ggml_tensor * y = ggml_mul_mat(&f.ctx, w, x);
    f.compute(y);
    EXPECT_EQ(y->ne[0], 2);
    EXPECT_EQ(y->ne[1], 2);
    EXPECT_EQ(get_values(y), (std::vector<float>{-2, -2, 4, 13}));
}

TEST(CpuMatmul, BroadcastsWeightsOverDims2And3) {
    fixture       f;
    ggml_tensor * w = new_filled(f.ctx, GGML_TYPE_F32, {37, 5, 2, 1}, 1);
    ggml_tensor * x = new_filled(f.ctx, GGML_TYPE_F32, {37, 3, 4, 3}, 2);
    ggml_tensor * y = ggml_mul_mat(&f.ctx, w, x);
    f.compute(y);
    const std::vector<float> wv = get_values(w), xv = get_values(x), yv = get_values(y);
    for (int64_t i3 = 0; i3 < 3; ++i3) {
        for (int64_t i2 = 0; i2 < 4; ++i2) {
            for (int64_t j = 0; j < 3; ++j) {
                for (int64_t i = 0; i < 5; ++i) {
                    double want = 0.0, mag = 0.0;
                    for (int64_t k = 0; k < 37; ++k) {
                        const double p = double(at(wv, w, k, i, i2 / 2, 0)) * at(xv, x, k, j, i2, i3);
                        want += p;
                        mag += std::fabs(p);
                    }
                    EXPECT_NEAR(at(yv, y, i, j, i2, i3), want, 1e-6 * mag) << i << " " << j << " " << i2 << " " << i3;
                }
            }
        }
    }
}

TEST(CpuMatmul, QuantizedWeightsEqualTheirDequantizedCopy) {
    for (int id = 0; id < GGML_TYPE_COUNT; ++id) {
        const ggml_type_traits * traits = ggml_get_type_traits(id);
        if (!traits->to_float || !traits->from_float || id == GGML_TYPE_F32) {
            continue;
        }
        const ggml_type type = ggml_type(id);
        fixture         f;
        ggml_tensor *   wq = new_filled(f.ctx, type, {256, 33}, uint32_t(id));
        ggml_tensor *   wf = ggml_new_tensor_2d(&f.ctx, GGML_TYPE_F32, 256, 33);
        for (int64_t r = 0; r < 33; ++r) {
            traits->to_float_ref(static_cast<const uint8_t *>(wq->data) + r * wq->nb[1],
                                 static_cast<float *>(wf->data) + r * 256, 256);
        }
        ggml_tensor * x  = new_filled(f.ctx, GGML_TYPE_F32, {256, 5}, 99);
        ggml_tensor * yq = ggml_mul_mat(&f.ctx, wq, x);
        ggml_tensor * yf = ggml_mul_mat(&f.ctx, wf, x);
        f.compute(yq);
        f.compute(yf);
        SCOPED_TRACE(ggml_type_name(type));
        expect_bits_equal(yq, yf);

        // And the F32 product itself against double.
        const std::vector<float> wv = get_values(wf), xv = get_values(x), yv = get_values(yf);
        for (int64_t j = 0; j < 5; ++j) {
            for (int64_t i = 0; i < 33; ++i) {
                double want = 0.0, mag = 0.0;
                for (int64_t k = 0; k < 256; ++k) {
                    want += double(at(wv, wf, k, i)) * at(xv, x, k, j);
                    mag += std::fabs(double(at(wv, wf, k, i)) * at(xv, x, k, j));
                }
                ASSERT_NEAR(at(yv, yf, i, j), want, 1e-6 * mag + 1e-30);
            }
        }
    }
}

TEST(CpuMatmul, F16AndNonContiguousActivations) {
    fixture       f;
    ggml_tensor * w  = new_filled(f.ctx, GGML_TYPE_Q4_K, {256, 9}, 3);
    ggml_tensor * xh = new_filled(f.ctx, GGML_TYPE_F16, {256, 4}, 4);
    ggml_tensor * xf = ggml_new_tensor_2d(&f.ctx, GGML_TYPE_F32, 256, 4);
    set_values(xf, get_values(xh));  // the same values, exactly
    // x stored transposed ([4, 256]) and viewed back as [256, 4]: columns 4 floats apart.
    ggml_tensor * xt = ggml_new_tensor_2d(&f.ctx, GGML_TYPE_F32, 4, 256);
    const std::vector<float> xv = get_values(xf);
    std::vector<float>       tv(1024);
    for (int k = 0; k < 256; ++k) {
        for (int j = 0; j < 4; ++j) {
            tv[size_t(k * 4 + j)] = xv[size_t(j * 256 + k)];
        }
    }
    set_values(xt, tv);
    ggml_tensor * ref = ggml_mul_mat(&f.ctx, w, xf);
    ggml_tensor * yh  = ggml_mul_mat(&f.ctx, w, xh);
    ggml_tensor * yt  = ggml_mul_mat(&f.ctx, w, ggml_transpose(&f.ctx, xt));
    for (ggml_tensor * t : {ref, yh, yt}) {
        f.compute(t);
    }
    expect_bits_equal(yh, ref);
    expect_bits_equal(yt, ref);
}

TEST(CpuMatmul, MulMatIdSelectsExperts) {
    const int64_t k = 64, n = 7, n_expert = 4, n_used = 2, n_tokens = 3;
    for (int64_t b_rows : {int64_t(1), n_used}) {  // one activation row shared, or one per slot
        fixture       f;
        ggml_tensor * as  = new_filled(f.ctx, GGML_TYPE_Q8_0, {k, n, n_expert}, 5);
        ggml_tensor * b   = new_filled(f.ctx, GGML_TYPE_F32, {k, b_rows, n_tokens}, 6);
        ggml_tensor * ids = ggml_new_tensor_2d(&f.ctx, GGML_TYPE_I32, n_used, n_tokens);
        set_i32(ids, {3, 0, 1, 3, 2, 2});
        ggml_tensor * y = ggml_mul_mat_id(&f.ctx, as, b, ids);
        f.compute(y);

        // Reference: the plain MUL_MAT of each selected expert with its activation row.
        const std::vector<int32_t> chosen = get_i32(ids);
        const std::vector<float>   yv     = get_values(y);
        for (int64_t t = 0; t < n_tokens; ++t) {
            for (int64_t e = 0; e < n_used; ++e) {
                const int32_t x    = chosen[size_t(t * n_used + e)];
                ggml_tensor * wx   = ggml_view_2d(&f.ctx, as, k, n, as->nb[1], size_t(x) * as->nb[2]);
                ggml_tensor * col  = ggml_view_1d(&f.ctx, b, k, size_t((e % b_rows) * b->nb[1] + t * b->nb[2]));
                ggml_tensor * want = ggml_mul_mat(&f.ctx, wx, col);
                f.compute(want);
                const std::vector<float> wv = get_values(want);
                for (int64_t i = 0; i < n; ++i) {
                    EXPECT_EQ(yv[size_t((t * n_used + e) * n + i)], wv[size_t(i)]) << "token " << t << " slot " << e;
                }
            }
        }

        set_i32(ids, {3, 0, 1, 4, 2, 2});
        EXPECT_THROW(f.compute(y), backend_error);
    }
}
