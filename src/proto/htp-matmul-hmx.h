// MUL_MAT on the HMX unit (dst = src1 · src0ᵀ, GGML's mul_mat) for prompt-sized activations: the
// kernel_params, the VTCM layout and the host-side planner; both sides compile this header. The
// host picks this kernel (HTP_OP_MUL_MAT_HMX) over the HVX one (proto/htp-matmul.h) when the session
// has HMX and the op has more than HTP_MM_HMX_MIN_ROWS activation rows; the kernel
// (htp/ops/matmul-hmx-ops.cpp) re-checks the plan field by field.
//
// Shapes: src0 weights [K, N, ne02, ne03] of the twelve tiled types, tiled (HTP_TENSOR_TILED,
// proto/tile-formats.h) or flat, or flat Q5_0 / Q5_1 (flat weights come by the HVX matmul's DMA
// gathers, htp/ops/matmul-flat-dma.h: a flat block per DMA block), or F32 / F16 / BF16 rows with K
// a multiple of 32 (32 columns of 32 rows per DMA block, 4 bytes of every row per transfer); src1 F32 or F16 [K, M, ne12, ne13], rows contiguous; dst F32 [N, M, ne12,
// ne13], rows contiguous; GGML's broadcast ne12 = r2 ne02, ne13 = r3 ne03.
//
// Work: per (i12, i13) slice and chunk of m_tiles * 32 activation rows, the HVX threads convert the
// rows into fp16 HMX activation tiles (m_tiles row tiles, each a run of k_tiles tiles), every row
// scaled by a power of two 2^-e that brings its largest magnitude into [0.5, 1), so no activation
// overflows fp16. Then the strips (32 weight rows = 32 output columns) go in steps of n_chunk:
// HVX threads expand step s + 1's weight tiles into fp16 HMX weight tiles (one expanded buffer
// per step parity) while the HMX queue thread multiplies step s (per strip and row tile: runs of at
// most HMX_MAX_RUN_TILES K tiles into the accumulator, one store per output tile) and the HVX
// threads turn step s - 1's fp16 output tiles into F32 rows (times 2^e of the row and the strip's
// column factor) written back by DMA. A strip's output column scale in the HMX scale/bias block is
// a power of two that keeps |C| below 2^15: |C[m][n]| <= sum_k |w[k][n]| (|activations| < 1), the
// column's L1 norm, which the expansion sums; the epilogue multiplies the inverse back (exact).
//
// VTCM (offsets from the op's VTCM start, tiles 2048-aligned; htp_mm_hmx_layout):
//   act       m_tiles * k_tiles tiles, row tile t's run at tile t * k_tiles
//   wexp[2]   n_chunk * k_tiles tiles each, strip j's run at tile j * k_tiles
//   out[2]    n_chunk * m_tiles tiles each, (strip j, row tile t) at tile j * m_tiles + t
//   sb[3]     n_chunk scale/bias blocks (256 bytes) each: step s uses sb[s % 3]
//   col[3]    n_chunk * 3 vectors each: the strip's column factors 2^e (fp32), its rows' L1 sums
//             and largest magnitudes (the expansion's row stats)
//   rows      m_tiles * 32 vectors: row r's factor 2^e (fp32) in every lane
//   threads   n_threads areas of thread_bytes: two weight DMA slots of tiles_per_block tiles, or
//             the staging of two activation rows, or two F32 output tiles
#pragma once

#include "proto/fastdiv.h"
#include "proto/htp-matmul.h"
#include "proto/htp-msg.h"
#include "proto/tile-formats.h"

#include <stdint.h>

