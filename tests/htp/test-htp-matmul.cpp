// MUL_MAT on the in-process virtual NPU (strict DMA on), tiled and flat weights, over shapes that
// exercise every piece of the plan: N not a multiple of 32 (padding rows), activation rows in
// several groups, slices over dims 2 and 3, padded activation and output rows, 1..4 threads, a
// VTCM small enough to force thin blocks. The expected values are an independent float64 model:
// the weights dequantized by the core's reference, the activations quantized as proto/htp-matmul.h
// specifies (power-of-two scales, round half to even), so only the kernel's fp32 accumulation
// order separates the two.
#include "../htp/test-htp-util.h"
#include "act-quant-model.h"
#include "hexagon/repack.h"
#include "htp/htp-tensor.h"
#include "hexnpu/ggml-types.h"
#include "proto/htp-matmul.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-status.h"
#include "proto/htp-trace.h"
#include "vnpu/platform/in-process-session.h"
#include "vnpu/platform/shared-buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace hexnpu;
using namespace htp_test;
using vnpu::batch_builder;
using vnpu::packed_batch;
using vnpu::in_process_session;
using vnpu::shared_buffer;

vnpu::platform_config config(uint32_t vtcm = 8u << 20, uint32_t mdev_idx = 0, uint32_t mdev_count = 1) {
    vnpu::platform_config c;
    c.mdev_idx     = mdev_idx;
    c.mdev_count   = mdev_count;
    c.vtcm_size    = vtcm;
    c.host_threads = 4;  // four HVX threads even on a two-core host
    c.log       = [](int, const std::string &) {};
    return c;
}

struct mm_case {
    ggml_type type;
    uint32_t  k, n, m, ne2, ne3;
    uint32_t  act_pad, dst_pad;  // bytes after each activation / output row
    uint32_t  w2 = 1, w3 = 1;    // weight matrices over dims 2 and 3 (ne2 = r2 * w2, ne3 = r3 * w3)
};

// Each 32-block of x as the NPU quantizes it (act-quant-model.h), dequantized: q * d.
std::vector<double> model_quantize(const float * x, uint32_t k) {
    std::vector<double> out(k);
    for (uint32_t b = 0; b < k / 32; ++b) {
        float amax = 0;
        for (uint32_t i = 0; i < 32; ++i) {
            amax = std::fmax(amax, std::fabs(x[32 * b + i]));
        }
        const act_block_scale s = model_act_scale(amax);
        for (uint32_t i = 0; i < 32; ++i) {
            out[32 * b + i] = s.zero ? 0.0 : double(model_act_q(x[32 * b + i], s.c)) * s.d;
        }
    }
    return out;
}

// One MUL_MAT batch over weights, activations and dst, each in its own buffer; its status. The
// buffers are unmapped after, as the host does when it frees them.
struct operand {
    proto::htp_tensor     t;
    const shared_buffer & buf;
};
uint32_t run_matmul(in_process_session & s, const proto::htp_matmul_kparams & kp, operand w, operand a, operand d) {
    batch_builder b;
    for (operand * o : {&w, &a, &d}) {
        o->t.bi = b.add_buffer(o->buf, false);
        b.add_tensor(o->t);
    }
    proto::htp_op_desc op = batch_builder::op(proto::HTP_OP_MUL_MAT, {0, 1}, {2});
    std::memcpy(op.kparams, &kp, sizeof kp);
    b.add_op(op);
    packed_batch   batch  = b.pack(1, 0, 0);
    const uint32_t status = s.process(batch).status;
    for (const operand * o : {&w, &a, &d}) {
        htp_iface_munmap(s.handle(), o->buf.fd());
    }
    return status;
}

struct mm_run {
    std::vector<double> want;
    std::vector<float>  got;
    uint32_t            status;
};

