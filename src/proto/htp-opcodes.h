// NPU op codes, from the registry htp-op-list.inc. The host maps GGML ops onto these in its op
// preparation; the NPU dispatcher switches on them. HTP_OP_TEST_* are virtual-NPU test ops that
// exercise the runtime (DMA, HVX, work queue) without any GGML semantics; only the test variant of the NPU library
// (libhexnpu-htp-vNN-test.so) has them, the production one answers HTP_STATUS_NO_SUPPORT.
#pragma once

#include <stdint.h>

namespace hexnpu::proto {

enum htp_op_code : uint32_t {
    HTP_OP_NONE = 0,
#define HTP_OP(name, ...) HTP_OP_##name,
#include "proto/htp-op-list.inc"
    HTP_OP_COUNT,  // one past the last production opcode
    HTP_OP_TEST_BASE = 999,  // the test ops count from 1000
#define HTP_TEST_OP(name, ...) HTP_OP_TEST_##name,
#include "proto/htp-op-list.inc"
};

// The NPU kernel families: each op's entry point op_<kernel> and guard guard_<kernel>
// (htp/ops/ops.h). A new family is a new name here and in ops.h.
enum class htp_kernel : uint32_t {
    none,
    binary, unary, rope, get_rows, get_rows_q, set_rows, pad, layout, roll, sort, reduce, flash_attn, flash_attn_hmx,
    matmul, matmul_id, matmul_hmx, matmul_id_hmx, im2col, tri, solve_tri, ssm_conv, gdn, gdn_hmx, allreduce,
    test_stream, test_fault, test_hang, test_crash, test_hmx_misuse, test_mdev_fault, test_dma_only_breach,
};

constexpr htp_kernel htp_kernel_of(uint32_t op) {
    switch (op) {
#define HTP_OP(name, kernel, ...) case HTP_OP_##name: return htp_kernel::kernel;
#define HTP_TEST_OP(name, kernel, ...) case HTP_OP_TEST_##name: return htp_kernel::kernel;
#include "proto/htp-op-list.inc"
        default: return htp_kernel::none;
    }
}

constexpr bool htp_is_binary_op(uint32_t op) { return htp_kernel_of(op) == htp_kernel::binary; }
constexpr bool htp_is_unary_op(uint32_t op) { return htp_kernel_of(op) == htp_kernel::unary; }

// How TEST_MDEV_FAULT's victim fails (planted faults of a device group).
enum htp_test_mdev_fault : int32_t {
    HTP_TEST_MDEV_ERROR = 1,   // returns INTERNAL_ERR: the peers' barrier reports PEER_FAILED at once
    HTP_TEST_MDEV_STALL,       // never reaches its fence (sleeps forever): the peers' barrier times out
    HTP_TEST_MDEV_CRASH,       // kills its session process mid-batch
    HTP_TEST_MDEV_HVX_STORE,   // stores one HVX vector at dst[0]'s start: its line, whoever else writes it
    HTP_TEST_MDEV_DELAY,       // reaches its fence params[2] ms late: a peer with a shorter deadline gives up
};

// The HMX rules TEST_HMX_MISUSE breaks, one per run (htp/hmx.h's list).
enum htp_test_hmx_misuse : int32_t {
    HTP_TEST_HMX_NOT_OWNER = 1,   // a multiply from an HVX thread, not the HMX queue's
    HTP_TEST_HMX_MISALIGNED,      // an activation tile 128 bytes off its 2048-byte boundary
    HTP_TEST_HMX_NOT_VTCM,        // tiles in DDR
    HTP_TEST_HMX_BANK_CROSSING,   // a two-tile run across the 4 MiB VTCM bank boundary
    HTP_TEST_HMX_NO_SCALE_BIAS,   // a store before any scale/bias block in this op
};

// The sources an op's kernel reads by DMA alone, never by HVX or scalar loads: the weights of the
// matmuls and GET_ROWS's table. Where the session has an extended region (v81) their buffers may be
// mapped there, outside the window (a kernel that broke this contract would fault).
constexpr bool htp_reads_by_dma_only(uint32_t op, uint32_t src) {
    switch (op) {
#define HTP_OP(name, kernel, n_required, n_src, kparams, prepare, dma_only, written_by) case HTP_OP_##name: return (dma_only >> src & 1) != 0;
#define HTP_TEST_OP(name, kernel, n_src, n_dst, dma_only, written_by) case HTP_OP_TEST_##name: return (dma_only >> src & 1) != 0;
#include "proto/htp-op-list.inc"
        default: return false;
    }
}

// Whether the op's kernel writes its results with HVX or scalar stores (through L2: the batch marks
// them dirty and flushes them before a reader and at its end) rather than by DMA alone.
constexpr bool htp_writes_through_l2(uint32_t op) {
    constexpr bool dma = false, l2 = true;
    switch (op) {
#define HTP_OP(name, kernel, n_required, n_src, kparams, prepare, dma_only, written_by) case HTP_OP_##name: return written_by;
#define HTP_TEST_OP(name, kernel, n_src, n_dst, dma_only, written_by) case HTP_OP_TEST_##name: return written_by;
#include "proto/htp-op-list.inc"
        default: return true;
    }
}

constexpr const char * htp_op_name(uint32_t op) {
    switch (op) {
        case HTP_OP_NONE: return "NONE";
#define HTP_OP(name, ...) case HTP_OP_##name: return #name;
#define HTP_TEST_OP(name, ...) case HTP_OP_TEST_##name: return "TEST_" #name;
#include "proto/htp-op-list.inc"
        default: return "UNKNOWN";
    }
}

} // namespace hexnpu::proto
