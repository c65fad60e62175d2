// NPU sessions through the real process boundary: hexnpu-htpd children started by the client
// library, buffers passed by fd, batches over the shared queue. Results are checked against scalar
// references, failures against what the test provoked (signal, NPU address, op).
#include "../htp/test-htp-util.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-status.h"
#include "proto/htp-trace.h"
#include "vnpu/client/dspqueue.h"
#include "vnpu/client/remote-session.h"
#include "vnpu/client/rpcmem.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace hexnpu;
using namespace htp_test;
using namespace std::chrono_literals;
using vnpu::batch_builder;
using vnpu::packed_batch;
using vnpu::shared_buffer;
using vnpu::rpc::rpc_errc;

constexpr uint64_t MiB        = 1 << 20;
constexpr uint32_t QUEUE_SLOT = 2 * MiB;  // op-queue bytes per batch block

vnpu::rpc::session_options test_options(uint64_t window = 64 * MiB) {
    vnpu::rpc::session_options o;
    o.arch         = 79;
    o.window_size  = window;
    o.host_threads = 4;
    o.timeout      = 10s;
    o.test_ops     = true;  // TEST_STREAM / TEST_FAULT ...
    return o;
}

// A started session with its queue and a pinned op-queue buffer of n_slots blocks.
struct npu {
    std::unique_ptr<vnpu::rpc::remote_session> session;
    std::unique_ptr<vnpu::rpc::dspqueue>       queue;
    void *                                     opqueue = nullptr;
    uint32_t                                   n_slots;

    explicit npu(const vnpu::rpc::session_options & options, uint32_t n_hvx = 2, uint32_t slots = 4,
                 uint64_t max_vmem = 0)
        : n_slots(slots) {
        expect_ok(vnpu::rpc::remote_session::open(options, &session));
        expect_ok(vnpu::rpc::dspqueue::create(*session, slots, 4096, &queue));
        expect_ok(session->start(*queue, n_hvx, 1, max_vmem));
        opqueue = vnpu::rpc::rpcmem_alloc(size_t(slots) * QUEUE_SLOT);
        expect_ok(session->fastrpc_mmap(vnpu::rpc::rpcmem_to_fd(opqueue), size_t(slots) * QUEUE_SLOT,
                                        vnpu::rpc::map_mode::pinned));
    }
    ~npu() {
        queue.reset();
        session.reset();
        vnpu::rpc::rpcmem_free(opqueue);
    }
    static void expect_ok(const vnpu::rpc::rpc_status & st) {
        ASSERT_TRUE(st.ok()) << vnpu::rpc::rpc_errc_name(st.code) << ": " << st.message;
    }

    void register_buffer(const shared_buffer & b) {
        expect_ok(session->fastrpc_mmap(b.fd(), b.size(), vnpu::rpc::map_mode::delayed));
    }

    uint8_t * block(uint32_t slot) { return static_cast<uint8_t *>(opqueue) + size_t(slot) * QUEUE_SLOT; }

    // Puts the batch into op-queue block `slot` and sends it.
    vnpu::rpc::rpc_status send(const packed_batch & batch, uint32_t slot) {
        std::memcpy(block(slot), batch.storage.data(), batch.block_size());
        const vnpu::rpc::queue_buffer where{vnpu::rpc::rpcmem_to_fd(opqueue), 0, uint64_t(slot) * QUEUE_SLOT,
                                            batch.block_size()};
        return vnpu::rpc::write_batch(*queue, batch.req, where);
    }
    vnpu::rpc::rpc_status receive(proto::htp_opbatch_rsp * rsp, std::string * log) {
        return vnpu::rpc::read_batch_response(*queue, rsp, log);
    }
    // Sends, waits, and copies the block back (profile, traces, rewritten tensor addresses).
    proto::htp_opbatch_rsp run(packed_batch & batch, std::string * log = nullptr) {
        proto::htp_opbatch_rsp rsp{};
        std::string            text;
        expect_ok(send(batch, 0));
        expect_ok(receive(&rsp, &text));
        std::memcpy(batch.storage.data(), block(0), batch.block_size());
        if (log != nullptr) {
            *log = text;
        }
        return rsp;
    }
};

// src (random) -> dst = src * scale, both packed F32 of shape ne in their own buffers.
struct stream_pair {
    std::array<uint32_t, 4> ne;
    shared_buffer           src, dst;
    float                   scale;

    stream_pair(std::array<uint32_t, 4> shape, float s, uint32_t seed)
        : ne(shape), src(bytes(shape)), dst(bytes(shape)), scale(s) {
        fill_random(reinterpret_cast<float *>(src.data()), bytes(shape) / 4, seed);
        std::memset(dst.data(), 0x77, bytes(shape));
    }
    static uint64_t bytes(const std::array<uint32_t, 4> & n) { return uint64_t(n[0]) * n[1] * n[2] * n[3] * 4; }

