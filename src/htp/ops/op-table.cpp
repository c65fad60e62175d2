// The dispatch table, derived from the registry (proto/htp-op-list.inc): per opcode, its family's
// entry point and guard and the sources it requires.
#include "ops.h"
#include "proto/htp-opcodes.h"

namespace hexnpu::htp {

const op_entry * find_op(uint32_t opcode) {
    switch (opcode) {
#define HTP_OP(name, kernel, n_required, ...)                                           \
    case proto::HTP_OP_##name: {                                                        \
        static constexpr op_entry entry = {op_##kernel, guard_##kernel, n_required, 1}; \
        return &entry;                                                                  \
    }
#include "proto/htp-op-list.inc"
        default: return find_test_op(opcode);
    }
}

} // namespace hexnpu::htp
