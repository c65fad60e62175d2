// The DMA queue over the strict virtual DMA engine: FIFO order, tokens, 1-D/2-D strided transfers,
// the arch's descriptor widths, and every strict-mode DMA rule with a case that breaks it.
#include "htp/dma-queue.h"
#include "proto/htp-status.h"
#include "vnpu/platform/session-platform.h"
#include "vnpu/platform/shared-buffer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

namespace {

using namespace hexnpu;
using htp::dma_addr_of;
using htp::dma_ptr_pair;
using htp::dma_queue;

constexpr uint64_t MiB = 1 << 20;

// A platform with one shared buffer mapped into its window and a DMA queue on hardware queue 0.
class HtpDmaQueue : public ::testing::Test {
  protected:
    void open(uint32_t arch, uint64_t ddr_size = 4 * MiB, bool strict = true) {
        vnpu::platform_config cfg;
        cfg.arch        = arch;
        cfg.window_size = 16 * MiB;
        cfg.vtcm_size   = 1 * MiB;
        cfg.strict      = strict;
        cfg.log         = [this](int, const std::string & m) { log += m + "\n"; };
        std::string error;
        plat            = vnpu::session_platform::create(cfg, &error);
        ASSERT_TRUE(plat) << error;
        ddr = std::make_unique<vnpu::shared_buffer>(ddr_size);
        ASSERT_EQ(table().map_buffer(table().ctx, ddr->fd(), ddr->size(), &ddr_npu), 0);
        htp::dma_queue_init(&q, &table(), 0);
        for (uint64_t i = 0; i < ddr_size; ++i) {
            ddr->data()[i] = uint8_t(i * 7 + i / 251);
        }
    }
    void SetUp() override { open(79); }

    const htp::platform & table() { return plat->table(); }
    uint8_t *             vtcm() { return table().vtcm_base; }
    // The session's view of the shared buffer: window base + its NPU address.
    uint8_t *             ddr_npu_ptr() { return table().window_base + ddr_npu; }
    uint32_t              op_done() { return table().op_done(table().ctx); }

    std::unique_ptr<vnpu::session_platform> plat;
    std::unique_ptr<vnpu::shared_buffer>    ddr;
    uint32_t                                ddr_npu = 0;
    dma_queue                               q;
    std::string                             log;
};

TEST_F(HtpDmaQueue, PopsInPushOrderIncludingTokens) {
    // Interleave real transfers and zero-row tokens; pops must return them oldest first.
    std::vector<dma_ptr_pair> pushed;
    for (uint32_t i = 0; i < 12; ++i) {
        const dma_ptr_pair p{dma_addr_of(vtcm() + 256 * i), dma_addr_of(ddr_npu_ptr() + 512 * i)};
        const uint32_t     nrows = i % 3 == 0 ? 0 : 1;  // every third is a token
        ASSERT_TRUE(htp::dma_queue_push(&q, p, 128, 128, 128, nrows, uint16_t(i)));
        pushed.push_back(p);
    }
    EXPECT_EQ(htp::dma_queue_depth(&q), 12u);
    for (const dma_ptr_pair & p : pushed) {
        const dma_ptr_pair got = htp::dma_queue_pop(&q);
        EXPECT_EQ(got.dst, p.dst);
        EXPECT_EQ(got.src, p.src);
    }
    EXPECT_TRUE(htp::dma_queue_empty(&q));
    const dma_ptr_pair none = htp::dma_queue_pop(&q);
    EXPECT_EQ(none.dst, 0u);
    EXPECT_EQ(none.src, 0u);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_OK);
}

TEST_F(HtpDmaQueue, TokensTouchNothing) {
    std::memset(vtcm(), 0x11, 256);
    ASSERT_TRUE(htp::dma_queue_push(&q, {dma_addr_of(vtcm()), dma_addr_of(ddr_npu_ptr())}, 128, 128, 128, 0, 0));
    for (int i = 0; i < 256; ++i) {
        ASSERT_EQ(vtcm()[i], 0x11) << "a token must not poison its destination";
    }
    htp::dma_queue_pop(&q);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_OK);
}

