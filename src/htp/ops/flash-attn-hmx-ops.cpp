// FLASH_ATTN_EXT on the HMX unit (proto/htp-flash-attn-hmx.h): items of 32 query rows of one head,
// in groups; per key block the HVX threads turn the K and V rows the DMA landed into HMX weight
// tiles and push the next block's rows and mask (double buffered: they land while this block
// computes), the HMX queue thread computes every item's S = Q Kᵀ, the HVX threads run the online softmax per row
// and write P as an activation tile, the HMX thread computes P V, and the HVX threads fold it into
// the fp32 accumulators. Every phase is one work_queue_run or one HMX job for the whole group, so
// the hand-overs are per group and block, not per item. VTCM is touched by vector loads and
// stores only; the mask's -inf scan and the sinks are scalar reads of DDR tables.
#include "flash-attn-softmax.h"
#include "hmx-queue.h"
#include "hmx.h"
#include "htp-tensor.h"
#include "hvx-arith.h"
#include "hvx-div.h"
#include "hvx-exp.h"
#include "hvx-hf-rows.h"
#include "hvx-hmx-tiles.h"
#include "hvx-kv-dequant.h"
#include "hvx-transpose.h"
#include "ops.h"
#include "trace.h"
#include "vtcm.h"
#include "proto/htp-flash-attn-hmx.h"
#include "proto/htp-status.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::HTP_FA_HMX_ROWS;
using proto::HTP_FA_HMX_TILE_BYTES;
using proto::htp_fa_hmx_kparams;
using proto::htp_tensor;

constexpr int32_t NEG_INF = int32_t(0xFF800000u);

// An item's key-block count by (32-row block of queries, mask slice), kept across the op's groups
// so that a mask shared by the heads (mask ne[2] == 1) is scanned once per row block, not once per
// head: MASK_MEMO entries, indexed by (qblock * ne2 + slice) modulo MASK_MEMO (a power of two).
constexpr uint32_t MASK_MEMO = 128;
static_assert((MASK_MEMO & (MASK_MEMO - 1)) == 0);
constexpr uint32_t NO_SCAN = UINT32_MAX;

struct mask_memo_entry {
    uint32_t qblock_1;  // the row block + 1; 0: empty
    uint32_t slice;
    uint32_t n_blocks;
};

struct fa_item {
    uint32_t  head, kv_head, mask_head;
    uint32_t  row0, n_rows;  // query rows [row0, row0 + n_rows)
    uint32_t  n_blocks;      // key blocks up to its last with an unmasked key
    uint32_t  blocks_from;   // its own index: begin_thread scans its mask rows; an earlier item's:
                             // the same rows and slice, n_blocks copied; NO_SCAN: known already
    uint32_t  kv_owner;      // the group's first item of the same K/V head: its K/V tiles serve all
    uint32_t  kv_blocks;     // an owner's: the most blocks any item it serves needs
    uint8_t * mem;
};

struct fa_hmx_job {
    const htp_op_context *         octx;
    htp_fa_hmx_kparams             kp;
    proto::htp_fa_hmx_item_layout  L;
    const htp_tensor *             q;
    const htp_tensor *             k;
    const htp_tensor *             v;
    const htp_tensor *             mask;
    const htp_tensor *             sinks;
    const htp_tensor *             dst;
    hmx_unit *                     unit;
    uint8_t *                      sb;  // scale/bias blocks: S (2^-8) at 0, P V (2^-5) at 256
    fa_item                        items[proto::HTP_FA_HMX_MAX_GROUP];
    uint32_t                       n_group;
    uint32_t                       items_per_thread;
    uint32_t                       n_blocks;  // the group's: the most any item needs
    uint32_t                       blk;       // the key block of the phases below
    uint32_t                       hmx_status;
    mask_memo_entry                memo[MASK_MEMO];
};

HVX_Vector * vec(uint8_t * p) { return reinterpret_cast<HVX_Vector *>(p); }


// Pushes a transfer, first waiting for the oldest when the queue is full.
void push_in(dma_queue * q, uint8_t * vtcm, dma_addr_t ddr, uint32_t vtcm_stride, uint32_t ddr_stride, uint32_t row,
             uint32_t nrows, uint16_t info) {
    if (dma_queue_depth(q) == DMA_QUEUE_CAPACITY) {
        dma_queue_pop(q);
    }
    dma_queue_push_ddr_to_vtcm(q, dma_addr_of(vtcm), ddr, vtcm_stride, ddr_stride, row, nrows, info);
}

void drain(dma_queue * q) {
    while (!dma_queue_empty(q)) {
        dma_queue_pop(q);
    }
}

uint32_t keys_in(const htp_fa_hmx_kparams & kp, uint32_t blk) { return blk + 1 < kp.n_blocks ? 32 : kp.n_kv - blk * 32; }

