// FLASH_ATTN_EXT's kernel parameters and their planning, shared by the host (supports_op, op
// preparation) and the NPU (its guard re-checks them). GGML's semantics (src/cpu/cpu-ops-flash-attn.cpp
// is the reference): for query row iq1 of head iq2, s_j = scale * q·k_j + mask[iq1, j] over the
// n_kv keys of K/V head iq2 / (n_head / n_head_kv), out = softmax(s) · V (with sinks: one more logit
// per head, no value), written to dst row (iq2, iq1) of [D, n_head, n_q]. Q F32, K and V F16 (or
// both F32 on HVX: their rows dealt into the even/odd order the F16 widening gives) of one head size D (a multiple of 64, up to HTP_FA_MAX_D), the mask F16 or F32 broadcast over heads,
// dims 3 of size 1; ALiBi slopes on the mask (max_bias) and the logit softcap
// (s = softcap * tanh(s / softcap), before the mask) as GGML applies them.
//
// The NPU streams each work item's keys in blocks of HTP_FA_BLOCK: K rows, V rows, the mask's 32
// entries and the query rows by DMA into one of n_slots slots, scores by HVX dot products folded
// into one vector, an online softmax over vectors, P·V into fp32 accumulators. A work item is one
// query row and `heads` consecutive heads of one K/V head's group (GQA): the group's heads share
// each K/V block, so it crosses the DMA once for all of them.
#pragma once

#include "fastdiv.h"
#include "proto/htp-eltwise.h"
#include "htp-msg.h"

#include <stdint.h>