TEST_F(HtpDmaQueue, CapacityIsEnforced) {
    EXPECT_EQ(htp::dma_queue_capacity(&q), htp::DMA_QUEUE_CAPACITY);
    for (uint32_t i = 0; i < htp::DMA_QUEUE_CAPACITY; ++i) {
        ASSERT_TRUE(htp::dma_queue_push(&q, {dma_addr_of(vtcm()), dma_addr_of(vtcm())}, 0, 0, 0, 0, 0));
    }
    // The refused push is not dropped silently: the op sees false, the queue counts it (the batch
    // loop turns that into STRICT) and the reason is logged once.
    EXPECT_FALSE(htp::dma_queue_push(&q, {dma_addr_of(vtcm()), dma_addr_of(vtcm())}, 0, 0, 0, 0, 0));
    EXPECT_FALSE(htp::dma_queue_push(&q, {dma_addr_of(vtcm()), dma_addr_of(vtcm())}, 0, 0, 0, 0, 0));
    EXPECT_EQ(q.overflows, 2u);
    EXPECT_EQ(log, "htp: DMA push on a full queue (every ring entry in flight): transfer not queued\n");
    htp::dma_queue_flush(&q);
    EXPECT_TRUE(htp::dma_queue_empty(&q));
    htp::dma_queue_reset(&q);
    EXPECT_EQ(q.overflows, 0u);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_OK);
}

// HEXNPU_STRICT=0 (benchmarks only): no poison and no snapshots, every transfer copied at submit
// (deferring DDR -> VTCM copies behind a prefetch measured slower here). Descriptors are still
// validated.
TEST_F(HtpDmaQueue, StrictOffSkipsPoisonAndStillValidates) {
    open(79, 4 * MiB, false);
    std::memset(vtcm(), 0x11, 1024);
    ASSERT_TRUE(htp::dma_queue_push_ddr_to_vtcm(&q, dma_addr_of(vtcm()), dma_addr_of(ddr_npu_ptr()), 256, 256, 256, 4,
                                                0));
    EXPECT_EQ(std::memcmp(vtcm(), ddr_npu_ptr(), 1024), 0) << "landed at its push, never poisoned";
    htp::dma_queue_pop(&q);
    std::memset(vtcm() + 4096, 0x22, 512);
    ASSERT_TRUE(htp::dma_queue_push_vtcm_to_ddr(&q, dma_addr_of(ddr_npu_ptr() + 8192), dma_addr_of(vtcm() + 4096), 512,
                                                512, 512, 1, 0));
    EXPECT_EQ(ddr_npu_ptr()[8192 + 511], 0x22) << "a writeback lands at its push";
    htp::dma_queue_pop(&q);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_OK);
    EXPECT_FALSE(htp::dma_queue_push(&q, {dma_addr_of(ddr_npu_ptr()), dma_addr_of(ddr_npu_ptr() + 4096)}, 64, 64, 64,
                                     1, 0));
    htp::dma_queue_pop(&q);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_STRICT) << "DDR to DDR is still refused";
}

TEST_F(HtpDmaQueue, OneDimensionalRoundTrip) {
    const uint32_t size = 100000;
    ASSERT_TRUE(htp::dma_queue_push_ddr_to_vtcm(&q, dma_addr_of(vtcm()), dma_addr_of(ddr_npu_ptr() + 3), size, size,
                                                size, 1, 0));
    htp::dma_queue_pop(&q);
    EXPECT_EQ(std::memcmp(vtcm(), ddr->data() + 3, size), 0);
    ASSERT_TRUE(htp::dma_queue_push_vtcm_to_ddr(&q, dma_addr_of(ddr_npu_ptr() + 2 * MiB + 1), dma_addr_of(vtcm()), size,
                                                size, size, 1, 0));
    htp::dma_queue_pop(&q);
    EXPECT_EQ(std::memcmp(ddr->data() + 2 * MiB + 1, ddr->data() + 3, size), 0);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_OK);
}

TEST_F(HtpDmaQueue, TwoDimensionalTransfersHonourBothStrides) {
    // 9 rows of 200 bytes: DDR rows 333 bytes apart into VTCM rows 256 bytes apart, and back out
    // to DDR rows 1000 bytes apart. Bytes between rows must stay untouched.
    const uint32_t row = 200, nrows = 9, ddr_stride = 333, vtcm_stride = 256, out_stride = 1000;
    std::memset(vtcm(), 0x3C, vtcm_stride * nrows);
    uint8_t * out = ddr->data() + 3 * MiB;
    std::memset(out, 0x5A, out_stride * nrows);

    ASSERT_TRUE(htp::dma_queue_push_ddr_to_vtcm(&q, dma_addr_of(vtcm()), dma_addr_of(ddr_npu_ptr() + 17), vtcm_stride,
                                                ddr_stride, row, nrows, 0));
    htp::dma_queue_pop(&q);
    ASSERT_TRUE(htp::dma_queue_push_vtcm_to_ddr(&q, dma_addr_of(ddr_npu_ptr() + 3 * MiB), dma_addr_of(vtcm()),
                                                out_stride, vtcm_stride, row, nrows, 0));
    htp::dma_queue_pop(&q);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_OK);

    for (uint32_t r = 0; r < nrows; ++r) {
        for (uint32_t b = 0; b < vtcm_stride; ++b) {
            const uint8_t want = b < row ? ddr->data()[17 + r * ddr_stride + b] : 0x3C;
            ASSERT_EQ(vtcm()[r * vtcm_stride + b], want) << "vtcm row " << r << " byte " << b;
        }
        for (uint32_t b = 0; b < out_stride; ++b) {
            const uint8_t want = b < row ? ddr->data()[17 + r * ddr_stride + b] : 0x5A;
            ASSERT_EQ(out[r * out_stride + b], want) << "ddr row " << r << " byte " << b;
        }
    }
}

