#include "dspqueue.h"

#include <cstring>
#include <vector>

namespace hexnpu::vnpu::rpc {

namespace {

wire::deadline after(std::chrono::milliseconds timeout) { return std::chrono::steady_clock::now() + timeout; }

} // namespace

rpc_status dspqueue::create(remote_session & session, uint32_t n_slots, uint32_t max_message,
                            std::unique_ptr<dspqueue> * out) {
    std::string                         error;
    std::unique_ptr<wire::shared_queue> queue = wire::shared_queue::create(n_slots, max_message, &error);
    if (!queue) {
        return rpc_error(rpc_errc::invalid_argument, error);
    }
    out->reset(new dspqueue(session, std::move(queue)));
    return {};
}

dspqueue::dspqueue(remote_session & session, std::unique_ptr<wire::shared_queue> queue)
    : session_(session), queue_(std::move(queue)) {
    session_.attach(queue_.get());
}

dspqueue::~dspqueue() { session_.detach(queue_.get()); }

rpc_status dspqueue::closed_status() {
    if (session_.exit_info()) {
        return session_.died_status();
    }
    return rpc_error(rpc_errc::queue_closed, "the queue is closed (the session was stopped)");
}

rpc_status dspqueue::write(const void * message, uint32_t size, std::span<const queue_buffer> buffers) {
    return write(message, size, buffers, session_.options().timeout);
}

rpc_status dspqueue::write(const void * message, uint32_t size, std::span<const queue_buffer> buffers,
                           std::chrono::milliseconds timeout) {
    const wire::queue_message_view view{message, size, buffers.data(), uint32_t(buffers.size())};
    switch (queue_->write(wire::queue_direction::request, view, after(timeout))) {
        case wire::queue_result::ok: return {};
        case wire::queue_result::too_large:
            return rpc_error(rpc_errc::invalid_argument, "dspqueue message of " + std::to_string(size) + " bytes and " +
                                                             std::to_string(buffers.size()) + " buffers is too large");
        case wire::queue_result::closed: return closed_status();
        case wire::queue_result::timeout: break;
    }
    return session_.expire("waiting for room in the request queue", timeout);
}

rpc_status dspqueue::read(void * message, uint32_t capacity, uint32_t * size, queue_buffer * buffers,
                          uint32_t * n_buffers) {
    return read(message, capacity, size, buffers, n_buffers, session_.options().timeout);
}

rpc_status dspqueue::read(void * message, uint32_t capacity, uint32_t * size, queue_buffer * buffers,
                          uint32_t * n_buffers, std::chrono::milliseconds timeout) {
    switch (queue_->read(wire::queue_direction::response, message, capacity, size, buffers, n_buffers,
                         after(timeout), wait_)) {
        case wire::queue_result::ok: return {};
        case wire::queue_result::too_large:
            return rpc_error(rpc_errc::invalid_argument, "a dspqueue response does not fit the buffer given");
        case wire::queue_result::closed: return closed_status();
        case wire::queue_result::timeout: break;
    }
    return session_.expire("waiting for a response", timeout);
}

rpc_status write_batch(dspqueue & queue, const proto::htp_opbatch_req & req, const queue_buffer & block) {
    return queue.write(&req, sizeof req, std::span(&block, 1));
}

rpc_status read_batch_response(dspqueue & queue, proto::htp_opbatch_rsp * rsp, std::string * log,
                               std::chrono::milliseconds timeout) {
    std::vector<uint8_t> message(queue.max_message());
    uint32_t             size = 0, n_buffers = 0;
    queue_buffer         buffers[wire::QUEUE_MAX_BUFFERS];
    rpc_status st = queue.read(message.data(), uint32_t(message.size()), &size, buffers, &n_buffers, timeout);
    if (!st) {
        return st;
    }
    if (size < sizeof *rsp) {
        return rpc_error(rpc_errc::system, "a batch response shorter than htp_opbatch_rsp");
    }
    std::memcpy(rsp, message.data(), sizeof *rsp);
    log->assign(reinterpret_cast<const char *>(message.data()) + sizeof *rsp, size - sizeof *rsp);
    return {};
}

rpc_status read_batch_response(dspqueue & queue, proto::htp_opbatch_rsp * rsp, std::string * log) {
    return read_batch_response(queue, rsp, log, queue.timeout());
}

} // namespace hexnpu::vnpu::rpc
