#include "ops.h"
#include "proto/htp-opcodes.h"

namespace hexnpu::htp {

namespace {

constexpr op_entry BINARY = {op_binary, guard_binary, 2, 1};
constexpr op_entry SOFT_MAX = {op_binary, guard_binary, 1, 1};  // the mask and the sinks optional
constexpr op_entry ADD_ID = {op_binary, guard_binary, 3, 1};
constexpr op_entry UNARY  = {op_unary, guard_unary, 1, 1};
constexpr op_entry ROPE   = {op_rope, guard_rope, 2, 1};
constexpr op_entry GET_ROWS  = {op_get_rows, guard_get_rows, 2, 1};
constexpr op_entry GET_ROWS_Q = {op_get_rows_q, guard_get_rows_q, 2, 1};
constexpr op_entry CPY_DQ     = {op_get_rows_q, guard_get_rows_q, 1, 1};  // GET_ROWS_Q without ids
constexpr op_entry SET_ROWS  = {op_set_rows, guard_set_rows, 2, 1};
constexpr op_entry CPY_Q     = {op_set_rows, guard_set_rows, 1, 1};  // SET_ROWS without ids
constexpr op_entry FLASH_ATTN = {op_flash_attn, guard_flash_attn, 3, 1};  // mask, sinks optional
constexpr op_entry FLASH_ATTN_HMX = {op_flash_attn_hmx, guard_flash_attn_hmx, 3, 1};
constexpr op_entry MATMUL    = {op_matmul, guard_matmul, 2, 1};
constexpr op_entry MATMUL_ID = {op_matmul_id, guard_matmul_id, 3, 1};
constexpr op_entry MATMUL_HMX = {op_matmul_hmx, guard_matmul_hmx, 2, 1};
constexpr op_entry MATMUL_ID_HMX = {op_matmul_id_hmx, guard_matmul_id_hmx, 3, 1};
constexpr op_entry PAD = {op_pad, guard_pad, 1, 1};
constexpr op_entry SORT = {op_sort, guard_sort, 1, 1};
constexpr op_entry CONCAT = {op_layout, guard_layout, 2, 1};
constexpr op_entry REPEAT = {op_layout, guard_layout, 1, 1};

} // namespace

const op_entry * find_op(uint32_t opcode) {
    switch (opcode) {
        case proto::HTP_OP_ADD:
        case proto::HTP_OP_SUB:
        case proto::HTP_OP_MUL:
        case proto::HTP_OP_DIV:
        case proto::HTP_OP_GEGLU:
        case proto::HTP_OP_SWIGLU:
        case proto::HTP_OP_SWIGLU_OAI:
        case proto::HTP_OP_RMS_NORM_MUL: return &BINARY;
        case proto::HTP_OP_SOFT_MAX: return &SOFT_MAX;
        case proto::HTP_OP_ADD_ID: return &ADD_ID;
        case proto::HTP_OP_SCALE:
        case proto::HTP_OP_SQR:
        case proto::HTP_OP_SQRT:
        case proto::HTP_OP_NEG:
        case proto::HTP_OP_SILU:
        case proto::HTP_OP_CPY:
        case proto::HTP_OP_RMS_NORM:
        case proto::HTP_OP_NORM:
        case proto::HTP_OP_L2_NORM:
        case proto::HTP_OP_RELU:
        case proto::HTP_OP_ABS:
        case proto::HTP_OP_EXP:
        case proto::HTP_OP_SIGMOID:
        case proto::HTP_OP_GELU:
        case proto::HTP_OP_GELU_QUICK:
        case proto::HTP_OP_SIN:
        case proto::HTP_OP_COS:
        case proto::HTP_OP_CLAMP:
        case proto::HTP_OP_TANH:
        case proto::HTP_OP_SUM_ROWS:
        case proto::HTP_OP_MEAN:
        case proto::HTP_OP_CUMSUM:
        case proto::HTP_OP_LOG:
        case proto::HTP_OP_SOFTPLUS:
        case proto::HTP_OP_FILL:
        case proto::HTP_OP_GELU_ERF: return &UNARY;
        case proto::HTP_OP_ROPE: return &ROPE;
        case proto::HTP_OP_GET_ROWS: return &GET_ROWS;
        case proto::HTP_OP_GET_ROWS_Q: return &GET_ROWS_Q;
        case proto::HTP_OP_CPY_DQ: return &CPY_DQ;
        case proto::HTP_OP_SET_ROWS: return &SET_ROWS;
        case proto::HTP_OP_CPY_Q: return &CPY_Q;
        case proto::HTP_OP_FLASH_ATTN_EXT: return &FLASH_ATTN;
        case proto::HTP_OP_FLASH_ATTN_EXT_HMX: return &FLASH_ATTN_HMX;
        case proto::HTP_OP_MUL_MAT: return &MATMUL;
        case proto::HTP_OP_MUL_MAT_ID: return &MATMUL_ID;
        case proto::HTP_OP_MUL_MAT_HMX: return &MATMUL_HMX;
        case proto::HTP_OP_MUL_MAT_ID_HMX: return &MATMUL_ID_HMX;
        case proto::HTP_OP_PAD: return &PAD;
        case proto::HTP_OP_ARGSORT:
        case proto::HTP_OP_TOP_K: return &SORT;
        case proto::HTP_OP_CONCAT: return &CONCAT;
        case proto::HTP_OP_REPEAT: return &REPEAT;
        default: return find_test_op(opcode);
    }
}

} // namespace hexnpu::htp
