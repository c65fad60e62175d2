#include "session-server.h"

#include "fault-report.h"
#include "proto/htp-msg.h"
#include "proto/htp-status.h"
#include "unix-channel.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <dlfcn.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace hexnpu::vnpu::htpd {

namespace {

// Bounds what a session keeps of its log between two replies.
constexpr size_t MAX_PENDING_LOG = 64 * 1024;

template <typename F> bool resolve(void * handle, const char * name, F * out, std::string * error) {
    *out = reinterpret_cast<F>(dlsym(handle, name));
    if (*out == nullptr) {
        *error = std::string("the NPU library lacks ") + name;
        return false;
    }
    return true;
}

} // namespace

session_server::session_server(int control_fd, wire::status_page * page) : control_fd_(control_fd), page_(page) {}

session_server::~session_server() {
    do_stop();
    if (session_ != nullptr) {
        lib_.close(session_);
    }
    while (!buffers_.empty()) {
        unregister(buffers_.begin());
    }
    // The library is left loaded: the platform's threads are gone, but nothing is gained by
    // unloading code in a process about to exit.
}

void session_server::log(int level, const std::string & message) {
    if (level > 1) {
        return;
    }
    std::lock_guard lock(log_mutex_);
    if (pending_log_.size() + message.size() + 1 <= MAX_PENDING_LOG) {
        pending_log_ += message;
        pending_log_ += '\n';
    }
}

std::string session_server::take_log() {
    std::lock_guard lock(log_mutex_);
    return std::exchange(pending_log_, {});
}

bool session_server::open_session(const server_options & options, std::string * error) {
    platform_config config = options.platform;
    config.log             = [this](int level, const std::string & message) { log(level, message); };
    platform_              = session_platform::create(config, error);
    if (!platform_) {
        return false;
    }
    const std::string path =
        options.lib_dir + "/libhexnpu-htp-v" + std::to_string(config.arch) + (options.test_ops ? "-test.so" : ".so");
    lib_.handle            = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib_.handle == nullptr) {
        *error = "cannot load the NPU library: " + std::string(dlerror());
        return false;
    }
    if (!resolve(lib_.handle, "htp_iface_open", &lib_.open, error) ||
        !resolve(lib_.handle, "htp_iface_start", &lib_.start, error) ||
        !resolve(lib_.handle, "htp_iface_stop", &lib_.stop, error) ||
        !resolve(lib_.handle, "htp_iface_close", &lib_.close, error) ||
        !resolve(lib_.handle, "htp_iface_hwinfo", &lib_.hwinfo, error) ||
        !resolve(lib_.handle, "htp_iface_mmap", &lib_.mmap, error) ||
        !resolve(lib_.handle, "htp_iface_munmap", &lib_.munmap, error) ||
        !resolve(lib_.handle, "htp_iface_process_batch", &lib_.process_batch, error)) {
        return false;
    }
    if (const int rc = lib_.open(&platform_->table(), &session_); rc != 0) {
        *error = "htp_iface_open failed: " + std::string(proto::htp_status_name(uint32_t(rc)));
        session_ = nullptr;
        return false;
    }
    install_fault_report(platform_.get(), page_);
    return true;
}

void session_server::reply(const wire::control_request & req, int32_t status, std::string message,
                           const uint32_t (&values)[4]) {
    wire::control_reply r{};
    r.op     = req.op;
    r.seq    = req.seq;
    r.status = status;
    std::copy(std::begin(values), std::end(values), r.values);
    const std::string logged = take_log();
    if (!logged.empty()) {
        message += message.empty() ? logged : "\n" + logged;
    }
    message.copy(r.message, sizeof r.message - 1);
    wire::send_message(control_fd_, &r, sizeof r);
}