    packed_batch batch(uint32_t id, uint32_t n_threads = 2, uint32_t profile = 1, uint32_t n_traces = 0) const {
        batch_builder  b;
        const uint16_t ts = b.add_f32(b.add_buffer(src, false), 0, ne);
        const uint16_t td = b.add_f32(b.add_buffer(dst, false), 0, ne);
        stream_params  p;
        p.scale      = scale;
        p.n_threads  = n_threads;
        p.block_rows = 4;
        b.add_op(stream_op(ts, td, ne, p));
        return b.pack(id, profile, n_traces);
    }
    ::testing::AssertionResult exact() const {
        const float * x = reinterpret_cast<const float *>(src.data());
        const float * y = reinterpret_cast<const float *>(dst.data());
        for (uint64_t i = 0; i < bytes(ne) / 4; ++i) {
            if (float_bits(y[i]) != float_bits(x[i] * scale)) {
                return ::testing::AssertionFailure() << "element " << i << ": " << y[i] << " != " << x[i] << " * "
                                                     << scale;
            }
        }
        return ::testing::AssertionSuccess();
    }
};

// ---- start, hwinfo, overrides

TEST(SessionProcess, OptionsFromTheEnvironment) {
    const std::pair<const char *, const char *> env[] = {
        {"HEXNPU_ARCH", "75"},          {"HEXNPU_WINDOW_SIZE", "0x800000"}, {"HEXNPU_VTCM_SIZE", "262144"},
        {"HEXNPU_HVX_COUNT", "2"},      {"HEXNPU_HOST_THREADS", "3"},       {"HEXNPU_SESSION_TIMEOUT_MS", "1234"},
        {"HEXNPU_HTPD", "/x/htpd"},     {"HEXNPU_LIB_DIR", "/x/lib"}};
    for (const auto & [name, value] : env) {
        setenv(name, value, 1);
    }
    const vnpu::rpc::session_options o = vnpu::rpc::session_options::from_environment();
    for (const auto & [name, value] : env) {
        unsetenv(name);
    }
    EXPECT_EQ(o.arch, 75u);
    EXPECT_EQ(o.window_size, 8 * MiB);
    EXPECT_EQ(o.vtcm_size, 256u * 1024);
    EXPECT_EQ(o.n_hvx, 2u);
    EXPECT_EQ(o.host_threads, 3u);
    EXPECT_EQ(o.timeout, 1234ms);
    EXPECT_EQ(o.htpd_path, "/x/htpd");
    EXPECT_EQ(o.lib_dir, "/x/lib");
    const vnpu::rpc::session_options defaults = vnpu::rpc::session_options::from_environment();
    EXPECT_EQ(defaults.arch, 79u);
    EXPECT_EQ(defaults.timeout, 30000ms);
}

TEST(SessionProcess, HwinfoReportsTheArchFromTheEnvironment) {
    setenv("HEXNPU_ARCH", "v73", 1);
    vnpu::rpc::session_options o = vnpu::rpc::session_options::from_environment();
    unsetenv("HEXNPU_ARCH");
    EXPECT_EQ(o.arch, 73u);
    o.host_threads = 8;
    npu                  n(o, 0);
    vnpu::rpc::hw_info   info;
    npu::expect_ok(n.session->hwinfo(&info));
    EXPECT_EQ(info.arch, 73u);
    EXPECT_EQ(info.n_threads, 4u) << "v73 reports 4 HVX contexts";
    EXPECT_EQ(info.n_hmx, 1u);
    EXPECT_EQ(info.vtcm_size, 8 * MiB);
    EXPECT_EQ(n.session->reported_hvx(), 4u);
}

TEST(SessionProcess, OverridesReachTheSession) {
    vnpu::rpc::session_options o = test_options();
    o.arch                       = 81;
    o.vtcm_size                  = uint32_t(1 * MiB);
    o.n_hvx                      = 3;
    o.host_threads               = 8;
    npu                n(o, 0);
    vnpu::rpc::hw_info info;
    npu::expect_ok(n.session->hwinfo(&info));
    EXPECT_EQ(info.arch, 81u);
    EXPECT_EQ(info.n_threads, 3u);
    EXPECT_EQ(info.vtcm_size, 1 * MiB);
    npu::expect_ok(n.session->stop());
    const auto again = n.session->stop();
    EXPECT_EQ(again.code, rpc_errc::remote_error);
    EXPECT_EQ(again.remote_status, int32_t(proto::HTP_STATUS_INVAL_PARAMS));
}

