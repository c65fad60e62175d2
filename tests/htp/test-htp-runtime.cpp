// Runtime building blocks: fastdiv, the work queue, the HMX queue, trace buffers, VTCM layout,
// tensor/mdev helpers and the dirty-range bookkeeping, each against an independent reference.
#include "htp/dcache.h"
#include "core/fp16.h"
#include "htp/hmx-queue.h"
#include "htp/hmx.h"
#include "htp/htp-tensor.h"
#include "htp/trace.h"
#include "htp/vtcm.h"
#include "htp/work-queue.h"
#include "proto/fastdiv.h"
#include "proto/htp-status.h"
#include "proto/htp-trace.h"
#include "vnpu/platform/session-platform.h"

#include <gtest/gtest.h>

#include <numeric>

#include <atomic>
#include <chrono>
#include <ctime>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace {

using namespace hexnpu;

std::unique_ptr<vnpu::session_platform> make_platform(uint32_t n_hvx, uint32_t host_threads) {
    vnpu::platform_config cfg;
    cfg.window_size  = 1 << 20;
    cfg.vtcm_size    = 1 << 20;
    cfg.n_hvx        = n_hvx;
    cfg.host_threads = host_threads;
    std::string error;
    auto        p = vnpu::session_platform::create(cfg, &error);
    EXPECT_TRUE(p) << error;
    return p;
}

// ---- fastdiv

TEST(HtpFastdiv, MatchesDivisionForManyDivisors) {
    std::vector<uint32_t> divisors;
    for (uint32_t d = 1; d <= 4096; ++d) {
        divisors.push_back(d);
    }
    for (uint32_t s = 12; s < 32; ++s) {
        for (int64_t delta = -3; delta <= 3; ++delta) {
            divisors.push_back(uint32_t((int64_t(1) << s) + delta));
        }
    }
    divisors.push_back(0xffffffffu);
    divisors.push_back(0xfffffffeu);
    std::mt19937 rng(5);
    for (int i = 0; i < 2000; ++i) {
        divisors.push_back(rng() | 1);
    }
    for (uint32_t d : divisors) {
        const proto::fastdiv_values v = proto::init_fastdiv(d);
        auto check = [&](uint32_t n) {
            ASSERT_EQ(proto::fastdiv(n, v), n / d) << n << " / " << d;
            ASSERT_EQ(proto::fastmodulo(n, v), n % d) << n << " % " << d;
        };
        // Every numerator at the ends of the range, around multiples of d, and a random sample.
        for (uint32_t n = 0; n < 2048; ++n) {
            check(n);
            check(0xffffffffu - n);
        }
        for (uint64_t k = 1; k * d <= 0xffffffffu; k = k * 3 + 1) {
            check(uint32_t(k * d - 1));
            check(uint32_t(k * d));
            if (k * d < 0xffffffffu) {
                check(uint32_t(k * d + 1));
            }
        }
        for (int i = 0; i < 64; ++i) {
            check(rng());
        }
    }
}

TEST(HtpFastdiv, ExhaustiveOverAllNumeratorsForOneDivisor) {
    // 7 needs the full 33-bit magic (mp + 2^32); every 32-bit numerator.
    const proto::fastdiv_values v = proto::init_fastdiv(7);
    uint64_t                    wrong = 0;
    for (uint64_t n = 0; n <= 0xffffffffu; ++n) {
        wrong += proto::fastdiv(uint32_t(n), v) != uint32_t(n) / 7u;
    }
    EXPECT_EQ(wrong, 0u);
}

// ---- work queue

class HtpWorkQueue : public ::testing::Test {
  protected:
    void SetUp() override {
        plat = make_platform(4, 4);
        ASSERT_TRUE(htp::work_queue_start(&q, &plat->table(), 4));
    }
    void TearDown() override { htp::work_queue_stop(&q); }

    std::unique_ptr<vnpu::session_platform> plat;
    htp::work_queue                         q;
};

