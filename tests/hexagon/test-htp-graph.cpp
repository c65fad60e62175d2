// Graphs on the NPU: a graph mixing NPU and CPU ops through the scheduler, against the same graph
// on the CPU alone, and supports_op's static decisions (types, broadcast shapes, VTCM fit, OPFILTER).
#include "hexagon/htp-backend.h"
#include "hexagon/htp-device.h"
#include "hexagon/htp-op-prep.h"
#include "hexagon/repack.h"
#include "proto/htp-matmul-hmx.h"
#include "proto/htp-matmul.h"
#include "proto/htp-opcodes.h"

#include "cpu/cpu-backend.h"
#include "hexnpu/graph.h"
#include "hexnpu/sched.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <regex>

namespace {

using namespace hexnpu;
using namespace hexnpu::hexagon;
using namespace std::chrono_literals;

vnpu::rpc::session_options test_session() {
    vnpu::rpc::session_options o;
    o.window_size  = 64 << 20;
    o.host_threads = 2;
    o.timeout      = 10s;
    return o;
}

// REPEAT is kept on the CPU by the op filter (GGML_HEXAGON_OPFILTER): the CPU node the mixed
// graphs below need between NPU ops.
htp_options test_options() {
    htp_options o;
    o.op_filter    = "REPEAT";
    o.op_filter_re = std::make_shared<const std::regex>(o.op_filter, std::regex::icase);
    o.devices = {{"HTP0", 0, 0}};
    o.op_batch = 3;  // several batches per split
    o.op_queue = 2;
    o.n_hvx    = 2;
    return o;
}

// x + y -> sqr -> repeat to its own shape (CPU: filtered) -> * w (broadcast rows) -> silu -> scale.
struct mixed_graph {
    ggml_context  ctx;
    ggml_tensor * x = ggml_new_tensor_3d(&ctx, GGML_TYPE_F32, 96, 5, 3);
    ggml_tensor * y = ggml_new_tensor_3d(&ctx, GGML_TYPE_F32, 96, 5, 3);
    ggml_tensor * w = ggml_new_tensor_3d(&ctx, GGML_TYPE_F32, 96, 1, 3);
    ggml_tensor * sum = ggml_add(&ctx, x, y);
    ggml_tensor * sq  = ggml_sqr(&ctx, sum);
    ggml_tensor * lg  = ggml_repeat(&ctx, sq, sq);
    ggml_tensor * mul = ggml_mul(&ctx, lg, w);
    ggml_tensor * act = ggml_unary(&ctx, mul, GGML_UNARY_OP_SILU);
    ggml_tensor * out = ggml_scale(&ctx, act, 0.25f);
    ggml_cgraph   graph;

