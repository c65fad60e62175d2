// SUM and ARGMAX (proto/htp-reduce.h): each thread streams its rows of src0 in chunks, DDR -> DMA ->
// VTCM -> HVX, into running state in VTCM; ARGMAX's indices go out by DMA at the thread's end, SUM's
// partial sums are added in thread order by one more work item and go out by DMA.
#include "eltwise-rows.h"
#include "htp-tensor.h"
#include "hvx-arith.h"
#include "hvx-order-key.h"
#include "hvx-sort.h"
#include "ops.h"
#include "row-walk.h"
#include "stream-pipeline.h"
#include "vtcm.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-reduce.h"
#include "proto/htp-status.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::htp_reduce_kparams;
using proto::htp_tensor;

// One DMA chunk: elements [first, first + n) of src0's flat row `row`.
struct reduce_chunk {
    uint32_t row;
    uint32_t src_offset;
    uint32_t first;
    uint32_t n;
};

struct reduce_job {
    const htp_op_context * octx;
    htp_reduce_kparams     kp;
    const htp_tensor *     src;
    const htp_tensor *     dst;
    uint32_t               nrows;
    uint8_t *              vtcm;  // thread i's slots, then its out area: i * (n_slots * chunk bytes + out_bytes)
    bool                   argmax;

    uint32_t  chunk_bytes() const { return kp.chunk_elems * 4; }
    uint8_t * slot(uint32_t i, uint32_t k) const {
        return vtcm + size_t(i) * (kp.n_slots * chunk_bytes() + kp.out_bytes) + size_t(k) * chunk_bytes();
    }
    HVX_Vector * state(uint32_t i) const { return reinterpret_cast<HVX_Vector *>(slot(i, kp.n_slots)); }
    int32_t *    indices(uint32_t i) const {
        return reinterpret_cast<int32_t *>(slot(i, kp.n_slots) + proto::HTP_REDUCE_STATE_BYTES);
    }
};

// ---- SUM: per-lane fp32 sums of every chunk (lanes past the chunk add zero).

__attribute__((noinline)) void sum_chunk(HVX_Vector * acc, const HVX_Vector * x, uint32_t n) {
    HVX_Vector     a     = *acc;
    const uint32_t whole = n / 32;
    for (uint32_t j = 0; j < whole; ++j) {
        a = hvx_sf_add(a, x[j]);
    }
    if (n % 32 != 0) {
        a = hvx_sf_add(a, Q6_V_vmux_QVV(Q6_Q_vsetq_R(int32_t(n % 32 * 4)), x[whole], Q6_V_vzero()));
    }
    *acc = a;
}

// ---- ARGMAX. GGML's scan (max = MAX(max, x), idx = i where they are equal) keeps the last of
// equal maxima, and a NaN makes max NaN, so the element after it starts the scan afresh. Its state
// is (max, idx, max is NaN); the kernel holds it as a scalar order key, and summarizes the
// elements since then per lane: the largest key and its last index (-1: none yet). -0 is keyed as
// +0, since GGML compares them equal. A chunk without NaN updates the lanes; one with a NaN folds
// the lanes into the scalar state and runs GGML's scan element by element (rare: NaN logits).

struct argmax_scalar {
    int32_t key;
    int32_t idx;
    bool    nan;
};

constexpr int32_t scalar_order_key(uint32_t bits) {
    bits = bits == 0x80000000u ? 0 : bits;
    return int32_t(bits & 0x80000000u ? bits ^ 0x7FFFFFFFu : bits);
}
constexpr argmax_scalar ARGMAX_START = {scalar_order_key(0xFF800000u), 0, false};  // -inf, index 0

HVX_Vector w_allmax(HVX_Vector v) {
    for (int32_t bytes = 64; bytes >= 4; bytes /= 2) {
        v = Q6_Vw_vmax_VwVw(v, Q6_V_vror_VR(v, bytes));
    }
    return v;
}

// state[0]: the lanes' largest keys, state[1]: their last indices, state[2]: the lane numbers. The
// per-row steps are calls: inlined, their constants would be hoisted out of the chunk loop and
// spilled.
__attribute__((noinline)) void argmax_lanes_reset(HVX_Vector * state) {
    state[0] = Q6_V_vsplat_R(int32_t(0x80000000u));
    state[1] = Q6_V_vsplat_R(-1);
}

// The lanes' summary into s (elements after s's): their largest key and its last index win when
// s is NaN or not larger.
__attribute__((noinline)) void argmax_fold(HVX_Vector * state, argmax_scalar * s) {
    const HVX_Vector m   = w_allmax(state[0]);
    const HVX_Vector idx = w_allmax(Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(state[0], m), state[1], Q6_V_vsplat_R(-1)));
    const int32_t    i   = Q6_R_vextract_VR(idx, 0);
    const int32_t    key = Q6_R_vextract_VR(m, 0);
    if (i >= 0 && (s->nan || key >= s->key)) {
        *s = argmax_scalar{key, i, false};
    }
    argmax_lanes_reset(state);
}