struct run_record {
    std::atomic<uint32_t> calls[proto::HTP_MAX_NTHREADS];
    std::thread::id       thread_of[proto::HTP_MAX_NTHREADS];
    std::atomic<uint32_t> bad_n{0};
    uint32_t              expected_n = 0;
};

void record_index(uint32_t n, uint32_t i, void * data) {
    run_record * r = static_cast<run_record *>(data);
    if (n != r->expected_n) {
        ++r->bad_n;
    }
    r->thread_of[i] = std::this_thread::get_id();
    ++r->calls[i];
}

TEST_F(HtpWorkQueue, RunsEachIndexOnceOnItsOwnThread) {
    EXPECT_EQ(q.n_threads, 4u);
    for (int round = 0; round < 500; ++round) {
        for (uint32_t n = 1; n <= 4; ++n) {
            run_record r{};
            r.expected_n = n;
            htp::work_queue_run(&q, record_index, &r, n);
            std::set<std::thread::id> threads;
            for (uint32_t i = 0; i < proto::HTP_MAX_NTHREADS; ++i) {
                ASSERT_EQ(r.calls[i].load(), i < n ? 1u : 0u) << "index " << i << " of " << n;
                if (i < n) {
                    threads.insert(r.thread_of[i]);
                }
            }
            ASSERT_EQ(r.thread_of[0], std::this_thread::get_id()) << "index 0 runs on the caller";
            ASSERT_EQ(threads.size(), n) << "one thread per index";
            ASSERT_EQ(r.bad_n.load(), 0u);
        }
    }
}

void spin_briefly(uint32_t, uint32_t i, void * data) {
    // Unequal work, so the barrier really waits for the slowest.
    volatile uint64_t x = 0;
    for (uint64_t k = 0; k < (i + 1) * 20000; ++k) {
        x = x + k;
    }
    static_cast<std::atomic<uint32_t> *>(data)->fetch_add(1);
}

TEST_F(HtpWorkQueue, ReturnsOnlyWhenAllIndicesFinished) {
    for (int round = 0; round < 50; ++round) {
        std::atomic<uint32_t> done{0};
        htp::work_queue_run(&q, spin_briefly, &done, 4);
        ASSERT_EQ(done.load(), 4u);
    }
}

double process_cpu_seconds() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

TEST_F(HtpWorkQueue, IdleWorkersSleep) {
    run_record r{};
    r.expected_n = 4;
    htp::work_queue_run(&q, record_index, &r, 4);  // the workers are up and back to idle
    const double cpu0 = process_cpu_seconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const double cpu = process_cpu_seconds() - cpu0;
    // Three spinning workers would burn ~0.6 s of CPU here.
    EXPECT_LT(cpu, 0.02) << "idle workers burn CPU";
}

// ---- HMX queue

struct hmx_log {
    std::mutex            mutex;
    std::vector<int>      order;
    std::set<std::thread::id> threads;
};

struct hmx_item {
    hmx_log * log;
    int       id;
};

void hmx_record(void * data) {
    hmx_item * item = static_cast<hmx_item *>(data);
    std::lock_guard lock(item->log->mutex);
    item->log->order.push_back(item->id);
    item->log->threads.insert(std::this_thread::get_id());
}

TEST(HtpHmxQueue, RunsJobsInOrderOnOneOwnerThread) {
    auto           plat = make_platform(4, 4);
    htp::hmx_queue q;
    ASSERT_TRUE(htp::hmx_queue_start(&q, &plat->table()));
    hmx_log               log;
    std::vector<hmx_item> items(200);
    int                   next_pop = 0;
    for (int i = 0; i < 200; ++i) {
        items[i] = {&log, i};
        while (!htp::hmx_queue_push(&q, hmx_record, &items[i])) {
            ASSERT_EQ(htp::hmx_queue_depth(&q), htp::HMX_QUEUE_CAPACITY) << "push fails only when full";
            ASSERT_TRUE(htp::hmx_queue_pop(&q));
            std::lock_guard lock(log.mutex);
            ASSERT_GT(int(log.order.size()), next_pop++) << "pop returned before its job ran";
        }
    }
    while (htp::hmx_queue_pop(&q)) {
    }
    EXPECT_FALSE(htp::hmx_queue_pop(&q));
    htp::hmx_queue_stop(&q);
    ASSERT_EQ(log.order.size(), 200u);
    for (int i = 0; i < 200; ++i) {
        ASSERT_EQ(log.order[i], i);
    }
    EXPECT_EQ(log.threads.size(), 1u);
    EXPECT_EQ(log.threads.count(std::this_thread::get_id()), 0u) << "jobs run on the owner thread";
}