mm_run run_case(in_process_session & s, const mm_case & c, bool tiled, uint32_t n_threads, uint32_t vtcm,
                uint32_t seed) {
    std::mt19937                          rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const auto *                          traits = ggml_get_type_traits(c.type);
    const size_t                          row_bytes = size_t(c.k) / traits->blck_size * traits->type_size;

    // Weights [k, n]: random floats quantized by the core, dequantized back for the model.
    const uint32_t       n_w = c.w2 * c.w3;
    std::vector<float>   wf(size_t(c.k) * c.n * n_w);
    std::vector<uint8_t> flat(row_bytes * c.n * n_w);
    for (float & v : wf) {
        v = dist(rng);
    }
    traits->from_float_ref(wf.data(), flat.data(), int64_t(wf.size()));
    traits->to_float_ref(flat.data(), wf.data(), int64_t(wf.size()));
    const int64_t        ne[4] = {c.k, c.n, c.w2, c.w3};
    std::vector<uint8_t> w_bytes = flat;
    if (tiled) {
        w_bytes.assign(hexagon::tiled_nbytes(c.type, ne), 0);
        EXPECT_TRUE(hexagon::repack_tensor(c.type, ne, flat.data(), w_bytes.data()).ok());
        // The K-quant tiles keep fp16 scale products: the model reads the weights from the tiles.
        hexagon::dequantize_tiled_rows(c.type, ne, w_bytes.data(), 0, int64_t(c.n) * n_w, wf.data());
    }

    // Activations [k, m, ne2, ne3] and dst [n, m, ne2, ne3], rows padded.
    const uint32_t a_nb1 = c.k * 4 + c.act_pad, d_nb1 = c.n * 4 + c.dst_pad;
    const uint32_t rows  = c.m * c.ne2 * c.ne3;
    shared_buffer  wbuf(w_bytes.size()), abuf(size_t(a_nb1) * rows), dbuf(size_t(d_nb1) * rows);
    std::memcpy(wbuf.data(), w_bytes.data(), w_bytes.size());
    std::memset(dbuf.data(), 0x5A, dbuf.size());
    std::vector<float> act(size_t(c.k) * rows);
    for (uint32_t r = 0; r < rows; ++r) {
        for (uint32_t i = 0; i < c.k; ++i) {
            // Mixed magnitudes per block, so the blocks get different scales.
            act[size_t(r) * c.k + i] = dist(rng) * std::ldexp(1.0f, int(i / 32 % 5) - 2);
        }
        std::memcpy(abuf.data() + size_t(r) * a_nb1, act.data() + size_t(r) * c.k, size_t(c.k) * 4);
    }

    proto::htp_tensor w{}, a{}, d{};
    w.type  = uint32_t(c.type);
    w.flags = tiled ? proto::HTP_TENSOR_TILED : 0;
    w.size  = w_bytes.size();
    w.ne[0] = c.k, w.ne[1] = c.n, w.ne[2] = c.w2, w.ne[3] = c.w3;
    w.nb[0] = uint32_t(traits->type_size), w.nb[1] = uint32_t(row_bytes), w.nb[2] = uint32_t(row_bytes * c.n);
    w.nb[3] = w.nb[2] * c.w2;
    a.type = d.type = 0;
    a.flags = d.flags = proto::HTP_TENSOR_COMPUTE;
    a.ne[0] = c.k, a.ne[1] = c.m, a.ne[2] = c.ne2, a.ne[3] = c.ne3;
    a.nb[0] = 4, a.nb[1] = a_nb1, a.nb[2] = a_nb1 * c.m, a.nb[3] = a_nb1 * c.m * c.ne2;
    a.size  = abuf.size();
    d.ne[0] = c.n, d.ne[1] = c.m, d.ne[2] = c.ne2, d.ne[3] = c.ne3;
    d.nb[0] = 4, d.nb[1] = d_nb1, d.nb[2] = d_nb1 * c.m, d.nb[3] = d_nb1 * c.m * c.ne2;
    d.size  = dbuf.size();

    proto::htp_matmul_kparams kp{};
    EXPECT_TRUE(proto::prepare_matmul_kparams(w, a, d, n_threads, vtcm, &kp));
    mm_run r;
    r.status = run_matmul(s, kp, {w, wbuf}, {a, abuf}, {d, dbuf});

    for (uint32_t row = 0; row < rows; ++row) {
        // Float weights multiply the activations as they are.
        const float *             x = act.data() + size_t(row) * c.k;
        const std::vector<double> q =
            proto::htp_matmul_float_weight(c.type) ? std::vector<double>(x, x + c.k) : model_quantize(x, c.k);
        const uint32_t i2 = row / c.m % c.ne2, i3 = row / c.m / c.ne2;
        const uint32_t matrix = i3 / (c.ne3 / c.w3) * c.w2 + i2 / (c.ne2 / c.w2);
        for (uint32_t j = 0; j < c.n; ++j) {
            double sum = 0;
            for (uint32_t i = 0; i < c.k; ++i) {
                sum += q[i] * double(wf[(size_t(matrix) * c.n + j) * c.k + i]);
            }
            r.want.push_back(sum);
            float f;
            std::memcpy(&f, dbuf.data() + size_t(row) * d_nb1 + size_t(j) * 4, 4);
            r.got.push_back(f);
        }
        // The row padding after the n results is untouched.
        for (uint32_t p = c.n * 4; p < d_nb1; ++p) {
            EXPECT_EQ(dbuf.data()[size_t(row) * d_nb1 + p], 0x5A) << "output row " << row << " padding";
        }
    }
    return r;
}

