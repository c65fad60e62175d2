// GET_ROWS from a quantized table (GET_ROWS_Q): dst row (i1, i2, i3), F32, = the dequantized src0
// row ids[i1, i2, i3] of slice (i2, i3) (CPY_DQ, a dequantizing CPY/CONT: row i1 itself), from any of the twelve tiled types stored tiled
// (HTP_TENSOR_TILED: a token embedding in a REPACK buffer) or flat, and Q5_0/Q5_1 flat. Both
// sides compile this header: the host's op preparation plans, the kernel (htp/ops/get-rows-q-ops.cpp)
// checks and executes.
//
// A row is read in "units": tiles (tiled: the 32-row group holding the row, one tile per
// tile_k_cols columns, the row in lane id % 32) or flat blocks (the row alone, staged by the DMA
// as the flat matmul stages weights, htp/ops/matmul-flat-dma.h). Each thread streams its dst rows
// in blocks of units_per_block units (one 2-D transfer of consecutive tiles, or a flat block's
// transfers) through n_slots slots: in slots of units_per_block * unit_slot bytes, out slots of
// the block's columns in fp32. Values are the scalar reference's bit for bit (flat: GGML's
// dequantization; tiled: the tile format's, which for Q3_K..Q6_K holds rounded scale products).
#pragma once

#include "fastdiv.h"
#include "proto/htp-eltwise.h"
#include "htp-matmul.h"
#include "htp-msg.h"
#include "tile-formats.h"

#include <stdint.h>

