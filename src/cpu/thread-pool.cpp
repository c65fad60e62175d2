#include "thread-pool.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <system_error>

namespace hexnpu::cpu {

thread_pool::thread_pool(int n_threads) : n_threads_(std::max(1, n_threads)) {
    workers_.reserve(size_t(n_threads_ - 1));
    try {
        for (int i = 1; i < n_threads_; ++i) {
            workers_.emplace_back([this, i] { worker_loop(i); });
        }
    } catch (const std::system_error & e) {
        // No destructor runs for a half-built pool: the started workers, still waiting on
        // start_cv_, must be stopped and joined here, or the unwinding hangs destroying it.
        const size_t started = workers_.size();
        stop_and_join();
        throw std::runtime_error("cannot start CPU thread " + std::to_string(started + 2) + " of " +
                                 std::to_string(n_threads_) + ": " + e.what());
    }
}

thread_pool::~thread_pool() { stop_and_join(); }

void thread_pool::stop_and_join() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    start_cv_.notify_all();
    for (std::thread & w : workers_) {
        w.join();
    }
    workers_.clear();
}

void thread_pool::run_erased(int n_tasks, task_fn call, void * fn) {
    n_tasks = std::clamp(n_tasks, 1, n_threads_);
    if (n_tasks == 1) {
        call(fn, 0);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        call_    = call;
        fn_      = fn;
        n_tasks_ = n_tasks;
        pending_ = n_tasks - 1;
        error_   = nullptr;
        ++generation_;
    }
    start_cv_.notify_all();

    std::exception_ptr own_error;
    try {
        call(fn, 0);
    } catch (...) {
        own_error = std::current_exception();
    }

    // The job's closure lives in the caller's frame: wait for every worker even when task 0 threw.
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [this] { return pending_ == 0; });
    if (own_error) {
        std::rethrow_exception(own_error);
    }
    if (error_) {
        std::rethrow_exception(error_);
    }
}

void thread_pool::worker_loop(int index) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) {
            return;
        }
        seen = generation_;
        if (index >= n_tasks_) {
            continue;
        }
        const task_fn call = call_;
        void * const  fn   = fn_;
        lock.unlock();
        std::exception_ptr error;
        try {
            call(fn, index);
        } catch (...) {
            error = std::current_exception();
        }
        lock.lock();
        if (error && !error_) {
            error_ = error;
        }
        if (--pending_ == 0) {
            done_cv_.notify_one();
        }
    }
}

} // namespace hexnpu::cpu