// fp32 sums of k products of magnitude <= 127 * 2^E * max|w|: relative error well below 1e-5.
void expect_close(const mm_run & r, const std::string & what) {
    ASSERT_EQ(r.status, proto::HTP_STATUS_OK) << what;
    double err = 0, norm = 0;
    for (size_t i = 0; i < r.want.size(); ++i) {
        ASSERT_TRUE(std::isfinite(r.got[i])) << what << " element " << i;
        err += (r.got[i] - r.want[i]) * (r.got[i] - r.want[i]);
        norm += r.want[i] * r.want[i];
    }
    EXPECT_LT(err / norm, 1e-11) << what;
}

// Every case on 1 and 4 threads with its weights in each of the layouts (tiled, flat): close to the
// model, and no strict-mode violation.
template <size_t N>
void expect_cases_close(in_process_session & s, const mm_case (&cases)[N], std::initializer_list<bool> layouts,
                        uint32_t seed) {
    for (const mm_case & c : cases) {
        for (const bool tiled : layouts) {
            for (const uint32_t threads : {1u, 4u}) {
                const std::string what = std::string(ggml_type_name(c.type)) + " k " + std::to_string(c.k) + " n " +
                                         std::to_string(c.n) + " m " + std::to_string(c.m) + "x" +
                                         std::to_string(c.ne2) + "x" + std::to_string(c.ne3) +
                                         (tiled ? " tiled" : " flat") + ", " + std::to_string(threads) + " threads";
                expect_close(run_case(s, c, tiled, threads, 8u << 20, seed++), what);
                EXPECT_EQ(s.platform().last_violation(), "") << what;
            }
        }
    }
}

TEST(HtpMatmul, TiledAndFlatWeightsOverShapesAndThreads) {
    in_process_session s(config(), 4);
    const mm_case cases[] = {
        {GGML_TYPE_Q8_0, 128, 32, 1, 1, 1, 0, 0},    // one strip, mat-vec
        {GGML_TYPE_Q4_0, 128, 32, 1, 1, 1, 0, 0},
        {GGML_TYPE_Q8_0, 256, 70, 3, 1, 1, 12, 8},   // padding rows, padded rows
        {GGML_TYPE_Q4_0, 288, 45, 9, 1, 1, 4, 0},
        {GGML_TYPE_Q8_0, 64, 40, 35, 1, 1, 0, 0},    // two activation groups (32 + 3)
        {GGML_TYPE_Q4_0, 64, 100, 2, 3, 2, 0, 4},    // slices over dims 2 and 3
        {GGML_TYPE_Q8_0, 1024, 129, 5, 1, 1, 0, 0},  // many tiles per strip
        {GGML_TYPE_Q4_0, 4096, 64, 2, 1, 1, 0, 0},   // long rows, several blocks per strip
        {GGML_TYPE_Q4_1, 128, 32, 1, 1, 1, 0, 0},
        {GGML_TYPE_IQ4_NL, 128, 32, 1, 1, 1, 0, 0},
        {GGML_TYPE_IQ4_NL, 320, 70, 5, 2, 1, 4, 0},
        {GGML_TYPE_MXFP4, 128, 32, 1, 1, 1, 0, 0},
        {GGML_TYPE_MXFP4, 224, 45, 3, 1, 2, 0, 4},
        {GGML_TYPE_Q4_1, 288, 45, 9, 2, 1, 4, 4},
        {GGML_TYPE_Q8_0, 64, 40, 3, 4, 3, 0, 0, 2, 3},   // weights broadcast over dims 2 and 3
        {GGML_TYPE_Q4_0, 96, 33, 2, 2, 2, 0, 0, 2, 1},
        {GGML_TYPE_Q1_0, 128, 32, 1, 1, 1, 0, 0},
        {GGML_TYPE_Q1_0, 640, 45, 5, 2, 1, 4, 4},
        {GGML_TYPE_Q2_0, 64, 32, 1, 1, 1, 0, 0},
        {GGML_TYPE_Q2_0, 320, 70, 3, 1, 2, 0, 4, 1, 2},
    };
    expect_cases_close(s, cases, {true, false}, 1);
}

