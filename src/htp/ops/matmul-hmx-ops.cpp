// MUL_MAT on the HMX unit (proto/htp-matmul-hmx.h): tiled weights expanded to fp16 HMX tiles by
// HVX, fp16 activation tiles, the multiply on the HMX queue thread, fp32 rows back by DMA.
//
// Per (i12, i13) slice and chunk of activation rows: the HVX threads convert the chunk's rows
// (HVX_A_PREP), then the strips go in pipeline steps of n_chunk strips:
//   HMX queue thread:  multiply step s                 (HMX_COMP, info = s)
//   HVX threads:       expand step s + 1's weights      (HVX_W_DEQUANT, info = s + 1)
//                      convert step s - 1's outputs     (HVX_O_PROC, info = s - 1)
// one work-queue run per step beside the HMX job, so the three overlap; buffers alternate by step
// parity (the scale blocks by step % 3: step s - 1's are still read while s + 1's are written).
#include "dma-queue.h"
#include "hmx.h"
#include "htp-ctx.h"
#include "htp-tensor.h"
#include "hvx-hmx-tiles.h"
#include "matmul-flat-dma.h"
#include "matmul-job.h"
#include "ops.h"
#include "trace.h"
#include "work-queue.h"
#include "proto/htp-matmul-hmx.h"
#include "proto/htp-status.h"
#include "proto/htp-trace.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::htp_matmul_hmx_kparams;
using proto::htp_tensor;

inline constexpr uint32_t NO_STEP = UINT32_MAX;
inline constexpr uint32_t TILE    = proto::HTP_MM_HMX_TILE_BYTES;

struct hmx_mm_job {
    const htp_op_context *    octx;
    htp_matmul_hmx_kparams    kp;
    proto::htp_mm_hmx_layout  lay;
    uint8_t *                 vtcm;
    hmx_unit *                unit;
    const htp_tensor *        src0;
    const htp_tensor *        src1;
    const htp_tensor *        dst;
    uint32_t                  strip0, strip_end;  // this device's strips
    bool                      flat;               // flat weights: DMA-gathered blocks, rows nb[1] apart
    act_order                 order;              // the activations' element order (flat weights')
    // The chunk in progress: the weight matrix's byte offset, the slice's offsets in src1 and dst,
    // its first row, its rows and row tiles. MUL_MAT_ID (scatter): row r's offsets in src1 and dst.
    uint32_t w_offset, a_slice, d_slice;
    uint32_t m0, mrows, m_tiles;
    bool     scatter;
    uint32_t a_row[proto::HTP_MM_HMX_MAX_M_TILES * 32];
    uint32_t d_row[proto::HTP_MM_HMX_MAX_M_TILES * 32];
    // The steps the current HVX run expands and converts (NO_STEP: none), the step HMX multiplies.
    uint32_t expand_step, convert_step, hmx_step;
    uint32_t hmx_error;       // the first hmx_status other than HMX_OK
    uint32_t weight_overflow; // a weight value beyond the fp16 range (set by any HVX thread)
};

uint8_t * at(const hmx_mm_job & job, uint64_t offset) { return job.vtcm + offset; }
uint8_t * act_tile(const hmx_mm_job & job, uint32_t t, uint32_t kt) {
    return at(job, job.lay.act + (uint64_t(t) * job.kp.k_tiles + kt) * TILE);
}
uint8_t * wexp_tile(const hmx_mm_job & job, uint32_t step, uint32_t j, uint32_t kt) {
    return at(job, job.lay.wexp[step & 1] + (uint64_t(j) * job.kp.k_tiles + kt) * TILE);
}
uint8_t * out_tile(const hmx_mm_job & job, uint32_t step, uint32_t j, uint32_t t) {
    return at(job, job.lay.out[step & 1] + (uint64_t(j) * job.kp.m_tiles + t) * TILE);
}
// Step s's scale blocks and column vectors live in slot s % 3, counted without a division.
uint32_t slot3(uint32_t step) {
    while (step >= 3) {
        step -= 3;
    }
    return step;
}
uint8_t * sb_block(const hmx_mm_job & job, uint32_t step, uint32_t j) { return at(job, job.lay.sb[slot3(step)] + j * 256u); }
// [0] the strip's column factors 2^e, [1] its rows' L1 sums, [2] their largest magnitudes.
HVX_Vector * col_vectors(const hmx_mm_job & job, uint32_t step, uint32_t j) {
    return reinterpret_cast<HVX_Vector *>(at(job, job.lay.col[slot3(step)] + j * 384u));
}
HVX_Vector * row_factors(const hmx_mm_job & job) { return reinterpret_cast<HVX_Vector *>(at(job, job.lay.rows)); }
uint8_t * thread_area(const hmx_mm_job & job, uint32_t i) {
    return at(job, job.lay.threads + uint64_t(i) * job.kp.thread_bytes);
}

// Strips of a step: [first, first + count).
uint32_t step_first(const hmx_mm_job & job, uint32_t step) { return job.strip0 + step * job.kp.n_chunk; }
uint32_t step_count(const hmx_mm_job & job, uint32_t step) {
    const uint32_t left = job.strip_end - step_first(job, step);
    return left < job.kp.n_chunk ? left : job.kp.n_chunk;
}