// The HMX queue thread owns the session's HMX unit: its jobs multiply tiles in VTCM; the same call
// from any other thread breaks a hardware rule, which the next op_done reports as STRICT.
struct hmx_matmul_job {
    htp::hmx_unit * unit;
    const void *    act;
    const void *    wt;
    const void *    scale_bias;
    void *          out;
    htp::hmx_status status[3];
};

void hmx_matmul(void * data) {
    hmx_matmul_job * j = static_cast<hmx_matmul_job *>(data);
    j->status[0]       = htp::hmx_set_scale_bias(j->unit, j->scale_bias);
    j->status[1]       = htp::hmx_mac_fp16(j->unit, j->act, j->wt, 1);
    j->status[2]       = htp::hmx_store_fp16(j->unit, j->out);
}

TEST(HtpHmxQueue, OwnsTheSessionsHmxUnit) {
    auto                  plat = make_platform(2, 2);
    const htp::platform & t    = plat->table();
    ASSERT_NE(t.hmx_unit, nullptr);
    htp::hmx_queue q;
    ASSERT_TRUE(htp::hmx_queue_start(&q, &t));

    // A[m][k] = (m + k) % 5 - 2 and W = 2 * identity, so C = 2 * A exactly (tiles at VTCM offsets
    // 0, 2048, 8192; the scale/bias block at 4096: scale 1.0, bias 0, reserved half zero).
    auto * act = reinterpret_cast<uint16_t *>(t.vtcm_base);
    auto * wt  = reinterpret_cast<uint16_t *>(t.vtcm_base + 2048);
    auto * sb  = reinterpret_cast<uint32_t *>(t.vtcm_base + 4096);
    auto * out = reinterpret_cast<uint16_t *>(t.vtcm_base + 8192);
    for (uint32_t i = 0; i < 32; ++i) {
        for (uint32_t j = 0; j < 32; ++j) {
            act[htp::hmx_act_index(i, j)] = fp32_to_fp16(float(int((i + j) % 5) - 2));
            wt[htp::hmx_wt_index(i, j)]   = fp32_to_fp16(i == j ? 2.0f : 0.0f);
        }
        sb[i]      = htp::hmx_scale_bias_word(0x3C00, 0);
        sb[32 + i] = 0;
    }
    hmx_matmul_job job{static_cast<htp::hmx_unit *>(t.hmx_unit), act, wt, sb, out, {}};
    ASSERT_TRUE(htp::hmx_queue_push(&q, hmx_matmul, &job));
    ASSERT_TRUE(htp::hmx_queue_pop(&q));
    for (htp::hmx_status st : job.status) {
        EXPECT_EQ(st, htp::HMX_OK);
    }
    for (uint32_t m = 0; m < 32; ++m) {
        for (uint32_t n = 0; n < 32; ++n) {
            ASSERT_EQ(fp16_to_fp32(out[htp::hmx_out_index(m, n)]), 2.0f * float(int((m + n) % 5) - 2)) << m << "," << n;
        }
    }
    EXPECT_EQ(t.op_done(t.ctx), proto::HTP_STATUS_OK);

    // The test thread is not the owner: the call does nothing and the next op_done says why.
    EXPECT_EQ(htp::hmx_mac_fp16(job.unit, act, wt, 1), htp::HMX_ERR_NOT_OWNER);
    EXPECT_EQ(t.op_done(t.ctx), proto::HTP_STATUS_STRICT);
    EXPECT_NE(plat->last_violation().find("does not hold"), std::string::npos) << plat->last_violation();

    // op_done reset the unit: the owner's next job works again.
    job.status[0] = job.status[1] = job.status[2] = htp::HMX_ERR_FAULTED;
    ASSERT_TRUE(htp::hmx_queue_push(&q, hmx_matmul, &job));
    ASSERT_TRUE(htp::hmx_queue_pop(&q));
    EXPECT_EQ(job.status[2], htp::HMX_OK);
    EXPECT_EQ(t.op_done(t.ctx), proto::HTP_STATUS_OK);
    htp::hmx_queue_stop(&q);
}

