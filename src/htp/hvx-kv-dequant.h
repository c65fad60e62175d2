// The KV-cache types llama.cpp offers beyond F32 (-ctk/-ctv: F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// IQ4_NL) as fp32, one 32-element block per vector in element order, bit for bit as GGML's
// dequantize_row_* (the same fp32 operations: q * d, q * d + m): flash attention dequantizes each
// K/V block in VTCM after its DMA. A block is read from any byte offset (unaligned loads: the
// quantized rows are packed, 18..34 bytes a block); its fp16 scales by scalar loads.
#pragma once

#include "hvx-arith.h"
#include "hvx-hf-rows.h"
#include "hvx-sort.h"
#include "hvx-tile-dot.h"
#include "hvx-tile-unpack.h"
#include "proto/htp-types.h"
#include "vnpu/hvx/hvx-memory.h"
#include "vnpu/hvx/hvx.h"

#include <stdint.h>

namespace hexnpu::htp {

using hvx::load_unaligned;

// The fp16 at p, in every lane as fp32.
inline HVX_Vector hvx_kv_scale(const uint8_t * p) {
    uint16_t h;
    __builtin_memcpy(&h, p, 2);
    return hvx_hf_rows_to_sf(Q6_Vh_vsplat_R(h));
}

// Bytes 0..15 of q: their low nibbles as elements 0..15, their high nibbles as 16..31 (GGML's
// 4-bit block order), one byte each.
inline HVX_Vector hvx_kv_nibbles(HVX_Vector q) {
    const HVX_Vector nibble = Q6_V_vsplat_R(0x0F0F0F0F);
    const HVX_Vector lo     = Q6_V_vand_VV(q, nibble);
    const HVX_Vector hi     = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(q, 4), nibble);
    return Q6_V_vmux_QVV(Q6_Q_vsetq_R(16), lo, Q6_V_vlalign_VVR(hi, Q6_V_vzero(), 16));
}

// Bytes 0..31 of b as 32 words, sign-extended.
inline HVX_Vector hvx_kv_bytes_to_w(HVX_Vector b) { return Q6_V_lo_W(Q6_Ww_vunpack_Vh(Q6_V_lo_W(Q6_Wh_vunpack_Vb(b)))); }

// Q5's fifth bits: bit e of the block's qh word, as 16 in lane e.
inline HVX_Vector hvx_kv_high_bits(const uint8_t * qh) {
    uint32_t bits;
    __builtin_memcpy(&bits, qh, 4);
    const HVX_Vector b = Q6_Vw_vlsr_VwVw(Q6_V_vsplat_R(int32_t(bits)), hvx_lane_index_w());
    return Q6_Vw_vasl_VwR(Q6_V_vand_VV(b, Q6_V_vsplat_R(1)), 4);
}

// The block at p of cache type Type as 32 fp32 lanes.
// Offsets within the block: proto::htp_qblock_layout_of.
template <uint32_t Type> inline HVX_Vector hvx_kv_dequant_block(const uint8_t * p) {
    constexpr proto::htp_qblock_layout l = proto::htp_qblock_layout_of(Type);
    if constexpr (Type == proto::HTP_TYPE_Q8_0) {
        return hvx_sf_mul(hvx_w_small_to_sf(hvx_kv_bytes_to_w(load_unaligned(p + l.codes_at))), hvx_kv_scale(p));
    } else if constexpr (Type == proto::HTP_TYPE_Q4_0) {
        const HVX_Vector q =
            Q6_Vw_vsub_VwVw(hvx_kv_bytes_to_w(hvx_kv_nibbles(load_unaligned(p + l.codes_at))), Q6_V_vsplat_R(8));
        return hvx_sf_mul(hvx_w_small_to_sf(q), hvx_kv_scale(p));
    } else if constexpr (Type == proto::HTP_TYPE_Q4_1) {
        const HVX_Vector q = hvx_kv_bytes_to_w(hvx_kv_nibbles(load_unaligned(p + l.codes_at)));
        return hvx_sf_add(hvx_sf_mul(hvx_w_small_to_sf(q), hvx_kv_scale(p)), hvx_kv_scale(p + l.min_at));
    } else if constexpr (Type == proto::HTP_TYPE_Q5_0) {
        const HVX_Vector q = Q6_Vw_vsub_VwVw(
            Q6_V_vor_VV(hvx_kv_bytes_to_w(hvx_kv_nibbles(load_unaligned(p + l.codes_at))), hvx_kv_high_bits(p + l.qh_at)),
            Q6_V_vsplat_R(16));
        return hvx_sf_mul(hvx_w_small_to_sf(q), hvx_kv_scale(p));
    } else if constexpr (Type == proto::HTP_TYPE_Q5_1) {
        const HVX_Vector q =
            Q6_V_vor_VV(hvx_kv_bytes_to_w(hvx_kv_nibbles(load_unaligned(p + l.codes_at))), hvx_kv_high_bits(p + l.qh_at));
        return hvx_sf_add(hvx_sf_mul(hvx_w_small_to_sf(q), hvx_kv_scale(p)), hvx_kv_scale(p + l.min_at));
    } else if constexpr (Type == proto::HTP_TYPE_IQ4_NL) {  // d * kvalues_iq4nl[nibble] by vlut32
        const HVX_Vector v = Q6_Vb_vlut32_VbVbR(hvx_kv_nibbles(load_unaligned(p + l.codes_at)), hvx_iq4nl_table(), 0);
        return hvx_sf_mul(hvx_w_small_to_sf(hvx_kv_bytes_to_w(v)), hvx_kv_scale(p));
    } else if constexpr (Type == proto::HTP_TYPE_F16) {
        return hvx_hf_rows_to_sf(load_unaligned(p));
    } else {  // BF16: the upper halves of fp32
        return Q6_Vw_vasl_VwR(Q6_V_lo_W(Q6_Wuw_vunpack_Vuh(load_unaligned(p))), 16);
    }
}