namespace hexnpu::proto {

inline constexpr uint32_t HTP_FA_BLOCK     = 32;    // keys per block: one score vector
inline constexpr uint32_t HTP_FA_MAX_D     = 576;   // DeepSeek's MLA: K 576, V 512
inline constexpr uint32_t HTP_FA_MAX_SLOTS = 3;
inline constexpr uint32_t HTP_FA_MAX_HEADS = 8;     // query heads per work item

enum htp_fa_mask : uint32_t { HTP_FA_MASK_NONE = 0, HTP_FA_MASK_F16 = 1, HTP_FA_MASK_F32 = 2 };

// The mask's kind as the kparams record it (the guards compare the two).
constexpr uint32_t htp_fa_mask_kind(const htp_tensor * mask) {
    return mask == nullptr ? HTP_FA_MASK_NONE : mask->type == HTP_TYPE_F16 ? HTP_FA_MASK_F16 : HTP_FA_MASK_F32;
}

struct htp_flash_attn_kparams {
    uint32_t       n_threads;         // threads the work items are split over
    uint32_t       items_per_thread;  // thread i takes items [i * it, (i + 1) * it) of ne3 * n_q * n_head / heads
    uint32_t       heads;             // query heads per item, 1..HTP_FA_MAX_HEADS, dividing the GQA group
    uint32_t       n_slots;           // key blocks in flight, 2..HTP_FA_MAX_SLOTS
    uint32_t       d;                 // Q's and K's head size
    uint32_t       dv;                // V's and the result's head size
    uint32_t       n_kv;              // keys
    uint32_t       n_blocks;          // ceil(n_kv / HTP_FA_BLOCK)
    uint32_t       vtcm_size;         // htp_fa_vtcm_size
    uint32_t       scale;             // float bits (GGML op_params 0; with a softcap, divided by it as GGML does)
    uint32_t       mask;              // htp_fa_mask
    uint32_t       has_sinks;
    fastdiv_values div_head;    // item -> (iq1 = item / (n_head / heads), first head (item % that) * heads)
    fastdiv_values div_group;   // ik2 = iq2 / (n_head / n_head_kv)
    fastdiv_values div_mask2;   // the mask's head: iq2 % mask.ne2
    uint32_t       softcap;      // float bits (GGML op_params 2), 0: none: s = softcap * tanh(q·k * scale)
    uint32_t       n_head_log2;  // ALiBi (0: none): head h's slope 2^(c0 (h + 1)) below n_head_log2,
    uint32_t       alibi_c0;     //   else 2^(c1 (2 (h - n_head_log2) + 1)); c0, c1 float bits of
    uint32_t       alibi_c1;     //   -max_bias / n_head_log2 and half of it
    uint32_t       k_type;       // K's and V's GGML types (llama.cpp's -ctk and -ctv may differ); the
    uint32_t       v_type;       //   slots' layout follows (htp_fa_slot_layout_of)
};
static_assert(sizeof(htp_flash_attn_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// Head sizes as the kernel computes them: whole 64-element chunks (two fp32 vectors, one of fp16),
// the padding zero in every row it reads (the slots are zeroed once per op; DMA writes only the
// rows' own bytes).
constexpr uint32_t htp_fa_pad(uint32_t d) { return (d + 63) / 64 * 64; }

// Per-thread scratch after the slots, per head of an item: the query in the dot's even/odd order,
// the accumulators (even/odd halves), the running max, the denominator and the ALiBi slope.
constexpr uint32_t htp_fa_head_scratch_bytes(uint32_t d, uint32_t dv) { return htp_fa_pad(d) * 4 + htp_fa_pad(dv) * 4 + 3 * 128; }

// Bytes of a staged K/V row's 32-element blocks: the dequantized types', and F16's (64) where an
// item's heads share each block: widened to F32 once per block rather than once per head.
constexpr uint32_t htp_fa_stage_block_bytes(uint32_t kv_type, uint32_t heads) {
    return kv_type == HTP_TYPE_F16 ? (heads > 1 ? 64 : 0) : htp_kv_block_bytes(kv_type);
}
// A staged row's bytes in DDR: d elements of F16/BF16, or d / 32 blocks.
constexpr uint32_t htp_fa_staged_row_bytes(uint32_t kv_type, uint32_t d) {
    return kv_type == HTP_TYPE_F16 || kv_type == HTP_TYPE_BF16 ? d * 2 : d / 32 * htp_kv_block_bytes(kv_type);
}
// A staging area's row stride (the row's blocks whole, rounded up to a vector) and its bytes: a
// block's rows and a vector of slack for the dequantizer's unaligned loads.
constexpr uint32_t htp_fa_stage_stride(uint32_t block, uint32_t d) { return ((d + 31) / 32 * block + 127) / 128 * 128; }
constexpr uint32_t htp_fa_stage_bytes(uint32_t stage_stride) {
    return stage_stride == 0 ? 0 : HTP_FA_BLOCK * stage_stride + 128;
}

// One slot of the HVX kernel (byte offsets): the K block, the V block, per head a mask vector,
// query row and output row, then, for staged types, the staged K and V blocks. K and V rows are
// each F16 read in place (elem 2) or F32 rows (4: F32 in place, the staged types made F32 by HVX).
struct htp_fa_slot_layout {
    uint32_t k_elem, v_elem;
    uint32_t k_stride, v_stride;              // VTCM strides of the K and V rows: padded head size * elem
    uint32_t k_stage_stride, v_stage_stride;  // 0: the rows land in place
    uint32_t v_at, mask_at, q_at, out_at, k_stage_at, v_stage_at, bytes;  // the K block at 0
};
constexpr htp_fa_slot_layout htp_fa_slot_layout_of(uint32_t k_type, uint32_t v_type, uint32_t d, uint32_t dv,
                                                   uint32_t heads) {
    htp_fa_slot_layout l{};
    const uint32_t     k_block = htp_fa_stage_block_bytes(k_type, heads), v_block = htp_fa_stage_block_bytes(v_type, heads);
    l.k_elem                   = k_block != 0 || k_type == HTP_TYPE_F32 ? 4 : 2;
    l.v_elem                   = v_block != 0 || v_type == HTP_TYPE_F32 ? 4 : 2;
    l.k_stride                 = htp_fa_pad(d) * l.k_elem;
    l.v_stride                 = htp_fa_pad(dv) * l.v_elem;
    l.k_stage_stride           = k_block != 0 ? htp_fa_stage_stride(k_block, d) : 0;
    l.v_stage_stride           = v_block != 0 ? htp_fa_stage_stride(v_block, dv) : 0;
    l.v_at                   = HTP_FA_BLOCK * l.k_stride;
    l.mask_at                = l.v_at + HTP_FA_BLOCK * l.v_stride;
    l.q_at                   = l.mask_at + heads * 128;
    l.out_at                 = l.q_at + heads * htp_fa_pad(d) * 4;
    l.k_stage_at             = l.out_at + heads * htp_fa_pad(dv) * 4;
    l.v_stage_at             = l.k_stage_at + htp_fa_stage_bytes(l.k_stage_stride);
    l.bytes                  = l.v_stage_at + htp_fa_stage_bytes(l.v_stage_stride);
    return l;
}
constexpr uint64_t htp_fa_vtcm_size(uint32_t n_threads, uint32_t n_slots, uint32_t k_type, uint32_t v_type, uint32_t d,
                                    uint32_t dv, uint32_t heads) {
    return uint64_t(n_threads) * (uint64_t(n_slots) * htp_fa_slot_layout_of(k_type, v_type, d, dv, heads).bytes +
                                  uint64_t(heads) * htp_fa_head_scratch_bytes(d, dv));
}

// K/V of a type the HVX kernel dequantizes: both of it, rows of whole blocks in order, inside.
constexpr bool htp_fa_kv_blocks_inside(const htp_tensor & t) {
    const uint32_t bytes = htp_kv_block_bytes(t.type);
    if (t.type == HTP_TYPE_BF16) {  // elements, not blocks, nb[0] apart
        return htp_rows_inside(t, 2);
    }
    htp_tensor blocks = t;  // one "element" per block
    blocks.ne[0]      = t.ne[0] / 32;
    return bytes != 0 && t.ne[0] % 32 == 0 && htp_rows_inside(blocks, bytes);
}

// The layout FLASH_ATTN_EXT runs on (compares only: the NPU's guard checks it too). mask and sinks
// may be null; K and V each F16 or a dequantized type, or F32 where f32_kv (the HVX kernel).
constexpr bool htp_fa_layout_valid(const htp_tensor & q, const htp_tensor & k, const htp_tensor & v,
                                   const htp_tensor * mask, const htp_tensor * sinks, const htp_tensor & dst,
                                   bool f32_kv = false) {
    const uint32_t d         = q.ne[0], dv = v.ne[0];
    // K and V each F16 or a type dequantized in VTCM (BF16, the block types); HVX: F32 too.
    auto           kv_type_ok = [&](const htp_tensor & t) {
        return t.type == HTP_TYPE_F16 || htp_kv_block_bytes(t.type) != 0 || (f32_kv && t.type == HTP_TYPE_F32);
    };
    auto kv_rows_inside = [](const htp_tensor & t) {
        return htp_kv_block_bytes(t.type) != 0 ? htp_fa_kv_blocks_inside(t)
                                               : htp_rows_inside(t, t.type == HTP_TYPE_F32 ? 4 : 2);
    };
    // HVX: any head sizes up to HTP_FA_MAX_D, V's its own (padded to 64-element chunks); HMX: one,
    // a multiple of 64.
    const bool     sizes_ok  = f32_kv ? d != 0 && dv != 0 && d <= HTP_FA_MAX_D && dv <= HTP_FA_MAX_D
                                      : d != 0 && d % 64 == 0 && d <= HTP_FA_MAX_D && dv == d;
    // HVX: dims 3 (several sequences) of Q, K, V and the result alike (GGML's), the mask's repeated
    // over them; HMX: 1.
    const bool     dims3_ok  = q.ne[3] != 0 && k.ne[3] == q.ne[3] && v.ne[3] == q.ne[3] && dst.ne[3] == q.ne[3] &&
                               (f32_kv || q.ne[3] == 1);
    const bool     kv_ok     = kv_type_ok(k) && kv_type_ok(v);
    const bool     kv_inside = kv_rows_inside(k) && kv_rows_inside(v);
    if (q.type != HTP_TYPE_F32 || !kv_ok || dst.type != HTP_TYPE_F32 || !sizes_ok ||
        k.ne[0] != d || k.ne[1] == 0 || v.ne[1] != k.ne[1] || v.ne[2] != k.ne[2] || k.ne[2] == 0 ||
        q.ne[2] < k.ne[2] || !dims3_ok || dst.ne[0] != dv || dst.ne[1] != q.ne[2] ||
        dst.ne[2] != q.ne[1] || dst.nb[1] < dv * 4 || !htp_rows_inside(q, 4) ||
        !kv_inside || !htp_rows_inside(dst, 4)) {
        return false;
    }
    if (mask != nullptr) {
        const uint32_t elem = mask->type == HTP_TYPE_F16 ? 2 : 4;
        if ((mask->type != HTP_TYPE_F32 && mask->type != HTP_TYPE_F16) || mask->ne[0] < k.ne[1] || mask->ne[1] < q.ne[1] ||
            mask->ne[2] == 0 || mask->ne[3] == 0 || (!f32_kv && mask->ne[3] != 1) || !htp_rows_inside(*mask, elem)) {
            return false;
        }
    }
    return sinks == nullptr || (sinks->type == HTP_TYPE_F32 && sinks->nb[0] == 4 && sinks->ne[0] == q.ne[2] &&
                                uint64_t(sinks->ne[0]) * 4 <= sinks->size);
}

// The reason a FLASH_ATTN_EXT the layout check refuses is refused, for the common cases (host only).
constexpr htp_verdict htp_fa_refusal(const htp_tensor & q, const htp_tensor & k, const htp_tensor & v,
                                     const htp_tensor & dst, bool f32_kv, uint32_t max_d) {
    if (q.type != HTP_TYPE_F32 || dst.type != HTP_TYPE_F32) {
        return htp_refuse("the NPU attention takes F32 Q and gives F32 results");
    }
    auto kv_type_ok = [&](uint32_t t) {
        return t == HTP_TYPE_F16 || htp_kv_block_bytes(t) != 0 || (f32_kv && t == HTP_TYPE_F32);
    };
    if (!kv_type_ok(k.type) || !kv_type_ok(v.type)) {
        return htp_refuse(f32_kv ? "the NPU attention takes K and V each F16, F32, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 "
                                   "or IQ4_NL"
                                 : "the HMX attention takes K and V each F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 or IQ4_NL");
    }
    if (f32_kv ? q.ne[0] == 0 || q.ne[0] > max_d || v.ne[0] == 0 || v.ne[0] > max_d || k.ne[0] != q.ne[0]
               : q.ne[0] == 0 || q.ne[0] % 64 != 0 || q.ne[0] > max_d || k.ne[0] != q.ne[0] || v.ne[0] != q.ne[0]) {
        return htp_refuse(f32_kv ? "the NPU attention takes head sizes up to 576"
                                 : "the HMX attention takes one head size, a multiple of 64 up to 256");
    }
    if (!f32_kv && (q.ne[3] != 1 || k.ne[3] != 1 || v.ne[3] != 1)) {
        return htp_refuse("the HMX attention takes dims 3 of 1");
    }
    return htp_refuse("the NPU attention takes Q, K, V and the mask as rows in order, the mask F16/F32 covering "
                      "the keys and query rows, one F32 sink per head");
}

// params: GGML's op_params (scale 0, max_bias 1, logit_softcap 2).
inline htp_verdict prepare_flash_attn_kparams(const htp_tensor & q, const htp_tensor & k, const htp_tensor & v,
                                       const htp_tensor * mask, const htp_tensor * sinks, const htp_tensor & dst,
                                       const int32_t params[HTP_OP_MAX_PARAMS], uint32_t n_threads,
                                       uint32_t vtcm_size, htp_flash_attn_kparams * out) {
    const float max_bias = __builtin_bit_cast(float, params[1]);
    const float softcap  = __builtin_bit_cast(float, params[2]);
    if (!htp_fa_layout_valid(q, k, v, mask, sinks, dst, true)) {
        return htp_fa_refusal(q, k, v, dst, true, HTP_FA_MAX_D);
    }
    if (!(max_bias >= 0.0f) || !(softcap >= 0.0f) || (max_bias > 0.0f && mask == nullptr)) {
        return htp_refuse("max_bias or logit_softcap is negative or NaN, or ALiBi has no mask");
    }
    if (q.ne[2] % k.ne[2] != 0 || (mask != nullptr && q.ne[2] % mask->ne[2] != 0)) {
        return htp_refuse("the heads are not a whole number of K/V heads (or of mask slices)");
    }
    if (mask != nullptr && q.ne[3] % mask->ne[3] != 0) {
        return htp_refuse("the sequences (dim 3) are not a whole number of mask slices");
    }
    if (n_threads == 0) {
        return htp_refuse("the session's thread count is out of range");
    }
    htp_flash_attn_kparams kp{};
    if (uint64_t(q.ne[1]) * q.ne[2] * q.ne[3] > UINT32_MAX) {
        return htp_refuse("more than 2^32 query rows");
    }
    // The most heads of a GQA group per item that divide the group, fit, and leave an item for
    // every thread (decode has one query row: its heads are the only parallelism).
    const uint32_t group = q.ne[2] / k.ne[2];
    kp.heads             = group < HTP_FA_MAX_HEADS ? group : HTP_FA_MAX_HEADS;
    const uint64_t rows  = uint64_t(q.ne[1]) * q.ne[3];  // query rows of every sequence
    while (kp.heads > 1 && (group % kp.heads != 0 || rows * (q.ne[2] / kp.heads) < n_threads)) {
        --kp.heads;
    }
    kp.d             = q.ne[0];
    kp.dv            = v.ne[0];
    kp.n_kv          = k.ne[1];
    kp.n_blocks      = (kp.n_kv + HTP_FA_BLOCK - 1) / HTP_FA_BLOCK;
    kp.k_type        = k.type;
    kp.v_type        = v.type;
    kp.n_slots       = HTP_FA_MAX_SLOTS;
    uint32_t threads = n_threads;
    for (;;) {
        const uint64_t items = rows * (q.ne[2] / kp.heads);
        kp.n_threads         = items < threads ? uint32_t(items) : threads;
        kp.items_per_thread  = uint32_t((items + kp.n_threads - 1) / kp.n_threads);
        if (htp_fa_vtcm_size(kp.n_threads, kp.n_slots, kp.k_type, kp.v_type, kp.d, kp.dv, kp.heads) <= vtcm_size) {
            break;
        }
        if (kp.n_slots > 2) {
            --kp.n_slots;
        } else if (kp.heads > 1) {
            do {
                --kp.heads;
            } while (group % kp.heads != 0);
        } else if (threads > 1) {
            --threads;
        } else {
            return htp_refuse(HTP_REFUSED_VTCM);
        }
    }
    kp.vtcm_size = uint32_t(htp_fa_vtcm_size(kp.n_threads, kp.n_slots, kp.k_type, kp.v_type, kp.d, kp.dv, kp.heads));
    // GGML folds the softcap's division into the scale: s = softcap * tanh(q·k * (scale / softcap)).
    kp.scale     = softcap != 0.0f ? __builtin_bit_cast(uint32_t, __builtin_bit_cast(float, params[0]) / softcap)
                                   : uint32_t(params[0]);
    kp.mask      = htp_fa_mask_kind(mask);
    kp.has_sinks = sinks != nullptr;
    kp.div_head  = init_fastdiv(q.ne[2] / kp.heads);
    kp.div_group = init_fastdiv(q.ne[2] / k.ne[2]);
    kp.div_mask2 = init_fastdiv(mask != nullptr ? mask->ne[2] : 1);
    kp.softcap   = uint32_t(params[2]);
    if (max_bias > 0.0f) {
        uint32_t n_head_log2 = 1;
        while (n_head_log2 * 2 <= q.ne[2]) {
            n_head_log2 *= 2;
        }
        kp.n_head_log2 = n_head_log2;
        kp.alibi_c0    = __builtin_bit_cast(uint32_t, -max_bias / float(n_head_log2));
        kp.alibi_c1    = __builtin_bit_cast(uint32_t, -max_bias / 2.0f / float(n_head_log2));
    }
    *out         = kp;
    return HTP_TAKEN;
}

// src[3] the mask, src[4] the sinks: either may be absent.
inline htp_verdict prepare_flash_attn_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_flash_attn_kparams kp{};
    return htp_store_kparams(prepare_flash_attn_kparams(*a.src[0], *a.src[1], *a.src[2], a.src[3], a.src[4], *a.dst,
                                                        a.params, a.n_threads, a.vtcm_size, &kp),
                             kp, kparams);
}

} // namespace hexnpu::proto