TEST(SessionProcess, StartFailuresAreCleanErrors) {
    vnpu::rpc::session_options o = test_options();
    o.arch                       = 70;
    std::unique_ptr<vnpu::rpc::remote_session> s;
    auto                                        st = vnpu::rpc::remote_session::open(o, &s);
    EXPECT_EQ(st.code, rpc_errc::spawn_failed);
    EXPECT_NE(st.message.find("unknown arch v70"), std::string::npos) << st.message;

    o           = test_options();
    o.htpd_path = "/nonexistent/hexnpu-htpd";
    st          = vnpu::rpc::remote_session::open(o, &s);
    EXPECT_EQ(st.code, rpc_errc::spawn_failed);
    EXPECT_NE(st.message.find("cannot start /nonexistent/hexnpu-htpd"), std::string::npos) << st.message;

    o         = test_options();
    o.lib_dir = "/nonexistent";
    st        = vnpu::rpc::remote_session::open(o, &s);
    EXPECT_EQ(st.code, rpc_errc::spawn_failed);
    EXPECT_NE(st.message.find("cannot load the NPU library"), std::string::npos) << st.message;

    // A library built for another arch refuses the platform, and says why.
    const auto mismatched = std::filesystem::temp_directory_path() / ("hexnpu-lib-" + std::to_string(getpid()));
    std::filesystem::create_directories(mismatched);
    const auto lib_dir = std::filesystem::read_symlink("/proc/self/exe").parent_path() / ".." / "lib";
    std::filesystem::create_symlink(lib_dir / "libhexnpu-htp-v73-test.so", mismatched / "libhexnpu-htp-v79-test.so");
    o         = test_options();
    o.lib_dir = mismatched.string();
    st        = vnpu::rpc::remote_session::open(o, &s);
    std::filesystem::remove_all(mismatched);
    EXPECT_EQ(st.code, rpc_errc::spawn_failed);
    EXPECT_NE(st.message.find("htp_iface_open failed: NO_SUPPORT"), std::string::npos) << st.message;
    EXPECT_NE(st.message.find("built for another arch"), std::string::npos) << st.message;
}

TEST(SessionProcess, RpcmemBuffersAreSharedFds) {
    void * p = vnpu::rpc::rpcmem_alloc(10000);
    ASSERT_NE(p, nullptr);
    const int fd = vnpu::rpc::rpcmem_to_fd(p);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(static_cast<uint8_t *>(p)[9999], 0);
    int local = 0;
    EXPECT_EQ(vnpu::rpc::rpcmem_to_fd(&local), -1);
    vnpu::rpc::rpcmem_free(p);
    EXPECT_EQ(vnpu::rpc::rpcmem_to_fd(p), -1);
}

// A process's state letter ('Z' for a zombie, 0 when it is gone) and CPU time (user + system,
// clock ticks) from /proc.
struct proc_stat {
    char state = 0;
    long ticks = -1;
};

proc_stat stat_of(pid_t pid) {
    proc_stat st;
    FILE *    f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
    if (f == nullptr) {
        return st;
    }
    char         text[1024] = {};
    const size_t n          = std::fread(text, 1, sizeof text - 1, f);
    std::fclose(f);
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const char * p = std::strrchr(text, ')');
    long utime = 0, stime = 0;
    if (n != 0 && p != nullptr &&
        std::sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &st.state, &utime, &stime) == 3) {
        st.ticks = utime + stime;
    }
    return st;
}

TEST(SessionProcess, IdleSessionSleeps) {
    npu         n(test_options(), 2);
    stream_pair c({64, 8, 1, 1}, 1.0f, 4);
    n.register_buffer(c.src);
    n.register_buffer(c.dst);
    packed_batch batch = c.batch(1);
    ASSERT_EQ(n.run(batch).status, proto::HTP_STATUS_OK);
    // 300 ms idle with a queue thread and two HVX workers: spinning would cost ~30 ticks.
    const long before = stat_of(n.session->pid()).ticks;
    std::this_thread::sleep_for(300ms);
    const long after = stat_of(n.session->pid()).ticks;
    ASSERT_GE(before, 0);
    EXPECT_LE(after - before, 2);
}

TEST(SessionProcess, SessionOutlivesTheThreadThatOpenedIt) {
    std::unique_ptr<npu> n;
    std::thread([&] { n = std::make_unique<npu>(test_options(), 1); }).join();
    std::this_thread::sleep_for(20ms);
    stream_pair c({16, 2, 1, 1}, 2.0f, 5);
    n->register_buffer(c.src);
    n->register_buffer(c.dst);
    packed_batch batch = c.batch(1, 1);
    EXPECT_EQ(n->run(batch).status, proto::HTP_STATUS_OK);
    EXPECT_TRUE(c.exact());
}

// ---- batches end to end

