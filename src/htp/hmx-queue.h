// The HMX queue: one owner thread runs jobs strictly in push order, so HVX threads can prepare
// the next tiles while the HMX unit (owned by that thread alone) multiplies. push() hands a job
// over, pop() waits for the oldest job not yet popped. The owner sleeps when there is no job.
#pragma once

#include "futex-word.h"
#include "htp/platform.h"

#include <stdint.h>

namespace hexnpu::htp {

using hmx_job_fn = void (*)(void * data);

inline constexpr uint32_t HMX_QUEUE_CAPACITY = 16;

struct hmx_job {
    hmx_job_fn fn;    // nullptr: the owner thread exits
    void *     data;
};

struct hmx_queue {
    const platform * plat    = nullptr;
    uint64_t         handle  = 0;
    bool             running = false;
    hmx_job          ring[HMX_QUEUE_CAPACITY] = {};
    futex_word       pushed;     // jobs handed to the owner (free-running)
    futex_word       done;       // jobs the owner finished
    uint32_t         popped = 0; // pusher side
};

bool hmx_queue_start(hmx_queue * q, const platform * plat);
// Waits for every pushed job, then ends the owner thread.
void hmx_queue_stop(hmx_queue * q);

inline uint32_t hmx_queue_depth(const hmx_queue * q) {
    return q->pushed.load_relaxed() - q->popped;
}

// false when HMX_QUEUE_CAPACITY jobs are pushed and not yet popped.
bool hmx_queue_push(hmx_queue * q, hmx_job_fn fn, void * data);
// Waits for the oldest job not yet popped; false when there is none.
bool hmx_queue_pop(hmx_queue * q);

} // namespace hexnpu::htp