// The last key block with an unmasked key for any of the item's rows (the mask from DDR), + 1.
uint32_t item_blocks(const fa_hmx_job & job, const fa_item & it) {
    const htp_fa_hmx_kparams & kp = job.kp;
    if (job.mask == nullptr) {
        return kp.n_blocks;
    }
    const uint32_t  elem = kp.mask == proto::HTP_FA_MASK_F16 ? 2 : 4;
    const uint8_t * base = htp_tensor_ptr(job.octx->plat, job.mask) + it.mask_head * job.mask->nb[2];
    uint32_t        last = 0;
    for (uint32_t r = 0; r < it.n_rows; ++r) {
        const uint8_t * row = base + (it.row0 + r) * job.mask->nb[1];
        for (uint32_t blk = kp.n_blocks - 1; blk > last; --blk) {
            bool found = false;
            for (uint32_t j = blk * 32; j < blk * 32 + keys_in(kp, blk) && !found; ++j) {
                uint32_t bits = 0;
                __builtin_memcpy(&bits, row + j * elem, elem);
                found = bits != (elem == 2 ? 0xFC00u : 0xFF800000u);
            }
            if (found) {
                last = blk;
                break;
            }
        }
    }
    return last + 1;
}

// Q rows (fp32, staged) into activation tiles, each row scaled by a power of two into [0.5, 1);
// the row's factor (its inverse, the S store's 2^8 and the softmax scale) as a splat.
__attribute__((noinline)) void q_to_tiles(const fa_hmx_job & job, const fa_item & it) {
    const uint32_t   d     = job.kp.d;
    uint8_t *        stage = it.mem + job.L.q_stage;
    HVX_Vector *     fac   = vec(it.mem + job.L.state);
    const HVX_Vector gain  = hvx_sf_mul(hvx_splat_sf(256.0f), Q6_V_vsplat_R(int32_t(job.kp.scale)));
    for (uint32_t r = 0; r < HTP_FA_HMX_ROWS; ++r) {
        HVX_Vector * row = vec(stage + r * d * 4);
        if (r >= it.n_rows) {
            for (uint32_t c = 0; c < d / 32; ++c) {
                row[c] = Q6_V_vzero();
            }
        }
        HVX_Vector scale, inverse;
        hvx_row_scale(hvx_row_max_bits(row, d / 32), &scale, &inverse);
        for (uint32_t c = 0; c < d / 32; ++c) {
            row[c] = hvx_sf_mul(row[c], scale);
        }
        fac[r] = hvx_sf_mul(inverse, gain);
    }
    for (uint32_t t = 0; t < d / 32; ++t) {
        HVX_Vector * tile = vec(it.mem + job.L.q_tiles + t * HTP_FA_HMX_TILE_BYTES);
        for (uint32_t j = 0; j < 16; ++j) {
            tile[j] = hvx_sf_interleave_to_hf(vec(stage + 2 * j * d * 4)[t], vec(stage + (2 * j + 1) * d * 4)[t]);
        }
    }
}

__attribute__((noinline)) void clear_state(const fa_hmx_job & job, const fa_item & it) {
    HVX_Vector * acc = vec(it.mem + job.L.acc);
    for (uint32_t v = 0; v < HTP_FA_HMX_ROWS * job.kp.d / 32; ++v) {
        acc[v] = Q6_V_vzero();
    }
    HVX_Vector * st = vec(it.mem + job.L.state);
    for (uint32_t r = 0; r < HTP_FA_HMX_ROWS; ++r) {
        st[HTP_FA_HMX_ROWS + r]     = hvx_splat_w(NEG_INF);  // running max
        st[2 * HTP_FA_HMX_ROWS + r] = Q6_V_vzero();          // denominator
    }
}

// Phase 0: each thread's items get their heads, rows, key-block count, query tiles and state.
void begin_thread(uint32_t, uint32_t i, void * data) {
    fa_hmx_job &               job = *static_cast<fa_hmx_job *>(data);
    const htp_fa_hmx_kparams & kp  = job.kp;
    dma_queue *                q   = &job.octx->dma[i];
    const dma_addr_t           qb  = htp_tensor_dma_addr(job.octx->plat, job.q);
    const uint32_t             i0  = i * job.items_per_thread;
    const uint32_t             i1  = i0 + job.items_per_thread < job.n_group ? i0 + job.items_per_thread : job.n_group;
    for (uint32_t n = i0; n < i1; ++n) {
        fa_item & it = job.items[n];
        push_in(q, it.mem + job.L.q_stage, dma_addr_at(qb, it.row0 * job.q->nb[1] + it.head * job.q->nb[2]), kp.d * 4,
                job.q->nb[1], kp.d * 4, it.n_rows, trace_info(n));
        if (it.blocks_from == n) {
            it.n_blocks = item_blocks(job, it);
        }
    }
    drain(q);
    trace_event_start(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_A_PREP, trace_info(i0));
    for (uint32_t n = i0; n < i1; ++n) {
        q_to_tiles(job, job.items[n]);
        clear_state(job, job.items[n]);
    }
    trace_event_stop(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_A_PREP, trace_info(i0));
}

