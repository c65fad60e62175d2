// Device groups (row split) against real session processes: every member gets every batch with
// its index and the group's fences, the members' slices make the whole result, and planted faults
// in one member (an error, a member that never reaches its fence, a crash) end every member's
// batch with a clear error within the fence deadline; the group works again afterwards.
#include "htp-session-fixture.h"

#include "hexagon/htp-group.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <regex>
#include <string>

namespace {

using namespace htp_session_test;

htp_op mdev_fault_op(uint32_t victim, int32_t kind, uint32_t store_mask = 0, const ggml_tensor * dst = nullptr) {
    htp_op op;
    op.desc.opcode    = proto::HTP_OP_TEST_MDEV_FAULT;
    op.desc.params[0] = int32_t(victim);
    op.desc.params[1] = kind;
    op.desc.params[2] = int32_t(store_mask);
    op.dst[0]         = dst;
    return op;
}

struct group_fixture {
    fixture                           f;
    std::unique_ptr<htp_group_device> group;

    explicit group_fixture(uint32_t n, uint32_t fence_ms = 5000, std::chrono::milliseconds session = 10s)
        : f(options(n, fence_ms), session_with(session)) {
        std::vector<htp_device *> members;
        for (auto & d : f.devices) {
            members.push_back(d.get());
        }
        group = std::make_unique<htp_group_device>(members);
    }
    static htp_options options(uint32_t n, uint32_t fence_ms) {
        htp_options o      = test_options(n);
        o.fence_timeout_ms = fence_ms;
        return o;
    }
    static vnpu::rpc::session_options session_with(std::chrono::milliseconds timeout) {
        vnpu::rpc::session_options s = test_session();
        s.timeout                    = timeout;
        return s;
    }
};

// 300 floats a row: 1200-byte rows, so the line rule partitions in chunks of 8 rows.
struct chain {
    ggml_context  ctx;
    ggml_tensor * a;
    ggml_tensor * b;
    ggml_tensor * c;
    std::unique_ptr<backend_buffer> buf;

    explicit chain(backend_buffer_type * buft, int64_t rows = 203) {
        a   = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 300, rows);
        b   = ggml_dup_tensor(&ctx, a);
        c   = ggml_dup_tensor(&ctx, a);
        buf = alloc_ctx_tensors(ctx, buft);
        fill(a, 5);
    }
    // 150 ops over several batches of at most 64 ops, each reading what the op before wrote (each
    // member its own rows: the faults below need no more).
    std::vector<htp_op> ops() const {
        std::vector<htp_op> out;
        for (int i = 0; i < 75; ++i) {
            out.push_back(stream_op(i == 0 ? a : c, b, 2.0f));
            out.push_back(stream_op(b, c, 0.5f));
        }
        return out;
    }

    // The same 150 ops with every one reading the rows every member wrote in the op before: the
    // 203 rows as a 29 x 7 matrix are read transposed (dst row i1 + 29 i2 from source row
    // 7 i1 + i2), so a member's output rows come from its peers' slices. The factors are powers of
    // two that never cancel from one op to the next (c's exponent cycles 2, 0, 1 and b is 8 c), so
    // every row differs from the same tensor's row one op earlier: a row read before its writer's
    // barrier (a missing fence or flush) holds other bits, where under x2 / x0.5 it held the same.
    std::vector<htp_op> crossing_ops() {
        auto as_rows    = [&](ggml_tensor * t) { return ggml_reshape_3d(&ctx, t, 300, 29, 7); };
        auto transposed = [&](ggml_tensor * t) {
            return ggml_permute(&ctx, ggml_reshape_3d(&ctx, t, 300, 7, 29), 0, 2, 1, 3);
        };
        std::vector<htp_op> out;
        int                 e_prev = 0;  // c's exponent (a's: 0)
        for (int i = 0; i < 75; ++i) {
            const int e = (i + 2) % 3;
            out.push_back(stream_op(transposed(i == 0 ? a : c), as_rows(b), std::ldexp(1.0f, e + 3 - e_prev)));
            out.push_back(stream_op(transposed(b), as_rows(c), 0.125f));
            e_prev = e;
        }
        return out;
    }
    // c after crossing_ops from a: a's rows moved by the 150 transposes, times 2 (c's last exponent).
    static std::vector<float> crossed(const std::vector<float> & a_values) {
        std::vector<uint32_t> from(203);
        for (uint32_t r = 0; r < 203; ++r) {
            from[r] = r;
        }
        for (int op = 0; op < 150; ++op) {
            std::vector<uint32_t> next(203);
            for (uint32_t i2 = 0; i2 < 7; ++i2) {
                for (uint32_t i1 = 0; i1 < 29; ++i1) {
                    next[i1 + 29 * i2] = from[7 * i1 + i2];
                }
            }
            from = next;
        }
        std::vector<float> out(a_values.size());
        for (uint32_t r = 0; r < 203; ++r) {
            for (uint32_t j = 0; j < 300; ++j) {
                out[size_t(r) * 300 + j] = a_values[size_t(from[r]) * 300 + j] * 2.0f;
            }
        }
        return out;
    }
};

