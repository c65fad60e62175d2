// TRI, DIAG and SOLVE_TRI (proto/htp-triangular.h). TRI streams src's rows as the unary ops do and
// keeps each row's triangle by one lane comparison per vector; DIAG builds each dst row from the
// matrix's source row; SOLVE_TRI substitutes forward over up to cols right-hand sides at once, A's
// rows and B's columns landed by DMA in a slot while the other slot computes.
#include "eltwise-rows.h"
#include "htp-tensor.h"
#include "hvx-arith.h"
#include "hvx-div.h"
#include "hvx-sort.h"
#include "item-job.h"
#include "ops.h"
#include "row-walk.h"
#include "stream-dst-rows.h"
#include "stream-pipeline.h"
#include "stream-rows.h"
#include "proto/htp-triangular.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::htp_solve_tri_kparams;
using proto::htp_tensor;
using proto::htp_tri_kparams;

constexpr uint32_t TRI_STREAMS = 2;  // the source rows, the result (DIAG: the matrix's row, the result)

struct tri_job {
    const htp_op_context * octx;
    htp_tri_kparams        kp;
    const htp_tensor *     src;
    const htp_tensor *     dst;
    eltwise_rows           rows_plan;
};

// Row i1's kept columns: lane index + 32 v compared with i1 + offset.
__attribute__((noinline)) void tri_rows(HVX_Vector * d, const HVX_Vector * s, uint32_t nrows, uint32_t i1, uint32_t per_row,
              const htp_tri_kparams & kp) {
    const HVX_Vector lane = hvx_lane_index_w();
    for (uint32_t r = 0; r < nrows; ++r, d += per_row, s += per_row) {
        const int32_t bound = int32_t(i1 + r) + kp.offset;
        for (uint32_t v = 0; v < per_row; ++v) {
            const HVX_Vector     col  = Q6_Vw_vadd_VwVw(lane, hvx_splat_w(int32_t(32 * v)));
            const HVX_Vector     lim  = hvx_splat_w(bound);
            const HVX_VectorPred keep = kp.upper ? Q6_Q_vcmp_gt_VwVw(col, lim) : Q6_Q_vcmp_gt_VwVw(lim, col);
            d[v]                      = Q6_V_vmux_QVV(keep, s[v], Q6_V_vzero());
        }
    }
}

void tri_thread(uint32_t, uint32_t i, void * data) {
    const tri_job &      job  = *static_cast<const tri_job *>(data);
    const eltwise_rows & plan = job.rows_plan;
    const uint32_t       row  = job.kp.pipe.row_size;
    stream_rows(job.octx, i, job.kp.pipe, job.kp.div_ne1, job.kp.div_ne2, plan, job.src, job.dst, row, row, 0,
                [](dma_queue *, uint32_t, const row_block &) {},
                [&](uint32_t k, const row_block & b) {
                    // A block stays in one slice: its rows are i1, i1 + 1, ...
                    const uint32_t i1 = proto::fastmodulo(b.row, job.kp.div_ne1);
                    tri_rows(reinterpret_cast<HVX_Vector *>(plan.slot(i, 1, k)),
                             reinterpret_cast<const HVX_Vector *>(plan.slot(i, 0, k)), b.nrows, i1,
                             job.kp.pipe.vtcm_row_stride / 128, job.kp);
                });
}

// Element i1 of the row, the rest 0.
__attribute__((noinline)) void diag_row(HVX_Vector * d, const HVX_Vector * s, uint32_t n_vectors, uint32_t i1) {
    const HVX_Vector lane = hvx_lane_index_w();
    for (uint32_t v = 0; v < n_vectors; ++v) {
        const HVX_Vector col = Q6_Vw_vadd_VwVw(lane, hvx_splat_w(int32_t(32 * v)));
        d[v]                 = Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(col, hvx_splat_w(int32_t(i1))), s[v], Q6_V_vzero());
    }
}

void diag_thread(uint32_t, uint32_t i, void * data) {
    const tri_job &  job  = *static_cast<const tri_job *>(data);
    const dma_addr_t base = htp_tensor_dma_addr(job.octx->plat, job.src);
    stream_dst_rows(
        job, i, 1,
        [&](dma_queue * q, uint8_t * slot, const row_cursor & b) {
            dma_queue_push_ddr_to_vtcm(q, dma_addr_of(slot), dma_addr_at(base, row_offset(job.src, 0, b.i2, b.i3)), 0, 0,
                                       job.kp.pipe.row_size, 1, trace_info(b.row));
        },
        [&](HVX_Vector * d, const HVX_Vector * s, uint32_t n_vectors, const row_cursor & b) {
            diag_row(d, s, n_vectors, b.i1);
        });
}