    mixed_graph() {
        // Outputs keep their memory: the results checked below.
        for (ggml_tensor * t : {sum, sq, lg, out}) {
            t->flags |= GGML_TENSOR_FLAG_OUTPUT;
        }
        ggml_build_forward_expand(graph, out);
    }
    void set_inputs() {
        std::mt19937                          rng(42);
        std::uniform_real_distribution<float> d(-3.0f, 3.0f);
        for (ggml_tensor * t : {x, y, w}) {
            std::vector<float> v(size_t(ggml_nelements(t)));
            for (float & e : v) {
                e = d(rng);
            }
            tensor_set(t, v.data(), 0, v.size() * 4);
        }
    }
    std::vector<float> values(const ggml_tensor * t) const {
        std::vector<float> v(size_t(ggml_nelements(t)));
        tensor_get(t, v.data(), 0, v.size() * 4);
        return v;
    }
};

TEST(HtpGraph, MixedNpuAndCpuOpsThroughTheScheduler) {
    auto                     devices = make_htp_devices(test_options(), test_session());
    auto                     cpu_dev = make_cpu_device();
    std::unique_ptr<backend> npu     = devices[0]->init_backend();
    std::unique_ptr<backend> cpu     = cpu_dev->init_backend();

    mixed_graph   g;
    backend_sched sched({npu.get(), cpu.get()});
    sched.alloc_graph(g.graph);
    EXPECT_EQ(sched.backend_of(g.sum), npu.get());
    EXPECT_EQ(sched.backend_of(g.sq), npu.get());
    EXPECT_EQ(sched.backend_of(g.lg), cpu.get());
    EXPECT_EQ(sched.backend_of(g.mul), npu.get());
    EXPECT_EQ(sched.backend_of(g.act), npu.get());
    EXPECT_EQ(sched.backend_of(g.out), npu.get());
    g.set_inputs();
    sched.graph_compute(g.graph);

    mixed_graph   ref;
    backend_sched cpu_only({cpu.get()});
    cpu_only.alloc_graph(ref.graph);
    ref.set_inputs();
    cpu_only.graph_compute(ref.graph);

    // ADD, SQR, MUL and SCALE round like the CPU; SILU's exp may differ in the last bits.
    for (auto [got, want] : {std::pair{g.sum, ref.sum}, std::pair{g.sq, ref.sq}, std::pair{g.lg, ref.lg}}) {
        EXPECT_EQ(g.values(got), ref.values(want)) << got->name;
    }
    const auto out = g.values(g.out), expect = ref.values(ref.out);
    for (size_t i = 0; i < out.size(); ++i) {
        ASSERT_NEAR(out[i], expect[i], 1e-6f * std::max(1.0f, std::fabs(expect[i]))) << i;
    }
}

// GGML_HEXAGON_OPSTAGE: 2 sends the batches with every op's compute skipped, 0 sends nothing; an
// NPU result then keeps what its memory held, the CPU's ops still run.
TEST(HtpGraph, OpStageSkipsTheComputeOrTheWholeQueue) {
    for (const uint32_t stage : {0u, 2u}) {
        htp_options o = test_options();
        o.op_stage    = stage;
        auto                     devices = make_htp_devices(o, test_session());
        auto                     cpu_dev = make_cpu_device();
        std::unique_ptr<backend> npu     = devices[0]->init_backend();
        std::unique_ptr<backend> cpu     = cpu_dev->init_backend();
        mixed_graph              g;
        backend_sched            sched({npu.get(), cpu.get()});
        sched.alloc_graph(g.graph);
        g.set_inputs();
        const std::vector<float> sentinel(size_t(ggml_nelements(g.sum)), 12345.0f);
        tensor_set(g.sum, sentinel.data(), 0, sentinel.size() * 4);
        sched.graph_compute(g.graph);
        EXPECT_EQ(g.values(g.sum), sentinel) << "stage " << stage;
    }
}

// GGML_HEXAGON_OPPOLL polls for the responses; GGML_HEXAGON_HOSTBUF=0 makes the compute buffers
// non-host, so what crosses to the CPU split is copied: the results are the default run's.
TEST(HtpGraph, PollingAndNonHostBuffersGiveTheSameResults) {
    auto                     cpu_dev = make_cpu_device();
    std::unique_ptr<backend> cpu     = cpu_dev->init_backend();
    std::vector<float>       want_out, want_lg;
    for (const int variant : {0, 1, 2}) {  // default, OPPOLL=1, HOSTBUF=0
        htp_options o  = test_options();
        o.op_poll      = variant == 1;
        o.host_buffers = variant != 2;
        auto                     devices = make_htp_devices(o, test_session());
        std::unique_ptr<backend> npu     = devices[0]->init_backend();
        EXPECT_EQ(devices[0]->buffer_type()->is_host(), variant != 2);
        EXPECT_EQ(cpu_dev->supports_buft(devices[0]->buffer_type()), variant != 2);
        mixed_graph   g;
        backend_sched sched({npu.get(), cpu.get()});
        sched.alloc_graph(g.graph);
        // MUL on the NPU reads REPEAT's CPU result through a copy; REPEAT on the CPU reads SQR's NPU
        // result in place from a host buffer, through a second copy otherwise.
        EXPECT_EQ(sched.n_copies(), variant == 2 ? 2 : 1) << "variant " << variant;
        g.set_inputs();
        sched.graph_compute(g.graph);
        if (variant == 0) {
            want_out = g.values(g.out);
            want_lg  = g.values(g.lg);
        } else {
            EXPECT_EQ(g.values(g.out), want_out) << "variant " << variant;
            EXPECT_EQ(g.values(g.lg), want_lg) << "variant " << variant;
        }
    }
}

TEST(HtpGraph, WeightsInARepackBufferPinTheirOpsToTheNpu) {
    auto                     devices = make_htp_devices(test_options(), test_session());
    auto                     cpu_dev = make_cpu_device();
    std::unique_ptr<backend> npu     = devices[0]->init_backend();
    std::unique_ptr<backend> cpu     = cpu_dev->init_backend();

    ggml_context  weights;
    ggml_tensor * w   = ggml_new_tensor_2d(&weights, GGML_TYPE_F32, 40, 1);
    auto          wbuf = alloc_ctx_tensors(weights, devices[0]->extra_buffer_types()[0]);
    std::vector<float> wv(40);
    for (int i = 0; i < 40; ++i) {
        wv[size_t(i)] = 0.5f + float(i) / 8.0f;
    }
    tensor_set(w, wv.data(), 0, wv.size() * 4);

    ggml_context  ctx;
    ggml_tensor * x   = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 40, 6);
    ggml_tensor * lg  = ggml_repeat(&ctx, x, x);  // on the CPU (filtered)
    ggml_tensor * out = ggml_mul(&ctx, lg, w);  // with the weight, on the NPU
    lg->flags |= GGML_TENSOR_FLAG_OUTPUT;
    out->flags |= GGML_TENSOR_FLAG_OUTPUT;
    ggml_cgraph graph;
    ggml_build_forward_expand(graph, out);
    backend_sched sched({cpu.get(), npu.get()});  // the CPU first: only the weight pulls MUL to the NPU
    sched.alloc_graph(graph);
    EXPECT_EQ(sched.backend_of(out), npu.get());
    EXPECT_EQ(sched.backend_of(lg), cpu.get());
    std::vector<float> xv(240);
    for (size_t i = 0; i < xv.size(); ++i) {
        xv[i] = 0.25f + float(i) * 0.125f;
    }
    tensor_set(x, xv.data(), 0, xv.size() * 4);
    sched.graph_compute(graph);
    std::vector<float> got(240), logs(240);
    tensor_get(out, got.data(), 0, got.size() * 4);
    tensor_get(lg, logs.data(), 0, logs.size() * 4);
    for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i], logs[i] * wv[i % 40]) << i;
    }
}