TEST(HtpGroup, MembersComputeTheirSlicesAndTogetherTheWhole) {
    for (uint32_t n : {2u, 3u, 4u}) {
        group_fixture g(n);
        EXPECT_EQ(std::string(g.group->name()), n == 2 ? "HTP0:0+HTP0:1" : n == 3 ? "HTP0:0+HTP0:1+HTP0:2" : "HTP0:0+HTP0:1+HTP0:2+HTP0:3");
        auto  be = g.group->init_backend();
        auto & hb = static_cast<htp_backend &>(*be);
        chain  t(g.group->buffer_type());
        const std::vector<htp_op> ops = t.crossing_ops();
        hb.compute_ops(ops);
        EXPECT_EQ(hb.last_batch_count(), 3u);
        EXPECT_TRUE(scaled_exactly(chain::crossed(values(t.a)), values(t.c), {})) << n << " members";
        for (htp_device * m : g.group->members()) {
            EXPECT_EQ(m->window_stats().batches, 3u) << m->name();  // every member ran every batch
        }
        // Each member knows its index from the request: member k alone stores k at dst's start.
        for (uint32_t k = 0; k < n; ++k) {
            const htp_op probe[] = {mdev_fault_op(0, proto::HTP_TEST_MDEV_HVX_STORE, 1u << k, t.b)};
            hb.compute_ops(probe);
            int32_t first = -1;
            tensor_get(t.b, &first, 0, 4);
            EXPECT_EQ(first, int32_t(k)) << n << " members";
        }
    }
}

TEST(HtpGroup, AMemberErrorEndsEveryMembersBatchAtOnce) {
    group_fixture g(3, /*fence_ms*/ 20000);
    auto          be = g.group->init_backend();
    auto &        hb = static_cast<htp_backend &>(*be);
    chain         t(g.group->buffer_type());
    std::vector<htp_op> ops = {stream_op(t.a, t.b, 2.0f), mdev_fault_op(1, proto::HTP_TEST_MDEV_ERROR),
                               stream_op(t.b, t.c, 2.0f)};
    const auto start = std::chrono::steady_clock::now();
    try {
        hb.compute_ops(ops);
        FAIL() << "no error";
    } catch (const backend_error & e) {
        const std::string what = e.what();
        // The member's own failure is what the host reports, not the peers' PEER_FAILED.
        EXPECT_NE(what.find("HTP0:1: TEST_MDEV_FAULT (op 1 of batch"), std::string::npos) << what;
        EXPECT_NE(what.find("INTERNAL_ERR"), std::string::npos) << what;
    }
    // Propagated through the fences, not found by the 20 s deadline.
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    const std::vector<htp_op> again = t.ops();
    hb.compute_ops(again);
    EXPECT_TRUE(scaled_exactly(values(t.a), values(t.c), {2.0f, 0.5f}));
}

TEST(HtpGroup, AMemberThatNeverReachesItsFenceIsADeadlineErrorNotAHang) {
    group_fixture g(3, /*fence_ms*/ 300, /*session*/ 3s);
    auto          be = g.group->init_backend();
    auto &        hb = static_cast<htp_backend &>(*be);
    chain         t(g.group->buffer_type());
    const htp_op  stall[] = {stream_op(t.a, t.b, 2.0f), mdev_fault_op(2, proto::HTP_TEST_MDEV_STALL)};
    const auto    start   = std::chrono::steady_clock::now();
    try {
        hb.compute_ops(stall);
        FAIL() << "no error";
    } catch (const backend_error & e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("HTP0:2"), std::string::npos) << what;  // the stuck member, by its deadline
        EXPECT_NE(what.find("FENCE_TIMEOUT"), std::string::npos) << what;  // its peers, by theirs
        EXPECT_NE(what.find("peer 2 did not reach the barrier before the deadline"), std::string::npos) << what;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 9s);
    const std::vector<htp_op> again = t.ops();  // the stuck session was ended and starts afresh
    hb.compute_ops(again);
    EXPECT_TRUE(scaled_exactly(values(t.a), values(t.c), {2.0f, 0.5f}));
}