// The chunk's elements (indices first ..) into the lanes; false, with the lanes untouched, when it
// holds a NaN.
__attribute__((noinline)) bool argmax_chunk_lanes(HVX_Vector * state, const HVX_Vector * x, uint32_t first, uint32_t n) {
    HVX_Vector       m       = state[0];
    HVX_Vector       best    = state[1];
    HVX_Vector       idx     = Q6_Vw_vadd_VwVw(state[2], Q6_V_vsplat_R(int32_t(first)));
    HVX_Vector       nan_any = Q6_V_vzero();
    const HVX_Vector end     = Q6_V_vsplat_R(int32_t(first + n));
    for (uint32_t j = 0; j < (n + 31) / 32; ++j) {
        const HVX_Vector     v     = x[j];
        const HVX_VectorPred valid = Q6_Q_vcmp_gt_VwVw(end, idx);
        const HVX_VectorPred nan =
            Q6_Q_and_QQ(valid, Q6_Q_vcmp_gt_VwVw(Q6_V_vand_VV(v, Q6_V_vsplat_R(0x7FFFFFFF)), Q6_V_vsplat_R(0x7F800000)));
        nan_any = Q6_V_vor_VV(nan_any, Q6_V_vmux_QVV(nan, Q6_V_vsplat_R(1), Q6_V_vzero()));
        const HVX_Vector     key = hvx_sf_order_key(
            Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(v, Q6_V_vsplat_R(int32_t(0x80000000u))), Q6_V_vzero(), v));
        // key >= m, in valid lanes only
        const HVX_VectorPred take = Q6_Q_and_QQ(valid, Q6_Q_not_Q(Q6_Q_vcmp_gt_VwVw(m, key)));
        m    = Q6_V_vmux_QVV(take, key, m);
        best = Q6_V_vmux_QVV(take, idx, best);
        idx  = Q6_Vw_vadd_VwVw(idx, Q6_V_vsplat_R(32));
    }
    if (Q6_R_vextract_VR(w_allmax(nan_any), 0) != 0) {
        return false;
    }
    state[0] = m;
    state[1] = best;
    return true;
}

// GGML's scan over n elements (indices first ..) from s, one by one.
void argmax_chunk_scalar(const uint32_t * bits, uint32_t first, uint32_t n, argmax_scalar * s) {
    for (uint32_t j = 0; j < n; ++j) {
        const uint32_t b = bits[j];
        if ((b & 0x7FFFFFFFu) > 0x7F800000u) {
            s->nan = true;  // idx stays
            continue;
        }
        const int32_t key = scalar_order_key(b);
        if (s->nan || key >= s->key) {
            *s = argmax_scalar{key, int32_t(first + j), false};
        }
    }
}

void reduce_thread(uint32_t, uint32_t i, void * data) {
    reduce_job &             job = *static_cast<reduce_job *>(data);
    const htp_reduce_kparams & kp = job.kp;
    const uint32_t ir0 = i * kp.rows_per_thread;
    const uint32_t ir1 = ir0 + kp.rows_per_thread < job.nrows ? ir0 + kp.rows_per_thread : job.nrows;
    if (ir0 >= ir1) {
        return;
    }
    dma_queue *      q        = &job.octx->dma[i];
    const dma_addr_t src_base = htp_tensor_dma_addr(job.octx->plat, job.src);
    const uint32_t   ne0      = job.src->ne[0];
    HVX_Vector *     state    = job.state(i);
    if (job.argmax) {
        argmax_lanes_reset(state);
        state[2] = hvx_lane_index_w();
    } else {
        state[0] = Q6_V_vzero();
    }
    argmax_scalar scalar = ARGMAX_START;
    row_cursor    next   = row_cursor_at(ir0, kp.div_ne1, kp.div_ne2);
    uint32_t      first  = 0;  // of next's row
    stream_blocks<proto::HTP_ELTWISE_MAX_SLOTS, reduce_chunk>(
        q, &job.octx->trace[i], kp.n_slots, 1,
        [&](reduce_chunk & c) {
            if (next.row >= ir1) {
                return false;
            }
            c = reduce_chunk{next.row, row_offset(job.src, next.i1, next.i2, next.i3) + first * kp.elem_size, first,
                             ne0 - first < kp.chunk_elems ? ne0 - first : kp.chunk_elems};
            first += c.n;
            if (first == ne0) {
                first = 0;
                row_cursor_advance(next, 1, kp.div_ne1.d, kp.div_ne2.d);
            }
            return true;
        },
        [&](uint32_t k, const reduce_chunk & c) { dma_queue_push_token(q, job.slot(i, k), trace_info(c.row)); },
        [&](uint32_t k, const reduce_chunk & c) {
            dma_queue_push_ddr_to_vtcm(q, dma_addr_of(job.slot(i, k)), dma_addr_at(src_base, c.src_offset),
                                       job.chunk_bytes(), c.n * kp.elem_size, c.n * kp.elem_size, 1, trace_info(c.row));
        },
        [&](uint32_t k, const reduce_chunk & c) {
            HVX_Vector *   x       = reinterpret_cast<HVX_Vector *>(job.slot(i, k));
            const uint32_t vectors = (c.n + 31) / 32;
            if (!job.argmax) {
                rows_to_sf(x, x, 1, vectors, job.src->type);  // 16-bit elements widened in place
                sum_chunk(state, x, c.n);
                return;
            }
            if (c.first == 0) {
                scalar = ARGMAX_START;
            }
            if (!argmax_chunk_lanes(state, x, c.first, c.n)) {
                argmax_fold(state, &scalar);
                argmax_chunk_scalar(reinterpret_cast<const uint32_t *>(x), c.first, c.n, &scalar);
            }
            if (c.first + c.n == ne0) {
                argmax_fold(state, &scalar);
                job.indices(i)[c.row - ir0] = scalar.idx;
            }
        },
        [](uint32_t, const reduce_chunk &) { return uint32_t(0); });  // nothing goes out per chunk
    if (job.argmax) {
        dma_queue_push_vtcm_to_ddr(q, dma_addr_at(htp_tensor_dma_addr(job.octx->plat, job.dst), ir0 * 4),
                                   dma_addr_of(job.indices(i)), 0, 0, (ir1 - ir0) * 4, 1, trace_info(ir0));
        dma_queue_pop(q);
    }
}