// ---- Strict rule: a destination is poisoned at push and filled no later than its pop.

TEST_F(HtpDmaQueue, ReadBeforePopSeesPoison) {
    const uint32_t size = 4096;
    ASSERT_TRUE(htp::dma_queue_push_ddr_to_vtcm(&q, dma_addr_of(vtcm()), dma_addr_of(ddr_npu_ptr()), size, size, size,
                                                1, 0));
    std::vector<uint8_t> early(vtcm(), vtcm() + size);
    htp::dma_queue_pop(&q);
    for (uint32_t i = 0; i < size; ++i) {
        ASSERT_EQ(early[i], vnpu::DMA_POISON) << "byte " << i << " readable before the pop";
    }
    EXPECT_EQ(std::memcmp(vtcm(), ddr->data(), size), 0);

    // The same holds for a DDR destination.
    ASSERT_TRUE(htp::dma_queue_push_vtcm_to_ddr(&q, dma_addr_of(ddr_npu_ptr() + MiB), dma_addr_of(vtcm()), size, size,
                                                size, 1, 0));
    EXPECT_EQ(ddr->data()[MiB + 100], vnpu::DMA_POISON);
    htp::dma_queue_pop(&q);
    EXPECT_EQ(std::memcmp(ddr->data() + MiB, ddr->data(), size), 0);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_OK);
}

TEST_F(HtpDmaQueue, DdrSourceIsReadAtPush) {
    // The engine may read a DDR source any time before the pop; it reads it at push.
    const uint32_t size = 512;
    std::vector<uint8_t> before(ddr->data(), ddr->data() + size);
    ASSERT_TRUE(htp::dma_queue_push_ddr_to_vtcm(&q, dma_addr_of(vtcm()), dma_addr_of(ddr_npu_ptr()), size, size, size,
                                                1, 0));
    std::memset(ddr->data(), 0, size);
    htp::dma_queue_pop(&q);
    EXPECT_EQ(std::memcmp(vtcm(), before.data(), size), 0);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_OK);
}

// ---- Strict rule: a VTCM source must not change between push and pop.

TEST_F(HtpDmaQueue, VtcmSourceModifiedInFlightIsStrict) {
    std::memset(vtcm() + 1024, 0x42, 1024);
    ASSERT_TRUE(htp::dma_queue_push_vtcm_to_ddr(&q, dma_addr_of(ddr_npu_ptr() + 4096), dma_addr_of(vtcm() + 1024),
                                                1024, 1024, 1024, 1, 0));
    vtcm()[1024 + 700] = 0x43;
    htp::dma_queue_pop(&q);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_STRICT);
    const std::string why = plat->last_violation();
    EXPECT_NE(why.find("VTCM source changed"), std::string::npos) << why;
    EXPECT_NE(why.find("queue 0"), std::string::npos) << why;
    EXPECT_NE(why.find("src vtcm+0x400"), std::string::npos) << why;
    char dst_name[32];
    std::snprintf(dst_name, sizeof dst_name, "dst npu 0x%x", ddr_npu + 4096);
    EXPECT_NE(why.find(dst_name), std::string::npos) << why;
    // Reported once: the next op starts clean.
    EXPECT_EQ(op_done(), proto::HTP_STATUS_OK);
}

TEST_F(HtpDmaQueue, UnchangedVtcmSourceIsFine) {
    std::memset(vtcm(), 0x42, 1024);
    ASSERT_TRUE(htp::dma_queue_push_vtcm_to_ddr(&q, dma_addr_of(ddr_npu_ptr()), dma_addr_of(vtcm()), 1024, 1024, 1024,
                                                1, 0));
    vtcm()[2000] = 0x43;  // outside the source rows
    htp::dma_queue_pop(&q);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_OK);
}

