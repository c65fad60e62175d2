// ARGSORT and TOP_K (proto/htp-sort.h): each thread streams its rows DDR -> DMA -> VTCM, turns
// each row's values into sort keys in place (lanes past the row: the largest key, so they sort
// last), fills the dst slot's row with the indices 0..n_sort-1, sorts both by the bitonic network
// (hvx-sort.h) and sends the first dst.ne0 indices back to DDR.
#include "eltwise-rows.h"
#include "htp-tensor.h"
#include "hvx-sort.h"
#include "ops.h"
#include "stream-rows.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-sort.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::htp_sort_kparams;

constexpr uint32_t SORT_STREAMS = 2;  // src0 (then the keys), dst (the indices)

// One row: keys[0 .. n_vec) from the values of its first n lanes, idx the lane numbers.
__attribute__((noinline)) void keys_and_indices(HVX_Vector * keys, HVX_Vector * idx, uint32_t n_vec, uint32_t n,
                                                bool descending) {
    const HVX_Vector lane = hvx_lane_index_w();
    const HVX_Vector last = Q6_V_vsplat_R(0x7FFFFFFF);
    const HVX_Vector rows = Q6_V_vsplat_R(int32_t(n));
    for (uint32_t v = 0; v < n_vec; ++v) {
        const HVX_Vector i = Q6_Vw_vadd_VwVw(lane, Q6_V_vsplat_R(int32_t(v * 32)));
        keys[v]            = Q6_V_vmux_QVV(Q6_Q_vcmp_gt_VwVw(rows, i), hvx_sort_key(keys[v], descending), last);
        idx[v]             = i;
    }
}

struct sort_job {
    const htp_op_context *    octx;
    htp_sort_kparams          kp;
    const proto::htp_tensor * src;
    const proto::htp_tensor * dst;
    eltwise_rows              rows_plan;
};

void sort_thread(uint32_t, uint32_t i, void * data) {
    const sort_job &     job  = *static_cast<const sort_job *>(data);
    const eltwise_rows & plan = job.rows_plan;
    const uint32_t       n_vec = job.kp.pipe.vtcm_row_stride / 128;
    stream_rows(job.octx, i, job.kp.pipe, job.kp.div_ne1, job.kp.div_ne2, plan, job.src, job.dst,
                job.kp.pipe.row_size, job.kp.dst_row_size, 0, [](dma_queue *, uint32_t, const row_block &) {},
                [&](uint32_t k, const row_block & b) {
                    HVX_Vector * keys = reinterpret_cast<HVX_Vector *>(plan.slot(i, 0, k));
                    HVX_Vector * idx  = reinterpret_cast<HVX_Vector *>(plan.slot(i, 1, k));
                    for (uint32_t r = 0; r < b.nrows; ++r, keys += n_vec, idx += n_vec) {
                        keys_and_indices(keys, idx, n_vec, job.kp.pipe.row_size / 4, job.kp.descending != 0);
                        hvx_bitonic_sort(keys, idx, job.kp.log2_n_sort);
                    }
                });
}

} // namespace

bool guard_sort(const htp_op_context * octx) {
    htp_sort_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const proto::htp_tensor * src = octx->src[0];
    const proto::htp_tensor * dst = octx->dst[0];
    return eltwise_pipeline_fits(octx, kp.pipe, SORT_STREAMS, proto::HTP_ELTWISE_MAX_SLOTS) &&
           eltwise_walk_fits(dst, kp.div_ne1, kp.div_ne2) && proto::htp_sort_layout_valid(octx->op->opcode, *src, *dst) &&
           kp.log2_n_sort == proto::htp_sort_log2(src->ne[0]) && kp.pipe.vtcm_row_stride == uint32_t(4) << kp.log2_n_sort &&
           kp.pipe.row_size == src->ne[0] * 4 && kp.dst_row_size == dst->ne[0] * 4;
}

uint32_t op_sort(htp_op_context * octx) {
    sort_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx = octx;
    job.src  = octx->src[0];
    job.dst  = octx->dst[0];
    return run_eltwise_job(octx, job, SORT_STREAMS, sort_thread);
}

} // namespace hexnpu::htp
