// Whole batches through the htp_iface entry points on an in-process virtual NPU: TEST_STREAM end to
// end (results, traces, profile), the strict rules as an op breaks them, malformed batches, the
// sliding buffer window, and faults/crashes attributed to their op.
#include "htp/htp-iface.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-status.h"
#include "proto/htp-trace.h"
#include "test-htp-util.h"
#include "vnpu/platform/in-process-session.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <unistd.h>
#include <vector>

namespace {

using namespace hexnpu;
using namespace htp_test;
using vnpu::batch_builder;
using vnpu::in_process_session;
using vnpu::packed_batch;
using vnpu::shared_buffer;

constexpr uint64_t MiB = 1 << 20;

vnpu::platform_config quiet_config(uint32_t arch = 79, uint32_t host_threads = 4) {
    vnpu::platform_config cfg;
    cfg.arch         = arch;
    cfg.host_threads = host_threads;
    cfg.window_size  = 64 * MiB;
    cfg.log          = [](int, const std::string &) {};
    return cfg;
}

// A strided F32 layout: every row and slice padded, so the DMA must honour each stride.
struct layout {
    std::array<uint32_t, 4> ne;
    std::array<uint32_t, 4> nb;
    uint64_t                size;
};

layout padded_layout(std::array<uint32_t, 4> ne, uint32_t row_pad, uint32_t slice_pad) {
    layout l{ne, {}, 0};
    l.nb[0] = 4;
    l.nb[1] = ne[0] * 4 + row_pad;
    l.nb[2] = ne[1] * l.nb[1] + slice_pad;
    l.nb[3] = ne[2] * l.nb[2] + slice_pad;
    l.size  = uint64_t(ne[3]) * l.nb[3];
    return l;
}

uint16_t add_tensor(batch_builder & b, uint16_t buf, uint64_t offset, const layout & l) {
    proto::htp_tensor t{};
    t.data  = offset;
    t.size  = l.size;
    t.type  = 0;
    t.flags = proto::HTP_TENSOR_COMPUTE;
    t.bi    = buf;
    for (int d = 0; d < 4; ++d) {
        t.ne[d] = l.ne[d];
        t.nb[d] = l.nb[d];
    }
    return b.add_tensor(t);
}

// Fills every element of l at base with random floats, and everything else in [base, base+size)
// with a sentinel pattern.
void fill_tensor(uint8_t * base, const layout & l, uint32_t seed) {
    std::memset(base, 0x77, l.size);
    std::vector<float> v(l.ne[0]);
    for (uint32_t i3 = 0; i3 < l.ne[3]; ++i3) {
        for (uint32_t i2 = 0; i2 < l.ne[2]; ++i2) {
            for (uint32_t i1 = 0; i1 < l.ne[1]; ++i1) {
                fill_random(v.data(), v.size(), seed++);
                std::memcpy(base + offset_of(l.nb, 0, i1, i2, i3), v.data(), v.size() * 4);
            }
        }
    }
}

// dst == src * scale element by element (scalar float reference), gaps of dst untouched.
::testing::AssertionResult scaled_exactly(const uint8_t * dst, const layout & ld, const uint8_t * src,
                                          const layout & ls, float scale) {
    std::vector<bool> is_element(ld.size, false);
    for (uint32_t i3 = 0; i3 < ld.ne[3]; ++i3) {
        for (uint32_t i2 = 0; i2 < ld.ne[2]; ++i2) {
            for (uint32_t i1 = 0; i1 < ld.ne[1]; ++i1) {
                for (uint32_t i0 = 0; i0 < ld.ne[0]; ++i0) {
                    float          x, y;
                    const uint64_t od = offset_of(ld.nb, i0, i1, i2, i3);
                    std::memcpy(&x, src + offset_of(ls.nb, i0, i1, i2, i3), 4);
                    std::memcpy(&y, dst + od, 4);
                    if (float_bits(y) != float_bits(x * scale)) {
                        return ::testing::AssertionFailure() << "element (" << i0 << ", " << i1 << ", " << i2 << ", "
                                                             << i3 << "): " << y << " != " << x << " * " << scale;
                    }
                    for (int k = 0; k < 4; ++k) {
                        is_element[od + k] = true;
                    }
                }
            }
        }
    }
    for (uint64_t i = 0; i < ld.size; ++i) {
        if (!is_element[i] && dst[i] != 0x77) {
            return ::testing::AssertionFailure() << "gap byte " << i << " was written";
        }
    }
    return ::testing::AssertionSuccess();
}

// One TEST_STREAM op from a strided src buffer to a strided dst buffer.
struct stream_case {
    layout         ls, ld;
    shared_buffer  src, dst;
    stream_params  p;
    batch_builder  b;

