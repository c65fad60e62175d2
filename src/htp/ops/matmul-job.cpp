#include "matmul-job.h"

#include "vtcm.h"
#include "work-queue.h"
#include "proto/htp-status.h"

namespace hexnpu::htp {

namespace {

using proto::htp_matmul_kparams;
using proto::htp_tensor;

// The plan's own bounds: threads, slots and act rows within their fixed arrays and the DMA ring,
// the VTCM layout, K and N as the weights have them.
bool plan_ok(const htp_op_context * octx, const htp_matmul_kparams & kp) {
    const htp_tensor * src0 = octx->src[0];
    const htp_tensor * src1 = octx->src[1];
    const htp_tensor * dst  = octx->dst[0];
    return src0->type == kp.wtype && (src1->type == HTP_TYPE_F32 || src1->type == HTP_TYPE_F16) &&
           dst->type == HTP_TYPE_F32 && kp.n_threads >= 1 && kp.n_threads <= octx->n_threads && kp.n_slots >= 2 &&
           kp.n_slots <= proto::HTP_MM_MAX_SLOTS &&
           kp.n_slots * (proto::htp_matmul_flat_transfers(kp.wtype) + 1) <= proto::HTP_DMA_QUEUE_CAPACITY &&
           kp.act_rows >= 1 && kp.act_rows <= proto::HTP_MM_MAX_ACT_ROWS && kp.tiles_per_block >= 1 &&
           kp.k == src0->ne[0] && kp.k == src1->ne[0] && kp.n == src0->ne[1] && kp.n == dst->ne[0] &&
           kp.n_strips * proto::TILE_N_ROWS >= kp.n && kp.strips_per_thread * kp.n_threads >= kp.n_strips &&
           kp.slot_stride % 128 == 0 && kp.slots_bytes >= uint64_t(kp.n_slots) * kp.slot_stride &&
           kp.slots_bytes >= 2 * proto::htp_matmul_staging_bytes(kp) &&
           kp.thread_bytes >= kp.slots_bytes + uint64_t(kp.act_rows) * 128 * (1 + kp.n_slots) &&
           kp.vtcm_size == proto::htp_matmul_vtcm_size(kp) && kp.r2 >= 1 && kp.r3 >= 1 &&
           kp.div_threads.d == kp.n_threads;
}

// Byte offset of the last row of t (dims 1..3), in 64 bits.
uint64_t last_row(const htp_tensor * t) {
    return uint64_t(t->ne[1] - 1) * t->nb[1] + uint64_t(t->ne[2] - 1) * t->nb[2] + uint64_t(t->ne[3] - 1) * t->nb[3];
}

// Activation rows of k elements and output rows of n floats inside their tensors.
bool rows_inside(const htp_op_context * octx, const htp_matmul_kparams & kp, uint64_t w_bytes) {
    const htp_tensor * src1   = octx->src[1];
    const htp_tensor * dst    = octx->dst[0];
    const uint32_t     a_size = src1->type == HTP_TYPE_F16 ? 2 : 4;
    return w_bytes <= octx->src[0]->size && last_row(src1) + uint64_t(kp.k) * a_size <= src1->size &&
           last_row(dst) + uint64_t(kp.n) * 4 <= dst->size;
}

// The VTCM areas; false when the session's VTCM is smaller than the plan.
bool start_job(htp_op_context * octx, mm_job & job) {
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx  = octx;
    job.src0  = octx->src[0];
    job.src1  = octx->src[1];
    job.dst   = octx->dst[0];
    job.tiled = (job.src0->flags & proto::HTP_TENSOR_TILED) != 0;
    const htp_tensor_mdev_range strips = device_strips(octx, job.dst, job.kp.n_strips);
    job.strip0                         = strips.start;
    job.strip_end                      = strips.start + strips.count;
    // The host's split wherever this device computes all of N. A member of a device group covering
    // a slice splits the slice instead: the slice depends on the member's index and the group's
    // size, which the op's kparams cannot hold (every member runs the same batch, the same kparams),
    // so it divides here by the host's divisor for that (div_threads).
    job.strips_per_thread =
        strips.count == job.kp.n_strips
            ? job.kp.strips_per_thread
            : proto::fastdiv(strips.count + job.kp.n_threads - 1, job.kp.div_threads);
    vtcm_arena vtcm(octx->vtcm_base, octx->vtcm_size);
    job.act     = vtcm.take(uint64_t(job.kp.act_rows) * job.kp.act_row_bytes);
    job.threads = vtcm.take(job.kp.thread_bytes, job.kp.n_threads);
    return vtcm.ok();
}

void run_group(htp_op_context * octx, mm_job & job, mm_thread_fn prepare_rows, mm_thread_fn dot) {
    if (job.strip0 == job.strip_end) {
        return;  // another device of the group computes all of N
    }
    const uint32_t preparers = job.nrows < job.kp.n_threads ? job.nrows : job.kp.n_threads;
    work_queue_run(octx->work, prepare_rows, &job, preparers);
    work_queue_run(octx->work, dot, &job, job.kp.n_threads);
}

} // namespace

bool guard_matmul_plan(const htp_op_context * octx, const htp_matmul_kparams & kp, uint64_t w_bytes) {
    const htp_tensor * src0 = octx->src[0];
    const htp_tensor * src1 = octx->src[1];
    const htp_tensor * dst  = octx->dst[0];
    return plan_ok(octx, kp) && uint64_t(kp.r2) * src0->ne[2] == src1->ne[2] &&
           uint64_t(kp.r3) * src0->ne[3] == src1->ne[3] && dst->ne[1] == src1->ne[1] && dst->ne[2] == src1->ne[2] &&
           dst->ne[3] == src1->ne[3] && rows_inside(octx, kp, w_bytes);
}

bool guard_matmul_id_plan(const htp_op_context * octx, const htp_matmul_kparams & kp, uint64_t w_bytes) {
    const htp_tensor * src1 = octx->src[1];
    const htp_tensor * ids  = octx->src[2];
    const htp_tensor * dst  = octx->dst[0];
    return plan_ok(octx, kp) && proto::htp_matmul_id_ring_fits(kp) && kp.r2 == 1 && kp.r3 == 1 &&
           proto::htp_matmul_id_shapes_supported(*octx->src[0], *src1, *ids, *dst) &&
           last_row(ids) + uint64_t(ids->ne[0]) * 4 <= ids->size && rows_inside(octx, kp, w_bytes);
}

uint32_t run_matmul_job(htp_op_context * octx, mm_thread_fn prepare_rows, mm_thread_fn dot) {
    mm_job job{};
    if (!start_job(octx, job)) {
        return proto::HTP_STATUS_VTCM_TOO_SMALL;
    }
    const uint32_t ne11 = job.src1->ne[1];
    uint32_t i03 = 0, n3 = 0;
    for (uint32_t i13 = 0; i13 < job.src1->ne[3]; ++i13) {
        uint32_t i02 = 0, n2 = 0;
        for (uint32_t i12 = 0; i12 < job.src1->ne[2]; ++i12) {
            job.w_offset = job.tiled ? (i03 * job.src0->ne[2] + i02) * job.kp.w_slice_bytes
                                     : i02 * job.src0->nb[2] + i03 * job.src0->nb[3];
            if (++n2 == job.kp.r2) {
                n2 = 0;
                ++i02;
            }
            const uint32_t a_slice = i12 * job.src1->nb[2] + i13 * job.src1->nb[3];
            const uint32_t d_slice = i12 * job.dst->nb[2] + i13 * job.dst->nb[3];
            for (job.row0 = 0; job.row0 < ne11; job.row0 += job.kp.act_rows) {
                job.nrows = ne11 - job.row0 < job.kp.act_rows ? ne11 - job.row0 : job.kp.act_rows;
                for (uint32_t j = 0; j < job.nrows; ++j) {
                    job.a_off[j] = a_slice + (job.row0 + j) * job.src1->nb[1];
                    job.d_off[j] = d_slice + (job.row0 + j) * job.dst->nb[1];
                }
                run_group(octx, job, prepare_rows, dot);
            }
        }
        if (++n3 == job.kp.r3) {
            n3 = 0;
            ++i03;
        }
    }
    return proto::HTP_STATUS_OK;
}

uint32_t run_matmul_id_job(htp_op_context * octx, mm_thread_fn prepare_rows, mm_thread_fn dot) {
    mm_job job{};
    if (!start_job(octx, job)) {
        return proto::HTP_STATUS_VTCM_TOO_SMALL;
    }
    job.scatter               = true;
    const expert_ids ids      = expert_ids_of(octx);
    const bool       shared_b = job.src1->ne[1] == 1;  // one activation row for every slot
    uint32_t         expert   = UINT32_MAX;            // the expert whose rows are being grouped
    return walk_routed_rows(
        ids, job.src0->ne[2], 0, job.kp.max_expert_rows,
        [&](uint32_t e, uint32_t s, uint32_t t) {
            if (e != expert) {
                expert       = e;
                job.w_offset = job.tiled ? e * job.kp.w_slice_bytes : e * job.src0->nb[2];
                job.nrows    = 0;
                job.row0     = 0;
            }
            job.a_off[job.nrows] = (shared_b ? 0 : s) * job.src1->nb[1] + t * job.src1->nb[2];
            job.d_off[job.nrows] = s * job.dst->nb[1] + t * job.dst->nb[2];
            if (++job.nrows == job.kp.act_rows) {
                run_group(octx, job, prepare_rows, dot);
                job.row0 += job.nrows;
                job.nrows = 0;
            }
            return true;
        },
        [&](uint32_t) {
            if (job.nrows > 0) {
                run_group(octx, job, prepare_rows, dot);
            }
            return true;
        });
}

} // namespace hexnpu::htp