// ---- activations

// Rows 2p and 2p + 1 of the chunk (local; those past its rows: none) by DMA into the staging of
// parity `parity`: act_buffers areas of two rows, one pair landing while the other is prepared
// (with one area, the parity is always 0 and a pair is pushed only once the one before is done).
uint8_t * pair_staging(const hmx_mm_job & job, uint32_t i, uint32_t parity, uint32_t r) {
    return thread_area(job, i) + (2 * parity + (r & 1)) * size_t(job.kp.k_tiles + 1) * 128;
}
void push_pair(const hmx_mm_job & job, uint32_t i, uint32_t p, uint32_t parity) {
    for (uint32_t r = 2 * p; r < 2 * p + 2 && r < job.mrows; ++r) {
        const uint32_t offset = job.scatter ? job.a_row[r] : job.a_slice + (job.m0 + r) * job.src1->nb[1];
        push_act_row(&job.octx->dma[i], pair_staging(job, i, parity, r), job.src1,
                     htp_tensor_dma_addr(job.octx->plat, job.src1), offset, job.kp.k, job.kp.k_tiles, trace_info(job.m0 + r));
    }
}
// Row r of the chunk as k_tiles fp32 vectors, its transfer popped; nullptr past the chunk's rows.
// K is whole tiles: no tail to clear.
const HVX_Vector * stage_row(const hmx_mm_job & job, uint32_t i, uint32_t r, uint32_t parity) {
    if (r >= job.mrows) {
        return nullptr;
    }
    dma_queue_pop(&job.octx->dma[i]);
    return landed_act_row(pair_staging(job, i, parity, r), job.src1, job.kp.k_tiles);
}

// The row's factor 2^e in every lane of *factor, its scale 2^-e returned (x nullptr: zero rows).
inline HVX_Vector row_scale_of(const HVX_Vector * x, uint32_t n, HVX_Vector * factor) {
    HVX_Vector scale, inverse;
    hvx_row_scale(x != nullptr ? hvx_row_max_bits(x, n) : Q6_V_vzero(), &scale, &inverse);
    *factor = inverse;
    return scale;
}

// Rows x0 and x1 (nullptr: zeros), each scaled by its power of two (factors[0], [1] get the
// inverses), their elements in the weights' order, as activation vector v of each K tile from
// first on. Not inlined, one per order: the scales and constants stay in registers.
template <act_order Order>
__attribute__((noinline)) void rows_to_act_tiles(const HVX_Vector * x0, const HVX_Vector * x1, HVX_Vector * factors,
                                                 uint8_t * first, uint32_t k_tiles) {
    const HVX_Vector s0 = row_scale_of(x0, k_tiles, &factors[0]);
    const HVX_Vector s1 = row_scale_of(x1, k_tiles, &factors[1]);
    for (uint32_t kt = 0; kt < k_tiles; ++kt) {
        const HVX_Vector a = x0 != nullptr ? hvx_sf_mul(in_order<Order>(x0[kt]), s0) : Q6_V_vzero();
        const HVX_Vector b = x1 != nullptr ? hvx_sf_mul(in_order<Order>(x1[kt]), s1) : Q6_V_vzero();
        *reinterpret_cast<HVX_Vector *>(first + size_t(kt) * TILE) = hvx_sf_interleave_to_hf(a, b);
    }
}
void rows_to_act_tiles(act_order order, const HVX_Vector * x0, const HVX_Vector * x1, HVX_Vector * factors,
                       uint8_t * first, uint32_t k_tiles) {
    switch (order) {
        case act_order::nibbles: return rows_to_act_tiles<act_order::nibbles>(x0, x1, factors, first, k_tiles);
        case act_order::q1_0_bits: return rows_to_act_tiles<act_order::q1_0_bits>(x0, x1, factors, first, k_tiles);
        case act_order::q2_0_codes: return rows_to_act_tiles<act_order::q2_0_codes>(x0, x1, factors, first, k_tiles);
        default: return rows_to_act_tiles<act_order::natural>(x0, x1, factors, first, k_tiles);
    }
}

void prepare_rows_thread(uint32_t n, uint32_t i, void * data) {
    const hmx_mm_job & job     = *static_cast<const hmx_mm_job *>(data);
    HVX_Vector *       factors = row_factors(job);
    const uint32_t     pairs   = job.m_tiles * 16;
    const bool         ahead   = job.kp.act_buffers == 2;
    // Row pair p = rows 2p, 2p + 1 = vector p % 16 of row tile p / 16; pair p + n lands meanwhile.
    for (uint32_t p = i, parity = 0; p < pairs; p += n, parity = ahead ? parity ^ 1 : 0) {
        if (p == i || !ahead) {
            push_pair(job, i, p, parity);
        }
        if (ahead && p + n < pairs) {
            push_pair(job, i, p + n, parity ^ 1);
        }
        trace_event_start(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_A_PREP, trace_info(job.m0 + 2 * p));
        const HVX_Vector * x0 = stage_row(job, i, 2 * p, parity);
        const HVX_Vector * x1 = stage_row(job, i, 2 * p + 1, parity);
        rows_to_act_tiles(job.order, x0, x1, &factors[2 * p], act_tile(job, p >> 4, 0) + (p & 15) * 128, job.kp.k_tiles);
        trace_event_stop(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_A_PREP, trace_info(job.m0 + 2 * p));
    }
}