// RMS_NORM + MUL (weight) -> one RMS_NORM_MUL op, only where nothing else reads the norm: a
// second reader in the same split, a graph output, a reader in a later CPU split, or a graph whose
// whole is unknown (partial) keeps the norm. Results match the CPU backend either way, and the
// fused op rounds exactly like the norm and the MUL apart.
struct norm_chain {
    ggml_context  ctx;
    ggml_tensor * x  = ggml_new_tensor_3d(&ctx, GGML_TYPE_F32, 200, 7, 2);
    ggml_tensor * w  = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 200);
    ggml_tensor * n1 = ggml_rms_norm(&ctx, x, 1e-6f);
    ggml_tensor * m1 = ggml_mul(&ctx, n1, w);  // fuses
    ggml_tensor * n2 = ggml_rms_norm(&ctx, m1, 1e-5f);
    ggml_tensor * m2 = ggml_mul(&ctx, n2, w);
    ggml_tensor * a2 = ggml_add(&ctx, m2, n2);  // a second reader of n2
    ggml_tensor * n3 = ggml_rms_norm(&ctx, a2, 1e-6f);  // an output
    ggml_tensor * m3 = ggml_mul(&ctx, n3, w);
    ggml_tensor * n4 = ggml_rms_norm(&ctx, m3, 1e-6f);
    ggml_tensor * m4 = ggml_mul(&ctx, n4, w);
    ggml_tensor * r4 = ggml_repeat(&ctx, n4, n4);  // read on the CPU, in another split
    ggml_tensor * out = ggml_add(&ctx, m4, r4);
    ggml_cgraph   graph;

    norm_chain() {
        n3->flags |= GGML_TENSOR_FLAG_OUTPUT;
        out->flags |= GGML_TENSOR_FLAG_OUTPUT;
        ggml_build_forward_expand(graph, out);
    }
    void set_inputs() {
        std::mt19937                          rng(7);
        std::uniform_real_distribution<float> d(-2.0f, 2.0f);
        for (ggml_tensor * t : {x, w}) {
            std::vector<float> v(size_t(ggml_nelements(t)));
            for (float & e : v) {
                e = d(rng);
            }
            tensor_set(t, v.data(), 0, v.size() * 4);
        }
    }
    std::vector<float> values(const ggml_tensor * t) const {
        std::vector<float> v(size_t(ggml_nelements(t)));
        tensor_get(t, v.data(), 0, v.size() * 4);
        return v;
    }
};

TEST(HtpGraph, RmsNormMulFusesOnlyWhereNothingElseReadsTheNorm) {
    auto                     cpu_dev = make_cpu_device();
    std::unique_ptr<backend> cpu     = cpu_dev->init_backend();
    norm_chain               ref;
    backend_sched            cpu_only({cpu.get()});
    cpu_only.alloc_graph(ref.graph);
    ref.set_inputs();
    cpu_only.graph_compute(ref.graph);

    std::vector<float> fused_out, fused_n3;
    for (const bool fusion : {true, false}) {
        htp_options o = test_options();
        o.op_batch    = 64;
        o.op_fusion   = fusion;
        auto                     devices = make_htp_devices(o, test_session());
        std::unique_ptr<backend> npu     = devices[0]->init_backend();
        auto &                   htp     = static_cast<htp_backend &>(*npu);
        norm_chain               g;
        backend_sched            sched({npu.get(), cpu.get()});
        sched.alloc_graph(g.graph);
        ASSERT_EQ(sched.backend_of(g.r4), cpu.get());
        ASSERT_EQ(sched.backend_of(g.m4), npu.get());
        g.set_inputs();
        sched.graph_compute(g.graph);
        EXPECT_EQ(htp.fused_count(), fusion ? 1u : 0u) << "only n1 -> m1 may fuse";
        // The CPU sums a row in double, the NPU in fp32 lanes: a few ulp of the factor.
        for (auto [got, want] : {std::pair{g.n3, ref.n3}, std::pair{g.out, ref.out}}) {
            const auto gv = g.values(got), wv = ref.values(want);
            for (size_t i = 0; i < gv.size(); ++i) {
                ASSERT_NEAR(gv[i], wv[i], 2e-6f * std::max(1.0f, std::fabs(wv[i]))) << got->name << " " << i;
            }
        }
        if (fusion) {
            fused_out = g.values(g.out);
            fused_n3  = g.values(g.n3);
        } else {
            EXPECT_EQ(g.values(g.out), fused_out) << "the fused op rounds as the two ops do";
            EXPECT_EQ(g.values(g.n3), fused_n3);
        }
    }

    // Straight to the backend: a graph with no whole is all there is (n1 -> m1 fuses); a part of an
    // unknown whole fuses nothing.
    for (const bool partial : {false, true}) {
        auto                     devices = make_htp_devices(test_options(), test_session());
        std::unique_ptr<backend> npu     = devices[0]->init_backend();
        ggml_context             ctx;
        ggml_tensor *            x = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 64, 3);
        ggml_tensor *            w = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 64);
        ggml_tensor *            m = ggml_mul(&ctx, ggml_rms_norm(&ctx, x, 1e-6f), w);
        ggml_cgraph              graph;
        ggml_build_forward_expand(graph, m);
        graph.partial = partial;
        backend_sched sched({npu.get()});
        sched.alloc_graph(graph);
        std::vector<float> ones(64 * 3, 1.0f);
        tensor_set(x, ones.data(), 0, 64 * 3 * 4);
        tensor_set(w, ones.data(), 0, 64 * 4);
        npu->graph_compute(graph);
        EXPECT_EQ(static_cast<htp_backend &>(*npu).fused_count(), partial ? 0u : 1u);
        std::vector<float> got(64 * 3);
        tensor_get(m, got.data(), 0, got.size() * 4);
        for (float v : got) {
            ASSERT_NEAR(v, 1.0f / std::sqrt(1.0f + 1e-6f), 1e-6f);
        }
    }
}

