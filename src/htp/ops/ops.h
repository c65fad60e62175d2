// The ops a library serves: per opcode, its entry point, the operands it requires and the
// structural guard the batch loop runs before it (operand presence and guard failures are
// HTP_STATUS_INVAL_PARAMS, an opcode without an entry HTP_STATUS_NO_SUPPORT). Past the guard, an op
// executes its kparams as the host computed them.
#pragma once

#include "htp-ctx.h"

#include <stdint.h>

namespace hexnpu::htp {

struct op_entry {
    uint32_t (*run)(htp_op_context * octx);            // returns an htp_status
    bool (*guard)(const htp_op_context * octx);        // cheap compares, no divisions
    uint8_t n_src;                                     // src[0 .. n_src) must be present
    uint8_t n_dst;                                     // dst[0 .. n_dst) must be present
};

// nullptr when neither the library's ops nor its test ops have the opcode.
const op_entry * find_op(uint32_t opcode);

// The HTP_OP_TEST_* ops: defined by testing/test-ops.cpp in the test variant of the library and by
// testing/no-test-ops.cpp (always nullptr) in the production one.
const op_entry * find_test_op(uint32_t opcode);

uint32_t op_binary(htp_op_context * octx);  // ADD, SUB, MUL, DIV, the GLUs, SOFT_MAX
bool     guard_binary(const htp_op_context * octx);
uint32_t op_unary(htp_op_context * octx);   // SCALE, SQR, SQRT, NEG, SILU, CPY, the row norms
bool     guard_unary(const htp_op_context * octx);
uint32_t op_rope(htp_op_context * octx);    // ROPE (NORMAL, NEOX)
bool     guard_rope(const htp_op_context * octx);
uint32_t op_get_rows(htp_op_context * octx);  // GET_ROWS (F32/F16 -> F32)
bool     guard_get_rows(const htp_op_context * octx);
uint32_t op_get_rows_q(htp_op_context * octx);  // GET_ROWS_Q (a quantized table, tiled or flat -> F32)
bool     guard_get_rows_q(const htp_op_context * octx);
uint32_t op_set_rows(htp_op_context * octx);  // SET_ROWS (F32 -> F16/BF16/F32/Q8_0), CPY_Q
bool     guard_set_rows(const htp_op_context * octx);
uint32_t op_flash_attn(htp_op_context * octx);  // FLASH_ATTN_EXT (HVX: Q F32, K/V F16)
bool     guard_flash_attn(const htp_op_context * octx);
uint32_t op_flash_attn_hmx(htp_op_context * octx);  // FLASH_ATTN_EXT_HMX (prefill on the HMX unit)
bool     guard_flash_attn_hmx(const htp_op_context * octx);
uint32_t op_matmul(htp_op_context * octx);  // MUL_MAT (HVX), float weights to op_matmul_float
bool     guard_matmul(const htp_op_context * octx);
uint32_t op_matmul_id(htp_op_context * octx);  // MUL_MAT_ID (HVX)
bool     guard_matmul_id(const htp_op_context * octx);
uint32_t op_matmul_hmx(htp_op_context * octx);  // MUL_MAT on HMX (tiled weights)
bool     guard_matmul_hmx(const htp_op_context * octx);
uint32_t op_pad(htp_op_context * octx);  // PAD: zeros after each dimension
bool     guard_pad(const htp_op_context * octx);
uint32_t op_layout(htp_op_context * octx);  // CONCAT, REPEAT (DMA pieces of rows)
bool     guard_layout(const htp_op_context * octx);
uint32_t op_roll(htp_op_context * octx);  // ROLL (DMA pieces of rows)
bool     guard_roll(const htp_op_context * octx);
uint32_t op_im2col(htp_op_context * octx);  // IM2COL (DMA gathers from the image)
bool     guard_im2col(const htp_op_context * octx);
uint32_t op_tri(htp_op_context * octx);  // TRI, DIAG (rows streamed, lanes masked)
bool     guard_tri(const htp_op_context * octx);
uint32_t op_solve_tri(htp_op_context * octx);  // SOLVE_TRI (forward substitution over columns)
bool     guard_solve_tri(const htp_op_context * octx);
uint32_t op_ssm_conv(htp_op_context * octx);  // SSM_CONV (channels turned into vectors)
bool     guard_ssm_conv(const htp_op_context * octx);
uint32_t op_allreduce(htp_op_context * octx);  // ALLREDUCE (a tensor split's partial results summed in place)
bool     guard_allreduce(const htp_op_context * octx);
uint32_t op_gdn(htp_op_context * octx);  // GATED_DELTA_NET (HVX, the state in VTCM)
bool     guard_gdn(const htp_op_context * octx);
uint32_t op_gdn_hmx(htp_op_context * octx);  // GATED_DELTA_NET_HMX (prompts, chunked on the HMX unit)
bool     guard_gdn_hmx(const htp_op_context * octx);
uint32_t op_sort(htp_op_context * octx);  // ARGSORT, TOP_K (bitonic, in VTCM)
bool     guard_sort(const htp_op_context * octx);
uint32_t op_reduce(htp_op_context * octx);  // SUM, ARGMAX (rows in chunks)
bool     guard_reduce(const htp_op_context * octx);
uint32_t op_matmul_id_hmx(htp_op_context * octx);  // MUL_MAT_ID on HMX, expert by expert
bool     guard_matmul_id_hmx(const htp_op_context * octx);
uint32_t op_matmul_float(htp_op_context * octx, bool by_id);  // F32/F16/BF16 weights
bool     guard_matmul_float(const htp_op_context * octx, bool by_id);

} // namespace hexnpu::htp