int session_server::run(const server_options & options) {
    wire::control_request ready{};
    ready.op = uint32_t(wire::control_op::ready);
    std::string error;
    if (!open_session(options, &error)) {
        reply(ready, proto::HTP_STATUS_INTERNAL_ERR, error);
        return 1;
    }
    const proto::hw_model & hw = platform_->table().hw;
    reply(ready, 0, {}, {hw.arch, platform_->table().vtcm_size, hw.n_hvx, 0});
    // A session whose client is gone has no one to answer to, even if a batch or a control request
    // is stuck: the watchdog ends the process as soon as the client's end of the socket closes.
    std::thread([fd = control_fd_] {
        pollfd p{fd, POLLRDHUP, 0};
        while (poll(&p, 1, -1) < 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) == 0) {
        }
        std::_Exit(0);
    }).detach();
    for (;;) {
        wire::control_request req{};
        int                   fd = -1;
        const int             rc = wire::receive_message(control_fd_, &req, sizeof req, wire::deadline::max(), &fd);
        if (rc == EPIPE) {
            return 0;  // the client is gone: nothing is left to serve
        }
        if (rc != 0) {
            if (fd >= 0) {
                ::close(fd);
            }
            continue;  // a malformed message: the client gets no reply and reports its own timeout
        }
        if (req.op == uint32_t(wire::control_op::close)) {
            do_stop();
            lib_.close(session_);
            session_ = nullptr;
            reply(req, 0);
            return 0;
        }
        handle(req, fd);
    }
}

void session_server::handle(const wire::control_request & req, int fd) {
    std::string error;
    int32_t     status = 0;
    uint32_t    values[4]{};
    switch (wire::control_op(req.op)) {
        case wire::control_op::start:
            status = do_start(req, fd, &error);
            fd     = -1;  // closed by do_start (the queue keeps its own)
            break;
        case wire::control_op::stop:
            if (!started_) {
                status = proto::HTP_STATUS_INVAL_PARAMS;
                error  = "the session is not started";
            }
            do_stop();
            break;
        case wire::control_op::hwinfo: {
            std::lock_guard lock(npu_mutex_);
            status = lib_.hwinfo(session_, &values[0], &values[1], &values[2], &values[3]);
            break;
        }
        case wire::control_op::htp_mmap:
        case wire::control_op::htp_munmap: {
            std::lock_guard lock(npu_mutex_);
            const auto      it = buffers_.find(req.host_fd);
            if (it == buffers_.end()) {
                status = wire::SESSION_ERR_BAD_REQUEST;
                error  = "fd " + std::to_string(req.host_fd) + " is not registered with this session (fastrpc_mmap)";
            } else if (wire::control_op(req.op) == wire::control_op::htp_mmap) {
                status = lib_.mmap(session_, it->second.local_fd, req.size, req.flags & 1);
            } else {
                status = lib_.munmap(session_, it->second.local_fd);
            }
            break;
        }
        case wire::control_op::map_fd:
            status = do_map_fd(req, fd, &error);
            fd     = -1;  // kept or closed by do_map_fd
            break;
        case wire::control_op::unmap_fd:
            status = do_unmap_fd(req, &error);
            break;
        case wire::control_op::profiler: {
            if (req.flags != 0 && req.flags != 1 && req.flags != 3) {
                status = proto::HTP_STATUS_INVAL_PARAMS;
                error  = "profiler modes are 0 (off), 1 (timing) and 3 (timing and trace events)";
                break;
            }
            std::lock_guard lock(npu_mutex_);
            profiler_mode_ = req.flags;
            break;
        }
        default:
            status = wire::SESSION_ERR_BAD_REQUEST;
            error  = "unknown control request " + std::to_string(req.op);
            break;
    }
    if (fd >= 0) {
        ::close(fd);  // a fd the request did not need
    }
    reply(req, status, std::move(error), values);
}