// The fused RMS_NORM_MUL reads the norm's source while writing the MUL's result; the allocator
// planned for the two ops, so the MUL's result may reuse the source's memory after the norm. Fused,
// a shifted overlap would overwrite source rows before they are read (Qwen3.5's gated norm over the
// delta net's output): such a pair stays two ops; the very same rows (in place) still fuse.
TEST(HtpGraph, RmsNormMulDoesNotFuseOverItsOwnSourceShifted) {
    htp_options o = test_options();
    o.n_hvx       = 1;  // in order: without the check, rows ahead are overwritten before they are read
    auto                     devices = make_htp_devices(o, test_session());
    std::unique_ptr<backend> npu     = devices[0]->init_backend();
    const int64_t            rows = 2048, n = 64;
    const size_t             bytes = size_t(rows * n) * 4;
    for (const size_t shift : {bytes / 2, size_t(0)}) {
        ggml_context  ctx;
        ggml_tensor * x   = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, n, rows);
        ggml_tensor * w   = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, n);
        ggml_tensor * nrm = ggml_rms_norm(&ctx, x, 1e-6f);
        ggml_tensor * m   = ggml_mul(&ctx, nrm, w);
        auto          buf  = devices[0]->buffer_type()->alloc_buffer(3 * bytes + 4096);
        auto *        base = static_cast<uint8_t *>(buf->base());
        tensor_alloc(buf.get(), x, base);
        tensor_alloc(buf.get(), nrm, base + 2 * bytes);
        tensor_alloc(buf.get(), m, base + shift);  // the MUL's result over x, shifted or in place
        tensor_alloc(buf.get(), w, base + 3 * bytes);
        std::vector<float> xv(size_t(rows * n));
        std::vector<float> wv(static_cast<size_t>(n));
        for (size_t i = 0; i < xv.size(); ++i) {
            xv[i] = float(int(i % 97) - 48) / 16.0f;
        }
        for (size_t i = 0; i < wv.size(); ++i) {
            wv[i] = 0.5f + float(i) / 64.0f;
        }
        tensor_set(x, xv.data(), 0, bytes);
        tensor_set(w, wv.data(), 0, size_t(n) * 4);
        ggml_cgraph graph;
        ggml_build_forward_expand(graph, m);
        npu->graph_compute(graph);
        EXPECT_EQ(static_cast<htp_backend &>(*npu).fused_count(), shift == 0 ? 1u : 0u) << "shift " << shift;
        std::vector<float> got(xv.size());
        tensor_get(m, got.data(), 0, bytes);
        for (int64_t r = 0; r < rows; ++r) {
            double ss = 0;
            for (int64_t i = 0; i < n; ++i) {
                ss += double(xv[size_t(r * n + i)]) * xv[size_t(r * n + i)];
            }
            const double f = 1.0 / std::sqrt(ss / double(n) + 1e-6);
            for (int64_t i = 0; i < n; ++i) {
                const double want = xv[size_t(r * n + i)] * f * wv[size_t(i)];
                ASSERT_NEAR(got[size_t(r * n + i)], want, 1e-5 * std::max(1.0, std::fabs(want))) << "shift " << shift
                                                                                                  << " row " << r;
            }
        }
    }
}