TEST(SessionBatch, StreamExactWithTracesAndProfile) {
    npu         n(test_options(), 2);
    stream_pair c({96, 10, 3, 1}, -2.5f, 1);
    n.register_buffer(c.src);
    n.register_buffer(c.dst);
    packed_batch batch = c.batch(42, 2, 3, 256);
    std::string  log;
    const auto   rsp = n.run(batch, &log);
    ASSERT_EQ(rsp.status, proto::HTP_STATUS_OK) << log;
    EXPECT_EQ(rsp.id, 42u);
    EXPECT_EQ(rsp.n_ops_done, 1u);
    EXPECT_TRUE(c.exact());

    EXPECT_EQ(batch.prof()[0].opcode, uint32_t(proto::HTP_OP_TEST_STREAM));
    EXPECT_GT(batch.prof()[0].cycles_stop, batch.prof()[0].cycles_start);
    EXPECT_GE(rsp.cycles_stop, batch.prof()[0].cycles_stop);
    // The session ran on its own fds and gave the block back with the client's.
    EXPECT_EQ(batch.bufs()[0].fd, c.src.fd());
    EXPECT_EQ(batch.bufs()[1].fd, c.dst.fd());
    for (uint32_t t = 0; t < 2; ++t) {
        uint32_t hvx = 0, dma = 0;
        for (uint32_t i = 0; i < rsp.n_traces[t]; ++i) {
            const uint16_t id = batch.traces(t)[i].id & ~proto::HTP_TRACE_STOP;
            hvx += id == proto::HTP_TRACE_EVT_HVX_COMP;
            dma += id == proto::HTP_TRACE_EVT_DMA;
        }
        // 30 rows, 15 per thread in blocks of at most 4 rows cut at every 10: 5 blocks each.
        EXPECT_EQ(hvx, 2 * 5u) << "thread " << t;
        EXPECT_GT(dma, 0u) << "thread " << t;
    }
    EXPECT_EQ(rsp.n_traces[2], 0u);
    EXPECT_NE(batch.traces(0)[rsp.n_traces[0] - 1].id & ~proto::HTP_TRACE_STOP, proto::HTP_TRACE_EVT_L2FLUSH)
        << "a DMA-written result needs no flush";
}

TEST(SessionBatch, ProfilerTurnsTracingOnForTheSession) {
    npu         n(test_options(), 1);
    stream_pair c({64, 8, 1, 1}, 1.5f, 6);
    n.register_buffer(c.src);
    n.register_buffer(c.dst);
    auto traced_events = [&](uint32_t id) {
        packed_batch batch = c.batch(id, 1, 1, 128);  // timing only, with trace room
        const auto   rsp   = n.run(batch);
        EXPECT_EQ(rsp.status, proto::HTP_STATUS_OK);
        EXPECT_TRUE(c.exact());
        return rsp.n_traces[0];
    };
    EXPECT_EQ(traced_events(1), 0u);
    npu::expect_ok(n.session->profiler(3));
    EXPECT_GT(traced_events(2), 0u);
    npu::expect_ok(n.session->profiler(0));
    EXPECT_EQ(traced_events(3), 0u);
    const auto st = n.session->profiler(2);
    EXPECT_EQ(st.code, rpc_errc::remote_error);
    EXPECT_EQ(st.remote_status, int32_t(proto::HTP_STATUS_INVAL_PARAMS));
}

TEST(SessionBatch, UnregisteredBufferIsRejectedWithAMessage) {
    npu         n(test_options(), 1);
    stream_pair c({32, 4, 1, 1}, 1.0f, 2);
    n.register_buffer(c.src);  // dst is not
    packed_batch batch = c.batch(1);
    std::string  log;
    const auto   rsp = n.run(batch, &log);
    EXPECT_EQ(rsp.status, proto::HTP_STATUS_INVAL_PARAMS);
    EXPECT_EQ(rsp.failed_op, proto::HTP_FAILED_BATCH);
    EXPECT_NE(log.find("batch buffer 1 (fd " + std::to_string(c.dst.fd()) + ") is not registered"),
              std::string::npos)
        << log;
    EXPECT_EQ(batch.bufs()[0].fd, c.src.fd());

    // A buffer shorter than the size given cannot be registered.
    shared_buffer short_buffer(4096);
    const auto    st = n.session->fastrpc_mmap(short_buffer.fd(), 8192, vnpu::rpc::map_mode::delayed);
    EXPECT_EQ(st.code, rpc_errc::remote_error);
    EXPECT_NE(st.message.find("holds 4096 bytes, not the 8192 given"), std::string::npos) << st.message;
}