    stream_case(std::array<uint32_t, 4> ne, const stream_params & params)
        : ls(padded_layout(ne, 16, 64)), ld(padded_layout(ne, 132, 4)), src(ls.size), dst(ld.size), p(params) {
        fill_tensor(src.data(), ls, 1);
        fill_tensor(dst.data(), ld, 2);
        std::memset(dst.data(), 0x77, ld.size);
        const uint16_t bs = b.add_buffer(src, false);
        const uint16_t bd = b.add_buffer(dst, false);
        const uint16_t ts = add_tensor(b, bs, 0, ls);
        const uint16_t td = add_tensor(b, bd, 0, ld);
        b.add_op(stream_op(ts, td, ne, p));
    }
    ::testing::AssertionResult exact() const { return scaled_exactly(dst.data(), ld, src.data(), ls, p.scale); }
};

// ---- session start

TEST(HtpSession, ThreadsStartedAreMinOfRequestedReportedAndHost) {
    struct {
        uint32_t reported, host, requested, expected;
    } cases[] = {{6, 3, 0, 3}, {6, 8, 2, 2}, {2, 8, 5, 2}, {6, 16, 0, 6}, {4, 4, 10, 4}};
    for (const auto & c : cases) {
        vnpu::platform_config cfg = quiet_config(79, c.host);
        cfg.n_hvx                 = c.reported;
        in_process_session s(cfg, c.requested);
        EXPECT_EQ(s.n_threads(), c.expected) << c.reported << " " << c.host << " " << c.requested;
        uint32_t n_threads, n_hmx, vtcm_size, arch;
        htp_iface_hwinfo(s.handle(), &n_threads, &n_hmx, &vtcm_size, &arch);
        EXPECT_EQ(n_hmx, 1u);
        EXPECT_EQ(vtcm_size, 8 * MiB);
        EXPECT_EQ(arch, 79u);
    }
}

// ---- TEST_STREAM end to end

TEST(HtpStreamBatch, ExactResultTracesAndProfileOverFourThreads) {
    in_process_session s(quiet_config(), 4);
    ASSERT_EQ(s.n_threads(), 4u);
    stream_params p;
    p.scale      = -1.375f;
    p.n_threads  = 4;
    p.block_rows = 3;
    p.n_slots    = 3;
    stream_case  c({300, 7, 3, 2}, p);  // 42 rows of 1200 bytes, 11 per thread
    packed_batch batch = c.b.pack(7, 3, 512);
    const proto::htp_opbatch_rsp rsp = s.process(batch);

    ASSERT_EQ(rsp.status, proto::HTP_STATUS_OK) << s.platform().last_violation();
    EXPECT_EQ(rsp.id, 7u);
    EXPECT_EQ(rsp.n_ops_done, 1u);
    EXPECT_TRUE(c.exact());
    EXPECT_EQ(batch.prof()[0].opcode, uint32_t(proto::HTP_OP_TEST_STREAM));
    EXPECT_GT(batch.prof()[0].cycles_stop, batch.prof()[0].cycles_start);
    EXPECT_GE(rsp.cycles_stop, batch.prof()[0].cycles_stop);

    // The blocks each thread should have computed: 11 rows each, cut at block_rows and at every
    // ne1 = 7 boundary.
    std::set<uint32_t> expected_blocks;
    for (uint32_t t = 0; t < 4; ++t) {
        for (uint32_t r = t * 11; r < std::min(42u, t * 11 + 11);) {
            expected_blocks.insert(r);
            r += std::min({3u, 7 - r % 7, t * 11 + 11 - r});
        }
    }
    std::set<uint32_t> computed_blocks;
    for (uint32_t slot = 0; slot < proto::HTP_TRACE_SLOTS; ++slot) {
        const proto::htp_trace_desc * ev = batch.traces(slot);
        const uint32_t                n  = rsp.n_traces[slot];
        if (slot >= 4) {
            EXPECT_EQ(n, 0u) << "slot " << slot << " has no thread";
            continue;
        }
        std::vector<uint16_t> dma_starts, dma_stops;
        uint32_t              hvx = 0;
        for (uint32_t i = 0; i < n; ++i) {
            if (i > 0) {
                EXPECT_LE(ev[i - 1].cycles, ev[i].cycles);
            }
            const bool     stop = ev[i].id & proto::HTP_TRACE_STOP;
            const uint16_t id   = ev[i].id & ~proto::HTP_TRACE_STOP;
            const uint16_t info = ev[i].info;
            if (id == proto::HTP_TRACE_EVT_DMA) {
                (stop ? dma_stops : dma_starts).push_back(info);
            } else if (id == proto::HTP_TRACE_EVT_HVX_COMP) {
                // Compute spans do not nest: each start is followed by its stop.
                ASSERT_FALSE(stop);
                ASSERT_LT(i + 1, n);
                EXPECT_EQ(ev[i + 1].id, proto::HTP_TRACE_EVT_HVX_COMP | proto::HTP_TRACE_STOP);
                EXPECT_EQ(ev[i + 1].info, info);
                computed_blocks.insert(info);
                ++hvx;
                ++i;
            }
        }
        EXPECT_GT(hvx, 0u) << "thread " << slot;
        EXPECT_FALSE(dma_starts.empty()) << "thread " << slot;
        EXPECT_EQ(dma_starts, dma_stops) << "DMA stops pair with starts in FIFO order, thread " << slot;
    }
    EXPECT_EQ(computed_blocks, expected_blocks);

    // The DMA wrote the output to DDR: nothing is flushed, no L2FLUSH traced.
    EXPECT_EQ(s.platform().dcache_flush_bytes(), 0u);
    for (uint32_t i = 0; i < rsp.n_traces[0]; ++i) {
        EXPECT_NE(batch.traces(0)[i].id & ~proto::HTP_TRACE_STOP, proto::HTP_TRACE_EVT_L2FLUSH);
    }
}

TEST(HtpStreamBatch, ExactForManyPipelineShapes) {
    in_process_session s(quiet_config(), 4);
    uint32_t           seed = 0;
    for (uint32_t n_threads : {1u, 2u, 3u, 4u}) {
        for (uint32_t n_slots : {2u, 4u, 16u}) {
            for (uint32_t block_rows : {1u, 5u, 64u}) {
                stream_params p;
                p.scale      = 0.3f + float(seed++);
                p.n_threads  = n_threads;
                p.n_slots    = n_slots;
                p.block_rows = block_rows;
                stream_case  c({33 + seed, 5, 2, 3}, p);
                packed_batch batch = c.b.pack(seed, 1, 0);
                const auto   rsp   = s.process(batch);
                ASSERT_EQ(rsp.status, proto::HTP_STATUS_OK) << s.platform().last_violation();
                ASSERT_TRUE(c.exact()) << n_threads << " threads, " << n_slots << " slots, " << block_rows << " rows";
            }
        }
    }
}

// Results the DMA wrote are in DDR: nothing to flush. A result HVX stored (TEST_DMA_ONLY_BREACH:
// one vector of its source) may sit in L2: its range is flushed before the next op reads it, and
// nothing is left to flush at the end.
TEST(HtpStreamBatch, OnlyAnL2WrittenIntermediateIsFlushedBeforeItIsRead) {
    in_process_session s(quiet_config(), 2);
    const std::array<uint32_t, 4> ne{64, 8, 1, 1};
    shared_buffer buf(3 * 2048);
    fill_random(reinterpret_cast<float *>(buf.data()), 512, 9);
    batch_builder b;
    const uint16_t bi = b.add_buffer(buf, true);
    const uint16_t a  = b.add_f32(bi, 0, ne);
    const uint16_t t  = b.add_f32(bi, 2048, ne);
    const uint16_t o  = b.add_f32(bi, 4096, ne);
    stream_params  p;
    p.n_threads = 2;
    p.scale     = 3.0f;
    b.add_op(batch_builder::op(proto::HTP_OP_TEST_DMA_ONLY_BREACH, {a}, {t}));
    b.add_op(stream_op(t, o, ne, p));
    packed_batch batch = b.pack(1, 3, 256);
    const auto   rsp   = s.process(batch);
    ASSERT_EQ(rsp.status, proto::HTP_STATUS_OK) << s.platform().last_violation();
    EXPECT_EQ(rsp.n_ops_done, 2u);
    const float * in  = reinterpret_cast<const float *>(buf.data());
    const float * out = reinterpret_cast<const float *>(buf.data() + 4096);
    for (int i = 0; i < 512; ++i) {
        ASSERT_EQ(float_bits(out[i]), float_bits(i < 32 ? in[i] * 3.0f : 0.0f)) << i;
    }
    EXPECT_EQ(s.platform().dcache_flush_calls(), 1u) << "the intermediate, before op 1; op 1's DMA-written result: none";
    EXPECT_EQ(s.platform().dcache_flush_bytes(), 2048u);
    uint32_t flushes = 0;
    for (uint32_t i = 0; i < rsp.n_traces[0]; ++i) {
        flushes += (batch.traces(0)[i].id & ~proto::HTP_TRACE_STOP) == proto::HTP_TRACE_EVT_L2FLUSH;
    }
    EXPECT_EQ(flushes, 2u);  // one start/stop pair
}

TEST(HtpStreamBatch, WideRowsRunOnV73AndV79) {
    // 70000-byte rows overflow v73's 16-bit 2-D fields; the runtime issues them row by row.
    for (uint32_t arch : {73u, 79u}) {
        in_process_session s(quiet_config(arch), 1);
        stream_params      p;
        p.block_rows = 2;
        stream_case  c({17500, 5, 1, 1}, p);
        packed_batch batch = c.b.pack(1, 1, 0);
        const auto   rsp   = s.process(batch);
        ASSERT_EQ(rsp.status, proto::HTP_STATUS_OK) << "v" << arch << ": " << s.platform().last_violation();
        EXPECT_TRUE(c.exact()) << "v" << arch;
    }
}

// ---- strict rules broken by an op

TEST(HtpStrictBatch, ReadBeforePopComputesOnPoison) {
    in_process_session s(quiet_config(), 2);
    stream_params      p;
    p.n_threads = 2;
    p.misuse    = proto::HTP_TEST_STREAM_READ_BEFORE_POP;
    stream_case  c({40, 6, 1, 1}, p);
    packed_batch batch = c.b.pack(1, 1, 0);
    const auto   rsp   = s.process(batch);
    // No rule the engine can see is broken, but every value computed is poison * scale.
    ASSERT_EQ(rsp.status, proto::HTP_STATUS_OK) << s.platform().last_violation();
    EXPECT_FALSE(c.exact());
    const float poison_scaled = float_of(0xA5A5A5A5u) * p.scale;
    for (uint32_t r = 0; r < 6; ++r) {
        for (uint32_t i = 0; i < 40; ++i) {
            float y;
            std::memcpy(&y, c.dst.data() + offset_of(c.ld.nb, i, r, 0, 0), 4);
            ASSERT_EQ(float_bits(y), float_bits(poison_scaled)) << "row " << r << " element " << i;
        }
    }
}

TEST(HtpStrictBatch, WriteToVtcmSourceInFlightIsStrict) {
    in_process_session s(quiet_config(), 1);
    stream_params      p;
    p.misuse = proto::HTP_TEST_STREAM_WRITE_AFTER_PUSH;
    stream_case  c({64, 4, 1, 1}, p);
    packed_batch batch = c.b.pack(1, 1, 0);
    const auto   rsp   = s.process(batch);
    EXPECT_EQ(rsp.status, proto::HTP_STATUS_STRICT);
    EXPECT_EQ(rsp.failed_op, 0u);
    EXPECT_EQ(rsp.n_ops_done, 0u);
    EXPECT_NE(s.platform().last_violation().find("VTCM source changed between push and pop"), std::string::npos)
        << s.platform().last_violation();
}

TEST(HtpStrictBatch, UndrainedQueueAtOpReturnIsStrict) {
    in_process_session s(quiet_config(), 2);
    stream_params      p;
    p.n_threads = 2;
    p.misuse    = proto::HTP_TEST_STREAM_SKIP_DRAIN;
    stream_case  c({64, 4, 1, 1}, p);
    packed_batch batch = c.b.pack(1, 3, 512);  // traced
    const auto   rsp   = s.process(batch);
    EXPECT_EQ(rsp.status, proto::HTP_STATUS_STRICT);
    EXPECT_NE(s.platform().last_violation().find("not drained"), std::string::npos) << s.platform().last_violation();

    // The batch loop drained the queues (waited for every transfer left) before resetting them:
    // each traced DMA start has its stop, in FIFO order.
    for (uint32_t slot = 0; slot < 2; ++slot) {
        std::vector<uint16_t> dma_starts, dma_stops;
        for (uint32_t i = 0; i < rsp.n_traces[slot]; ++i) {
            const proto::htp_trace_desc & ev = batch.traces(slot)[i];
            if ((ev.id & ~proto::HTP_TRACE_STOP) == proto::HTP_TRACE_EVT_DMA) {
                ((ev.id & proto::HTP_TRACE_STOP) ? dma_stops : dma_starts).push_back(ev.info);
            }
        }
        EXPECT_FALSE(dma_starts.empty()) << "thread " << slot;
        EXPECT_EQ(dma_starts, dma_stops) << "thread " << slot;
    }

    // The session is usable afterwards: the abandoned transfers are gone.
    stream_params ok;
    stream_case   c2({64, 4, 1, 1}, ok);
    packed_batch  batch2 = c2.b.pack(2, 1, 0);
    EXPECT_EQ(s.process(batch2).status, proto::HTP_STATUS_OK) << s.platform().last_violation();
    EXPECT_TRUE(c2.exact());
}

TEST(HtpStrictBatch, LayoutBeyondVtcmIsVtcmTooSmall) {
    vnpu::platform_config cfg = quiet_config();
    cfg.vtcm_size             = 256 * 1024;
    in_process_session s(cfg, 2);
    stream_params      p;
    p.n_threads  = 2;
    p.block_rows = 64;  // 2 threads x 2 slots x 2 (src, dst) x 64 rows x 1 KiB = 512 KiB
    stream_case  c({256, 128, 1, 1}, p);
    packed_batch batch = c.b.pack(1, 1, 0);
    EXPECT_EQ(s.process(batch).status, proto::HTP_STATUS_VTCM_TOO_SMALL);
    p.block_rows = 32;  // exactly 256 KiB
    stream_case  c2({256, 128, 1, 1}, p);
    packed_batch batch2 = c2.b.pack(1, 1, 0);
    EXPECT_EQ(s.process(batch2).status, proto::HTP_STATUS_OK);
    EXPECT_TRUE(c2.exact());
}

// ---- malformed batches

class HtpMalformed : public ::testing::Test {
  protected:
    HtpMalformed() : s(quiet_config(), 2), src(64 * 1024), dst(64 * 1024) {
        const uint16_t bs = b.add_buffer(src, false);
        const uint16_t bd = b.add_buffer(dst, false);
        const uint16_t ts = b.add_f32(bs, 0, ne);
        const uint16_t td = b.add_f32(bd, 0, ne);
        stream_params  p;
        p.n_threads = 2;
        b.add_op(stream_op(ts, td, ne, p));
    }
    uint32_t run(packed_batch & batch) { return s.process(batch).status; }

