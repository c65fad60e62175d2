// The host backend against real session processes (hexnpu-htpd): buffer types, batching limits
// (ops per batch, the window budget), REPACK round trips, errors from the NPU, two devices, and
// profiling. The ops are the virtual NPU's TEST_STREAM (dst = src * scale) and TEST_FAULT; results
// are checked against scalar products computed here.
#include "htp-session-fixture.h"

#include "hexagon/htp-backend.h"
#include "hexagon/htp-device.h"
#include "hexagon/repack.h"

#include "hexnpu/graph.h"
#include "proto/fastdiv.h"
#include "proto/htp-test-stream.h"
#include "proto/htp-opcodes.h"

#include <gtest/gtest.h>

#include <regex>

#include <cstring>
#include <random>
#include <thread>

namespace {

using namespace hexnpu;
using namespace hexnpu::hexagon;
using namespace std::chrono_literals;
using namespace htp_session_test;

// ---- buffer types

TEST(HtpBuffers, TypesAlignmentAndSizes) {
    htp_options o = test_options();
    o.max_buffer  = 16 * MiB;
    fixture       f(o);
    backend_buffer_type * compute = f.dev().buffer_type();
    backend_buffer_type * repack  = f.dev().extra_buffer_types().at(0);
    EXPECT_STREQ(compute->name(), "HTP0:0");
    EXPECT_STREQ(repack->name(), "HTP0:0-REPACK");
    EXPECT_TRUE(compute->is_host());
    EXPECT_FALSE(repack->is_host());
    EXPECT_EQ(compute->alignment(), 128u);
    EXPECT_EQ(repack->max_size(), 16 * MiB);
    EXPECT_TRUE(f.dev().supports_buft(compute));
    EXPECT_TRUE(f.dev().supports_buft(repack));

    ggml_context  ctx;
    ggml_tensor * w = ggml_new_tensor_2d(&ctx, GGML_TYPE_Q4_0, 64, 40);  // 40 rows pad to 64
    ggml_tensor * x = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 64, 40);
    EXPECT_EQ(compute->alloc_size(w), ggml_nbytes(w));
    EXPECT_EQ(repack->alloc_size(w), size_t(2 * 2 * 576)) << "2 row tiles x 2 K tiles of 576 bytes";
    EXPECT_EQ(repack->alloc_size(x), ggml_nbytes(x));
}

TEST(HtpBuffers, ComputeBufferIsReadInPlaceAndStreamsThroughTheSession) {
    fixture       f;
    ggml_context  ctx;
    ggml_tensor * src = ggml_new_tensor_3d(&ctx, GGML_TYPE_F32, 100, 7, 3);
    ggml_tensor * dst = ggml_dup_tensor(&ctx, src);
    auto          buf = alloc_ctx_tensors(ctx, f.dev().buffer_type());
    fill(src, 1);
    htp_backend be(f.dev());
    const htp_op ops[] = {stream_op(src, dst, -1.75f)};
    be.compute_ops(ops);
    EXPECT_EQ(be.last_batch_count(), 1u);
    EXPECT_TRUE(scaled_exactly(values(src), values(dst), {-1.75f}));
    // Host-visible: the CPU reads the result where the NPU wrote it.
    EXPECT_EQ(bits(static_cast<const float *>(dst->data)[5]), bits(values(src)[5] * -1.75f));
}

// ---- batching limits

