// ARGSORT and TOP_K (proto/htp-sort.h): each thread streams its rows DDR -> DMA -> VTCM, turns
// each row's values into sort keys in place (lanes past the row: the largest key, so they sort
// last), fills the dst slot's row with the indices 0..n_sort-1, sorts both by the bitonic network
// (hvx-sort.h) and sends the first dst.ne0 indices back to DDR (a long row's TOP_K selects first).
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

// idx[v] = 32 v + lane.
__attribute__((noinline)) void lane_numbers(HVX_Vector * idx, uint32_t n_vec) {
    const HVX_Vector lane = hvx_lane_index_w();
    for (uint32_t v = 0; v < n_vec; ++v) {
        idx[v] = Q6_Vw_vadd_VwVw(lane, Q6_V_vsplat_R(int32_t(v * 32)));
    }
}

// One row: keys[0 .. n_vec) from the values of its first n lanes (the others the largest key).
__attribute__((noinline)) void make_keys(HVX_Vector * keys, uint32_t n_vec, uint32_t n, bool descending) {
    const HVX_Vector lane = hvx_lane_index_w();
    const HVX_Vector last = Q6_V_vsplat_R(0x7FFFFFFF);
    const HVX_Vector rows = Q6_V_vsplat_R(int32_t(n));
    for (uint32_t v = 0; v < n_vec; ++v) {
        const HVX_Vector i = Q6_Vw_vadd_VwVw(lane, Q6_V_vsplat_R(int32_t(v * 32)));
        keys[v]            = Q6_V_vmux_QVV(Q6_Q_vcmp_gt_VwVw(rows, i), hvx_sort_key(keys[v], descending), last);
    }
}

// TOP_K of a long row without sorting it (its keys are inverted: the k largest values are the k
// smallest keys). The k smallest keys all lie in the vectors whose minimum is at most T, the k-th
// smallest vector minimum: the k vectors with the smallest minima hold k keys no larger than T, so
// the k-th smallest key is at most T, and every key up to it sits in a vector whose minimum is at
// most T. So: the vectors' minima (and vector numbers) sorted in scratch, T read off, the vectors
// with minimum <= T copied whole (keys and indices) and sorted, their first k indices out. Scratch
// in the index slot: minima (sorted, and a copy in vector order), their vector numbers, then cap
// vectors of keys and of indices (cap: the host's plan, proto::htp_top_k_cap_log2). False (nothing
// decided) when ties on T select more than cap vectors: the caller sorts the whole row.
// Each vector's minimum into lane v % 32 of minima (and in_order), its number into which.
__attribute__((noinline)) void gather_minima(const HVX_Vector * keys, uint32_t n_vec, HVX_Vector * minima,
                                             HVX_Vector * in_order, HVX_Vector * which) {
    const HVX_Vector lane = hvx_lane_index_w();
    HVX_Vector       acc  = Q6_V_vzero();
    for (uint32_t v = n_vec; v-- > 0;) {  // shifted in at the front
        acc = Q6_V_vlalign_VVR(acc, hvx_w_allmin(keys[v]), 4);
        if (v % 32 == 0) {
            minima[v / 32]   = acc;
            in_order[v / 32] = acc;
            which[v / 32]    = Q6_Vw_vadd_VwVw(lane, Q6_V_vsplat_R(int32_t(v)));
        }
    }
}

// Of the 32 vectors g * 32 .. g * 32 + 31 (their minima: mins), those with minimum <= t appended
// to sel_keys / sel_idx from *count on; false when that would pass cap. One group per call, the
// minima's bits compared as scalars from a stack copy: nothing vector lives across the caller's loop.
__attribute__((noinline)) bool select_group(const HVX_Vector * keys, uint32_t g, HVX_Vector mins, int32_t t,
                                            uint32_t cap, HVX_Vector * sel_keys, HVX_Vector * sel_idx, uint32_t * count) {
    const HVX_Vector hit = Q6_V_vmux_QVV(Q6_Q_vcmp_gt_VwVw(mins, Q6_V_vsplat_R(t)), Q6_V_vzero(), Q6_V_vsplat_R(-1));
    if (Q6_R_vextract_VR(hvx_w_allmin(hit), 0) == 0) {
        return true;  // no vector of the group qualifies (the common case)
    }
    union {
        HVX_Vector v;
        int32_t    w[32];
    } m;
    m.v                   = mins;
    const HVX_Vector lane = hvx_lane_index_w();
    for (uint32_t l = 0; l < 32; ++l) {
        if (m.w[l] > t) {
            continue;
        }
        if (*count == cap) {
            return false;
        }
        const uint32_t v = g * 32 + l;
        sel_keys[*count] = keys[v];
        sel_idx[*count]  = Q6_Vw_vadd_VwVw(lane, Q6_V_vsplat_R(int32_t(v * 32)));
        ++*count;
    }
    return true;
}