// ---- trace buffers

class HtpTrace : public ::testing::Test {
  protected:
    void SetUp() override { plat = make_platform(1, 1); }
    std::unique_ptr<vnpu::session_platform> plat;
};

TEST_F(HtpTrace, RecordsStartAndStopWithTheStopBit) {
    proto::htp_trace_desc events[8];
    htp::trace_buf        tb;
    htp::trace_reset(&tb, &plat->table(), events, 8);
    htp::trace_event_start(&tb, proto::HTP_TRACE_EVT_HVX_COMP, 0x1234);
    htp::trace_event_stop(&tb, proto::HTP_TRACE_EVT_HVX_COMP, 0x1234);
    htp::trace_event_start(&tb, proto::HTP_TRACE_EVT_DMA, 0xfedc);  // all 16 info bits survive
    htp::trace_event_stop(&tb, proto::HTP_TRACE_EVT_DMA, 0xfedc);
    ASSERT_EQ(tb.count, 4u);
    EXPECT_EQ(events[0].id, proto::HTP_TRACE_EVT_HVX_COMP);
    EXPECT_EQ(events[0].info, 0x1234);
    EXPECT_EQ(events[1].id, proto::HTP_TRACE_EVT_HVX_COMP | proto::HTP_TRACE_STOP);
    EXPECT_EQ(events[1].info, 0x1234);
    EXPECT_LE(events[0].cycles, events[1].cycles);
    EXPECT_EQ(events[2].id, proto::HTP_TRACE_EVT_DMA);
    EXPECT_EQ(events[2].info, 0xfedc);
    EXPECT_EQ(events[3].id, proto::HTP_TRACE_EVT_DMA | proto::HTP_TRACE_STOP);
    EXPECT_EQ(events[3].info, 0xfedc);
    EXPECT_EQ(htp::trace_info(70000), 0xffff) << "a large progress index saturates";
    EXPECT_EQ(htp::trace_info(65534), 65534);
}

TEST_F(HtpTrace, FullBufferDropsAndCountsButKeepsPairs) {
    // Capacity 5: a start is only kept while its stop (and all owed stops) still fit.
    proto::htp_trace_desc events[5];
    htp::trace_buf        tb;
    htp::trace_reset(&tb, &plat->table(), events, 5);
    for (uint16_t i = 0; i < 4; ++i) {  // four overlapping DMA transfers, popped FIFO
        htp::trace_event_start(&tb, proto::HTP_TRACE_EVT_DMA, i);
    }
    for (uint16_t i = 0; i < 4; ++i) {
        htp::trace_event_stop(&tb, proto::HTP_TRACE_EVT_DMA, i);
    }
    ASSERT_EQ(tb.count, 4u);  // two pairs
    EXPECT_EQ(tb.dropped, 4u);
    EXPECT_EQ(events[0].info, 0);
    EXPECT_EQ(events[1].info, 1);
    EXPECT_EQ(events[2].info, 0);
    EXPECT_EQ(events[2].id, proto::HTP_TRACE_EVT_DMA | proto::HTP_TRACE_STOP);
    EXPECT_EQ(events[3].info, 1);
    EXPECT_EQ(events[3].id, proto::HTP_TRACE_EVT_DMA | proto::HTP_TRACE_STOP);
}

TEST_F(HtpTrace, DisabledBufferRecordsNothing) {
    htp::trace_buf tb;
    htp::trace_reset(&tb, &plat->table(), nullptr, 0);
    htp::trace_event_start(&tb, proto::HTP_TRACE_EVT_DMA, 1);
    htp::trace_event_stop(&tb, proto::HTP_TRACE_EVT_DMA, 1);
    EXPECT_EQ(tb.count, 0u);
    EXPECT_EQ(tb.dropped, 0u);
}

