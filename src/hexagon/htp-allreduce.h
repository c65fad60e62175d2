// The tensor split's all-reduce (llama.cpp's --split-mode tensor asks for it through
// ggml_backend_comm_*): the sessions holding the partial results become a device group for one
// ALLREDUCE op (proto/htp-allreduce.h), which each member runs on its share of the chunks, the
// group's fence after it. Each result then holds the sum, in place.
#pragma once

#include "htp-backend.h"
#include "htp-device.h"
#include "htp-group.h"

#include "hexnpu/tensor.h"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace hexnpu::hexagon {

class htp_allreduce {
  public:
    // 2..4 distinct HTP devices, in the order of the results run() gets (throws
    // std::invalid_argument otherwise).
    explicit htp_allreduce(std::vector<htp_device *> members);

    // Sums results[k] (member k's, in a buffer of an HTP device) into each of them. Returns why the
    // NPU does not take them ("" when done): nothing has been written then. Throws backend_error
    // when the op fails on the NPU (a member died or missed the fence deadline): the results are
    // then partly summed.
    std::string run(std::span<const ggml_tensor * const> results);

    const htp_group_device & group() const { return group_; }

  private:
    htp_group_device group_;
    htp_backend      backend_;
};

} // namespace hexnpu::hexagon
