// CONCAT, REPEAT and ROLL on the NPU (GGML's, F32, F16, BF16 or I32 elements moved as bytes): layout ops
// made of DMA transfers. Both sides compile this header: the host's op preparation plans, the
// kernel (htp/ops/layout-ops.cpp) checks and executes.
//
// One dst row per block (its elements in order; rows anywhere apart): its pieces land in slot 0 by
// DMA, HVX copies the slot to slot 1, which goes back to the row.
//   CONCAT(a, b, dim): dim 0: a's row (i1, i2, i3) then b's; dim d > 0: a's row where the
//     coordinate i_d < a.ne[d], else b's with i_d - a.ne[d].
//   REPEAT(a): a's row (i1 % ne01, i2 % ne02, i3 % ne03) dst.ne0 / ne00 times, by one 2-D transfer
//     that reads the row again for each repeat (source stride 0), or, where a's elements are not
//     in order (a transposed view), one element gather per repeat.
//   ROLL(a, s0..s3): a's row ((i1 - s1) mod ne1, ...) rotated by s0: its last s0 elements, then
//     the rest (two transfers; one without a rotation along dim 0).
// Sources keep their elements in order within a row (but REPEAT's gather); rows may lie anywhere.
#pragma once

#include "fastdiv.h"
#include "proto/htp-eltwise.h"
#include "htp-msg.h"
#include "htp-opcodes.h"

#include <stdint.h>