TEST(HtpMatmul, KQuantsTiledAndFlatOverShapesAndThreads) {
    in_process_session s(config(), 4);
    const mm_case cases[] = {
        {GGML_TYPE_Q4_K, 256, 32, 1, 1, 1, 0, 0},
        {GGML_TYPE_Q6_K, 256, 32, 1, 1, 1, 0, 0},
        {GGML_TYPE_Q4_K, 768, 70, 9, 1, 1, 4, 8},
        {GGML_TYPE_Q6_K, 1024, 45, 3, 2, 1, 0, 4},
        {GGML_TYPE_Q4_K, 256, 40, 2, 2, 2, 0, 0, 1, 2},
        {GGML_TYPE_Q5_K, 256, 32, 1, 1, 1, 0, 0},
        {GGML_TYPE_Q3_K, 256, 32, 1, 1, 1, 0, 0},
        {GGML_TYPE_Q3_K, 1024, 70, 4, 1, 2, 0, 4, 1, 2},
        {GGML_TYPE_Q5_K, 768, 45, 5, 2, 1, 4, 4, 2, 1},
        {GGML_TYPE_Q2_K, 256, 32, 1, 1, 1, 0, 0},
        {GGML_TYPE_Q2_K, 2560, 70, 4, 1, 2, 0, 4, 1, 2},  // a block of 80 tiles, then the rest
    };
    expect_cases_close(s, cases, {true, false}, 100);
}

// Q5_0 and Q5_1 have no tiled format: flat only.
TEST(HtpMatmul, Q5WeightsFlatOverShapesAndThreads) {
    in_process_session s(config(), 4);
    const mm_case cases[] = {
        {GGML_TYPE_Q5_0, 128, 32, 1, 1, 1, 0, 0},
        {GGML_TYPE_Q5_1, 128, 32, 1, 1, 1, 0, 0},
        {GGML_TYPE_Q5_0, 640, 70, 35, 1, 1, 4, 8},
        {GGML_TYPE_Q5_1, 288, 45, 3, 2, 3, 0, 4, 2, 1},
    };
    expect_cases_close(s, cases, {false}, 300);
}

TEST(HtpMatmul, FloatWeightsOverShapesAndThreads) {
    in_process_session s(config(), 4);
    const mm_case cases[] = {
        {GGML_TYPE_F32, 128, 32, 1, 1, 1, 0, 0},
        {GGML_TYPE_F16, 128, 32, 1, 1, 1, 0, 0},
        {GGML_TYPE_BF16, 128, 32, 1, 1, 1, 0, 0},
        {GGML_TYPE_F32, 33, 45, 3, 1, 1, 4, 8},       // K not a multiple of 32
        {GGML_TYPE_F16, 100, 70, 35, 1, 1, 0, 4},     // K not a multiple of 64, two row groups
        {GGML_TYPE_BF16, 1000, 40, 5, 2, 1, 8, 0},    // several blocks per strip
        {GGML_TYPE_F32, 700, 33, 2, 4, 3, 0, 0, 2, 3}, // weights broadcast over dims 2 and 3
        {GGML_TYPE_F16, 64, 129, 9, 2, 2, 0, 0, 1, 2},
    };
    expect_cases_close(s, cases, {false}, 200);
}

TEST(HtpMatmul, ASmallVtcmGivesThinBlocksAndStillTheSameResults) {
    // 160 KiB: one activation row at a time, blocks of a few tiles, double buffering.
    in_process_session s(config(160 * 1024), 2);
    const mm_case      c{GGML_TYPE_Q8_0, 1024, 96, 3, 1, 1, 0, 0};
    proto::htp_matmul_kparams kp{};
    proto::htp_tensor         w{}, a{}, d{};
    w.type = 8, w.ne[0] = 1024, w.ne[1] = 96, w.ne[2] = w.ne[3] = 1;
    a.ne[0] = 1024, a.ne[1] = 3, a.ne[2] = a.ne[3] = 1, a.nb[0] = 4, a.nb[1] = 4096;
    d.ne[0] = 96, d.ne[1] = 3, d.ne[2] = d.ne[3] = 1, d.nb[0] = 4, d.nb[1] = 384;
    ASSERT_TRUE(proto::prepare_matmul_kparams(w, a, d, 2, 160 * 1024, &kp));
    EXPECT_LT(kp.act_rows, 3u);
    for (bool tiled : {true, false}) {
        expect_close(run_case(s, c, tiled, 2, 160 * 1024, 77), tiled ? "tiled" : "flat");
    }
    EXPECT_FALSE(proto::prepare_matmul_kparams(w, a, d, 2, 8 * 1024, &kp)) << "not even one row fits";
}