// Staged fp16 rows (d elements each) from row nk to 32 zeroed.
__attribute__((noinline)) void zero_rows_from(uint8_t * stage, uint32_t nk, uint32_t d) {
    for (uint32_t r = nk; r < 32; ++r) {
        for (uint32_t c = 0; c < d / 64; ++c) {
            vec(stage + r * d * 2)[c] = Q6_V_vzero();
        }
    }
}

// Dequantized K or V rows (a type other than F16, landed in their raw staging) as fp16 rows in the
// fp16 staging: fp32 rows in the query staging first (free during the key blocks), as GGML
// dequantizes, then rounded to nearest.
__attribute__((noinline)) void raw_to_stage(const fa_hmx_job & job, const fa_item & it, uint32_t nk, uint32_t type,
                                            uint32_t raw, uint32_t raw_bytes, uint32_t stage, uint32_t parity) {
    const uint32_t d  = job.kp.d;
    uint8_t *      f  = it.mem + job.L.q_stage;
    uint8_t *      hf = it.mem + stage + parity * job.L.kv_stage_bytes;
    hvx_kv_dequant_rows(type, it.mem + raw + parity * raw_bytes, proto::htp_fa_hmx_raw_row(type, d), f, d * 4, nk, d);
    for (uint32_t r = 0; r < nk; ++r) {
        hvx_sf_row_to_16(vec(hf + r * d * 2), vec(f + r * d * 4), d / 32, false);
    }
}

// K rows (staged, fp16) into weight tiles W[d][key]: vector w of tile t holds every key's pair of
// elements 2 (16 t + w), +1, i.e. word 16 t + w of each row, so each 32 words of the rows (64
// columns) transposed are two whole tiles. The o_tiles (free until the block's P V) hold the
// rounds between. Rows past the block's keys are zeros (their scores are masked; zeros keep the
// unit's inputs finite).
__attribute__((noinline)) void k_to_tiles(const fa_hmx_job & job, const fa_item & it, uint32_t nk, uint32_t parity) {
    const uint32_t d     = job.kp.d;
    uint8_t *      stage = it.mem + job.L.k_stage + parity * job.L.kv_stage_bytes;
    zero_rows_from(stage, nk, d);
    HVX_Vector * tmp = vec(it.mem + job.L.o_tiles);
    for (uint32_t c = 0; c < d / 64; ++c) {
        HVX_Vector * tiles = vec(it.mem + job.L.k_tiles + 2 * c * HTP_FA_HMX_TILE_BYTES);
        hvx_transpose_round(vec(stage) + c, d / 64, tiles);
        hvx_transpose_round(tiles, 1, tmp);
        hvx_transpose_round(tmp, 1, tiles);
        hvx_transpose_round(tiles, 1, tmp);
        hvx_transpose_round(tmp, 1, tiles);
    }
}

// V rows (staged, fp16) into weight tiles W[key][d]: one halfword shuffle per key pair and 64
// columns. Rows past the block's keys are zeros (a zero probability times stale memory could be NaN).
__attribute__((noinline)) void v_to_tiles(const fa_hmx_job & job, const fa_item & it, uint32_t nk, uint32_t parity) {
    const uint32_t d     = job.kp.d;
    uint8_t *      stage = it.mem + job.L.v_stage + parity * job.L.kv_stage_bytes;
    zero_rows_from(stage, nk, d);
    for (uint32_t c = 0; c < d / 64; ++c) {
        HVX_Vector * lo = vec(it.mem + job.L.v_tiles + 2 * c * HTP_FA_HMX_TILE_BYTES);
        HVX_Vector * hi = vec(it.mem + job.L.v_tiles + (2 * c + 1) * HTP_FA_HMX_TILE_BYTES);
        for (uint32_t j = 0; j < 16; ++j) {
            const HVX_VectorPair w = Q6_W_vshuff_VVR(vec(stage + (2 * j + 1) * d * 2)[c], vec(stage + 2 * j * d * 2)[c], -2);
            lo[j]                  = Q6_V_lo_W(w);
            hi[j]                  = Q6_V_hi_W(w);
        }
    }
}

