#include "remote-session.h"

#include "dspqueue.h"
#include "proto/htp-msg.h"
#include "proto/htp-status.h"
#include "proto/hw-model.h"
#include "util/parse-setting.h"
#include "vnpu/session/shared-queue.h"
#include "vnpu/session/unix-channel.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <filesystem>
#include <new>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace hexnpu::vnpu::rpc {

namespace {

using clock = std::chrono::steady_clock;

std::string errno_text(const char * what, int err) { return std::string(what) + ": " + std::strerror(err); }

// HEXNPU_ARCH: "v79" or "79", one of the arches there is a hardware model for.
uint32_t env_arch(const std::string & text) {
    const std::string_view digits = !text.empty() && (text[0] == 'v' || text[0] == 'V')
                                        ? std::string_view(text).substr(1)
                                        : std::string_view(text);
    const auto      arch = util::parse_decimal(digits);
    proto::hw_model model{};
    if (!arch || *arch > UINT32_MAX || !proto::hw_model_for_arch(uint32_t(*arch), model)) {
        throw util::bad_setting("HEXNPU_ARCH", text, "expected one of v73, v75, v79, v81 (or 73, 75, 79, 81)");
    }
    return uint32_t(*arch);
}

std::string signal_name(int signal) {
    const char * abbrev = sigabbrev_np(signal);
    return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(signal);
}

std::string hex32(uint32_t v) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", v);
    return text;
}

std::string hex64(uint64_t v) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
    return text;
}

std::string executable_dir() {
    std::error_code ec;
    const auto      self = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string(".") : self.parent_path().string();
}

// hexnpu-htpd beside the program, or, when this code lives in a shared library loaded by another
// program (the GGML plugin in build/lib, loaded by llama.cpp), beside that library or in its ../bin.
std::string default_htpd_path() {
    namespace fs = std::filesystem;
    std::vector<fs::path> dirs;
    Dl_info               info{};
    if (dladdr(reinterpret_cast<void *>(&default_htpd_path), &info) != 0 && info.dli_fname != nullptr) {
        const fs::path module_dir = fs::absolute(fs::path(info.dli_fname)).parent_path();
        dirs.push_back(module_dir);
        dirs.push_back(module_dir / ".." / "bin");
    }
    dirs.push_back(executable_dir());
    for (const fs::path & dir : dirs) {
        std::error_code ec;
        if (fs::exists(dir / "hexnpu-htpd", ec)) {
            return (dir / "hexnpu-htpd").lexically_normal().string();
        }
    }
    return executable_dir() + "/hexnpu-htpd";
}

// Moves fd to `target` in a forked child, clearing close-on-exec (async-signal-safe calls only).
void place_fd(int fd, int target) {
    if (fd == target) {
        fcntl(fd, F_SETFD, 0);
    } else {
        dup2(fd, target);
    }
}

} // namespace

const char * rpc_errc_name(rpc_errc code) {
    switch (code) {
        case rpc_errc::ok: return "ok";
        case rpc_errc::invalid_argument: return "invalid argument";
        case rpc_errc::spawn_failed: return "spawn failed";
        case rpc_errc::remote_error: return "remote error";
        case rpc_errc::session_died: return "session died";
        case rpc_errc::timeout: return "timeout";
        case rpc_errc::queue_closed: return "queue closed";
        case rpc_errc::system: return "system error";
    }
    return "unknown";
}

