// MUL_MAT on HVX (proto/htp-matmul.h): dst = src1 · src0ᵀ for weights of the twelve tiled types,
// tiled or flat (the per-type tile kernels: hvx-tile-dot.h).
// Per group of activation rows: the threads quantize the rows into the VTCM act area
// (HVX_A_QUANT), then each thread streams the weight tiles of its 32-row strips DDR -> DMA -> VTCM
// through the shared pipeline (stream-pipeline.h) and accumulates every strip's 32 x act_rows
// results in VTCM; a strip's last block writes them back by DMA.
//
// Flat weights (a plain HTPn buffer, a test tensor, a view) are gathered by the DMA itself
// (proto/htp-matmul.h). The 32-element block types: a tile per block, into the tile layout — for
// each column pair (Q8_0) or quant byte (4-bit types) one 2-D transfer takes that byte pair / byte of
// all 32 rows, and one more the rows' scales. A flat 4-bit byte j holds elements j and j + 16 where a
// tile byte holds 2cp and 2cp + 1, so for those the activations are quantized with their elements in
// that order instead (the integer sums match either way). Q1_0, Q2_0 and the K-quants: a flat block
// per DMA block, staged in vrmpy order, their scales decoded by HVX (hvx-tile-dot.h, flat_*); flat
// Q1_0 and Q2_0 bytes hold consecutive elements bit plane by bit plane, so their activations are
// permuted too (act_order).
#include "hvx-quant-act.h"
#include "hvx-tile-dot.h"
#include "matmul-flat-dma.h"
#include "matmul-job.h"
#include "ops.h"
#include "proto/htp-matmul.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::htp_matmul_kparams;
using proto::htp_tensor;

// Bytes of one flat weight row.
uint64_t flat_row_bytes(const htp_matmul_kparams & kp) {
    return uint64_t(kp.n_k_blocks >> flat_tiles_log2(kp.wtype)) * flat_block_bytes(kp.wtype);
}

flat_weights flat_weights_of(const mm_job & job, dma_addr_t w_base) { return {job.kp.wtype, w_base, job.src0->nb[1]}; }

const HVX_Vector * act_block(const mm_job & job, uint32_t j, uint32_t kt) {
    return reinterpret_cast<const HVX_Vector *>(act_row(job, j) + size_t(kt) * proto::HTP_MM_ACT_BLOCK_BYTES);
}

// ---- activations

// One block (fp32 at x) in Order into the act area at out. Not inlined into the row loop: the
// permutation's constants (q2_0_codes: a predicate) would live across the quantizer's call, which
// clobbers every vector register, and be spilled and reloaded once per block.
template <act_order Order> __attribute__((noinline)) void quantize_block(const HVX_Vector * x, HVX_Vector * out) {
    hvx_quantize_act_block(in_order<Order>(*x), out);
}
// A row's n blocks (fp32 in x) into the act area at out.
template <act_order Order> __attribute__((noinline)) void quantize_row(const HVX_Vector * x, HVX_Vector * out, uint32_t n) {
    for (uint32_t kt = 0; kt < n; ++kt) {
        quantize_block<Order>(x + kt, out + kt * proto::HTP_MM_ACT_VECTORS);
    }
}
void quantize_row(act_order order, const HVX_Vector * x, HVX_Vector * out, uint32_t n) {
    switch (order) {
        case act_order::nibbles: return quantize_row<act_order::nibbles>(x, out, n);
        case act_order::q1_0_bits: return quantize_row<act_order::q1_0_bits>(x, out, n);
        case act_order::q2_0_codes: return quantize_row<act_order::q2_0_codes>(x, out, n);
        default: return quantize_row<act_order::natural>(x, out, n);
    }
}

void quantize_thread(uint32_t n, uint32_t i, void * data) {
    const mm_job &  job   = *static_cast<const mm_job *>(data);
    const act_order order = act_order_of(job.kp.wtype, job.tiled);
    for_each_act_row(job, n, i, job.kp.n_k_blocks, [&](uint32_t j, const HVX_Vector * x) {
        quantize_row(order, x, reinterpret_cast<HVX_Vector *>(act_row(job, j)), job.kp.n_k_blocks);
        trace_event_stop(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_A_QUANT, trace_info(job.row0 + j));
    });
}

// ---- weights