// n rows of `elems` elements each (rows src_stride bytes apart; F16 and BF16 any count, the block
// types whole blocks) into fp32 rows dst_stride bytes apart: whole vectors, the lanes past `elems`
// zero (F16/BF16 rows' last block reads on into the staging's stride or slack). One instance per
// type: a switch inside the loop would keep every type's constants live across it.
template <uint32_t Type>
__attribute__((noinline)) void hvx_kv_dequant_rows_as(const uint8_t * src, uint32_t src_stride, uint8_t * dst,
                                                      uint32_t dst_stride, uint32_t n, uint32_t elems) {
    constexpr uint32_t bytes = Type == proto::HTP_TYPE_F16 ? 64 : proto::htp_kv_block_bytes(Type);
    const uint32_t     whole = elems / 32, tail = elems % 32;
    for (uint32_t r = 0; r < n; ++r) {
        HVX_Vector *    out = reinterpret_cast<HVX_Vector *>(dst + r * dst_stride);
        const uint8_t * in  = src + r * src_stride;
        for (uint32_t b = 0; b < whole; ++b) {
            out[b] = hvx_kv_dequant_block<Type>(in + b * bytes);
        }
        if (tail != 0) {
            out[whole] = Q6_V_vmux_QVV(Q6_Q_vsetq_R(int32_t(4 * tail)), hvx_kv_dequant_block<Type>(in + whole * bytes),
                                       Q6_V_vzero());
        }
    }
}

inline void hvx_kv_dequant_rows(uint32_t type, const uint8_t * src, uint32_t src_stride, uint8_t * dst,
                                uint32_t dst_stride, uint32_t n, uint32_t elems) {
    switch (type) {
        case proto::HTP_TYPE_Q8_0: return hvx_kv_dequant_rows_as<proto::HTP_TYPE_Q8_0>(src, src_stride, dst, dst_stride, n, elems);
        case proto::HTP_TYPE_Q4_0: return hvx_kv_dequant_rows_as<proto::HTP_TYPE_Q4_0>(src, src_stride, dst, dst_stride, n, elems);
        case proto::HTP_TYPE_Q4_1: return hvx_kv_dequant_rows_as<proto::HTP_TYPE_Q4_1>(src, src_stride, dst, dst_stride, n, elems);
        case proto::HTP_TYPE_Q5_0: return hvx_kv_dequant_rows_as<proto::HTP_TYPE_Q5_0>(src, src_stride, dst, dst_stride, n, elems);
        case proto::HTP_TYPE_Q5_1: return hvx_kv_dequant_rows_as<proto::HTP_TYPE_Q5_1>(src, src_stride, dst, dst_stride, n, elems);
        case proto::HTP_TYPE_IQ4_NL: return hvx_kv_dequant_rows_as<proto::HTP_TYPE_IQ4_NL>(src, src_stride, dst, dst_stride, n, elems);
        case proto::HTP_TYPE_F16: return hvx_kv_dequant_rows_as<proto::HTP_TYPE_F16>(src, src_stride, dst, dst_stride, n, elems);
        default: return hvx_kv_dequant_rows_as<proto::HTP_TYPE_BF16>(src, src_stride, dst, dst_stride, n, elems);
    }
}

} // namespace hexnpu::htp