// Every HEXNPU_* number goes through the strict parser shared with GGML_HEXAGON_* (src/util): a bad
// value is an error naming the variable, the value and the range, never a silent default or a
// truncation. The ranges are what the session accepts (session_platform, session_window).
session_options session_options::from_environment() {
    const uint64_t  page = uint64_t(sysconf(_SC_PAGESIZE));
    session_options o;
    if (auto v = util::env_text("HEXNPU_ARCH")) {
        o.arch = env_arch(*v);
    }
    if (auto v = util::env_text("HEXNPU_WINDOW_SIZE")) {
        // 0: the arch's; else [2 pages, 4 GiB], whole pages.
        o.window_size = util::parse_setting("HEXNPU_WINDOW_SIZE", *v, {0, uint64_t(4) << 30, page});
        if (o.window_size != 0 && o.window_size < 2 * page) {
            throw util::bad_setting("HEXNPU_WINDOW_SIZE", *v,
                                    "must be 0 (the arch's) or at least 2 pages (" + std::to_string(2 * page) + ")");
        }
    }
    if (auto v = util::env_setting("HEXNPU_EXTENDED_SIZE", {0, uint64_t(1) << 40, page})) {  // 0: none
        o.extended_size = *v;
    }
    if (auto v = util::env_setting("HEXNPU_VTCM_SIZE", {0, uint64_t(1) << 30, page})) {  // 0: the arch's
        o.vtcm_size = uint32_t(*v);
    }
    if (auto v = util::env_setting("HEXNPU_HVX_COUNT", {0, proto::HTP_MAX_NTHREADS})) {  // 0: the arch's
        o.n_hvx = uint32_t(*v);
    }
    if (auto v = util::env_setting("HEXNPU_HOST_THREADS", {0, 1024})) {  // 0: the host's cores
        o.host_threads = uint32_t(*v);
    }
    if (auto v = util::env_setting("HEXNPU_HMX_THREADS", {0, 64})) {  // 0: up to 8 of the host threads
        o.hmx_threads = uint32_t(*v);
    }
    if (auto v = util::env_setting("HEXNPU_SESSION_TIMEOUT_MS", {1, 24 * 3600 * 1000})) {  // up to a day
        o.timeout = std::chrono::milliseconds(*v);
    }
    if (auto v = util::env_text("HEXNPU_STRICT")) {
        o.strict = util::parse_flag("HEXNPU_STRICT", *v);
    }
    if (const char * p = std::getenv("HEXNPU_HTPD")) {
        o.htpd_path = p;
    }
    if (const char * p = std::getenv("HEXNPU_LIB_DIR")) {
        o.lib_dir = p;
    }
    return o;
}

remote_session::remote_session(const session_options & options) : options_(options) {}

rpc_status remote_session::open(const session_options & options, std::unique_ptr<remote_session> * out) {
    std::unique_ptr<remote_session> s(new remote_session(options));
    if (s->options_.htpd_path.empty()) {
        s->options_.htpd_path = default_htpd_path();
    }
    if (s->options_.lib_dir.empty()) {
        s->options_.lib_dir = std::filesystem::path(s->options_.htpd_path).parent_path().string() + "/../lib";
    }
    if (rpc_status st = s->spawn(); !st) {
        return st;
    }
    *out = std::move(s);
    return {};
}

