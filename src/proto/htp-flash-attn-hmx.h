// FLASH_ATTN_EXT on the HMX unit (prefill): GGML's semantics as in htp-flash-attn.h, for head sizes
// that are multiples of 64 up to HTP_FA_HMX_MAX_D, no ALiBi and no softcap (those stay on the HVX
// path). A work item is 32 query rows of one head; the op runs its items in groups of
// group_items, and for each group walks the key blocks of 32 keys in lock step:
//   HVX  K rows (already landed by DMA, one transfer) transposed into HMX weight tiles, V rows
//        shuffled into weight tiles; then the next block's K rows, V rows and mask pushed, to land
//        while this block computes (staging and mask double buffered);
//   HMX  S = Q Kᵀ (Q as activation tiles, every row scaled by a power of two into [0.5, 1)),
//        stored fp16 with the scale 2^-8 (|S| then stays below fp16's range for d <= 256);
//   HVX  the online softmax per row in fp32 (scale, mask, running max, e^(s - max), denominator),
//        P as an fp16 activation tile, the accumulators' rescale factors;
//   HMX  P V per 32 output columns, stored fp16 with the scale 2^-5 (32 probabilities <= 1);
//   HVX  accumulators (fp32) = accumulators * rescale + P V.
// Then sinks, the division by the denominator and the rows' DMA to dst. Items past their last key
// block with an unmasked key (a causal prompt's) skip the rest: those blocks would add zero.
// K and V each F16 or a type dequantized in VTCM (BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL): such
// rows land in their own staging and are dequantized (as GGML does, hvx-kv-dequant.h) into fp32
// rows in the query staging (free during the key blocks), then rounded to the fp16 staging the
// tiles are made from.
//
// Accuracy: the unit accumulates in fp32; three fp16 roundings are added to the HVX path's fp32
// arithmetic: each score (relative 2^-11, so a logit s moves by up to |s| 2^-11 and its
// probability by that factor's exponential), each probability (2^-11) and each block's P V sum
// (2^-11 of it). Q's power-of-two row scale and the stores' 2^-8 and 2^-5 are exact (undone in
// fp32) and keep every stored value inside fp16's range: |S 2^-8| <= d 65504 2^-8 for d <= 256
// (|scaled q| < 1), |P V 2^-5| <= 32 |v| 2^-5. test-ops' NMSE vs the CPU: ~1e-7 (logits in the
// thousands: ~2e-6; the HVX path ~1e-13).
#pragma once

#include "fastdiv.h"
#include "htp-flash-attn.h"
#include "htp-msg.h"
#include "hw-model.h"

#include <stdint.h>

