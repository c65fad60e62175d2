// kernel_params of the element-wise NPU ops and the host-side preparation that fills them. Both
// sides compile this header: the host's supports_op and op preparation call the prepare_*
// functions (false: the op cannot run on the NPU, VTCM fit included); the kernels execute the
// kparams as given (spec: host precomputes, NPU executes). The NPU's only checks are the batch
// loop's structural ones that keep a wrong kparams from breaking the session (htp/ops/op-table.h).
//
// Binary ops (ADD, SUB, MUL, DIV): dst = src0 op src1, all F32; src0 and dst of one shape, src1
// rows as long as dst rows and repeated over dims 1-3 (each dst dim a multiple of src1's).
// Unary ops (SCALE, SQR, SQRT, NEG, SILU, CPY): dst = f(src0), F32 of one shape; CPY's source
// rows may lie anywhere (a permuted view: GGML's CONT, DUP and CPY between F32 tensors).
// SOFT_MAX runs as a binary op: dst = softmax(src0 * scale + src1) per row, src1 GGML's F32 mask
// (rows i1 of the mask as they are, ne11 >= ne1, repeated over dims 2-3).
//
// Every kernel streams the flattened rows ne1*ne2*ne3, split over n_threads, through VTCM: per
// thread, one area per stream (src0, [src1,] dst) of n_slots slots of block_rows rows each, rows
// vtcm_row_stride apart (see htp_eltwise_vtcm_size). A block never crosses a (i2, i3) slice, nor,
// when src1 repeats within a slice (1 < ne11 < ne1), a repetition of src1's rows.
#pragma once

#include "proto/fastdiv.h"
#include "proto/htp-msg.h"
#include "proto/htp-opcodes.h"

#include <stdint.h>

