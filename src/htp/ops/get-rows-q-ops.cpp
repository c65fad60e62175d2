// GET_ROWS_Q (proto/htp-get-rows-q.h): rows of a quantized table, tiled or flat, dequantized into
// F32. Each thread streams its dst rows DDR -> DMA -> VTCM -> HVX -> VTCM -> DMA -> DDR, a block
// of units (tiles of the row's 32-row group, or one flat block of the row) at a time; the table is
// read by DMA alone (proto::htp_reads_by_dma_only), ids with scalar loads from their small table.
#include "eltwise-rows.h"
#include "htp-tensor.h"
#include "ops.h"
#include "row-walk.h"
#include "stream-pipeline.h"
#include "tile-rows.h"
#include "vtcm.h"
#include "proto/htp-get-rows-q.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-status.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::htp_get_rows_q_kparams;
using proto::htp_tensor;

// Row `lane` of n units at slot (unit_slot bytes apart) into n * unit_vectors vectors at out.
using units_row_fn = void (*)(uint8_t * slot, uint32_t unit_slot, uint32_t n, uint32_t lane, HVX_Vector * out);

// Tiles in the tiled layout; a block of K-quant tiles starts a super-block (Q2_K reads its rows'
// d and -dmin there).
// Q2_K's tile with its super-block's d and -dmin read from the super-block's first tile: a call per
// tile, so that nothing vector-valued lives across the tile loop (it spilled there).
__attribute__((noinline)) void q2_k_tile_row(const uint8_t * tile, const uint8_t * first, uint32_t unit_slot,
                                             uint32_t lane, HVX_Vector * out) {
    HVX_Vector dd[2];
    tile_q2_k::group(first, unit_slot, dd);
    hvx_tile_row<tile_q2_k>(tile, dd, lane, out);
}

template <class Tile>
__attribute__((noinline)) void tiles_row(uint8_t * slot, uint32_t unit_slot, uint32_t n, uint32_t lane, HVX_Vector * out) {
    for (uint32_t t = 0; t < n; ++t) {
        if constexpr (Tile::type == tile_q2_k::type) {
            q2_k_tile_row(slot + t * unit_slot, slot + (t & ~(proto::KQUANT_TILES - 1)) * unit_slot, unit_slot, lane,
                          out + t * Tile::blocks);
        } else {
            hvx_tile_row<Tile>(slot + t * unit_slot, nullptr, lane, out + t * Tile::blocks);
        }
    }
}

// A flat block-32 block gathered into the tile layout (its row in lane 0), back in element order.
template <class Tile>
__attribute__((noinline)) void flat_tile_row(uint8_t * slot, uint32_t, uint32_t, uint32_t, HVX_Vector * out) {
    hvx_tile_row<Tile>(slot, nullptr, 0, out);
    out[0] = hvx_row_to_element_order(out[0], act_order_of(Tile::type, false));
}

// A staged flat block (its row in lane 0), each 32 columns back in element order.
template <class Flat>
__attribute__((noinline)) void flat_staged_row(uint8_t * slot, uint32_t, uint32_t, uint32_t, HVX_Vector * out) {
    hvx_staged_row<Flat>(reinterpret_cast<HVX_Vector *>(slot), 0, out);
    for (uint32_t sub = 0; sub < (1u << flat_tiles_log2(Flat::type)); ++sub) {
        out[sub] = hvx_row_to_element_order(out[sub], act_order_of(Flat::type, false));
    }
}

