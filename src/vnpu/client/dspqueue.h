// The dspqueue analog: the shared-memory request/response queue between the host and one session
// (wire::shared_queue underneath). Op batches go out as requests (htp_opbatch_req plus a reference
// to their block in the pinned op-queue buffer) and come back as responses. Waits sleep on futexes
// and end at a deadline: a read that times out means the session is hung, and it is killed.
#pragma once

#include "proto/htp-msg.h"
#include "remote-session.h"
#include "rpc-status.h"
#include "vnpu/session/shared-queue.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace hexnpu::vnpu::rpc {

using wire::queue_buffer;

class dspqueue {
  public:
    // n_slots messages in flight each way, each of up to max_message bytes.
    static rpc_status create(remote_session & session, uint32_t n_slots, uint32_t max_message,
                             std::unique_ptr<dspqueue> * out);
    ~dspqueue();

    dspqueue(const dspqueue &)             = delete;
    dspqueue & operator=(const dspqueue &) = delete;

    // Waits for room until the session's deadline (or timeout).
    rpc_status write(const void * message, uint32_t size, std::span<const queue_buffer> buffers);
    rpc_status write(const void * message, uint32_t size, std::span<const queue_buffer> buffers,
                     std::chrono::milliseconds timeout);
    // Reads the oldest response; *n_buffers of room QUEUE_MAX_BUFFERS.
    rpc_status read(void * message, uint32_t capacity, uint32_t * size, queue_buffer * buffers, uint32_t * n_buffers);
    rpc_status read(void * message, uint32_t capacity, uint32_t * size, queue_buffer * buffers, uint32_t * n_buffers,
                    std::chrono::milliseconds timeout);

    // How reads wait for a response (sleeping by default).
    void                      set_wait(wire::queue_wait wait) { wait_ = wait; }
    uint32_t                  max_message() const { return queue_->max_message(); }
    std::chrono::milliseconds timeout() const { return session_.options().timeout; }

  private:
    friend class remote_session;
    dspqueue(remote_session & session, std::unique_ptr<wire::shared_queue> queue);
    rpc_status closed_status();

    remote_session &                    session_;
    std::unique_ptr<wire::shared_queue> queue_;
    wire::queue_wait                    wait_ = wire::queue_wait::sleep;
};

// One batch on the wire: the request (with its block's place in the op-queue buffer) and the
// response with the session's log lines of that batch.
rpc_status write_batch(dspqueue & queue, const proto::htp_opbatch_req & req, const queue_buffer & block);
rpc_status read_batch_response(dspqueue & queue, proto::htp_opbatch_rsp * rsp, std::string * log,
                               std::chrono::milliseconds timeout);
rpc_status read_batch_response(dspqueue & queue, proto::htp_opbatch_rsp * rsp, std::string * log);

} // namespace hexnpu::vnpu::rpc