namespace hexnpu::proto {

inline constexpr uint32_t HTP_ELTWISE_TYPE        = 0;      // GGML_TYPE_F32, the only type these ops take
inline constexpr uint32_t HTP_ELTWISE_MAX_SLOTS   = 4;      // deepest pipeline the kernels keep
inline constexpr uint32_t HTP_ELTWISE_BLOCK_BYTES = 16384;  // rows per DMA block aim at this many bytes
inline constexpr uint32_t HTP_VTCM_ROW_ALIGN      = 128;    // one HVX vector

// How a thread streams its rows; the same for every element-wise op.
struct htp_eltwise_pipeline {
    uint32_t n_threads;        // threads the rows are split over, <= the session's
    uint32_t rows_per_thread;  // ceil(rows / n_threads): thread i takes rows [i * it, (i + 1) * it)
    uint32_t block_rows;       // rows per DMA block
    uint32_t n_slots;          // blocks in flight per stream, 2..HTP_ELTWISE_MAX_SLOTS
    uint32_t row_size;         // ne0 * 4: bytes each DMA moves per row
    uint32_t vtcm_row_stride;  // row_size rounded up to 128: rows in VTCM start vector aligned
    uint32_t vtcm_size;        // bytes of VTCM the op takes: htp_eltwise_vtcm_size(...)
};

struct htp_binary_kparams {
    htp_eltwise_pipeline pipe;
    fastdiv_values       div_ne1;   // flat dst row -> (i1, i2, i3)
    fastdiv_values       div_ne2;
    fastdiv_values       div_ne11;  // dst coordinates -> src1's: i11 = i1 % ne11, ...
    fastdiv_values       div_ne12;  //   (SOFT_MAX: ne1 in div_ne11, the mask's first ne1 rows)
    fastdiv_values       div_ne13;
    uint32_t             scale;     // SOFT_MAX: float bits of the logit scale (GGML op_params 0);
                                    // RMS_NORM_MUL: of the norm's eps (its op_params 0);
                                    // SWIGLU_OAI: of alpha (op_params 2), limit in alibi_c0 (3)
    uint32_t             src1_row_size;  // bytes each src1 row DMA moves: row_size; SOFT_MAX: the mask's
                                         // (ne0 * 2 for F16), 0 without a mask
    uint32_t             flags;          // SOFT_MAX: HTP_SOFTMAX_* bits, ALiBi's n_head_log2 in bits 16..31;
                                         // ADD/SUB/MUL/DIV, GEGLU/SWIGLU: the row types (htp_binary_types)
    uint32_t             alibi_c0;       // SOFT_MAX with ALiBi: float bits of log2(m0), log2(m1): head h's
    uint32_t             alibi_c1;       //   slope 2^(c0 (h + 1)) below n_head_log2, else 2^(c1 (2 (h - n_head_log2) + 1));
                                         // RMS_NORM_MUL: alibi_c0 holds the float bits of 1 / ne0 (the
                                         // struct is full: 32 words)
};
inline constexpr uint32_t HTP_SOFTMAX_MASK_F16 = 1;
inline constexpr uint32_t HTP_SOFTMAX_SINKS    = 2;

struct htp_unary_kparams {
    htp_eltwise_pipeline pipe;
    uint32_t             scale;  // SCALE: float bits of the factor and of the bias (GGML op_params 0, 1),
                                 // CLAMP: of the minimum and the maximum (op_params 0, 1);
    uint32_t             bias;   // RMS_NORM, NORM, L2_NORM: of eps (op_params 0) and of 1 / ne0
    fastdiv_values       div_ne1;  // flat row -> (i1, i2, i3)
    fastdiv_values       div_ne2;
    uint32_t             src_type;      // CPY: F32, F16 or BF16 rows in, any of them out (one side F32,
    uint32_t             dst_type;      //   or both the same); the other ops F32 (0) both
    uint32_t             src_row_size;  // bytes each row DMA moves in and out: ne0 * element size
    uint32_t             dst_row_size;
    uint32_t             gather_elem;   // CPY of a transposed source: its element size (blocks of one
                                        // row, each gathered element by element); 0: rows in order
};

// ROPE (GGML's): row (i1, i2, i3) rotated, for the pairs j < n_dims / 2 (NEOX: element j pairs
// with j + n_dims/2; NORMAL: 2j with 2j + 1), by theta_j: theta_extrap = p theta_scale^j / ff[j]
// (p = positions[i2], ff the optional frequency factors, src2), theta_interp = freq_scale
// theta_extrap, theta = theta_interp (1 - mix) + theta_extrap mix with YaRN's mix = ext_factor (1 -
// clamp((j - corr_low) inv_range, 0, 1)) (mix 0 without YaRN); cos and sin times mscale (attn_factor,
// times 1 + 0.1 ln(1/freq_scale) with YaRN); elements from n_dims on copied. Rows in order, n_dims
// even (a multiple of 64: whole vectors of pairs, the fast path). Streams: src0, the position (and
// the factors), dst; the position slot holds the block's cos and sin table (htp_rope_table_bytes).
struct htp_rope_kparams {
    htp_eltwise_pipeline pipe;
    fastdiv_values       div_ne1;  // flat row -> (i1, i2, i3)
    fastdiv_values       div_ne2;
    uint32_t             n_dims;
    uint32_t             neox;             // 1: NEOX pairs, 0: NORMAL
    uint32_t             ln_theta_scale;   // float bits of ln(freq_base^(-2 / n_dims))
    uint32_t             freq_scale;       // float bits (GGML op_params 6)
    uint32_t             attn_factor;      // float bits of mscale (GGML op_params 8, YaRN's factor included)
    uint32_t             row_type;         // F32 (0), F16 (1) or BF16 (30) rows in and out (widened in VTCM)
    uint32_t             ext_factor;       // float bits (GGML op_params 7), 0: no YaRN
    uint32_t             corr_low;         // float bits of YaRN's first correction dim
    uint32_t             inv_range;        // float bits of 1 / max(0.001, high - low)
    uint32_t             freq_factors;     // 1: src2 holds n_dims / 2 F32 factors
};
static_assert(sizeof(htp_rope_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// The cos and sin table of one block: a vector of each per 32 pairs.
constexpr uint32_t htp_rope_table_bytes(uint32_t n_dims) { return (n_dims + 63) / 64 * 256; }

// SET_ROWS (the KV cache's writes): source row (i1, i2, i3), F32, goes to destination row
// ids[i1, i2 % ids.ne1, i3 % ids.ne2] of slice (i2, i3), as F16 (rounded to nearest even), BF16,
// F32, or the block types Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (GGML's reference quantizers, bit for bit:
// htp/hvx-quant-rows.h). CPY_Q runs the same kernel without ids (CPY/CONT/DUP into a block type:
// row (i1, i2, i3) to row i1). Streams: src0, the converted rows; each converted row leaves by its
// own DMA (block types: one per part of the block, d, the codes, and m and qh where the type has
// them, each 2-D over the row's blocks), so a block holds at most HTP_SET_ROWS_MAX_BLOCK_ROWS
// writebacks (n_slots blocks of them and their inputs stay within one thread's DMA queue). Ids are
// a small DDR table the NPU reads with scalar loads; one outside [0, dst.ne1) fails the op with
// INVAL_PARAMS (that row is not written).
inline constexpr uint32_t HTP_SET_ROWS_MAX_BLOCK_ROWS = 32;
inline constexpr uint32_t HTP_TYPE_ID_Q4_0            = 2;
inline constexpr uint32_t HTP_TYPE_ID_Q4_1            = 3;
inline constexpr uint32_t HTP_TYPE_ID_Q5_0            = 6;
inline constexpr uint32_t HTP_TYPE_ID_Q5_1            = 7;
inline constexpr uint32_t HTP_TYPE_ID_Q8_0            = 8;

// The block types SET_ROWS writes, as GGML lays out a 32-element block: its bytes, its fp16 scale d
// at 0, its codes (qs: `codes` bytes, 32 int8 or 16 bytes of nibble pairs) at codes_at, its fp16
// minimum m at min_at and its fifth bits qh (a word) at qh_at (0: the type has none). All zero for
// the other types.
struct htp_qblock_layout {
    uint32_t bytes, codes, codes_at, min_at, qh_at;
};
constexpr htp_qblock_layout htp_qblock_layout_of(uint32_t type) {
    switch (type) {
        case HTP_TYPE_ID_Q8_0: return {34, 32, 2, 0, 0};
        case HTP_TYPE_ID_Q4_0: return {18, 16, 2, 0, 0};
        case HTP_TYPE_ID_Q4_1: return {20, 16, 4, 2, 0};
        case HTP_TYPE_ID_Q5_0: return {22, 16, 6, 0, 2};
        case HTP_TYPE_ID_Q5_1: return {24, 16, 8, 2, 4};
        default: return {};
    }
}
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

// HTP_OP_TEST_STREAM (test variant of the NPU library only): dst = src0 * scale, F32 of one shape,
// through the element-wise pipeline with any depth up to HTP_TEST_STREAM_MAX_SLOTS and, on request,
// a deliberate misuse of it that the strict virtual NPU must catch. Tests fill it by hand.
inline constexpr uint32_t HTP_TEST_STREAM_MAX_SLOTS = 16;

enum htp_test_stream_misuse : uint32_t {
    HTP_TEST_STREAM_CORRECT          = 0,
    HTP_TEST_STREAM_READ_BEFORE_POP  = 1,  // computes on a source slot before popping its prefetch
    HTP_TEST_STREAM_WRITE_AFTER_PUSH = 2,  // scribbles on a destination slot while its writeback flies
    HTP_TEST_STREAM_SKIP_DRAIN       = 3,  // returns without popping the last writebacks
};

struct htp_test_stream_kparams {
    htp_eltwise_pipeline pipe;     // two streams: src0, dst
    uint32_t             scale;    // float bits
    uint32_t             misuse;   // htp_test_stream_misuse
    fastdiv_values       div_ne1;  // flat row -> (i1, i2, i3)
    fastdiv_values       div_ne2;
};

static_assert(sizeof(htp_binary_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));
static_assert(sizeof(htp_test_stream_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));
static_assert(sizeof(htp_unary_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

constexpr bool htp_is_binary_op(uint32_t opcode) {
    return opcode == HTP_OP_ADD || opcode == HTP_OP_SUB || opcode == HTP_OP_MUL || opcode == HTP_OP_DIV ||
           opcode == HTP_OP_GEGLU || opcode == HTP_OP_SWIGLU || opcode == HTP_OP_SOFT_MAX || opcode == HTP_OP_RMS_NORM_MUL ||
           opcode == HTP_OP_SWIGLU_OAI || opcode == HTP_OP_ADD_ID;
}

constexpr bool htp_is_unary_op(uint32_t opcode) {
    return opcode == HTP_OP_SCALE || opcode == HTP_OP_SQR || opcode == HTP_OP_SQRT || opcode == HTP_OP_NEG ||
           opcode == HTP_OP_SILU || opcode == HTP_OP_RMS_NORM || opcode == HTP_OP_NORM || opcode == HTP_OP_L2_NORM ||
           opcode == HTP_OP_CPY || opcode == HTP_OP_RELU || opcode == HTP_OP_ABS || opcode == HTP_OP_EXP ||
           opcode == HTP_OP_SIGMOID || opcode == HTP_OP_GELU || opcode == HTP_OP_GELU_QUICK || opcode == HTP_OP_SIN ||
           opcode == HTP_OP_COS || opcode == HTP_OP_CLAMP || opcode == HTP_OP_TANH || opcode == HTP_OP_SUM_ROWS ||
           opcode == HTP_OP_MEAN || opcode == HTP_OP_CUMSUM || opcode == HTP_OP_LOG || opcode == HTP_OP_SOFTPLUS ||
           opcode == HTP_OP_FILL || opcode == HTP_OP_GELU_ERF;
}

constexpr uint32_t htp_vtcm_row_stride(uint32_t row_size) {
    return (row_size + HTP_VTCM_ROW_ALIGN - 1) / HTP_VTCM_ROW_ALIGN * HTP_VTCM_ROW_ALIGN;
}

// Bytes of one slot, and of the whole layout: thread t's areas start at t * n_streams * n_slots
// slots, stream s's at s * n_slots slots within them, slot k at k slots within that.
constexpr uint64_t htp_eltwise_slot_bytes(const htp_eltwise_pipeline & p) {
    return uint64_t(p.block_rows) * p.vtcm_row_stride;
}
constexpr uint64_t htp_eltwise_vtcm_size(const htp_eltwise_pipeline & p, uint32_t n_streams) {
    return uint64_t(p.n_threads) * n_streams * p.n_slots * htp_eltwise_slot_bytes(p);
}

// Rows of ne0 elements of elem bytes, the elements in order within each row, the rows anywhere
// (they may be permuted or overlap), the last byte inside the tensor's (64-bit sums: no wrap).
constexpr bool htp_rows_inside(const htp_tensor & t, uint32_t elem) {
    if (t.nb[0] != elem || t.ne[0] == 0) {
        return false;
    }
    uint64_t end = uint64_t(t.ne[0]) * elem;
    for (int d = 1; d < 4; ++d) {
        if (t.ne[d] == 0) {
            return false;
        }
        end += uint64_t(t.ne[d] - 1) * t.nb[d];
    }
    return end <= t.size;
}

// ... and no two rows overlapping: each inside its stride, each slice inside its own (not
// permuted), as a tensor the kernels write must be.
constexpr bool htp_rows_apart(const htp_tensor & t, uint32_t elem) {
    return t.nb[1] >= uint64_t(t.ne[0]) * elem && t.nb[2] >= uint64_t(t.ne[1]) * t.nb[1] &&
           t.nb[3] >= uint64_t(t.ne[2]) * t.nb[2] && htp_rows_inside(t, elem);
}

// A source read row by row: F32 rows inside (nothing writes them).
constexpr bool htp_eltwise_source_rows_valid(const htp_tensor & t) {
    return t.type == HTP_ELTWISE_TYPE && htp_rows_inside(t, 4);
}

// As above, and the rows apart (row_size bytes each: at least ne0 * 4).
constexpr bool htp_eltwise_rows_valid(const htp_tensor & t, uint32_t row_size) {
    return t.nb[1] >= row_size && htp_rows_apart(t, 4) && t.type == HTP_ELTWISE_TYPE;
}
constexpr bool htp_same_shape(const htp_tensor & a, const htp_tensor & b) {
    return a.ne[0] == b.ne[0] && a.ne[1] == b.ne[1] && a.ne[2] == b.ne[2] && a.ne[3] == b.ne[3];
}

// Bytes of one element of the float row types the streaming ops convert (F32 0, F16 1, BF16 30);
// 0 for others.
constexpr uint32_t htp_cpy_elem_size(uint32_t type) { return type == 0 ? 4 : type == 1 || type == 30 ? 2 : 0; }

// ADD/SUB/MUL/DIV's row types in kparams.flags: src0 | src1 << 8 | dst << 16 (GGML ids; dst is src0's),
// and HTP_BINARY_SRC1_SCALAR where src1's rows are one element (broadcast along dim 0): each is
// landed ne0 times side by side by one 2-D transfer of source stride 0, one dst row per block.
inline constexpr uint32_t HTP_BINARY_SRC1_SCALAR = 1u << 24;
constexpr uint32_t htp_binary_types(uint32_t src0, uint32_t src1, uint32_t dst) { return src0 | src1 << 8 | dst << 16; }
constexpr bool     htp_binary_src1_scalar(const htp_tensor & src1, const htp_tensor & dst) {
    return src1.ne[0] == 1 && dst.ne[0] != 1;
}

// F32, F16 or BF16 rows on each side, dst of src0's type, all in order and inside their bytes; the
// sources' rows anywhere (permuted views), dst's apart (compares only: the NPU's guard checks it too).
constexpr bool htp_binary_shapes_layout(const htp_tensor & src0, const htp_tensor & src1, const htp_tensor & dst) {
    const uint32_t e0 = htp_cpy_elem_size(src0.type), e1 = htp_cpy_elem_size(src1.type);
    return e0 != 0 && e1 != 0 && dst.type == src0.type && dst.ne[0] <= UINT32_MAX / 4 && htp_same_shape(src0, dst) &&
           (src1.ne[0] == dst.ne[0] || src1.ne[0] == 1) && htp_rows_inside(src0, e0) && htp_rows_inside(src1, e1) &&
           htp_rows_apart(dst, e0);
}

// ... and src1 repeating evenly over dst's dims 1-3 (host only: fastmodulo needs the magic).
constexpr bool htp_binary_shapes_supported(const htp_tensor & src0, const htp_tensor & src1,
                                           const htp_tensor & dst) {
    if (!htp_binary_shapes_layout(src0, src1, dst)) {
        return false;
    }
    // The remainder by fastdiv: Hexagon has no divide instruction, and the NPU library does not
    // import the runtime's modulo helper.
    for (int d = 1; d < 4; ++d) {
        if (src1.ne[d] == 0 || fastmodulo(dst.ne[d], init_fastdiv(src1.ne[d])) != 0) {
            return false;
        }
    }
    return true;
}


// CPY between F32, F16 and BF16 (to or from F32, or a same-type copy): elements in order in each
// row, source rows anywhere, destination rows apart, both inside their bytes.
constexpr bool htp_cpy_shapes_supported(const htp_tensor & src0, const htp_tensor & dst) {
    const uint32_t se = htp_cpy_elem_size(src0.type), de = htp_cpy_elem_size(dst.type);
    return se != 0 && de != 0 && (src0.type == dst.type || src0.type == 0 || dst.type == 0) &&
           dst.ne[0] <= UINT32_MAX / 4 && htp_same_shape(src0, dst) && htp_rows_inside(src0, se) &&
           htp_rows_apart(dst, de);
}

// ... and a transposed source (CPY's gather): elements nb[0] != their size apart, all inside.
constexpr bool htp_cpy_gather_supported(const htp_tensor & src0, const htp_tensor & dst) {
    const uint32_t se = htp_cpy_elem_size(src0.type);
    if (se == 0 || src0.nb[0] == se || src0.nb[0] == 0) {
        return false;
    }
    uint64_t end = uint64_t(src0.ne[0] - 1) * src0.nb[0] + se;
    for (int d = 1; d < 4; ++d) {
        end += uint64_t(src0.ne[d] - 1) * src0.nb[d];
    }
    htp_tensor rows = src0;  // the rest as for rows in order
    rows.nb[0]      = se;
    rows.size       = UINT32_MAX;
    return end <= src0.size && htp_cpy_shapes_supported(rows, dst);
}

// SUM_ROWS and MEAN reduce each row to one element: dst [1, ne1, ne2, ne3].
constexpr bool htp_is_row_reduction(uint32_t opcode) { return opcode == HTP_OP_SUM_ROWS || opcode == HTP_OP_MEAN; }

// The element-wise unary ops that also take F16 or BF16 rows (dst of the source's type): widened in
// their slots, computed in fp32, rounded once on the way out.
constexpr bool htp_unary_takes_16bit(uint32_t opcode) {
    return opcode == HTP_OP_SCALE || opcode == HTP_OP_SQR || opcode == HTP_OP_SQRT || opcode == HTP_OP_NEG ||
           opcode == HTP_OP_SILU || opcode == HTP_OP_RELU || opcode == HTP_OP_ABS || opcode == HTP_OP_EXP ||
           opcode == HTP_OP_SIGMOID || opcode == HTP_OP_GELU || opcode == HTP_OP_GELU_QUICK || opcode == HTP_OP_SIN ||
           opcode == HTP_OP_COS || opcode == HTP_OP_CLAMP || opcode == HTP_OP_TANH || opcode == HTP_OP_LOG ||
           opcode == HTP_OP_SOFTPLUS || opcode == HTP_OP_GELU_ERF;
}

constexpr bool htp_unary_shapes_supported(uint32_t opcode, const htp_tensor & src0, const htp_tensor & dst) {
    if (htp_unary_takes_16bit(opcode) && src0.type != 0) {
        return src0.type == dst.type && htp_cpy_shapes_supported(src0, dst) && htp_rows_apart(src0, htp_cpy_elem_size(src0.type));
    }
    if (opcode == HTP_OP_CPY) {
        return htp_cpy_shapes_supported(src0, dst) || htp_cpy_gather_supported(src0, dst);
    }
    if (opcode == HTP_OP_FILL) {  // F32 or F16 rows of one type (the source's rows are not used)
        return (dst.type == 0 || dst.type == 1) && src0.type == dst.type && htp_cpy_shapes_supported(src0, dst);
    }
    if (htp_is_row_reduction(opcode) || opcode == HTP_OP_CUMSUM) {
        // Read-only sources: rows anywhere (permuted views too).
        const uint32_t out_ne0 = opcode == HTP_OP_CUMSUM ? src0.ne[0] : 1;
        return src0.ne[0] <= UINT32_MAX / 4 && dst.ne[0] == out_ne0 && dst.ne[1] == src0.ne[1] &&
               dst.ne[2] == src0.ne[2] && dst.ne[3] == src0.ne[3] && htp_eltwise_source_rows_valid(src0) &&
               htp_eltwise_rows_valid(dst, out_ne0 * 4);
    }
    return dst.ne[0] <= UINT32_MAX / 4 && htp_same_shape(src0, dst) && htp_eltwise_rows_valid(src0, dst.ne[0] * 4) &&
           htp_eltwise_rows_valid(dst, dst.ne[0] * 4);
}

// The pipeline for total_rows rows of row_size bytes with n_streams streams on at most n_threads
// threads: blocks of about HTP_ELTWISE_BLOCK_BYTES, three deep, shrunk (rows first, then depth)
// until the layout fits vtcm_size. false when even one row, double buffered, does not fit.
constexpr bool htp_eltwise_plan(uint64_t total_rows, uint32_t row_size, uint32_t n_streams, uint32_t n_threads,
                                uint32_t vtcm_size, htp_eltwise_pipeline * out) {
    if (total_rows == 0 || total_rows > UINT32_MAX || n_threads == 0 || n_threads > HTP_MAX_NTHREADS) {
        return false;
    }
    htp_eltwise_pipeline p{};
    p.n_threads              = total_rows < n_threads ? uint32_t(total_rows) : n_threads;
    p.row_size               = row_size;
    p.vtcm_row_stride        = htp_vtcm_row_stride(row_size);
    const uint64_t per_thread = (total_rows + p.n_threads - 1) / p.n_threads;
    p.rows_per_thread         = uint32_t(per_thread);
    const uint64_t target     = HTP_ELTWISE_BLOCK_BYTES / p.vtcm_row_stride;
    p.block_rows = uint32_t(target < 1 ? 1 : (target < per_thread ? target : per_thread));
    p.n_slots    = 3;
    while (htp_eltwise_vtcm_size(p, n_streams) > vtcm_size) {
        if (p.block_rows > 1) {
            p.block_rows /= 2;
        } else if (p.n_slots > 2) {
            --p.n_slots;
        } else {
            return false;
        }
    }
    p.vtcm_size = uint32_t(htp_eltwise_vtcm_size(p, n_streams));
    *out        = p;
    return true;
}

// The pipeline and row walk of a binary op over dst's rows: src1's rows i1 % src1_rows, dims 2-3
// repeated.
inline bool htp_binary_plan(const htp_tensor & dst, uint32_t src1_rows, const htp_tensor & src1, uint32_t n_threads,
                            uint32_t vtcm_size, htp_binary_kparams * out) {
    htp_binary_kparams kp{};
    const uint64_t     total_rows = uint64_t(dst.ne[1]) * dst.ne[2] * dst.ne[3];
    if (!htp_eltwise_plan(total_rows, dst.ne[0] * 4, 3, n_threads, vtcm_size, &kp.pipe)) {
        return false;
    }
    kp.div_ne1  = init_fastdiv(dst.ne[1]);
    kp.div_ne2  = init_fastdiv(dst.ne[2]);
    kp.div_ne11 = init_fastdiv(src1_rows);
    kp.div_ne12 = init_fastdiv(src1.ne[2]);
    kp.div_ne13 = init_fastdiv(src1.ne[3]);
    kp.src1_row_size = kp.pipe.row_size;
    *out        = kp;
    return true;
}

inline bool prepare_binary_kparams(uint32_t opcode, const htp_tensor & src0, const htp_tensor & src1,
                                   const htp_tensor & dst, uint32_t n_threads, uint32_t vtcm_size,
                                   htp_binary_kparams * out) {
    if (!htp_is_binary_op(opcode) || opcode == HTP_OP_SOFT_MAX || opcode == HTP_OP_ADD_ID ||
        !htp_binary_shapes_supported(src0, src1, dst)) {
        return false;
    }
    if (!htp_binary_plan(dst, src1.ne[1], src1, n_threads, vtcm_size, out)) {
        return false;
    }
    out->src1_row_size = dst.ne[0] * htp_cpy_elem_size(src1.type);
    out->flags         = htp_binary_types(src0.type, src1.type, dst.type);
    if (htp_binary_src1_scalar(src1, dst)) {
        out->flags |= HTP_BINARY_SRC1_SCALAR;
        out->pipe.block_rows = 1;
        out->pipe.vtcm_size  = uint32_t(htp_eltwise_vtcm_size(out->pipe, 3));
    }
    return true;
}

// The fused RMS_NORM + MUL (by the norm's weight): dst = rms_norm(src0, eps) * src1, all F32, src1
// repeated over dst as MUL repeats it. eps_bits: the norm's op_params 0.
inline bool prepare_rms_norm_mul_kparams(const htp_tensor & src0, const htp_tensor & src1, const htp_tensor & dst,
                                         uint32_t eps_bits, uint32_t n_threads, uint32_t vtcm_size,
                                         htp_binary_kparams * out) {
    if (src0.type != 0 || src1.type != 0 || dst.type != 0 ||
        !prepare_binary_kparams(HTP_OP_MUL, src0, src1, dst, n_threads, vtcm_size, out)) {
        return false;
    }
    out->scale    = eps_bits;
    out->alibi_c0 = __builtin_bit_cast(uint32_t, 1.0f / float(dst.ne[0]));  // the mean without an NPU division
    return true;
}

// ADD_ID (GPT-OSS's expert biases) on the binary pipeline: dst row (i1, i2) = src0's + src1 row
// ids[i1, i2], all F32, one row per block (ids: I32 [src0.ne1, src0.ne2] in order, a small DDR table
// the NPU reads with scalar loads; one outside [0, src1.ne1) fails the op with INVAL_PARAMS).
constexpr bool htp_add_id_layout_valid(const htp_tensor & src0, const htp_tensor & src1, const htp_tensor & ids,
                                       const htp_tensor & dst) {
    return src0.type == 0 && src1.type == 0 && dst.type == 0 && ids.type == 26 && src0.ne[3] == 1 &&
           src1.ne[2] == 1 && src1.ne[3] == 1 && ids.ne[0] == src0.ne[1] && ids.ne[1] == src0.ne[2] &&
           ids.ne[2] == 1 && ids.ne[3] == 1 && htp_rows_inside(ids, 4) && htp_binary_shapes_layout(src0, src1, dst);
}

inline bool prepare_add_id_kparams(const htp_tensor & src0, const htp_tensor & src1, const htp_tensor & ids,
                                   const htp_tensor & dst, uint32_t n_threads, uint32_t vtcm_size, htp_binary_kparams * out) {
    htp_tensor one_row{};  // src1's rows come by id: the repeat walk stays at row 0
    one_row.ne[1] = one_row.ne[2] = one_row.ne[3] = 1;
    if (!htp_add_id_layout_valid(src0, src1, ids, dst) || !htp_binary_plan(dst, 1, one_row, n_threads, vtcm_size, out)) {
        return false;
    }
    out->pipe.block_rows = 1;
    out->pipe.vtcm_size  = uint32_t(htp_eltwise_vtcm_size(out->pipe, 3));
    out->src1_row_size   = dst.ne[0] * 4;
    out->flags           = htp_binary_types(0, 0, 0);
    return true;
}

// SWIGLU_OAI (GPT-OSS's GLU) on the binary pipeline: params are the GLU's op_params (alpha in 2,
// limit in 3).
inline bool prepare_swiglu_oai_kparams(const htp_tensor & src0, const htp_tensor & src1, const htp_tensor & dst,
                                       const int32_t params[HTP_OP_MAX_PARAMS], uint32_t n_threads, uint32_t vtcm_size,
                                       htp_binary_kparams * out) {
    if (!prepare_binary_kparams(HTP_OP_SWIGLU_OAI, src0, src1, dst, n_threads, vtcm_size, out)) {
        return false;
    }
    out->scale    = uint32_t(params[2]);
    out->alibi_c0 = uint32_t(params[3]);
    return true;
}

// GGML's SOFT_MAX: w = x * scale + slope * mask, softmax per row. The mask (optional) F16 or F32,
// rows as long as dst's, at least ne1 of them per slice, dims 2-3 repeated; ALiBi (max_bias, op_params
// 1) slopes per head (dim 2) when there is a mask; sinks (an F32 logit per head, src2) join the
// maximum and the denominator. mask and sinks may be null.
constexpr bool htp_softmax_shapes_supported(const htp_tensor & src0, const htp_tensor * mask, const htp_tensor * sinks,
                                            const htp_tensor & dst) {
    if (dst.ne[0] > UINT32_MAX / 4 || !htp_same_shape(src0, dst)) {
        return false;
    }
    const uint32_t row_size = dst.ne[0] * 4;
    if (mask != nullptr) {
        const uint32_t elem = mask->type == 1 ? 2 : 4;
        if ((mask->type != 0 && mask->type != 1) || mask->ne[0] != dst.ne[0] || mask->ne[1] < dst.ne[1] ||
            !htp_rows_inside(*mask, elem)) {
            return false;
        }
        for (int d = 2; d < 4; ++d) {
            if (mask->ne[d] == 0 || fastmodulo(dst.ne[d], init_fastdiv(mask->ne[d])) != 0) {
                return false;
            }
        }
    }
    if (sinks != nullptr && (sinks->type != 0 || sinks->nb[0] != 4 || sinks->ne[0] != dst.ne[2] ||
                             uint64_t(sinks->ne[0]) * 4 > sinks->size)) {
        return false;
    }
    return htp_eltwise_rows_valid(src0, row_size) && htp_eltwise_rows_valid(dst, row_size);
}

inline bool prepare_softmax_kparams(const htp_tensor & src0, const htp_tensor * mask, const htp_tensor * sinks,
                                    const htp_tensor & dst, const int32_t params[HTP_OP_MAX_PARAMS],
                                    uint32_t n_threads, uint32_t vtcm_size, htp_binary_kparams * out) {
    const float max_bias = __builtin_bit_cast(float, params[1]);
    if (!(max_bias >= 0.0f) || (max_bias > 0.0f && mask == nullptr) ||
        !htp_softmax_shapes_supported(src0, mask, sinks, dst)) {
        return false;
    }
    const htp_tensor ones{};  // without a mask: one row per slice, nothing repeated
    htp_tensor       shape = mask != nullptr ? *mask : ones;
    if (mask == nullptr) {
        shape.ne[1] = shape.ne[2] = shape.ne[3] = 1;
    }
    if (!htp_binary_plan(dst, dst.ne[1], shape, n_threads, vtcm_size, out)) {
        return false;
    }
    out->scale         = uint32_t(params[0]);
    out->src1_row_size = mask == nullptr ? 0 : dst.ne[0] * (mask->type == 1 ? 2 : 4);
    out->flags = (mask != nullptr && mask->type == 1 ? HTP_SOFTMAX_MASK_F16 : 0) |
                         (sinks != nullptr ? HTP_SOFTMAX_SINKS : 0);
    if (max_bias > 0.0f) {
        // GGML: n_head_log2 = 2^floor(log2(n_head)), m0 = 2^(-max_bias / n_head_log2), m1 = 2^(-max_bias / 2 / n_head_log2).
        uint32_t n_head_log2 = 1;
        while (n_head_log2 * 2 <= dst.ne[2]) {
            n_head_log2 *= 2;
        }
        out->flags |= n_head_log2 << 16;
        out->alibi_c0 = __builtin_bit_cast(uint32_t, -max_bias / float(n_head_log2));
        out->alibi_c1 = __builtin_bit_cast(uint32_t, -max_bias / 2.0f / float(n_head_log2));
    }
    return true;
}

// params: GGML's ROPE op_params (n_dims 1, mode 2, freq_base 5, freq_scale 6, ext_factor 7,
// attn_factor 8); pos: I32, one per src0 ne2. No YaRN (ext_factor 0) and no frequency factors
// (the host checks that there is no src2).
// ff: the frequency factors, or null.
inline bool prepare_rope_kparams(const htp_tensor & src0, const htp_tensor & pos, const htp_tensor * ff,
                                 const htp_tensor & dst, const int32_t params[HTP_OP_MAX_PARAMS], uint32_t n_threads,
                                 uint32_t vtcm_size, htp_rope_kparams * out) {
    const uint32_t n_dims = uint32_t(params[1]);
    const int32_t  mode   = params[2];
    const bool rows_ok = src0.type == 0 ? htp_unary_shapes_supported(HTP_OP_ROPE, src0, dst)
                                        : src0.type == dst.type && htp_cpy_shapes_supported(src0, dst) &&
                                              htp_rows_apart(src0, htp_cpy_elem_size(src0.type));
    if ((mode != 0 && mode != 2) || n_dims == 0 || n_dims % 2 != 0 || n_dims > dst.ne[0] || !rows_ok ||
        pos.type != 26 || pos.nb[0] != 4 || pos.ne[0] != dst.ne[2] || uint64_t(pos.ne[0]) * 4 > pos.size ||
        (ff != nullptr && (ff->type != 0 || ff->nb[0] != 4 || ff->ne[0] < n_dims / 2 || ff->size < n_dims * 2))) {
        return false;
    }
    htp_rope_kparams kp{};
    const uint64_t   total_rows = uint64_t(dst.ne[1]) * dst.ne[2] * dst.ne[3];
    const uint32_t   table      = htp_rope_table_bytes(n_dims);  // a block's slots hold at least the table
    if (!htp_eltwise_plan(total_rows, dst.ne[0] * 4 > table ? dst.ne[0] * 4 : table, 3, n_threads, vtcm_size, &kp.pipe)) {
        return false;
    }
    kp.pipe.row_size = dst.ne[0] * 4;
    const float freq_base = __builtin_bit_cast(float, params[5]);
    if (!(freq_base > 0.0f)) {
        return false;
    }
    // GGML's theta_scale = powf(freq_base, -2.0f / n_dims), its logarithm for the NPU's exp.
    const float theta_scale = __builtin_powf(freq_base, -2.0f / float(n_dims));
    kp.div_ne1        = init_fastdiv(dst.ne[1]);
    kp.div_ne2        = init_fastdiv(dst.ne[2]);
    kp.n_dims         = n_dims;
    kp.neox           = mode == 2;
    kp.ln_theta_scale = __builtin_bit_cast(uint32_t, float(__builtin_log(double(theta_scale))));
    kp.freq_scale     = uint32_t(params[6]);
    kp.attn_factor    = uint32_t(params[8]);
    kp.row_type       = src0.type;
    kp.freq_factors   = ff != nullptr;
    const float ext_factor = __builtin_bit_cast(float, params[7]);
    if (ext_factor != 0.0f) {
        // GGML's correction dims: the pair index where a wavelength fits n_rot times into n_ctx_orig.
        const float freq_scale = __builtin_bit_cast(float, params[6]);
        const int32_t n_ctx_orig = params[4];
        auto corr_dim = [&](float n_rot) {
            return float(n_dims) * __builtin_logf(float(n_ctx_orig) / (n_rot * 2.0f * 3.14159265358979f)) /
                   (2.0f * __builtin_logf(freq_base));
        };
        const float low  = __builtin_fmaxf(0.0f, __builtin_floorf(corr_dim(__builtin_bit_cast(float, params[9]))));
        const float high = __builtin_fminf(float(n_dims - 1), __builtin_ceilf(corr_dim(__builtin_bit_cast(float, params[10]))));
        kp.ext_factor  = uint32_t(params[7]);
        kp.corr_low    = __builtin_bit_cast(uint32_t, low);
        kp.inv_range   = __builtin_bit_cast(uint32_t, 1.0f / __builtin_fmaxf(0.001f, high - low));
        kp.attn_factor = __builtin_bit_cast(uint32_t, __builtin_bit_cast(float, params[8]) *
                                                          (1.0f + 0.1f * __builtin_logf(1.0f / freq_scale)));
    }
    *out = kp;
    return true;
}

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
    const uint32_t id_bytes = ids.type == 27 ? 8 : 4;
    if (src0.type != 0 || (ids.type != 26 && ids.type != 27) || src0.ne[0] > UINT32_MAX / 4 ||
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
    return src0.type == 0 && htp_qblock_codes(dst.type) != 0 && src0.ne[0] <= UINT32_MAX / 4 && htp_same_shape(src0, dst) &&
           htp_rows_inside(src0, 4) && htp_set_rows_dst_valid(dst);
}

// ... and the ids repeat evenly over src0's dims 2 and 3 (host only: fastmodulo needs the magic).
constexpr bool htp_set_rows_shapes_supported(const htp_tensor & src0, const htp_tensor & ids, const htp_tensor & dst) {
    return htp_set_rows_layout_valid(src0, ids, dst) && fastmodulo(src0.ne[2], init_fastdiv(ids.ne[1])) == 0 &&
           fastmodulo(src0.ne[3], init_fastdiv(ids.ne[2])) == 0;
}

// ids null: CPY_Q (src0 and dst of one shape).
inline bool prepare_set_rows_kparams(const htp_tensor & src0, const htp_tensor * ids, const htp_tensor & dst,
                                     uint32_t n_threads, uint32_t vtcm_size, htp_set_rows_kparams * out) {
    if (ids != nullptr ? !htp_set_rows_shapes_supported(src0, *ids, dst) : !htp_cpy_q_layout_valid(src0, dst)) {
        return false;
    }
    htp_set_rows_kparams kp{};
    const uint64_t       total_rows = uint64_t(src0.ne[1]) * src0.ne[2] * src0.ne[3];
    const bool           blocks     = htp_qblock_codes(dst.type) != 0;
    const uint32_t       slot_row   = blocks ? htp_qblock_slot_stride(src0.ne[0]) : src0.ne[0] * 4;
    if (!htp_eltwise_plan(total_rows, slot_row, 2, n_threads, vtcm_size, &kp.pipe)) {
        return false;
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
    kp.ids_i64      = ids != nullptr && ids->type == 27;
    kp.identity     = ids == nullptr;
    *out            = kp;
    return true;
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
    const uint32_t elem     = src0.type == 26 ? 4 : htp_cpy_elem_size(src0.type);
    const uint32_t id_bytes = ids.type == 27 ? 8 : 4;
    if (elem == 0 || dst.type != (src0.type == 26 ? 26u : 0u) || (ids.type != 26 && ids.type != 27) ||
        dst.ne[0] > UINT32_MAX / 4 ||
        src0.ne[0] != dst.ne[0] || src0.ne[2] != dst.ne[2] || src0.ne[3] != dst.ne[3] || src0.ne[1] == 0 ||
        src0.nb[0] != elem || ids.ne[0] != dst.ne[1] || ids.ne[1] != dst.ne[2] || ids.ne[2] != dst.ne[3] ||
        ids.ne[3] != 1 || ids.nb[0] != id_bytes) {
        return false;
    }
    return htp_rows_inside(ids, id_bytes) && htp_rows_inside(src0, elem) && htp_rows_apart(dst, 4);
}

// The pipeline of the ops that move one F32 dst row per block (GET_ROWS, PAD): two streams (the
// fetched row, the result), and the walk over dst's rows.
inline bool htp_dst_row_plan(const htp_tensor & dst, uint32_t n_threads, uint32_t vtcm_size, htp_eltwise_pipeline * pipe,
                             fastdiv_values * div_ne1, fastdiv_values * div_ne2) {
    const uint64_t total_rows = uint64_t(dst.ne[1]) * dst.ne[2] * dst.ne[3];
    if (!htp_eltwise_plan(total_rows, dst.ne[0] * 4, 2, n_threads, vtcm_size, pipe)) {
        return false;
    }
    pipe->block_rows = 1;
    pipe->vtcm_size  = uint32_t(htp_eltwise_vtcm_size(*pipe, 2));
    *div_ne1         = init_fastdiv(dst.ne[1]);
    *div_ne2         = init_fastdiv(dst.ne[2]);
    return true;
}

inline bool prepare_get_rows_kparams(const htp_tensor & src0, const htp_tensor & ids, const htp_tensor & dst,
                                     uint32_t n_threads, uint32_t vtcm_size, htp_get_rows_kparams * out) {
    if (!htp_get_rows_layout_valid(src0, ids, dst)) {
        return false;
    }
    htp_get_rows_kparams kp{};
    if (!htp_dst_row_plan(dst, n_threads, vtcm_size, &kp.pipe, &kp.div_ne1, &kp.div_ne2)) {
        return false;
    }
    kp.src_type          = src0.type;
    kp.src_row_size      = dst.ne[0] * (src0.type == 26 ? 4 : htp_cpy_elem_size(src0.type));
    kp.ids_i64           = ids.type == 27;
    *out                 = kp;
    return true;
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
    return src0.type == 0 && dst.type == 0 && dst.ne[0] <= UINT32_MAX / 4 && htp_rows_inside(src0, 4) &&
           htp_rows_apart(dst, 4);
}

inline bool prepare_pad_kparams(const htp_tensor & src0, const htp_tensor & dst, const int32_t params[HTP_OP_MAX_PARAMS],
                                uint32_t n_threads, uint32_t vtcm_size, htp_pad_kparams * out) {
    for (int d = 0; d < 4; ++d) {
        if (params[2 * d] != 0 || uint64_t(src0.ne[d]) + uint32_t(params[2 * d + 1]) != dst.ne[d]) {
            return false;  // left padding (or a shape that does not add up): the CPU's
        }
    }
    if (!htp_pad_layout_valid(src0, dst)) {
        return false;
    }
    htp_pad_kparams kp{};
    if (!htp_dst_row_plan(dst, n_threads, vtcm_size, &kp.pipe, &kp.div_ne1, &kp.div_ne2)) {
        return false;
    }
    kp.src_ne1         = src0.ne[1];
    kp.src_ne2         = src0.ne[2];
    kp.src_ne3         = src0.ne[3];
    kp.src_row_size    = src0.ne[0] * 4;
    *out               = kp;
    return true;
}

// params: the op's GGML op_params (SCALE reads its factor and bias from words 0 and 1).
inline bool prepare_unary_kparams(uint32_t opcode, const htp_tensor & src0, const htp_tensor & dst,
                                  const int32_t params[HTP_OP_MAX_PARAMS], uint32_t n_threads, uint32_t vtcm_size,
                                  htp_unary_kparams * out) {
    if (!htp_is_unary_op(opcode) || !htp_unary_shapes_supported(opcode, src0, dst)) {
        return false;
    }
    htp_unary_kparams kp{};
    const uint64_t    total_rows = uint64_t(dst.ne[1]) * dst.ne[2] * dst.ne[3];
    if (!htp_eltwise_plan(total_rows, src0.ne[0] * 4, 2, n_threads, vtcm_size, &kp.pipe)) {
        return false;
    }
    if (opcode == HTP_OP_SCALE || opcode == HTP_OP_CLAMP || opcode == HTP_OP_FILL) {
        kp.scale = uint32_t(params[0]);
        kp.bias  = uint32_t(params[1]);
    } else if (opcode == HTP_OP_MEAN) {
        kp.bias = __builtin_bit_cast(uint32_t, 1.0f / float(src0.ne[0]));
    } else if (opcode == HTP_OP_RMS_NORM || opcode == HTP_OP_NORM || opcode == HTP_OP_L2_NORM) {
        kp.scale = uint32_t(params[0]);
        kp.bias  = __builtin_bit_cast(uint32_t, 1.0f / float(dst.ne[0]));  // the mean without an NPU division
    }
    kp.div_ne1      = init_fastdiv(dst.ne[1]);
    kp.div_ne2      = init_fastdiv(dst.ne[2]);
    const bool typed = opcode == HTP_OP_CPY || opcode == HTP_OP_FILL || htp_unary_takes_16bit(opcode);
    kp.src_type      = typed ? src0.type : 0;
    kp.dst_type      = typed ? dst.type : 0;
    kp.src_row_size  = src0.ne[0] * (typed ? htp_cpy_elem_size(src0.type) : 4);
    kp.dst_row_size  = dst.ne[0] * (typed ? htp_cpy_elem_size(dst.type) : 4);
    if (opcode == HTP_OP_CPY && htp_cpy_gather_supported(src0, dst)) {
        kp.gather_elem     = htp_cpy_elem_size(src0.type);
        kp.pipe.block_rows = 1;
        kp.pipe.vtcm_size  = uint32_t(htp_eltwise_vtcm_size(kp.pipe, 2));
    }
    *out            = kp;
    return true;
}

// TEST_STREAM over rows of ne0 F32 elements in an [ne0, ne1, ne2, ne3] tensor with a pipeline the
// test chooses (deeper or thinner than htp_eltwise_plan would pick).
inline htp_test_stream_kparams make_test_stream_kparams(const uint32_t ne[4], uint32_t scale_bits, uint32_t n_threads,
                                                        uint32_t block_rows, uint32_t n_slots, uint32_t misuse) {
    htp_test_stream_kparams kp{};
    const uint64_t          rows = uint64_t(ne[1]) * ne[2] * ne[3];
    kp.pipe.n_threads            = n_threads;
    kp.pipe.rows_per_thread      = uint32_t((rows + n_threads - 1) / n_threads);
    kp.pipe.block_rows           = block_rows;
    kp.pipe.n_slots              = n_slots;
    kp.pipe.row_size             = ne[0] * 4;
    kp.pipe.vtcm_row_stride      = htp_vtcm_row_stride(kp.pipe.row_size);
    kp.pipe.vtcm_size            = uint32_t(htp_eltwise_vtcm_size(kp.pipe, 2));
    kp.scale                     = scale_bits;
    kp.misuse                    = misuse;
    kp.div_ne1                   = init_fastdiv(ne[1]);
    kp.div_ne2                   = init_fastdiv(ne[2]);
    return kp;
}

} // namespace hexnpu::proto
