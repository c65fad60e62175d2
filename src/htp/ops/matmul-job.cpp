#include "matmul-job.h"

#include "vtcm.h"
#include "work-queue.h"
#include "proto/htp-status.h"

namespace hexnpu::htp {

bool guard_matmul_plan(const htp_op_context * octx, const proto::htp_matmul_kparams & kp, uint64_t w_bytes) {
    const proto::htp_tensor * src0   = octx->src[0];
    const proto::htp_tensor * src1   = octx->src[1];
    const proto::htp_tensor * dst    = octx->dst[0];
    const uint32_t            a_size = src1->type == HTP_TYPE_F16 ? 2 : 4;
    // Loop bounds and fixed arrays (threads, slots, act rows, the DMA ring) and the VTCM layout.
    const bool plan = src0->type == kp.wtype && (src1->type == HTP_TYPE_F32 || src1->type == HTP_TYPE_F16) &&
                      dst->type == HTP_TYPE_F32 && kp.n_threads >= 1 && kp.n_threads <= octx->n_threads &&
                      kp.n_slots >= 2 && kp.n_slots <= proto::HTP_MM_MAX_SLOTS &&
                      kp.n_slots * (proto::htp_matmul_flat_transfers(kp.wtype) + 1) <= proto::HTP_DMA_QUEUE_CAPACITY &&
                      kp.act_rows >= 1 && kp.act_rows <= proto::HTP_MM_MAX_ACT_ROWS && kp.tiles_per_block >= 1 &&
                      kp.k == src0->ne[0] && kp.k == src1->ne[0] && kp.n == src0->ne[1] && kp.n == dst->ne[0] &&
                      kp.n_strips * proto::TILE_N_ROWS >= kp.n && kp.strips_per_thread * kp.n_threads >= kp.n_strips &&
                      kp.slot_stride % 128 == 0 && kp.slots_bytes >= uint64_t(kp.n_slots) * kp.slot_stride &&
                      kp.slots_bytes >= proto::htp_matmul_staging_bytes(kp) &&
                      kp.thread_bytes >= kp.slots_bytes + uint64_t(kp.act_rows) * 128 * (1 + kp.n_slots) &&
                      kp.vtcm_size == proto::htp_matmul_vtcm_size(kp) && kp.r2 >= 1 && kp.r3 >= 1 &&
                      uint64_t(kp.r2) * src0->ne[2] == src1->ne[2] && uint64_t(kp.r3) * src0->ne[3] == src1->ne[3];
    // Rows inside their tensors: the weights up to w_bytes, activation rows of k elements, output
    // rows of n floats.
    const uint64_t a_last = uint64_t(src1->ne[1] - 1) * src1->nb[1] + uint64_t(src1->ne[2] - 1) * src1->nb[2] +
                            uint64_t(src1->ne[3] - 1) * src1->nb[3];
    const uint64_t d_last = uint64_t(dst->ne[1] - 1) * dst->nb[1] + uint64_t(dst->ne[2] - 1) * dst->nb[2] +
                            uint64_t(dst->ne[3] - 1) * dst->nb[3];
    return plan && w_bytes <= src0->size && a_last + uint64_t(kp.k) * a_size <= src1->size &&
           dst->ne[1] == src1->ne[1] && dst->ne[2] == src1->ne[2] && dst->ne[3] == src1->ne[3] &&
           d_last + uint64_t(kp.n) * 4 <= dst->size;
}

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
