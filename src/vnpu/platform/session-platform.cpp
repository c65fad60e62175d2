#include "session-platform.h"

#include "proto/htp-msg.h"
#include "proto/htp-status.h"

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <x86intrin.h>

namespace hexnpu::vnpu {

namespace {

uint64_t page_size() { return uint64_t(sysconf(_SC_PAGESIZE)); }

session_platform & self(void * ctx) { return *static_cast<session_platform *>(ctx); }

} // namespace

std::unique_ptr<session_platform> session_platform::create(const platform_config & config, std::string * error) {
    proto::hw_model hw{};
    if (!proto::hw_model_for_arch(config.arch, hw)) {
        *error = "vnpu: unknown arch v" + std::to_string(config.arch);
        return nullptr;
    }
    if (config.mdev_count == 0 || config.mdev_idx >= config.mdev_count) {
        *error = "vnpu: multi-device index " + std::to_string(config.mdev_idx) + " is not below the group size " +
                 std::to_string(config.mdev_count);
        return nullptr;
    }
    const uint64_t page = page_size();
    if (config.window_size != 0) {
        hw.window_size = config.window_size;
    }
    if (config.vtcm_size != 0) {
        if (config.vtcm_size % page != 0) {
            *error = "vnpu: VTCM size must be a multiple of the page size";
            return nullptr;
        }
        hw.vtcm_size = config.vtcm_size;
    }
    if (config.n_hvx != 0) {
        if (config.n_hvx > proto::HTP_MAX_NTHREADS) {
            *error = "vnpu: at most " + std::to_string(proto::HTP_MAX_NTHREADS) + " HVX contexts";
            return nullptr;
        }
        hw.n_hvx = config.n_hvx;
    }
    // The extended region exists where DMA addresses are 64-bit (v81).
    const uint64_t                  ext    = hw.dma64 != 0 ? (config.extended_size + page - 1) / page * page : 0;
    std::unique_ptr<session_window> window = session_window::reserve(hw.window_size, ext, error);
    if (!window) {
        return nullptr;
    }
    const uint64_t region_size = hw.vtcm_size + 2 * page;
    void *         region      = mmap(nullptr, region_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED || mprotect(static_cast<uint8_t *>(region) + page, hw.vtcm_size, PROT_READ | PROT_WRITE)) {
        *error = "vnpu: cannot allocate VTCM";
        if (region != MAP_FAILED) {
            munmap(region, region_size);
        }
        return nullptr;
    }
    return std::unique_ptr<session_platform>(
        new session_platform(config, hw, std::move(window), static_cast<uint8_t *>(region), region_size));
}

session_platform::session_platform(const platform_config & config, const proto::hw_model & hw,
                                   std::unique_ptr<session_window> window, uint8_t * vtcm_region,
                                   uint64_t vtcm_region_size)
    : config_(config), window_(std::move(window)), vtcm_region_(vtcm_region), vtcm_region_size_(vtcm_region_size) {
    const uint32_t host = config.host_threads != 0 ? config.host_threads : std::thread::hardware_concurrency();

    table_.ctx              = this;
    table_.hw               = hw;
    table_.window_base      = window_->base();
    table_.window_size      = window_->usable_size();
    table_.vtcm_base        = vtcm_region + page_size();
    table_.vtcm_size        = hw.vtcm_size;
    table_.max_threads      = host != 0 ? host : 1;
    table_.mdev.idx         = config.mdev_idx;
    table_.mdev.count       = config.mdev_count;
    table_.mdev.count_div   = proto::init_fastdiv(config.mdev_count);
    table_.map_buffer       = cb_map_buffer;
    table_.unmap_buffer     = cb_unmap_buffer;
    if (window_->extended_size() != 0) {
        table_.extended_size    = window_->extended_size();
        table_.map_buffer_ext   = cb_map_buffer_ext;
        table_.unmap_buffer_ext = cb_unmap_buffer_ext;
    }
    table_.dma_submit       = cb_dma_submit;
    table_.dma_wait         = cb_dma_wait;
    table_.op_done          = cb_op_done;
    table_.mem_alloc        = cb_mem_alloc;
    table_.mem_free         = cb_mem_free;
    table_.thread_start     = cb_thread_start;
    table_.thread_join      = cb_thread_join;
    table_.wait_on          = cb_wait_on;
    table_.wake_all         = cb_wake_all;
    table_.fence_wait       = cb_fence_wait;
    table_.fence_wake       = cb_fence_wake;
    table_.cycles           = cb_cycles;
    table_.usecs            = cb_usecs;
    table_.dcache_flush     = cb_dcache_flush;
    table_.dcache_flush_all = cb_dcache_flush_all;
    table_.log              = cb_log;

    dma_ = std::make_unique<dma_engine>(hw, table_.vtcm_base, table_.vtcm_size, *window_, config.strict);
    if (config.strict) {
        group_check_       = std::make_unique<group_write_check>(*dma_);
        table_.mdev_check  = cb_mdev_check;
    }
    hmx_ = std::make_unique<htp::hmx_unit>();
    htp::hmx_unit_init(hmx_.get(), table_.vtcm_base, table_.vtcm_size);
    table_.hmx_unit    = hmx_.get();
    table_.hmx_acquire = cb_hmx_acquire;
    table_.hmx_release = cb_hmx_release;
    // The HMX thread computes while the HVX threads wait on it: the other host threads help it.
    const uint32_t hmx_threads = config.hmx_threads != 0 ? config.hmx_threads : std::min(table_.max_threads, 8u);
    htp::hmx_unit_set_helpers(hmx_.get(), hmx_threads - 1);
}

session_platform::~session_platform() {
    htp::hmx_unit_set_helpers(hmx_.get(), 0);
    munmap(vtcm_region_, vtcm_region_size_);
}

std::string session_platform::last_violation() const {
    std::lock_guard lock(violation_mutex_);
    return last_violation_;
}

void session_platform::log(int level, const std::string & message) const {
    if (config_.log) {
        config_.log(level, message);
    } else if (level == 0) {
        std::fprintf(stderr, "hexnpu-vnpu: %s\n", message.c_str());
    }
}

int session_platform::cb_map_buffer(void * ctx, int fd, uint64_t size, uint32_t * npu_addr) {
    ++self(ctx).map_calls_;
    return self(ctx).window_->map(fd, size, npu_addr);
}

int session_platform::cb_unmap_buffer(void * ctx, uint32_t npu_addr, uint64_t size) {
    ++self(ctx).unmap_calls_;
    return self(ctx).window_->unmap(npu_addr, size);
}

int session_platform::cb_map_buffer_ext(void * ctx, int fd, uint64_t size, uint64_t * npu_addr) {
    ++self(ctx).map_calls_;
    return self(ctx).window_->map_extended(fd, size, npu_addr);
}

int session_platform::cb_unmap_buffer_ext(void * ctx, uint64_t npu_addr, uint64_t size) {
    ++self(ctx).unmap_calls_;
    return self(ctx).window_->unmap_extended(npu_addr, size);
}

int session_platform::cb_dma_submit(void * ctx, uint32_t queue, const htp::dma_desc * d, uint64_t * ticket) {
    return self(ctx).dma_->submit(queue, *d, ticket);
}

int session_platform::cb_dma_wait(void * ctx, uint32_t queue, uint64_t ticket) {
    return self(ctx).dma_->wait(queue, ticket);
}

uint32_t session_platform::cb_op_done(void * ctx) {
    session_platform & p = self(ctx);
    std::string        message;
    uint32_t           status = p.dma_->op_done(&message);
    if (const char * hmx_fault = htp::hmx_fault(p.hmx_.get())) {
        message += std::string(message.empty() ? "" : "; ") + hmx_fault;
        htp::hmx_reset(p.hmx_.get());  // between ops the HMX queue is idle
        status = proto::HTP_STATUS_STRICT;
    }
    if (status != proto::HTP_STATUS_OK) {
        p.log(0, message);
        std::lock_guard lock(p.violation_mutex_);
        p.last_violation_ = std::move(message);
    }
    return status;
}

int session_platform::cb_hmx_acquire(void * ctx) {
    return htp::hmx_lock(self(ctx).hmx_.get()) == htp::HMX_OK ? 0 : -1;
}

void session_platform::cb_hmx_release(void * ctx) { htp::hmx_unlock(self(ctx).hmx_.get()); }

void * session_platform::cb_mem_alloc(void *, size_t size, size_t align) {
    return std::aligned_alloc(align, (size + align - 1) / align * align);
}

void session_platform::cb_mem_free(void *, void * p) { std::free(p); }

int session_platform::cb_thread_start(void *, htp::thread_fn fn, void * arg, uint64_t * handle) {
    try {
        *handle = uint64_t(uintptr_t(new std::thread(fn, arg)));
        return 0;
    } catch (const std::system_error &) {
        return -1;
    }
}

void session_platform::cb_thread_join(void *, uint64_t handle) {
    std::thread * t = reinterpret_cast<std::thread *>(uintptr_t(handle));
    t->join();
    delete t;
}

void session_platform::cb_wait_on(void *, const volatile uint32_t * addr, uint32_t expected) {
    syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

void session_platform::cb_wake_all(void *, const volatile uint32_t * addr) {
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

// Shared (not _PRIVATE) futexes: the fence buffer is a memfd mapped by every member's process.
void session_platform::cb_fence_wait(void *, const volatile uint32_t * addr, uint32_t expected, uint32_t timeout_us) {
    const timespec limit{time_t(timeout_us / 1000000u), long(timeout_us % 1000000u) * 1000L};
    syscall(SYS_futex, addr, FUTEX_WAIT, expected, &limit, nullptr, 0);
}

void session_platform::cb_fence_wake(void *, const volatile uint32_t * addr) {
    syscall(SYS_futex, addr, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

uint32_t session_platform::cb_mdev_check(void * ctx, uint32_t phase, const htp::mdev_write_check * c) {
    session_platform & p = self(ctx);
    std::string        message;
    const uint32_t     status = p.group_check_->run(p.table_, phase, *c, &message);
    if (status != proto::HTP_STATUS_OK) {
        p.log(0, message);
        std::lock_guard lock(p.violation_mutex_);
        p.last_violation_ = std::move(message);
    }
    return status;
}

uint64_t session_platform::cb_cycles(void *) { return __rdtsc(); }

uint64_t session_platform::cb_usecs(void *) {
    return uint64_t(std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count());
}

void session_platform::cb_dcache_flush(void * ctx, const void *, size_t size) {
    ++self(ctx).dcache_flushes_;
    self(ctx).dcache_flush_bytes_ += size;
}

void session_platform::cb_dcache_flush_all(void * ctx) { ++self(ctx).dcache_flush_alls_; }

void session_platform::cb_log(void * ctx, int level, const char * msg) { self(ctx).log(level, msg); }

} // namespace hexnpu::vnpu