// The answers come from the operands' types, shapes and strides and the op's params alone (spec:
// never from buffer state): the same with the operands not yet allocated, stored in an HTP0-REPACK
// buffer (the quantized ones tiled) and stored flat in a plain buffer.
TEST(HtpGraph, SupportsOpDecidesFromStaticProperties) {
    htp_options o = test_options();
    auto        small_vtcm = test_session();
    small_vtcm.vtcm_size   = 64 * 1024;
    auto          devices  = make_htp_devices(o, small_vtcm);
    htp_device &  dev      = *devices[0];
    const char *  stored[] = {"not allocated", "stored in HTP0-REPACK", "stored flat"};
    std::vector<bool> answers[3];
    for (int where = 0; where < 3; ++where) {
        ggml_context  operands;
        ggml_tensor * a    = ggml_new_tensor_2d(&operands, GGML_TYPE_F32, 64, 8);
        ggml_tensor * row  = ggml_new_tensor_2d(&operands, GGML_TYPE_F32, 64, 1);
        ggml_tensor * h    = ggml_new_tensor_2d(&operands, GGML_TYPE_F16, 64, 8);
        ggml_tensor * q    = ggml_new_tensor_2d(&operands, GGML_TYPE_Q8_0, 64, 8);
        ggml_tensor * wide = ggml_new_tensor_2d(&operands, GGML_TYPE_F32, 16384, 2);
        ggml_tensor * w    = ggml_new_tensor_2d(&operands, GGML_TYPE_Q8_0, 256, 64);  // a tileable weight
        ggml_tensor * x    = ggml_new_tensor_2d(&operands, GGML_TYPE_F32, 256, 9);
        ggml_tensor * ids  = ggml_new_tensor_1d(&operands, GGML_TYPE_I32, 5);
        std::unique_ptr<backend_buffer> buf;
        if (where > 0) {
            buf = alloc_ctx_tensors(operands, where == 1 ? dev.extra_buffer_types()[0] : dev.buffer_type());
            for (ggml_tensor & t : operands.tensors()) {
                std::vector<uint8_t> zero(ggml_nbytes(&t));
                tensor_set(&t, zero.data(), 0, zero.size());
            }
        }
        ggml_context ctx;
        auto         check = [&](ggml_tensor * op, bool want, const char * what) {
            const bool got = dev.supports_op(op);
            answers[where].push_back(got);
            EXPECT_EQ(got, want) << what << ", operands " << stored[where];
        };
        check(ggml_add(&ctx, a, row), true, "src1 rows broadcast");
        check(ggml_add(&ctx, h, h), true, "F16 rows");
        check(ggml_add(&ctx, q, q), false, "F32, F16, BF16 only");
        check(ggml_cpy(&ctx, a, ggml_new_tensor_2d(&ctx, GGML_TYPE_IQ4_NL, 64, 8)), true, "IQ4_NL's quantizer");
        check(ggml_cpy(&ctx, a, ggml_new_tensor_2d(&ctx, GGML_TYPE_Q4_K, 256, 2)), false, "no K-quant quantizer");
        check(ggml_repeat(&ctx, a, a), false, "filtered");
        check(ggml_concat(&ctx, a, a, 1), true, "CONCAT");
        check(ggml_unary(&ctx, a, GGML_UNARY_OP_GELU), true, "GELU");
        check(ggml_sqrt(&ctx, ggml_transpose(&ctx, a)), false, "permuted rows");
        // A row of 16 Ki floats, double buffered over three streams, needs more than 64 KiB of VTCM.
        check(ggml_mul(&ctx, wide, wide), false, "a row beyond the VTCM");
        EXPECT_NE(dev.refusal_reason(ggml_mul(&ctx, wide, wide)).find("session's VTCM (64 KiB"), std::string::npos)
            << "the refusal names the cause";
        EXPECT_NE(dev.refusal_reason(ggml_add(&ctx, q, q)).find("takes F32, F16 or BF16 rows"), std::string::npos)
            << "the check that failed says why";
        EXPECT_EQ(dev.refusal_reason(ggml_mul(&ctx, a, a)), "");
        check(ggml_mul(&ctx, a, a), true, "MUL");
        // The weight's ops: whatever the answer, the same one wherever the weight is.
        for (ggml_tensor * op : {ggml_mul_mat(&ctx, w, x), ggml_get_rows(&ctx, w, ids),
                                 ggml_cpy(&ctx, w, ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 256, 64))}) {
            answers[where].push_back(dev.supports_op(op));
        }
    }
    EXPECT_EQ(answers[1], answers[0]) << "operands stored in HTP0-REPACK";
    EXPECT_EQ(answers[2], answers[0]) << "operands stored flat";
    EXPECT_EQ(dev.static_target().vtcm_size, 64u * 1024);
}