namespace hexnpu::proto {

inline constexpr uint32_t HTP_MM_HMX_MIN_ROWS   = 4;     // more activation rows than this take HMX
inline constexpr uint32_t HTP_MM_HMX_TILE_BYTES = 2048;  // one fp16 32x32 HMX tile
inline constexpr uint32_t HTP_MM_HMX_MAX_M_TILES = 16;   // row tiles per chunk (512 rows)
inline constexpr uint32_t HTP_MM_HMX_MAX_N_CHUNK = 4;    // strips per pipeline step
inline constexpr uint32_t HTP_MM_HMX_BLOCK_BYTES = 32768;  // weight bytes per DMA block aimed at

struct htp_matmul_hmx_kparams {
    uint32_t wtype;            // GGML type of src0 (a tiled type)
    uint32_t k;                // ne00
    uint32_t n;                // ne01
    uint32_t k_tiles;          // k / 32: HMX tiles along K
    uint32_t tile_shift;       // log2 of HMX tiles per weight tile (Q1_0: 2, Q2_0: 1, else 0)
    uint32_t n_strips;         // ceil(n / 32)
    uint32_t flat;             // 1: flat weights (rows nb[1] apart), one flat block per DMA block
    uint32_t tile_size;        // bytes of a weight tile in DDR (flat: of a flat block)
    uint32_t slot_size;        // its VTCM slot: the tile rounded up to 128 (flat: the block's staging)
    uint32_t tiles_per_block;  // weight tiles per DMA block (K-quants: whole super-blocks; flat: 1)
    uint32_t m_tiles;          // activation row tiles per chunk, 1..HTP_MM_HMX_MAX_M_TILES
    uint32_t n_chunk;          // strips per pipeline step, 1..HTP_MM_HMX_MAX_N_CHUNK
    uint32_t n_threads;        // HVX threads, <= the session's
    uint32_t thread_bytes;     // one thread's VTCM area, a multiple of 128
    uint32_t r2, r3;           // ne12 / ne02, ne13 / ne03
    uint32_t w_slice_bytes;    // bytes of one tiled weight matrix
    uint32_t vtcm_size;        // the whole layout
    uint32_t act_buffers;      // activation row pairs a thread stages: 2 (the next lands while one is
                               // prepared) or 1 (a VTCM too small for two)
    uint32_t min_expert_rows;  // MUL_MAT_ID: experts routed fewer rows were the HVX op's before it (0: none)
};
static_assert(sizeof(htp_matmul_hmx_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// Byte offsets of the layout's areas (see the top of this file).
struct htp_mm_hmx_layout {
    uint64_t act, wexp[2], out[2], sb[3], col[3], rows, threads, end;
};

constexpr htp_mm_hmx_layout htp_mm_hmx_layout_of(const htp_matmul_hmx_kparams & p) {
    const uint64_t    tile = HTP_MM_HMX_TILE_BYTES;
    htp_mm_hmx_layout l{};
    uint64_t          at = 0;
    l.act                = at;
    at += uint64_t(p.m_tiles) * p.k_tiles * tile;
    for (uint64_t & w : l.wexp) {
        w = at;
        at += uint64_t(p.n_chunk) * p.k_tiles * tile;
    }
    for (uint64_t & o : l.out) {
        o = at;
        at += uint64_t(p.n_chunk) * p.m_tiles * tile;
    }
    for (uint64_t & s : l.sb) {
        s = at;
        at += uint64_t(p.n_chunk) * 256;
    }
    for (uint64_t & c : l.col) {
        c = at;
        at += uint64_t(p.n_chunk) * 3 * 128;
    }
    l.rows = at;
    at += uint64_t(p.m_tiles) * 32 * 128;
    l.threads = at;
    at += uint64_t(p.n_threads) * p.thread_bytes;
    l.end = at;
    return l;
}

// A thread's area: two weight slots of tiles_per_block tiles, the staging of two activation rows
// (k floats each, and a vector more for an F16 row landing past its half), or two F32 output tiles.
constexpr uint64_t htp_mm_hmx_thread_bytes(const htp_matmul_hmx_kparams & p) {
    const uint64_t slots = 2 * uint64_t(p.tiles_per_block) * p.slot_size;
    const uint64_t rows  = 2 * uint64_t(p.act_buffers) * (uint64_t(p.k_tiles) + 1) * 128;
    const uint64_t out   = 2 * 32 * 128;
    const uint64_t most  = slots > rows ? (slots > out ? slots : out) : (rows > out ? rows : out);
    return (most + 127) / 128 * 128;
}

// Types, layout and strides of the operands, without divisions (the kernel's guard checks these
// and the plan's multiples; the host's planner also the divisibility below).
constexpr bool htp_matmul_hmx_operands_ok(const htp_tensor & src0, const htp_tensor & src1, const htp_tensor & dst) {
    const bool tiled = (src0.flags & HTP_TENSOR_TILED) != 0;
    const bool fw    = htp_matmul_float_weight(src0.type);
    if (!(is_tiled_type_id(int32_t(src0.type)) || (!tiled && (htp_matmul_flat_only_weight(src0.type) || fw))) ||
        (src1.type != HTP_TYPE_F32 && src1.type != HTP_TYPE_F16) || dst.type != HTP_TYPE_F32 || (fw && src0.nb[0] != (src0.type == HTP_TYPE_F32 ? 4u : 2u))) {
        return false;
    }
    const uint32_t k = src0.ne[0];
    if (k == 0 || k > (UINT32_MAX / 64) || src1.ne[0] != k || src0.ne[2] == 0 || src0.ne[3] == 0) {
        return false;
    }
    if (dst.ne[0] != src0.ne[1] || dst.ne[1] != src1.ne[1] || dst.ne[2] != src1.ne[2] || dst.ne[3] != src1.ne[3]) {
        return false;
    }
    const uint32_t a_size = src1.type == HTP_TYPE_F32 ? 4 : 2;
    return src1.nb[0] == a_size && dst.nb[0] == 4 && src1.nb[1] >= uint64_t(k) * a_size &&
           dst.nb[1] >= uint64_t(dst.ne[0]) * 4;
}

// The shapes the HMX matmul takes: K whole weight tiles, GGML's broadcast over dims 2 and 3.
constexpr bool htp_matmul_hmx_shapes_supported(const htp_tensor & src0, const htp_tensor & src1, const htp_tensor & dst) {
    const uint32_t block = htp_matmul_float_weight(src0.type) ? TILE_N_COLS : htp_matmul_block_elems(src0.type);
    return htp_matmul_hmx_operands_ok(src0, src1, dst) && src0.ne[0] % block == 0 &&
           src1.ne[2] % src0.ne[2] == 0 && src1.ne[3] % src0.ne[3] == 0;
}

// The plan on at most n_threads threads within vtcm_size bytes; refused when the shapes are not
// taken or even the smallest plan (one row tile, one strip per step, one tile per DMA block) does
// not fit. Row tiles per chunk come first (each expanded weight tile is multiplied by all of them).
constexpr htp_verdict prepare_matmul_hmx_kparams(const htp_tensor & src0, const htp_tensor & src1,
                                                 const htp_tensor & dst, uint32_t n_threads, uint32_t vtcm_size,
                                                 htp_matmul_hmx_kparams * out) {
    if (!htp_matmul_hmx_shapes_supported(src0, src1, dst)) {
        return (src0.flags & HTP_TENSOR_TILED) != 0 && !is_tiled_type_id(int32_t(src0.type))
                   ? htp_refuse("the HMX matmul has no kernel for this tiled type")
                   : htp_matmul_refusal(src0, src1, dst);
    }
    if (n_threads == 0 || n_threads > HTP_MAX_NTHREADS) {
        return htp_refuse("the session's thread count is out of range");
    }
    const tiled_type       t = tiled_type(int32_t(src0.type));
    const bool             flat = (src0.flags & HTP_TENSOR_TILED) == 0;
    htp_matmul_hmx_kparams p{};
    p.wtype      = src0.type;
    p.k          = src0.ne[0];
    p.n          = src0.ne[1];
    p.k_tiles    = p.k / TILE_N_COLS;
    p.tile_shift = t == tiled_type::q1_0 ? 2 : t == tiled_type::q2_0 ? 1 : 0;
    p.n_strips   = (p.n + TILE_N_ROWS - 1) / TILE_N_ROWS;
    p.flat       = flat ? 1 : 0;
    if (htp_matmul_float_weight(src0.type)) {
        // 32 columns of 32 rows per DMA block, a vector per 4 bytes of every row.
        p.tile_shift = 0;
        p.tile_size  = TILE_N_COLS * (src0.type == HTP_TYPE_F32 ? 4 : 2);
        p.slot_size  = p.tile_size * 32;
    } else if (flat) {
        // A flat block per DMA block: gathered into a tile (the block-32 types) or staged.
        const bool staged = htp_matmul_flat_tiles(src0.type) > 1 || htp_matmul_flat_only_weight(src0.type);
        p.tile_shift      = 0;
        p.tile_size       = htp_matmul_flat_block_bytes(src0.type);
        p.slot_size       = staged ? htp_matmul_flat_block_vectors(src0.type) * 128 : tile_slot_size(t);
    } else {
        p.tile_size = tile_size(t);
        p.slot_size = tile_slot_size(t);
    }
    p.r2         = src1.ne[2] / src0.ne[2];
    p.r3         = src1.ne[3] / src0.ne[3];
    const uint64_t w_tiles = p.k_tiles >> p.tile_shift;  // weight tiles per strip
    const uint64_t wslice  = flat ? 0 : uint64_t(p.n_strips) * w_tiles * p.tile_size;
    if (wslice > UINT32_MAX) {
        return htp_refuse("a weight matrix of 4 GiB or more");
    }
    p.w_slice_bytes   = uint32_t(wslice);
    p.n_threads       = n_threads;
    const uint32_t unit   = !flat && is_kquant(t) ? KQUANT_TILES : 1;  // Q2_K's scales need whole super-blocks
    const uint32_t target = HTP_MM_HMX_BLOCK_BYTES / p.slot_size / unit * unit;
    p.tiles_per_block     = flat ? 1 : target < unit ? unit : (target < w_tiles ? target : uint32_t(w_tiles));
    const uint32_t m_rows = src1.ne[1];
    const uint32_t m_need = (m_rows + 31) / 32;
    p.m_tiles             = m_need < HTP_MM_HMX_MAX_M_TILES ? m_need : HTP_MM_HMX_MAX_M_TILES;
    // Enough steps for the pipeline to overlap: a quarter of the strips per step at most.
    const uint32_t quarter = (p.n_strips + 3) / 4;
    p.n_chunk              = quarter < HTP_MM_HMX_MAX_N_CHUNK ? (quarter == 0 ? 1 : quarter) : HTP_MM_HMX_MAX_N_CHUNK;
    p.act_buffers          = 2;
    for (;;) {
        p.thread_bytes = uint32_t(htp_mm_hmx_thread_bytes(p));
        const uint64_t end = htp_mm_hmx_layout_of(p).end;
        if (end <= vtcm_size) {
            p.vtcm_size = uint32_t(end);
            break;
        }
        if (p.act_buffers > 1) {
            p.act_buffers = 1;  // no overlap of the row landing: cheaper than fewer rows or strips per step
        } else if (p.n_chunk > 1) {
            --p.n_chunk;
        } else if (p.m_tiles > 1) {
            --p.m_tiles;
        } else if (p.tiles_per_block > unit) {
            p.tiles_per_block = p.tiles_per_block / 2 / unit * unit < unit ? unit : p.tiles_per_block / 2 / unit * unit;
        } else {
            return htp_refuse(HTP_REFUSED_VTCM);
        }
    }
    *out = p;
    return HTP_TAKEN;
}

inline htp_verdict prepare_matmul_hmx_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_matmul_hmx_kparams kp{};
    return htp_store_kparams(
        prepare_matmul_hmx_kparams(*a.src[0], *a.src[1], *a.dst, a.n_threads, a.vtcm_size, &kp), kp, kparams);
}

// MUL_MAT_ID on HMX (proto/htp-matmul.h's shapes: src0 the experts' weights [K, N, n_expert], ids
// I32 [n_used, n_tokens]): per expert, the (slot, token) rows routed to it in chunks, as a MUL_MAT of
// that expert's matrix, activation rows gathered and output rows scattered one DMA transfer each.
// The plan is MUL_MAT's for one expert's matrix and all n_used * n_tokens rows.
constexpr htp_verdict prepare_matmul_id_hmx_kparams(const htp_tensor & src0, const htp_tensor & src1,
                                                    const htp_tensor & ids, const htp_tensor & dst, uint32_t n_threads,
                                                    uint32_t vtcm_size, htp_matmul_hmx_kparams * out) {
    if (!htp_matmul_id_shapes_supported(src0, src1, ids, dst) || uint64_t(ids.ne[0]) * ids.ne[1] > UINT32_MAX) {
        return htp_refuse("the NPU takes I32 expert ids [n_used, n_tokens] in order, activations of one row or "
                          "n_used rows per token");
    }
    const htp_matmul_id_view v = htp_matmul_id_as_2d(src0, src1, ids, dst);
    return prepare_matmul_hmx_kparams(v.w, v.a, v.d, n_threads, vtcm_size, out);
}

inline htp_verdict prepare_matmul_id_hmx_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_matmul_hmx_kparams kp{};
    return htp_store_kparams(
        prepare_matmul_id_hmx_kparams(*a.src[0], *a.src[1], *a.src[2], *a.dst, a.n_threads, a.vtcm_size, &kp), kp,
        kparams);
}

} // namespace hexnpu::proto