// ---- weights

// A DMA block's ntiles weight tiles (in a slot, slot_size apart; the first starts a super-block
// for the K-quants) into HMX tiles from out on, updating the strip's row stats in VTCM.
template <class Tile>
__attribute__((noinline)) void expand_block(const uint8_t * slot, uint32_t slot_size, uint32_t ntiles, uint8_t * out,
                                            HVX_Vector * stats) {
    constexpr uint32_t per = Tile::blocks;  // HMX tiles per weight tile
    hmx_row_stats      st{stats[0], stats[1]};
    HVX_Vector         dd[2] = {};  // Q2_K: the super-block's row d and -dmin
    for (uint32_t t = 0; t < ntiles; ++t) {
        if constexpr (Tile::type == tile_q2_k::type) {
            if ((t & (proto::KQUANT_TILES - 1)) == 0) {
                Tile::group(slot + t * slot_size, slot_size, dd);
            }
        }
        hvx_expand_tile<Tile>(slot + t * slot_size, dd, reinterpret_cast<HVX_Vector *>(out + size_t(t) * per * TILE), st);
    }
    stats[0] = st.l1;
    stats[1] = st.max_bits;
}

// A staged flat block (Q1_0, Q2_0, Q5_0, Q5_1, K-quants: its vectors in vrmpy order) into its
// 1 << flat_tiles_log2 HMX tiles; Q5_0/Q5_1 records are transposed into that order first.
template <class Flat>
__attribute__((noinline)) void expand_staged(const uint8_t * slot, uint32_t, uint32_t, uint8_t * out, HVX_Vector * stats) {
    HVX_Vector * staged = reinterpret_cast<HVX_Vector *>(const_cast<uint8_t *>(slot));  // this block's slot
    if constexpr (Flat::type == flat_q5_0::type || Flat::type == flat_q5_1::type) {
        transpose_q5_records(staged);
    }
    hmx_row_stats st{stats[0], stats[1]};
    for (uint32_t sub = 0; sub < (1u << flat_tiles_log2(Flat::type)); ++sub) {
        HVX_Vector * o     = reinterpret_cast<HVX_Vector *>(out + size_t(sub) * TILE);
        HVX_Vector   sc[4] = {};
        Flat::unpack(staged, sub, o + 8);
        Flat::scales(staged, sub, sc);
        hvx_expand_codes<Flat>(sc, o, st);
    }
    stats[0] = st.l1;
    stats[1] = st.max_bits;
}

// F32 / F16 / BF16: 32 columns of 32 rows staged (matmul-flat-dma.h) into one HMX tile.
template <uint32_t Type>
__attribute__((noinline)) void expand_float(const uint8_t * slot, uint32_t, uint32_t, uint8_t * out, HVX_Vector * stats) {
    const HVX_Vector * st = reinterpret_cast<const HVX_Vector *>(slot);
    HVX_Vector *       o  = reinterpret_cast<HVX_Vector *>(out);
    hmx_row_stats      s{stats[0], stats[1]};
    if constexpr (Type == HTP_TYPE_F16) {
        hvx_expand_f16(st, o, s);
    } else if constexpr (Type == HTP_TYPE_BF16) {
        hvx_expand_bf16(st, o, s);
    } else {
        hvx_expand_f32(st, o, s);
    }
    stats[0] = s.l1;
    stats[1] = s.max_bits;
}

using expand_fn = void (*)(const uint8_t *, uint32_t, uint32_t, uint8_t *, HVX_Vector *);

// Flat weights: the block-32 types arrive gathered into tiles, the others staged.
expand_fn flat_expander(uint32_t type) {
    switch (type) {
        case HTP_TYPE_F32: return expand_float<HTP_TYPE_F32>;
        case HTP_TYPE_F16: return expand_float<HTP_TYPE_F16>;
        case HTP_TYPE_BF16: return expand_float<HTP_TYPE_BF16>;
        case tile_q1_0::type: return expand_staged<flat_q1_0>;
        case tile_q2_0::type: return expand_staged<flat_q2_0>;
        case tile_q2_k::type: return expand_staged<flat_q2_k>;
        case tile_q3_k::type: return expand_staged<flat_q3_k>;
        case tile_q4_k::type: return expand_staged<flat_q4_k>;
        case tile_q5_k::type: return expand_staged<flat_q5_k>;
        case tile_q6_k::type: return expand_staged<flat_q6_k>;
        case flat_q5_0::type: return expand_staged<flat_q5_0>;
        case flat_q5_1::type: return expand_staged<flat_q5_1>;
        default: break;
    }
    return nullptr;
}