namespace hexnpu::proto {

inline constexpr uint32_t HTP_FA_HMX_MAX_D      = 256;
inline constexpr uint32_t HTP_FA_HMX_ROWS       = 32;  // query rows per item: one activation tile
inline constexpr uint32_t HTP_FA_HMX_MAX_GROUP  = 32;  // items per group
inline constexpr uint32_t HTP_FA_HMX_MIN_ROWS   = 8;   // query rows from which the host picks HMX
inline constexpr uint32_t HTP_FA_HMX_TILE_BYTES = 2048;

struct htp_fa_hmx_kparams {
    uint32_t       n_threads;
    uint32_t       d;            // head size (K and V)
    uint32_t       n_kv;
    uint32_t       n_blocks;     // ceil(n_kv / 32)
    uint32_t       n_items;      // n_qblocks * n_head
    uint32_t       group_items;  // items per group, 1..HTP_FA_HMX_MAX_GROUP
    uint32_t       item_bytes;   // VTCM per item (htp_fa_hmx_item_bytes)
    uint32_t       vtcm_size;    // the header and group_items items (htp_fa_hmx_vtcm_size)
    uint32_t       scale;        // float bits
    uint32_t       mask;         // htp_fa_mask
    uint32_t       has_sinks;
    fastdiv_values div_qblocks;  // item -> head = item / n_qblocks, query block = item % n_qblocks
    fastdiv_values div_group;    // K/V head = head / (n_head / n_head_kv)
    fastdiv_values div_mask2;    // the mask's head: head % mask.ne2
    uint32_t       k_type;       // F16, or a type dequantized in VTCM (htp_kv_block_bytes)
    uint32_t       v_type;
};
static_assert(sizeof(htp_fa_hmx_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// The VTCM stride of one staged row of d elements of a type dequantized in VTCM, as the HVX
// kernel's staging (0 for F16: its rows land in the fp16 staging directly).
constexpr uint32_t htp_fa_hmx_raw_row(uint32_t type, uint32_t d) {
    return type == HTP_TYPE_F16 ? 0 : htp_fa_stage_stride(htp_kv_block_bytes(type), d);
}

// One item's VTCM, in this order (tiles first, all 2048-aligned): Q activation tiles, K weight
// tiles, V weight tiles, P·V output tiles (d / 32 each), the S tile, the P tile, then the fp32
// accumulators (32 rows of d), the Q staging rows (32 rows of d fp32), two K and two V staging
// areas (32 rows of d fp16 each: block b lands in area b % 2), two mask blocks (32 rows of 128
// bytes), the staging of K and V rows that are dequantized (two each, htp_fa_stage_bytes: 32 rows
// of htp_fa_hmx_raw_row and the dequantizer's slack; none for F16) and the row state (per row a splat of its factor, running max,
// denominator and rescale: 4 x 32 vectors).
struct htp_fa_hmx_item_layout {
    uint32_t q_tiles, k_tiles, v_tiles, o_tiles, s_tile, p_tile, acc, q_stage, k_stage, v_stage, kv_stage_bytes, mask,
        k_raw, v_raw, k_raw_bytes, v_raw_bytes, state, bytes;
};
inline constexpr uint32_t HTP_FA_HMX_MASK_BYTES = 32 * 128;  // one mask block
constexpr htp_fa_hmx_item_layout htp_fa_hmx_item(uint32_t d, uint32_t k_type = HTP_TYPE_F16,
                                                 uint32_t v_type = HTP_TYPE_F16) {
    const uint32_t         t = d / 32 * HTP_FA_HMX_TILE_BYTES;
    htp_fa_hmx_item_layout l{};
    l.q_tiles = 0;
    l.k_tiles = l.q_tiles + t;
    l.v_tiles = l.k_tiles + t;
    l.o_tiles = l.v_tiles + t;
    l.s_tile  = l.o_tiles + t;
    l.p_tile  = l.s_tile + HTP_FA_HMX_TILE_BYTES;
    l.acc     = l.p_tile + HTP_FA_HMX_TILE_BYTES;
    l.q_stage = l.acc + HTP_FA_HMX_ROWS * d * 4;
    l.kv_stage_bytes = HTP_FA_HMX_ROWS * d * 2;
    l.k_stage = l.q_stage + HTP_FA_HMX_ROWS * d * 4;
    l.v_stage = l.k_stage + 2 * l.kv_stage_bytes;
    l.mask    = l.v_stage + 2 * l.kv_stage_bytes;
    static_assert(HTP_FA_HMX_ROWS == HTP_FA_BLOCK);  // a key block: the HVX kernel's staging sizes
    l.k_raw_bytes = htp_fa_stage_bytes(htp_fa_hmx_raw_row(k_type, d));
    l.v_raw_bytes = htp_fa_stage_bytes(htp_fa_hmx_raw_row(v_type, d));
    l.k_raw   = l.mask + 2 * HTP_FA_HMX_MASK_BYTES;
    l.v_raw   = l.k_raw + 2 * l.k_raw_bytes;
    l.state   = l.v_raw + 2 * l.v_raw_bytes;
    // Rounded up so the next item's tiles start on a tile boundary.
    l.bytes   = (l.state + 4 * HTP_FA_HMX_ROWS * 128 + HTP_FA_HMX_TILE_BYTES - 1) / HTP_FA_HMX_TILE_BYTES *
              HTP_FA_HMX_TILE_BYTES;
    return l;
}
inline constexpr uint32_t HTP_FA_HMX_HEADER = 2048;  // the two scale/bias blocks, keeping item tiles aligned

// Item n's offset from the op's VTCM base (bank-aligned): items follow each other after the header,
// except that an item whose tiles (the HMX operands, [0, acc) of its layout) would cross a VTCM bank
// boundary starts at the boundary instead. At most HTP_FA_HMX_MAX_GROUP steps.
constexpr uint32_t htp_fa_hmx_item_offset(uint32_t n, uint32_t d, uint32_t k_type = HTP_TYPE_F16,
                                          uint32_t v_type = HTP_TYPE_F16) {
    const htp_fa_hmx_item_layout l   = htp_fa_hmx_item(d, k_type, v_type);
    uint32_t                     off = HTP_FA_HMX_HEADER;
    for (uint32_t i = 0;; ++i) {
        const uint32_t last = off + l.acc - 1;
        if (off / HW_VTCM_BANK_BYTES != last / HW_VTCM_BANK_BYTES) {
            off = last / HW_VTCM_BANK_BYTES * HW_VTCM_BANK_BYTES;
        }
        if (i == n) {
            return off;
        }
        off += l.bytes;
    }
}
// The VTCM of a group of `items` items.
constexpr uint64_t htp_fa_hmx_vtcm_size(uint32_t items, uint32_t d, uint32_t k_type = HTP_TYPE_F16,
                                        uint32_t v_type = HTP_TYPE_F16) {
    return uint64_t(htp_fa_hmx_item_offset(items - 1, d, k_type, v_type)) + htp_fa_hmx_item(d, k_type, v_type).bytes;
}

// params: GGML's op_params (scale 0, max_bias 1, logit_softcap 2). Refused where the HVX path has to
// do it (ALiBi, softcap, a head size it does not take) or the VTCM cannot hold one item.
inline htp_verdict prepare_flash_attn_hmx_kparams(const htp_tensor & q, const htp_tensor & k, const htp_tensor & v,
                                           const htp_tensor * mask, const htp_tensor * sinks, const htp_tensor & dst,
                                           const int32_t params[HTP_OP_MAX_PARAMS], uint32_t n_threads,
                                           uint32_t vtcm_size, htp_fa_hmx_kparams * out) {
    const float max_bias = __builtin_bit_cast(float, params[1]);
    const float softcap  = __builtin_bit_cast(float, params[2]);
    if (!htp_fa_layout_valid(q, k, v, mask, sinks, dst) || q.ne[0] > HTP_FA_HMX_MAX_D) {
        return htp_fa_refusal(q, k, v, dst, false, HTP_FA_HMX_MAX_D);
    }
    if (max_bias != 0.0f || softcap != 0.0f) {
        return htp_refuse("the HMX attention has no ALiBi or softcap");
    }
    if (q.ne[2] % k.ne[2] != 0 || (mask != nullptr && q.ne[2] % mask->ne[2] != 0)) {
        return htp_refuse("the heads are not a whole number of K/V heads (or of mask slices)");
    }
    if (n_threads == 0) {
        return htp_refuse("the session's thread count is out of range");
    }
    htp_fa_hmx_kparams kp{};
    const uint64_t     qblocks = (uint64_t(q.ne[1]) + HTP_FA_HMX_ROWS - 1) / HTP_FA_HMX_ROWS;
    if (qblocks * q.ne[2] > UINT32_MAX) {
        return htp_refuse("more than 2^32 query blocks");
    }
    kp.d           = q.ne[0];
    kp.n_kv        = k.ne[1];
    kp.n_blocks    = (kp.n_kv + 31) / 32;
    kp.n_items     = uint32_t(qblocks * q.ne[2]);
    kp.k_type      = k.type;
    kp.v_type      = v.type;
    kp.item_bytes  = htp_fa_hmx_item(kp.d, kp.k_type, kp.v_type).bytes;
    kp.group_items = kp.n_items < HTP_FA_HMX_MAX_GROUP ? kp.n_items : HTP_FA_HMX_MAX_GROUP;
    while (kp.group_items > 1 && htp_fa_hmx_vtcm_size(kp.group_items, kp.d, kp.k_type, kp.v_type) > vtcm_size) {
        --kp.group_items;
    }
    if (htp_fa_hmx_vtcm_size(kp.group_items, kp.d, kp.k_type, kp.v_type) > vtcm_size) {
        return htp_refuse(HTP_REFUSED_VTCM);
    }
    kp.n_threads   = kp.group_items < n_threads ? kp.group_items : n_threads;
    kp.vtcm_size   = uint32_t(htp_fa_hmx_vtcm_size(kp.group_items, kp.d, kp.k_type, kp.v_type));
    kp.scale       = uint32_t(params[0]);
    kp.mask        = htp_fa_mask_kind(mask);
    kp.has_sinks   = sinks != nullptr;
    kp.div_qblocks = init_fastdiv(uint32_t(qblocks));
    kp.div_group   = init_fastdiv(q.ne[2] / k.ne[2]);
    kp.div_mask2   = init_fastdiv(mask != nullptr ? mask->ne[2] : 1);
    *out           = kp;
    return HTP_TAKEN;
}

inline htp_verdict prepare_flash_attn_hmx_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_fa_hmx_kparams kp{};
    return htp_store_kparams(prepare_flash_attn_hmx_kparams(*a.src[0], *a.src[1], *a.src[2], a.src[3], a.src[4],
                                                            *a.dst, a.params, a.n_threads, a.vtcm_size, &kp),
                             kp, kparams);
}

} // namespace hexnpu::proto
