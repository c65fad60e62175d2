// The CPU reference backend: every op of the graph core with GGML semantics, multithreaded over a
// small persistent thread pool. It is the oracle of `hexnpu test-ops` and the scheduler's fallback.
#pragma once

#include "hexnpu/backend.h"

#include <memory>

namespace hexnpu {

namespace cpu {
class thread_pool;
}

// Device "CPU": one host buffer type (alignment 64) and backends that compute on the host.
std::unique_ptr<backend_device> make_cpu_device();

class cpu_backend final : public backend {
  public:
    // n_threads <= 0: one thread per hardware thread.
    explicit cpu_backend(backend_device * device, int n_threads = 0);
    ~cpu_backend() override;

    const char *     name() const override { return "CPU"; }
    backend_device * device() const override { return device_; }
    void             graph_compute(ggml_cgraph & graph) override;

    // Replaces the thread pool; results do not depend on the thread count (bit-identical).
    void set_n_threads(int n_threads);
    int  n_threads() const;

  private:
    backend_device *                   device_;
    std::unique_ptr<cpu::thread_pool> pool_;
};

} // namespace hexnpu
