#include "memory-bandwidth.h"

#include "core/parallel.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <vector>

namespace hexnpu::cli {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

} // namespace

double read_bandwidth(int n_threads) {
    const size_t          n = size_t(256) << 20 >> 3;  // 256 MiB of uint64
    std::vector<uint64_t> buf(n);
    for (size_t i = 0; i < n; ++i) {
        buf[i] = i;
    }
    double best = 0;
    for (int pass = 0; pass < 3; ++pass) {
        std::vector<uint64_t> sums(static_cast<size_t>(n_threads));
        const double          t0 = now_s();
        // One slice per thread (parallel_for stops the started ones when a thread cannot start).
        parallel_for(n_threads, n_threads, 1, [&](int64_t first, int64_t last) {
            for (int64_t t = first; t < last; ++t) {
                uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                const size_t a = n * size_t(t) / size_t(n_threads), b = n * size_t(t + 1) / size_t(n_threads);
                for (size_t i = a; i + 4 <= b; i += 4) {
                    s0 += buf[i], s1 += buf[i + 1], s2 += buf[i + 2], s3 += buf[i + 3];
                }
                sums[size_t(t)] = s0 + s1 + s2 + s3;
            }
        });
        const double dt = now_s() - t0;
        volatile uint64_t sink = std::accumulate(sums.begin(), sums.end(), uint64_t(0));
        (void) sink;
        best = std::max(best, double(n * 8) / dt);
    }
    return best;
}

} // namespace hexnpu::cli