TEST(SessionQueue, ManySmallBatchesInFlightAndAFewLargeOnes) {
    npu                      n(test_options(), 2, 4);
    std::vector<stream_pair> pairs;
    for (uint32_t i = 0; i < 8; ++i) {
        pairs.emplace_back(std::array<uint32_t, 4>{16 + i, 3, 1, 1}, 0.5f + float(i), 10 + i);
        n.register_buffer(pairs.back().src);
        n.register_buffer(pairs.back().dst);
    }
    // 400 batches, up to 4 in flight: slot k % 4 is reused once response k - 4 came back.
    constexpr uint32_t N = 400;
    uint32_t           received = 0;
    for (uint32_t k = 0; k < N + 4; ++k) {
        if (k >= 4) {
            proto::htp_opbatch_rsp rsp{};
            std::string            log;
            npu::expect_ok(n.receive(&rsp, &log));
            ASSERT_EQ(rsp.id, received) << "responses come back in order";
            ASSERT_EQ(rsp.status, proto::HTP_STATUS_OK) << log;
            ASSERT_TRUE(pairs[received % 8].exact()) << "batch " << received;
            ++received;
        }
        if (k < N) {
            stream_pair & c = pairs[k % 8];
            if (k >= 8) {
                std::memset(c.dst.data(), 0x77, stream_pair::bytes(c.ne));
            }
            npu::expect_ok(n.send(c.batch(k, 1 + k % 2), k % 4));
        }
    }
    EXPECT_EQ(received, N);

    for (uint32_t i = 0; i < 3; ++i) {
        stream_pair big({1024, 1024, 1, 1}, 3.0f + float(i), 50 + i);  // 4 MiB each way
        n.register_buffer(big.src);
        n.register_buffer(big.dst);
        packed_batch batch = big.batch(1000 + i);
        std::string  log;
        ASSERT_EQ(n.run(batch, &log).status, proto::HTP_STATUS_OK) << log;
        EXPECT_TRUE(big.exact());
        npu::expect_ok(n.session->fastrpc_munmap(big.src.fd()));
        npu::expect_ok(n.session->fastrpc_munmap(big.dst.fd()));
    }
}

TEST(SessionQueue, TwoSessionsRunConcurrentlyAndShareADdrBuffer) {
    npu a(test_options(), 2), b(test_options(), 2);
    ASSERT_NE(a.session->pid(), b.session->pid());
    const std::array<uint32_t, 4> ne{256, 64, 1, 1};
    shared_buffer                 input(64 * 1024), shared(64 * 1024), output(64 * 1024);
    fill_random(reinterpret_cast<float *>(input.data()), 16384, 7);
    a.register_buffer(input);
    a.register_buffer(shared);
    b.register_buffer(shared);
    b.register_buffer(output);

    auto stage = [&](npu & s, const shared_buffer & from, const shared_buffer & to, float scale, uint32_t id) {
        batch_builder  bb;
        const uint16_t tf = bb.add_f32(bb.add_buffer(from, true), 0, ne);
        const uint16_t tt = bb.add_f32(bb.add_buffer(to, true), 0, ne);
        stream_params  p;
        p.scale     = scale;
        p.n_threads = 2;
        bb.add_op(stream_op(tf, tt, ne, p));
        packed_batch batch = bb.pack(id, 1, 0);
        std::string  log;
        return std::make_pair(s.run(batch, &log).status, log);
    };
    // Session a writes the shared buffer, session b reads what a wrote, several rounds, while both
    // also run batches of their own on other threads.
    std::vector<stream_pair> own;
    own.emplace_back(std::array<uint32_t, 4>{64, 16, 1, 1}, 2.0f, 1);
    own.emplace_back(std::array<uint32_t, 4>{64, 16, 1, 1}, 5.0f, 2);
    for (uint32_t round = 0; round < 5; ++round) {
        std::memset(output.data(), 0, output.size());
        const auto first = stage(a, input, shared, 2.0f + float(round), round);
        ASSERT_EQ(first.first, proto::HTP_STATUS_OK) << first.second;
        const auto second = stage(b, shared, output, 3.0f, round);
        ASSERT_EQ(second.first, proto::HTP_STATUS_OK) << second.second;
        const float * x = reinterpret_cast<const float *>(input.data());
        const float * y = reinterpret_cast<const float *>(output.data());
        for (int i = 0; i < 16384; ++i) {
            ASSERT_EQ(float_bits(y[i]), float_bits((x[i] * (2.0f + float(round))) * 3.0f)) << round << " " << i;
        }
    }
    // Two independent streams of batches at the same time, one per session.
    a.register_buffer(own[0].src);
    a.register_buffer(own[0].dst);
    b.register_buffer(own[1].src);
    b.register_buffer(own[1].dst);
    auto loop = [](npu * s, const stream_pair * c, bool * ok) {
        *ok = true;
        for (uint32_t k = 0; k < 100 && *ok; ++k) {
            packed_batch batch = c->batch(k);
            proto::htp_opbatch_rsp rsp{};
            std::string            log;
            *ok = s->send(batch, 1).ok() && s->receive(&rsp, &log).ok() && rsp.status == proto::HTP_STATUS_OK &&
                  rsp.id == k && c->exact();
        }
    };
    bool        ok_a = false, ok_b = false;
    std::thread ta(loop, &a, &own[0], &ok_a), tb(loop, &b, &own[1], &ok_b);
    ta.join();
    tb.join();
    EXPECT_TRUE(ok_a);
    EXPECT_TRUE(ok_b);
}