// SUM's end: the threads' partial sums in thread order, across the lanes, in dst's type, out.
void sum_finish(uint32_t, uint32_t, void * data) {
    const reduce_job & job   = *static_cast<const reduce_job *>(data);
    HVX_Vector *       total = job.state(0);
    for (uint32_t t = 1; t < job.kp.n_threads && t * job.kp.rows_per_thread < job.nrows; ++t) {
        *total = hvx_sf_add(*total, *job.state(t));
    }
    *total = hvx_sf_allsum(*total);
    rows_from_sf(total, total, 1, 1, job.dst->type);
    dma_queue * q = &job.octx->dma[0];
    dma_queue_push_vtcm_to_ddr(q, htp_tensor_dma_addr(job.octx->plat, job.dst), dma_addr_of(total), 0, 0,
                               job.kp.elem_size, 1, 0);
    dma_queue_pop(q);
}

} // namespace

bool guard_reduce(const htp_op_context * octx) {
    htp_reduce_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * src = octx->src[0];
    const uint32_t     op  = octx->op->opcode;
    return proto::htp_reduce_layout_valid(op, *src, *octx->dst[0]) && kp.n_threads >= 1 &&
           kp.n_threads <= octx->n_threads && kp.n_slots >= 2 && kp.n_slots <= proto::HTP_ELTWISE_MAX_SLOTS &&
           kp.chunk_elems >= 32 && kp.chunk_elems % 32 == 0 && kp.elem_size == proto::htp_cpy_elem_size(src->type) &&
           kp.div_ne1.d == src->ne[1] && kp.div_ne2.d == src->ne[2] &&
           uint64_t(kp.rows_per_thread) * kp.n_threads >= htp_tensor_nrows(src) &&
           kp.out_bytes == proto::htp_reduce_out_bytes(op, kp.rows_per_thread) &&
           kp.vtcm_size == proto::htp_reduce_vtcm_size(kp);
}

uint32_t op_reduce(htp_op_context * octx) {
    if (octx->mdev->count > 1 && octx->mdev->idx != 0) {
        return proto::HTP_STATUS_OK;  // member 0 computes the op alone (proto/htp-reduce.h)
    }
    reduce_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx   = octx;
    job.src    = octx->src[0];
    job.dst    = octx->dst[0];
    job.nrows  = uint32_t(htp_tensor_nrows(job.src));
    job.argmax = octx->op->opcode == proto::HTP_OP_ARGMAX;
    vtcm_arena vtcm(octx->vtcm_base, octx->vtcm_size);
    job.vtcm = vtcm.take(job.kp.vtcm_size);
    if (!vtcm.ok()) {
        return proto::HTP_STATUS_VTCM_TOO_SMALL;
    }
    work_queue_run(octx->work, reduce_thread, &job, job.kp.n_threads);
    if (!job.argmax) {
        work_queue_run(octx->work, sum_finish, &job, 1);
    }
    return proto::HTP_STATUS_OK;
}

} // namespace hexnpu::htp