expand_fn expander(uint32_t type, bool flat) {
    if (const expand_fn f = flat ? flat_expander(type) : nullptr) {
        return f;
    }
    switch (type) {
        case tile_q8_0::type: return expand_block<tile_q8_0>;
        case tile_q4_0::type: return expand_block<tile_q4_0>;
        case tile_q4_1::type: return expand_block<tile_q4_1>;
        case tile_iq4_nl::type: return expand_block<tile_iq4_nl>;
        case tile_mxfp4::type: return expand_block<tile_mxfp4>;
        case tile_q1_0::type: return expand_block<tile_q1_0>;
        case tile_q2_0::type: return expand_block<tile_q2_0>;
        case tile_q2_k::type: return expand_block<tile_q2_k>;
        case tile_q3_k::type: return expand_block<tile_q3_k>;
        case tile_q4_k::type: return expand_block<tile_q4_k>;
        case tile_q5_k::type: return expand_block<tile_q5_k>;
        default: return expand_block<tile_q6_k>;
    }
}

// The strip's scale/bias block and column factors from its L1 sums; true when a weight value
// went past the fp16 range (rounds to infinity: 65520 and up).
__attribute__((noinline)) bool finish_strip(HVX_Vector * col, HVX_Vector * sb, uint32_t rows) {
    HVX_Vector words, factor;
    hvx_column_scale(col[1], &words, &factor);
    sb[0]  = words;
    sb[1]  = Q6_V_vzero();  // the block's reserved half
    col[0] = factor;
    // Rows past the strip's weight rows (flat weights: stale staging) do not count.
    const HVX_Vector     max  = rows >= 32 ? col[2] : Q6_V_vmux_QVV(Q6_Q_vsetq_R(int32_t(rows * 4)), col[2], Q6_V_vzero());
    const HVX_VectorPred over = Q6_Q_vcmp_gt_VwVw(max, hvx_splat_w(0x477FEFFF));
    HVX_Vector           flag = Q6_V_vmux_QVV(over, hvx_splat_w(1), Q6_V_vzero());
    flag                      = hvx_row_max_bits(&flag, 1);
    int32_t lanes[32];
    __builtin_memcpy(lanes, &flag, sizeof lanes);  // a register copy, not a VTCM read
    return lanes[0] != 0;
}

__attribute__((noinline)) void zero_stats(HVX_Vector * col) {
    col[1] = Q6_V_vzero();
    col[2] = Q6_V_vzero();
}

// Strip j of the step: its weight blocks DDR -> DMA -> VTCM through the thread's two slots (the
// next block in flight while one is expanded), expanded into the step's buffer. Tiled weights come
// in blocks of tiles_per_block tiles, one 2-D transfer each; flat ones a flat block at a time
// (matmul-flat-dma.h).
void expand_strip(hmx_mm_job & job, uint32_t i, uint32_t step, uint32_t j) {
    const htp_matmul_hmx_kparams & kp     = job.kp;
    dma_queue *                    q      = &job.octx->dma[i];
    const uint32_t                 strip  = step_first(job, step) + j;
    const uint32_t                 left   = kp.n - strip * proto::TILE_N_ROWS;
    const uint32_t                 rows   = left < proto::TILE_N_ROWS ? left : proto::TILE_N_ROWS;
    const dma_addr_t               w_base = htp_tensor_dma_addr(job.octx->plat, job.src0);
    uint8_t *                      slots  = thread_area(job, i);
    const uint32_t                 slot_b = kp.tiles_per_block * kp.slot_size;
    HVX_Vector *                   col    = col_vectors(job, step, j);
    const expand_fn                expand = expander(kp.wtype, job.flat);
    // Blocks of the strip, HMX tiles per block (log2), DMA transfers per block.
    const bool     floats  = proto::htp_matmul_float_weight(kp.wtype);
    const uint32_t shift   = job.flat && !floats ? flat_tiles_log2(kp.wtype) : kp.tile_shift;
    const uint32_t ntiles  = kp.k_tiles >> shift;  // weight tiles (flat: flat blocks) of the strip
    const uint32_t inputs  = floats ? float_block_transfers(kp.wtype)
                             : job.flat ? proto::htp_matmul_flat_block_transfers(kp.wtype) : 1;
    const flat_weights fw{kp.wtype, w_base, job.src0->nb[1]};
    const uint32_t     row0 = job.w_offset + strip * (job.flat ? proto::TILE_N_ROWS * job.src0->nb[1] : ntiles * kp.tile_size);
    auto block_tiles = [&](uint32_t t0) { return ntiles - t0 < kp.tiles_per_block ? ntiles - t0 : kp.tiles_per_block; };
    auto push        = [&](uint32_t t0, uint32_t k) {
        uint8_t * slot = slots + k * slot_b;
        if (!job.flat) {
            dma_queue_push_ddr_to_vtcm(q, dma_addr_of(slot), dma_addr_at(w_base, row0 + t0 * kp.tile_size), kp.slot_size,
                                       kp.tile_size, kp.tile_size, block_tiles(t0), trace_info(strip));
        } else if (floats) {
            push_float_block(q, slot, fw, rows, row0 + t0 * kp.tile_size, trace_info(strip));
        } else if (is_staged_flat(kp.wtype)) {
            push_flat_staged(q, slot, fw, rows, row0 + t0 * kp.tile_size, trace_info(strip));
        } else {
            push_flat_tile(q, slot, fw, rows, row0 + t0 * kp.tile_size, trace_info(strip));
        }
    };
    trace_event_start(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_W_DEQUANT, trace_info(step));
    zero_stats(col);
    push(0, 0);
    if (kp.tiles_per_block < ntiles) {
        push(kp.tiles_per_block, 1);
    }
    for (uint32_t t0 = 0, k = 0; t0 < ntiles; t0 += kp.tiles_per_block, k ^= 1) {
        for (uint32_t n = 0; n < inputs; ++n) {
            dma_queue_pop(q);
        }
        expand(slots + k * slot_b, kp.slot_size, block_tiles(t0), wexp_tile(job, step, j, t0 << shift), col + 1);
        if (t0 + 2 * kp.tiles_per_block < ntiles) {
            push(t0 + 2 * kp.tiles_per_block, k);
        }
    }
    if (finish_strip(col, reinterpret_cast<HVX_Vector *>(sb_block(job, step, j)), rows)) {
        __atomic_store_n(&job.weight_overflow, 1u, __ATOMIC_RELAXED);
    }
    trace_event_stop(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_W_DEQUANT, trace_info(step));
}