// ---- SOLVE_TRI

struct solve_item {
    uint32_t row;     // the item's index (trace info)
    uint32_t a_off;   // A's matrix in its tensor
    uint32_t b_off;   // the item's first column in B's matrix
    uint32_t x_off;   // ... in X's
    uint32_t ncols;   // right-hand sides it takes (<= cols)
};

struct solve_job {
    const htp_op_context * octx;
    htp_solve_tri_kparams  kp;
    const htp_tensor *     a;
    const htp_tensor *     b;
    const htp_tensor *     x;
    uint8_t *              vtcm;
    item_range             items;  // this member's (run_item_job)
};

// a / d correctly rounded. Out of line with d a scalar: the division's constants stay inside it and
// no vector of a caller's loop is live across the call.
__attribute__((noinline)) HVX_Vector div_rn(HVX_Vector a, float d) { return hvx_sf_div_rn(a, hvx_splat_sf(d)); }

// Each of the row's nv vectors divided by d (once per row: outside the substitution's loops).
__attribute__((noinline)) void divide_row(HVX_Vector * x, uint32_t nv, float d) {
    for (uint32_t v = 0; v < nv; ++v) {
        x[v] = div_rn(x[v], d);
    }
}

// Forward substitution over the slot's columns: X row r = (B row r - sum_t A[r][t] X row t) / A[r][r],
// the sum in ascending t from its first product (GGML's 0.0f + p is p). The slot: A's rows, B's,
// X's (the input areas only DMA writes; X only the writeback reads).
__attribute__((noinline)) void solve_slot(const solve_job & job, uint8_t * slot) {
    const htp_solve_tri_kparams & kp = job.kp;
    const uint32_t                n  = job.a->ne[0];
    const uint32_t                nv = kp.cols / 32;
    const uint8_t *               A  = slot;
    const uint8_t *               B  = slot + n * kp.a_stride;
    uint8_t *                     X  = slot + n * (kp.a_stride + kp.x_stride);
    auto x_row = [&](uint32_t t) { return reinterpret_cast<HVX_Vector *>(X + t * kp.x_stride); };
    for (uint32_t r = 0; r < n; ++r) {
        const float *      arow = reinterpret_cast<const float *>(A + r * kp.a_stride);
        const HVX_Vector * br   = reinterpret_cast<const HVX_Vector *>(B + r * kp.x_stride);
        HVX_Vector *       xr   = x_row(r);
        for (uint32_t v = 0; v < nv; ++v) {
            if (r == 0) {
                xr[v] = br[v];
                continue;
            }
            HVX_Vector sum = hvx_sf_mul(hvx_splat_sf(arow[0]), x_row(0)[v]);
            for (uint32_t t = 1; t < r; ++t) {
                sum = hvx_sf_add(sum, hvx_sf_mul(hvx_splat_sf(arow[t]), x_row(t)[v]));
            }
            xr[v] = hvx_sf_sub(br[v], sum);
        }
        divide_row(xr, nv, arow[r]);
    }
}

