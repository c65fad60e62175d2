// The virtual NPU under one session's runtime: the session window, VTCM, the strict DMA engine,
// threads, futex waits, timers and counted cache maintenance, published as the htp::platform table
// the runtime (src/htp) runs on. x86-64 Linux only.
#pragma once

#include "dma-engine.h"
#include "group-write-check.h"
#include "htp/hmx.h"
#include "htp/platform.h"
#include "proto/hw-model.h"
#include "session-window.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace hexnpu::vnpu {

struct platform_config {
    uint32_t arch         = proto::HW_DEFAULT_ARCH;
    uint64_t window_size  = 0;  // usable window bytes; 0: the arch's
    uint32_t vtcm_size    = 0;  // 0: the arch's
    uint32_t n_hvx        = 0;  // HVX contexts reported; 0: the arch's
    uint32_t host_threads = 0;  // threads the host may run at once; 0: its cores
    uint32_t hmx_threads  = 0;  // threads computing the HMX unit's stores (1: its own alone); 0: up to 8 of host_threads
    bool     strict       = true;  // the DMA engine's poisoning and source snapshots (dma-engine.h)
    uint32_t mdev_idx     = 0;     // this session's place in a multi-device group (htp/platform.h)
    uint32_t mdev_count   = 1;
    // The extended region's bytes (64-bit DMA arches only, v81): weight buffers mapped there are
    // reachable by DMA alone and take no room in the window. 0: none.
    uint64_t extended_size = DEFAULT_EXTENDED_SIZE;
    static constexpr uint64_t DEFAULT_EXTENDED_SIZE = uint64_t(16) << 30;
    // Receives the runtime's and the platform's messages (level 0 error, 1 info, 2 debug).
    // Default: errors to stderr.
    std::function<void(int level, const std::string & message)> log;
};

class session_platform {
  public:
    // nullptr (and *error) for an unknown arch or an invalid override.
    static std::unique_ptr<session_platform> create(const platform_config & config, std::string * error);
    ~session_platform();

    session_platform(const session_platform &)             = delete;
    session_platform & operator=(const session_platform &) = delete;

    const htp::platform & table() const { return table_; }
    const session_window & window() const { return *window_; }

    // For fault attribution: the NPU address of a faulting host address inside the window.
    bool npu_address_of(const void * host_addr, uint64_t * npu_addr) const {
        return window_->npu_address_of(host_addr, npu_addr);
    }

    // The strict-mode violations of the last op that broke a rule ("" if none yet).
    std::string last_violation() const;

    uint64_t dcache_flush_calls() const { return dcache_flushes_.load(); }
    uint64_t dcache_flush_bytes() const { return dcache_flush_bytes_.load(); }
    uint64_t dcache_flush_all_calls() const { return dcache_flush_alls_.load(); }
    uint64_t map_calls() const { return map_calls_.load(); }
    uint64_t unmap_calls() const { return unmap_calls_.load(); }

  private:
    session_platform(const platform_config & config, const proto::hw_model & hw,
                     std::unique_ptr<session_window> window, uint8_t * vtcm_region, uint64_t vtcm_region_size);

    void log(int level, const std::string & message) const;

    // The htp::platform callbacks; ctx is the session_platform.
    static int      cb_map_buffer(void * ctx, int fd, uint64_t size, uint32_t * npu_addr);
    static int      cb_unmap_buffer(void * ctx, uint32_t npu_addr, uint64_t size);
    static int      cb_dma_submit(void * ctx, uint32_t queue, const htp::dma_desc * d, uint64_t * ticket);
    static int      cb_dma_wait(void * ctx, uint32_t queue, uint64_t ticket);
    static uint32_t cb_op_done(void * ctx);
    static void *   cb_mem_alloc(void * ctx, size_t size, size_t align);
    static void     cb_mem_free(void * ctx, void * p);
    static int      cb_thread_start(void * ctx, htp::thread_fn fn, void * arg, uint64_t * handle);
    static void     cb_thread_join(void * ctx, uint64_t handle);
    static void     cb_wait_on(void * ctx, const volatile uint32_t * addr, uint32_t expected);
    static void     cb_wake_all(void * ctx, const volatile uint32_t * addr);
    static void     cb_fence_wait(void * ctx, const volatile uint32_t * addr, uint32_t expected, uint32_t timeout_us);
    static void     cb_fence_wake(void * ctx, const volatile uint32_t * addr);
    static int      cb_map_buffer_ext(void * ctx, int fd, uint64_t size, uint64_t * npu_addr);
    static int      cb_unmap_buffer_ext(void * ctx, uint64_t npu_addr, uint64_t size);
    static uint32_t cb_mdev_check(void * ctx, uint32_t phase, const htp::mdev_write_check * c);
    static uint64_t cb_cycles(void * ctx);
    static uint64_t cb_usecs(void * ctx);
    static void     cb_dcache_flush(void * ctx, const void * addr, size_t size);
    static void     cb_dcache_flush_all(void * ctx);
    static void     cb_log(void * ctx, int level, const char * msg);
    static int      cb_hmx_acquire(void * ctx);
    static void     cb_hmx_release(void * ctx);

    platform_config                 config_;
    std::unique_ptr<session_window> window_;
    uint8_t *                       vtcm_region_;  // VTCM between two inaccessible guard pages
    uint64_t                        vtcm_region_size_;
    std::unique_ptr<dma_engine>     dma_;
    std::unique_ptr<group_write_check> group_check_;  // strict mode only
    std::unique_ptr<htp::hmx_unit>  hmx_;
    htp::platform                   table_{};

    mutable std::mutex    violation_mutex_;
    std::string           last_violation_;
    std::atomic<uint64_t> dcache_flushes_{0};
    std::atomic<uint64_t> dcache_flush_bytes_{0};
    std::atomic<uint64_t> dcache_flush_alls_{0};
    std::atomic<uint64_t> map_calls_{0};
    std::atomic<uint64_t> unmap_calls_{0};
};

} // namespace hexnpu::vnpu