    std::array<uint32_t, 4> ne{100, 10, 2, 1};
    in_process_session      s;
    shared_buffer           src, dst;
    batch_builder           b;
};

TEST_F(HtpMalformed, WellFormedBaselineRuns) {
    packed_batch batch = b.pack(1, 1, 0);
    EXPECT_EQ(run(batch), proto::HTP_STATUS_OK);
}

TEST_F(HtpMalformed, BadCountsAndBlocksAreInvalParams) {
    auto expect_inval = [&](auto && mutate, const char * what) {
        packed_batch batch = b.pack(1, 1, 0);
        size_t       size  = batch.block_size();
        mutate(batch, size);
        proto::htp_opbatch_rsp rsp{};
        uint32_t               op = 0;
        htp_iface_process_batch(s.handle(), &batch.req, batch.block(), size, &rsp, &op);
        EXPECT_EQ(rsp.status, proto::HTP_STATUS_INVAL_PARAMS) << what;
        EXPECT_EQ(rsp.n_ops_done, 0u) << what;
    };
    expect_inval([](packed_batch & p, size_t &) { p.req.n_bufs = proto::HTP_OP_MAX_BUFS + 1; }, "too many buffers");
    expect_inval([](packed_batch & p, size_t &) { p.req.n_tensors = proto::HTP_OP_MAX_TENSORS + 1; }, "too many tensors");
    expect_inval([](packed_batch & p, size_t &) { p.req.n_ops = 0xffffffffu; }, "ops beyond the block");
    expect_inval([](packed_batch & p, size_t &) { p.req.n_traces = 1000; }, "traces beyond the block");
    expect_inval([](packed_batch &, size_t & size) { size -= 8; }, "block too small");
    expect_inval([](packed_batch & p, size_t &) { p.req.profile = 2; }, "unknown profile mode");
    expect_inval([](packed_batch & p, size_t &) { p.bufs()[1].fd = -1; }, "negative fd");
    expect_inval([](packed_batch & p, size_t &) { p.bufs()[0].size = 1 << 20; }, "buffer larger than its fd");
    expect_inval([](packed_batch & p, size_t &) { p.tensors()[0].bi = 2; }, "tensor buffer index");
    expect_inval([](packed_batch & p, size_t &) { p.tensors()[1].type = 43; }, "tensor type");
    expect_inval([](packed_batch & p, size_t &) { p.tensors()[0].ne[2] = 0; }, "empty dimension");
    expect_inval([](packed_batch & p, size_t &) { p.tensors()[1].data = 64 * 1024 - 100; }, "tensor past its buffer");
    expect_inval([](packed_batch & p, size_t &) { p.tensors()[1].data = ~uint64_t(0) - 10; }, "wrapping offset");
    expect_inval([](packed_batch & p, size_t &) { p.ops()[0].src[0] = 2; }, "src index");
    expect_inval([](packed_batch & p, size_t &) { p.ops()[0].dst[3] = 100; }, "dst index");
}

TEST_F(HtpMalformed, BadOpParametersFailTheOp) {
    auto expect_op_inval = [&](auto && mutate, const char * what) {
        packed_batch batch = b.pack(1, 1, 0);
        mutate(batch);
        const auto rsp = s.process(batch);
        EXPECT_EQ(rsp.status, proto::HTP_STATUS_INVAL_PARAMS) << what;
        EXPECT_EQ(rsp.failed_op, 0u) << what;
    };
    // The batch loop's structural guard: operands, pipeline bounds, walk divisors, row extents.
    auto kp = [](packed_batch & p) { return reinterpret_cast<proto::htp_test_stream_kparams *>(p.ops()[0].kparams); };
    expect_op_inval([&](packed_batch & p) { kp(p)->pipe.n_threads = 3; }, "more threads than the session has");
    expect_op_inval([&](packed_batch & p) { kp(p)->pipe.n_threads = 0; }, "no threads");
    expect_op_inval([&](packed_batch & p) { kp(p)->pipe.n_slots = 1; }, "single buffering");
    expect_op_inval([&](packed_batch & p) { kp(p)->pipe.n_slots = 17; }, "deeper than the pipeline's slots");
    expect_op_inval([&](packed_batch & p) { kp(p)->pipe.block_rows = 0; }, "empty blocks (a stalled walk)");
    expect_op_inval([&](packed_batch & p) { kp(p)->pipe.rows_per_thread = 0; }, "no rows per thread");
    expect_op_inval([&](packed_batch & p) { kp(p)->pipe.vtcm_row_stride = 384; }, "VTCM rows narrower than a row");
    expect_op_inval([&](packed_batch & p) { kp(p)->pipe.vtcm_size -= 128; }, "slots larger than the VTCM taken");
    expect_op_inval([&](packed_batch & p) { kp(p)->div_ne1 = proto::init_fastdiv(9); }, "walk over another ne1");
    expect_op_inval([&](packed_batch & p) { kp(p)->div_ne2.d = 0; }, "a zero divisor");
    expect_op_inval([&](packed_batch & p) { p.ops()[0].src[0] = proto::HTP_NO_TENSOR; }, "missing src");
    expect_op_inval([&](packed_batch & p) { p.tensors()[0].type = 1; }, "F16 src");
    expect_op_inval([&](packed_batch & p) { p.tensors()[1].ne[1] = 5; }, "shape mismatch");
    expect_op_inval([&](packed_batch & p) { p.tensors()[0].size = 100; }, "tensor bytes smaller than its rows");
    expect_op_inval([&](packed_batch & p) { p.tensors()[1].nb[1] = 1024; }, "dst rows past its bytes");
}

// A required operand missing fails the op at admission (the op table's n_src), before its guard:
// the guards dereference their required operands without checking them.
TEST_F(HtpMalformed, AMissingRequiredOperandFailsAtAdmission) {
    const struct {
        uint32_t opcode;
        uint32_t missing;  // the src index left out
    } cases[] = {
        {proto::HTP_OP_ADD, 1},          {proto::HTP_OP_RMS_NORM_MUL, 1}, {proto::HTP_OP_ADD_ID, 2},
        {proto::HTP_OP_CONCAT, 1},       {proto::HTP_OP_SET_ROWS, 1},     {proto::HTP_OP_GET_ROWS_Q, 1},
        {proto::HTP_OP_FLASH_ATTN_EXT, 2}, {proto::HTP_OP_MUL_MAT_ID, 2},
    };
    for (const auto & c : cases) {
        packed_batch batch = b.pack(1, 1, 0);
        proto::htp_op_desc & op = batch.ops()[0];
        op.opcode               = c.opcode;
        std::memset(op.kparams, 0, sizeof op.kparams);
        for (uint32_t i = 0; i < c.missing; ++i) {
            op.src[i] = 0;
        }
        for (uint32_t i = c.missing; i < proto::HTP_OP_MAX_INPUTS; ++i) {
            op.src[i] = proto::HTP_NO_TENSOR;
        }
        const auto rsp = s.process(batch);
        EXPECT_EQ(rsp.status, proto::HTP_STATUS_INVAL_PARAMS) << "opcode " << c.opcode;
        EXPECT_EQ(rsp.failed_op, 0u) << "opcode " << c.opcode;
    }
}

// Past the guard the kernel executes its kparams as given: a wrong fastdiv magic sends the walk's
// rows elsewhere, and when that is outside the buffers the strict DMA engine turns it into a clean
// STRICT error (no hang, no stray write), after which the session runs the next batch. The slices
// overlap (nb2 = nb3 = nb1) so a wrong quotient moves the offsets below the tensor instead of
// cancelling out as it would over packed slices.
TEST_F(HtpMalformed, InconsistentKparamsEndInAStrictError) {
    auto overlapping = [](packed_batch & p) {
        for (int t = 0; t < 2; ++t) {
            p.tensors()[t].nb[2] = p.tensors()[t].nb[1];
            p.tensors()[t].nb[3] = p.tensors()[t].nb[1];
        }
    };
    packed_batch good = b.pack(1, 1, 0);
    overlapping(good);
    ASSERT_EQ(run(good), proto::HTP_STATUS_OK) << "the strides alone are fine";

    packed_batch batch = b.pack(2, 1, 0);
    overlapping(batch);
    auto * kp      = reinterpret_cast<proto::htp_test_stream_kparams *>(batch.ops()[0].kparams);
    kp->div_ne1.mp = 0;  // row / ne1 becomes row: thread 1's first row lands 36000 bytes below src
    kp->div_ne1.l  = 0;
    const auto rsp = s.process(batch);
    EXPECT_EQ(rsp.status, proto::HTP_STATUS_STRICT) << proto::htp_status_name(rsp.status);
    EXPECT_EQ(rsp.failed_op, 0u);
    EXPECT_NE(s.platform().last_violation().find("not inside a mapped window buffer"), std::string::npos)
        << s.platform().last_violation();

    packed_batch again = b.pack(3, 1, 0);
    EXPECT_EQ(run(again), proto::HTP_STATUS_OK);
}

TEST_F(HtpMalformed, UnknownOpIsNoSupportAndSkipComputeSkips) {
    packed_batch batch = b.pack(1, 1, 0);
    batch.ops()[0].opcode = 777;
    EXPECT_EQ(run(batch), proto::HTP_STATUS_NO_SUPPORT);
    packed_batch skip = b.pack(1, 1, 0);
    skip.ops()[0].opcode = 777;
    skip.ops()[0].flags  = proto::HTP_OPFLAGS_SKIP_COMPUTE;
    EXPECT_EQ(run(skip), proto::HTP_STATUS_OK);
}

TEST_F(HtpMalformed, RandomDescriptorCorruptionNeverCrashes) {
    // Flip random bytes of the tensor descriptors and kernel params (opcodes and fds stay: those
    // would select the deliberate fault ops or map this process's own files).
    std::mt19937 rng(3);
    std::map<uint32_t, int> seen;
    for (int iter = 0; iter < 1500; ++iter) {
        packed_batch batch = b.pack(1, 1, 0);
        for (int k = 0; k < 1 + int(rng() % 4); ++k) {
            if (rng() % 2) {
                uint8_t * t = reinterpret_cast<uint8_t *>(batch.tensors());
                t[rng() % (2 * sizeof(proto::htp_tensor))] ^= uint8_t(1 << (rng() % 8));
            } else {
                uint8_t * kp = reinterpret_cast<uint8_t *>(batch.ops()[0].kparams);
                kp[rng() % sizeof(proto::htp_test_stream_kparams)] = uint8_t(rng());
            }
        }
        ++seen[s.process(batch).status];
    }
    for (const auto & [status, count] : seen) {
        EXPECT_TRUE(status == proto::HTP_STATUS_OK || status == proto::HTP_STATUS_INVAL_PARAMS ||
                    status == proto::HTP_STATUS_VTCM_TOO_SMALL || status == proto::HTP_STATUS_STRICT)
            << proto::htp_status_name(status);
    }
    EXPECT_GT(seen[proto::HTP_STATUS_INVAL_PARAMS], 100);
}

// ---- the sliding window

class HtpWindow : public ::testing::Test {
  protected:
    static constexpr uint64_t BUF = 1280 * 1024;  // 1.25 MiB: three fit in a 4 MiB window, four do not