// supports_op decides from type, shape, strides and params alone (spec): the same answers for
// weights not yet allocated, stored tiled in a REPACK buffer, and stored flat in a compute buffer.
TEST(HtpGraph, SupportsOpAnswersAlikeBeforeAndAfterWeightsAreStored) {
    htp_options  o       = test_options();
    auto         devices = make_htp_devices(o, test_session());
    htp_device & dev     = *devices[0];
    for (const ggml_type type : {GGML_TYPE_Q4_0, GGML_TYPE_Q6_K, GGML_TYPE_Q5_0, GGML_TYPE_F16}) {
        std::vector<bool> answers[3];
        for (int where = 0; where < 3; ++where) {
            ggml_context  weights;
            ggml_tensor * w = ggml_new_tensor_2d(&weights, type, 256, 64);
            std::unique_ptr<backend_buffer> wbuf;
            if (where > 0) {
                wbuf = alloc_ctx_tensors(weights, where == 1 ? dev.extra_buffer_types()[0] : dev.buffer_type());
                std::vector<uint8_t> zero(ggml_nbytes(w));
                tensor_set(w, zero.data(), 0, zero.size());
            }
            ggml_context  ctx;
            ggml_tensor * x    = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 256, 9);
            ggml_tensor * ids  = ggml_new_tensor_1d(&ctx, GGML_TYPE_I32, 5);
            ggml_tensor * xf16 = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 256, 3);
            for (ggml_tensor * op : {ggml_mul_mat(&ctx, w, x), ggml_mul_mat(&ctx, w, xf16), ggml_get_rows(&ctx, w, ids),
                                     ggml_cpy(&ctx, w, ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 256, 64))}) {
                answers[where].push_back(dev.supports_op(op));
            }
        }
        EXPECT_EQ(answers[1], answers[0]) << ggml_type_name(type) << ": stored tiled";
        EXPECT_EQ(answers[2], answers[0]) << ggml_type_name(type) << ": stored flat";
    }
}

// Runs mm (its weight stored already) on dev with x set to xf; returns the output.
std::vector<float> compute_matmul(htp_device & dev, ggml_tensor * mm, ggml_tensor * x, const std::vector<float> & xf) {
    std::unique_ptr<backend> npu = dev.init_backend();
    backend_sched            sched({npu.get()});
    ggml_cgraph              graph;
    ggml_build_forward_expand(graph, mm);
    sched.alloc_graph(graph);
    tensor_set(x, xf.data(), 0, xf.size() * 4);
    sched.graph_compute(graph);
    std::vector<float> got(size_t(ggml_nelements(mm)));
    tensor_get(mm, got.data(), 0, got.size() * 4);
    return got;
}

// An empty node (llama.cpp's last layer in a ubatch that outputs no logits: zero rows) has nothing
// to compute: the graph runs, where the NPU rejected the batch with INVAL_PARAMS.
TEST(HtpGraph, EmptyNodesAreNotComputed) {
    htp_options   o       = test_options();
    auto          devices = make_htp_devices(o, test_session());
    ggml_context  weights;
    ggml_tensor * w    = ggml_new_tensor_2d(&weights, GGML_TYPE_Q8_0, 64, 40);
    auto          wbuf = alloc_ctx_tensors(weights, devices[0]->extra_buffer_types()[0]);
    std::vector<uint8_t> zero(ggml_nbytes(w));
    tensor_set(w, zero.data(), 0, zero.size());
    ggml_context  ctx;
    ggml_tensor * x  = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 64, 0);
    ggml_tensor * mm = ggml_mul_mat(&ctx, w, x);
    EXPECT_TRUE(compute_matmul(*devices[0], mm, x, {}).empty());
}

// GGML_PREC_F32 on a matmul (GGML's ggml_prec_set_acc: fp32 sums and outputs) keeps it off the HMX
// unit, whose output tiles are fp16; the same product without it goes there.
TEST(HtpGraph, Fp32PrecisionMatmulStaysOffTheHmxUnit) {
    ggml_context        ctx;
    ggml_tensor *       w  = ggml_new_tensor_2d(&ctx, GGML_TYPE_F16, 64, 64);
    ggml_tensor *       x  = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 64, 64);
    ggml_tensor *       mm = ggml_mul_mat(&ctx, w, x);
    const htp_op_target target{2, 8u << 20, htp_hmx_matmul::always, htp_hmx_matmul::off};
    const auto          hmx = prepare_htp_op(mm, target);
    ASSERT_TRUE(hmx.has_value());
    EXPECT_EQ(hmx->desc.opcode, uint32_t(proto::HTP_OP_MUL_MAT_HMX));
    ggml_set_op_param<int32_t>(mm, 0, GGML_PREC_F32);
    const auto hvx = prepare_htp_op(mm, target);
    ASSERT_TRUE(hvx.has_value());
    EXPECT_EQ(hvx->desc.opcode, uint32_t(proto::HTP_OP_MUL_MAT));
}