// Block blk's K rows and V rows (for the items whose K/V tiles serve others) and its mask block
// (for the items still active) by DMA into the buffers of the block's parity.
void push_block(const fa_hmx_job & job, dma_queue * q, uint32_t n, uint32_t blk) {
    const htp_fa_hmx_kparams & kp     = job.kp;
    const fa_item &            it     = job.items[n];
    const uint32_t             nk     = keys_in(kp, blk);
    const uint32_t             j0     = blk * 32;
    const uint32_t             parity = blk & 1;
    const uint16_t             tag    = trace_info(n);
    if (it.kv_owner == n && blk < it.kv_blocks) {
        // F16 rows into the fp16 staging; the others' raw rows into their own, dequantized there.
        auto push_rows = [&](const htp_tensor * t, uint32_t type, uint32_t stage, uint32_t raw, uint32_t raw_bytes) {
            const uint32_t   raw_row = proto::htp_fa_hmx_raw_row(type, kp.d);
            const uint32_t   row     = proto::htp_fa_staged_row_bytes(type, kp.d);
            const dma_addr_t from = dma_addr_at(htp_tensor_dma_addr(job.octx->plat, t), j0 * t->nb[1] + it.kv_head * t->nb[2]);
            if (raw_row == 0) {
                push_in(q, it.mem + stage + parity * job.L.kv_stage_bytes, from, row, t->nb[1], row, nk, tag);
            } else {
                push_in(q, it.mem + raw + parity * raw_bytes, from, raw_row, t->nb[1], row, nk, tag);
            }
        };
        push_rows(job.k, kp.k_type, job.L.k_stage, job.L.k_raw, job.L.k_raw_bytes);
        push_rows(job.v, kp.v_type, job.L.v_stage, job.L.v_raw, job.L.v_raw_bytes);
    }
    if (job.mask && blk < it.n_blocks) {
        const uint32_t   elem = kp.mask == proto::HTP_FA_MASK_F16 ? 2 : 4;
        const dma_addr_t mb   = htp_tensor_dma_addr(job.octx->plat, job.mask);
        push_in(q, it.mem + job.L.mask + parity * proto::HTP_FA_HMX_MASK_BYTES,
                dma_addr_at(mb, it.row0 * job.mask->nb[1] + it.mask_head * job.mask->nb[2] + j0 * elem), 128,
                job.mask->nb[1], nk * elem, it.n_rows, tag);
    }
}

// Phase 1 (per block): block blk's rows, landed (the first block's pushed here, the others by
// the phase before), into K and V weight tiles; then block blk + 1's pushed, to land while this
// block computes. This is ops/stream-pipeline.h's two-slot form spread over the phases: the
// threads hand over to the HMX queue between phases, so no thread owns a loop over the blocks;
// the queue holds only the next block's transfers when the wait (drain) comes.
void load_thread(uint32_t, uint32_t i, void * data) {
    fa_hmx_job &   job = *static_cast<fa_hmx_job *>(data);
    dma_queue *    q   = &job.octx->dma[i];
    const uint32_t nk  = keys_in(job.kp, job.blk);
    const uint32_t i0  = i * job.items_per_thread;
    const uint32_t i1  = i0 + job.items_per_thread < job.n_group ? i0 + job.items_per_thread : job.n_group;
    if (job.blk == 0) {
        for (uint32_t n = i0; n < i1; ++n) {
            push_block(job, q, n, 0);
        }
    }
    drain(q);
    trace_event_start(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_W_PREP, trace_info(job.blk));
    for (uint32_t n = i0; n < i1; ++n) {
        const fa_item & it = job.items[n];
        if (it.kv_owner == n && job.blk < it.kv_blocks) {
            if (job.kp.k_type != proto::HTP_TYPE_F16) {
                raw_to_stage(job, it, nk, job.kp.k_type, job.L.k_raw, job.L.k_raw_bytes, job.L.k_stage, job.blk & 1);
            }
            if (job.kp.v_type != proto::HTP_TYPE_F16) {
                raw_to_stage(job, it, nk, job.kp.v_type, job.L.v_raw, job.L.v_raw_bytes, job.L.v_stage, job.blk & 1);
            }
            k_to_tiles(job, it, nk, job.blk & 1);
            v_to_tiles(job, it, nk, job.blk & 1);
        }
    }
    trace_event_stop(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_W_PREP, trace_info(job.blk));
    if (job.blk + 1 < job.n_blocks) {
        for (uint32_t n = i0; n < i1; ++n) {
            push_block(job, q, n, job.blk + 1);
        }
    }
}

// One row's online-softmax step on its 32 scores (raw HMX output, fp32): scaled, masked, the
// running max and denominator updated, the rescale factor kept; the probabilities into *prob.
// A max of -inf (nothing seen yet) is replaced by 0 in the exponents, so -inf - -inf never occurs.
__attribute__((noinline)) void softmax_row(const HVX_Vector * score, HVX_Vector * prob, HVX_Vector * st, uint32_t r,
                                           const uint8_t * mask_row, uint32_t mask_kind, uint32_t nk) {
    const HVX_Vector neg_inf = hvx_splat_w(NEG_INF);
    HVX_Vector       s       = hvx_sf_mul(*score, st[r]);
    if (mask_kind != proto::HTP_FA_MASK_NONE) {
        const HVX_Vector m = *reinterpret_cast<const HVX_Vector *>(mask_row);
        s                  = hvx_sf_add(s, mask_kind == proto::HTP_FA_MASK_F16 ? hvx_hf_rows_to_sf(m) : m);
    }
    if (nk < 32) {
        s = Q6_V_vmux_QVV(Q6_Q_vsetq_R(int32_t(4 * nk)), s, neg_inf);
    }
    HVX_Vector key = hvx_sf_order_key(s);
    for (int32_t bytes = 64; bytes >= 4; bytes /= 2) {
        key = Q6_Vw_vmax_VwVw(key, Q6_V_vror_VR(key, bytes));
    }
    HVX_Vector &     max     = st[HTP_FA_HMX_ROWS + r];
    HVX_Vector &     denom   = st[2 * HTP_FA_HMX_ROWS + r];
    const HVX_Vector new_max = hvx_sf_order_key(Q6_Vw_vmax_VwVw(key, hvx_sf_order_key(max)));
    const HVX_Vector safe    = Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(new_max, neg_inf), Q6_V_vzero(), new_max);
    const HVX_Vector p       = hvx_sf_exp(hvx_sf_sub(s, safe));
    const HVX_Vector shrink  = hvx_sf_exp(hvx_sf_sub(max, safe));
    max                      = new_max;
    denom                    = hvx_sf_add(hvx_sf_mul(denom, shrink), hvx_sf_allsum(p));
    st[3 * HTP_FA_HMX_ROWS + r] = shrink;
    *prob                       = p;
}