TEST(SessionWindow, ExhaustionAndRemappingInAFourMiBWindow) {
    constexpr uint64_t BUF = 1280 * 1024;  // three fit in the window, four do not
    npu                n(test_options(4 * MiB), 1);
    const std::array<uint32_t, 4> ne{320, 1024, 1, 1};
    std::vector<shared_buffer>    bufs;
    for (int i = 0; i < 5; ++i) {
        bufs.emplace_back(BUF);
        n.register_buffer(bufs.back());
    }
    auto copy = [&](const shared_buffer & from, const shared_buffer & to, uint32_t id) {
        batch_builder  b;
        const uint16_t tf = b.add_f32(b.add_buffer(from, false), 0, ne);
        const uint16_t tt = b.add_f32(b.add_buffer(to, false), 0, ne);
        stream_params  p;
        p.scale      = 2.0f;
        p.block_rows = 16;
        b.add_op(stream_op(tf, tt, ne, p));
        return b.pack(id, 1, 0);
    };
    // Pairs cycle through five buffers: the window keeps unmapping idle ones and mapping others.
    for (uint32_t k = 0; k < 10; ++k) {
        const shared_buffer & from = bufs[k % 5];
        const shared_buffer & to   = bufs[(k + 1) % 5];
        fill_random(reinterpret_cast<float *>(from.data()), BUF / 4, 200 + k);
        packed_batch batch = copy(from, to, k);
        std::string  log;
        ASSERT_EQ(n.run(batch, &log).status, proto::HTP_STATUS_OK) << "batch " << k << ": " << log;
        const float * x = reinterpret_cast<const float *>(from.data());
        const float * y = reinterpret_cast<const float *>(to.data());
        for (uint64_t i = 0; i < BUF / 4; ++i) {
            ASSERT_EQ(float_bits(y[i]), float_bits(x[i] * 2.0f)) << "batch " << k << " element " << i;
        }
    }
    // Four buffers in one batch cannot fit; the session carries on afterwards.
    batch_builder b;
    for (int i = 0; i < 4; ++i) {
        b.add_buffer(bufs[i], false);
    }
    b.add_op(stream_op(b.add_f32(0, 0, ne), b.add_f32(1, 0, ne), ne, {}));
    b.add_op(stream_op(b.add_f32(2, 0, ne), b.add_f32(3, 0, ne), ne, {}));
    packed_batch too_big = b.pack(20, 1, 0);
    EXPECT_EQ(n.run(too_big).status, proto::HTP_STATUS_NO_WINDOW);
    packed_batch fits = copy(bufs[4], bufs[0], 21);
    EXPECT_EQ(n.run(fits).status, proto::HTP_STATUS_OK);
}

TEST(SessionWindow, ExplicitPinnedMappingsHoldWindowSpaceUntilUnmapped) {
    constexpr uint64_t BUF = 1280 * 1024;
    npu                n(test_options(4 * MiB), 1);
    const std::array<uint32_t, 4> ne{320, 1024, 1, 1};
    shared_buffer                 a(BUF), b(BUF), c(BUF), d(BUF);
    for (const shared_buffer * buf : {&a, &b, &c, &d}) {
        n.register_buffer(*buf);
    }
    shared_buffer unknown(BUF);
    const auto    st = n.session->mmap(unknown.fd(), BUF, true);
    EXPECT_EQ(st.code, rpc_errc::remote_error);
    EXPECT_NE(st.message.find("is not registered"), std::string::npos) << st.message;

    // a and b pinned: 2.5 MiB of the 4 MiB window, so c -> d (2.5 MiB) cannot be mapped.
    npu::expect_ok(n.session->mmap(a.fd(), BUF, true));
    npu::expect_ok(n.session->mmap(b.fd(), BUF, true));
    auto copy = [&](uint32_t id) {
        batch_builder bb;
        bb.add_buffer(c, false);
        bb.add_buffer(d, false);
        bb.add_op(stream_op(bb.add_f32(0, 0, ne), bb.add_f32(1, 0, ne), ne, {}));
        packed_batch batch = bb.pack(id, 1, 0);
        return n.run(batch).status;
    };
    EXPECT_EQ(copy(1), proto::HTP_STATUS_NO_WINDOW);
    npu::expect_ok(n.session->munmap(a.fd()));
    EXPECT_EQ(copy(2), proto::HTP_STATUS_OK);
    // Unregistering drops the window mapping too (b), and the buffer is unknown afterwards.
    npu::expect_ok(n.session->fastrpc_munmap(b.fd()));
    npu::expect_ok(n.session->mmap(a.fd(), BUF, true));
    EXPECT_EQ(copy(3), proto::HTP_STATUS_OK);
    EXPECT_EQ(n.session->fastrpc_munmap(b.fd()).code, rpc_errc::remote_error);
}

