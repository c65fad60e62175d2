// A session hosted inside the calling process (for kernel and runtime tests): a virtual NPU
// platform plus the runtime, driven through the htp_iface entry points linked statically.
#pragma once

#include "batch-builder.h"
#include "htp/htp-iface.h"
#include "session-platform.h"

#include <cstdint>
#include <memory>

namespace hexnpu::vnpu {

class in_process_session {
  public:
    // Opens and starts a session with n_hvx threads requested (0: as many as reported) and a vmem
    // budget (0: the window). Throws std::runtime_error when the platform or the session fails.
    explicit in_process_session(const platform_config & config = {}, uint32_t n_hvx = 0, uint64_t max_vmem = 0);
    ~in_process_session();

    in_process_session(const in_process_session &)             = delete;
    in_process_session & operator=(const in_process_session &) = delete;

    session_platform & platform() { return *platform_; }
    htp_session *      handle() { return session_; }
    uint32_t           n_threads() const { return n_threads_; }

    // Runs the batch in place (tensor addresses are rewritten, profile and traces filled).
    proto::htp_opbatch_rsp process(packed_batch & batch);
    // The index of the op the last batch ran last (published before each op).
    uint32_t current_op() const { return current_op_; }

  private:
    std::unique_ptr<session_platform> platform_;
    htp_session *                     session_    = nullptr;
    uint32_t                          n_threads_  = 0;
    volatile uint32_t                 current_op_ = 0;
};

} // namespace hexnpu::vnpu