void push_tiled_block(const mm_job & job, dma_queue * q, uint8_t * slot, dma_addr_t w_base, const mm_block & b) {
    const htp_matmul_kparams & kp     = job.kp;
    const uint32_t             offset =
        job.w_offset + (b.row * (kp.n_k_blocks >> kp.tile_shift) + (b.kt0 >> kp.tile_shift)) * kp.tile_size;
    dma_queue_push_ddr_to_vtcm(q, dma_addr_of(slot), dma_addr_at(w_base, offset), kp.slot_size, kp.tile_size,
                               kp.tile_size, b.ntiles >> kp.tile_shift, trace_info(b.row));
}

// The DMA block's flat blocks (htp_matmul_flat_group of them, each its staged vectors after the
// previous one's), a block past the row's end replaced by tokens so that every block pushes the
// same count of entries.
void push_flat_staged_block(const mm_job & job, dma_queue * q, uint8_t * slot, dma_addr_t w_base, const mm_block & b) {
    const htp_matmul_kparams & kp       = job.kp;
    const uint32_t             per      = proto::htp_matmul_flat_block_transfers(kp.wtype);
    const uint32_t             vectors  = proto::htp_matmul_flat_block_vectors(kp.wtype);
    const uint32_t             present  = b.ntiles >> flat_tiles_log2(kp.wtype);
    const uint32_t             row_base = job.w_offset + b.row * proto::TILE_N_ROWS * job.src0->nb[1];
    const uint32_t             block0   = b.kt0 >> flat_tiles_log2(kp.wtype);
    for (uint32_t f = 0; f < proto::htp_matmul_flat_group(kp.wtype); ++f) {
        uint8_t * staging = slot + f * vectors * 128;
        if (f < present) {
            push_flat_staged(q, staging, flat_weights_of(job, w_base), strip_rows(kp, b.row),
                             row_base + (block0 + f) * flat_block_bytes(kp.wtype), trace_info(b.row));
            continue;
        }
        for (uint32_t t = 0; t < per; ++t) {
            dma_queue_push_token(q, staging, trace_info(b.row));
        }
    }
}

// ---- compute

// Activation block t's weights come from the slot (tiled weights) or from a staged flat block.
// A tile covers Tile::blocks activation blocks and its scales are read at its first; Q2_K reads its
// rows' d and -dmin once per super-block.
template <class Tile> struct slot_tiles {
    const uint8_t * slot;
    uint32_t        slot_size;
    HVX_Vector      group[2];
    void unpack(uint32_t t, HVX_Vector * w, HVX_Vector * sc) {
        constexpr uint32_t blocks = Tile::blocks;
        const uint8_t *    bytes  = slot + (t / blocks) * slot_size;
        const HVX_Vector * tile   = reinterpret_cast<const HVX_Vector *>(bytes);
        if constexpr (blocks > 1) {
            Tile::unpack(tile, t % blocks, w);
        } else {
            Tile::unpack(tile, w);
        }
        if constexpr (Tile::type == tile_q2_k::type) {
            if (t % proto::KQUANT_TILES == 0) {
                Tile::group(bytes, slot_size, group);
            }
            Tile::scales(tile, group, sc);
        } else if (t % blocks == 0) {
            Tile::scales(tile, sc);
        }
    }
};
// Flat blocks staged one after the other (their vectors apart), of 1 << shift activation blocks each.
template <class Flat> struct staged_tiles {
    const HVX_Vector * staged;
    uint32_t           vectors, shift;
    void unpack(uint32_t t, HVX_Vector * w, HVX_Vector * sc) const {
        const HVX_Vector * block = staged + (t >> shift) * vectors;
        const uint32_t     sub   = t & ((1u << shift) - 1);
        Flat::unpack(block, sub, w);
        Flat::scales(block, sub, sc);
    }
};

// The block's tiles into the strip's sums acc.
template <class Tile, class Source>
void compute_tiles(const mm_job & job, const mm_block & b, HVX_Vector * acc, Source source) {
    HVX_Vector sc[4] = {};  // set at each tile's first block
    for (uint32_t t = 0; t < b.ntiles; ++t) {
        HVX_Vector w[8];
        source.unpack(t, w, sc);
        for (uint32_t j = 0; j < job.nrows; ++j) {
            acc[j] = Tile::accumulate(acc[j], w, sc, act_block(job, j, b.kt0 + t));
        }
    }
}