// ---- Strict rule: one side in VTCM, the other inside a mapped window buffer.

TEST_F(HtpDmaQueue, BothSidesInDdrIsStrict) {
    EXPECT_FALSE(htp::dma_queue_push(&q, {dma_addr_of(ddr_npu_ptr()), dma_addr_of(ddr_npu_ptr() + MiB)}, 64, 64, 64, 1,
                                     0));
    htp::dma_queue_pop(&q);  // the entry is queued all the same, so the pipeline's pops stay paired
    EXPECT_EQ(op_done(), proto::HTP_STATUS_STRICT);
    EXPECT_NE(plat->last_violation().find("neither side in VTCM"), std::string::npos) << plat->last_violation();
}

TEST_F(HtpDmaQueue, BothSidesInVtcmIsStrict) {
    EXPECT_FALSE(htp::dma_queue_push(&q, {dma_addr_of(vtcm()), dma_addr_of(vtcm() + 4096)}, 64, 64, 64, 1, 0));
    htp::dma_queue_pop(&q);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_STRICT);
    EXPECT_NE(plat->last_violation().find("both sides in VTCM"), std::string::npos) << plat->last_violation();
}

TEST_F(HtpDmaQueue, UnmappedDdrSideIsStrict) {
    // Past the mapped buffer, inside the window: unmapped.
    uint8_t * unmapped = ddr_npu_ptr() + ddr->size() + 4096;
    EXPECT_FALSE(htp::dma_queue_push_ddr_to_vtcm(&q, dma_addr_of(vtcm()), dma_addr_of(unmapped), 64, 64, 64, 1, 0));
    htp::dma_queue_pop(&q);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_STRICT);
    EXPECT_NE(plat->last_violation().find("DDR side not inside a mapped window buffer"), std::string::npos);

    // A DDR side that starts in the buffer and runs past its end.
    EXPECT_FALSE(htp::dma_queue_push_vtcm_to_ddr(&q, dma_addr_of(ddr_npu_ptr() + ddr->size() - 100),
                                                 dma_addr_of(vtcm()), 128, 128, 128, 1, 0));
    htp::dma_queue_pop(&q);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_STRICT);

    // A buffer unmapped since: its old addresses are no longer a DDR side.
    ASSERT_EQ(table().unmap_buffer(table().ctx, ddr_npu, ddr->size()), 0);
    EXPECT_FALSE(htp::dma_queue_push_ddr_to_vtcm(&q, dma_addr_of(vtcm()), dma_addr_of(ddr_npu_ptr()), 64, 64, 64, 1, 0));
    htp::dma_queue_pop(&q);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_STRICT);

    // Host memory outside the window is not DDR the session can reach either.
    std::vector<uint8_t> host(256);
    EXPECT_FALSE(htp::dma_queue_push_ddr_to_vtcm(&q, dma_addr_of(vtcm()), dma_addr_of(host.data()), 64, 64, 64, 1, 0));
    htp::dma_queue_pop(&q);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_STRICT);
}

TEST_F(HtpDmaQueue, RejectedDescriptorMovesNoData) {
    std::memset(vtcm(), 0x11, 64);
    uint8_t * unmapped = ddr_npu_ptr() + ddr->size() + 4096;
    EXPECT_FALSE(htp::dma_queue_push_ddr_to_vtcm(&q, dma_addr_of(vtcm()), dma_addr_of(unmapped), 64, 64, 64, 1, 0));
    htp::dma_queue_pop(&q);
    for (int i = 0; i < 64; ++i) {
        ASSERT_EQ(vtcm()[i], 0x11);
    }
    EXPECT_EQ(op_done(), proto::HTP_STATUS_STRICT);
}

// ---- Strict rule: VTCM bounds.

TEST_F(HtpDmaQueue, VtcmSideOutOfBoundsIsStrict) {
    const uint32_t vtcm_size = table().vtcm_size;
    // 4 rows of 128 bytes, 1 KiB apart, starting 2 KiB before the end: the last row is past it.
    EXPECT_FALSE(htp::dma_queue_push_ddr_to_vtcm(&q, dma_addr_of(vtcm() + vtcm_size - 2048),
                                                 dma_addr_of(ddr_npu_ptr()), 1024, 128, 128, 4, 0));
    htp::dma_queue_pop(&q);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_STRICT);
    EXPECT_NE(plat->last_violation().find("out of VTCM bounds"), std::string::npos) << plat->last_violation();

    // Ending exactly at the end is fine.
    EXPECT_TRUE(htp::dma_queue_push_ddr_to_vtcm(&q, dma_addr_of(vtcm() + vtcm_size - 3 * 1024 - 128),
                                                dma_addr_of(ddr_npu_ptr()), 1024, 128, 128, 4, 0));
    htp::dma_queue_pop(&q);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_OK);
}

