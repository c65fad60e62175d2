// The support matrix of `hexnpu test-ops --support` (and docs/ops.md with --md).
#pragma once

#include "hexnpu/backend.h"
#include "testing/runner.h"

#include <vector>

namespace hexnpu::cli {

int print_support(const backend_device & dev, const std::vector<const optest::op_case *> & cases, bool markdown);

} // namespace hexnpu::cli