// The group learns of a member's death from its session process, as a single device does: the
// peers' barriers fail at once (PEER_FAILED), well inside the fence deadline of 15 s.
// A deadline shorter than a member's work: the member that gave up reports FENCE_TIMEOUT, the late
// one then finds its failure (PEER_FAILED). The error names the deadline, not the report.
TEST(HtpGroup, AMissedDeadlineIsReportedAsTheDeadline) {
    group_fixture g(2, /*fence_ms*/ 50);
    auto          be = g.group->init_backend();
    auto &        hb = static_cast<htp_backend &>(*be);
    chain         t(g.group->buffer_type());
    // Member 0 is late, so member 1's error is the deadline and member 0's (read first) the report.
    htp_op slow = mdev_fault_op(0, proto::HTP_TEST_MDEV_DELAY);
    slow.desc.params[2] = 400;
    const htp_op late[] = {stream_op(t.a, t.b, 2.0f), slow};
    try {
        hb.compute_ops(late);
        FAIL() << "no error";
    } catch (const backend_error & e) {
        const std::string what = e.what();
        EXPECT_EQ(what.find("HTP0:1: "), 0u) << what;
        EXPECT_NE(what.find("FENCE_TIMEOUT"), std::string::npos) << what;
        EXPECT_NE(what.find("before the deadline"), std::string::npos) << what;
        EXPECT_EQ(what.find("PEER_FAILED"), std::string::npos) << what;
    }
}

TEST(HtpGroup, AMemberKilledMidBatchIsAClearErrorAtOnce) {
    group_fixture g(2, /*fence_ms*/ 15000);
    auto          be = g.group->init_backend();
    auto &        hb = static_cast<htp_backend &>(*be);
    chain         t(g.group->buffer_type());
    const htp_op  crash[] = {stream_op(t.a, t.b, 2.0f), mdev_fault_op(1, proto::HTP_TEST_MDEV_CRASH)};
    const auto    start   = std::chrono::steady_clock::now();
    try {
        hb.compute_ops(crash);
        FAIL() << "no error";
    } catch (const backend_error & e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("HTP0:1"), std::string::npos) << what;
        EXPECT_NE(what.find("TEST_MDEV_FAULT"), std::string::npos) << what;  // the op it died in
        EXPECT_NE(what.find("HTP0:0: TEST_MDEV_FAULT (op 1 of batch"), std::string::npos) << what;
        EXPECT_NE(what.find("PEER_FAILED"), std::string::npos) << what;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
    const std::vector<htp_op> again = t.ops();
    hb.compute_ops(again);
    EXPECT_TRUE(scaled_exactly(values(t.a), values(t.c), {2.0f, 0.5f}));
}

// Strict mode: two members storing into one 128-byte line through HVX in one op is a STRICT failure
// naming the line, on every member; the DMA writes of the row-split ops above never are.
TEST(HtpGroup, TwoMembersWritingOneLineThroughHvxFailStrict) {
    group_fixture g(3);
    auto          be = g.group->init_backend();
    auto &        hb = static_cast<htp_backend &>(*be);
    chain         t(g.group->buffer_type());
    fill(t.b, 9);
    const htp_op clash[] = {mdev_fault_op(0, proto::HTP_TEST_MDEV_HVX_STORE, 0b110, t.b)};
    try {
        hb.compute_ops(clash);
        FAIL() << "no error";
    } catch (const backend_error & e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("TEST_MDEV_FAULT (op 0 of batch"), std::string::npos) << what;
        EXPECT_NE(what.find("STRICT"), std::string::npos) << what;
        EXPECT_TRUE(std::regex_search(
            what, std::regex("members 1 and 2 both wrote the 128-byte line at offset 0x[0-9a-f]+ of batch buffer 1")))
            << what;
    }
    const std::vector<htp_op> again = t.ops();
    hb.compute_ops(again);
    EXPECT_TRUE(scaled_exactly(values(t.a), values(t.c), {2.0f, 0.5f}));
}

TEST(HtpGroup, MembersMustBeDistinctHtpDevices) {
    fixture f(test_options(2), test_session());
    EXPECT_THROW(htp_group_device({&f.dev(0)}), std::invalid_argument);
    EXPECT_THROW(htp_group_device({&f.dev(0), &f.dev(0)}), std::invalid_argument);
    EXPECT_THROW(htp_group_device({&f.dev(0), nullptr}), std::invalid_argument);
}

} // namespace