void solve_thread(uint32_t, uint32_t i, void * data) {
    const solve_job &             job = *static_cast<const solve_job *>(data);
    const htp_solve_tri_kparams & kp  = job.kp;
    const uint32_t                n   = job.a->ne[0];
    const uint32_t                k   = job.b->ne[0];
    uint32_t                      it, end;
    thread_items(job.items, i, &it, &end);
    dma_queue *      q      = &job.octx->dma[i];
    uint8_t *        slots  = job.vtcm + size_t(i) * 2 * kp.slot_bytes;
    const dma_addr_t a_base = htp_tensor_dma_addr(job.octx->plat, job.a);
    const dma_addr_t b_base = htp_tensor_dma_addr(job.octx->plat, job.b);
    const dma_addr_t x_base = htp_tensor_dma_addr(job.octx->plat, job.x);
    auto slot_of = [&](uint32_t s) { return slots + size_t(s) * kp.slot_bytes; };
    stream_blocks<2, solve_item>(
        q, &job.octx->trace[i], 2, 2,
        [&](solve_item & b) {
            if (it >= end) {
                return false;
            }
            const uint32_t batch = proto::fastdiv(it, kp.div_blocks);
            const uint32_t col0  = (it - batch * kp.div_blocks.d) * kp.cols;
            const uint32_t i3 = proto::fastdiv(batch, kp.div_ne2), i2 = batch - i3 * kp.div_ne2.d;
            b = solve_item{it, i2 * job.a->nb[2] + i3 * job.a->nb[3], i2 * job.b->nb[2] + i3 * job.b->nb[3] + col0 * 4,
                           i2 * job.x->nb[2] + i3 * job.x->nb[3] + col0 * 4, k - col0 < kp.cols ? k - col0 : kp.cols};
            ++it;
            return true;
        },
        [&](uint32_t s, const solve_item & b) { dma_queue_push_token(q, slot_of(s), trace_info(b.row)); },
        [&](uint32_t s, const solve_item & b) {
            uint8_t * slot = slot_of(s);
            dma_queue_push_ddr_to_vtcm(q, dma_addr_of(slot), dma_addr_at(a_base, b.a_off), kp.a_stride, job.a->nb[1],
                                       n * 4, n, trace_info(b.row));
            dma_queue_push_ddr_to_vtcm(q, dma_addr_of(slot + n * kp.a_stride), dma_addr_at(b_base, b.b_off),
                                       kp.x_stride, job.b->nb[1], b.ncols * 4, n, trace_info(b.row));
        },
        [&](uint32_t s, const solve_item &) { solve_slot(job, slot_of(s)); },
        [&](uint32_t s, const solve_item & b) {
            dma_queue_push_vtcm_to_ddr(q, dma_addr_at(x_base, b.x_off),
                                       dma_addr_of(slot_of(s) + n * (kp.a_stride + kp.x_stride)),
                                       job.x->nb[1], kp.x_stride, b.ncols * 4, n, trace_info(b.row));
        });
}

} // namespace

bool guard_tri(const htp_op_context * octx) {
    htp_tri_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * src  = octx->src[0];
    const htp_tensor * dst  = octx->dst[0];
    const bool         diag = octx->op->opcode == proto::HTP_OP_DIAG;
    const bool layout = diag ? proto::htp_diag_layout_valid(*src, *dst) && kp.pipe.block_rows == 1
                             : proto::htp_tri_layout_valid(*src, *dst) && kp.offset >= -1 && kp.offset <= 1;
    return layout && eltwise_pipeline_fits(octx, kp.pipe, TRI_STREAMS, proto::HTP_ELTWISE_MAX_SLOTS) &&
           eltwise_walk_fits(dst, kp.div_ne1, kp.div_ne2) && kp.pipe.row_size == dst->ne[0] * 4;
}

uint32_t op_tri(htp_op_context * octx) {
    tri_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx = octx;
    job.src  = octx->src[0];
    job.dst  = octx->dst[0];
    return run_eltwise_job(octx, job, TRI_STREAMS,
                           octx->op->opcode == proto::HTP_OP_DIAG ? diag_thread : tri_thread);
}

bool guard_solve_tri(const htp_op_context * octx) {
    htp_solve_tri_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * a = octx->src[0];
    const htp_tensor * b = octx->src[1];
    const htp_tensor * x = octx->dst[0];
    const uint32_t     n = a->ne[0];
    return proto::htp_solve_tri_layout_valid(*a, *b, *x) && n >= 1 && n <= proto::HTP_SOLVE_TRI_MAX_N &&
           kp.n_threads >= 1 && kp.n_threads <= octx->n_threads && kp.cols >= 32 && kp.cols % 32 == 0 &&
           kp.cols <= proto::HTP_SOLVE_TRI_MAX_COLS && kp.div_blocks.d >= 1 &&
           uint64_t(kp.div_blocks.d) * kp.cols >= b->ne[0] && uint64_t(kp.div_blocks.d - 1) * kp.cols < b->ne[0] &&
           kp.div_ne2.d == a->ne[2] && uint64_t(kp.n_items) == uint64_t(kp.div_blocks.d) * a->ne[2] * a->ne[3] &&
           uint64_t(kp.items_per_thread) * kp.n_threads >= kp.n_items && kp.a_stride == proto::htp_vtcm_row_stride(n * 4) &&
           kp.x_stride == kp.cols * 4 && kp.slot_bytes == n * (kp.a_stride + 2 * kp.x_stride) &&
           kp.vtcm_size == proto::htp_solve_tri_vtcm_size(kp.n_threads, n, kp.cols);
}

uint32_t op_solve_tri(htp_op_context * octx) {
    solve_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx = octx;
    job.a    = octx->src[0];
    job.b    = octx->src[1];
    job.x    = octx->dst[0];
    return run_item_job(octx, job, job.kp.n_items, job.kp.vtcm_size, job.kp.n_threads, solve_thread);
}

} // namespace hexnpu::htp
