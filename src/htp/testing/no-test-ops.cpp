// The production library's half of ops.h's find_test_op: it has no test ops, so no host can make a
// shipped session fault, hang or crash on purpose.
#include "ops/ops.h"

namespace hexnpu::htp {

const op_entry * find_test_op(uint32_t) { return nullptr; }

} // namespace hexnpu::htp