// ---- VTCM layout

TEST(HtpVtcmArena, AlignsAndBoundsEveryArea) {
    alignas(128) static uint8_t vtcm[4096];
    htp::vtcm_arena             a(vtcm, 4096);
    uint8_t *                   x = a.take(100);
    uint8_t *                   y = a.take(200, 3);
    EXPECT_EQ(x, vtcm);
    EXPECT_EQ(y, vtcm + 128);
    EXPECT_EQ(a.used(), 128u + 3 * 256);
    EXPECT_NE(a.take(4096 - a.used()), nullptr);  // exactly the rest
    EXPECT_TRUE(a.ok());
    EXPECT_EQ(a.take(1), nullptr);
    EXPECT_FALSE(a.ok());
    EXPECT_EQ(a.take(0), nullptr) << "a failed layout stays failed";
}

TEST(HtpVtcmArena, HugeRequestsFailWithoutWrapping) {
    alignas(128) static uint8_t vtcm[4096];
    htp::vtcm_arena             a(vtcm, 4096);
    EXPECT_EQ(a.take(uint64_t(1) << 62, 4), nullptr);
    htp::vtcm_arena b(vtcm, 4096);
    EXPECT_EQ(b.take(128, 0x80000000u), nullptr);
    EXPECT_FALSE(b.ok());
}

// ---- tensor helpers

proto::htp_tensor f32_tensor(std::array<uint32_t, 4> ne, std::array<uint32_t, 4> nb, uint64_t data = 0) {
    proto::htp_tensor t{};
    t.data = data;
    for (int d = 0; d < 4; ++d) {
        t.ne[d] = ne[d];
        t.nb[d] = nb[d];
    }
    return t;
}

TEST(HtpTensor, ContiguityAndExtent) {
    const proto::htp_tensor packed = f32_tensor({5, 3, 2, 2}, {4, 20, 60, 120});
    EXPECT_TRUE(htp::htp_tensor_is_contiguous(&packed, 4));
    EXPECT_EQ(htp::htp_tensor_extent(&packed, 4), 240u);
    EXPECT_EQ(htp::htp_tensor_nrows(&packed), 12u);
    const proto::htp_tensor padded = f32_tensor({5, 3, 2, 2}, {4, 32, 96, 192});
    EXPECT_FALSE(htp::htp_tensor_is_contiguous(&padded, 4));
    EXPECT_EQ(htp::htp_tensor_extent(&padded, 4), 192u + 96 + 64 + 16 + 4);
}

TEST(HtpTensor, MdevRowsPerChunk) {
    uint32_t rpc = 0;
    // Rows of 100 floats packed: 400 bytes, gcd(400, 128) = 16, so 8 rows make 3200 = 25 lines.
    proto::htp_tensor t = f32_tensor({100, 64, 1, 1}, {4, 400, 25600, 25600});
    EXPECT_TRUE(htp::htp_tensor_mdev_rows_per_chunk(&t, 4, 400, &rpc));
    EXPECT_EQ(rpc, 8u);
    // Line-aligned row stride: every row may go to another device.
    t = f32_tensor({100, 64, 1, 1}, {4, 512, 32768, 32768});
    EXPECT_TRUE(htp::htp_tensor_mdev_rows_per_chunk(&t, 4, 400, &rpc));
    EXPECT_EQ(rpc, 1u);
    // Unaligned base, permuted elements, or padded slices of packed rows that chunks would straddle.
    t = f32_tensor({100, 64, 1, 1}, {4, 400, 25600, 25600}, 64);
    EXPECT_FALSE(htp::htp_tensor_mdev_rows_per_chunk(&t, 4, 400, &rpc));
    EXPECT_EQ(rpc, 0u);
    t = f32_tensor({100, 64, 1, 1}, {256, 4, 25600, 25600});
    EXPECT_FALSE(htp::htp_tensor_mdev_rows_per_chunk(&t, 4, 400, &rpc));
    t = f32_tensor({100, 6, 2, 1}, {4, 400, 2560, 5120});  // 6 rows per slice, chunks of 8
    EXPECT_FALSE(htp::htp_tensor_mdev_rows_per_chunk(&t, 4, 400, &rpc));
    t = f32_tensor({100, 16, 2, 1}, {4, 400, 6528, 13056});  // 16 rows per slice, aligned padded slices
    EXPECT_TRUE(htp::htp_tensor_mdev_rows_per_chunk(&t, 4, 400, &rpc));
    EXPECT_EQ(rpc, 8u);
}

