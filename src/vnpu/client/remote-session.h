// One NPU session as the host sees it (the remote_handle64 analog of libcdsprpc): a hexnpu-htpd
// child process started on open, the htp_iface calls (start, stop, hwinfo, mmap, munmap) and buffer
// registration (fastrpc_mmap/munmap) over its control socket. Every wait has a deadline; a session
// that dies is noticed at once (pidfd), and every later call reports how it died: the signal, and
// for a fault the NPU address and the op. A hung session is killed when it misses its deadline.
#pragma once

#include "rpc-status.h"
#include "vnpu/session/control-protocol.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <sys/types.h>
#include <thread>

namespace hexnpu::vnpu::wire {
class shared_queue;
}

namespace hexnpu::vnpu::rpc {

class dspqueue;

struct session_options {
    uint32_t                  arch         = 79;
    uint64_t                  window_size  = 0;  // 0: the arch's
    uint32_t                  vtcm_size    = 0;  // 0: the arch's
    uint32_t                  n_hvx        = 0;  // HVX contexts reported; 0: the arch's
    uint32_t                  host_threads = 0;  // 0: the host's cores
    uint32_t                  hmx_threads  = 0;  // host threads computing the HMX unit's stores; 0: up to 8 of host_threads
    // The extended region of 64-bit DMA arches (v81): 16 GiB by default, 0 none.
    uint64_t                  extended_size = uint64_t(16) << 30;
    std::chrono::milliseconds timeout{30000};    // deadline of every control call and queue wait
    std::string               htpd_path;         // "": next to the running executable
    std::string               lib_dir;           // "": ../lib relative to hexnpu-htpd
    // Strict DMA bookkeeping (poisoned destinations, snapshots of VTCM sources): on by default and
    // in every test; off only to measure kernels at the speed of plain copies.
    bool strict = true;
    // Loads the test variant of the NPU library (libhexnpu-htp-vNN-test.so), the only one with the
    // HTP_OP_TEST_* ops (fault, hang, crash, DMA misuse): for tests, never for production hosts.
    bool test_ops = false;

    // HEXNPU_ARCH ("v79" or "79"), HEXNPU_WINDOW_SIZE, HEXNPU_EXTENDED_SIZE, HEXNPU_VTCM_SIZE, HEXNPU_HVX_COUNT,
    // HEXNPU_HOST_THREADS, HEXNPU_SESSION_TIMEOUT_MS, HEXNPU_STRICT (0 or 1), HEXNPU_HTPD,
    // HEXNPU_LIB_DIR. Numbers are decimal or 0x hex, parsed strictly (src/util/parse-setting.h): a
    // bad value throws std::invalid_argument naming the variable, the value and the accepted range.
    // Unset or empty means the default.
    static session_options from_environment();
};

// fastrpc_mmap flags: a pinned buffer is mapped at once (the op-queue buffer must be); a delayed
// one only when a batch's NPU window mapping needs it.
enum class map_mode { pinned, delayed };

struct hw_info {
    uint32_t n_threads = 0;  // HVX threads the session started
    uint32_t n_hmx     = 0;
    uint32_t vtcm_size = 0;
    uint32_t arch      = 0;
};

// How a session process ended, read from its exit status and the status page it shared.
struct session_exit {
    int         signal              = 0;  // killed by this signal, else 0
    int         exit_code           = 0;
    bool        killed_for_deadline = false;
    bool        in_batch            = false;  // a batch was running: batch_id and op are valid
    uint32_t    batch_id            = 0;
    uint32_t    op                  = 0;
    bool        fault               = false;  // a SIGSEGV/SIGBUS the session recorded
    bool        fault_in_window     = false;
    uint64_t    fault_npu_addr      = 0;  // >= 4 GiB: the extended region
    uint64_t    fault_host_addr     = 0;
    std::string message;
};

class remote_session {
  public:
    static rpc_status open(const session_options & options, std::unique_ptr<remote_session> * out);
    // Closes the session if still open (see close()).
    ~remote_session();

    remote_session(const remote_session &)             = delete;
    remote_session & operator=(const remote_session &) = delete;

    // Ends the session: stops it, closes the NPU library and waits for the process to exit
    // (killing it at the deadline).
    rpc_status close();

    rpc_status fastrpc_mmap(int fd, uint64_t size, map_mode mode);
    rpc_status fastrpc_munmap(int fd);

    // htp_iface: start takes the dspqueue batches arrive on.
    rpc_status start(const dspqueue & queue, uint32_t n_hvx, uint32_t n_hmx, uint64_t max_vmem);
    rpc_status stop();
    rpc_status hwinfo(hw_info * info);
    rpc_status mmap(int fd, uint64_t size, bool pinned);
    rpc_status munmap(int fd);
    // Profiles every batch at least at mode (0 off, 1 per-op timing, 3 timing and trace events,
    // recorded where the batch has trace room).
    rpc_status profiler(uint32_t mode);

    pid_t                   pid() const { return pid_; }
    const session_options & options() const { return options_; }
    uint32_t                reported_hvx() const { return reported_hvx_; }
    // Set once the process has ended (and was reaped).
    std::optional<session_exit> exit_info() const;
    // Called once, on the thread that reaps the process, when it ends (at once when it already
    // has); an empty function removes the hook. A device group uses it to fail the member's fence.
    void                        set_exit_hook(std::function<void()> hook);

  private:
    friend class dspqueue;

    explicit remote_session(const session_options & options);

    rpc_status spawn();
    rpc_status call(wire::control_request req, int fd, wire::control_reply * reply);
    rpc_status reply_status(const wire::control_reply & reply, const char * what);
    // call() then reply_status(): the transport's or the session's error, whichever comes first.
    rpc_status call_checked(const wire::control_request & req, int fd, const char * what,
                            wire::control_reply * reply = nullptr);
    void       watch();
    void       record_exit(int wait_status);
    // The session missed a deadline of `limit` while `what` ("waiting for a response"): kill it
    // and say so.
    rpc_status expire(const std::string & what, std::chrono::milliseconds limit);
    rpc_status died_status();
    bool       wait_for_exit(std::chrono::steady_clock::time_point until);
    void       attach(wire::shared_queue * queue);
    void       detach(wire::shared_queue * queue);

    session_options     options_;
    pid_t               pid_          = -1;
    int                 pidfd_        = -1;
    int                 control_fd_   = -1;
    int                 stop_fd_      = -1;  // eventfd that ends the watcher
    wire::status_page * page_         = nullptr;
    uint32_t            reported_hvx_ = 0;
    uint32_t            seq_          = 0;
    bool                closed_       = false;

    std::mutex call_mutex_;  // one control call at a time

    mutable std::mutex             state_mutex_;
    std::function<void()>          exit_hook_;  // under state_mutex_
    std::condition_variable        exited_cv_;
    std::optional<session_exit>    exit_;
    std::optional<std::string>     deadline_missed_;  // set before a deadline kill: which one
    std::set<wire::shared_queue *> queues_;  // closed when the process dies
    std::thread                    watcher_;  // waits on the pidfd
};

} // namespace hexnpu::vnpu::rpc
