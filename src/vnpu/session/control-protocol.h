// What the client library and a session process (hexnpu-htpd) say to each other over the control
// socket (the FastRPC remote-interface analog), and the status page they share. Requests and
// replies are small fixed structs, one per SOCK_SEQPACKET message; a buffer fd travels with its
// request as SCM_RIGHTS. Both sides are built from this tree, so the layout needs no versioning
// beyond the magic the session checks.
#pragma once

#include <atomic>
#include <cstdint>

namespace hexnpu::vnpu::wire {

// The fds a session process finds at start (set up by the client before exec).
inline constexpr int SESSION_CONTROL_FD = 3;
inline constexpr int SESSION_STATUS_FD  = 4;

enum class control_op : uint32_t {
    ready = 1,  // the session's first reply (no request): the NPU library is loaded and open
    start,      // fd: the dspqueue region; n_hvx, n_hmx, max_vmem
    stop,
    hwinfo,
    htp_mmap,    // host_fd, size, flags (1: pinned): map into the NPU window now
    htp_munmap,  // host_fd: drop the NPU window mapping
    map_fd,      // fd: a DDR buffer; host_fd (the client's fd number, the id batches use), size, flags
    unmap_fd,    // host_fd
    profiler,    // flags: the profile mode every batch gets at least (0 off, 1 timing, 3 trace)
    close,
};

// fastrpc_mmap flags (map_fd): a pinned buffer is mapped into the session process at once (what the
// session needs to read dspqueue buffers such as the op queue); a delayed one only when the NPU
// window maps it for a batch.
inline constexpr uint32_t MAP_FD_PINNED = 1;

struct control_request {
    uint32_t op;  // control_op
    uint32_t seq;
    int32_t  host_fd;
    uint32_t flags;
    uint64_t size;
    uint64_t max_vmem;
    uint32_t n_hvx;
    uint32_t n_hmx;
};

struct control_reply {
    uint32_t op;
    uint32_t seq;
    int32_t  status;     // 0, or an htp_status / session error
    uint32_t values[4];  // hwinfo: n_threads, n_hmx, vtcm_size, arch; ready: arch, vtcm_size, n_hvx reported
    char     message[1008];  // NUL-terminated: the error and the session's log lines since the last reply
};

// Session-side error codes next to the htp_status values (which start at 1 for OK).
inline constexpr int32_t SESSION_ERR_BAD_REQUEST = 100;  // unknown op, missing fd, unknown host fd
inline constexpr int32_t SESSION_ERR_SYSTEM      = 101;  // a system call failed (message says which)

// One shared page per session, written by the session, read by the client when the process dies
// or misses a deadline: which batch and op were running, and for a fault where it hit.
struct status_page {
    uint32_t              magic;
    std::atomic<uint32_t> busy;      // 1 while a batch runs
    std::atomic<uint32_t> batch_id;  // htp_opbatch_req::id of the batch running or last run
    volatile uint32_t     current_op;  // published by the runtime before each op

    // Written by the fault handler (async-signal-safe), fault_signal last.
    uint32_t              fault_in_window;  // the address was inside the NPU window or extended region
    uint32_t              fault_op;
    uint64_t              fault_npu_addr;   // >= 4 GiB: in the extended region (DMA only)
    uint32_t              fault_batch;
    uint32_t              fault_pad;
    uint64_t              fault_host_addr;
    std::atomic<uint32_t> fault_signal;  // 0: no fault recorded

    // A SIGSEGV/SIGBUS sent by another process (kill(2)), not raised by an access: who sent it.
    uint32_t              external_sender;
    std::atomic<uint32_t> external_signal;  // 0: none; written after external_sender
};

inline constexpr uint32_t STATUS_PAGE_MAGIC = 0x48545044;  // "HTPD"

} // namespace hexnpu::vnpu::wire
