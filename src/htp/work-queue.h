// The HVX thread pool: work_queue_run(q, fn, data, n) runs fn(n, i, data) for i = 0..n-1, index 0 on
// the caller and index k on worker thread k, and returns when all are done. Idle workers sleep on
// the platform's futex analog (no busy-waiting); each has its own mailbox, so a run wakes only the
// workers it needs.
#pragma once

#include "futex-word.h"
#include "htp/platform.h"
#include "proto/htp-msg.h"

#include <stdint.h>

namespace hexnpu::htp {

using work_fn = void (*)(uint32_t n, uint32_t i, void * data);

struct work_queue;

struct work_worker {
    work_queue * q = nullptr;
    uint32_t     index = 0;
    futex_word   seq;  // bumped by the caller to hand this worker the current task
    uint64_t     handle = 0;
};

struct work_queue {
    const platform * plat = nullptr;
    uint32_t         n_threads = 0;  // including the caller
    // The current task: written before the workers' seq bumps, stable until pending drops to 0.
    work_fn          fn   = nullptr;
    void *           data = nullptr;
    uint32_t         n    = 0;
    futex_word       pending;  // workers still running the current task
    bool             stopping = false;
    work_worker      workers[proto::HTP_MAX_NTHREADS];  // [0] is the caller's slot, never started
};

// Starts n_threads - 1 worker threads (n_threads <= HTP_MAX_NTHREADS). Returns false when the
// platform cannot start them (those started are stopped again).
bool work_queue_start(work_queue * q, const platform * plat, uint32_t n_threads);
void work_queue_stop(work_queue * q);

// Precondition: 1 <= n <= q->n_threads; fn must not call work_queue_run on the same queue.
void work_queue_run(work_queue * q, work_fn fn, void * data, uint32_t n);

} // namespace hexnpu::htp
