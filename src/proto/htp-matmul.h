// MUL_MAT on the NPU's HVX path (dst = src1 · src0ᵀ, GGML's mul_mat): the kernel_params, the VTCM
// layout and the host-side planner; both sides compile this header. The host's supports_op and op
// preparation call prepare_matmul_kparams; the kernel (htp/ops/matmul-ops.cpp) executes the plan.
//
// Shapes: src0 (weights) [K, N, ne02, ne03] of any of the twelve tiled types (Q4_0, Q4_1, Q8_0,
// IQ4_NL, MXFP4, Q1_0, Q2_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K), stored tiled (HTP_TENSOR_TILED:
// proto/tile-formats.h) or flat, or F32/F16/BF16 (flat, rows in order: matmul-float-ops.cpp);
// src1 (activations) F32 or F16 [K, M, ne12, ne13] with contiguous rows; dst F32 [N, M, ne12,
// ne13]. K is a multiple of the weight type's block (any K for float weights). As GGML broadcasts,
// ne12 = r2 * ne02 and ne13 = r3 * ne03: activation slice (i12, i13) multiplies weight matrix
// (i12 / r2, i13 / r3).
//
// Activations are quantized on the NPU, once per op, into VTCM (the "act area"), a group of at most
// act_rows rows of one (i12, i13) slice at a time. Per row and per 32-element block kt: eleven vectors
//   [0..7]  the block's int8 values, group g = elements 4g..4g+3 as one 32-bit word repeated in every
//           lane, so one vrmpy against a weight tile vector in vrmpy byte order (word lane r = four
//           consecutive k of weight row r) gives all 32 row partial sums;
//   [8]     the block's scale d as fp32 in every lane;
//   [9]     the sum of the block's int8 values in every lane (the offset term of Q4_1, Q4_K, Q5_K);
//   [10]    the sum of its first 16 int8 values in every lane (Q2_K's offsets per 16-element half).
// The scale: E is the least integer with amax <= 127 * 2^E and f = E - 1; m is the least of 1.125,
// 1.25, ..., 1.875, 2 (eighths) with amax <= 127 * m * 2^f; d = m * 2^f (exact), q =
// round-to-even(x * c) with c = fl(1/m) * 2^-f, clamped to [-127, 127]. No division on the NPU, one
// rounding in the product and one in q, so a scalar model reproduces q bit for bit; d wastes at most
// a factor 1.125 of the int8 range against GGML's amax / 127 (a power of two alone would waste up
// to 2). Blocks with E < -100 quantize to zero.
// Float weights multiply the activations unquantized: an act row is n_k_blocks fp32 vectors (K
// padded with zeros; for 16-bit weights each 64 elements' even ones, then their odd ones), a weight
// block 32 rows of tiles_per_block * 32 columns, slot_size bytes per row (tile_size per 32 columns).
//
// Weights stream DDR -> DMA -> VTCM per thread: thread i takes the 32-row strips [i * spt, (i+1) *
// spt) of the N rows; each strip's tiles come in blocks of up to tiles_per_block tiles
// (one 2-D transfer: a tile per row, slot_size apart in VTCM) through n_slots slots. Per thread:
//   slots:   n_slots slots slot_stride apart, each tiles_per_block tiles or a flat block's staged
//            vectors (also the staging of an activation row while it is prepared: htp_matmul_staging_bytes)
//   acc:     act_rows vectors, the fp32 sums of the strip in progress
//   out:     n_slots * act_rows vectors, a finished strip's results waiting for their writeback
//   wide:    F16/BF16 weights only: a block widened to fp32 once for all its activation rows
//            (32 rows of tiles_per_block vectors, htp_matmul_wide_bytes)
#pragma once

#include "proto/fastdiv.h"
#include "proto/htp-msg.h"
#include "proto/htp-prepare.h"
#include "proto/htp-types.h"
#include "proto/tile-formats.h"

#include <stdint.h>