TEST(HtpBatching, AGraphLargerThanOneBatchIsSplitAndRunsInOrder) {
    htp_options o = test_options();
    o.op_batch    = 4;
    o.op_queue    = 2;
    fixture                    f(o);
    ggml_context               ctx;
    std::vector<ggml_tensor *> chain{ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 64, 5)};
    for (int i = 0; i < 11; ++i) {
        chain.push_back(ggml_dup_tensor(&ctx, chain[0]));
    }
    auto buf = alloc_ctx_tensors(ctx, f.dev().buffer_type());
    fill(chain[0], 2);
    std::vector<htp_op> ops;
    const float         factors[] = {2.0f, -0.5f, 3.0f, 1.25f, -2.0f, 0.75f, 1.5f, -1.0f, 0.5f, 4.0f, -0.25f};
    for (size_t i = 0; i + 1 < chain.size(); ++i) {
        ops.push_back(stream_op(chain[i], chain[i + 1], factors[i]));
    }
    htp_backend be(f.dev());
    be.compute_ops(ops);
    EXPECT_EQ(be.last_batch_count(), 3u) << "11 ops, 4 per batch";
    EXPECT_TRUE(scaled_exactly(values(chain[0]), values(chain.back()),
                               {2.0f, -0.5f, 3.0f, 1.25f, -2.0f, 0.75f, 1.5f, -1.0f, 0.5f, 4.0f, -0.25f}));
}

TEST(HtpBatching, AWindowTooSmallForAllBuffersSplitsBatches) {
    // Five 1.5 MiB weight buffers in a 4 MiB window: an op maps two (3 MiB), two ops three.
    fixture                       f(test_options(), test_session(4 * MiB));
    std::vector<ggml_context>     ctxs(5);
    std::vector<ggml_tensor *>    t;
    std::vector<std::unique_ptr<backend_buffer>> bufs;
    for (auto & ctx : ctxs) {
        t.push_back(ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 384, 1024));  // 1.5 MiB
        bufs.push_back(alloc_ctx_tensors(ctx, f.dev().extra_buffer_types()[0]));
    }
    fill(t[0], 3);
    std::vector<htp_op> ops;
    for (int i = 0; i < 4; ++i) {
        ops.push_back(stream_op(t[i], t[i + 1], 1.5f));
    }
    htp_backend be(f.dev());
    be.compute_ops(ops);
    EXPECT_EQ(be.last_batch_count(), 4u);
    EXPECT_TRUE(scaled_exactly(values(t[0]), values(t[4]), {1.5f, 1.5f, 1.5f, 1.5f}));

    // One op whose buffers alone exceed the budget cannot run anywhere.
    ggml_context  big_ctx;
    ggml_tensor * big = ggml_new_tensor_2d(&big_ctx, GGML_TYPE_F32, 1024, 1024);  // 4 MiB
    auto          big_buf = alloc_ctx_tensors(big_ctx, f.dev().extra_buffer_types()[0]);
    const htp_op  too_big[] = {stream_op(big, t[0], 1.0f)};
    try {
        be.compute_ops(too_big);
        FAIL() << "no error";
    } catch (const backend_error & e) {
        EXPECT_NE(std::string(e.what()).find("more than the window budget of 4194304 bytes"), std::string::npos)
            << e.what();
    }
}

// ---- REPACK buffers

TEST(HtpRepack, RoundTripThroughASession) {
    fixture       f;
    ggml_context  ctx;
    ggml_tensor * q4 = ggml_new_tensor_2d(&ctx, GGML_TYPE_Q4_0, 96, 40);
    ggml_tensor * q8 = ggml_new_tensor_3d(&ctx, GGML_TYPE_Q8_0, 64, 33, 2);
    ggml_tensor * x  = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 32, 8);
    ggml_tensor * y  = ggml_dup_tensor(&ctx, x);
    auto          buf = alloc_ctx_tensors(ctx, f.dev().extra_buffer_types()[0]);
    auto *        hb  = static_cast<htp_buffer *>(buf.get());

    // Random quant bytes with a finite fp16 scale (0x3c00 = 1.0) at the start of every block.
    auto random_blocks = [](const ggml_tensor * t, uint32_t seed) {
        std::vector<uint8_t> b(ggml_nbytes(t));
        std::mt19937         rng(seed);
        for (uint8_t & v : b) {
            v = uint8_t(rng());
        }
        for (size_t at = 0; at < b.size(); at += ggml_type_size(t->type)) {
            b[at]     = uint8_t(rng() & 0xff);
            b[at + 1] = 0x3c;
        }
        return b;
    };
    const auto q4_bytes = random_blocks(q4, 4);
    const auto q8_bytes = random_blocks(q8, 5);
    tensor_set(q4, q4_bytes.data(), 0, q4_bytes.size());
    tensor_set(q8, q8_bytes.data(), 0, q8_bytes.size());
    fill(x, 6);
    EXPECT_TRUE(hb->is_tiled(q4));
    EXPECT_TRUE(hb->is_tiled(q8));
    EXPECT_FALSE(hb->is_tiled(x));
    EXPECT_NE(std::memcmp(q4->data, q4_bytes.data(), q4_bytes.size()), 0) << "stored tiled, not flat";

    // The session maps the buffer (delayed) and runs an op on the flat tensor next to the tiles.
    htp_backend  be(f.dev());
    const htp_op ops[] = {stream_op(x, y, 3.0f)};
    be.compute_ops(ops);
    EXPECT_TRUE(scaled_exactly(values(x), values(y), {3.0f}));

    std::vector<uint8_t> back(q4_bytes.size());
    tensor_get(q4, back.data(), 0, back.size());
    EXPECT_EQ(back, q4_bytes);
    std::vector<uint8_t> part(100);
    tensor_get(q8, part.data(), 1000, part.size());
    EXPECT_EQ(part, std::vector<uint8_t>(q8_bytes.begin() + 1000, q8_bytes.begin() + 1100));

    // Tiled tensors are written whole; partial writes are refused.
    EXPECT_THROW(tensor_set(q4, q4_bytes.data(), 0, 18), std::invalid_argument);
}

