// parallel_for: split [0, n) into contiguous chunks over up to n_threads std::threads (the caller runs
// chunk 0). Deterministic partition, so results never depend on scheduling.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace hexnpu {

// The most threads any thread-count flag accepts (-t/--threads of every command): a fixed cap, as
// HEXNPU_HOST_THREADS has, so that a typo cannot ask the system for millions of threads.
inline constexpr int MAX_THREADS = 1024;

inline int default_thread_count() {
    const unsigned n = std::thread::hardware_concurrency();
    return n ? int(n) : 1;
}

// fn(begin, end) is called once per non-empty chunk; chunks are at least min_chunk items.
template <typename Fn> void parallel_for(int64_t n, int n_threads, int64_t min_chunk, Fn && fn) {
    if (n <= 0) {
        return;
    }
    min_chunk          = std::max<int64_t>(min_chunk, 1);
    const int64_t most = (n + min_chunk - 1) / min_chunk;
    const int     nt   = int(std::clamp<int64_t>(n_threads, 1, most));
    if (nt == 1) {
        fn(int64_t(0), n);
        return;
    }
    const int64_t            chunk = (n + nt - 1) / nt;
    std::vector<std::thread> workers;
    workers.reserve(size_t(nt - 1));
    const auto join_all = [&workers] {
        for (auto & w : workers) {
            w.join();
        }
    };
    for (int t = 1; t < nt; ++t) {
        const int64_t begin = t * chunk;
        const int64_t end   = std::min(n, begin + chunk);
        if (begin < end) {
            try {
                workers.emplace_back([&fn, begin, end] { fn(begin, end); });
            } catch (const std::system_error & e) {
                // The started chunks use fn and the caller's data: let them finish before unwinding
                // (a joinable std::thread destroyed would terminate the process).
                join_all();
                throw std::runtime_error("cannot start thread " + std::to_string(workers.size() + 2) + " of " +
                                         std::to_string(nt) + ": " + e.what());
            }
        }
    }
    try {
        fn(int64_t(0), std::min(n, chunk));
    } catch (...) {
        join_all();
        throw;
    }
    join_all();
}

} // namespace hexnpu