TEST(SessionStrict, ViolationComesBackWithItsMessage) {
    npu         n(test_options(), 1);
    stream_pair c({64, 4, 1, 1}, 1.0f, 3);
    n.register_buffer(c.src);
    n.register_buffer(c.dst);
    packed_batch batch = c.batch(1, 1);
    reinterpret_cast<proto::htp_test_stream_kparams *>(batch.ops()[0].kparams)->misuse =
        proto::HTP_TEST_STREAM_WRITE_AFTER_PUSH;
    std::string log;
    const auto  rsp = n.run(batch, &log);
    EXPECT_EQ(rsp.status, proto::HTP_STATUS_STRICT);
    EXPECT_EQ(rsp.failed_op, 0u);
    EXPECT_NE(log.find("VTCM source changed between push and pop"), std::string::npos) << log;

    packed_batch ok = c.batch(2, 1);
    EXPECT_EQ(n.run(ok, &log).status, proto::HTP_STATUS_OK) << log;
    EXPECT_TRUE(c.exact());
}

// ---- failures of the session process

// A healthy batch on a fresh session: what every failure test ends with.
void expect_new_session_works() {
    npu         n(test_options(), 1);
    stream_pair c({40, 5, 1, 1}, 4.0f, 9);
    n.register_buffer(c.src);
    n.register_buffer(c.dst);
    packed_batch batch = c.batch(1, 1);
    std::string  log;
    EXPECT_EQ(n.run(batch, &log).status, proto::HTP_STATUS_OK) << log;
    EXPECT_TRUE(c.exact());
}

// Sends [TEST_STREAM, <opcode> with params[0] = param] as batch 5 (the session keeps its own
// reference to the work buffer).
vnpu::rpc::rpc_status send_failing_batch(npu & n, uint32_t opcode, uint32_t param) {
    static const std::array<uint32_t, 4> ne{64, 4, 1, 1};
    shared_buffer                        work(64 * 1024);
    n.register_buffer(work);
    batch_builder      b;
    const uint16_t     bw = b.add_buffer(work, false);
    b.add_op(stream_op(b.add_f32(bw, 0, ne), b.add_f32(bw, 4096, ne), ne, {}));
    proto::htp_op_desc op = batch_builder::op(opcode, {}, {});
    op.params[0]          = int32_t(param);
    b.add_op(op);
    return n.send(b.pack(5, 1, 0), 0);
}

vnpu::rpc::rpc_status run_failing_batch(npu & n, uint32_t opcode, uint32_t param) {
    proto::htp_opbatch_rsp rsp{};
    std::string            log;
    vnpu::rpc::rpc_status  st = send_failing_batch(n, opcode, param);
    return st ? n.receive(&rsp, &log) : st;
}

// The production library (what a host gets without test_ops) has none of the test ops: no host can
// make a shipped session fault, hang or crash on purpose, or run the DMA misuse modes.
TEST(SessionFailure, TheProductionLibraryRefusesEveryTestOp) {
    vnpu::rpc::session_options o = test_options();
    o.test_ops                   = false;
    npu n(o, 1);
    for (uint32_t opcode : {uint32_t(proto::HTP_OP_TEST_STREAM), uint32_t(proto::HTP_OP_TEST_FAULT),
                            uint32_t(proto::HTP_OP_TEST_HANG), uint32_t(proto::HTP_OP_TEST_CRASH)}) {
        static const std::array<uint32_t, 4> ne{64, 4, 1, 1};
        shared_buffer                        work(64 * 1024);
        n.register_buffer(work);
        batch_builder  b;
        const uint16_t bw = b.add_buffer(work, false);
        if (opcode == proto::HTP_OP_TEST_STREAM) {
            b.add_op(stream_op(b.add_f32(bw, 0, ne), b.add_f32(bw, 4096, ne), ne, {}));
        } else {
            b.add_op(batch_builder::op(opcode, {}, {}));
        }
        proto::htp_opbatch_rsp rsp{};
        std::string            log;
        ASSERT_TRUE(n.send(b.pack(1, 1, 0), 0).ok());
        ASSERT_TRUE(n.receive(&rsp, &log).ok()) << proto::htp_op_name(opcode);
        EXPECT_EQ(rsp.status, proto::HTP_STATUS_NO_SUPPORT) << proto::htp_op_name(opcode);
        EXPECT_EQ(rsp.failed_op, 0u);
    }
}