namespace hexnpu::proto {

inline constexpr uint32_t HTP_MM_ACT_VECTORS     = 11;   // vectors per activation row and 32-block
inline constexpr uint32_t HTP_MM_ACT_BLOCK_BYTES = HTP_MM_ACT_VECTORS * 128;
inline constexpr uint32_t HTP_MM_MAX_SLOTS       = 4;
inline constexpr uint32_t HTP_MM_BLOCK_BYTES     = 32768;  // weight bytes per DMA block aimed at
inline constexpr uint32_t HTP_MM_MAX_ACT_ROWS    = 32;     // activation rows per group (weights stream once per group)
inline constexpr int32_t  HTP_MM_MIN_EXP         = -100;   // smaller blocks quantize to zero

struct htp_matmul_kparams {
    uint32_t wtype;            // GGML type of src0 (htp_matmul_weight_type)
    uint32_t k;                // ne00
    uint32_t n;                // ne01
    uint32_t n_k_blocks;       // k / 32: activation blocks, the kernel's unit along K
    uint32_t tile_shift;       // log2 of the activation blocks per weight tile (Q2_0: 1, Q1_0: 2, else 0)
    uint32_t n_strips;         // ceil(n / 32)
    uint32_t tile_size;        // bytes of a tile in DDR
    uint32_t slot_size;        // bytes of a tile's VTCM slot (tile_size rounded up to 128)
    uint32_t tiles_per_block;  // tiles per weight DMA block (tiled weights; Q2_K: whole super-blocks)
    uint32_t slot_stride;      // bytes between weight slots: tiles_per_block tiles or a flat block
    uint32_t n_slots;          // weight blocks in flight per thread, 2..HTP_MM_MAX_SLOTS
    uint32_t n_threads;        // <= the session's threads
    uint32_t strips_per_thread;
    uint32_t act_rows;         // activation rows per group, 1..HTP_MM_MAX_ACT_ROWS, <= ne11
    uint32_t act_row_bytes;    // n_k_blocks * HTP_MM_ACT_BLOCK_BYTES
    uint32_t thread_bytes;     // one thread's VTCM area (slots, acc, out), a multiple of 128
    uint32_t slots_bytes;      // of which the slots
    uint32_t vtcm_size;        // act area + n_threads * thread_bytes
    uint32_t r2, r3;           // ne12 / ne02, ne13 / ne03: activation slices per weight matrix
    uint32_t w_slice_bytes;    // bytes of one tiled weight matrix (n_strips * tiles per strip * tile_size)
    fastdiv_values div_threads; // n_threads: a device's share of the strips per thread (mdev)
    uint32_t max_expert_rows;   // MUL_MAT_ID: experts routed more rows are left to the HMX op after it (0: none)
};
static_assert(sizeof(htp_matmul_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// F32, F16 and BF16 weights (always flat) go to the float kernel (htp/ops/matmul-float-ops.cpp).
constexpr bool htp_matmul_float_weight(uint32_t type) { return type == HTP_TYPE_F32 || type == HTP_TYPE_F16 || type == HTP_TYPE_BF16; }

// Q5_0 and Q5_1 have no tiled format: the quantized kernel takes them flat only.
constexpr bool htp_matmul_flat_only_weight(uint32_t type) { return type == HTP_TYPE_Q5_0 || type == HTP_TYPE_Q5_1; }

// The weight types the kernels multiply: the twelve tiled types (tiled and flat), Q5_0/Q5_1 (flat)
// and the floats.
constexpr bool htp_matmul_weight_type(uint32_t type) {
    return is_tiled_type_id(int32_t(type)) || htp_matmul_flat_only_weight(type) || htp_matmul_float_weight(type);
}

// Elements of one flat block of the type along K (K is a multiple of it).
constexpr uint32_t htp_matmul_block_elems(uint32_t type) {
    return htp_matmul_float_weight(type) ? 1 : type == HTP_TYPE_Q1_0 ? 128 : type == HTP_TYPE_Q2_0 ? 64 : type >= HTP_TYPE_Q2_K && type <= HTP_TYPE_Q6_K ? 256 : 32;
}

// Bytes of one flat block of the type (htp_matmul_block_elems elements).
constexpr uint32_t htp_matmul_flat_block_bytes(uint32_t type) {
    switch (type) {
        case 8: return 34;
        case 3: return 20;
        case 39: return 17;
        case 10: return 84;
        case 6: return 22;
        case 7: return 24;
        case 11: return 110;
        case 12: return 144;
        case 13: return 176;
        case 14: return 210;
        default: return 18;  // Q4_0, IQ4_NL, Q1_0, Q2_0
    }
}

// Flat weights are gathered by the DMA engine, a block per 32-row strip:
//  Q4_0, Q4_1, IQ4_NL, MXFP4, Q8_0: one tile (32 columns) per block, into the tile layout: a 2-D transfer per quant
//              byte (Q4_x) or byte pair (Q8_0) of all 32 rows, one for the row scales;
//  Q1_0, Q2_0, Q2_K..Q6_K: one flat block (128, 64 or 256 columns) per block, 4 bytes of all 32
//              rows per transfer, so that each staged vector is already in vrmpy order (word lane
//              r = row r): Q1_0 and Q2_0 4 quant words and d; Q2_K 16 qs words, 4 scale words and
//              d|dmin; Q4_K 32 quant words + 4 header words (d|dmin, scales[0..11]); Q5_K those
//              and 8 qh words; Q6_K 32 ql words, 16 qh words, 4 scale words and d; Q3_K 16 qs
//              words, 8 hmask words, 3 scale words and d.
//  Q5_0, Q5_1: the 22- or 24-byte blocks whole, one transfer per block into 32-byte records per row
//              (Q5_0 2 bytes in, so that every field is word aligned), which HVX transposes into
//              the same vrmpy order: 4 quant words, the qh word and d (Q5_0: the high halfword;
//              Q5_1: d|m). Six times fewer transfers than word by word.
// Transfers of one flat block.
constexpr uint32_t htp_matmul_flat_block_transfers(uint32_t type) {
    switch (type) {
        case 41: case 42: return 5;
        case 6: case 7: return 1;
        case 10: return 21;
        case 11: return 28;
        case 12: return 36;
        case 13: return 44;
        case 14: return 53;
        case 0: case 1: case 30: return 1;  // the float kernel's weight rows
        default: return 17;
    }
}
// Staged vectors of one flat block: one per transfer, but the 8 of Q5_0/Q5_1's 32 records.
constexpr uint32_t htp_matmul_flat_block_vectors(uint32_t type) {
    return type == HTP_TYPE_Q5_0 || type == HTP_TYPE_Q5_1 ? 8 : htp_matmul_flat_block_transfers(type);
}
inline constexpr uint32_t HTP_MM_Q5_RECORD_BYTES = 32;
// Flat blocks per weight DMA block: the small staged blocks come several at a time (their transfers
// and one token per slot in flight must fit the DMA ring with 3 slots).
constexpr uint32_t htp_matmul_flat_group(uint32_t type) {
    return type == HTP_TYPE_Q1_0 || type == HTP_TYPE_Q2_0 ? 8 : type == HTP_TYPE_Q5_0 || type == HTP_TYPE_Q5_1 ? 6 : 1;
}
// DMA transfers per weight block (flat weights; float weights: one per block).
constexpr uint32_t htp_matmul_flat_transfers(uint32_t type) {
    return htp_matmul_flat_group(type) * htp_matmul_flat_block_transfers(type);
}
// Bytes of one DMA block's staging (flat weights).
constexpr uint32_t htp_matmul_flat_staged_bytes(uint32_t type) {
    return htp_matmul_flat_group(type) * htp_matmul_flat_block_vectors(type) * 128;
}

// log2 of the 32-column activation blocks per weight tile: Q1_0 tiles are 128 columns, Q2_0 64.
constexpr uint32_t htp_matmul_tile_shift(uint32_t type) { return type == HTP_TYPE_Q1_0 ? 2 : type == HTP_TYPE_Q2_0 ? 1 : 0; }

// Activation blocks per flat block.
constexpr uint32_t htp_matmul_flat_tiles(uint32_t type) { return htp_matmul_block_elems(type) / TILE_N_COLS; }

// A 16-bit float weight block widened to fp32 (the thread's "wide" area); 0 for other weights.
constexpr uint64_t htp_matmul_wide_bytes(const htp_matmul_kparams & p) {
    return p.wtype == HTP_TYPE_F16 || p.wtype == HTP_TYPE_BF16 ? uint64_t(TILE_N_ROWS) * p.tiles_per_block * 128 : 0;
}

// An activation row staged as fp32 vectors, one more for F16 rows landing past their half. A thread
// stages two (the next row lands while one is prepared).
constexpr uint64_t htp_matmul_staging_bytes(const htp_matmul_kparams & p) { return uint64_t(p.n_k_blocks + 1) * 128; }

constexpr uint64_t htp_matmul_vtcm_size(const htp_matmul_kparams & p) {
    return uint64_t(p.act_rows) * p.act_row_bytes + uint64_t(p.n_threads) * p.thread_bytes;
}

// The shapes the HVX matmul takes (both sides agree on them).
constexpr bool htp_matmul_shapes_supported(const htp_tensor & src0, const htp_tensor & src1, const htp_tensor & dst) {
    if (!htp_matmul_weight_type(src0.type) || (src1.type != HTP_TYPE_F32 && src1.type != HTP_TYPE_F16) || dst.type != HTP_TYPE_F32) {
        return false;
    }
    const uint32_t k = src0.ne[0];
    if (k == 0 || k % htp_matmul_block_elems(src0.type) != 0 || k > (UINT32_MAX / 4) || src1.ne[0] != k || src1.ne[2] % src0.ne[2] != 0 ||
        src1.ne[3] % src0.ne[3] != 0) {
        return false;
    }
    if (dst.ne[0] != src0.ne[1] || dst.ne[1] != src1.ne[1] || dst.ne[2] != src1.ne[2] || dst.ne[3] != src1.ne[3]) {
        return false;
    }
    // Activation, output and float weight rows: elements in order (rows may be padded, slices
    // anywhere; a float weight's rows too: a transposed view is not taken).
    const uint32_t a_size = src1.type == HTP_TYPE_F32 ? 4 : 2;
    const bool     w_rows = !htp_matmul_float_weight(src0.type) || src0.nb[0] == (src0.type == HTP_TYPE_F32 ? 4u : 2u);
    return w_rows && src1.nb[0] == a_size && dst.nb[0] == 4 && src1.nb[1] >= uint64_t(k) * a_size &&
           dst.nb[1] >= uint64_t(dst.ne[0]) * 4;
}

// Why htp_matmul_shapes_supported refuses the op (host only).
constexpr htp_verdict htp_matmul_refusal(const htp_tensor & src0, const htp_tensor & src1, const htp_tensor & dst) {
    if (!htp_matmul_weight_type(src0.type)) {
        return htp_refuse("the weight type has no NPU matmul kernel (the tiled types q4_0 q4_1 q8_0 iq4_nl mxfp4 "
                          "q1_0 q2_0 q2_K..q6_K, q5_0 q5_1 flat, and f32 f16 bf16)");
    }
    if ((src1.type != HTP_TYPE_F32 && src1.type != HTP_TYPE_F16) || dst.type != HTP_TYPE_F32) {
        return htp_refuse("the NPU matmul takes F32 or F16 activations and gives F32");
    }
    const uint32_t k = src0.ne[0];
    if (k == 0 || k % htp_matmul_block_elems(src0.type) != 0 || k > UINT32_MAX / 4 || src1.ne[0] != k) {
        return htp_refuse("k is not a multiple of the weight type's block");
    }
    if (src1.ne[2] % src0.ne[2] != 0 || src1.ne[3] % src0.ne[3] != 0) {
        return htp_refuse("the activations do not broadcast over the weight matrices");
    }
    return htp_refuse("weight, activation or output elements are not consecutive (a transposed view)");
}

// MUL_MAT_ID's writebacks are scattered, a transfer per row: every slot's inputs and outputs in
// flight must fit the DMA ring.
constexpr bool htp_matmul_id_ring_fits(const htp_matmul_kparams & p) {
    return p.n_slots * (htp_matmul_flat_transfers(p.wtype) + p.act_rows) <= HTP_DMA_QUEUE_CAPACITY;
}

// The plan for the op on at most n_threads threads within vtcm_size bytes of VTCM (scatter: for
// MUL_MAT_ID); refused when the shapes are not taken or even the smallest plan does not fit.
constexpr htp_verdict prepare_matmul_plan(const htp_tensor & src0, const htp_tensor & src1, const htp_tensor & dst,
                                          uint32_t n_threads, uint32_t vtcm_size, bool scatter,
                                          htp_matmul_kparams * out) {
    if (!htp_matmul_shapes_supported(src0, src1, dst)) {
        return htp_matmul_refusal(src0, src1, dst);
    }
    if (n_threads == 0 || n_threads > HTP_MAX_NTHREADS) {
        return htp_refuse("the session's thread count is out of range");
    }
    const tiled_type   t  = tiled_type(int32_t(src0.type));
    const bool         fw = htp_matmul_float_weight(src0.type);
    htp_matmul_kparams p{};
    p.wtype             = src0.type;
    p.k                 = src0.ne[0];
    p.n                 = src0.ne[1];
    p.n_k_blocks        = p.k / TILE_N_COLS;
    p.tile_shift        = htp_matmul_tile_shift(p.wtype);
    p.n_strips          = (p.n + TILE_N_ROWS - 1) / TILE_N_ROWS;
    if (fw) {
        // Float weights: a "tile" is 32 columns of one weight row; the activations are K rounded
        // up to whole vectors (16-bit weights: whole 64-element pairs), the padding zero.
        const uint32_t pairs = src0.type == HTP_TYPE_F32 ? 1 : 2;
        p.n_k_blocks         = (p.k + 32 * pairs - 1) / (32 * pairs) * pairs;
        p.tile_size          = TILE_N_COLS * (src0.type == HTP_TYPE_F32 ? 4 : 2);
    } else if (htp_matmul_flat_only_weight(src0.type)) {
        p.tiles_per_block = 1;  // no tiles: only the flat staging below
    } else {
        p.tile_size = tile_size(t);
        p.slot_size = tile_slot_size(t);
    }
    const uint32_t w_tiles = p.n_k_blocks >> p.tile_shift;  // per strip
    p.n_threads         = p.n_strips < n_threads ? p.n_strips : n_threads;
    p.strips_per_thread = (p.n_strips + p.n_threads - 1) / p.n_threads;
    p.r2                = src1.ne[2] / src0.ne[2];
    p.r3                = src1.ne[3] / src0.ne[3];
    const uint64_t wslice = fw ? 0 : uint64_t(p.n_strips) * w_tiles * p.tile_size;
    if (wslice > UINT32_MAX) {
        return htp_refuse("a weight matrix of 4 GiB or more");
    }
    p.w_slice_bytes = uint32_t(wslice);
    p.act_row_bytes     = p.n_k_blocks * (fw ? 128 : HTP_MM_ACT_BLOCK_BYTES);
    p.act_rows          = src1.ne[1] < HTP_MM_MAX_ACT_ROWS ? src1.ne[1] : HTP_MM_MAX_ACT_ROWS;
    // Q2_K keeps each row's d and -dmin in the super-block's tiles: its blocks are whole super-blocks.
    // 16-bit float weights come in 64-column vectors. A float block is 32 rows of its columns.
    const uint32_t unit   = t == tiled_type::q2_K ? KQUANT_TILES : fw && src0.type != HTP_TYPE_F32 ? 2 : 1;
    if (!htp_matmul_flat_only_weight(src0.type)) {
        const uint32_t target = HTP_MM_BLOCK_BYTES / (fw ? TILE_N_ROWS * p.tile_size : p.slot_size) / unit * unit;
        p.tiles_per_block     = target < unit ? unit : (target < w_tiles ? target : w_tiles);
    }
    // Every transfer of the blocks in flight, and a token per slot, must fit the DMA ring.
    const uint32_t flat_entries = htp_matmul_flat_transfers(p.wtype) + 1;
    p.n_slots                   = 3 * flat_entries <= HTP_DMA_QUEUE_CAPACITY ? 3 : 2;
    for (;;) {
        if (fw) {
            p.slot_size = p.tiles_per_block * p.tile_size;  // one weight row's columns
        }
        const uint64_t tiles = uint64_t(fw ? TILE_N_ROWS : p.tiles_per_block) * p.slot_size;
        const uint64_t flat  = htp_matmul_flat_staged_bytes(p.wtype);
        p.slot_stride        = uint32_t((tiles > flat ? tiles : flat) + 127) / 128 * 128;
        // The slots double as the staging of one activation row (k floats) while it is quantized.
        uint64_t slots = uint64_t(p.n_slots) * p.slot_stride;
        slots          = slots < 2 * htp_matmul_staging_bytes(p) ? 2 * htp_matmul_staging_bytes(p) : slots;
        slots          = (slots + 127) / 128 * 128;
        const uint64_t thread = slots + uint64_t(p.act_rows) * 128 * (1 + p.n_slots) + htp_matmul_wide_bytes(p);
        p.slots_bytes         = uint32_t(slots);
        p.thread_bytes        = uint32_t(thread);
        if (slots <= UINT32_MAX && htp_matmul_vtcm_size(p) <= vtcm_size && (!scatter || htp_matmul_id_ring_fits(p))) {
            break;
        }
        if (p.act_rows > 1) {
            p.act_rows /= 2;
        } else if (p.tiles_per_block > unit) {
            p.tiles_per_block = p.tiles_per_block / 2 / unit * unit < unit ? unit : p.tiles_per_block / 2 / unit * unit;
        } else if (p.n_slots > 2) {
            --p.n_slots;
        } else {
            return htp_refuse(HTP_REFUSED_VTCM);
        }
    }
    p.vtcm_size   = uint32_t(htp_matmul_vtcm_size(p));
    p.div_threads = init_fastdiv(p.n_threads);
    *out          = p;
    return HTP_TAKEN;
}

constexpr htp_verdict prepare_matmul_kparams(const htp_tensor & src0, const htp_tensor & src1, const htp_tensor & dst,
                                             uint32_t n_threads, uint32_t vtcm_size, htp_matmul_kparams * out) {
    return prepare_matmul_plan(src0, src1, dst, n_threads, vtcm_size, false, out);
}

inline htp_verdict prepare_matmul_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_matmul_kparams kp{};
    return htp_store_kparams(
        prepare_matmul_kparams(*a.src[0], *a.src[1], *a.dst, a.n_threads, a.vtcm_size, &kp), kp, kparams);
}

// MUL_MAT_ID (GGML's mul_mat_id): src0 the experts' weights [K, N, n_expert], src1 [K, n_b1,
// n_tokens] with n_b1 = 1 (one activation row shared by every slot) or n_used, ids I32 [n_used,
// n_tokens] (src[2]), dst [N, n_used, n_tokens]: dst row (s, t) = src1 row (s or 0, t) times
// expert ids[s, t]. The plan is MUL_MAT's for one expert's matrix and all n_used * n_tokens rows,
// its writebacks scattered (a transfer per output row).
constexpr bool htp_matmul_id_shapes_supported(const htp_tensor & src0, const htp_tensor & src1, const htp_tensor & ids,
                                              const htp_tensor & dst) {
    const uint32_t n_used = ids.ne[0], n_tokens = ids.ne[1];
    return ids.type == HTP_TYPE_I32 && ids.nb[0] == 4 && ids.ne[2] == 1 && ids.ne[3] == 1 && ids.nb[1] >= uint64_t(n_used) * 4 &&
           src0.ne[3] == 1 && (src1.ne[1] == 1 || src1.ne[1] == n_used) && src1.ne[2] == n_tokens && src1.ne[3] == 1 &&
           dst.ne[0] == src0.ne[1] && dst.ne[1] == n_used && dst.ne[2] == n_tokens && dst.ne[3] == 1;
}

// MUL_MAT_ID's operands as the plan sees them: one expert's matrix against all n_used * n_tokens
// rows, a 2-D MUL_MAT.
struct htp_matmul_id_view {
    htp_tensor w, a, d;
};
constexpr htp_matmul_id_view htp_matmul_id_as_2d(const htp_tensor & src0, const htp_tensor & src1,
                                                 const htp_tensor & ids, const htp_tensor & dst) {
    htp_matmul_id_view v{src0, src1, dst};
    v.w.ne[2] = v.w.ne[3] = 1;
    v.a.ne[1] = v.d.ne[1] = ids.ne[0] * ids.ne[1];
    v.a.ne[2] = v.a.ne[3] = v.d.ne[2] = v.d.ne[3] = 1;
    return v;
}

constexpr htp_verdict prepare_matmul_id_kparams(const htp_tensor & src0, const htp_tensor & src1,
                                                const htp_tensor & ids, const htp_tensor & dst, uint32_t n_threads,
                                                uint32_t vtcm_size, htp_matmul_kparams * out) {
    if (!htp_matmul_id_shapes_supported(src0, src1, ids, dst) || uint64_t(ids.ne[0]) * ids.ne[1] > UINT32_MAX) {
        return htp_refuse("the NPU takes I32 expert ids [n_used, n_tokens] in order, activations of one row or "
                          "n_used rows per token");
    }
    const htp_matmul_id_view v = htp_matmul_id_as_2d(src0, src1, ids, dst);
    return prepare_matmul_plan(v.w, v.a, v.d, n_threads, vtcm_size, true, out);
}

inline htp_verdict prepare_matmul_id_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_matmul_kparams kp{};
    return htp_store_kparams(
        prepare_matmul_id_kparams(*a.src[0], *a.src[1], *a.src[2], *a.dst, a.n_threads, a.vtcm_size, &kp), kp,
        kparams);
}

} // namespace hexnpu::proto