rpc_status remote_session::spawn() {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        return rpc_error(rpc_errc::system, errno_text("socketpair", errno));
    }
    control_fd_       = sv[0];
    const int page_fd = memfd_create("hexnpu-session-status", MFD_CLOEXEC);
    if (page_fd < 0 || ftruncate(page_fd, sizeof(wire::status_page)) != 0) {
        const int err = errno;
        ::close(sv[1]);
        if (page_fd >= 0) {
            ::close(page_fd);
        }
        return rpc_error(rpc_errc::system, errno_text("status page", err));
    }
    void * page = ::mmap(nullptr, sizeof(wire::status_page), PROT_READ | PROT_WRITE, MAP_SHARED, page_fd, 0);
    if (page == MAP_FAILED) {
        const int err = errno;
        ::close(sv[1]);
        ::close(page_fd);
        return rpc_error(rpc_errc::system, errno_text("status page", err));
    }
    page_        = new (page) wire::status_page{};
    page_->magic = wire::STATUS_PAGE_MAGIC;

    // Everything the child needs is prepared before fork: between fork and exec it may only make
    // async-signal-safe calls (other threads of this process may hold the allocator's locks).
    std::vector<std::string> args = {options_.htpd_path, "--arch", std::to_string(options_.arch), "--lib-dir",
                                     options_.lib_dir};
    auto add = [&](const char * key, uint64_t v) {
        if (v != 0) {
            args.push_back(key);
            args.push_back(std::to_string(v));
        }
    };
    add("--window", options_.window_size);
    args.insert(args.end(), {"--extended", std::to_string(options_.extended_size)});
    add("--vtcm", options_.vtcm_size);
    add("--hvx", options_.n_hvx);
    add("--host-threads", options_.host_threads);
    add("--hmx-threads", options_.hmx_threads);
    if (!options_.strict) {
        args.insert(args.end(), {"--strict", "0"});
    }
    if (options_.test_ops) {
        args.insert(args.end(), {"--test-ops", "1"});
    }
    std::vector<char *> argv;
    for (std::string & a : args) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);

    // The session ends itself when this end of the control socket closes (even if this process is
    // killed), so it cannot outlive its client.
    pid_ = fork();
    if (pid_ == 0) {
        // Out of the way of fds 3 and 4 first, so neither dup2 overwrites the other's source.
        const int control = fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
        const int status  = fcntl(page_fd, F_DUPFD_CLOEXEC, 10);
        place_fd(control, wire::SESSION_CONTROL_FD);
        place_fd(status, wire::SESSION_STATUS_FD);
        execv(argv[0], argv.data());
        _exit(127);
    }
    const int fork_errno = errno;
    ::close(sv[1]);
    ::close(page_fd);
    if (pid_ < 0) {
        return rpc_error(rpc_errc::spawn_failed, errno_text("fork", fork_errno));
    }
    pidfd_   = int(syscall(SYS_pidfd_open, pid_, 0));
    stop_fd_ = eventfd(0, EFD_CLOEXEC);
    if (pidfd_ < 0 || stop_fd_ < 0) {
        const int err = errno;
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        closed_ = true;
        return rpc_error(rpc_errc::system, errno_text("pidfd_open/eventfd", err));
    }
    watcher_ = std::thread([this] { watch(); });

    wire::control_reply ready{};
    const int rc = wire::receive_message(control_fd_, &ready, sizeof ready, clock::now() + options_.timeout);
    if (rc == 0 && ready.op == uint32_t(wire::control_op::ready) && ready.status == 0) {
        reported_hvx_ = ready.values[2];
        return {};
    }
    rpc_status failure;
    if (rc == ETIMEDOUT) {
        failure = expire("starting", options_.timeout);
    } else if (rc == 0) {
        failure = rpc_error(rpc_errc::spawn_failed, "the session could not open: " + std::string(ready.message),
                            ready.status);
    } else {
        wait_for_exit(clock::now() + options_.timeout);
        const auto info = exit_info();
        failure         = rpc_error(rpc_errc::spawn_failed,
                                    info && info->exit_code == 127
                                        ? "cannot start " + options_.htpd_path
                                        : "the session process ended while starting: " + (info ? info->message : ""));
    }
    close();
    return failure;
}

remote_session::~remote_session() { close(); }

