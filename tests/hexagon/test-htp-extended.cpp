// v81's extended mappings (FASTRPC_MAP_FD_DELAYED_EXTENDED, 64-bit dma_addr_t) against real session
// processes: a weight buffer that only DMA reads goes to the session's extended region, outside the
// window, so it takes no window room; the matmul reaches it by DMA and computes the right product,
// while a kernel that loads it with HVX faults (the same kernel is fine on v79, where it sits in the
// window).
#include "htp-session-fixture.h"

#include "hexagon/htp-op-prep.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace {

using namespace htp_session_test;

struct weights_and_activations {
    ggml_context                    wctx, actx;
    ggml_tensor *                   w;
    ggml_tensor *                   x;
    ggml_tensor *                   y;
    ggml_tensor *                   copy;
    std::unique_ptr<backend_buffer> wbuf, abuf;

    explicit weights_and_activations(htp_device & dev) {
        w    = ggml_new_tensor_2d(&wctx, GGML_TYPE_F32, 256, 48);
        x    = ggml_new_tensor_2d(&actx, GGML_TYPE_F32, 256, 3);
        y    = ggml_mul_mat(&actx, w, x);
        copy = ggml_new_tensor_2d(&actx, GGML_TYPE_F32, 256, 1);
        wbuf = alloc_ctx_tensors(wctx, dev.extra_buffer_types().at(0));  // REPACK: weights, delayed
        abuf = alloc_ctx_tensors(actx, dev.buffer_type());
        fill(w, 1);
        fill(x, 2);
    }
};

vnpu::rpc::session_options arch(uint32_t a) {
    vnpu::rpc::session_options s = test_session(8 * MiB);  // a window smaller than nothing we use
    s.arch                       = a;
    return s;
}

TEST(HtpExtended, WeightsOnlyDmaReadsLiveOutsideTheWindowOnV81) {
    fixture                 f(test_options(), arch(81));
    weights_and_activations t(f.dev());
    htp_backend             be(f.dev());
    ggml_cgraph             g;
    g.nodes.push_back(t.y);
    be.graph_compute(g);
    const std::vector<float> w = values(t.w), x = values(t.x), y = values(t.y);
    for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 48; ++c) {
            double want = 0, mag = 0;
            for (int k = 0; k < 256; ++k) {
                want += double(w[size_t(c) * 256 + size_t(k)]) * x[size_t(r) * 256 + size_t(k)];
                mag += std::fabs(double(w[size_t(c) * 256 + size_t(k)]) * x[size_t(r) * 256 + size_t(k)]);
            }
            ASSERT_NEAR(y[size_t(r) * 48 + size_t(c)], want, 1e-5 * mag) << r << "," << c;
        }
    }
    const htp_window_stats s = f.dev().window_stats();
    EXPECT_EQ(s.ext_maps, 1u);
    EXPECT_EQ(s.ext_map_bytes, t.wbuf->size());
}

// GGML_HEXAGON_DMA64=0: on v81 too, the weights are mapped into the window (a window they fit in).
TEST(HtpExtended, Dma64OffKeepsTheWeightsInTheWindow) {
    htp_options o = test_options();
    o.dma64       = false;
    fixture f(o, arch(81));
    EXPECT_FALSE(f.dev().has_extended_region());
    vnpu::rpc::session_options big = arch(81);
    big.window_size                = 64 * MiB;
    fixture                 g(o, big);
    weights_and_activations t(g.dev());
    htp_backend             be(g.dev());
    ggml_cgraph             graph;
    graph.nodes.push_back(t.y);
    be.graph_compute(graph);
    const htp_window_stats s = g.dev().window_stats();
    EXPECT_EQ(s.ext_maps, 0u);
    EXPECT_GE(s.map_bytes, t.wbuf->size());
    fixture on(test_options(), arch(81));
    EXPECT_TRUE(on.dev().has_extended_region());
}

htp_op breach_op(const ggml_tensor * src, const ggml_tensor * dst) {
    htp_op op;
    op.desc.opcode = proto::HTP_OP_TEST_DMA_ONLY_BREACH;
    op.src[0]      = src;
    op.dst[0]      = dst;
    return op;
}

TEST(HtpExtended, AnHvxLoadFromAnExtendedBufferFaults) {
    {
        fixture                 f(test_options(), arch(79));
        weights_and_activations t(f.dev());
        htp_backend             be(f.dev());
        const htp_op            ops[] = {breach_op(t.w, t.copy)};
        be.compute_ops(ops);  // in the window on v79: an ordinary load
        const std::vector<float> w = values(t.w), copy = values(t.copy);
        EXPECT_TRUE(std::equal(copy.begin(), copy.begin() + 32, w.begin()));
    }
    fixture                 f(test_options(), arch(81));
    weights_and_activations t(f.dev());
    htp_backend             be(f.dev());
    const htp_op            ops[] = {breach_op(t.w, t.copy)};
    try {
        be.compute_ops(ops);
        FAIL() << "no fault";
    } catch (const backend_error & e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("NPU fault at extended (DMA-only) address 0x1000"), std::string::npos) << what;
        EXPECT_NE(what.find("TEST_DMA_ONLY_BREACH"), std::string::npos) << what;
    }
    // The session starts afresh; DMA still reaches the weights there.
    ggml_cgraph g;
    g.nodes.push_back(t.y);
    be.graph_compute(g);
    EXPECT_EQ(f.dev().window_stats().ext_maps, 1u);
}

} // namespace
