#include "matmul-job.h"

#include "vtcm.h"
#include "work-queue.h"
#include "proto/htp-status.h"

namespace hexnpu::htp {

uint32_t run_matmul_job(htp_op_context * octx, mm_thread_fn prepare_rows, mm_thread_fn dot) {
    mm_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx  = octx;
    job.src0  = octx->src[0];
    job.src1  = octx->src[1];
    job.dst   = octx->dst[0];
    job.tiled = (job.src0->flags & proto::HTP_TENSOR_TILED) != 0;

    vtcm_arena vtcm(octx->vtcm_base, octx->vtcm_size);
    job.act     = vtcm.take(uint64_t(job.kp.act_rows) * job.kp.act_row_bytes);
    job.threads = vtcm.take(job.kp.thread_bytes, job.kp.n_threads);
    if (!vtcm.ok()) {
        return proto::HTP_STATUS_VTCM_TOO_SMALL;
    }
    const uint32_t ne11 = job.src1->ne[1];
    // Multi-device: the strips of dst's rows (N) are what a device group would split, inside
    // `if (mdev.count > 1)`, once the runtime carries mdev state.
    uint32_t i03 = 0, n3 = 0;
    for (job.i13 = 0; job.i13 < job.src1->ne[3]; ++job.i13) {
        uint32_t i02 = 0, n2 = 0;
        for (job.i12 = 0; job.i12 < job.src1->ne[2]; ++job.i12) {
            job.w_offset = job.tiled ? (i03 * job.src0->ne[2] + i02) * job.kp.w_slice_bytes
                                     : i02 * job.src0->nb[2] + i03 * job.src0->nb[3];
            if (++n2 == job.kp.r2) {
                n2 = 0;
                ++i02;
            }
            for (job.row0 = 0; job.row0 < ne11; job.row0 += job.kp.act_rows) {
                job.nrows = ne11 - job.row0 < job.kp.act_rows ? ne11 - job.row0 : job.kp.act_rows;
                const uint32_t preparers = job.nrows < job.kp.n_threads ? job.nrows : job.kp.n_threads;
                work_queue_run(octx->work, prepare_rows, &job, preparers);
                work_queue_run(octx->work, dot, &job, job.kp.n_threads);
            }
        }
        if (++n3 == job.kp.r3) {
            n3 = 0;
            ++i03;
        }
    }
    return proto::HTP_STATUS_OK;
}

} // namespace hexnpu::htp