TEST(SessionFailure, FaultNamesTheNpuAddressAndTheOp) {
    {
        npu        n(test_options(4 * MiB), 1);
        const auto st = run_failing_batch(n, proto::HTP_OP_TEST_FAULT, 0x300010);
        EXPECT_EQ(st.code, rpc_errc::session_died);
        EXPECT_NE(st.message.find("killed by SIGSEGV: NPU fault at address 0x00300010 in op 1 of batch 5"),
                  std::string::npos)
            << st.message;
        const auto info = n.session->exit_info();
        ASSERT_TRUE(info.has_value());
        EXPECT_TRUE(info->fault && info->fault_in_window);
        EXPECT_EQ(info->fault_npu_addr, 0x300010u);
        EXPECT_EQ(info->op, 1u);
        // Later calls on the dead session report the same death at once.
        vnpu::rpc::hw_info hw;
        const auto         again = n.session->hwinfo(&hw);
        EXPECT_EQ(again.code, rpc_errc::session_died);
        EXPECT_EQ(again.message, st.message);
    }
    expect_new_session_works();
}

TEST(SessionFailure, CrashNamesTheSignal) {
    {
        npu        n(test_options(), 1);
        const auto st = run_failing_batch(n, proto::HTP_OP_TEST_CRASH, 0);
        EXPECT_EQ(st.code, rpc_errc::session_died);
        EXPECT_NE(st.message.find("killed by SIGILL in op 1 of batch 5"), std::string::npos) << st.message;
    }
    expect_new_session_works();
}

TEST(SessionFailure, HangMissesTheDeadlineAndIsKilled) {
    {
        npu n(test_options(), 1);
        ASSERT_TRUE(send_failing_batch(n, proto::HTP_OP_TEST_HANG, 0).ok());
        proto::htp_opbatch_rsp rsp{};
        std::string            log;
        const auto             t0     = std::chrono::steady_clock::now();
        const auto             st     = vnpu::rpc::read_batch_response(*n.queue, &rsp, &log, 300ms);
        const auto             waited = std::chrono::steady_clock::now() - t0;
        EXPECT_EQ(st.code, rpc_errc::timeout);
        EXPECT_NE(st.message.find("missed a deadline of 300 ms waiting for a response while running op 1 of batch 5 "
                                  "and was killed"),
                  std::string::npos)
            << st.message;
        EXPECT_GE(waited, 300ms);
        EXPECT_LT(waited, 5s);
        const auto info = n.session->exit_info();
        ASSERT_TRUE(info.has_value());
        EXPECT_TRUE(info->killed_for_deadline);
        EXPECT_EQ(info->signal, SIGKILL);
    }
    {
        // The session-wide deadline applies where no other is given (here: a control call).
        vnpu::rpc::session_options o = test_options();
        o.timeout                    = 1000ms;
        npu n(o, 1);
        ASSERT_TRUE(send_failing_batch(n, proto::HTP_OP_TEST_HANG, 0).ok());
        std::this_thread::sleep_for(20ms);
        const auto st = n.session->mmap(vnpu::rpc::rpcmem_to_fd(n.opqueue), QUEUE_SLOT, false);
        EXPECT_EQ(st.code, rpc_errc::timeout);
        EXPECT_NE(st.message.find("missed a deadline of 1000 ms answering control request"), std::string::npos)
            << st.message;
    }
    expect_new_session_works();
}

TEST(SessionFailure, AProcessKilledFromOutsideIsNoticedAtOnce) {
    {
        npu n(test_options(), 1);
        ASSERT_EQ(kill(n.session->pid(), SIGKILL), 0);
        proto::htp_opbatch_rsp rsp{};
        std::string            log;
        const auto             t0 = std::chrono::steady_clock::now();
        const auto             st = n.receive(&rsp, &log);  // nothing was sent: only the death can end this
        EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
        EXPECT_EQ(st.code, rpc_errc::session_died);
        EXPECT_NE(st.message.find("was killed by SIGKILL"), std::string::npos) << st.message;
    }
    expect_new_session_works();
}

TEST(SessionFailure, SessionEndsWhenItsClientDiesEvenInAHungBatch) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t client = fork();
    if (client == 0) {
        // A client that dies without closing its session, while the session is stuck in a batch.
        npu         n(test_options(), 1);
        const pid_t session = send_failing_batch(n, proto::HTP_OP_TEST_HANG, 0).ok() ? n.session->pid() : -1;
        std::this_thread::sleep_for(20ms);
        (void) !write(fds[1], &session, sizeof session);
        kill(getpid(), SIGKILL);
    }
    close(fds[1]);
    pid_t session = -1;
    ASSERT_EQ(read(fds[0], &session, sizeof session), ssize_t(sizeof session));
    close(fds[0]);
    waitpid(client, nullptr, 0);
    ASSERT_GT(session, 0);
    // Orphaned, the session exits (it may linger as a zombie where nothing reaps orphans).
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
        const char state = stat_of(session).state;
        gone             = state == 0 || state == 'Z';
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_TRUE(gone) << "session " << session << " outlived its client";
    if (!gone) {
        kill(session, SIGKILL);
    }
}

} // namespace
