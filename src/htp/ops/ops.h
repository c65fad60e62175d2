// The op entry points the dispatcher switches to; each returns an htp_status.
#pragma once

#include "htp-ctx.h"

#include <stdint.h>

namespace hexnpu::htp {

uint32_t op_binary(htp_op_context * octx);  // ADD, SUB, MUL, DIV
uint32_t op_unary(htp_op_context * octx);   // SCALE, SQR, SQRT, NEG, SILU
uint32_t op_test_stream(htp_op_context * octx);
uint32_t op_test_fault(htp_op_context * octx);
uint32_t op_test_hang(htp_op_context * octx);
uint32_t op_test_crash(htp_op_context * octx);

} // namespace hexnpu::htp