template <class Tile> void compute_block(const mm_job & job, const uint8_t * slot, const mm_block & b, HVX_Vector * acc) {
    compute_tiles<Tile>(job, b, acc, slot_tiles<Tile>{slot, job.kp.slot_size, {}});
}
template <class Flat>
void compute_flat_block(const mm_job & job, const uint8_t * slot, const mm_block & b, HVX_Vector * acc) {
    constexpr uint32_t vectors = proto::htp_matmul_flat_block_vectors(Flat::type);
    if constexpr (Flat::type == flat_q5_0::type || Flat::type == flat_q5_1::type) {
        // The slot is this block's own after its pop: the records become the staged vectors.
        HVX_Vector *   staged  = reinterpret_cast<HVX_Vector *>(const_cast<uint8_t *>(slot));
        const uint32_t present = b.ntiles >> flat_tiles_log2(Flat::type);
        for (uint32_t f = 0; f < present; ++f) {
            transpose_q5_records(staged + f * vectors);
        }
    }
    compute_tiles<Flat>(job, b, acc,
                        staged_tiles<Flat>{reinterpret_cast<const HVX_Vector *>(slot), vectors, flat_tiles_log2(Flat::type)});
}

using block_fn = void (*)(const mm_job &, const uint8_t *, const mm_block &, HVX_Vector *);

block_fn tiled_kernel(uint32_t type) {
    switch (type) {
        case tile_q8_0::type: return compute_block<tile_q8_0>;
        case tile_q4_0::type: return compute_block<tile_q4_0>;
        case tile_q4_1::type: return compute_block<tile_q4_1>;
        case tile_iq4_nl::type: return compute_block<tile_iq4_nl>;
        case tile_mxfp4::type: return compute_block<tile_mxfp4>;
        case tile_q1_0::type: return compute_block<tile_q1_0>;
        case tile_q2_0::type: return compute_block<tile_q2_0>;
        case tile_q2_k::type: return compute_block<tile_q2_k>;
        case tile_q4_k::type: return compute_block<tile_q4_k>;
        case tile_q5_k::type: return compute_block<tile_q5_k>;
        case tile_q3_k::type: return compute_block<tile_q3_k>;
        default: return compute_block<tile_q6_k>;
    }
}

// Flat weights: the block-32 types are gathered into the tile layout, the others staged.
block_fn flat_kernel(uint32_t type) {
    switch (type) {
        case tile_q1_0::type: return compute_flat_block<flat_q1_0>;
        case tile_q2_0::type: return compute_flat_block<flat_q2_0>;
        case tile_q2_k::type: return compute_flat_block<flat_q2_k>;
        case flat_q5_0::type: return compute_flat_block<flat_q5_0>;
        case flat_q5_1::type: return compute_flat_block<flat_q5_1>;
        case tile_q4_k::type: return compute_flat_block<flat_q4_k>;
        case tile_q5_k::type: return compute_flat_block<flat_q5_k>;
        case tile_q3_k::type: return compute_flat_block<flat_q3_k>;
        case tile_q6_k::type: return compute_flat_block<flat_q6_k>;
        default: return tiled_kernel(type);
    }
}

void dot_thread(uint32_t, uint32_t i, void * data) {
    const mm_job &             job    = *static_cast<const mm_job *>(data);
    const htp_matmul_kparams & kp     = job.kp;
    dma_queue *                q      = &job.octx->dma[i];
    const dma_addr_t           w_base = htp_tensor_dma_addr(job.octx->plat, job.src0);
    const block_fn             kernel = job.tiled ? tiled_kernel(kp.wtype) : flat_kernel(kp.wtype);
    auto compute = [&](uint32_t k, const mm_block & b, HVX_Vector * acc) { kernel(job, weight_slot(job, i, k), b, acc); };
    if (job.tiled) {
        stream_strips(job, i, kp.tiles_per_block << kp.tile_shift, 1,
                      [&](uint32_t k, const mm_block & b) { push_tiled_block(job, q, weight_slot(job, i, k), w_base, b); },
                      compute);
    } else {
        const bool staged = is_staged_flat(kp.wtype);
        stream_strips(job, i, proto::htp_matmul_flat_group(kp.wtype) * proto::htp_matmul_flat_tiles(kp.wtype),
                      proto::htp_matmul_flat_transfers(kp.wtype),
                      [&](uint32_t k, const mm_block & b) {
                          if (staged) {
                              push_flat_staged_block(job, q, weight_slot(job, i, k), w_base, b);
                          } else {
                              const uint32_t first = job.w_offset + b.row * proto::TILE_N_ROWS * job.src0->nb[1] +
                                                     b.kt0 * flat_block_bytes(kp.wtype);
                              push_flat_tile(q, weight_slot(job, i, k), flat_weights_of(job, w_base),
                                             strip_rows(kp, b.row), first, trace_info(b.row));
                          }
                      },
                      compute);
    }
}

