// One NPU session as a device uses it: the session process with its NPU library, the dspqueue, and
// the pinned op-queue buffer of op_queue batch blocks. Buffers are registered (fastrpc_mmap) the
// first time a batch references them: pinned ones are mapped at once, the others on demand by the
// NPU's sliding window. Every failure is a backend_error with the session's own words.
#pragma once

#include "htp-options.h"

#include "proto/htp-msg.h"
#include "vnpu/client/dspqueue.h"
#include "vnpu/client/remote-session.h"
#include "vnpu/platform/shared-buffer.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace hexnpu::hexagon {

// What a batch block of this session can hold.
struct htp_batch_limits {
    uint32_t max_ops;
    uint32_t max_tensors;
    uint32_t max_bufs;
    uint32_t n_traces;  // trace records per thread slot (0: profile mode below trace)
    uint64_t vmem;      // bytes of buffers one batch may map at once (pinned ones included)
    bool     extended;  // the session has an extended region (v81): DMA-only buffers map there
    std::string vmem_source;  // the setting that decides vmem, for messages
};

// The bytes one batch may have mapped at once: the session window (HEXNPU_WINDOW_SIZE or the arch's),
// or less by GGML_HEXAGON_VMEM (default 3000/3200 MiB); and which of them decides it.
struct htp_window_budget {
    uint64_t    bytes;
    std::string source;
};
htp_window_budget htp_window_budget_of(const htp_options & options, uint64_t window_setting, uint32_t arch);

// Whether weights that only DMA reads go to the session's extended region (64-bit DMA addresses
// beside the window): the arch has 64-bit DMA (v81), the session an extended region
// (HEXNPU_EXTENDED_SIZE), and GGML_HEXAGON_DMA64 is not 0.
bool htp_uses_extended_region(const htp_options & options, uint32_t arch, uint64_t extended_size);

class htp_session {
  public:
    // Starts the session process, its NPU library (the arch of session_options) and the batch
    // queue. Throws backend_error when it cannot.
    htp_session(const std::string & device_name, const htp_options & options,
                const vnpu::rpc::session_options & session_options);
    ~htp_session();
    htp_session(const htp_session &)             = delete;
    htp_session & operator=(const htp_session &) = delete;

    const vnpu::rpc::hw_info & hw() const { return hw_; }
    const std::string &        library() const { return library_; }
    uint64_t                   window() const { return window_; }
    const htp_batch_limits &   limits() const { return limits_; }
    uint32_t                   n_slots() const { return n_slots_; }
    uint32_t                   profile() const { return profile_; }
    // fd -> size of the pinned buffers registered: the NPU keeps them in the window once used.
    std::unordered_map<int, uint64_t> pinned_buffers() const;

    // Registers the buffer with the session unless it already is.
    void ensure_registered(int fd, uint64_t size, bool pinned);
    // The buffer is being freed: the session drops its mapping.
    void forget(int fd);

    uint8_t * block(uint32_t slot) { return opqueue_->data() + size_t(slot) * block_size_; }
    size_t    block_size() const { return block_size_; }

    // Sends the batch that was written into block `slot`.
    void send(uint32_t slot, const proto::htp_opbatch_req & req, size_t bytes);
    // Waits for the next response (they come in order).
    proto::htp_opbatch_rsp receive(std::string * log);

    // Batch ids run on per session (messages and the session's own reports name them).
    uint32_t next_batch_id() { return next_batch_id_++; }

    // Held while a backend has batches in flight on this session.
    std::mutex & compute_mutex() { return compute_mutex_; }

    // The session died or missed a deadline: every later call fails at once.
    bool dead() const { return dead_; }
    // How the session process ended (the op it was running, a fault address), once it has.
    std::optional<vnpu::rpc::session_exit> exit_info() const { return session_->exit_info(); }
    // The session process (tests kill it).
    pid_t pid() const { return session_->pid(); }
    // Called when the session process ends (see remote_session::set_exit_hook).
    void set_exit_hook(std::function<void()> hook) { session_->set_exit_hook(std::move(hook)); }

  private:
    [[noreturn]] void fail(const std::string & what, const vnpu::rpc::rpc_status & st);

    std::string                                name_;
    std::unique_ptr<vnpu::rpc::remote_session> session_;
    std::unique_ptr<vnpu::rpc::dspqueue>       queue_;
    vnpu::rpc::hw_info                         hw_;
    std::string                                library_;
    uint64_t                                   window_ = 0;
    htp_batch_limits                           limits_{};
    uint32_t                                   profile_ = 0;
    uint32_t                                   n_slots_ = 0;
    size_t                                     block_size_ = 0;
    std::unique_ptr<vnpu::shared_buffer>       opqueue_;
    bool                                       dead_    = false;
    uint32_t                                   next_batch_id_ = 0;

    std::mutex                                compute_mutex_;
    mutable std::mutex                        mutex_;  // the registry below
    std::unordered_map<int, bool>             registered_;  // fd -> pinned
    std::unordered_map<int, uint64_t>         pinned_sizes_;
};

} // namespace hexnpu::hexagon