namespace hexnpu::proto {

inline constexpr uint32_t HTP_GET_ROWS_Q_MAX_SLOTS   = 4;
inline constexpr uint32_t HTP_GET_ROWS_Q_BLOCK_BYTES = 16384;  // tile bytes per DMA block aimed at

struct htp_get_rows_q_kparams {
    fastdiv_values div_ne1;  // flat dst row -> (i1, i2, i3)
    fastdiv_values div_ne2;
    uint32_t       type;             // GGML type of src0
    uint32_t       tiled;            // 1: src0 stored tiled
    uint32_t       ids_i64;
    uint32_t       n_threads;
    uint32_t       rows_per_thread;  // ceil(dst rows / n_threads)
    uint32_t       n_slots;
    uint32_t       n_units;          // units per row: ne0 / (tile_k_cols or the flat block's elements)
    uint32_t       unit_bytes;       // DDR bytes of a unit: the tile size, or the flat block's
    uint32_t       unit_slot;        // VTCM bytes of a unit: the tile's slot, or the flat staging
    uint32_t       unit_vectors;     // output vectors (32 columns each) per unit
    uint32_t       units_per_block;  // tiled: a multiple of KQUANT_TILES for the K-quants; flat: 1
    uint32_t       n_inputs;         // DMA transfers per block (tiled 1; flat: the block's transfers)
    uint32_t       in_slot;          // units_per_block * unit_slot
    uint32_t       out_slot;         // units_per_block * unit_vectors * 128
    uint32_t       slice_bytes;      // tiled: bytes of one tiled 2-D slice
    uint32_t       vtcm_size;        // n_threads * n_slots * (in_slot + out_slot)
    uint32_t       identity;         // CPY_DQ: no ids, dst row (i1, i2, i3) from src0 row i1 (a dequantizing copy)
};
static_assert(sizeof(htp_get_rows_q_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// Flat Q1_0 ... the K-quants as the flat matmul stages them; Q5_0/Q5_1 flat only.
constexpr bool htp_get_rows_q_type(uint32_t type, bool tiled) {
    return is_tiled_type_id(int32_t(type)) || (!tiled && htp_matmul_flat_only_weight(type));
}

// Columns of one unit.
constexpr uint32_t htp_get_rows_q_unit_cols(uint32_t type, bool tiled) {
    return tiled ? tile_k_cols(tiled_type(int32_t(type))) : htp_matmul_block_elems(type);
}

// The ids (I32/I64, one per dst row, in order) as GET_ROWS takes them; compares only.
constexpr bool htp_row_ids_valid(const htp_tensor & ids, const htp_tensor & dst) {
    const uint32_t id_bytes = ids.type == HTP_TYPE_I64 ? 8 : 4;
    return (ids.type == HTP_TYPE_I32 || ids.type == HTP_TYPE_I64) && ids.ne[0] == dst.ne[1] && ids.ne[1] == dst.ne[2] &&
           ids.ne[2] == dst.ne[3] && ids.ne[3] == 1 && ids.nb[0] == id_bytes && htp_rows_inside(ids, id_bytes);
}

// The layout GET_ROWS_Q runs on, with n_units = ne0 / the unit's columns (the host divides; compares
// and products only here: the NPU's guard checks it too). Flat rows: whole blocks (nb[0] the
// block's bytes), every row inside the tensor; tiled: every slice's tiles (32-row groups of
// n_units tiles) inside. ids null: CPY_DQ, src0 and dst of one shape.
constexpr bool htp_get_rows_q_layout_valid(const htp_tensor & src0, const htp_tensor * ids, const htp_tensor & dst,
                                           uint32_t n_units) {
    const bool tiled = (src0.flags & HTP_TENSOR_TILED) != 0;
    if (!htp_get_rows_q_type(src0.type, tiled) || dst.type != HTP_TYPE_F32 || dst.ne[0] > UINT32_MAX / 4 ||
        src0.ne[0] != dst.ne[0] || src0.ne[2] != dst.ne[2] || src0.ne[3] != dst.ne[3] || src0.ne[1] == 0 ||
        n_units == 0 || uint64_t(n_units) * htp_get_rows_q_unit_cols(src0.type, tiled) != src0.ne[0] ||
        (ids != nullptr ? !htp_row_ids_valid(*ids, dst) : src0.ne[1] != dst.ne[1]) || !htp_rows_apart(dst, 4)) {
        return false;
    }
    if (tiled) {
        const uint64_t groups = (uint64_t(src0.ne[1]) + TILE_N_ROWS - 1) >> 5;  // TILE_N_ROWS = 32
        return groups * n_units * tile_size(tiled_type(int32_t(src0.type))) * src0.ne[2] * src0.ne[3] <= src0.size;
    }
    const uint32_t block = htp_matmul_flat_block_bytes(src0.type);
    if (src0.nb[0] != block) {
        return false;
    }
    uint64_t end = uint64_t(n_units) * block;
    for (int d = 1; d < 4; ++d) {
        end += uint64_t(src0.ne[d] - 1) * src0.nb[d];
    }
    return end <= src0.size;
}

inline htp_verdict prepare_get_rows_q_kparams(const htp_tensor & src0, const htp_tensor * ids, const htp_tensor & dst,
                                              uint32_t n_threads, uint32_t vtcm_size, htp_get_rows_q_kparams * out) {
    const bool tiled = (src0.flags & HTP_TENSOR_TILED) != 0;
    if (!htp_get_rows_q_type(src0.type, tiled)) {
        return htp_refuse(tiled ? "no NPU kernel reads rows of this tiled type"
                                : "no NPU kernel reads rows of this quantized type");
    }
    if (n_threads == 0) {
        return htp_refuse("the session's thread count is out of range");
    }
    const uint32_t cols = htp_get_rows_q_unit_cols(src0.type, tiled);
    if (!htp_get_rows_q_layout_valid(src0, ids, dst, dst.ne[0] / cols)) {
        return htp_refuse("the NPU kernel takes whole blocks of rows into F32 rows, I32/I64 ids in order");
    }
    htp_get_rows_q_kparams kp{};
    const uint64_t rows  = uint64_t(dst.ne[1]) * dst.ne[2] * dst.ne[3];
    kp.type         = src0.type;
    kp.tiled        = tiled ? 1 : 0;
    kp.ids_i64      = ids != nullptr && ids->type == HTP_TYPE_I64 ? 1 : 0;
    kp.identity     = ids == nullptr ? 1 : 0;
    kp.n_units      = dst.ne[0] / cols;
    kp.unit_vectors = cols / TILE_N_COLS;
    kp.n_threads    = rows < n_threads ? uint32_t(rows) : n_threads;
    if (kp.n_threads == 0) {
        kp.n_threads = 1;
    }
    kp.rows_per_thread = uint32_t((rows + kp.n_threads - 1) / kp.n_threads);
    if (tiled) {
        const tiled_type t = tiled_type(int32_t(src0.type));
        kp.unit_bytes      = tile_size(t);
        kp.unit_slot       = tile_slot_size(t);
        kp.slice_bytes     = uint32_t(tiled_slice_bytes(t, src0.ne[0], src0.ne[1]));
        const uint32_t align = is_kquant(t) ? KQUANT_TILES : 1;  // Q2_K's d/dmin live in its super-block's tiles
        uint32_t       upb   = HTP_GET_ROWS_Q_BLOCK_BYTES / kp.unit_slot / align * align;
        upb                  = upb < align ? align : upb;
        kp.units_per_block   = upb < kp.n_units ? upb : kp.n_units;
        kp.n_inputs          = 1;
    } else {
        kp.unit_bytes      = htp_matmul_flat_block_bytes(src0.type);
        kp.unit_slot       = htp_matmul_flat_block_vectors(src0.type) * 128;
        if (htp_matmul_flat_tiles(src0.type) == 1 && !htp_matmul_flat_only_weight(src0.type)) {
            kp.unit_slot = tile_slot_size(tiled_type(int32_t(src0.type)));  // gathered into a tile
        }
        kp.units_per_block = 1;
        kp.n_inputs        = htp_matmul_flat_block_transfers(src0.type);
    }
    kp.in_slot  = kp.units_per_block * kp.unit_slot;
    kp.out_slot = kp.units_per_block * kp.unit_vectors * 128;
    kp.div_ne1  = init_fastdiv(dst.ne[1]);
    kp.div_ne2  = init_fastdiv(dst.ne[2]);
    // Every slot's inputs and its writeback in flight must fit the DMA ring.
    for (kp.n_slots = HTP_GET_ROWS_Q_MAX_SLOTS; kp.n_slots > 2; --kp.n_slots) {
        if (uint64_t(kp.n_threads) * kp.n_slots * (kp.in_slot + kp.out_slot) <= vtcm_size &&
            kp.n_slots * (kp.n_inputs + 1) <= HTP_DMA_QUEUE_CAPACITY) {
            break;
        }
    }
    const uint64_t need = uint64_t(kp.n_threads) * kp.n_slots * (kp.in_slot + kp.out_slot);
    if (need > vtcm_size) {
        return htp_refuse(HTP_REFUSED_VTCM);
    }
    if (kp.n_slots * (kp.n_inputs + 1) > HTP_DMA_QUEUE_CAPACITY) {
        return htp_refuse("a row's transfers do not fit the DMA queue");
    }
    kp.vtcm_size = uint32_t(need);
    *out         = kp;
    return HTP_TAKEN;
}

// GET_ROWS_Q with src[1] the ids; CPY_DQ without (every row its own).
inline htp_verdict prepare_get_rows_q_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_get_rows_q_kparams kp{};
    return htp_store_kparams(
        prepare_get_rows_q_kparams(*a.src[0], a.src[1], *a.dst, a.n_threads, a.vtcm_size, &kp), kp, kparams);
}

} // namespace hexnpu::proto