// ---- Strict rule: queues drained when an op returns.

TEST_F(HtpDmaQueue, UndrainedQueueIsStrict) {
    ASSERT_TRUE(htp::dma_queue_push_ddr_to_vtcm(&q, dma_addr_of(vtcm()), dma_addr_of(ddr_npu_ptr()), 64, 64, 64, 1, 0));
    EXPECT_EQ(op_done(), proto::HTP_STATUS_STRICT);
    EXPECT_NE(plat->last_violation().find("not drained"), std::string::npos) << plat->last_violation();
    EXPECT_EQ(op_done(), proto::HTP_STATUS_OK);  // the transfer was abandoned
}

// ---- The arch's descriptor field widths.

htp::dma_desc wide_row_desc(uint8_t * vtcm, uint8_t * ddr) {
    // Two rows of 70000 bytes (> 16 bits), VTCM rows padded to 70016: a genuine 2-D transfer.
    return htp::dma_desc{vtcm, ddr, 70000, 2, 70016, 70000};
}

TEST_F(HtpDmaQueue, SixteenBitFieldOverflowIsStrictOnV73) {
    open(73);
    uint64_t            ticket = 0;
    const htp::dma_desc d      = wide_row_desc(vtcm(), ddr_npu_ptr());
    EXPECT_EQ(table().dma_submit(table().ctx, 0, &d, &ticket), int(proto::HTP_STATUS_STRICT));
    EXPECT_EQ(op_done(), proto::HTP_STATUS_STRICT);
    EXPECT_NE(plat->last_violation().find("16-bit fields of v73"), std::string::npos) << plat->last_violation();

    // 65535 still fits.
    const htp::dma_desc fits{vtcm(), ddr_npu_ptr(), 65535, 2, 65535, 65535};
    EXPECT_EQ(table().dma_submit(table().ctx, 0, &fits, &ticket), 0);
    table().dma_wait(table().ctx, 0, ticket);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_OK);
}

TEST_F(HtpDmaQueue, SameDescriptorIsFineOnV79) {
    uint64_t            ticket = 0;
    const htp::dma_desc d      = wide_row_desc(vtcm(), ddr_npu_ptr());
    EXPECT_EQ(table().dma_submit(table().ctx, 0, &d, &ticket), 0);
    table().dma_wait(table().ctx, 0, ticket);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_OK);
    EXPECT_EQ(std::memcmp(vtcm() + 70016, ddr->data() + 70000, 70000), 0);
}

TEST_F(HtpDmaQueue, QueueSplitsWideTransfersOnV73) {
    // The runtime issues what the v73 descriptor cannot hold row by row (strided) or as one 1-D
    // transfer (contiguous); either way the data arrives and no rule is broken.
    open(73);
    ASSERT_TRUE(htp::dma_queue_push_ddr_to_vtcm(&q, dma_addr_of(vtcm()), dma_addr_of(ddr_npu_ptr()), 70016, 70000,
                                                70000, 3, 0));
    htp::dma_queue_pop(&q);
    ASSERT_TRUE(htp::dma_queue_push_vtcm_to_ddr(&q, dma_addr_of(ddr_npu_ptr() + 2 * MiB), dma_addr_of(vtcm()), 70016,
                                                70016, 70016, 3, 0));
    htp::dma_queue_pop(&q);
    EXPECT_EQ(op_done(), proto::HTP_STATUS_OK) << plat->last_violation();
    for (uint32_t r = 0; r < 3; ++r) {
        ASSERT_EQ(std::memcmp(vtcm() + r * 70016, ddr->data() + r * 70000, 70000), 0) << "row " << r;
        ASSERT_EQ(std::memcmp(ddr->data() + 2 * MiB + r * 70016, ddr->data() + r * 70000, 70000), 0) << "row " << r;
    }
}

TEST_F(HtpDmaQueue, NonexistentHardwareQueueIsStrict) {
    uint64_t            ticket = 0;
    const htp::dma_desc d{vtcm(), ddr_npu_ptr(), 64, 1, 64, 64};
    EXPECT_EQ(table().dma_submit(table().ctx, proto::HTP_MAX_NTHREADS, &d, &ticket), int(proto::HTP_STATUS_STRICT));
    EXPECT_EQ(op_done(), proto::HTP_STATUS_STRICT);
}

} // namespace
