// SSM_CONV (proto/htp-linear-attn.h): items of 32 channels x up to 32 output times. The channels'
// sx rows and c rows land by DMA; two 32 x 32 word transposes make vectors over the channels of
// each sx column and each tap; each output time is the taps' products added in order (for a few
// times: each channel's products summed across lanes, no transposes); the item's outputs leave by
// one 2-D DMA.
#include "htp-tensor.h"
#include "hvx-arith.h"
#include "hvx-sort.h"
#include "hvx-transpose.h"
#include "item-job.h"
#include "ops.h"
#include "stream-pipeline.h"
#include "proto/htp-linear-attn.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::htp_ssm_conv_kparams;
using proto::htp_tensor;

struct conv_item {
    uint32_t row;  // the item's index (trace info)
    uint32_t x_off, c_off, dst_off;
    uint32_t nch;  // channels (<= 32)
    uint32_t nt;   // output times (<= tb)
};

struct conv_job {
    const htp_op_context * octx;
    htp_ssm_conv_kparams   kp;
    const htp_tensor *     sx;
    const htp_tensor *     c;
    const htp_tensor *     dst;
    uint8_t *              vtcm;
    item_range             items;  // this member's (run_item_job)
};

inline HVX_Vector * vec(uint8_t * p) { return reinterpret_cast<HVX_Vector *>(p); }

// The slot's outputs from its sx and c rows; scratch: sx turned (64 vectors), c turned (32), the
// transposes' 64.
__attribute__((noinline)) void conv_slot(const conv_job & job, uint8_t * slot, uint8_t * scratch, const conv_item & it) {
    const uint32_t taps = job.c->ne[0];
    HVX_Vector *   xt   = vec(scratch);
    HVX_Vector *   ct   = xt + 64;
    HVX_Vector *   tmp  = ct + 32;
    HVX_Vector *   x    = vec(slot);
    HVX_Vector *   out  = vec(slot + proto::HTP_SSM_CONV_X_BYTES + proto::HTP_SSM_CONV_C_BYTES);
    hvx_transpose_32x32(x, 2, xt, 1, tmp);
    if (it.nt + taps - 1 > 32) {
        hvx_transpose_32x32(x + 1, 2, xt + 32, 1, tmp);
    }
    hvx_transpose_32x32(vec(slot + proto::HTP_SSM_CONV_X_BYTES), 1, ct, 1, tmp);
    for (uint32_t t = 0; t < it.nt; ++t) {
        HVX_Vector sum = Q6_V_vzero();
        for (uint32_t i = 0; i < taps; ++i) {
            sum = hvx_sf_add(sum, hvx_sf_mul(xt[t + i], ct[i]));
        }
        out[t] = sum;
    }
}

// Time t of the slot's 32 channels, by rows: x rows (128 bytes apart) rotated by t, the lanes past
// the taps zeroed, times c's rows; p (32 vectors) gets them in hvx_sf_row_sums32's order.
__attribute__((noinline)) void tap_products(const HVX_Vector * x, const HVX_Vector * c, uint32_t t, uint32_t taps,
                                            HVX_Vector * p) {
    const HVX_VectorPred in = Q6_Q_vcmp_gt_VwVw(hvx_splat_w(int32_t(taps)), hvx_lane_index_w());
    for (uint32_t r = 0; r < 32; ++r) {
        const HVX_Vector xs     = Q6_V_vror_VR(x[r], int32_t(4 * t));
        p[hvx_row_sums_slot(r)] = Q6_V_vmux_QVV(in, hvx_sf_mul(xs, c[r]), Q6_V_vzero());
    }
}

// The slot's outputs by rows (kp.by_rows): per time, the channels' tap products summed per row.
__attribute__((noinline)) void conv_slot_by_rows(const conv_job & job, uint8_t * slot, uint8_t * scratch,
                                                 const conv_item & it) {
    HVX_Vector * p   = vec(scratch);
    HVX_Vector * out = vec(slot + proto::HTP_SSM_CONV_X_BYTES + proto::HTP_SSM_CONV_C_BYTES);
    for (uint32_t t = 0; t < it.nt; ++t) {
        tap_products(vec(slot), vec(slot + proto::HTP_SSM_CONV_X_BYTES), t, job.c->ne[0], p);
        out[t] = hvx_sf_row_sums32(p);
    }
}