// A compute buffer flagged as holding weights (llama.cpp's tensor split puts them there): a whole
// weight whose tiles fit its flat room is stored tiled, read back flat; a partial write of it is
// refused, as in a REPACK buffer; an unflagged compute buffer never tiles.
TEST(HtpRepack, AComputeBufferHoldingWeightsTilesThem) {
    fixture       f;
    ggml_context  ctx;
    ggml_tensor * q4  = ggml_new_tensor_2d(&ctx, GGML_TYPE_Q4_0, 96, 64);
    ggml_tensor * odd = ggml_new_tensor_2d(&ctx, GGML_TYPE_Q4_0, 96, 40);  // 40 rows: tiles pad to 64
    auto          buf = alloc_ctx_tensors(ctx, f.dev().buffer_type());
    auto *        hb  = static_cast<htp_buffer *>(buf.get());
    std::vector<uint8_t> bytes(ggml_nbytes(q4));
    std::mt19937         rng(9);
    for (size_t at = 0; at < bytes.size(); ++at) {
        bytes[at] = at % 18 == 1 ? 0x3c : uint8_t(rng());
    }
    tensor_set(q4, bytes.data(), 0, bytes.size());
    EXPECT_FALSE(hb->is_tiled(q4)) << "a compute buffer not holding weights";
    hb->hold_weights();
    tensor_set(q4, bytes.data(), 0, bytes.size());
    EXPECT_TRUE(hb->is_tiled(q4));
    EXPECT_NE(std::memcmp(q4->data, bytes.data(), bytes.size()), 0) << "stored tiled, not flat";
    std::vector<uint8_t> back(bytes.size());
    tensor_get(q4, back.data(), 0, back.size());
    EXPECT_EQ(back, bytes);
    tensor_set(odd, bytes.data(), 0, ggml_nbytes(odd));
    EXPECT_FALSE(hb->is_tiled(odd)) << "its tiles would not fit its room";
    EXPECT_THROW(tensor_set(q4, bytes.data(), 0, 18), std::invalid_argument);
}

TEST(HtpRepack, LossyTilesRefuseGetTensor) {
    fixture       f;
    ggml_context  ctx;
    ggml_tensor * q4k = ggml_new_tensor_2d(&ctx, GGML_TYPE_Q4_K, 256, 32);
    auto          buf = alloc_ctx_tensors(ctx, f.dev().extra_buffer_types()[0]);
    std::vector<uint8_t> bytes(ggml_nbytes(q4k), 0);
    for (size_t at = 0; at < bytes.size(); at += ggml_type_size(GGML_TYPE_Q4_K)) {
        bytes[at + 1] = 0x3c;  // d = 1.0, dmin = 0, scales 0
    }
    tensor_set(q4k, bytes.data(), 0, bytes.size());
    ASSERT_TRUE(static_cast<htp_buffer *>(buf.get())->is_tiled(q4k));
    std::vector<uint8_t> back(bytes.size());
    try {
        tensor_get(q4k, back.data(), 0, back.size());
        FAIL() << "no error";
    } catch (const std::invalid_argument & e) {
        EXPECT_NE(std::string(e.what()).find("keep fp16 scale products"), std::string::npos) << e.what();
    }
}