// The vectors whose minimum is <= t (in_order) copied with their indices; cap + 1 when more than
// cap are.
uint32_t select_vectors(const HVX_Vector * keys, const HVX_Vector * in_order, uint32_t m_vec, int32_t t, uint32_t cap,
                        HVX_Vector * sel_keys, HVX_Vector * sel_idx) {
    uint32_t count = 0;
    for (uint32_t g = 0; g < m_vec; ++g) {
        if (!select_group(keys, g, in_order[g], t, cap, sel_keys, sel_idx, &count)) {
            return cap + 1;
        }
    }
    return count;
}

__attribute__((noinline)) bool top_k_by_vector_minima(const HVX_Vector * keys, HVX_Vector * idx, uint32_t log2_n, uint32_t k,
                                                      uint32_t cap_log2) {
    const uint32_t n_vec    = uint32_t(1) << (log2_n - 5);
    const uint32_t m_vec    = n_vec / 32;  // vectors of minima
    const uint32_t cap      = uint32_t(1) << cap_log2;
    HVX_Vector *   minima   = idx;
    HVX_Vector *   which    = idx + m_vec;
    HVX_Vector *   in_order = idx + 2 * m_vec;
    HVX_Vector *   sel_keys = idx + 3 * m_vec;
    HVX_Vector *   sel_idx  = sel_keys + cap;
    gather_minima(keys, n_vec, minima, in_order, which);
    hvx_bitonic_sort(minima, which, log2_n - 5);
    const int32_t t     = Q6_R_vextract_VR(minima[(k - 1) / 32], int32_t(4 * ((k - 1) % 32)));
    uint32_t      count = select_vectors(keys, in_order, m_vec, t, cap, sel_keys, sel_idx);
    if (count > cap) {
        return false;
    }
    for (; count < cap; ++count) {
        sel_keys[count] = Q6_V_vsplat_R(0x7FFFFFFF);
        sel_idx[count]  = Q6_V_vzero();
    }
    hvx_bitonic_sort(sel_keys, sel_idx, cap_log2 + 5);
    for (uint32_t v = 0; v < (k + 31) / 32; ++v) {
        idx[v] = sel_idx[v];
    }
    return true;
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
                    const uint32_t k_out = job.kp.dst_row_size / 4;
                    const bool     top_k = job.kp.top_k_cap_log2 != 0;
                    for (uint32_t r = 0; r < b.nrows; ++r, keys += n_vec, idx += n_vec) {
                        make_keys(keys, n_vec, job.kp.pipe.row_size / 4, job.kp.descending != 0);
                        if (top_k && top_k_by_vector_minima(keys, idx, job.kp.log2_n_sort, k_out, job.kp.top_k_cap_log2)) {
                            continue;  // the index slot was its scratch
                        }
                        lane_numbers(idx, n_vec);
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
           kp.pipe.row_size == src->ne[0] * 4 && kp.dst_row_size == dst->ne[0] * 4 &&
           (kp.top_k_cap_log2 == 0 ||
            (octx->op->opcode == proto::HTP_OP_TOP_K && kp.log2_n_sort >= proto::HTP_TOP_K_MIN_LOG2 &&
             kp.top_k_cap_log2 + 5 <= proto::HTP_SORT_MAX_LOG2 && (uint32_t(1) << kp.top_k_cap_log2) >= 2 * dst->ne[0] &&
             3 * (uint32_t(1) << (kp.log2_n_sort - 10)) + (uint32_t(2) << kp.top_k_cap_log2) <= uint32_t(1) << (kp.log2_n_sort - 5)));
}

uint32_t op_sort(htp_op_context * octx) {
    sort_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx  = octx;
    job.src   = octx->src[0];
    job.dst   = octx->dst[0];
    return run_eltwise_job(octx, job, SORT_STREAMS, sort_thread);
}

} // namespace hexnpu::htp