// A prompt's MUL_MAT_ID with HMX for prompts: two NPU ops, the HVX kernel for the experts routed at
// most HTP_MM_HMX_MIN_ROWS rows, then the HMX kernel for the others (the catalog's hot_expert cases
// check the results); one op when no expert can get more (decode), or with HMX always.
TEST(HtpGraph, MulMatIdQueuesEachExpertsUnit) {
    ggml_context  ctx;
    ggml_tensor * as = ggml_new_tensor_3d(&ctx, GGML_TYPE_F16, 64, 32, 8);
    auto          op = [&](int64_t n_tokens) {
        ggml_tensor * b   = ggml_new_tensor_3d(&ctx, GGML_TYPE_F32, 64, 2, n_tokens);
        ggml_tensor * ids = ggml_new_tensor_2d(&ctx, GGML_TYPE_I32, 2, n_tokens);
        return ggml_mul_mat_id(&ctx, as, b, ids);
    };
    const htp_op_target prompts{2, 8u << 20, htp_hmx_matmul::prompts, htp_hmx_matmul::off};
    const std::vector<htp_op> pair = prepare_htp_ops(op(12), prompts);
    ASSERT_EQ(pair.size(), 2u);
    ASSERT_EQ(pair[0].desc.opcode, uint32_t(proto::HTP_OP_MUL_MAT_ID));
    ASSERT_EQ(pair[1].desc.opcode, uint32_t(proto::HTP_OP_MUL_MAT_ID_HMX));
    proto::htp_matmul_kparams     few;
    proto::htp_matmul_hmx_kparams many;
    std::memcpy(&few, pair[0].desc.kparams, sizeof few);
    std::memcpy(&many, pair[1].desc.kparams, sizeof many);
    EXPECT_EQ(few.max_expert_rows, proto::HTP_MM_HMX_MIN_ROWS);
    EXPECT_EQ(many.min_expert_rows, proto::HTP_MM_HMX_MIN_ROWS + 1);
    const std::vector<htp_op> decode = prepare_htp_ops(op(2), prompts);  // 4 routed rows
    ASSERT_EQ(decode.size(), 1u);
    EXPECT_EQ(decode[0].desc.opcode, uint32_t(proto::HTP_OP_MUL_MAT_ID));
    std::memcpy(&few, decode[0].desc.kparams, sizeof few);
    EXPECT_EQ(few.max_expert_rows, 0u);
    const std::vector<htp_op> always = prepare_htp_ops(op(2), {2, 8u << 20, htp_hmx_matmul::always, htp_hmx_matmul::off});
    ASSERT_EQ(always.size(), 1u);
    EXPECT_EQ(always[0].desc.opcode, uint32_t(proto::HTP_OP_MUL_MAT_ID_HMX));
    std::memcpy(&many, always[0].desc.kparams, sizeof many);
    EXPECT_EQ(many.min_expert_rows, 0u);
}

// GGML_HEXAGON_MM_SELECT: 0 keeps matmuls off the NPU and offers no REPACK buffer type; 1 keeps a
// REPACK buffer's weights flat and the NPU still multiplies them; 2 and 3 tile them.
TEST(HtpGraph, MmSelectChoosesTheMatmulPath) {
    for (const uint32_t mode : {0u, 1u, 2u, 3u, 4u}) {
        htp_options o = test_options();
        o.mm_select   = mode;
        auto          devices = make_htp_devices(o, test_session());
        htp_device &  dev     = *devices[0];
        ggml_context  weights;
        ggml_tensor * w = ggml_new_tensor_2d(&weights, GGML_TYPE_Q8_0, 64, 40);
        ggml_context  ctx;
        ggml_tensor * x  = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 64, 3);
        ggml_tensor * mm = ggml_mul_mat(&ctx, w, x);
        EXPECT_EQ(dev.supports_op(mm), mode != 0) << "mode " << mode;
        EXPECT_EQ(dev.extra_buffer_types().empty(), mode == 0) << "mode " << mode;
        if (mode == 0) {
            continue;
        }
        auto               wbuf = alloc_ctx_tensors(weights, dev.extra_buffer_types()[0]);
        std::vector<float> wf(64 * 40), xf(64 * 3);
        for (size_t i = 0; i < wf.size(); ++i) {
            wf[i] = float(int(i % 13) - 6) / 4.0f;
        }
        for (size_t i = 0; i < xf.size(); ++i) {
            // Integers with 127 in every 32-block: the NPU's 8-bit activation blocks hold them exactly.
            xf[i] = i % 32 == 0 ? 127.0f : float(int(i * 7 % 255) - 127);
        }
        std::vector<uint8_t> q(ggml_nbytes(w));
        ggml_get_type_traits(GGML_TYPE_Q8_0)->from_float_ref(wf.data(), q.data(), int64_t(wf.size()));
        ggml_get_type_traits(GGML_TYPE_Q8_0)->to_float_ref(q.data(), wf.data(), int64_t(wf.size()));
        tensor_set(w, q.data(), 0, q.size());
        EXPECT_EQ(static_cast<htp_buffer *>(w->buffer)->is_tiled(w), mode >= 2) << "mode " << mode;

        const std::vector<float> got = compute_matmul(dev, mm, x, xf);
        for (int r = 0; r < 3; ++r) {
            for (int n = 0; n < 40; ++n) {
                double want = 0;
                for (int k = 0; k < 64; ++k) {
                    want += double(wf[size_t(n) * 64 + k]) * xf[size_t(r) * 64 + k];
                }
                // Mode 4 multiplies on HMX (3 rows: forced), the exact products' sum rounded once to
                // fp16 (2^-11 relative).
                const double rel = mode == 4 ? std::ldexp(1.0, -11) : 1e-4;
                ASSERT_NEAR(got[size_t(r) * 40 + n], want, rel * (1 + std::fabs(want))) << "mode " << mode;
            }
        }
    }
}

