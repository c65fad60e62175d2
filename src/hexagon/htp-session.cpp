#include "htp-session.h"

#include "hexnpu/backend.h"
#include "proto/hw-model.h"

#include <algorithm>
#include <cstdio>
#include <system_error>

namespace hexnpu::hexagon {
namespace {

using vnpu::rpc::rpc_status;

// Room for the session's log lines of one batch next to the response.
constexpr uint32_t RESPONSE_BYTES = 64 * 1024;
// Trace records per thread slot and op when GGML_HEXAGON_OPTRACE does not say.
constexpr uint32_t TRACE_PER_OP = 256;
constexpr uint32_t TRACE_MAX_DEFAULT = 1u << 16;

uint32_t wire_profile(htp_profile_mode mode) {
    switch (mode) {
        case htp_profile_mode::off: return 0;
        case htp_profile_mode::basic:
        case htp_profile_mode::pmu: return 1;
        case htp_profile_mode::trace: return 3;
    }
    return 0;
}

} // namespace

htp_session::htp_session(const std::string & device_name, const htp_options & options,
                         const vnpu::rpc::session_options & session_options)
    : name_(device_name) {
    const vnpu::rpc::session_options & so = session_options;
    if (rpc_status st = vnpu::rpc::remote_session::open(so, &session_); !st) {
        fail("cannot open the NPU session", st);
    }
    if (rpc_status st = session_->hwinfo(&hw_); !st) {
        fail("hwinfo failed", st);
    }
    library_ = "libhexnpu-htp-v" + std::to_string(hw_.arch) + ".so";
    proto::hw_model model{};
    proto::hw_model_for_arch(hw_.arch, model);
    window_ = so.window_size != 0 ? so.window_size : model.window_size;

    const htp_window_budget budget = htp_window_budget_of(options, so.window_size, hw_.arch);
    profile_            = options.collect_trace ? 3 : wire_profile(options.profile);
    limits_.max_ops     = options.op_batch;
    limits_.max_tensors = std::min(7 * options.op_batch, proto::HTP_OP_MAX_TENSORS);
    limits_.max_bufs    = proto::HTP_OP_MAX_BUFS;
    limits_.vmem        = budget.bytes;
    limits_.vmem_source = budget.source;
    limits_.extended    = htp_uses_extended_region(options, hw_.arch, so.extended_size);
    if (profile_ == 3) {
        limits_.n_traces = options.op_trace != 0 ? options.op_trace
                                                 : std::min(TRACE_MAX_DEFAULT, TRACE_PER_OP * options.op_batch);
    }
    n_slots_    = options.op_queue;
    block_size_ = proto::htp_batch_layout_of(limits_.max_bufs, limits_.max_tensors, limits_.max_ops, limits_.n_traces)
                      .total;
    block_size_ = (block_size_ + 4095) / 4096 * 4096;

    if (rpc_status st = vnpu::rpc::dspqueue::create(*session_, n_slots_, RESPONSE_BYTES, &queue_); !st) {
        fail("cannot create the batch queue", st);
    }
    queue_->set_wait(options.op_poll ? vnpu::wire::queue_wait::poll : vnpu::wire::queue_wait::sleep);
    if (rpc_status st = session_->start(*queue_, options.n_hvx, options.n_hmx, limits_.vmem); !st) {
        fail("start failed", st);
    }
    // start() may give fewer threads than asked; hwinfo now says how many run.
    if (rpc_status st = session_->hwinfo(&hw_); !st) {
        fail("hwinfo failed", st);
    }
    try {
        opqueue_ = std::make_unique<vnpu::shared_buffer>(block_size_ * n_slots_);
    } catch (const std::system_error & e) {
        throw backend_error(name_ + ": cannot allocate the " + std::to_string(block_size_ * n_slots_) +
                            "-byte op queue buffer: " + e.what());
    }
    if (rpc_status st = session_->fastrpc_mmap(opqueue_->fd(), opqueue_->size(), vnpu::rpc::map_mode::pinned); !st) {
        fail("cannot map the op queue buffer", st);
    }
}

bool htp_uses_extended_region(const htp_options & options, uint32_t arch, uint64_t extended_size) {
    proto::hw_model model{};
    return proto::hw_model_for_arch(arch, model) && model.dma64 != 0 && extended_size != 0 && options.dma64.value_or(true);
}

htp_window_budget htp_window_budget_of(const htp_options & options, uint64_t window_setting, uint32_t arch) {
    proto::hw_model model{};
    proto::hw_model_for_arch(arch, model);
    const uint64_t window = window_setting != 0 ? window_setting : model.window_size;
    const uint64_t vmem   = options.vmem_for_arch(arch);
    if (vmem != 0 && vmem <= window) {
        return {vmem, options.vmem ? "GGML_HEXAGON_VMEM" : "GGML_HEXAGON_VMEM's default for v" + std::to_string(arch)};
    }
    return {window, window_setting != 0 ? "HEXNPU_WINDOW_SIZE" : "the v" + std::to_string(arch) + " session window"};
}

htp_session::~htp_session() {
    queue_.reset();
    session_.reset();
}

void htp_session::fail(const std::string & what, const rpc_status & st) {
    if (st.code == vnpu::rpc::rpc_errc::session_died || st.code == vnpu::rpc::rpc_errc::timeout) {
        dead_ = true;
    }
    throw backend_error(name_ + ": " + what + ": " + vnpu::rpc::rpc_errc_name(st.code) + ": " + st.message);
}

std::unordered_map<int, uint64_t> htp_session::pinned_buffers() const {
    std::lock_guard lock(mutex_);
    return pinned_sizes_;
}

void htp_session::ensure_registered(int fd, uint64_t size, bool pinned) {
    std::lock_guard lock(mutex_);
    if (registered_.count(fd) != 0) {
        return;
    }
    const auto mode = pinned ? vnpu::rpc::map_mode::pinned : vnpu::rpc::map_mode::delayed;
    if (rpc_status st = session_->fastrpc_mmap(fd, size, mode); !st) {
        fail("cannot register buffer fd " + std::to_string(fd), st);
    }
    registered_[fd] = pinned;
    if (pinned) {
        pinned_sizes_[fd] = size;
    }
}

void htp_session::forget(int fd) {
    std::lock_guard lock(mutex_);
    if (registered_.erase(fd) == 0) {
        return;
    }
    pinned_sizes_.erase(fd);
    if (!dead_) {
        // A failure here leaves nothing to undo: the buffer is going away either way.
        (void) session_->fastrpc_munmap(fd);
    }
}

void htp_session::send(uint32_t slot, const proto::htp_opbatch_req & req, size_t bytes) {
    const vnpu::rpc::queue_buffer where{opqueue_->fd(), 0, uint64_t(slot) * block_size_, bytes};
    if (rpc_status st = vnpu::rpc::write_batch(*queue_, req, where); !st) {
        fail("cannot send batch " + std::to_string(req.id), st);
    }
}

proto::htp_opbatch_rsp htp_session::receive(std::string * log) {
    proto::htp_opbatch_rsp rsp{};
    if (rpc_status st = vnpu::rpc::read_batch_response(*queue_, &rsp, log); !st) {
        fail("no response", st);
    }
    return rsp;
}

} // namespace hexnpu::hexagon
