#include "hmx-queue.h"

#include "hmx.h"

namespace hexnpu::htp {

static void hmx_owner_main(void * arg) {
    hmx_queue *      q    = static_cast<hmx_queue *>(arg);
    const platform * plat = q->plat;
    uint32_t         next = q->done.load_relaxed();
    // This thread is the HMX unit's only user for its lifetime.
    const bool held = plat->hmx_acquire != nullptr && plat->hmx_acquire(plat->ctx) == 0;
    for (;;) {
        while (q->pushed.load_acquire() == next) {
            futex_wait(plat, q->pushed, next);
        }
        const hmx_job job = q->ring[next % HMX_QUEUE_CAPACITY];
        if (job.fn == nullptr) {
            if (held) {
                plat->hmx_release(plat->ctx);
            }
            return;
        }
        job.fn(job.data);
        if (plat->hmx_unit != nullptr) {
            hmx_drain(static_cast<hmx_unit *>(plat->hmx_unit));
        }
        q->done.store_release(++next);
        futex_wake(plat, q->done);
    }
}

static void hand_over(hmx_queue * q, hmx_job job) {
    const uint32_t p = q->pushed.load_relaxed();
    q->ring[p % HMX_QUEUE_CAPACITY] = job;
    q->pushed.store_release(p + 1);
    futex_wake(q->plat, q->pushed);
}

bool hmx_queue_start(hmx_queue * q, const platform * plat) {
    q->plat = plat;
    q->pushed.store_relaxed(0);
    q->done.store_relaxed(0);
    q->popped  = 0;
    q->running = plat->thread_start(plat->ctx, hmx_owner_main, q, &q->handle) == 0;
    return q->running;
}

void hmx_queue_stop(hmx_queue * q) {
    if (!q->running) {
        return;
    }
    while (hmx_queue_pop(q)) {
    }
    hand_over(q, hmx_job{nullptr, nullptr});
    q->plat->thread_join(q->plat->ctx, q->handle);
    q->running = false;
}

bool hmx_queue_push(hmx_queue * q, hmx_job_fn fn, void * data) {
    if (hmx_queue_depth(q) == HMX_QUEUE_CAPACITY) {
        return false;
    }
    hand_over(q, hmx_job{fn, data});
    return true;
}

bool hmx_queue_pop(hmx_queue * q) {
    if (hmx_queue_depth(q) == 0) {
        return false;
    }
    uint32_t d;
    while ((d = q->done.load_acquire()) == q->popped) {
        futex_wait(q->plat, q->done, d);
    }
    ++q->popped;
    return true;
}

} // namespace hexnpu::htp