    static vnpu::platform_config config() {
        vnpu::platform_config cfg = quiet_config();
        cfg.window_size           = 4 * MiB;
        return cfg;
    }

    // src buffer -> dst buffer, a 1.25 MiB tensor each.
    packed_batch copy_batch(shared_buffer & from, bool from_pinned, shared_buffer & to, uint32_t id) {
        const std::array<uint32_t, 4> ne{320, 1024, 1, 1};
        batch_builder                 b;
        const uint16_t                bf = b.add_buffer(from, from_pinned);
        const uint16_t                bt = b.add_buffer(to, false);
        stream_params                 p;
        p.scale      = 2.0f;
        p.block_rows = 16;
        const uint16_t                tf = b.add_f32(bf, 0, ne);
        const uint16_t                tt = b.add_f32(bt, 0, ne);
        b.add_op(stream_op(tf, tt, ne, p));
        return b.pack(id, 1, 0);
    }
    static ::testing::AssertionResult doubled(const shared_buffer & from, const shared_buffer & to) {
        const float * x = reinterpret_cast<const float *>(from.data());
        const float * y = reinterpret_cast<const float *>(to.data());
        for (uint64_t i = 0; i < BUF / 4; ++i) {
            if (float_bits(y[i]) != float_bits(x[i] * 2.0f)) {
                return ::testing::AssertionFailure() << "element " << i;
            }
        }
        return ::testing::AssertionSuccess();
    }
};

TEST_F(HtpWindow, IdleDelayedBuffersAreUnmappedAndRemapped) {
    in_process_session         s(config(), 1);
    std::vector<shared_buffer> bufs;
    for (int i = 0; i < 5; ++i) {
        bufs.emplace_back(BUF);
        fill_random(reinterpret_cast<float *>(bufs.back().data()), BUF / 4, 100 + i);
    }
    // Pairs cycle through five buffers: each batch needs 2.5 MiB, the window holds 3 buffers.
    for (uint32_t k = 0; k < 10; ++k) {
        shared_buffer & from = bufs[k % 5];
        shared_buffer & to   = bufs[(k + 1) % 5];
        fill_random(reinterpret_cast<float *>(from.data()), BUF / 4, 200 + k);
        packed_batch batch = copy_batch(from, false, to, k);
        const auto   rsp   = s.process(batch);
        ASSERT_EQ(rsp.status, proto::HTP_STATUS_OK) << "batch " << k << ": " << s.platform().last_violation();
        ASSERT_TRUE(doubled(from, to)) << "batch " << k;
        EXPECT_LE(s.platform().window().mapping_count(), 3u);
    }
    EXPECT_GT(s.platform().unmap_calls(), 0u);
    EXPECT_GT(s.platform().map_calls(), 5u) << "buffers were mapped again after being unmapped";
}

TEST_F(HtpWindow, PinnedBuffersStayMapped) {
    in_process_session s(config(), 1);
    shared_buffer      pinned(BUF), a(BUF), b2(BUF), c(BUF);
    fill_random(reinterpret_cast<float *>(pinned.data()), BUF / 4, 1);
    packed_batch first = copy_batch(pinned, true, a, 1);
    ASSERT_EQ(s.process(first).status, proto::HTP_STATUS_OK);
    const uint64_t pinned_addr = first.tensors()[0].data;

    packed_batch second = copy_batch(b2, false, c, 2);  // a must go; pinned stays
    ASSERT_EQ(s.process(second).status, proto::HTP_STATUS_OK);

    const uint64_t maps = s.platform().map_calls();
    packed_batch   third = copy_batch(pinned, true, b2, 3);
    ASSERT_EQ(s.process(third).status, proto::HTP_STATUS_OK);
    EXPECT_EQ(third.tensors()[0].data, pinned_addr);
    EXPECT_EQ(s.platform().map_calls(), maps) << "pinned and b2 were both still mapped";
    EXPECT_TRUE(doubled(pinned, b2));
}

TEST_F(HtpWindow, BatchLargerThanTheWindowIsNoWindow) {
    in_process_session s(config(), 1);
    shared_buffer      a(BUF), b2(BUF), c(BUF), d(BUF);
    const std::array<uint32_t, 4> ne{320, 1024, 1, 1};
    batch_builder                 b;
    stream_params                 p;
    const uint16_t ta = b.add_f32(b.add_buffer(a, false), 0, ne);
    const uint16_t tb = b.add_f32(b.add_buffer(b2, false), 0, ne);
    const uint16_t tc = b.add_f32(b.add_buffer(c, false), 0, ne);
    const uint16_t td = b.add_f32(b.add_buffer(d, false), 0, ne);
    b.add_op(stream_op(ta, tb, ne, p));
    b.add_op(stream_op(tc, td, ne, p));
    packed_batch batch = b.pack(1, 1, 0);
    const auto   rsp   = s.process(batch);
    EXPECT_EQ(rsp.status, proto::HTP_STATUS_NO_WINDOW);
    EXPECT_EQ(rsp.failed_op, proto::HTP_FAILED_BATCH);
    EXPECT_EQ(rsp.n_ops_done, 0u);

    // A buffer larger than the whole window, too.
    shared_buffer huge(5 * MiB);
    batch_builder b3;
    b3.add_buffer(huge, false);
    packed_batch batch3 = b3.pack(2, 1, 0);
    EXPECT_EQ(s.process(batch3).status, proto::HTP_STATUS_NO_WINDOW);

    // The session recovers: a batch that fits runs.
    packed_batch ok = copy_batch(a, false, b2, 3);
    EXPECT_EQ(s.process(ok).status, proto::HTP_STATUS_OK);
}

TEST_F(HtpWindow, VmemBudgetBoundsMappingsBelowTheWindow) {
    in_process_session s(quiet_config(), 1, 3 * MiB);  // a 64 MiB window, 3 MiB budget
    shared_buffer      a(BUF), b2(BUF), c(BUF);
    fill_random(reinterpret_cast<float *>(c.data()), BUF / 4, 5);
    packed_batch first = copy_batch(a, false, b2, 1);
    ASSERT_EQ(s.process(first).status, proto::HTP_STATUS_OK);
    packed_batch second = copy_batch(c, false, b2, 2);
    ASSERT_EQ(s.process(second).status, proto::HTP_STATUS_OK);
    EXPECT_EQ(s.platform().unmap_calls(), 1u) << "a had to go";
    EXPECT_LE(s.platform().window().mapped_bytes(), 3 * MiB);
    EXPECT_TRUE(doubled(c, b2));
}

TEST_F(HtpWindow, ExplicitMmapAndMunmap) {
    in_process_session s(config(), 1);
    shared_buffer      a(BUF), b2(BUF);
    ASSERT_EQ(htp_iface_mmap(s.handle(), a.fd(), a.size(), 1), 0);
    EXPECT_EQ(s.platform().window().mapping_count(), 1u);
    packed_batch batch = copy_batch(a, false, b2, 1);
    ASSERT_EQ(s.process(batch).status, proto::HTP_STATUS_OK);
    EXPECT_EQ(s.platform().map_calls(), 2u) << "a was already mapped";
    EXPECT_EQ(htp_iface_munmap(s.handle(), a.fd()), 0);
    EXPECT_EQ(s.platform().window().mapping_count(), 1u);
    EXPECT_EQ(htp_iface_munmap(s.handle(), a.fd()), 0) << "unmapping twice is harmless";
}

// ---- faults and crashes, attributed to their op

vnpu::session_platform * g_fault_platform   = nullptr;
in_process_session *     g_fault_session    = nullptr;

void report_fault(int, siginfo_t * info, void *) {
    // What a session process reports to the host: the faulting NPU address and the op.
    uint64_t npu_addr = 0;
    char     msg[96];
    const bool in_window = g_fault_platform->npu_address_of(info->si_addr, &npu_addr);
    const int  n = std::snprintf(msg, sizeof msg, "fault %s npu 0x%08x in op %u\n", in_window ? "at" : "outside",
                                 unsigned(npu_addr), g_fault_session->current_op());
    (void) !write(2, msg, size_t(n));
    _exit(42);
}

// Runs [TEST_STREAM, TEST_FAULT at npu_addr] on a session whose window holds the 64 KiB buffer
// "work" at NPU 0x1000; with a stale buffer, a second one was mapped at 0x11000 and unmapped again.
void run_fault_batch(uint32_t npu_addr, bool with_stale_buffer) {
    vnpu::platform_config cfg = quiet_config();
    cfg.window_size           = 4 * MiB;
    in_process_session s(cfg, 1);
    g_fault_session  = &s;
    g_fault_platform = &s.platform();
    struct sigaction sa{};
    sa.sa_sigaction = report_fault;
    sa.sa_flags     = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, nullptr);