// The S tile's rows as fp32 (even and odd rows of each output vector) into rows[32].
__attribute__((noinline)) void s_tile_to_rows(const HVX_Vector * s_tile, HVX_Vector * rows) {
    for (uint32_t j = 0; j < 16; ++j) {
        hvx_hf_pairs_to_sf(s_tile[j], &rows[2 * j], &rows[2 * j + 1]);
    }
}

// Probability rows (fp32) pairwise into the P activation tile, zeros from row n_rows on.
__attribute__((noinline)) void p_rows_to_tile(HVX_Vector * p, uint32_t n_rows, HVX_Vector * p_tile) {
    for (uint32_t r = n_rows; r < HTP_FA_HMX_ROWS; ++r) {
        p[r] = Q6_V_vzero();
    }
    for (uint32_t j = 0; j < 16; ++j) {
        p_tile[j] = hvx_sf_interleave_to_hf(p[2 * j], p[2 * j + 1]);
    }
}

// The query staging rows are free during the key blocks: the scores' rows there, then the
// probabilities' (rows past the item's queries are zero).
__attribute__((noinline)) void softmax_item(const fa_hmx_job & job, const fa_item & it, uint32_t nk) {
    HVX_Vector *    rows = vec(it.mem + job.L.q_stage);
    HVX_Vector *    p    = rows + HTP_FA_HMX_ROWS;
    HVX_Vector *    st   = vec(it.mem + job.L.state);
    const uint8_t * mask = it.mem + job.L.mask + (job.blk & 1) * proto::HTP_FA_HMX_MASK_BYTES;
    s_tile_to_rows(vec(it.mem + job.L.s_tile), rows);
    for (uint32_t r = 0; r < it.n_rows; ++r) {
        softmax_row(rows + r, p + r, st, r, mask + r * 128, job.kp.mask, nk);
    }
    p_rows_to_tile(p, it.n_rows, vec(it.mem + job.L.p_tile));
}

// Phase 2 (per block): the softmax of every active item's S tile into its P tile.
void softmax_thread(uint32_t, uint32_t i, void * data) {
    const fa_hmx_job & job = *static_cast<const fa_hmx_job *>(data);
    const uint32_t     nk  = keys_in(job.kp, job.blk);
    const uint32_t     i0  = i * job.items_per_thread;
    const uint32_t     i1  = i0 + job.items_per_thread < job.n_group ? i0 + job.items_per_thread : job.n_group;
    trace_event_start(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_COMP, trace_info(job.blk));
    for (uint32_t n = i0; n < i1; ++n) {
        if (job.blk < job.items[n].n_blocks) {
            softmax_item(job, job.items[n], nk);
        }
    }
    trace_event_stop(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_COMP, trace_info(job.blk));
}

// accumulators = accumulators * rescale + 32 * (P V) (the store's 2^-5 undone), row by row.
__attribute__((noinline)) void accumulate_item(const fa_hmx_job & job, const fa_item & it) {
    const uint32_t     d   = job.kp.d;
    const HVX_Vector * st  = vec(it.mem + job.L.state);
    uint8_t *          acc = it.mem + job.L.acc;
    const HVX_Vector   x32 = hvx_splat_sf(32.0f);
    for (uint32_t t = 0; t < d / 32; ++t) {
        const HVX_Vector * o = vec(it.mem + job.L.o_tiles + t * HTP_FA_HMX_TILE_BYTES);
        for (uint32_t j = 0; j < 16 && 2 * j < it.n_rows; ++j) {
            HVX_Vector even, odd;
            hvx_hf_pairs_to_sf(o[j], &even, &odd);
            HVX_Vector & a0 = vec(acc + 2 * j * d * 4)[t];
            HVX_Vector & a1 = vec(acc + (2 * j + 1) * d * 4)[t];
            a0              = hvx_sf_add(hvx_sf_mul(a0, st[3 * HTP_FA_HMX_ROWS + 2 * j]), hvx_sf_mul(even, x32));
            a1              = hvx_sf_add(hvx_sf_mul(a1, st[3 * HTP_FA_HMX_ROWS + 2 * j + 1]), hvx_sf_mul(odd, x32));
        }
    }
}