units_row_fn units_row_of(uint32_t type, bool tiled) {
    if (tiled) {
        switch (type) {
            case tile_q8_0::type: return tiles_row<tile_q8_0>;
            case tile_q4_0::type: return tiles_row<tile_q4_0>;
            case tile_q4_1::type: return tiles_row<tile_q4_1>;
            case tile_iq4_nl::type: return tiles_row<tile_iq4_nl>;
            case tile_mxfp4::type: return tiles_row<tile_mxfp4>;
            case tile_q1_0::type: return tiles_row<tile_q1_0>;
            case tile_q2_0::type: return tiles_row<tile_q2_0>;
            case tile_q2_k::type: return tiles_row<tile_q2_k>;
            case tile_q3_k::type: return tiles_row<tile_q3_k>;
            case tile_q4_k::type: return tiles_row<tile_q4_k>;
            case tile_q5_k::type: return tiles_row<tile_q5_k>;
            case tile_q6_k::type: return tiles_row<tile_q6_k>;
            default: return nullptr;
        }
    }
    switch (type) {
        case tile_q8_0::type: return flat_tile_row<tile_q8_0>;
        case tile_q4_0::type: return flat_tile_row<tile_q4_0>;
        case tile_q4_1::type: return flat_tile_row<tile_q4_1>;
        case tile_iq4_nl::type: return flat_tile_row<tile_iq4_nl>;
        case tile_mxfp4::type: return flat_tile_row<tile_mxfp4>;
        case tile_q1_0::type: return flat_staged_row<flat_q1_0>;
        case tile_q2_0::type: return flat_staged_row<flat_q2_0>;
        case tile_q2_k::type: return flat_staged_row<flat_q2_k>;
        case tile_q3_k::type: return flat_staged_row<flat_q3_k>;
        case tile_q4_k::type: return flat_staged_row<flat_q4_k>;
        case tile_q5_k::type: return flat_staged_row<flat_q5_k>;
        case tile_q6_k::type: return flat_staged_row<flat_q6_k>;
        case flat_q5_0::type: return flat_staged_row<flat_q5_0>;
        case flat_q5_1::type: return flat_staged_row<flat_q5_1>;
        default: return nullptr;
    }
}

// A block: units [u0, u0 + n) of dst row `row` (coordinates i1..i3), from table row `id`.
struct unit_block {
    uint32_t row;
    uint32_t i1, i2, i3;
    uint32_t u0, n;
    uint32_t id;
    bool     valid;  // the id was inside the table (else the block moves nothing)
};

struct get_rows_q_job {
    const htp_op_context * octx;
    htp_get_rows_q_kparams kp;
    units_row_fn           units_row;
    const htp_tensor *     src;
    const htp_tensor *     ids;
    const htp_tensor *     dst;
    uint32_t               row_start, nrows, rows_per_thread;
    uint8_t *              vtcm;
    volatile uint32_t      bad_id;
};

uint8_t * in_slot(const get_rows_q_job & job, uint32_t i, uint32_t k) {
    return job.vtcm + (size_t(i) * job.kp.n_slots + k) * (job.kp.in_slot + job.kp.out_slot);
}
uint8_t * out_slot(const get_rows_q_job & job, uint32_t i, uint32_t k) { return in_slot(job, i, k) + job.kp.in_slot; }

// The block's DMA transfers: one 2-D transfer of consecutive tiles of the row's 32-row group, or
// the flat block staged as the flat matmul stages a one-row strip; tokens for a block without a
// valid id, so every block pops n_inputs entries.
void push_units(dma_queue * q, uint8_t * slot, dma_addr_t base, const unit_block & b, const get_rows_q_job & job) {
    const htp_get_rows_q_kparams & kp = job.kp;
    uint32_t                       pushed = 0;
    if (b.valid && kp.tiled) {
        const uint32_t slice = (b.i3 * job.src->ne[2] + b.i2) * kp.slice_bytes;
        const uint32_t first = slice + ((b.id >> 5) * kp.n_units + b.u0) * kp.unit_bytes;
        dma_queue_push_ddr_to_vtcm(q, dma_addr_of(slot), dma_addr_at(base, first), kp.unit_slot, kp.unit_bytes,
                                   kp.unit_bytes, b.n, trace_info(b.row));
        pushed = 1;
    } else if (b.valid) {
        const flat_weights w{kp.type, dma_addr_at(base, row_offset(job.src, b.id, b.i2, b.i3)), job.src->nb[1]};
        if (is_staged_flat(kp.type)) {
            push_flat_staged(q, slot, w, 1, b.u0 * kp.unit_bytes, trace_info(b.row));
        } else {
            push_flat_tile(q, slot, w, 1, b.u0 * kp.unit_bytes, trace_info(b.row));
        }
        pushed = kp.n_inputs;
    }
    for (; pushed < kp.n_inputs; ++pushed) {
        dma_queue_push_token(q, slot, trace_info(b.row));
    }
}

