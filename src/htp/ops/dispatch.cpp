#include "ops.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-status.h"

namespace hexnpu::htp {

uint32_t execute_op(htp_op_context * octx) {
    if (octx->op->flags & proto::HTP_OPFLAGS_SKIP_COMPUTE) {
        return proto::HTP_STATUS_OK;
    }
    switch (octx->op->opcode) {
        case proto::HTP_OP_ADD:
        case proto::HTP_OP_SUB:
        case proto::HTP_OP_MUL:
        case proto::HTP_OP_DIV: return op_binary(octx);
        case proto::HTP_OP_SCALE:
        case proto::HTP_OP_SQR:
        case proto::HTP_OP_SQRT:
        case proto::HTP_OP_NEG:
        case proto::HTP_OP_SILU: return op_unary(octx);
        case proto::HTP_OP_TEST_STREAM: return op_test_stream(octx);
        case proto::HTP_OP_TEST_FAULT: return op_test_fault(octx);
        case proto::HTP_OP_TEST_HANG: return op_test_hang(octx);
        case proto::HTP_OP_TEST_CRASH: return op_test_crash(octx);
        default: return proto::HTP_STATUS_NO_SUPPORT;
    }
}

} // namespace hexnpu::htp