// ---- outputs

__attribute__((noinline)) void convert_tile(const uint8_t * tile, const HVX_Vector * col, const HVX_Vector * rows,
                                            HVX_Vector * out) {
    hvx_output_tile_to_rows(reinterpret_cast<const HVX_Vector *>(tile), col[0], rows, out);
}

// The step's output tiles, every n-th from i on: fp32 rows into the thread's two staging tiles
// (alternating; a tile's previous writeback popped first: FIFO, so its entries are the oldest),
// written back by DMA: one 2-D transfer, or a transfer per row (MUL_MAT_ID's scattered rows).
void convert_step(hmx_mm_job & job, uint32_t n, uint32_t i, uint32_t step) {
    dma_queue *      q        = &job.octx->dma[i];
    const dma_addr_t dst_base = htp_tensor_dma_addr(job.octx->plat, job.dst);
    uint8_t *        staging  = thread_area(job, i);
    uint32_t         turn = 0, k = 0;
    uint32_t         entries[2] = {0, 0};  // each staging tile's writeback in flight
    for (uint32_t j = 0, strips = step_count(job, step); j < strips; ++j) {
        const uint32_t strip = step_first(job, step) + j;
        const uint32_t left  = job.kp.n - strip * proto::TILE_N_ROWS;
        const uint32_t cols  = (left < proto::TILE_N_ROWS ? left : proto::TILE_N_ROWS) * 4;
        for (uint32_t t = 0; t < job.m_tiles; ++t) {
            const bool mine = turn == i;
            turn            = turn + 1 == n ? 0 : turn + 1;
            if (!mine) {
                continue;
            }
            trace_event_start(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_O_PROC, trace_info(step));
            for (; entries[k] > 0; --entries[k]) {
                dma_queue_pop(q);  // this staging tile's previous writeback
            }
            HVX_Vector * out = reinterpret_cast<HVX_Vector *>(staging + k * 32 * 128);
            convert_tile(out_tile(job, step, j, t), col_vectors(job, step, j), row_factors(job) + 32 * t, out);
            const uint32_t rows   = job.mrows - 32 * t < 32 ? job.mrows - 32 * t : 32;
            const uint32_t column = strip * proto::TILE_N_ROWS * 4;
            if (job.scatter) {
                for (uint32_t r = 0; r < rows; ++r) {
                    dma_queue_push_vtcm_to_ddr(q, dma_addr_at(dst_base, job.d_row[32 * t + r] + column),
                                               dma_addr_of(out + r), cols, 128, cols, 1, trace_info(strip));
                }
                entries[k] = rows;
            } else {
                dma_queue_push_vtcm_to_ddr(
                    q, dma_addr_at(dst_base, job.d_slice + (job.m0 + 32 * t) * job.dst->nb[1] + column),
                    dma_addr_of(out), job.dst->nb[1], 128, cols, rows, trace_info(strip));
                entries[k] = 1;
            }
            k ^= 1;
            trace_event_stop(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_O_PROC, trace_info(step));
        }
    }
    for (uint32_t left = entries[0] + entries[1]; left > 0; --left) {
        dma_queue_pop(q);
    }
}

// One HVX run of a step: thread i expands strips i, i + n, ... of expand_step, then converts its
// share of convert_step's output tiles.
void step_thread(uint32_t n, uint32_t i, void * data) {
    hmx_mm_job & job = *static_cast<hmx_mm_job *>(data);
    if (job.expand_step != NO_STEP) {
        for (uint32_t j = i, strips = step_count(job, job.expand_step); j < strips; j += n) {
            expand_strip(job, i, job.expand_step, j);
        }
    }
    if (job.convert_step != NO_STEP) {
        convert_step(job, n, i, job.convert_step);
    }
}

// ---- the HMX queue thread