// ---- errors

TEST(HtpErrors, AStrictViolationNamesTheOpAndTheSessionsWords) {
    fixture       f;
    ggml_context  ctx;
    ggml_tensor * src  = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 64, 4);
    ggml_tensor * dst  = ggml_scale(&ctx, src, 2.0f);
    ggml_set_name(dst, "scaled");
    auto buf = alloc_ctx_tensors(ctx, f.dev().buffer_type());
    fill(src, 7);
    htp_backend  be(f.dev());
    const htp_op ops[] = {stream_op(src, dst, 1.0f),
                          stream_op(src, dst, 2.0f, dst, proto::HTP_TEST_STREAM_WRITE_AFTER_PUSH)};
    try {
        be.compute_ops(ops);
        FAIL() << "no error";
    } catch (const backend_error & e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("HTP0:0: SCALE 'scaled' (op 1 of batch 0) failed on the NPU: STRICT"), std::string::npos)
            << m;
        EXPECT_NE(m.find("VTCM source changed between push and pop"), std::string::npos) << m;
    }
    // The session carries on.
    const htp_op good[] = {stream_op(src, dst, 2.0f, dst)};
    be.compute_ops(good);
    EXPECT_TRUE(scaled_exactly(values(src), values(dst), {2.0f}));
}

TEST(HtpErrors, AFaultNamesTheAddressAndANewSessionTakesOver) {
    fixture       f(test_options(), test_session(4 * MiB));
    ggml_context  ctx;
    ggml_tensor * src = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 64, 4);
    ggml_tensor * dst = ggml_dup_tensor(&ctx, src);
    ggml_set_name(dst, "poke");
    auto buf = alloc_ctx_tensors(ctx, f.dev().buffer_type());
    fill(src, 8);
    htp_backend be(f.dev());
    htp_op      fault;
    fault.desc.opcode    = proto::HTP_OP_TEST_FAULT;
    fault.desc.params[0] = 0x300010;
    const htp_op ops[]   = {stream_op(src, dst, 1.0f), fault};
    try {
        be.compute_ops(ops);
        FAIL() << "no error";
    } catch (const backend_error & e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("NPU fault at address 0x00300010 in op 1 of batch 0"), std::string::npos) << m;
        EXPECT_NE(m.find("(running TEST_FAULT)"), std::string::npos) << m;
    }
    const htp_op good[] = {stream_op(src, dst, 0.5f)};
    be.compute_ops(good);
    EXPECT_TRUE(scaled_exactly(values(src), values(dst), {0.5f}));
}

TEST(HtpErrors, NodesWithoutNpuKernelsAreRefused) {
    fixture       f;
    ggml_context  ctx;
    ggml_tensor * a = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 8, 4);
    ggml_tensor * v = ggml_reshape_1d(&ctx, a, 32);
    ggml_cgraph   views;
    ggml_build_forward_expand(views, v);
    auto        buf = alloc_ctx_tensors(ctx, f.dev().buffer_type());
    htp_backend be(f.dev());
    be.graph_compute(views);  // only layout nodes: nothing to send
    EXPECT_EQ(be.last_batch_count(), 0u);
    ggml_tensor * q4  = ggml_new_tensor_2d(&ctx, GGML_TYPE_IQ4_NL, 32, 1);
    ggml_tensor * log = ggml_cpy(&ctx, a, q4);  // no NPU kernel (no IQ4_NL quantizer)
    ggml_set_name(log, "cat");
    ggml_cgraph g;
    ggml_build_forward_expand(g, log);
    EXPECT_FALSE(f.dev().supports_op(log));
    try {
        be.graph_compute(g);
        FAIL() << "no error";
    } catch (const backend_error & e) {
        EXPECT_NE(std::string(e.what()).find("HTP0:0: CPY 'cat' cannot run on the NPU"), std::string::npos)
            << e.what();
    }
}