void get_rows_q_thread(uint32_t, uint32_t i, void * data) {
    get_rows_q_job &               job = *static_cast<get_rows_q_job *>(data);
    const htp_get_rows_q_kparams & kp  = job.kp;
    const uint32_t                 ir0 = job.row_start + i * job.rows_per_thread;
    const uint32_t end = job.row_start + job.nrows, ir1 = ir0 + job.rows_per_thread < end ? ir0 + job.rows_per_thread : end;
    if (ir0 >= ir1) {
        return;
    }
    dma_queue *      q        = &job.octx->dma[i];
    const dma_addr_t src_base = htp_tensor_dma_addr(job.octx->plat, job.src);
    const dma_addr_t dst_base = htp_tensor_dma_addr(job.octx->plat, job.dst);
    const uint8_t *  ids      = kp.identity ? nullptr : htp_tensor_ptr(job.octx->plat, job.ids);
    const uint32_t   cols     = kp.unit_vectors * 32;

    row_cursor next = row_cursor_at(ir0, kp.div_ne1, kp.div_ne2);
    uint32_t   unit = 0, id = 0;
    bool       valid = false;
    stream_blocks<proto::HTP_GET_ROWS_Q_MAX_SLOTS, unit_block>(
        q, &job.octx->trace[i], kp.n_slots, kp.n_inputs,
        [&](unit_block & b) {
            if (next.row >= ir1) {
                return false;
            }
            if (unit == 0 && kp.identity) {
                id = next.i1, valid = true;
            } else if (unit == 0) {
                valid = read_row_id(ids + next.i1 * job.ids->nb[0] + next.i2 * job.ids->nb[1] + next.i3 * job.ids->nb[2],
                                    kp.ids_i64 != 0, job.src->ne[1], &id);
                if (!valid) {
                    job.bad_id = 1;
                }
            }
            const uint32_t n = kp.n_units - unit < kp.units_per_block ? kp.n_units - unit : kp.units_per_block;
            b                = unit_block{next.row, next.i1, next.i2, next.i3, unit, n, id, valid};
            if ((unit += n) == kp.n_units) {
                unit = 0;
                row_cursor_advance(next, 1, kp.div_ne1.d, kp.div_ne2.d);
            }
            return true;
        },
        [&](uint32_t k, const unit_block & b) { dma_queue_push_token(q, out_slot(job, i, k), trace_info(b.row)); },
        [&](uint32_t k, const unit_block & b) { push_units(q, in_slot(job, i, k), src_base, b, job); },
        [&](uint32_t k, const unit_block & b) {
            if (b.valid) {
                job.units_row(in_slot(job, i, k), kp.unit_slot, b.n, b.id & 31,
                              reinterpret_cast<HVX_Vector *>(out_slot(job, i, k)));
            }
        },
        [&](uint32_t k, const unit_block & b) {
            if (!b.valid) {
                dma_queue_push_token(q, out_slot(job, i, k), trace_info(b.row));
                return;
            }
            const uint32_t bytes = b.n * cols * 4;
            dma_queue_push_vtcm_to_ddr(q, dma_addr_at(dst_base, row_offset(job.dst, b.i1, b.i2, b.i3) + b.u0 * cols * 4),
                                       dma_addr_of(out_slot(job, i, k)), bytes, bytes, bytes, 1, trace_info(b.row));
        });
}

} // namespace