void conv_thread(uint32_t, uint32_t i, void * data) {
    const conv_job &             job = *static_cast<const conv_job *>(data);
    const htp_ssm_conv_kparams & kp  = job.kp;
    const uint32_t               taps = job.c->ne[0], d_inner = job.dst->ne[0], n_t = job.dst->ne[1];
    uint32_t                     it, end;
    thread_items(job.items, i, &it, &end);
    dma_queue *      q       = &job.octx->dma[i];
    uint8_t *        area    = job.vtcm + size_t(i) * proto::HTP_SSM_CONV_THREAD_BYTES;
    uint8_t *        scratch = area + 2 * proto::HTP_SSM_CONV_SLOT_BYTES;
    const dma_addr_t sx_base = htp_tensor_dma_addr(job.octx->plat, job.sx);
    const dma_addr_t c_base  = htp_tensor_dma_addr(job.octx->plat, job.c);
    const dma_addr_t d_base  = htp_tensor_dma_addr(job.octx->plat, job.dst);
    auto slot_of = [&](uint32_t s) { return area + s * proto::HTP_SSM_CONV_SLOT_BYTES; };
    stream_blocks<2, conv_item>(
        q, &job.octx->trace[i], 2, 2,
        [&](conv_item & b) {
            if (it >= end) {
                return false;
            }
            const uint32_t rest = proto::fastdiv(it, kp.div_cblocks);
            const uint32_t c0   = (it - rest * kp.div_cblocks.d) * 32;
            const uint32_t s    = proto::fastdiv(rest, kp.div_tblocks);
            const uint32_t t0   = (rest - s * kp.div_tblocks.d) * kp.tb;
            b = conv_item{it,
                          s * job.sx->nb[2] + c0 * job.sx->nb[1] + t0 * 4,
                          c0 * job.c->nb[1],
                          s * job.dst->nb[2] + t0 * job.dst->nb[1] + c0 * 4,
                          d_inner - c0 < 32 ? d_inner - c0 : 32,
                          n_t - t0 < kp.tb ? n_t - t0 : kp.tb};
            ++it;
            return true;
        },
        [&](uint32_t s, const conv_item & b) { dma_queue_push_token(q, slot_of(s), trace_info(b.row)); },
        [&](uint32_t s, const conv_item & b) {
            uint8_t * slot = slot_of(s);
            // A channel's columns: 64 (two vectors, turned) or, by rows, one vector each.
            dma_queue_push_ddr_to_vtcm(q, dma_addr_of(slot), dma_addr_at(sx_base, b.x_off), kp.by_rows ? 128 : 256,
                                       job.sx->nb[1], (b.nt + taps - 1) * 4, b.nch, trace_info(b.row));
            dma_queue_push_ddr_to_vtcm(q, dma_addr_of(slot + proto::HTP_SSM_CONV_X_BYTES), dma_addr_at(c_base, b.c_off),
                                       128, job.c->nb[1], taps * 4, b.nch, trace_info(b.row));
        },
        [&](uint32_t s, const conv_item & b) {
            if (kp.by_rows) {
                conv_slot_by_rows(job, slot_of(s), scratch, b);
            } else {
                conv_slot(job, slot_of(s), scratch, b);
            }
        },
        [&](uint32_t s, const conv_item & b) {
            dma_queue_push_vtcm_to_ddr(q, dma_addr_at(d_base, b.dst_off),
                                       dma_addr_of(slot_of(s) + proto::HTP_SSM_CONV_X_BYTES + proto::HTP_SSM_CONV_C_BYTES),
                                       job.dst->nb[1], 128, b.nch * 4, b.nt, trace_info(b.row));
        });
}

} // namespace

bool guard_ssm_conv(const htp_op_context * octx) {
    htp_ssm_conv_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * sx  = octx->src[0];
    const htp_tensor * c   = octx->src[1];
    const htp_tensor * dst = octx->dst[0];
    if (!proto::htp_ssm_conv_layout_valid(*sx, *c, *dst) || kp.tb < 1 || kp.tb > proto::HTP_SSM_CONV_TIMES) {
        return false;
    }
    const uint32_t cblocks = (dst->ne[0] + 31) / 32;
    const uint32_t tblocks = kp.div_tblocks.d;  // ceil(n_t / tb), checked without a division
    return kp.n_threads >= 1 && kp.n_threads <= octx->n_threads && kp.div_cblocks.d == cblocks && tblocks >= 1 &&
           (kp.by_rows == 0 || (kp.by_rows == 1 && kp.tb + c->ne[0] - 1 <= 32)) &&
           uint64_t(tblocks) * kp.tb >= dst->ne[1] && uint64_t(tblocks - 1) * kp.tb < dst->ne[1] &&
           uint64_t(kp.n_items) == uint64_t(cblocks) * tblocks * dst->ne[2] &&
           uint64_t(kp.items_per_thread) * kp.n_threads >= kp.n_items &&
           kp.vtcm_size == kp.n_threads * proto::HTP_SSM_CONV_THREAD_BYTES;
}

uint32_t op_ssm_conv(htp_op_context * octx) {
    conv_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx = octx;
    job.sx   = octx->src[0];
    job.c    = octx->src[1];
    job.dst  = octx->dst[0];
    return run_item_job(octx, job, job.kp.n_items, job.kp.vtcm_size, job.kp.n_threads, conv_thread);
}

} // namespace hexnpu::htp