// K tiles [kt, kt + n) form one run of at most HMX_MAX_RUN_TILES tiles that crosses no 4 MiB
// bank boundary in either operand.
uint32_t run_length(const hmx_mm_job & job, const uint8_t * a, const uint8_t * w, uint32_t left) {
    auto in_bank = [&](const uint8_t * p) {
        const uint32_t off = uint32_t(p - job.octx->vtcm_base) & (HMX_VTCM_BANK_BYTES - 1);
        return (HMX_VTCM_BANK_BYTES - off) / TILE;
    };
    uint32_t n = left < HMX_MAX_RUN_TILES ? left : HMX_MAX_RUN_TILES;
    n          = in_bank(a) < n ? in_bank(a) : n;
    return in_bank(w) < n ? in_bank(w) : n;
}

void hmx_step_job(void * data) {
    hmx_mm_job &   job  = *static_cast<hmx_mm_job *>(data);
    const uint32_t step = job.hmx_step;
    trace_buf *    tr   = &job.octx->trace[HMX_TRACE_SLOT];
    trace_event_start(tr, proto::HTP_TRACE_EVT_HMX_COMP, trace_info(step));
    // Row tile by row tile, each against the step's strips: a row tile's activation run is read
    // n_chunk times in a row (hot in cache), the step's expanded strips m_tiles times.
    hmx_status     st     = HMX_OK;
    const uint32_t strips = step_count(job, step);
    for (uint32_t t = 0; t < job.m_tiles && st == HMX_OK; ++t) {
        for (uint32_t j = 0; j < strips && st == HMX_OK; ++j) {
            st = hmx_set_scale_bias(job.unit, sb_block(job, step, j));
            for (uint32_t kt = 0; kt < job.kp.k_tiles && st == HMX_OK;) {
                const uint8_t * a = act_tile(job, t, kt);
                const uint8_t * w = wexp_tile(job, step, j, kt);
                const uint32_t  n = run_length(job, a, w, job.kp.k_tiles - kt);
                st                = hmx_mac_fp16(job.unit, a, w, n);
                kt += n;
            }
            if (st == HMX_OK) {
                st = hmx_store_fp16(job.unit, out_tile(job, step, j, t));
            }
        }
    }
    if (st != HMX_OK && job.hmx_error == HMX_OK) {
        job.hmx_error = st;
    }
    hmx_drain(job.unit);  // the event spans the stores' work
    trace_event_stop(tr, proto::HTP_TRACE_EVT_HMX_COMP, trace_info(step));
}

// ---- the op

void run_chunk(hmx_mm_job & job) {
    const htp_op_context * octx = job.octx;
    const uint32_t         n    = job.kp.n_threads;
    const uint32_t pairs        = job.m_tiles * 16;
    work_queue_run(octx->work, prepare_rows_thread, &job, pairs < n ? pairs : n);
    uint32_t steps = 0;
    for (uint32_t s = job.strip0; s < job.strip_end; s += job.kp.n_chunk) {
        ++steps;
    }
    job.expand_step  = 0;
    job.convert_step = NO_STEP;
    work_queue_run(octx->work, step_thread, &job, n);
    for (uint32_t s = 0; s < steps; ++s) {
        job.hmx_step = s;
        hmx_queue_push(octx->hmx, hmx_step_job, &job);
        job.expand_step  = s + 1 < steps ? s + 1 : NO_STEP;
        job.convert_step = s >= 1 ? s - 1 : NO_STEP;
        if (job.expand_step != NO_STEP || job.convert_step != NO_STEP) {
            work_queue_run(octx->work, step_thread, &job, n);
        }
        hmx_queue_pop(octx->hmx);
    }
    job.expand_step  = NO_STEP;
    job.convert_step = steps - 1;
    work_queue_run(octx->work, step_thread, &job, n);
}

htp_matmul_hmx_kparams kparams_of(const htp_op_context * octx) {
    htp_matmul_hmx_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    return kp;
}

uint64_t last_row(const htp_tensor * t) {
    return uint64_t(t->ne[1] - 1) * t->nb[1] + uint64_t(t->ne[2] - 1) * t->nb[2] + uint64_t(t->ne[3] - 1) * t->nb[3];
}