int32_t session_server::do_start(const wire::control_request & req, int queue_fd, std::string * error) {
    if (queue_fd < 0) {
        *error = "start needs the queue's fd";
        return wire::SESSION_ERR_BAD_REQUEST;
    }
    std::unique_ptr<wire::shared_queue> queue = wire::shared_queue::attach(queue_fd, error);
    ::close(queue_fd);
    if (!queue) {
        return wire::SESSION_ERR_BAD_REQUEST;
    }
    if (queue->max_message() < sizeof(proto::htp_opbatch_rsp)) {
        *error = "the queue's messages are too small for a batch response";
        return wire::SESSION_ERR_BAD_REQUEST;
    }
    std::lock_guard lock(npu_mutex_);
    if (started_) {
        *error = "the session is already started";
        return proto::HTP_STATUS_INVAL_PARAMS;
    }
    if (const int rc = lib_.start(session_, req.n_hvx, req.n_hmx, req.max_vmem); rc != 0) {
        return rc;
    }
    started_      = true;
    queue_        = std::move(queue);
    queue_thread_ = std::thread([this] { queue_loop(); });
    return 0;
}

void session_server::do_stop() {
    if (!started_) {
        return;
    }
    // Closing the queue wakes the queue thread; a batch in progress finishes first.
    queue_->close();
    queue_thread_.join();
    std::lock_guard lock(npu_mutex_);
    lib_.stop(session_);
    started_ = false;
    queue_.reset();
}

int32_t session_server::do_map_fd(const wire::control_request & req, int fd, std::string * error) {
    if (fd < 0) {
        *error = "fastrpc_mmap needs the buffer's fd";
        return wire::SESSION_ERR_BAD_REQUEST;
    }
    struct stat st{};
    if (fstat(fd, &st) != 0 || uint64_t(st.st_size) < req.size || req.size == 0) {
        *error = "fd " + std::to_string(req.host_fd) + " holds " + std::to_string(uint64_t(st.st_size)) +
                 " bytes, not the " + std::to_string(req.size) + " given";
        ::close(fd);
        return proto::HTP_STATUS_INVAL_PARAMS;
    }
    registered_buffer buffer{fd, req.size, nullptr};
    if (req.flags & wire::MAP_FD_PINNED) {
        void * p = mmap(nullptr, req.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            *error = "cannot map fd " + std::to_string(req.host_fd) + ": " + std::strerror(errno);
            ::close(fd);
            return wire::SESSION_ERR_SYSTEM;
        }
        buffer.mapped = static_cast<uint8_t *>(p);
    }
    std::lock_guard lock(npu_mutex_);
    if (auto it = buffers_.find(req.host_fd); it != buffers_.end()) {
        // The client's fd number was freed and reused without fastrpc_munmap: the old buffer is gone.
        unregister(it);
    }
    buffers_.emplace(req.host_fd, buffer);
    return 0;
}

int32_t session_server::do_unmap_fd(const wire::control_request & req, std::string * error) {
    std::lock_guard lock(npu_mutex_);
    const auto      it = buffers_.find(req.host_fd);
    if (it == buffers_.end()) {
        *error = "fd " + std::to_string(req.host_fd) + " is not registered with this session";
        return wire::SESSION_ERR_BAD_REQUEST;
    }
    unregister(it);
    return 0;
}

void session_server::unregister(std::map<int32_t, registered_buffer>::iterator it) {
    // Drop the window mapping first, so a later buffer that gets the same local fd number cannot
    // reach this one's pages.
    if (started_) {
        lib_.munmap(session_, it->second.local_fd);
    }
    if (it->second.mapped != nullptr) {
        munmap(it->second.mapped, it->second.size);
    }
    ::close(it->second.local_fd);
    buffers_.erase(it);
}