TEST(HtpMatmul, AWeightSmallerThanItsShapeIsRefusedByTheGuard) {
    in_process_session s(config(), 2);
    // A valid plan, but the weight tensor claims fewer bytes than its tiles: INVAL_PARAMS, no DMA.
    proto::htp_tensor w{}, a{}, d{};
    w.type = 2, w.flags = proto::HTP_TENSOR_TILED, w.ne[0] = 128, w.ne[1] = 64, w.ne[2] = w.ne[3] = 1;
    w.nb[0] = 18, w.nb[1] = 72, w.size = 2 * 4 * 576 - 1;
    a.ne[0] = 128, a.ne[1] = 2, a.ne[2] = a.ne[3] = 1, a.nb[0] = 4, a.nb[1] = 512, a.nb[2] = a.nb[3] = 1024;
    a.size = 1024, a.flags = proto::HTP_TENSOR_COMPUTE;
    d.ne[0] = 64, d.ne[1] = 2, d.ne[2] = d.ne[3] = 1, d.nb[0] = 4, d.nb[1] = 256, d.nb[2] = d.nb[3] = 512;
    d.size = 512, d.flags = proto::HTP_TENSOR_COMPUTE;
    proto::htp_matmul_kparams kp{};
    ASSERT_TRUE(proto::prepare_matmul_kparams(w, a, d, 2, 8u << 20, &kp));
    shared_buffer wbuf(8192), abuf(1024), dbuf(512);
    EXPECT_EQ(run_matmul(s, kp, {w, wbuf}, {a, abuf}, {d, dbuf}), proto::HTP_STATUS_INVAL_PARAMS);
}

// The host's split of the strips over the threads is the one that runs: a plan that gives thread 0
// every strip (strips_per_thread = n_strips, which the guard accepts) leaves thread 1 idle, and the
// output is the same bits as under the even split (each strip is computed the same way wherever).
TEST(HtpMatmul, TheHostsStripsPerThreadIsHonoured) {
    in_process_session s(config(), 2);
    const uint32_t     k = 64, n = 128, m = 1;  // 4 strips; one row: thread 0 alone lands it
    const auto *       traits = ggml_get_type_traits(GGML_TYPE_Q8_0);
    std::mt19937       rng(11);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> wf(size_t(k) * n), act(size_t(k) * m);
    for (float & v : wf) {
        v = dist(rng);
    }
    for (float & v : act) {
        v = dist(rng);
    }
    const size_t  row_bytes = k / 32 * traits->type_size;
    shared_buffer wbuf(row_bytes * n), abuf(act.size() * 4), dbuf(size_t(n) * 4 * m);
    traits->from_float_ref(wf.data(), wbuf.data(), int64_t(wf.size()));
    std::memcpy(abuf.data(), act.data(), act.size() * 4);

    proto::htp_tensor w{}, a{}, d{};
    w.type = uint32_t(GGML_TYPE_Q8_0), w.size = wbuf.size();
    w.ne[0] = k, w.ne[1] = n, w.ne[2] = w.ne[3] = 1;
    w.nb[0] = uint32_t(traits->type_size), w.nb[1] = uint32_t(row_bytes), w.nb[2] = w.nb[3] = uint32_t(row_bytes * n);
    a.ne[0] = k, a.ne[1] = m, a.ne[2] = a.ne[3] = 1, a.size = abuf.size();
    a.nb[0] = 4, a.nb[1] = k * 4, a.nb[2] = a.nb[3] = k * 4 * m;
    d.ne[0] = n, d.ne[1] = m, d.ne[2] = d.ne[3] = 1, d.size = dbuf.size();
    d.nb[0] = 4, d.nb[1] = n * 4, d.nb[2] = d.nb[3] = n * 4 * m;
    a.flags = d.flags = proto::HTP_TENSOR_COMPUTE;
    proto::htp_matmul_kparams kp{};
    ASSERT_TRUE(proto::prepare_matmul_kparams(w, a, d, 2, 8u << 20, &kp));
    ASSERT_EQ(kp.n_threads, 2u);
    ASSERT_EQ(kp.n_strips, 4u);
    ASSERT_EQ(kp.strips_per_thread, 2u);

    // The strips (DMA trace info of the weight blocks and writebacks) each thread moved.
    auto run = [&](const proto::htp_matmul_kparams & plan, std::vector<uint8_t> * out) {
        batch_builder b;
        for (auto [t, buf] : {std::pair{&w, &wbuf}, std::pair{&a, &abuf}, std::pair{&d, &dbuf}}) {
            t->bi = b.add_buffer(*buf, false);
            b.add_tensor(*t);
        }
        proto::htp_op_desc op = batch_builder::op(proto::HTP_OP_MUL_MAT, {0, 1}, {2});
        std::memcpy(op.kparams, &plan, sizeof plan);
        b.add_op(op);
        std::memset(dbuf.data(), 0x5A, dbuf.size());
        packed_batch batch = b.pack(1, 3, 1024);  // traced
        const auto   rsp   = s.process(batch);
        EXPECT_EQ(rsp.status, proto::HTP_STATUS_OK) << s.platform().last_violation();
        std::vector<std::set<uint16_t>> strips(2);
        for (uint32_t t = 0; t < 2; ++t) {
            for (uint32_t e = 0; e < rsp.n_traces[t]; ++e) {
                const proto::htp_trace_desc & ev = batch.traces(t)[e];
                if (ev.id == proto::HTP_TRACE_EVT_DMA) {
                    strips[t].insert(ev.info);
                }
            }
        }
        for (auto * buf : {&wbuf, &abuf, &dbuf}) {
            htp_iface_munmap(s.handle(), buf->fd());
        }
        out->assign(dbuf.data(), dbuf.data() + dbuf.size());
        return strips;
    };
    std::vector<uint8_t> even, one;
    const auto           even_strips = run(kp, &even);
    EXPECT_EQ(even_strips[1], (std::set<uint16_t>{2, 3}));
    proto::htp_matmul_kparams all_on_one = kp;
    all_on_one.strips_per_thread         = 4;
    const auto one_strips                = run(all_on_one, &one);
    EXPECT_EQ(one_strips[0], (std::set<uint16_t>{0, 1, 2, 3}));
    EXPECT_TRUE(one_strips[1].empty()) << "thread 1 moved strips the host gave thread 0";
    EXPECT_EQ(one, even);
}