// The weights' layout fields: tiles (their size, run per strip, whole super-blocks per DMA block)
// or flat blocks (their staging, one per DMA block), and every weight byte inside src0.
bool weights_ok(const htp_matmul_hmx_kparams & kp, const htp_tensor * src0) {
    const proto::tiled_type tt = proto::tiled_type(int32_t(kp.wtype));
    const uint64_t last_row_at = uint64_t(src0->ne[2] - 1) * src0->nb[2] + uint64_t(src0->ne[3] - 1) * src0->nb[3] +
                                 uint64_t(kp.n - 1) * src0->nb[1];
    if (proto::htp_matmul_float_weight(kp.wtype)) {
        const uint32_t elem = kp.wtype == HTP_TYPE_F32 ? 4 : 2;
        return kp.flat == 1 && kp.tile_shift == 0 && kp.tile_size == 32 * elem && kp.slot_size == 32 * kp.tile_size &&
               kp.tiles_per_block == 1 && kp.w_slice_bytes == 0 && last_row_at + uint64_t(kp.k) * elem <= src0->size;
    }
    if (kp.flat != 0) {
        const uint32_t l        = flat_tiles_log2(kp.wtype);
        const uint32_t slot     = is_staged_flat(kp.wtype) ? proto::htp_matmul_flat_block_vectors(kp.wtype) * 128
                                                           : proto::tile_slot_size(tt);
        return (src0->flags & proto::HTP_TENSOR_TILED) == 0 && kp.tile_shift == 0 && (kp.k_tiles >> l << l) == kp.k_tiles &&
               kp.tile_size == flat_block_bytes(kp.wtype) && kp.slot_size == slot && kp.tiles_per_block == 1 &&
               kp.w_slice_bytes == 0 && last_row_at + uint64_t(kp.k_tiles >> l) * kp.tile_size <= src0->size;
    }
    const uint32_t shift = tt == proto::tiled_type::q1_0 ? 2 : tt == proto::tiled_type::q2_0 ? 1 : 0;
    const uint32_t unit  = proto::is_kquant(tt) ? proto::KQUANT_TILES : 1;
    return (src0->flags & proto::HTP_TENSOR_TILED) != 0 && kp.tile_shift == shift &&
           (kp.k_tiles >> shift << shift) == kp.k_tiles && (kp.k_tiles & (unit - 1)) == 0 &&
           kp.tile_size == proto::tile_size(tt) && kp.slot_size == proto::tile_slot_size(tt) &&
           kp.tiles_per_block >= unit && (kp.tiles_per_block & (unit - 1)) == 0 &&
           kp.w_slice_bytes == uint64_t(kp.n_strips) * (kp.k_tiles >> shift) * kp.tile_size &&
           uint64_t(src0->ne[2]) * src0->ne[3] * kp.w_slice_bytes <= src0->size;
}

} // namespace

namespace {

// The plan's own fields: bounds within the fixed arrays, the VTCM layout, K and N as the weights have them.
bool plan_ok(const htp_op_context * octx, const htp_matmul_hmx_kparams & kp) {
    const htp_tensor * src0 = octx->src[0];
    return octx->hmx != nullptr && octx->plat->hmx_unit != nullptr && kp.wtype == src0->type && kp.flat <= 1 &&
           weights_ok(kp, src0) && kp.k == src0->ne[0] && kp.n == src0->ne[1] &&
           kp.k_tiles * proto::TILE_N_COLS == kp.k && kp.n_strips * proto::TILE_N_ROWS >= kp.n &&
           kp.n_strips * proto::TILE_N_ROWS < kp.n + proto::TILE_N_ROWS && kp.m_tiles >= 1 &&
           kp.m_tiles <= proto::HTP_MM_HMX_MAX_M_TILES && kp.n_chunk >= 1 && kp.n_chunk <= proto::HTP_MM_HMX_MAX_N_CHUNK &&
           kp.n_threads >= 1 && kp.n_threads <= octx->n_threads && kp.thread_bytes % 128 == 0 &&
           (kp.act_buffers == 1 || kp.act_buffers == 2) &&
           kp.thread_bytes >= proto::htp_mm_hmx_thread_bytes(kp) && kp.vtcm_size == proto::htp_mm_hmx_layout_of(kp).end &&
           uintptr_t(octx->vtcm_base) % HMX_TILE_ALIGN == 0;
}

// Activation rows of k elements and output rows of n floats inside their tensors.
bool rows_inside(const htp_op_context * octx, const htp_matmul_hmx_kparams & kp) {
    const uint32_t a_size = octx->src[1]->type == HTP_TYPE_F16 ? 2 : 4;
    return last_row(octx->src[1]) + uint64_t(kp.k) * a_size <= octx->src[1]->size &&
           last_row(octx->dst[0]) + uint64_t(kp.n) * 4 <= octx->dst[0]->size;
}

} // namespace

bool guard_matmul_hmx(const htp_op_context * octx) {
    const htp_matmul_hmx_kparams kp   = kparams_of(octx);
    const htp_tensor *           src0 = octx->src[0];
    const htp_tensor *           src1 = octx->src[1];
    return proto::htp_matmul_hmx_operands_ok(*src0, *src1, *octx->dst[0]) && plan_ok(octx, kp) &&
           uint64_t(kp.r2) * src0->ne[2] == src1->ne[2] && uint64_t(kp.r3) * src0->ne[3] == src1->ne[3] &&
           rows_inside(octx, kp);
}

bool guard_matmul_id_hmx(const htp_op_context * octx) {
    const htp_matmul_hmx_kparams kp  = kparams_of(octx);
    const htp_tensor *           ids = octx->src[2];
    const proto::htp_matmul_id_view v = proto::htp_matmul_id_as_2d(*octx->src[0], *octx->src[1], *ids, *octx->dst[0]);
    return proto::htp_matmul_id_shapes_supported(*octx->src[0], *octx->src[1], *ids, *octx->dst[0]) &&
           proto::htp_matmul_hmx_operands_ok(v.w, v.a, v.d) && plan_ok(octx, kp) && kp.r2 == 1 && kp.r3 == 1 &&
           last_row(ids) + uint64_t(ids->ne[0]) * 4 <= ids->size && rows_inside(octx, kp);
}

