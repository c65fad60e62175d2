// NPU op codes. The host maps GGML ops onto these in its op preparation; the NPU dispatcher
// switches on them. HTP_OP_TEST_* are virtual-NPU test ops that exercise the runtime
// (DMA, HVX, work queue) without any GGML semantics; only the test variant of the NPU library
// (libhexnpu-htp-vNN-test.so) has them, the production one answers HTP_STATUS_NO_SUPPORT.
#pragma once

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
    HTP_OP_MUL_MAT,
    HTP_OP_MUL_MAT_ID,
    HTP_OP_RMS_NORM,
    HTP_OP_NORM,
    HTP_OP_L2_NORM,
    HTP_OP_GEGLU,   // GLU with a separate gate tensor: dst = gelu(src0) * src1 (GGML's tanh GELU)
    HTP_OP_SWIGLU,  //   dst = silu(src0) * src1
    HTP_OP_SOFT_MAX,  // dst = softmax(src0 * scale + src1) per row, src1 the F32 mask
    HTP_OP_CPY,       // dst = src0, F32 of one shape; src0's rows anywhere (permuted views: CONT)
    HTP_OP_ROPE,      // GGML's ROPE, NORMAL and NEOX modes, src1 the I32 positions (one per i2)
    HTP_OP_SET_ROWS,  // dst rows src1[i1, ..] (I32/I64) = src0 row i1 (F32), as F16 or F32
    HTP_OP_GET_ROWS,  // dst row (i1, i2, i3) = src0 row src1[i1, i2, i3] of slice (i2, i3), F32/F16 -> F32
    HTP_OP_FLASH_ATTN_EXT,  // GGML's, Q F32, K/V F16 (or F32), optional F16/F32 mask (src3) and F32 sinks (src4)
    HTP_OP_RELU,
    HTP_OP_ABS,
    HTP_OP_EXP,
    HTP_OP_SIGMOID,
    HTP_OP_GELU,        // GGML's tanh approximation
    HTP_OP_GELU_QUICK,  // x sigmoid(1.702 x)
    HTP_OP_SIN,
    HTP_OP_COS,
    HTP_OP_CLAMP,       // min(max(x, lo), hi), lo and hi from GGML op_params 0 and 1
    HTP_OP_TANH,
    HTP_OP_SUM_ROWS,    // dst [1, ne1, ne2, ne3] = the rows' sums
    HTP_OP_MEAN,        //   = their means
    HTP_OP_CUMSUM,      // dst = the rows' inclusive prefix sums
    HTP_OP_LOG,
    HTP_OP_SOFTPLUS,    // GGML's: x above 20, else log(1 + e^x)
    HTP_OP_FILL,        // dst = op_params 0 (F32 or F16 rows)
    HTP_OP_GELU_ERF,
    HTP_OP_MUL_MAT_HMX,     // MUL_MAT on the HMX unit (proto/htp-matmul-hmx.h): many activation rows
    HTP_OP_MUL_MAT_ID_HMX,  // MUL_MAT_ID on the HMX unit, expert by expert
    HTP_OP_PAD,             // zeros after the end of each dimension (F32)
    HTP_OP_FLASH_ATTN_EXT_HMX,  // FLASH_ATTN_EXT on the HMX unit (proto/htp-flash-attn-hmx.h): prefill
    HTP_OP_RMS_NORM_MUL,    // the host's fusion of RMS_NORM and the MUL by its weight: dst = rms_norm(src0) * src1
    HTP_OP_GET_ROWS_Q,      // GET_ROWS from a quantized table, tiled or flat (proto/htp-get-rows-q.h)
    HTP_OP_ARGSORT,         // dst row = the I32 indices of src0's row in sorted order (proto/htp-sort.h)
    HTP_OP_TOP_K,           //   = the indices of its dst.ne0 largest values, largest first
    HTP_OP_SWIGLU_OAI,      // GPT-OSS's GLU: min(x, limit) sigmoid(alpha min(x, limit)) (clamp(g, -limit, limit) + 1)
    HTP_OP_CPY_Q,           // CPY/CONT/DUP of F32 rows into Q8_0 (SET_ROWS's kernel, proto/htp-kparams.h)
    HTP_OP_CONCAT,          // GGML's CONCAT along any dim (proto/htp-layout.h)
    HTP_OP_REPEAT,          // GGML's REPEAT
    HTP_OP_ADD_ID,          // dst row (i1, i2) = src0's + src1 row ids[i1, i2] (the I32 ids: src2)
    HTP_OP_CPY_DQ,          // CPY/CONT from a quantized type into F32 (GET_ROWS_Q's kernel, every row its own id)
    HTP_OP_TEST_STREAM = 1000,  // dst = src0 * kparams scale, streamed DDR -> DMA -> VTCM -> HVX -> DMA -> DDR
    HTP_OP_TEST_FAULT,          // touches an NPU address given in params[0] (fault handling tests)
    HTP_OP_TEST_HANG,           // never returns (deadline tests)
    HTP_OP_TEST_CRASH,          // aborts the session process (crash tests)
    HTP_OP_TEST_HMX_MISUSE,     // breaks the HMX rule params[0] names (htp_test_hmx_misuse)
    HTP_OP_TEST_MDEV_FAULT,     // group member params[0] fails as params[1] says (htp_test_mdev_fault); the rest: OK
    HTP_OP_TEST_DMA_ONLY_BREACH,  // claims src0 for DMA alone (htp_reads_by_dma_only), then loads it with HVX
};

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
        case HTP_OP_MUL_MAT:
        case HTP_OP_MUL_MAT_ID:
        case HTP_OP_MUL_MAT_HMX:
        case HTP_OP_MUL_MAT_ID_HMX:
        case HTP_OP_GET_ROWS:
        case HTP_OP_GET_ROWS_Q:
        case HTP_OP_CPY_DQ:
        case HTP_OP_TEST_DMA_ONLY_BREACH: return src == 0;
        default: return false;
    }
}

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
        case HTP_OP_MUL_MAT: return "MUL_MAT";
        case HTP_OP_MUL_MAT_ID: return "MUL_MAT_ID";
        case HTP_OP_RMS_NORM: return "RMS_NORM";
        case HTP_OP_NORM: return "NORM";
        case HTP_OP_L2_NORM: return "L2_NORM";
        case HTP_OP_GEGLU: return "GEGLU";
        case HTP_OP_SWIGLU: return "SWIGLU";
        case HTP_OP_SOFT_MAX: return "SOFT_MAX";
        case HTP_OP_CPY: return "CPY";
        case HTP_OP_ROPE: return "ROPE";
        case HTP_OP_SET_ROWS: return "SET_ROWS";
        case HTP_OP_GET_ROWS: return "GET_ROWS";
        case HTP_OP_FLASH_ATTN_EXT: return "FLASH_ATTN_EXT";
        case HTP_OP_RMS_NORM_MUL: return "RMS_NORM_MUL";
        case HTP_OP_GET_ROWS_Q: return "GET_ROWS_Q";
        case HTP_OP_ARGSORT: return "ARGSORT";
        case HTP_OP_TOP_K: return "TOP_K";
        case HTP_OP_SWIGLU_OAI: return "SWIGLU_OAI";
        case HTP_OP_CPY_Q: return "CPY_Q";
        case HTP_OP_CONCAT: return "CONCAT";
        case HTP_OP_REPEAT: return "REPEAT";
        case HTP_OP_ADD_ID: return "ADD_ID";
        case HTP_OP_CPY_DQ: return "CPY_DQ";
        case HTP_OP_RELU: return "RELU";
        case HTP_OP_ABS: return "ABS";
        case HTP_OP_EXP: return "EXP";
        case HTP_OP_SIGMOID: return "SIGMOID";
        case HTP_OP_GELU: return "GELU";
        case HTP_OP_GELU_QUICK: return "GELU_QUICK";
        case HTP_OP_SIN: return "SIN";
        case HTP_OP_COS: return "COS";
        case HTP_OP_CLAMP: return "CLAMP";
        case HTP_OP_TANH: return "TANH";
        case HTP_OP_SUM_ROWS: return "SUM_ROWS";
        case HTP_OP_MEAN: return "MEAN";
        case HTP_OP_CUMSUM: return "CUMSUM";
        case HTP_OP_LOG: return "LOG";
        case HTP_OP_SOFTPLUS: return "SOFTPLUS";
        case HTP_OP_FILL: return "FILL";
        case HTP_OP_GELU_ERF: return "GELU_ERF";
        case HTP_OP_MUL_MAT_HMX: return "MUL_MAT_HMX";
        case HTP_OP_MUL_MAT_ID_HMX: return "MUL_MAT_ID_HMX";
        case HTP_OP_PAD: return "PAD";
        case HTP_OP_FLASH_ATTN_EXT_HMX: return "FLASH_ATTN_EXT_HMX";
        case HTP_OP_TEST_STREAM: return "TEST_STREAM";
        case HTP_OP_TEST_FAULT: return "TEST_FAULT";
        case HTP_OP_TEST_HANG: return "TEST_HANG";
        case HTP_OP_TEST_CRASH: return "TEST_CRASH";
        case HTP_OP_TEST_HMX_MISUSE: return "TEST_HMX_MISUSE";
        case HTP_OP_TEST_MDEV_FAULT: return "TEST_MDEV_FAULT";
        case HTP_OP_TEST_DMA_ONLY_BREACH: return "TEST_DMA_ONLY_BREACH";
        default: return "UNKNOWN";
    }
}

} // namespace hexnpu::proto