// One MUL_MAT_ID of Q8_0 experts [64, 40, n_expert] over n_used slots x n_tokens tokens routed by
// ids ([slot, token]); every output row is its expert's product (the float64 model). Returns the
// op's status; with out_of_range it plants an id outside [0, n_expert) and expects INVAL_PARAMS.
void expect_mul_mat_id(in_process_session & s, uint32_t n_expert, uint32_t n_used, uint32_t n_tokens,
                       const std::vector<int32_t> & ids, const std::string & what) {
    const uint32_t k = 64, n = 40;
    const auto *   traits = ggml_get_type_traits(GGML_TYPE_Q8_0);
    std::mt19937   rng(31);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> wf(size_t(k) * n * n_expert), act(size_t(k) * n_used * n_tokens);
    for (float & v : wf) {
        v = dist(rng);
    }
    for (float & v : act) {
        v = dist(rng);
    }
    const size_t         row_bytes = k / 32 * traits->type_size;
    std::vector<uint8_t> flat(row_bytes * n * n_expert);
    traits->from_float_ref(wf.data(), flat.data(), int64_t(wf.size()));
    traits->to_float_ref(flat.data(), wf.data(), int64_t(wf.size()));

    shared_buffer wbuf(flat.size()), abuf(act.size() * 4), ibuf(ids.size() * 4), dbuf(size_t(n) * 4 * n_used * n_tokens);
    std::memcpy(wbuf.data(), flat.data(), flat.size());
    std::memcpy(abuf.data(), act.data(), act.size() * 4);
    std::memcpy(ibuf.data(), ids.data(), ids.size() * 4);

    proto::htp_tensor w{}, a{}, id{}, d{};
    w.type = uint32_t(GGML_TYPE_Q8_0), w.size = flat.size();
    w.ne[0] = k, w.ne[1] = n, w.ne[2] = n_expert, w.ne[3] = 1;
    w.nb[0] = uint32_t(traits->type_size), w.nb[1] = uint32_t(row_bytes), w.nb[2] = w.nb[3] = uint32_t(row_bytes * n);
    a.ne[0] = k, a.ne[1] = n_used, a.ne[2] = n_tokens, a.ne[3] = 1, a.size = abuf.size();
    a.nb[0] = 4, a.nb[1] = k * 4, a.nb[2] = a.nb[3] = k * 4 * n_used;
    id.type = 26, id.ne[0] = n_used, id.ne[1] = n_tokens, id.ne[2] = id.ne[3] = 1, id.size = ibuf.size();
    id.nb[0] = 4, id.nb[1] = n_used * 4, id.nb[2] = id.nb[3] = uint32_t(ibuf.size());
    d.ne[0] = n, d.ne[1] = n_used, d.ne[2] = n_tokens, d.ne[3] = 1, d.size = dbuf.size();
    d.nb[0] = 4, d.nb[1] = n * 4, d.nb[2] = d.nb[3] = n * 4 * n_used;
    a.flags = id.flags = d.flags = proto::HTP_TENSOR_COMPUTE;
    proto::htp_matmul_kparams kp{};
    ASSERT_TRUE(proto::prepare_matmul_id_kparams(w, a, id, d, 2, 8u << 20, &kp)) << what;

    auto run = [&] {
        batch_builder b;
        const std::pair<proto::htp_tensor *, const shared_buffer *> operands[] = {{&w, &wbuf}, {&a, &abuf}, {&id, &ibuf}, {&d, &dbuf}};
        for (const auto & [t, buf] : operands) {
            t->bi = b.add_buffer(*buf, false);
            b.add_tensor(*t);
        }
        proto::htp_op_desc op = batch_builder::op(proto::HTP_OP_MUL_MAT_ID, {0, 1, 2}, {3});
        std::memcpy(op.kparams, &kp, sizeof kp);
        b.add_op(op);
        packed_batch   batch  = b.pack(1, 0, 0);
        const uint32_t status = s.process(batch).status;
        for (const auto & [t, buf] : operands) {
            htp_iface_munmap(s.handle(), buf->fd());
        }
        return status;
    };
    ASSERT_EQ(run(), proto::HTP_STATUS_OK) << what;
    EXPECT_EQ(s.platform().last_violation(), "") << what;
    mm_run r{{}, {}, proto::HTP_STATUS_OK};
    for (uint32_t t = 0; t < n_tokens; ++t) {
        for (uint32_t slot = 0; slot < n_used; ++slot) {
            const std::vector<double> q = model_quantize(&act[(size_t(t) * n_used + slot) * k], k);
            const uint32_t            e = uint32_t(ids[t * n_used + slot]);
            for (uint32_t j = 0; j < n; ++j) {
                double sum = 0;
                for (uint32_t i = 0; i < k; ++i) {
                    sum += q[i] * double(wf[(size_t(e) * n + j) * k + i]);
                }
                r.want.push_back(sum);
                float f;
                std::memcpy(&f, dbuf.data() + ((size_t(t) * n_used + slot) * n + j) * 4, 4);
                r.got.push_back(f);
            }
        }
    }
    expect_close(r, what);
    // An id outside [0, n_expert), late in the table: refused before any work.
    for (const int32_t bad : {int32_t(n_expert), -1}) {
        std::vector<int32_t> bad_ids = ids;
        bad_ids[bad_ids.size() - 2]  = bad;
        std::memcpy(ibuf.data(), bad_ids.data(), bad_ids.size() * 4);
        std::memset(dbuf.data(), 0x5A, dbuf.size());
        EXPECT_EQ(run(), proto::HTP_STATUS_INVAL_PARAMS) << what << ", id " << bad;
        EXPECT_TRUE(std::all_of(dbuf.data(), dbuf.data() + dbuf.size(), [](uint8_t b) { return b == 0x5A; }))
            << what << ", id " << bad << ": rows written before the refusal";
    }
}