namespace hexnpu::proto {

inline constexpr uint32_t HTP_LAYOUT_MAX_INPUTS = 16;  // REPEAT gathers per row at most

struct htp_layout_kparams {
    htp_eltwise_pipeline pipe;      // over dst's rows: row_size = ne0 * elem, block_rows = 1
    fastdiv_values       div_ne1;   // flat dst row -> (i1, i2, i3)
    fastdiv_values       div_ne2;
    fastdiv_values       div_src1;  // REPEAT: dst coordinates modulo a's dims 1-3
    fastdiv_values       div_src2;
    fastdiv_values       div_src3;
    uint32_t             elem;      // bytes per element
    uint32_t             dim;       // CONCAT: the dimension
    uint32_t             n_inputs;  // DMA transfers per row: CONCAT dim 0 2, REPEAT's gather dst.ne0 / ne00, else 1
    uint32_t             gather;    // REPEAT: 1 when a's elements are gathered one by one
    uint32_t             repeats;   // REPEAT: dst.ne0 / ne00
};
static_assert(sizeof(htp_layout_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// Bytes of one element of the types the layout ops move (F32, F16, BF16, I32); 0 for others.
constexpr uint32_t htp_layout_elem_size(uint32_t type) { return type == HTP_TYPE_I32 ? 4 : htp_cpy_elem_size(type); }

// ROLL's own: the shifts, normalized to [0, ne) (GGML's may be negative).
struct htp_roll_kparams {
    htp_eltwise_pipeline pipe;  // over dst's rows: row_size = ne0 * elem, block_rows = 1
    fastdiv_values       div_ne1;
    fastdiv_values       div_ne2;
    uint32_t             elem;
    uint32_t             shift[4];
};
static_assert(sizeof(htp_roll_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// A source read element by element: all its elements inside its bytes (any strides).
constexpr bool htp_elems_inside(const htp_tensor & t, uint32_t elem) {
    uint64_t end = elem;
    for (int d = 0; d < 4; ++d) {
        if (t.ne[d] == 0 || t.nb[d] == 0) {
            return false;
        }
        end += uint64_t(t.ne[d] - 1) * t.nb[d];
    }
    return end <= t.size;
}

// The layout CONCAT runs on (compares only: the NPU's guard checks it too).
constexpr bool htp_concat_layout_valid(const htp_tensor & a, const htp_tensor & b, const htp_tensor & dst, uint32_t dim) {
    const uint32_t elem = htp_layout_elem_size(dst.type);
    if (elem == 0 || dim > 3 || a.type != dst.type || b.type != dst.type || dst.ne[0] > UINT32_MAX / 4) {
        return false;
    }
    for (uint32_t d = 0; d < 4; ++d) {
        const uint64_t want = d == dim ? uint64_t(a.ne[d]) + b.ne[d] : a.ne[d];
        if (dst.ne[d] != want || (d != dim && b.ne[d] != a.ne[d])) {
            return false;
        }
    }
    // Sources with any strides: a row whose elements are apart (a transposed view, as the delta
    // net's convolution input) is gathered element by element by one 2-D transfer.
    return htp_elems_inside(a, elem) && htp_elems_inside(b, elem) && htp_rows_apart(dst, elem);
}

// The layout REPEAT runs on: each dst dim a multiple of a's (host only).
constexpr bool htp_repeat_layout_valid(const htp_tensor & a, const htp_tensor & dst) {
    const uint32_t elem = htp_layout_elem_size(dst.type);
    if (elem == 0 || a.type != dst.type || dst.ne[0] > UINT32_MAX / 4 || !htp_elems_inside(a, elem) ||
        !htp_rows_apart(dst, elem)) {
        return false;
    }
    for (int d = 0; d < 4; ++d) {
        if (dst.ne[d] % a.ne[d] != 0) {
            return false;
        }
    }
    return true;
}

// The layout ROLL runs on: a and dst of one type and shape, a's rows in order, dst's apart.
constexpr bool htp_roll_layout_valid(const htp_tensor & a, const htp_tensor & dst) {
    const uint32_t elem = htp_layout_elem_size(dst.type);
    return elem != 0 && a.type == dst.type && dst.ne[0] <= UINT32_MAX / 4 && htp_same_shape(a, dst) &&
           htp_rows_inside(a, elem) && htp_rows_apart(dst, elem);
}

// b null: REPEAT. params: GGML's op_params (CONCAT's dim in 0).
inline htp_verdict prepare_layout_kparams(uint32_t opcode, const htp_tensor & a, const htp_tensor * b,
                                          const htp_tensor & dst, const int32_t params[HTP_OP_MAX_PARAMS],
                                          uint32_t n_threads, uint32_t vtcm_size, htp_layout_kparams * out) {
    htp_layout_kparams kp{};
    kp.elem = htp_layout_elem_size(dst.type);
    if (opcode == HTP_OP_CONCAT) {
        if (b == nullptr || params[0] < 0 || !htp_concat_layout_valid(a, *b, dst, uint32_t(params[0]))) {
            return htp_refuse("the NPU CONCAT takes F32, F16, BF16 or I32 rows in order, all of one type");
        }
        kp.dim      = uint32_t(params[0]);
        kp.n_inputs = kp.dim == 0 ? 2 : 1;
    } else {
        if (opcode != HTP_OP_REPEAT || !htp_repeat_layout_valid(a, dst)) {
            return htp_refuse("the NPU REPEAT takes F32, F16, BF16 or I32 elements repeated a whole number of times");
        }
        kp.gather   = a.nb[0] != kp.elem;
        kp.repeats  = dst.ne[0] / a.ne[0];
        kp.n_inputs = kp.gather ? kp.repeats : 1;
        if (kp.n_inputs > HTP_LAYOUT_MAX_INPUTS) {
            return htp_refuse("a transposed source repeated too many times along dim 0");
        }
        kp.div_src1 = init_fastdiv(a.ne[1]);
        kp.div_src2 = init_fastdiv(a.ne[2]);
        kp.div_src3 = init_fastdiv(a.ne[3]);
    }
    if (const htp_verdict v = htp_dst_row_plan(dst, n_threads, vtcm_size, &kp.pipe, &kp.div_ne1, &kp.div_ne2, kp.elem);
        !v) {
        return v;
    }
    *out = kp;
    return HTP_TAKEN;
}

// CONCAT with src[1]; REPEAT without.
inline htp_verdict prepare_layout_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_layout_kparams kp{};
    return htp_store_kparams(
        prepare_layout_kparams(a.opcode, *a.src[0], a.src[1], *a.dst, a.params, a.n_threads, a.vtcm_size, &kp), kp,
        kparams);
}

// params: GGML's op_params (the shifts in 0-3, each smaller than its dimension in magnitude).
inline htp_verdict prepare_roll_kparams(const htp_tensor & a, const htp_tensor & dst, const int32_t params[HTP_OP_MAX_PARAMS],
                                        uint32_t n_threads, uint32_t vtcm_size, htp_roll_kparams * out) {
    if (!htp_roll_layout_valid(a, dst)) {
        return htp_refuse("the NPU ROLL takes F32, F16, BF16 or I32 rows in order, the result of the source's shape");
    }
    htp_roll_kparams kp{};
    kp.elem = htp_layout_elem_size(dst.type);
    for (int d = 0; d < 4; ++d) {
        const int64_t ne = dst.ne[d], s = params[d];
        if (s <= -ne || s >= ne) {
            return htp_refuse("a ROLL shift not smaller than its dimension");
        }
        kp.shift[d] = uint32_t(s < 0 ? s + ne : s);
    }
    if (const htp_verdict v = htp_dst_row_plan(dst, n_threads, vtcm_size, &kp.pipe, &kp.div_ne1, &kp.div_ne2, kp.elem);
        !v) {
        return v;
    }
    *out = kp;
    return HTP_TAKEN;
}

inline htp_verdict prepare_roll_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_roll_kparams kp{};
    return htp_store_kparams(prepare_roll_kparams(*a.src[0], *a.dst, a.params, a.n_threads, a.vtcm_size, &kp), kp,
                             kparams);
}

} // namespace hexnpu::proto
