// The HTP backend: computes graphs on its device's session, or on every member of a device group
// (htp-group.h: each batch sent to all members, each its slice and its fences). Layout nodes (views, reshapes,
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
class htp_group_device;

class htp_backend final : public backend {
  public:
    explicit htp_backend(htp_device & device);
    explicit htp_backend(htp_group_device & group);

    const char *     name() const override;
    backend_device * device() const override;
    void             graph_compute(ggml_cgraph & graph) override;

    // Runs prepared ops in order (what graph_compute does after preparing the nodes).
    void compute_ops(std::span<const htp_op> ops);

    // Batches the last compute_ops sent.
    uint32_t last_batch_count() const { return last_batches_; }
    // RMS_NORM + MUL pairs sent as one RMS_NORM_MUL op since the backend was made (GGML_HEXAGON_OPFUSION).
    uint64_t fused_count() const { return fused_; }

  private:
    // One batch as one member got it.
    struct sent {
        proto::htp_opbatch_req req;
        uint32_t               slot;
    };
    struct in_flight {
        std::vector<sent>           members;  // [member]
        std::vector<const htp_op *> ops;
    };

    // Waits for every member's response to the oldest batch in flight; returns the error text of a
    // failure ("" when OK): a member's own failure before a peer's report of it.
    std::string finish(in_flight & batch);
    std::string finish_member(htp_device & dev, const sent & batch, const std::vector<const htp_op *> & ops,
                              uint32_t * status);
    // Prints the per-op profile lines and, in trace mode, keeps the batch's events.
    void        collect_profile(htp_device & dev, const sent & batch, const std::vector<const htp_op *> & ops,
                                const proto::htp_opbatch_rsp & rsp);

    htp_device &              device_;   // the first member: options, names, buffers
    std::vector<htp_device *> members_;  // one unless a group
    htp_group_device *        group_ = nullptr;
    std::string               name_;
    uint32_t                  last_batches_ = 0;
    uint64_t                  fused_        = 0;
};

} // namespace hexnpu::hexagon