// MUL_MAT_ID: every output row is its expert's product, and an id outside [0, n_expert) is refused
// before any work, over the id table's walks (matmul-job.h walk_routed_rows): a few rows of 4
// experts; 300 experts (three blocks of counted experts), rows beyond the bucket table, one expert
// with more rows than it holds (walked alone) and experts without rows; more slots than the table
// packs (every expert walked alone).
TEST(HtpMatmul, MulMatIdRoutesEachRowToItsExpertAndRefusesAnOutOfRangeId) {
    in_process_session s(config(), 2);
    expect_mul_mat_id(s, 4, 2, 3, {3, 0, 1, 3, 2, 1}, "4 experts, 2 slots x 3 tokens");

    std::mt19937         rng(5);
    const uint32_t       n_tokens = 1100, n_used = 3;
    std::vector<int32_t> ids(size_t(n_used) * n_tokens);
    for (uint32_t t = 0; t < n_tokens; ++t) {
        ids[t * n_used] = 7;  // 1100 rows: more than the bucket table
        for (uint32_t slot = 1; slot < n_used; ++slot) {
            int32_t e;
            do {
                e = int32_t(rng() % 300);
            } while (e == 5 || e == 7 || e == 299 || e == 128);  // 5, 128 and 299 get no rows
            ids[t * n_used + slot] = e;
        }
    }
    expect_mul_mat_id(s, 300, n_used, n_tokens, ids, "300 experts, 3 slots x 1100 tokens");

    std::vector<int32_t> wide(size_t(260) * 3);
    for (size_t i = 0; i < wide.size(); ++i) {
        wide[i] = int32_t(rng() % 4);
    }
    expect_mul_mat_id(s, 4, 260, 3, wide, "4 experts, 260 slots x 3 tokens");
}