// ---- several devices

// Two sessions work at once; each reads and writes the other's compute buffers in place (shared DDR:
// a layer split's activations), never its REPACK (delayed, possibly tiled) weights.
TEST(HtpDevices, TwoDevicesShareComputeBuffersButNotWeights) {
    fixture f(test_options(2));
    ASSERT_EQ(f.devices.size(), 2u);
    EXPECT_TRUE(f.dev(0).supports_buft(f.dev(1).buffer_type()));
    EXPECT_FALSE(f.dev(1).supports_buft(f.dev(0).extra_buffer_types()[0]));

    ggml_context  c0, c1;
    ggml_tensor * a0 = ggml_new_tensor_2d(&c0, GGML_TYPE_F32, 256, 16);
    ggml_tensor * b0 = ggml_dup_tensor(&c0, a0);
    ggml_tensor * a1 = ggml_new_tensor_2d(&c1, GGML_TYPE_F32, 256, 16);
    ggml_tensor * b1 = ggml_dup_tensor(&c1, a1);
    ggml_set_name(b1, "b1");
    auto buf0 = alloc_ctx_tensors(c0, f.dev(0).buffer_type());
    auto buf1 = alloc_ctx_tensors(c1, f.dev(1).buffer_type());
    fill(a0, 9);
    fill(a1, 10);
    htp_backend be0(f.dev(0)), be1(f.dev(1));
    // Both sessions work at once, many batches each.
    auto run = [](htp_backend * be, const htp_op op, bool * ok) {
        try {
            for (int i = 0; i < 50; ++i) {
                const htp_op ops[] = {op};
                be->compute_ops(ops);
            }
            *ok = true;
        } catch (const backend_error & e) {
            ADD_FAILURE() << e.what();
        }
    };
    bool        ok0 = false, ok1 = false;
    std::thread t0(run, &be0, stream_op(a0, b0, 2.0f), &ok0), t1(run, &be1, stream_op(a1, b1, -3.0f), &ok1);
    t0.join();
    t1.join();
    EXPECT_TRUE(ok0 && ok1);
    EXPECT_TRUE(scaled_exactly(values(a0), values(b0), {2.0f}));
    EXPECT_TRUE(scaled_exactly(values(a1), values(b1), {-3.0f}));

    // Session 1 reads session 0's a0 and writes session 0's b0; then session 0 reads that back.
    const htp_op cross[] = {stream_op(a0, b0, 5.0f)};
    be1.compute_ops(cross);
    EXPECT_TRUE(scaled_exactly(values(a0), values(b0), {5.0f}));
    const htp_op back[] = {stream_op(b0, b1, 0.5f)};
    be0.compute_ops(back);
    EXPECT_TRUE(scaled_exactly(values(a0), values(b1), {2.5f}));

    ggml_context  cw;
    ggml_tensor * w    = ggml_new_tensor_2d(&cw, GGML_TYPE_F32, 256, 16);
    auto          bufw = alloc_ctx_tensors(cw, f.dev(0).extra_buffer_types()[0]);
    fill(w, 3);
    const htp_op weights[] = {stream_op(w, b1, 1.0f)};
    try {
        be1.compute_ops(weights);
        FAIL() << "no error";
    } catch (const backend_error & e) {
        EXPECT_NE(std::string(e.what()).find("lives in a HTP0:0-REPACK buffer, which this session cannot read"),
                  std::string::npos)
            << e.what();
    }
}

// ---- profiling