// Phase 3 (per block).
void accumulate_thread(uint32_t, uint32_t i, void * data) {
    const fa_hmx_job & job = *static_cast<const fa_hmx_job *>(data);
    const uint32_t     i0  = i * job.items_per_thread;
    const uint32_t     i1  = i0 + job.items_per_thread < job.n_group ? i0 + job.items_per_thread : job.n_group;
    trace_event_start(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_O_PROC, trace_info(job.blk));
    for (uint32_t n = i0; n < i1; ++n) {
        if (job.blk < job.items[n].n_blocks) {
            accumulate_item(job, job.items[n]);
        }
    }
    trace_event_stop(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_O_PROC, trace_info(job.blk));
}

// Every row: the sink logit (when there is one) joins the denominator, then acc / l (0 when every
// key was masked), staged for the DMA in the query staging rows.
// One row: the sink logit (when there is one) joins the denominator, then acc / l (0 when every
// key was masked).
__attribute__((noinline)) void finish_row(const HVX_Vector * acc, HVX_Vector * out, HVX_Vector max, HVX_Vector l,
                                          bool has_sink, float sink, uint32_t d) {
    const HVX_Vector inv = fa_output_factor(max, l, has_sink, sink);
    for (uint32_t c = 0; c < d / 32; ++c) {
        out[c] = hvx_sf_mul(acc[c], inv);
    }
}

// Every row normalized, staged for the DMA in the query staging rows.
__attribute__((noinline)) void finish_item(const fa_hmx_job & job, const fa_item & it, bool has_sink, float sink) {
    const uint32_t     d  = job.kp.d;
    const HVX_Vector * st = vec(it.mem + job.L.state);
    for (uint32_t r = 0; r < it.n_rows; ++r) {
        finish_row(vec(it.mem + job.L.acc + r * d * 4), vec(it.mem + job.L.q_stage + r * d * 4),
                   st[HTP_FA_HMX_ROWS + r], st[2 * HTP_FA_HMX_ROWS + r], has_sink, sink, d);
    }
}

// Phase 4: every item's rows to dst (row (head, query) at head * nb[1] + query * nb[2]).
void finish_thread(uint32_t, uint32_t i, void * data) {
    const fa_hmx_job & job   = *static_cast<const fa_hmx_job *>(data);
    dma_queue *        q     = &job.octx->dma[i];
    const dma_addr_t   ob    = htp_tensor_dma_addr(job.octx->plat, job.dst);
    const uint8_t *    sinks = job.kp.has_sinks ? htp_tensor_ptr(job.octx->plat, job.sinks) : nullptr;
    const uint32_t     i0    = i * job.items_per_thread;
    const uint32_t     i1    = i0 + job.items_per_thread < job.n_group ? i0 + job.items_per_thread : job.n_group;
    for (uint32_t n = i0; n < i1; ++n) {
        const fa_item & it   = job.items[n];
        float           sink = 0.0f;
        if (job.kp.has_sinks) {
            __builtin_memcpy(&sink, sinks + it.head * 4, 4);  // a small DDR table: a scalar read
        }
        trace_event_start(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_O_PROC, trace_info(n));
        finish_item(job, it, job.kp.has_sinks != 0, sink);
        trace_event_stop(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_O_PROC, trace_info(n));
        if (dma_queue_depth(q) == DMA_QUEUE_CAPACITY) {
            dma_queue_pop(q);
        }
        dma_queue_push_vtcm_to_ddr(q, dma_addr_at(ob, it.head * job.dst->nb[1] + it.row0 * job.dst->nb[2]),
                                   dma_addr_of(it.mem + job.L.q_stage), job.dst->nb[2], job.kp.d * 4, job.kp.d * 4,
                                   it.n_rows, trace_info(n));
    }
    drain(q);
}

// The HMX jobs: S = Q Kᵀ for every active item, then (second job) P V per 32 output columns.
void hmx_scores(void * data) {
    fa_hmx_job & job = *static_cast<fa_hmx_job *>(data);
    trace_event_start(&job.octx->trace[HMX_TRACE_SLOT], proto::HTP_TRACE_EVT_HMX_COMP, trace_info(job.blk));
    uint32_t     st  = hmx_set_scale_bias(job.unit, job.sb);
    for (uint32_t n = 0; n < job.n_group && st == HMX_OK; ++n) {
        const fa_item & it = job.items[n];
        if (job.blk >= it.n_blocks) {
            continue;
        }
        const uint8_t * kv = job.items[it.kv_owner].mem;
        st                 = hmx_mac_fp16(job.unit, it.mem + job.L.q_tiles, kv + job.L.k_tiles, job.kp.d / 32);
        if (st == HMX_OK) {
            st = hmx_store_fp16(job.unit, it.mem + job.L.s_tile);
        }
    }
    job.hmx_status = st;
    hmx_drain(job.unit);  // the event spans the stores' work
    trace_event_stop(&job.octx->trace[HMX_TRACE_SLOT], proto::HTP_TRACE_EVT_HMX_COMP, trace_info(job.blk));
}