void session_server::queue_loop() {
    std::vector<uint8_t> message(queue_->max_message());
    for (;;) {
        proto::htp_opbatch_req req{};
        wire::queue_buffer     bufs[wire::QUEUE_MAX_BUFFERS];
        uint32_t               size = 0, n_bufs = 0;
        const wire::queue_result got = queue_->read(wire::queue_direction::request, message.data(),
                                                    uint32_t(message.size()), &size, bufs, &n_bufs,
                                                    wire::deadline::max());
        if (got == wire::queue_result::closed) {
            return;
        }
        proto::htp_opbatch_rsp rsp{};
        if (got != wire::queue_result::ok || size != sizeof req || n_bufs != 1) {
            rsp.status    = proto::HTP_STATUS_INVAL_PARAMS;
            rsp.failed_op = proto::HTP_FAILED_BATCH;
            log(0, "htpd: a queue message is not one batch request with its op-queue buffer");
        } else {
            std::memcpy(&req, message.data(), sizeof req);
            run_batch(req, bufs[0], &rsp);
        }
        // The response: htp_opbatch_rsp, then what the session logged during the batch.
        const std::string logged = take_log();
        const size_t      n_log  = std::min(logged.size(), message.size() - sizeof rsp);
        std::memcpy(message.data(), &rsp, sizeof rsp);
        std::memcpy(message.data() + sizeof rsp, logged.data(), n_log);
        const wire::queue_message_view out{message.data(), uint32_t(sizeof rsp + n_log), bufs, n_bufs == 1 ? 1u : 0u};
        if (queue_->write(wire::queue_direction::response, out, wire::deadline::max()) != wire::queue_result::ok) {
            return;
        }
    }
}

void session_server::run_batch(const proto::htp_opbatch_req & req, const wire::queue_buffer & where,
                               proto::htp_opbatch_rsp * rsp) {
    rsp->id        = req.id;
    rsp->status    = proto::HTP_STATUS_INVAL_PARAMS;
    rsp->failed_op = proto::HTP_FAILED_BATCH;

    std::lock_guard lock(npu_mutex_);
    const auto      it = buffers_.find(where.fd);
    if (it == buffers_.end() || it->second.mapped == nullptr) {
        log(0, "htpd: the batch's op-queue buffer (fd " + std::to_string(where.fd) +
                   ") is not registered as pinned with this session");
        return;
    }
    if (where.offset % 8 != 0 || where.offset > it->second.size || where.size > it->second.size - where.offset) {
        log(0, "htpd: the batch block lies outside its op-queue buffer or is misaligned");
        return;
    }
    uint8_t * block = it->second.mapped + where.offset;

    // The buffer descriptors name the client's fds: run the batch on this process's own, then put
    // the client's back (the block is shared memory the client reads afterwards).
    // (More than HTP_OP_MAX_BUFS descriptors is a malformed batch the runtime rejects untouched.)
    const size_t n_descs = req.n_bufs <= proto::HTP_OP_MAX_BUFS
                               ? std::min<size_t>(req.n_bufs, where.size / sizeof(proto::htp_buf_desc))
                               : 0;
    auto *       descs   = reinterpret_cast<proto::htp_buf_desc *>(block);
    int32_t      client_fds[proto::HTP_OP_MAX_BUFS];
    auto         restore_fds = [&](size_t n) {
        for (size_t k = 0; k < n; ++k) {
            descs[k].fd = client_fds[k];
        }
    };
    for (size_t i = 0; i < n_descs; ++i) {
        client_fds[i]    = descs[i].fd;
        const auto known = buffers_.find(descs[i].fd);
        if (known == buffers_.end()) {
            log(0, "htpd: batch buffer " + std::to_string(i) + " (fd " + std::to_string(descs[i].fd) +
                       ") is not registered with this session (fastrpc_mmap)");
            restore_fds(i);
            return;
        }
        descs[i].fd = known->second.local_fd;
    }
    // The profiler raises valid modes (an invalid one stays for the runtime to reject).
    proto::htp_opbatch_req run = req;
    if (run.profile == 0 || run.profile == 1) {
        run.profile = std::max(run.profile, profiler_mode_);
    }
    page_->batch_id.store(req.id);
    page_->current_op = 0;
    page_->busy.store(1);
    lib_.process_batch(session_, &run, block, where.size, rsp, &page_->current_op);
    page_->busy.store(0);
    restore_fds(n_descs);
}

} // namespace hexnpu::vnpu::htpd