    const std::array<uint32_t, 4> ne{64, 4, 1, 1};
    shared_buffer                 work(64 * 1024), stale(64 * 1024);
    stream_params                 p;
    if (with_stale_buffer) {
        batch_builder  b;
        const uint16_t bw = b.add_buffer(work, false);
        const uint16_t bs = b.add_buffer(stale, false);
        const uint16_t tw = b.add_f32(bw, 0, ne);
        const uint16_t ts = b.add_f32(bs, 0, ne);
        b.add_op(stream_op(tw, ts, ne, p));
        packed_batch first = b.pack(0, 1, 0);
        if (s.process(first).status != proto::HTP_STATUS_OK || first.tensors()[1].data != 0x11000) {
            _exit(1);
        }
        htp_iface_munmap(s.handle(), stale.fd());  // the host freed it
    }
    batch_builder  b;
    const uint16_t bw = b.add_buffer(work, false);
    const uint16_t t0 = b.add_f32(bw, 0, ne);
    const uint16_t t1 = b.add_f32(bw, 4096, ne);
    b.add_op(stream_op(t0, t1, ne, p));
    proto::htp_op_desc fault = batch_builder::op(proto::HTP_OP_TEST_FAULT, {}, {});
    fault.params[0]          = int32_t(npu_addr);
    b.add_op(fault);
    packed_batch batch = b.pack(1, 1, 0);
    const auto   rsp   = s.process(batch);
    std::fprintf(stderr, "no fault: status %s\n", proto::htp_status_name(rsp.status));
    _exit(0);
}

