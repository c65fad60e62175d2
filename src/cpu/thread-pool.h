// A fixed set of worker threads that run one parallel job at a time. An op may start several jobs
// (e.g. convert the activations, then multiply); workers sleep between jobs, so no thread is ever
// created per op.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace hexnpu::cpu {

class thread_pool {
  public:
    // n_threads >= 1; the calling thread is one of them. Throws std::runtime_error (naming the
    // thread and the system's reason) when a thread cannot be started, the others stopped.
    explicit thread_pool(int n_threads);
    ~thread_pool();
    thread_pool(const thread_pool &)             = delete;
    thread_pool & operator=(const thread_pool &) = delete;

    int size() const { return n_threads_; }

    // Calls task(i) for every i in [0, n_tasks), task i on thread i (the caller runs task 0), and
    // returns when all have finished. n_tasks is clamped to [1, size()]. The first exception a
    // task throws is rethrown here once every task has stopped.
    template <typename Fn> void run(int n_tasks, Fn task) {
        run_erased(n_tasks, [](void * fn, int i) { (*static_cast<Fn *>(fn))(i); }, &task);
    }

  private:
    using task_fn = void (*)(void * fn, int index);

    void run_erased(int n_tasks, task_fn call, void * fn);
    void worker_loop(int index);
    void stop_and_join();

    int                      n_threads_;
    std::vector<std::thread> workers_;

    std::mutex              mutex_;
    std::condition_variable start_cv_;
    std::condition_variable done_cv_;
    uint64_t                generation_ = 0;  // bumped once per job
    int                     n_tasks_    = 0;
    int                     pending_    = 0;  // worker tasks of the current job not yet finished
    task_fn                 call_       = nullptr;
    void *                  fn_         = nullptr;
    std::exception_ptr      error_;
    bool                    stop_ = false;
};

} // namespace hexnpu::cpu