// A REPACK buffer stores a whole weight part by part (groups of 32 rows of about 4 MiB, or whole 2-D
// slices), releasing each part's source pages: the tiles equal one repack of the whole weight, and
// the source keeps its bytes.
TEST(HtpGraph, AWeightStoredInPartsTilesAsAWhole) {
    htp_options o       = test_options();
    auto        devices = make_htp_devices(o, test_session());
    for (const ggml_type type : {GGML_TYPE_Q8_0, GGML_TYPE_Q4_K}) {
        for (const int64_t ne2 : {1, 3}) {
            ggml_context  weights;
            ggml_tensor * w = ggml_new_tensor_3d(&weights, type, 4096, ne2 == 1 ? 1201 : 70, ne2);
            auto          wbuf = alloc_ctx_tensors(weights, devices[0]->extra_buffer_types()[0]);
            std::vector<float> f(size_t(ggml_nelements(w)));
            std::mt19937       rng(7);
            std::normal_distribution<float> normal(0.0f, 0.02f);
            for (float & v : f) {
                v = normal(rng);
            }
            std::vector<uint8_t> bytes(ggml_nbytes(w));
            ggml_get_type_traits(type)->from_float_ref(f.data(), bytes.data(), int64_t(f.size()));
            const std::vector<uint8_t> source = bytes;
            tensor_set(w, bytes.data(), 0, bytes.size());
            EXPECT_EQ(bytes, source) << "the source keeps its bytes";
            ASSERT_TRUE(static_cast<htp_buffer *>(w->buffer)->is_tiled(w));
            std::vector<uint8_t> whole(tiled_nbytes(type, w->ne));
            ASSERT_TRUE(repack_tensor(type, w->ne, source.data(), whole.data(), 1).ok());
            EXPECT_EQ(std::memcmp(w->data, whole.data(), whole.size()), 0) << ggml_type_name(type) << " ne2 " << ne2;
        }
    }
}

// A weight with values past fp16's range (a valid model that runs on the CPU) runs on HTP0 too:
// the REPACK buffer records its range as it is stored and the batch takes the HVX kernel, not the
// HMX unit's fp16 tiles (which refused it with INVAL_PARAMS). supports_op answers the same for both.
TEST(HtpGraph, AWeightBeyondFp16RunsOffTheHmxUnit) {
    for (const ggml_type type : {GGML_TYPE_F32, GGML_TYPE_Q8_0}) {
        for (const float big : {1.0f, 1e6f}) {
            htp_options o = test_options();
            o.mm_select   = 4;  // HMX for every shape it takes
            auto          devices = make_htp_devices(o, test_session());
            htp_device &  dev     = *devices[0];
            ggml_context  weights;
            ggml_tensor * w = ggml_new_tensor_2d(&weights, type, 64, 40);
            ggml_context  ctx;
            ggml_tensor * x  = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 64, 48);
            ggml_tensor * mm = ggml_mul_mat(&ctx, w, x);
            EXPECT_TRUE(dev.supports_op(mm));
            auto               wbuf = alloc_ctx_tensors(weights, dev.extra_buffer_types()[0]);
            std::vector<float> wf(64 * 40), xf(64 * 48);
            for (size_t i = 0; i < wf.size(); ++i) {
                wf[i] = float(int(i % 13) - 6) / 4.0f * (i % 7 == 0 ? big : 1.0f);
            }
            for (size_t i = 0; i < xf.size(); ++i) {
                xf[i] = i % 32 == 0 ? 127.0f : float(int(i * 7 % 255) - 127);
            }
            std::vector<uint8_t> bytes(ggml_nbytes(w));
            if (type == GGML_TYPE_F32) {
                std::memcpy(bytes.data(), wf.data(), bytes.size());
            } else {
                ggml_get_type_traits(type)->from_float_ref(wf.data(), bytes.data(), int64_t(wf.size()));
                ggml_get_type_traits(type)->to_float_ref(bytes.data(), wf.data(), int64_t(wf.size()));
            }
            tensor_set(w, bytes.data(), 0, bytes.size());
            EXPECT_EQ(htp_stored_beyond_fp16(w), big > 1.0f);
            EXPECT_TRUE(dev.supports_op(mm));

            const std::vector<float> got = compute_matmul(dev, mm, x, xf);
            for (int r = 0; r < 48; ++r) {
                for (int n = 0; n < 40; ++n) {
                    double want = 0, scale = 0;
                    for (int k = 0; k < 64; ++k) {
                        want += double(wf[size_t(n) * 64 + k]) * xf[size_t(r) * 64 + k];
                        scale += std::fabs(double(wf[size_t(n) * 64 + k]) * xf[size_t(r) * 64 + k]);
                    }
                    // HMX: one fp16 rounding of the output; HVX: 8-bit activations (exact here:
                    // integers with 127 in every block) and fp32 sums.
                    ASSERT_NEAR(got[size_t(r) * 40 + n], want, std::ldexp(1.0, -11) * (1 + scale))
                        << ggml_type_name(type) << " big " << big;
                }
            }
        }
    }
}

} // namespace