TEST(HtpFaultDeathTest, MappedAddressReadsFine) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(run_fault_batch(0x1000 + 100, false), ::testing::ExitedWithCode(0), "no fault: status OK");
}

// ---- multi-device row partition of the streaming ops (spec "Row-Partitioned Operators")

// Each of a group's devices (simulated indices on separate in-process sessions) runs the same
// TEST_STREAM op into its own copy of dst: the rows each writes are one contiguous range, the
// ranges are disjoint and cover every row, each starts on a 128-byte line, and the stitched rows
// are the exact result. Rows on lines: 1 row per chunk; packed rows of 160 bytes: 4 rows per chunk
// (128 / gcd(160, 128)); rows 4 bytes off the lines: device 0 computes everything.
TEST(HtpStreamBatch, GroupDevicesSplitTheRowsOnLinesOrLeaveThemToDeviceZero) {
    struct shape {
        std::array<uint32_t, 4> ne;
        uint32_t                row_pad;
        uint32_t                rows_per_chunk;  // 0: device 0 takes all
    };
    const shape shapes[] = {{{64, 13, 3, 1}, 0, 1}, {{40, 30, 2, 1}, 0, 4}, {{64, 13, 3, 1}, 4, 0}};
    for (const shape & sh : shapes) {
        const layout   ls = padded_layout(sh.ne, 16, 64), ld = padded_layout(sh.ne, sh.row_pad, 0);
        const uint32_t rows = sh.ne[1] * sh.ne[2] * sh.ne[3];
        for (uint32_t count = 2; count <= 4; ++count) {
            std::vector<uint8_t> stitched(ld.size, 0x77);
            uint32_t             next = 0;  // rows are handed out in device order
            for (uint32_t idx = 0; idx < count; ++idx) {
                vnpu::platform_config cfg = quiet_config();
                cfg.mdev_idx              = idx;
                cfg.mdev_count            = count;
                in_process_session s(cfg, 2);
                shared_buffer      src(ls.size), dst(ld.size);
                fill_tensor(src.data(), ls, 1);
                std::memset(dst.data(), 0x77, ld.size);
                batch_builder b;
                const uint16_t ts = add_tensor(b, b.add_buffer(src, false), 0, ls);
                const uint16_t td = add_tensor(b, b.add_buffer(dst, false), 0, ld);
                stream_params  p;
                p.n_threads = 2;
                b.add_op(stream_op(ts, td, sh.ne, p));
                packed_batch batch = b.pack(1, 0, 0);
                ASSERT_EQ(s.process(batch).status, proto::HTP_STATUS_OK) << s.platform().last_violation();
                // The flat rows this device wrote, in order.
                uint32_t first = rows, written = 0;
                for (uint32_t r = 0; r < rows; ++r) {
                    const uint64_t off = uint64_t(r % sh.ne[1]) * ld.nb[1] + uint64_t(r / sh.ne[1]) * ld.nb[2];
                    bool           any = false;
                    for (uint32_t k = 0; k < sh.ne[0] * 4; ++k) {
                        any = any || dst.data()[off + k] != 0x77;
                    }
                    if (any) {
                        first = written == 0 ? r : first;
                        ++written;
                        std::memcpy(stitched.data() + off, dst.data() + off, sh.ne[0] * 4);
                    }
                }
                const std::string what = "device " + std::to_string(idx) + " of " + std::to_string(count) +
                                         ", row pad " + std::to_string(sh.row_pad) + ", ne0 " + std::to_string(sh.ne[0]);
                if (sh.rows_per_chunk == 0) {
                    EXPECT_EQ(written, idx == 0 ? rows : 0u) << what;
                    next = rows;
                    continue;
                }
                const uint32_t chunks = (rows + sh.rows_per_chunk - 1) / sh.rows_per_chunk;
                const uint32_t expect = idx + 1 < count ? chunks / count * sh.rows_per_chunk : rows - next;
                EXPECT_EQ(written, expect) << what;
                if (written > 0) {
                    EXPECT_EQ(first, next) << what << ": disjoint and in order";
                    const uint64_t off = uint64_t(first % sh.ne[1]) * ld.nb[1] + uint64_t(first / sh.ne[1]) * ld.nb[2];
                    EXPECT_EQ(off % 128, 0u) << what << ": starts on a line";
                }
                next += written;
            }
            EXPECT_EQ(next, rows) << "every row written";
            EXPECT_TRUE(scaled_exactly(stitched.data(), ld, [&] {
                static std::vector<uint8_t> src_bytes;
                src_bytes.assign(ls.size, 0);
                fill_tensor(src_bytes.data(), ls, 1);
                return src_bytes.data();
            }(), ls, stream_params{}.scale));
        }
    }
}

TEST(HtpFaultDeathTest, UnmappedWindowAddressFaultsAndIsAttributed) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(run_fault_batch(0x300010, false), ::testing::ExitedWithCode(42), "fault at npu 0x00300010 in op 1");
}

TEST(HtpFaultDeathTest, StaleAddressOfAnUnmappedBufferFaults) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(run_fault_batch(0x11000 + 100, true), ::testing::ExitedWithCode(42), "fault at npu 0x00011064 in op 1");
}

TEST(HtpFaultDeathTest, CrashOpKillsTheSession) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            in_process_session s(quiet_config(), 1);
            batch_builder      b;
            b.add_op(batch_builder::op(proto::HTP_OP_TEST_CRASH, {}, {}));
            packed_batch batch = b.pack(1, 1, 0);
            s.process(batch);
        },
        ::testing::KilledBySignal(SIGILL), "");
}

} // namespace