void hmx_values(void * data) {
    fa_hmx_job & job = *static_cast<fa_hmx_job *>(data);
    trace_event_start(&job.octx->trace[HMX_TRACE_SLOT], proto::HTP_TRACE_EVT_HMX_COMP, trace_info(job.blk));
    uint32_t     st  = hmx_set_scale_bias(job.unit, job.sb + 256);
    for (uint32_t n = 0; n < job.n_group && st == HMX_OK; ++n) {
        const fa_item & it = job.items[n];
        if (job.blk >= it.n_blocks) {
            continue;
        }
        for (uint32_t t = 0; t < job.kp.d / 32 && st == HMX_OK; ++t) {
            const uint8_t * kv = job.items[it.kv_owner].mem;
            st = hmx_mac_fp16(job.unit, it.mem + job.L.p_tile, kv + job.L.v_tiles + t * HTP_FA_HMX_TILE_BYTES, 1);
            if (st == HMX_OK) {
                st = hmx_store_fp16(job.unit, it.mem + job.L.o_tiles + t * HTP_FA_HMX_TILE_BYTES);
            }
        }
    }
    job.hmx_status = st;
    hmx_drain(job.unit);  // the event spans the stores' work
    trace_event_stop(&job.octx->trace[HMX_TRACE_SLOT], proto::HTP_TRACE_EVT_HMX_COMP, trace_info(job.blk));
}

void run_hmx(fa_hmx_job & job, hmx_job_fn fn) {
    hmx_queue_push(job.octx->hmx, fn, &job);
    hmx_queue_pop(job.octx->hmx);
}

__attribute__((noinline)) void write_scale_bias(uint8_t * sb) {
    vec(sb)[0] = hvx_splat_w(0x00001C00);  // fp16 2^-8, bias 0
    vec(sb)[1] = Q6_V_vzero();
    vec(sb)[2] = hvx_splat_w(0x00002800);  // fp16 2^-5
    vec(sb)[3] = Q6_V_vzero();
}

} // namespace

bool guard_flash_attn_hmx(const htp_op_context * octx) {
    htp_fa_hmx_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * q    = octx->src[0];
    const htp_tensor * k    = octx->src[1];
    const htp_tensor * mask = octx->src[3];
    const uint32_t     mask_kind = proto::htp_fa_mask_kind(mask);
    const uint64_t qblocks = (uint64_t(q->ne[1]) + HTP_FA_HMX_ROWS - 1) / HTP_FA_HMX_ROWS;
    return octx->hmx != nullptr &&
           proto::htp_fa_layout_valid(*q, *k, *octx->src[2], mask, octx->src[4], *octx->dst[0]) &&
           q->ne[0] <= proto::HTP_FA_HMX_MAX_D && kp.n_threads >= 1 && kp.n_threads <= octx->n_threads &&
           kp.d == q->ne[0] && kp.n_kv == k->ne[1] && kp.n_blocks >= 1 && (kp.n_blocks - 1) * 32 < kp.n_kv &&
           kp.n_blocks * 32 >= kp.n_kv && kp.div_qblocks.d == qblocks && kp.n_items == qblocks * q->ne[2] &&
           kp.group_items >= 1 && kp.group_items <= proto::HTP_FA_HMX_MAX_GROUP &&
           kp.k_type == k->type && kp.v_type == octx->src[2]->type &&
           kp.item_bytes == proto::htp_fa_hmx_item(kp.d, kp.k_type, kp.v_type).bytes &&
           kp.vtcm_size == proto::htp_fa_hmx_vtcm_size(kp.group_items, kp.d, kp.k_type, kp.v_type) && kp.mask == mask_kind &&
           kp.has_sinks == (octx->src[4] != nullptr) && kp.div_group.d >= 1 && kp.div_group.d * k->ne[2] == q->ne[2] &&
           (mask == nullptr || kp.div_mask2.d == mask->ne[2]);
}