void remote_session::watch() {
    pollfd fds[2] = {{pidfd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    for (;;) {
        if (poll(fds, 2, -1) < 0 && errno == EINTR) {
            continue;
        }
        if (fds[0].revents != 0) {
            int wait_status = 0;
            while (waitpid(pid_, &wait_status, 0) < 0 && errno == EINTR) {
            }
            record_exit(wait_status);
            return;
        }
        if (fds[1].revents != 0) {
            return;
        }
    }
}

void remote_session::record_exit(int wait_status) {
    session_exit e;
    if (WIFSIGNALED(wait_status)) {
        e.signal = WTERMSIG(wait_status);
    } else {
        e.exit_code = WEXITSTATUS(wait_status);
    }
    e.in_batch = page_->busy.load() != 0;
    e.batch_id = page_->batch_id.load();
    e.op       = page_->current_op;
    if (const uint32_t sig = page_->fault_signal.load(std::memory_order_acquire); sig != 0 && int(sig) == e.signal) {
        e.fault           = true;
        e.fault_in_window = page_->fault_in_window != 0;
        e.fault_npu_addr  = page_->fault_npu_addr;
        e.fault_host_addr = page_->fault_host_addr;
        e.op              = page_->fault_op;
        e.batch_id        = page_->fault_batch;
        e.in_batch        = true;
    }
    std::string where = e.in_batch ? " in op " + std::to_string(e.op) + " of batch " + std::to_string(e.batch_id) : "";
    std::string text  = "session process " + std::to_string(pid_);
    std::string missed;
    {
        std::lock_guard lock(state_mutex_);
        e.killed_for_deadline = deadline_missed_.has_value();
        missed                = deadline_missed_.value_or("");
    }
    if (e.killed_for_deadline) {
        text += " missed " + missed +
                (e.in_batch ? " while running op " + std::to_string(e.op) + " of batch " + std::to_string(e.batch_id)
                            : std::string()) +
                " and was killed";
    } else if (e.fault) {
        text += " was killed by " + signal_name(e.signal) + ": " +
                (e.fault_in_window ? (e.fault_npu_addr >> 32 != 0 ? "NPU fault at extended (DMA-only) address " + hex64(e.fault_npu_addr)
                                                                   : "NPU fault at address " + hex32(uint32_t(e.fault_npu_addr)))
                                   : "fault at host address " + hex64(e.fault_host_addr) +
                                         ", outside the NPU window") +
                where;
    } else if (e.signal != 0) {
        text += " was killed by " + signal_name(e.signal) + where;
        if (const uint32_t sig = page_->external_signal.load(std::memory_order_acquire); int(sig) == e.signal) {
            // fault-report: sent with kill() by another process, not raised by the session's own code
            text += " (sent by process " + std::to_string(page_->external_sender) + ", not an NPU fault)";
        }
    } else {
        text += " exited with status " + std::to_string(e.exit_code) + where;
    }
    e.message = std::move(text);

    std::function<void()> hook;
    {
        std::lock_guard lock(state_mutex_);
        exit_ = std::move(e);
        // Nothing sleeps on a dead session's queues any more.
        for (wire::shared_queue * q : queues_) {
            q->close();
        }
        hook = std::move(exit_hook_);
        exited_cv_.notify_all();
    }
    if (hook) {
        hook();
    }
}

void remote_session::set_exit_hook(std::function<void()> hook) {
    std::unique_lock lock(state_mutex_);
    if (!exit_) {
        exit_hook_ = std::move(hook);
        return;
    }
    lock.unlock();
    if (hook) {
        hook();
    }
}

std::optional<session_exit> remote_session::exit_info() const {
    std::lock_guard lock(state_mutex_);
    return exit_;
}

bool remote_session::wait_for_exit(clock::time_point until) {
    std::unique_lock lock(state_mutex_);
    return exited_cv_.wait_until(lock, until, [&] { return exit_.has_value(); });
}

rpc_status remote_session::died_status() {
    wait_for_exit(clock::now() + options_.timeout);
    const auto info = exit_info();
    if (!info) {
        return rpc_error(rpc_errc::session_died, "session process " + std::to_string(pid_) + " hung up");
    }
    return rpc_error(info->killed_for_deadline ? rpc_errc::timeout : rpc_errc::session_died, info->message);
}

rpc_status remote_session::expire(const std::string & what, std::chrono::milliseconds limit) {
    {
        std::lock_guard lock(state_mutex_);
        if (!exit_) {
            deadline_missed_ = "a deadline of " + std::to_string(limit.count()) + " ms " + what;
        }
    }
    kill(pid_, SIGKILL);
    wait_for_exit(clock::time_point::max());
    const auto info = exit_info();
    return rpc_error(info->killed_for_deadline ? rpc_errc::timeout : rpc_errc::session_died, info->message);
}

void remote_session::attach(wire::shared_queue * queue) {
    std::lock_guard lock(state_mutex_);
    if (exit_) {
        queue->close();
    }
    queues_.insert(queue);
}

void remote_session::detach(wire::shared_queue * queue) {
    std::lock_guard lock(state_mutex_);
    queues_.erase(queue);
}

rpc_status remote_session::call(wire::control_request req, int fd, wire::control_reply * reply) {
    std::lock_guard lock(call_mutex_);
    if (closed_) {
        return rpc_error(rpc_errc::invalid_argument, "the session is closed");
    }
    if (exit_info()) {
        return died_status();
    }
    req.seq      = ++seq_;
    const int rc = wire::send_message(control_fd_, &req, sizeof req, fd);
    if (rc == EPIPE) {
        return died_status();
    }
    if (rc != 0) {
        return rpc_error(rpc_errc::system, errno_text("control request", rc));
    }
    const int got = wire::receive_message(control_fd_, reply, sizeof *reply, clock::now() + options_.timeout);
    if (got == ETIMEDOUT) {
        return expire("answering control request " + std::to_string(req.op), options_.timeout);
    }
    if (got == EPIPE) {
        return died_status();
    }
    if (got != 0 || reply->seq != req.seq) {
        return rpc_error(rpc_errc::system, "malformed control reply");
    }
    return {};
}

rpc_status remote_session::call_checked(const wire::control_request & req, int fd, const char * what,
                                        wire::control_reply * reply) {
    wire::control_reply local{};
    wire::control_reply & r  = reply ? *reply : local;
    const rpc_status      st = call(req, fd, &r);
    return st ? reply_status(r, what) : st;
}

rpc_status remote_session::reply_status(const wire::control_reply & reply, const char * what) {
    if (reply.status == 0) {
        return {};
    }
    std::string text = std::string(what) + " failed";
    if (reply.status < wire::SESSION_ERR_BAD_REQUEST) {
        text += " (" + std::string(proto::htp_status_name(uint32_t(reply.status))) + ")";
    }
    if (reply.message[0] != '\0') {
        text += ": " + std::string(reply.message, strnlen(reply.message, sizeof reply.message));
    }
    return rpc_error(rpc_errc::remote_error, std::move(text), reply.status);
}

rpc_status remote_session::close() {
    {
        std::lock_guard lock(call_mutex_);
        if (closed_) {
            return {};
        }
    }
    rpc_status result;
    if (!exit_info()) {
        wire::control_request req{};
        req.op = uint32_t(wire::control_op::close);
        wire::control_reply reply{};
        result = call(req, -1, &reply);
        if (result) {
            result = reply_status(reply, "close");
        }
        if (!wait_for_exit(clock::now() + options_.timeout)) {
            result = expire("closing", options_.timeout);
        }
    }
    std::lock_guard lock(call_mutex_);
    closed_ = true;
    if (watcher_.joinable()) {
        const uint64_t one = 1;
        (void) !write(stop_fd_, &one, sizeof one);
        watcher_.join();
    }
    if (!exit_info() && pid_ > 0) {
        // The watcher never started: reap here.
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    for (int * fd : {&control_fd_, &pidfd_, &stop_fd_}) {
        if (*fd >= 0) {
            ::close(*fd);
            *fd = -1;
        }
    }
    if (page_ != nullptr) {
        ::munmap(page_, sizeof(wire::status_page));
        page_ = nullptr;
    }
    return result;
}

rpc_status remote_session::fastrpc_mmap(int fd, uint64_t size, map_mode mode) {
    if (fd < 0 || size == 0) {
        return rpc_error(rpc_errc::invalid_argument, "fastrpc_mmap needs a buffer fd and its size");
    }
    wire::control_request req{};
    req.op      = uint32_t(wire::control_op::map_fd);
    req.host_fd = fd;
    req.size    = size;
    req.flags   = mode == map_mode::pinned ? wire::MAP_FD_PINNED : 0;
    return call_checked(req, fd, "fastrpc_mmap");
}

rpc_status remote_session::fastrpc_munmap(int fd) {
    wire::control_request req{};
    req.op      = uint32_t(wire::control_op::unmap_fd);
    req.host_fd = fd;
    return call_checked(req, -1, "fastrpc_munmap");
}

rpc_status remote_session::start(const dspqueue & queue, uint32_t n_hvx, uint32_t n_hmx, uint64_t max_vmem) {
    wire::control_request req{};
    req.op       = uint32_t(wire::control_op::start);
    req.n_hvx    = n_hvx;
    req.n_hmx    = n_hmx;
    req.max_vmem = max_vmem;
    return call_checked(req, queue.queue_->fd(), "start");
}

rpc_status remote_session::stop() {
    wire::control_request req{};
    req.op = uint32_t(wire::control_op::stop);
    return call_checked(req, -1, "stop");
}

rpc_status remote_session::hwinfo(hw_info * info) {
    wire::control_request req{};
    req.op = uint32_t(wire::control_op::hwinfo);
    wire::control_reply reply{};
    const rpc_status    st = call_checked(req, -1, "hwinfo", &reply);
    if (st) {
        *info = hw_info{reply.values[0], reply.values[1], reply.values[2], reply.values[3]};
    }
    return st;
}

rpc_status remote_session::mmap(int fd, uint64_t size, bool pinned) {
    wire::control_request req{};
    req.op      = uint32_t(wire::control_op::htp_mmap);
    req.host_fd = fd;
    req.size    = size;
    req.flags   = pinned ? 1 : 0;
    return call_checked(req, -1, "mmap");
}

rpc_status remote_session::munmap(int fd) {
    wire::control_request req{};
    req.op      = uint32_t(wire::control_op::htp_munmap);
    req.host_fd = fd;
    return call_checked(req, -1, "munmap");
}

rpc_status remote_session::profiler(uint32_t mode) {
    wire::control_request req{};
    req.op    = uint32_t(wire::control_op::profiler);
    req.flags = mode;
    return call_checked(req, -1, "profiler");
}

} // namespace hexnpu::vnpu::rpc