// The quantized plan's own fields, and the weights' last byte (tiled: the matrices' tiles; flat:
// rows of k / 32 blocks) in *w_bytes.
bool quant_plan_ok(const htp_op_context * octx, const htp_matmul_kparams & kp, uint64_t * w_bytes) {
    const htp_tensor * src0  = octx->src[0];
    const bool         tiled = (src0->flags & proto::HTP_TENSOR_TILED) != 0;
    if (!proto::htp_matmul_weight_type(kp.wtype) || (tiled && proto::htp_matmul_flat_only_weight(kp.wtype))) {
        return false;
    }
    const proto::tiled_type tt = proto::tiled_type(int32_t(kp.wtype));
    *w_bytes = tiled ? uint64_t(src0->ne[2]) * src0->ne[3] * kp.w_slice_bytes
                     : uint64_t(src0->ne[2] - 1) * src0->nb[2] + uint64_t(src0->ne[3] - 1) * src0->nb[3] +
                           uint64_t(kp.n - 1) * src0->nb[1] + flat_row_bytes(kp);
    return kp.k % proto::htp_matmul_block_elems(kp.wtype) == 0 && kp.tile_shift == proto::htp_matmul_tile_shift(kp.wtype) &&
           (tt != proto::tiled_type::q2_K || kp.tiles_per_block % proto::KQUANT_TILES == 0) &&
           kp.n_k_blocks * proto::TILE_N_COLS == kp.k && kp.tile_size == proto::tile_size(tt) &&
           kp.slot_size == proto::tile_slot_size(tt) && kp.act_row_bytes == kp.n_k_blocks * proto::HTP_MM_ACT_BLOCK_BYTES &&
           kp.slot_stride >= uint64_t(kp.tiles_per_block) * kp.slot_size &&
           kp.slot_stride >= proto::htp_matmul_flat_staged_bytes(kp.wtype) &&
           kp.w_slice_bytes == uint64_t(kp.n_strips) * (kp.n_k_blocks >> kp.tile_shift) * kp.tile_size;
}

htp_matmul_kparams kparams_of(const htp_op_context * octx) {
    htp_matmul_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    return kp;
}

} // namespace

bool guard_matmul(const htp_op_context * octx) {
    const htp_matmul_kparams kp = kparams_of(octx);
    if (proto::htp_matmul_float_weight(kp.wtype)) {
        return guard_matmul_float(octx, false);
    }
    uint64_t w_bytes = 0;
    return quant_plan_ok(octx, kp, &w_bytes) && guard_matmul_plan(octx, kp, w_bytes);
}

bool guard_matmul_id(const htp_op_context * octx) {
    const htp_matmul_kparams kp = kparams_of(octx);
    if (proto::htp_matmul_float_weight(kp.wtype)) {
        return guard_matmul_float(octx, true);
    }
    uint64_t w_bytes = 0;
    return quant_plan_ok(octx, kp, &w_bytes) && guard_matmul_id_plan(octx, kp, w_bytes);
}

uint32_t op_matmul(htp_op_context * octx) {
    if (proto::htp_matmul_float_weight(kparams_of(octx).wtype)) {
        return op_matmul_float(octx, false);
    }
    return run_matmul_job(octx, quantize_thread, dot_thread);
}

uint32_t op_matmul_id(htp_op_context * octx) {
    if (proto::htp_matmul_float_weight(kparams_of(octx).wtype)) {
        return op_matmul_float(octx, true);
    }
    return run_matmul_id_job(octx, quantize_thread, dot_thread);
}

} // namespace hexnpu::htp
