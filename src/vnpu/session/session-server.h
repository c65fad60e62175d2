// One NPU session process: loads the arch's NPU library on a virtual NPU platform, serves the
// control requests (start, stop, hwinfo, mmap, munmap, buffer registration, close) from the
// client's socket, and runs op batches from the shared queue on its own thread.
#pragma once

#include "control-protocol.h"
#include "htp/htp-iface.h"
#include "shared-queue.h"
#include "vnpu/platform/session-platform.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace hexnpu::vnpu::htpd {

struct server_options {
    platform_config platform;
    std::string     lib_dir;           // where libhexnpu-htp-vNN.so lives
    bool            test_ops = false;  // load libhexnpu-htp-vNN-test.so (with the HTP_OP_TEST_* ops)
};

class session_server {
  public:
    session_server(int control_fd, wire::status_page * page);
    ~session_server();

    // Serves until the client closes the session or hangs up; returns the process exit code.
    int run(const server_options & options);

  private:
    // The NPU library's entry points, resolved with dlsym.
    struct npu_library {
        void * handle = nullptr;
        decltype(&htp_iface_open)          open;
        decltype(&htp_iface_start)         start;
        decltype(&htp_iface_stop)          stop;
        decltype(&htp_iface_close)         close;
        decltype(&htp_iface_hwinfo)        hwinfo;
        decltype(&htp_iface_mmap)          mmap;
        decltype(&htp_iface_munmap)        munmap;
        decltype(&htp_iface_process_batch) process_batch;
    };

    // A DDR buffer the client registered (fastrpc_mmap): its fd in this process and, when pinned,
    // its mapping in this process (what dspqueue buffers are read through).
    struct registered_buffer {
        int       local_fd = -1;
        uint64_t  size     = 0;
        uint8_t * mapped   = nullptr;
    };

    bool open_session(const server_options & options, std::string * error);
    void reply(const wire::control_request & req, int32_t status, std::string message = {},
               const uint32_t (&values)[4] = {});
    void handle(const wire::control_request & req, int fd);

    int32_t do_start(const wire::control_request & req, int queue_fd, std::string * error);
    void    do_stop();
    int32_t do_map_fd(const wire::control_request & req, int fd, std::string * error);
    int32_t do_unmap_fd(const wire::control_request & req, std::string * error);
    void    unregister(std::map<int32_t, registered_buffer>::iterator it);

    void queue_loop();
    void run_batch(const proto::htp_opbatch_req & req, const wire::queue_buffer & where, proto::htp_opbatch_rsp * rsp);

    void        log(int level, const std::string & message);
    std::string take_log();

    int                 control_fd_;
    wire::status_page * page_;

    std::unique_ptr<session_platform> platform_;
    npu_library                       lib_;
    htp_session *                     session_ = nullptr;
    bool                              started_ = false;

    // Held across every call into the NPU library: batches and control requests take turns.
    std::mutex                           npu_mutex_;
    std::map<int32_t, registered_buffer> buffers_;  // by the client's fd number
    uint32_t                             profiler_mode_ = 0;

    std::unique_ptr<wire::shared_queue> queue_;
    std::thread                         queue_thread_;

    std::mutex  log_mutex_;
    std::string pending_log_;
};

} // namespace hexnpu::vnpu::htpd