TEST(HtpProfile, BasicModePrintsOneLinePerOp) {
    htp_options o = test_options();
    o.profile     = htp_profile_mode::basic;
    fixture       f(o);
    ggml_context  ctx;
    ggml_tensor * src = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 64, 8);
    ggml_tensor * dst = ggml_scale(&ctx, src, 2.0f);
    ggml_tensor * out = ggml_dup_tensor(&ctx, src);
    ggml_set_name(dst, "twice");
    auto buf = alloc_ctx_tensors(ctx, f.dev().buffer_type());
    fill(src, 11);
    htp_backend  be(f.dev());
    const htp_op ops[] = {stream_op(src, dst, 2.0f, dst), stream_op(dst, out, 2.0f)};
    ::testing::internal::CaptureStderr();
    be.compute_ops(ops);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("HTP0:0: profile-op SCALE 'twice': usec "), std::string::npos) << err;
    EXPECT_NE(err.find("HTP0:0: profile-op TEST_STREAM: usec "), std::string::npos) << err;
    EXPECT_NE(err.find(" cycles "), std::string::npos) << err;
    EXPECT_EQ(err.find("dma-descs"), std::string::npos) << "level 1 is upstream's usec and cycles alone";
    EXPECT_TRUE(f.dev().profile_log().batches().empty()) << "mode 1 keeps no trace";
}

// Level 2 (upstream's "extended" profile; the virtual NPU has no PMU): each line also carries what
// the op's DMA queues issued, counted by the NPU's dma_queue. TEST_STREAM moves its 64 x 8 floats
// into VTCM and back out, nothing else.
TEST(HtpProfile, LevelTwoAddsTheNpusDmaCounters) {
    htp_options o = test_options();
    o.profile     = htp_profile_mode::pmu;
    fixture       f(o);
    ggml_context  ctx;
    ggml_tensor * src = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 64, 8);
    ggml_tensor * dst = ggml_dup_tensor(&ctx, src);
    auto          buf = alloc_ctx_tensors(ctx, f.dev().buffer_type());
    fill(src, 11);
    htp_backend  be(f.dev());
    const htp_op ops[] = {stream_op(src, dst, 2.0f)};
    ::testing::internal::CaptureStderr();
    be.compute_ops(ops);
    const std::string err = ::testing::internal::GetCapturedStderr();
    std::smatch       m;
    ASSERT_TRUE(std::regex_search(err, m, std::regex("profile-op TEST_STREAM: usec \\d+ cycles \\d+ dma-descs (\\d+) "
                                                     "dma-to-vtcm (\\d+) dma-from-vtcm (\\d+) dma-ddr (\\d+)")))
        << err;
    EXPECT_GE(std::stoul(m[1]), 2u);
    EXPECT_EQ(m[2], "2048");
    EXPECT_EQ(m[3], "2048");
    EXPECT_EQ(m[4], "0");
}

} // namespace

namespace {

TEST(HtpProfile, VerboseTwoDumpsTheBatchTables) {
    htp_options o = test_options();
    o.verbose     = 2;
    fixture       f(o);
    ggml_context  ctx;
    ggml_tensor * src = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 64, 8);
    ggml_tensor * dst = ggml_dup_tensor(&ctx, src);
    auto          buf = alloc_ctx_tensors(ctx, f.dev().buffer_type());
    fill(src, 12);
    htp_backend  be(f.dev());
    const htp_op ops[] = {stream_op(src, dst, 2.0f), stream_op(src, dst, 4.0f)};
    ::testing::internal::CaptureStderr();
    be.compute_ops(ops);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("HTP0:0: batch 0: 2 ops, 2 tensors, 1 buffers"), std::string::npos) << err;
    EXPECT_NE(err.find("HTP0:0:   op 1 TEST_STREAM src [0] dst [1]"), std::string::npos) << err;
    EXPECT_NE(err.find("HTP0:0:   buffer 0 fd " + std::to_string(static_cast<htp_buffer *>(buf.get())->fd()) +
                       " size " + std::to_string(buf->size()) + " pinned"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("HTP0:0:   tensor 1 buffer 0 offset 2048 size 2048 type f32 flags 1"
                       " ne [64,8,1,1] nb [4,256,2048,2048]"),
              std::string::npos)
        << err;
    EXPECT_TRUE(scaled_exactly(values(src), values(dst), {4.0f}));
}

} // namespace
