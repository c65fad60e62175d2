// NPU op codes. The host maps GGML ops onto these in its op preparation; the NPU dispatcher
// switches on them. HTP_OP_TEST_* are virtual-NPU test ops that exercise the runtime
// (DMA, HVX, work queue) without any GGML semantics.
#pragma once

#include "proto/fastdiv.h"

#include <stdint.h>

namespace hexnpu::proto {

enum htp_op_code : uint32_t {
    HTP_OP_NONE = 0,
    HTP_OP_ADD,
    HTP_OP_SUB,
    HTP_OP_MUL,
    HTP_OP_DIV,
    HTP_OP_SCALE,
    HTP_OP_SQR,
    HTP_OP_SQRT,
    HTP_OP_NEG,
    HTP_OP_SILU,
    HTP_OP_TEST_STREAM = 1000,  // dst = src0 * kparams scale, streamed DDR -> DMA -> VTCM -> HVX -> DMA -> DDR
    HTP_OP_TEST_FAULT,          // touches an NPU address given in params[0] (fault handling tests)
    HTP_OP_TEST_HANG,           // never returns (deadline tests)
    HTP_OP_TEST_CRASH,          // aborts the session process (crash tests)
};

// kernel_params of HTP_OP_TEST_STREAM (src0, dst: F32 of equal shape, rows contiguous). Each of
// n_threads threads streams its share of the ne1*ne2*ne3 rows through n_slots VTCM source and
// destination slots of block_rows rows each; a block never crosses an (i2, i3) slice.
struct htp_test_stream_kparams {
    uint32_t       scale;            // float bits
    uint32_t       n_threads;        // <= the session's threads
    uint32_t       block_rows;       // rows per DMA transfer
    uint32_t       n_slots;          // pipeline depth, >= 2
    uint32_t       vtcm_row_stride;  // ne0 * 4 rounded up to 128
    uint32_t       misuse;           // htp_test_stream_misuse: a deliberate rule violation
    fastdiv_values div_ne1;          // flat row -> (i1, i2, i3)
    fastdiv_values div_ne2;
};
static_assert(sizeof(htp_test_stream_kparams) <= 32 * sizeof(int32_t));

// Deliberate misuses of the DMA pipeline that the strict virtual NPU must catch.
enum htp_test_stream_misuse : uint32_t {
    HTP_TEST_STREAM_CORRECT          = 0,
    HTP_TEST_STREAM_READ_BEFORE_POP  = 1,  // computes on a source slot before popping its prefetch
    HTP_TEST_STREAM_WRITE_AFTER_PUSH = 2,  // scribbles on a destination slot while its writeback flies
    HTP_TEST_STREAM_SKIP_DRAIN       = 3,  // returns without popping the last writebacks
};

constexpr const char * htp_op_name(uint32_t op) {
    switch (op) {
        case HTP_OP_NONE: return "NONE";
        case HTP_OP_ADD: return "ADD";
        case HTP_OP_SUB: return "SUB";
        case HTP_OP_MUL: return "MUL";
        case HTP_OP_DIV: return "DIV";
        case HTP_OP_SCALE: return "SCALE";
        case HTP_OP_SQR: return "SQR";
        case HTP_OP_SQRT: return "SQRT";
        case HTP_OP_NEG: return "NEG";
        case HTP_OP_SILU: return "SILU";
        case HTP_OP_TEST_STREAM: return "TEST_STREAM";
        case HTP_OP_TEST_FAULT: return "TEST_FAULT";
        case HTP_OP_TEST_HANG: return "TEST_HANG";
        case HTP_OP_TEST_CRASH: return "TEST_CRASH";
        default: return "UNKNOWN";
    }
}

} // namespace hexnpu::proto