namespace {

// The job's operands, plan and VTCM layout, and this device's strips; VTCM_TOO_SMALL when the
// session's VTCM is smaller than the plan.
uint32_t start_job(htp_op_context * octx, hmx_mm_job & job) {
    job.octx = octx;
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.lay = proto::htp_mm_hmx_layout_of(job.kp);
    if (job.kp.vtcm_size > octx->vtcm_size) {
        return proto::HTP_STATUS_VTCM_TOO_SMALL;
    }
    job.vtcm      = octx->vtcm_base;
    job.unit      = static_cast<hmx_unit *>(octx->plat->hmx_unit);
    job.src0      = octx->src[0];
    job.src1      = octx->src[1];
    job.dst       = octx->dst[0];
    job.hmx_error = HMX_OK;
    job.flat      = job.kp.flat != 0;
    job.order     = act_order_of(job.kp.wtype, !job.flat);
    const htp_tensor_mdev_range strips = device_strips(octx, job.dst, job.kp.n_strips);
    job.strip0                         = strips.start;
    job.strip_end                      = strips.start + strips.count;
    return proto::HTP_STATUS_OK;
}

// A chunk of mrows rows; STRICT when the unit faulted (op_done logs hmx_fault()).
uint32_t run_rows(hmx_mm_job & job, uint32_t mrows) {
    job.mrows   = mrows;
    job.m_tiles = (mrows + 31) / 32;
    run_chunk(job);
    return job.hmx_error != HMX_OK ? proto::HTP_STATUS_STRICT : proto::HTP_STATUS_OK;
}

uint32_t finish_job(const hmx_mm_job & job) {
    if (job.weight_overflow != 0) {
        job.octx->plat->log(job.octx->plat->ctx, 0, "htp: MUL_MAT_HMX: a weight value exceeds the fp16 range");
        return proto::HTP_STATUS_INVAL_PARAMS;
    }
    return proto::HTP_STATUS_OK;
}

} // namespace

uint32_t op_matmul_hmx(htp_op_context * octx) {
    hmx_mm_job job{};
    uint32_t   status = start_job(octx, job);
    if (status != proto::HTP_STATUS_OK || job.strip0 == job.strip_end) {
        return status;  // VTCM too small, or another device of the group computes all of N
    }
    const uint32_t ne11 = job.src1->ne[1], chunk = job.kp.m_tiles * 32;
    uint32_t       i03 = 0, n3 = 0;
    for (uint32_t i13 = 0; i13 < job.src1->ne[3]; ++i13) {
        uint32_t i02 = 0, n2 = 0;
        for (uint32_t i12 = 0; i12 < job.src1->ne[2]; ++i12) {
            job.w_offset = job.flat ? i02 * job.src0->nb[2] + i03 * job.src0->nb[3]
                                    : (i03 * job.src0->ne[2] + i02) * job.kp.w_slice_bytes;
            if (++n2 == job.kp.r2) {
                n2 = 0;
                ++i02;
            }
            job.a_slice = i12 * job.src1->nb[2] + i13 * job.src1->nb[3];
            job.d_slice = i12 * job.dst->nb[2] + i13 * job.dst->nb[3];
            for (job.m0 = 0; job.m0 < ne11 && status == proto::HTP_STATUS_OK; job.m0 += chunk) {
                status = run_rows(job, ne11 - job.m0 < chunk ? ne11 - job.m0 : chunk);
            }
        }
        if (++n3 == job.kp.r3) {
            n3 = 0;
            ++i03;
        }
    }
    return status != proto::HTP_STATUS_OK ? status : finish_job(job);
}

// Per expert, the (slot, token) rows whose id names it, in chunks; an id outside [0, n_expert) is
// INVAL_PARAMS before any work.
uint32_t op_matmul_id_hmx(htp_op_context * octx) {
    hmx_mm_job job{};
    uint32_t   status = start_job(octx, job);
    if (status != proto::HTP_STATUS_OK || job.strip0 == job.strip_end) {
        return status;
    }
    job.scatter               = true;
    const expert_ids ids      = expert_ids_of(octx);
    const bool       shared_b = job.src1->ne[1] == 1;  // one activation row for every slot
    const uint32_t   chunk    = job.kp.m_tiles * 32;
    uint32_t         expert   = UINT32_MAX, rows = 0;
    const uint32_t   walked   = walk_routed_rows(
        ids, job.src0->ne[2], job.kp.min_expert_rows, 0,
        [&](uint32_t e, uint32_t s, uint32_t t) {
            if (e != expert) {
                expert       = e;
                job.w_offset = job.flat ? e * job.src0->nb[2] : e * job.kp.w_slice_bytes;
                rows         = 0;
            }
            job.a_row[rows] = (shared_b ? 0 : s) * job.src1->nb[1] + t * job.src1->nb[2];
            job.d_row[rows] = s * job.dst->nb[1] + t * job.dst->nb[2];
            if (++rows == chunk) {
                status = run_rows(job, rows);
                rows   = 0;
            }
            return status == proto::HTP_STATUS_OK;
        },
        [&](uint32_t) {
            if (rows > 0) {
                status = run_rows(job, rows);
            }
            return status == proto::HTP_STATUS_OK;
        });
    if (walked != proto::HTP_STATUS_OK) {
        return walked;
    }
    return status != proto::HTP_STATUS_OK ? status : finish_job(job);
}

} // namespace hexnpu::htp