TEST(HtpTensor, MdevRowsPerChunkKeepsDevicesOffEachOthersLines) {
    // Property: for every accepted layout, each chunk boundary row starts on a 128-byte line.
    std::mt19937 rng(11);
    int          accepted = 0;
    for (int iter = 0; iter < 3000; ++iter) {
        const uint32_t ne0 = 1 + rng() % 80, ne1 = 1 + rng() % 40, ne2 = 1 + rng() % 4;
        const uint32_t row = ne0 * 4;
        const uint32_t nb1 = row + 4 * (rng() % 3 == 0 ? rng() % 40 : 0);
        const uint32_t nb2 = ne1 * nb1 + 4 * (rng() % 3 == 0 ? rng() % 64 : 0);
        proto::htp_tensor t = f32_tensor({ne0, ne1, ne2, 1}, {4, nb1, nb2, nb2 * ne2}, 128 * (rng() % 4));
        uint32_t           rpc = 0;
        if (!htp::htp_tensor_mdev_rows_per_chunk(&t, 4, row, &rpc)) {
            continue;
        }
        ++accepted;
        for (uint32_t r = 0; r < ne1 * ne2; r += rpc) {
            const uint64_t addr = t.data + uint64_t(r % ne1) * nb1 + uint64_t(r / ne1) * nb2;
            ASSERT_EQ(addr % 128, 0u) << "ne0 " << ne0 << " ne1 " << ne1 << " nb1 " << nb1 << " nb2 " << nb2;
        }
    }
    EXPECT_GT(accepted, 300);
}

// Packed rows per 128-byte-aligned chunk: the spec's 128 / gcd(row_size, 128), for every row size.
TEST(HtpTensor, LineRowsIs128OverTheGcd) {
    for (uint32_t row_size = 1; row_size <= 8192; ++row_size) {
        ASSERT_EQ(htp::htp_line_rows(row_size), 128u / std::gcd(row_size, 128u)) << row_size;
    }
}

TEST(HtpTensor, MdevPartitionCoversEveryUnitOnce) {
    for (uint32_t count = 1; count <= 6; ++count) {
        const proto::fastdiv_values div = proto::init_fastdiv(count);
        for (uint32_t total = 0; total <= 300; ++total) {
            for (uint32_t upc : {0u, 1u, 2u, 8u, 32u, 128u}) {  // 0 or a power of two (the line rules')
                const uint64_t chunks   = upc == 0 ? 0 : (total + upc - 1) / upc;
                const bool     fallback = chunks < count;
                uint32_t       next     = 0;
                for (uint32_t idx = 0; idx < count; ++idx) {
                    const htp::htp_tensor_mdev_range r = htp::htp_tensor_mdev_partition(total, upc, idx, count, &div);
                    if (r.count == 0) {
                        continue;
                    }
                    ASSERT_EQ(r.start, next) << "total " << total << " upc " << upc << " idx " << idx;
                    if (idx + 1 < count && !fallback) {
                        ASSERT_EQ((r.start + r.count) % upc, 0u) << "a split inside a chunk";
                    }
                    next = r.start + r.count;
                }
                ASSERT_EQ(next, total) << "total " << total << " upc " << upc << " count " << count;
                if (fallback) {  // device 0 takes everything
                    ASSERT_EQ(htp::htp_tensor_mdev_partition(total, upc, 0, count, &div).count, total);
                }
            }
        }
    }
}

// ---- dirty ranges

