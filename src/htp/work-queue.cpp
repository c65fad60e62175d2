#include "work-queue.h"

namespace hexnpu::htp {

static void worker_main(void * arg) {
    work_worker *    w    = static_cast<work_worker *>(arg);
    work_queue *     q    = w->q;
    const platform * plat = q->plat;
    uint32_t         seen = 0;
    for (;;) {
        uint32_t s;
        while ((s = w->seq.load_acquire()) == seen) {
            futex_wait(plat, w->seq, seen);
        }
        seen = s;
        if (q->stopping) {
            return;
        }
        q->fn(q->n, w->index, q->data);
        if (q->pending.fetch_sub_acq_rel(1) == 1) {
            futex_wake(plat, q->pending);
        }
    }
}

static void wake_worker(work_worker & w, const platform * plat) {
    w.seq.fetch_add_release(1);
    futex_wake(plat, w.seq);
}

bool work_queue_start(work_queue * q, const platform * plat, uint32_t n_threads) {
    q->plat      = plat;
    q->n_threads = 1;
    q->stopping  = false;
    q->pending.store_relaxed(0);
    for (uint32_t k = 1; k < n_threads; ++k) {
        work_worker & w = q->workers[k];
        w.q             = q;
        w.index         = k;
        w.seq.store_relaxed(0);
        if (plat->thread_start(plat->ctx, worker_main, &w, &w.handle) != 0) {
            work_queue_stop(q);
            return false;
        }
        q->n_threads = k + 1;
    }
    return true;
}

void work_queue_stop(work_queue * q) {
    q->stopping = true;
    for (uint32_t k = 1; k < q->n_threads; ++k) {
        wake_worker(q->workers[k], q->plat);
        q->plat->thread_join(q->plat->ctx, q->workers[k].handle);
    }
    q->n_threads = 1;
    q->stopping  = false;
}

void work_queue_run(work_queue * q, work_fn fn, void * data, uint32_t n) {
    if (n <= 1) {
        fn(1, 0, data);
        return;
    }
    q->fn   = fn;
    q->data = data;
    q->n    = n;
    q->pending.store_relaxed(n - 1);
    for (uint32_t k = 1; k < n; ++k) {
        wake_worker(q->workers[k], q->plat);
    }
    fn(n, 0, data);
    uint32_t left;
    while ((left = q->pending.load_acquire()) != 0) {
        futex_wait(q->plat, q->pending, left);
    }
}

} // namespace hexnpu::htp
