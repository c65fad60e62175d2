// kernel_params of the row-moving NPU ops (htp/ops/rows-ops.cpp) and their host preparation:
// SET_ROWS and CPY_Q (F32 rows into F32, F16, BF16 or a block type), GET_ROWS (from activation
// rows) and PAD.
#pragma once

#include "proto/htp-eltwise.h"

#include <stdint.h>

namespace hexnpu::proto {

// SET_ROWS (the KV cache's writes): source row (i1, i2, i3), F32, goes to destination row
// ids[i1, i2 % ids.ne1, i3 % ids.ne2] of slice (i2, i3), as F16 (rounded to nearest even), BF16,
// F32, or the block types Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL (GGML's from_float quantizers, bit for bit:
// htp/hvx-quant-rows.h). CPY_Q runs the same kernel without ids (CPY/CONT/DUP into a block type:
// row (i1, i2, i3) to row i1). Streams: src0, the converted rows; each converted row leaves by its
// own DMA (block types: one per part of the block, d, the codes, and m and qh where the type has
// them, each 2-D over the row's blocks), so a block holds at most HTP_SET_ROWS_MAX_BLOCK_ROWS
// writebacks (n_slots blocks of them and their inputs stay within one thread's DMA queue). Ids are
// a small DDR table the NPU reads with scalar loads; one outside [0, dst.ne1) fails the op with
// INVAL_PARAMS (that row is not written).
inline constexpr uint32_t HTP_SET_ROWS_MAX_BLOCK_ROWS = 32;

constexpr uint32_t htp_qblock_codes(uint32_t type) { return htp_qblock_layout_of(type).codes; }
constexpr uint32_t htp_qblock_bytes(uint32_t type) { return htp_qblock_layout_of(type).bytes; }


struct htp_set_rows_kparams {
    htp_eltwise_pipeline pipe;      // over src0's rows: row_size = ne0 * 4
    fastdiv_values       div_ne1;   // flat src0 row -> (i1, i2, i3)
    fastdiv_values       div_ne2;
    fastdiv_values       div_ids1;  // i2 % ids.ne1
    fastdiv_values       div_ids2;  // i3 % ids.ne2
    uint32_t             dst_row_size;  // ne0 * 2 (F16/BF16), ne0 * 4 (F32), ne0 / 32 * 34 (Q8_0) or 18 (Q4_0)
    uint32_t             dst_type;      // F32 (0), F16 (1), BF16 (30), Q8_0 (8) or Q4_0 (2)
    uint32_t             ids_i64;       // 1: I64 ids, 0: I32
    uint32_t             identity;      // CPY_Q: no ids, source row i1 to destination row i1
};
static_assert(sizeof(htp_set_rows_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// Writebacks per converted row: a block type's parts (d, codes, m, qh) each by one 2-D DMA.
constexpr uint32_t htp_set_rows_writebacks(uint32_t dst_type) {
    const htp_qblock_layout l = htp_qblock_layout_of(dst_type);
    return l.codes == 0 ? 1 : 2 + (l.min_at != 0) + (l.qh_at != 0);
}

// A block-type row's VTCM slots: the source slot holds the F32 row, then the blocks' inverse scales
// (scratch: one fp32 vector per 32 blocks); the converted slot the codes (at most ne0 bytes) from
// 0, then as many vectors each of the block scales and the minima (narrowed to fp16 in place),
// then the qh words; both slots of the wider stride.
constexpr uint32_t htp_qblock_group_bytes(uint32_t ne0) { return (ne0 / 32 + 31) / 32 * 128; }
constexpr uint32_t htp_qblock_ids_offset(uint32_t ne0) { return htp_vtcm_row_stride(ne0 * 4); }
constexpr uint32_t htp_qblock_scales_offset(uint32_t ne0) { return htp_vtcm_row_stride(ne0); }
constexpr uint32_t htp_qblock_mins_offset(uint32_t ne0) { return htp_qblock_scales_offset(ne0) + htp_qblock_group_bytes(ne0); }
constexpr uint32_t htp_qblock_qh_offset(uint32_t ne0) { return htp_qblock_mins_offset(ne0) + htp_qblock_group_bytes(ne0); }
constexpr uint32_t htp_qblock_slot_stride(uint32_t ne0) {
    const uint32_t source    = htp_qblock_ids_offset(ne0) + htp_qblock_group_bytes(ne0);
    const uint32_t converted = htp_qblock_qh_offset(ne0) + htp_vtcm_row_stride(ne0 / 8);
    return source > converted ? source : converted;
}

// Destination rows SET_ROWS and CPY_Q write: F32/F16/BF16 elements, or blocks (ne0 a
// multiple of 32), in order; the rows apart and inside the tensor.
constexpr bool htp_set_rows_dst_valid(const htp_tensor & dst) {
    if (htp_qblock_codes(dst.type) != 0) {
        htp_tensor blocks = dst;  // the row as ne0 / 32 elements of a block's bytes
        blocks.ne[0]      = dst.ne[0] / 32;
        return dst.ne[0] % 32 == 0 && htp_rows_apart(blocks, htp_qblock_bytes(dst.type));
    }
    const uint32_t elem = htp_cpy_elem_size(dst.type);
    return elem != 0 && htp_rows_apart(dst, elem);
}
constexpr uint32_t htp_set_rows_dst_row_size(const htp_tensor & dst) {
    return htp_qblock_codes(dst.type) != 0 ? dst.ne[0] / 32 * htp_qblock_bytes(dst.type)
                                           : dst.ne[0] * htp_cpy_elem_size(dst.type);
}

// The layout SET_ROWS runs on (compares only: the NPU's guard checks it too): src0 F32 rows in order,
// dst rows as above with src0's ne0 and slices, ids I32/I64 [src0.ne1, r2, r3, 1] packed.
constexpr bool htp_set_rows_layout_valid(const htp_tensor & src0, const htp_tensor & ids, const htp_tensor & dst) {
    const uint32_t id_bytes = ids.type == HTP_TYPE_I64 ? 8 : 4;
    if (src0.type != HTP_TYPE_F32 || (ids.type != HTP_TYPE_I32 && ids.type != HTP_TYPE_I64) || src0.ne[0] > UINT32_MAX / 4 ||
        dst.ne[0] != src0.ne[0] || dst.ne[2] != src0.ne[2] || dst.ne[3] != src0.ne[3] ||
        dst.ne[1] == 0 || ids.ne[0] != src0.ne[1] || ids.ne[1] == 0 || ids.ne[2] == 0 || ids.ne[3] != 1 ||
        ids.nb[0] != id_bytes || ids.nb[1] != uint64_t(ids.ne[0]) * id_bytes ||
        ids.nb[2] != uint64_t(ids.ne[1]) * ids.nb[1] || uint64_t(ids.ne[2]) * ids.nb[2] > ids.size) {
        return false;
    }
    return htp_set_rows_dst_valid(dst) && htp_eltwise_rows_valid(src0, src0.ne[0] * 4);
}

// CPY_Q: F32 rows (anywhere: a permuted source too) into block-type rows of the same shape.
constexpr bool htp_cpy_q_layout_valid(const htp_tensor & src0, const htp_tensor & dst) {
    return src0.type == HTP_TYPE_F32 && htp_qblock_codes(dst.type) != 0 && src0.ne[0] <= UINT32_MAX / 4 && htp_same_shape(src0, dst) &&
           htp_rows_inside(src0, 4) && htp_set_rows_dst_valid(dst);
}

// ... and the ids repeat evenly over src0's dims 2 and 3 (host only).
constexpr bool htp_set_rows_shapes_supported(const htp_tensor & src0, const htp_tensor & ids, const htp_tensor & dst) {
    return htp_set_rows_layout_valid(src0, ids, dst) && src0.ne[2] % ids.ne[1] == 0 &&
           src0.ne[3] % ids.ne[2] == 0;
}

// ids null: CPY_Q (src0 and dst of one shape).
inline htp_verdict prepare_set_rows_kparams(const htp_tensor & src0, const htp_tensor * ids, const htp_tensor & dst,
                                            uint32_t n_threads, uint32_t vtcm_size, htp_set_rows_kparams * out) {
    if (ids != nullptr && !htp_set_rows_shapes_supported(src0, *ids, dst)) {
        return htp_refuse("the NPU kernel takes F32 rows in order into F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 or IQ4_NL "
                          "rows, I32/I64 ids in order repeating evenly over dims 2 and 3");
    }
    if (ids == nullptr && !htp_cpy_q_layout_valid(src0, dst)) {
        return htp_refuse("the NPU kernel copies F32 rows into Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 or IQ4_NL rows of one shape");
    }
    htp_set_rows_kparams kp{};
    const uint64_t       total_rows = uint64_t(src0.ne[1]) * src0.ne[2] * src0.ne[3];
    const bool           blocks     = htp_qblock_codes(dst.type) != 0;
    const uint32_t       slot_row   = blocks ? htp_qblock_slot_stride(src0.ne[0]) : src0.ne[0] * 4;
    if (const htp_verdict v = htp_eltwise_plan(total_rows, slot_row, 2, n_threads, vtcm_size, &kp.pipe); !v) {
        return v;
    }
    kp.pipe.row_size             = src0.ne[0] * 4;  // block types: the slots keep their wider stride
    const uint32_t max_block_rows = HTP_SET_ROWS_MAX_BLOCK_ROWS / htp_set_rows_writebacks(dst.type);
    if (kp.pipe.block_rows > max_block_rows) {
        kp.pipe.block_rows = max_block_rows;
        kp.pipe.vtcm_size  = uint32_t(htp_eltwise_vtcm_size(kp.pipe, 2));
    }
    kp.div_ne1      = init_fastdiv(src0.ne[1]);
    kp.div_ne2      = init_fastdiv(src0.ne[2]);
    kp.div_ids1     = init_fastdiv(ids != nullptr ? ids->ne[1] : 1);
    kp.div_ids2     = init_fastdiv(ids != nullptr ? ids->ne[2] : 1);
    kp.dst_type     = dst.type;
    kp.dst_row_size = htp_set_rows_dst_row_size(dst);
    kp.ids_i64      = ids != nullptr && ids->type == HTP_TYPE_I64;
    kp.identity     = ids == nullptr;
    *out            = kp;
    return HTP_TAKEN;
}

// SET_ROWS with src[1] the ids; CPY_Q without.
inline htp_verdict prepare_set_rows_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_set_rows_kparams kp{};
    return htp_store_kparams(
        prepare_set_rows_kparams(*a.src[0], a.src[1], *a.dst, a.n_threads, a.vtcm_size, &kp), kp, kparams);
}

// GET_ROWS from activations (F32 or F16 rows, e.g. the output rows a prompt's last tokens pick):
// dst row (i1, i2, i3), F32, = src0 row ids[i1, i2, i3] of slice (i2, i3). One row per DMA block
// (each row comes from wherever its id points); streams: the gathered row, the converted row. Ids
// are a small DDR table read with scalar loads; one outside [0, src0.ne1) fails the op with
// INVAL_PARAMS.
struct htp_get_rows_kparams {
    htp_eltwise_pipeline pipe;     // over dst's rows: row_size = ne0 * 4, block_rows = 1
    fastdiv_values       div_ne1;  // flat dst row -> (i1, i2, i3)
    fastdiv_values       div_ne2;
    uint32_t             src_row_size;  // ne0 * 4 (F32) or ne0 * 2 (F16)
    uint32_t             src_type;      // F32 (0), F16 (1), BF16 (30), or I32 (26) into I32
    uint32_t             ids_i64;
};
static_assert(sizeof(htp_get_rows_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// The layout GET_ROWS runs on (compares only: the NPU's guard checks it too).
constexpr bool htp_get_rows_layout_valid(const htp_tensor & src0, const htp_tensor & ids, const htp_tensor & dst) {
    const uint32_t elem     = src0.type == HTP_TYPE_I32 ? 4 : htp_cpy_elem_size(src0.type);
    const uint32_t id_bytes = ids.type == HTP_TYPE_I64 ? 8 : 4;
    if (elem == 0 || dst.type != (src0.type == HTP_TYPE_I32 ? HTP_TYPE_I32 : HTP_TYPE_F32) || (ids.type != HTP_TYPE_I32 && ids.type != HTP_TYPE_I64) ||
        dst.ne[0] > UINT32_MAX / 4 ||
        src0.ne[0] != dst.ne[0] || src0.ne[2] != dst.ne[2] || src0.ne[3] != dst.ne[3] || src0.ne[1] == 0 ||
        src0.nb[0] != elem || ids.ne[0] != dst.ne[1] || ids.ne[1] != dst.ne[2] || ids.ne[2] != dst.ne[3] ||
        ids.ne[3] != 1 || ids.nb[0] != id_bytes) {
        return false;
    }
    return htp_rows_inside(ids, id_bytes) && htp_rows_inside(src0, elem) && htp_rows_apart(dst, 4);
}

inline htp_verdict prepare_get_rows_kparams(const htp_tensor & src0, const htp_tensor & ids, const htp_tensor & dst,
                                            uint32_t n_threads, uint32_t vtcm_size, htp_get_rows_kparams * out) {
    if (!htp_get_rows_layout_valid(src0, ids, dst)) {
        return htp_refuse("the NPU kernel takes F32, F16 or BF16 rows into F32 (or I32 rows), each row's elements "
                          "in order, I32/I64 ids");
    }
    htp_get_rows_kparams kp{};
    if (const htp_verdict v = htp_dst_row_plan(dst, n_threads, vtcm_size, &kp.pipe, &kp.div_ne1, &kp.div_ne2); !v) {
        return v;
    }
    kp.src_type          = src0.type;
    kp.src_row_size      = dst.ne[0] * (src0.type == HTP_TYPE_I32 ? 4 : htp_cpy_elem_size(src0.type));
    kp.ids_i64           = ids.type == HTP_TYPE_I64;
    *out                 = kp;
    return HTP_TAKEN;
}

inline htp_verdict prepare_get_rows_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_get_rows_kparams kp{};
    return htp_store_kparams(
        prepare_get_rows_kparams(*a.src[0], *a.src[1], *a.dst, a.n_threads, a.vtcm_size, &kp), kp, kparams);
}

// PAD (GGML's, zeros after the end of each dimension: op_params (lp, rp) per dim with every lp 0):
// dst row (i1, i2, i3) is src0's row there (its ne00 elements, then zeros) when i1 < ne01, i2 <
// ne02 and i3 < ne03, else zeros. F32, elements in order. One dst row per block, as GET_ROWS.
struct htp_pad_kparams {
    htp_eltwise_pipeline pipe;     // over dst's rows: row_size = ne0 * 4, block_rows = 1
    fastdiv_values       div_ne1;  // flat dst row -> (i1, i2, i3)
    fastdiv_values       div_ne2;
    uint32_t             src_ne1, src_ne2, src_ne3;
    uint32_t             src_row_size;  // ne00 * 4
};
static_assert(sizeof(htp_pad_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// The layout PAD runs on (compares only: the NPU's guard checks it too).
constexpr bool htp_pad_layout_valid(const htp_tensor & src0, const htp_tensor & dst) {
    for (int d = 0; d < 4; ++d) {
        if (src0.ne[d] == 0 || src0.ne[d] > dst.ne[d]) {
            return false;
        }
    }
    return src0.type == HTP_TYPE_F32 && dst.type == HTP_TYPE_F32 && dst.ne[0] <= UINT32_MAX / 4 && htp_rows_inside(src0, 4) &&
           htp_rows_apart(dst, 4);
}

inline htp_verdict prepare_pad_kparams(const htp_tensor & src0, const htp_tensor & dst,
                                       const int32_t params[HTP_OP_MAX_PARAMS], uint32_t n_threads, uint32_t vtcm_size,
                                       htp_pad_kparams * out) {
    for (int d = 0; d < 4; ++d) {
        if (params[2 * d] != 0 || uint64_t(src0.ne[d]) + uint32_t(params[2 * d + 1]) != dst.ne[d]) {
            return htp_refuse("the NPU PAD pads after each dimension only (no left padding)");
        }
    }
    if (!htp_pad_layout_valid(src0, dst)) {
        return htp_refuse("the NPU PAD takes F32 rows in order");
    }
    htp_pad_kparams kp{};
    if (const htp_verdict v = htp_dst_row_plan(dst, n_threads, vtcm_size, &kp.pipe, &kp.div_ne1, &kp.div_ne2); !v) {
        return v;
    }
    kp.src_ne1         = src0.ne[1];
    kp.src_ne2         = src0.ne[2];
    kp.src_ne3         = src0.ne[3];
    kp.src_row_size    = src0.ne[0] * 4;
    *out               = kp;
    return HTP_TAKEN;
}

inline htp_verdict prepare_pad_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_pad_kparams kp{};
    return htp_store_kparams(prepare_pad_kparams(*a.src[0], *a.dst, a.params, a.n_threads, a.vtcm_size, &kp), kp,
                             kparams);
}

} // namespace hexnpu::proto