class HtpDcache : public ::testing::Test {
  protected:
    void SetUp() override {
        plat = make_platform(1, 1);
        htp::dcache_reset(&d, &plat->table());
        htp::trace_reset(&tb, &plat->table(), events, 64);
    }
    proto::htp_tensor input(uint64_t addr, uint64_t size, uint32_t flags) {
        proto::htp_tensor t{};
        t.data  = addr;
        t.size  = size;
        t.flags = flags;
        return t;
    }

    std::unique_ptr<vnpu::session_platform> plat;
    htp::dcache_tracker                     d;
    proto::htp_trace_desc                   events[64];
    htp::trace_buf                          tb;
};

TEST_F(HtpDcache, MergesOverlappingAndTouchingRanges) {
    htp::dcache_mark_dirty(&d, 1000, 100, &tb);
    htp::dcache_mark_dirty(&d, 3000, 100, &tb);
    htp::dcache_mark_dirty(&d, 1100, 50, &tb);   // touches the first
    htp::dcache_mark_dirty(&d, 1140, 1900, &tb); // bridges to the second
    ASSERT_EQ(d.count, 1u);
    EXPECT_EQ(d.ranges[0].start, 1000u);
    EXPECT_EQ(d.ranges[0].end, 3100u);
}

TEST_F(HtpDcache, FlushesOnlyComputeInputsThatOverlapDirtyRanges) {
    htp::dcache_mark_dirty(&d, 4096, 4096, &tb);
    htp::dcache_mark_dirty(&d, 65536, 128, &tb);
    proto::htp_tensor weight = input(4096, 4096, 0);
    htp::dcache_flush_input(&d, &weight, &tb);  // weights are never written by ops
    EXPECT_EQ(plat->dcache_flush_calls(), 0u);
    proto::htp_tensor apart = input(16384, 4096, proto::HTP_TENSOR_COMPUTE);
    htp::dcache_flush_input(&d, &apart, &tb);
    EXPECT_EQ(plat->dcache_flush_calls(), 0u);
    proto::htp_tensor act = input(8000, 200, proto::HTP_TENSOR_COMPUTE);
    htp::dcache_flush_input(&d, &act, &tb);
    EXPECT_EQ(plat->dcache_flush_calls(), 1u);
    EXPECT_EQ(plat->dcache_flush_bytes(), 4096u);
    ASSERT_EQ(d.count, 1u);
    EXPECT_EQ(d.ranges[0].start, 65536u);
    ASSERT_EQ(tb.count, 2u);
    EXPECT_EQ(events[0].id, proto::HTP_TRACE_EVT_L2FLUSH);
    EXPECT_EQ(events[0].info, 4u) << "the KiB flushed";
}

TEST_F(HtpDcache, FlushDirtyEmptiesTheTable) {
    htp::dcache_mark_dirty(&d, 0, 1000, &tb);
    htp::dcache_mark_dirty(&d, 5000, 1000, &tb);
    htp::dcache_flush_dirty(&d, &tb);
    EXPECT_EQ(d.count, 0u);
    EXPECT_EQ(plat->dcache_flush_calls(), 2u);
    EXPECT_EQ(plat->dcache_flush_bytes(), 2000u);
    // Large dirty totals take one whole-cache flush instead.
    htp::dcache_mark_dirty(&d, 0, htp::DCACHE_FLUSH_ALL_BYTES + 1, &tb);
    htp::dcache_flush_dirty(&d, &tb);
    EXPECT_EQ(plat->dcache_flush_all_calls(), 1u);
    EXPECT_EQ(plat->dcache_flush_calls(), 2u);
}

TEST_F(HtpDcache, FullTableFlushesToMakeRoom) {
    for (uint32_t i = 0; i < htp::DCACHE_MAX_DIRTY + 3; ++i) {
        htp::dcache_mark_dirty(&d, uint64_t(i) * 1024, 128, &tb);
    }
    EXPECT_EQ(d.count, htp::DCACHE_MAX_DIRTY);
    EXPECT_EQ(plat->dcache_flush_calls(), 3u);
}

} // namespace