uint32_t op_flash_attn_hmx(htp_op_context * octx) {
    fa_hmx_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    const htp_fa_hmx_kparams & kp = job.kp;
    job.octx  = octx;
    job.L     = proto::htp_fa_hmx_item(kp.d, kp.k_type, kp.v_type);
    job.q     = octx->src[0];
    job.k     = octx->src[1];
    job.v     = octx->src[2];
    job.mask  = octx->src[3];
    job.sinks = octx->src[4];
    job.dst   = octx->dst[0];
    job.unit  = static_cast<hmx_unit *>(octx->plat->hmx_unit);
    vtcm_arena vtcm(octx->vtcm_base, octx->vtcm_size);
    uint8_t *  base = vtcm.take(kp.vtcm_size, 1, HTP_FA_HMX_TILE_BYTES);
    if (!vtcm.ok()) {
        return proto::HTP_STATUS_VTCM_TOO_SMALL;
    }
    job.sb = base;
    write_scale_bias(job.sb);

    uint32_t item0 = 0, item_end = kp.n_items;
    if (octx->mdev->count > 1) {
        // Items split over the group in any units: every output row leaves VTCM by DMA.
        const htp_tensor_mdev_range part =
            htp_tensor_mdev_partition(kp.n_items, 1, octx->mdev->idx, octx->mdev->count, &octx->mdev->count_div);
        item0    = part.start;
        item_end = part.start + part.count;
    }
    for (uint32_t g0 = item0; g0 < item_end; g0 += kp.group_items) {
        job.n_group          = item_end - g0 < kp.group_items ? item_end - g0 : kp.group_items;
        const uint32_t threads = job.n_group < kp.n_threads ? job.n_group : kp.n_threads;
        job.items_per_thread = ceil_div_small(job.n_group, threads);
        for (uint32_t n = 0; n < job.n_group; ++n) {
            fa_item &      it = job.items[n];
            const uint32_t id = g0 + n;
            it.head           = proto::fastdiv(id, kp.div_qblocks);
            it.row0           = (id - it.head * kp.div_qblocks.d) * HTP_FA_HMX_ROWS;
            it.n_rows         = job.q->ne[1] - it.row0 < HTP_FA_HMX_ROWS ? job.q->ne[1] - it.row0 : HTP_FA_HMX_ROWS;
            it.kv_head        = proto::fastdiv(it.head, kp.div_group);
            it.mask_head      = job.mask ? proto::fastmodulo(it.head, kp.div_mask2) : 0;
            it.mem            = base + proto::htp_fa_hmx_item_offset(n, kp.d, kp.k_type, kp.v_type);
            it.kv_owner       = n;
            for (uint32_t o = 0; o < n; ++o) {
                if (job.items[o].kv_head == it.kv_head) {
                    it.kv_owner = o;
                    break;
                }
            }
            // Its mask rows' block count: from an earlier group, an earlier item of this one, or a scan.
            it.blocks_from = n;
            if (job.mask) {
                const uint32_t          qblock = it.row0 / HTP_FA_HMX_ROWS;
                const mask_memo_entry & m      = job.memo[(qblock * kp.div_mask2.d + it.mask_head) % MASK_MEMO];
                if (m.qblock_1 == qblock + 1 && m.slice == it.mask_head) {
                    it.n_blocks    = m.n_blocks;
                    it.blocks_from = NO_SCAN;
                } else {
                    for (uint32_t o = 0; o < n; ++o) {
                        if (job.items[o].row0 == it.row0 && job.items[o].mask_head == it.mask_head) {
                            it.blocks_from = o;
                            break;
                        }
                    }
                }
            }
        }
        work_queue_run(octx->work, begin_thread, &job, threads);
        for (uint32_t n = 0; n < job.n_group; ++n) {
            fa_item & it = job.items[n];
            if (it.blocks_from == n && job.mask) {
                const uint32_t    qblock = it.row0 / HTP_FA_HMX_ROWS;
                mask_memo_entry & m      = job.memo[(qblock * kp.div_mask2.d + it.mask_head) % MASK_MEMO];
                m                        = mask_memo_entry{qblock + 1, it.mask_head, it.n_blocks};
            } else if (it.blocks_from < n) {
                it.n_blocks = job.items[it.blocks_from].n_blocks;
            }
        }
        job.n_blocks = 0;
        for (uint32_t n = 0; n < job.n_group; ++n) {
            job.items[n].kv_blocks = 0;
        }
        for (uint32_t n = 0; n < job.n_group; ++n) {
            fa_item & owner = job.items[job.items[n].kv_owner];
            owner.kv_blocks = job.items[n].n_blocks > owner.kv_blocks ? job.items[n].n_blocks : owner.kv_blocks;
            job.n_blocks    = job.items[n].n_blocks > job.n_blocks ? job.items[n].n_blocks : job.n_blocks;
        }
        for (job.blk = 0; job.blk < job.n_blocks; ++job.blk) {
            work_queue_run(octx->work, load_thread, &job, threads);
            run_hmx(job, hmx_scores);
            if (job.hmx_status != HMX_OK) {
                return proto::HTP_STATUS_STRICT;
            }
            work_queue_run(octx->work, softmax_thread, &job, threads);
            run_hmx(job, hmx_values);
            if (job.hmx_status != HMX_OK) {
                return proto::HTP_STATUS_STRICT;
            }
            work_queue_run(octx->work, accumulate_thread, &job, threads);
        }
        work_queue_run(octx->work, finish_thread, &job, threads);
    }
    return proto::HTP_STATUS_OK;
}

} // namespace hexnpu::htp