// Multi-device (simulated device indices): each of a group's sessions writes only its share of
// whole 32-column strips, the remainder to the last; together they give the whole product. With
// output rows off 128-byte lines device 0 computes everything and the others nothing.
TEST(HtpMatmul, DevicesOfAGroupEachWriteTheirStripsOfN) {
    for (const uint32_t pad : {104u, 4u}) {  // dst rows of 1024 bytes (128-byte lines), or of 924
        const mm_case c{GGML_TYPE_Q4_0, 128, 230, 3, 1, 1, 0, pad};  // 8 strips: 2 + 2 + 4 of 3 devices
        std::vector<std::vector<uint8_t>> outputs;
        mm_run whole{};
        for (uint32_t idx = 0; idx < 3; ++idx) {
            in_process_session s(config(8u << 20, idx, 3), 2);
            // run_case fills dst with 0x5A first; the same seed gives every device the same operands.
            mm_run r = run_case(s, c, true, 2, 8u << 20, 5);
            ASSERT_EQ(r.status, proto::HTP_STATUS_OK);
            EXPECT_EQ(s.platform().last_violation(), "");
            whole.want = r.want;
            whole.got.resize(r.got.size());
            for (uint32_t row = 0; row < c.m; ++row) {
                for (uint32_t j = 0; j < c.n; ++j) {
                    const size_t i      = size_t(row) * c.n + j;
                    const uint32_t strip = j / 32;
                    // Strips per device: 8 / 3 = 2 each, the last device also the remainder.
                    const bool mine = pad == 104 ? (idx < 2 ? strip / 2 == idx : strip >= 4) : idx == 0;
                    float untouched;
                    std::memset(&untouched, 0x5A, 4);
                    if (mine) {
                        whole.got[i] = r.got[i];
                    } else {
                        ASSERT_EQ(std::memcmp(&r.got[i], &untouched, 4), 0)
                            << "device " << idx << " wrote row " << row << " column " << j << " (pad " << pad << ")";
                    }
                }
            }
        }
        whole.status = proto::HTP_STATUS_OK;
        expect_close(whole, "three devices, pad " + std::to_string(pad));
    }
}

TEST(HtpMatmul, DeviceStripsPartitionNWithoutGapsOrOverlaps) {
    for (const uint32_t n_strips : {1u, 2u, 7u, 8u, 33u, 8192u}) {
        for (uint32_t count = 1; count <= 8; ++count) {
            proto::htp_tensor dst{};
            dst.nb[1] = dst.nb[2] = dst.nb[3] = 4096;
            uint32_t next = 0;
            for (uint32_t idx = 0; idx < count; ++idx) {
                htp::htp_mdev mdev{idx, count, proto::init_fastdiv(count)};
                const htp::htp_tensor_mdev_range s = htp::htp_tensor_mdev_line_columns(&dst, n_strips, mdev);
                if (n_strips < count) {  // fewer strips than devices: device 0 takes all
                    EXPECT_EQ(s.count, idx == 0 ? n_strips : 0u);
                    next = n_strips;
                    continue;
                }
                EXPECT_EQ(s.start, next) << n_strips << " strips, device " << idx << " of " << count;
                EXPECT_EQ(s.count, idx + 1 < count ? n_strips / count : n_strips - idx * (n_strips / count));
                next = s.start + s.count;
            }
            EXPECT_EQ(next, n_strips);
        }
    }
}

} // namespace
