// The HTP backend: computes graphs on its device's session. Layout nodes (views, reshapes,
// permutes) run nothing; every other node becomes an NPU op with host-precomputed kernel_params.
// Ops are packed into batches (htp-batch.h), up to op_queue batches are in flight, and
// graph_compute returns once every response is back. A failing op is a backend_error naming the op,
// the NPU status and, for faults, the NPU address, with the session's log lines of that batch.
#pragma once

#include "htp-batch.h"

#include "hexnpu/backend.h"

#include <deque>
#include <span>
#include <string>
#include <vector>

namespace hexnpu::hexagon {

class htp_device;

class htp_backend final : public backend {
  public:
    explicit htp_backend(htp_device & device);

    const char *     name() const override;
    backend_device * device() const override;
    void             graph_compute(ggml_cgraph & graph) override;

    // Runs prepared ops in order (what graph_compute does after preparing the nodes).
    void compute_ops(std::span<const htp_op> ops);

    // Batches the last compute_ops sent.
    uint32_t last_batch_count() const { return last_batches_; }

  private:
    struct in_flight {
        proto::htp_opbatch_req      req;
        uint32_t                    slot;
        std::vector<const htp_op *> ops;
    };

    // Waits for the oldest batch in flight; returns the error text of a failure ("" when OK).
    std::string finish(htp_session & s, in_flight & batch);
    // Prints the per-op profile lines and, in trace mode, keeps the batch's events.
    void        collect_profile(htp_session & s, const in_flight & batch, const proto::htp_opbatch_rsp & rsp);

    htp_device & device_;
    uint32_t     last_batches_ = 0;
};

} // namespace hexnpu::hexagon