bool guard_get_rows_q(const htp_op_context * octx) {
    htp_get_rows_q_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * src   = octx->src[0];
    const htp_tensor * ids   = octx->src[1];
    const htp_tensor * dst   = octx->dst[0];
    const bool         tiled = (src->flags & proto::HTP_TENSOR_TILED) != 0;
    const uint32_t     cols  = proto::htp_get_rows_q_unit_cols(src->type, tiled);
    // The plan's sizes are the ones the layout implies; the slots' bytes cover what the units need.
    const bool cpy   = octx->op->opcode == proto::HTP_OP_CPY_DQ;
    const bool ids_ok = cpy ? ids == nullptr && kp.identity == 1 && kp.ids_i64 == 0
                            : kp.identity == 0 && kp.ids_i64 == (ids->type == HTP_TYPE_I64);
    const bool units_ok =
        kp.type == src->type && kp.tiled == (tiled ? 1u : 0u) && ids_ok &&
        kp.unit_vectors * 32 == cols && kp.n_units * cols == dst->ne[0] && kp.units_per_block >= 1 &&
        kp.units_per_block <= kp.n_units && kp.in_slot == kp.units_per_block * kp.unit_slot &&
        kp.out_slot == kp.units_per_block * kp.unit_vectors * 128 && kp.unit_slot % 128 == 0 &&
        (tiled ? kp.n_inputs == 1 && kp.unit_bytes == proto::tile_size(proto::tiled_type(int32_t(src->type))) &&
                     kp.unit_slot >= kp.unit_bytes &&
                     kp.slice_bytes == ((src->ne[1] + proto::TILE_N_ROWS - 1) >> 5) * kp.n_units * kp.unit_bytes &&
                     (!proto::is_kquant(proto::tiled_type(int32_t(src->type))) || kp.units_per_block % proto::KQUANT_TILES == 0)
               : kp.units_per_block == 1 && kp.n_inputs == proto::htp_matmul_flat_block_transfers(src->type) &&
                     kp.unit_bytes == proto::htp_matmul_flat_block_bytes(src->type) &&
                     kp.unit_slot >= (is_staged_flat(src->type) ? proto::htp_matmul_flat_block_vectors(src->type) * 128
                                                                : proto::tile_slot_size(proto::tiled_type(int32_t(src->type)))));
    return units_ok && kp.n_threads >= 1 && kp.n_threads <= octx->n_threads && kp.n_slots >= 2 &&
           kp.n_slots <= proto::HTP_GET_ROWS_Q_MAX_SLOTS && kp.n_slots * (kp.n_inputs + 1) <= proto::HTP_DMA_QUEUE_CAPACITY &&
           kp.rows_per_thread >= 1 && eltwise_walk_fits(dst, kp.div_ne1, kp.div_ne2) &&
           kp.vtcm_size == uint64_t(kp.n_threads) * kp.n_slots * (kp.in_slot + kp.out_slot) &&
           units_row_of(src->type, tiled) != nullptr && proto::htp_get_rows_q_layout_valid(*src, ids, *dst, kp.n_units);
}

uint32_t op_get_rows_q(htp_op_context * octx) {
    get_rows_q_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx      = octx;
    job.src       = octx->src[0];
    job.ids       = octx->src[1];
    job.dst       = octx->dst[0];
    job.units_row = units_row_of(job.src->type, job.kp.tiled != 0);
    job.row_start       = 0;
    job.nrows           = uint32_t(htp_tensor_nrows(job.dst));
    job.rows_per_thread = job.kp.rows_per_thread;
    if (octx->mdev->count > 1) {
        // The spec's row partition of dst (whole rows on 128-byte lines, or device 0 alone), each
        // device's rows then split over its threads afresh.
        uint32_t rows_per_chunk = 0;
        htp_tensor_mdev_rows_per_chunk(job.dst, 4, job.dst->ne[0] * 4, &rows_per_chunk);
        const htp_tensor_mdev_range part = htp_tensor_mdev_partition(job.nrows, rows_per_chunk, octx->mdev->idx,
                                                                     octx->mdev->count, &octx->mdev->count_div);
        job.row_start       = part.start;
        job.nrows           = part.count;
        job.rows_per_thread = ceil_div_small(part.count, job.kp.n_threads);
    }
    if (job.nrows == 0) {
        return proto::HTP_STATUS_OK;
    }
    vtcm_arena vtcm(octx->vtcm_base, octx->vtcm_size);
    job.vtcm = vtcm.take(job.kp.vtcm_size);
    if (!vtcm.ok()) {
        return proto::HTP_STATUS_VTCM_TOO_SMALL;
    }
    work_queue_run(octx->work, get_rows_q_thread, &job, job.kp.n_threads);
    return job.bad_id ? proto::HTP_STATUS_INVAL_PARAMS : proto::HTP_STATUS_OK;
}

} // namespace hexnpu::htp
