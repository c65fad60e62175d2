// A device group (row split, the spec's mdev): N HTP devices, each its own session, that execute
// every op together. The group is one backend device to the scheduler: its buffers are its first
// member's (every member maps them by fd), every batch goes to every member with the member's index
// and the group's fence buffer (one pinned 128-byte slot per member), and each member computes its
// slice of every op's output (the kernels' `if (mdev.count > 1)` partitions), meeting the others
// at a barrier after each op. A graph's result is complete when every member has answered.
#pragma once

#include "htp-device.h"

#include "hexnpu/backend.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace hexnpu::hexagon {

class htp_group_device final : public backend_device {
  public:
    // Two or more distinct HTP devices (throws std::invalid_argument otherwise); named `name`, or by
    // its members ("HTP0:0+HTP0:1") when that is empty.
    explicit htp_group_device(std::vector<htp_device *> members, std::string name = {});
    ~htp_group_device() override;

    const char *          name() const override { return name_.c_str(); }
    std::string           description() const override;
    backend_device_type   type() const override { return backend_device_type::accel; }
    void                  memory(size_t & free, size_t & total) const override { members_[0]->memory(free, total); }
    backend_buffer_type * buffer_type() override { return members_[0]->buffer_type(); }
    std::vector<backend_buffer_type *> extra_buffer_types() override { return members_[0]->extra_buffer_types(); }
    std::unique_ptr<backend>           init_backend() override;
    bool supports_op(const ggml_tensor * op) const override { return members_[0]->supports_op(op); }
    std::string refusal_reason(const ggml_tensor * op) const override { return members_[0]->refusal_reason(op); }
    bool supports_buft(const backend_buffer_type * buft) const override { return members_[0]->supports_buft(buft); }
    std::vector<device_property> properties() override { return members_[0]->properties(); }
    // Each member's report.
    std::vector<std::string>     run_report() const override;

    const std::vector<htp_device *> & members() const { return members_; }
    htp_buffer *                      fence_buffer() const { return fence_.get(); }
    // The sequence number before a batch's n barriers (one per op, and one to publish a failure
    // found after an op's barrier); the group never reuses one.
    uint32_t                          reserve_fence_seqs(uint32_t n) { return fence_seq_.fetch_add(n); }
    // How long a member waits at a barrier for a peer (GGML_HEXAGON_FENCE_TIMEOUT).
    uint32_t                          fence_timeout_us() const;
    // Member m's session died: its slot reports a failure far ahead in sequence and the peers
    // waiting on it are woken, so their barriers fail at once (PEER_FAILED), not at the deadline.
    // Called from the reaping thread of the dead session.
    void                              fail_member_fence(uint32_t m);
    // Before the next batch: slots failed that way go back to a past sequence number, so the
    // member's new session is waited for as any other.
    void                              reset_failed_fences();

  private:
    std::vector<htp_device *>   members_;
    std::string                 name_;
    std::unique_ptr<htp_buffer> fence_;
    std::atomic<uint32_t>       fence_seq_{0};
    std::atomic<uint64_t>       failed_fences_{0};  // bit m: member m's slot was failed by the host
};

} // namespace hexnpu::hexagon
