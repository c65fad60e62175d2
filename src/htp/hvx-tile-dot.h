// Dot products of one 32x32 weight tile (proto/tile-formats.h, in VTCM) with quantized activation
// blocks (hvx-quant-act.h): the tile unpacked once into vrmpy operands, then per activation row the
// 32 rows' integer sums (word lane r = row r), scaled by the block's activation scale and the rows'
// fp16 weight scales into fp32.
//
// The column-pair tiles (Q8_0, Q4_0) keep row r's two values of columns 2cp, 2cp+1 side by side,
// 32 rows per 64 (Q8_0) or, after the nibbles are split and interleaved, per 64 bytes (Q4_0). A
// halfword shuffle (vshuffh: halfword i and i+32 side by side) turns a vector of two column pairs
// into vrmpy byte order, word lane r = four consecutive columns of row r.
//
// The integer sums are exact: |sum| <= 32 * 128 * 127 (Q8_0), 32 * 32 * 127 (Q6_K) or less, below
// 2^22, so hvx_w_small_to_sf converts them exactly too.
#pragma once

#include "hvx-arith.h"
#include "hvx-hf-rows.h"
#include "proto/tile-formats.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

// A tile's quants as 8 vectors in vrmpy order (word lane r = four consecutive columns of row r,
// signed bytes), for every activation row to reuse. Q8_0: 8 vectors of two column pairs each.
inline void hvx_tile_unpack_q8_0(const HVX_Vector * tile, HVX_Vector * w) {
    for (int v = 0; v < 8; ++v) {
        w[v] = Q6_Vh_vshuff_Vh(tile[v]);
    }
}

// Q4_0: 4 vectors of four column pairs each, low nibble the even column; q - 8 as a signed byte.
inline void hvx_tile_unpack_q4_0(const HVX_Vector * tile, HVX_Vector * w) {
    const HVX_Vector nibble = hvx_splat_w(0x0F0F0F0F);
    const HVX_Vector eight  = hvx_splat_w(0x08080808);
    for (int v = 0; v < 4; ++v) {
        const HVX_Vector     lo = Q6_Vb_vsub_VbVb(Q6_V_vand_VV(tile[v], nibble), eight);
        const HVX_Vector     hi = Q6_Vb_vsub_VbVb(Q6_V_vand_VV(Q6_Vub_vlsr_VubR(tile[v], 4), nibble), eight);
        const HVX_VectorPair cp = Q6_W_vshuff_VVR(hi, lo, -1);  // byte pairs (even, odd column)
        w[2 * v]                = Q6_Vh_vshuff_Vh(Q6_V_lo_W(cp));
        w[2 * v + 1]            = Q6_Vh_vshuff_Vh(Q6_V_hi_W(cp));
    }
}

// The 32 rows' integer sums of an unpacked tile with one activation block.
inline HVX_Vector hvx_tile_isum(const HVX_Vector * w, const HVX_Vector * act) {
    HVX_Vector acc = Q6_V_vzero();
    for (int v = 0; v < 8; ++v) {
        acc = Q6_Vw_vrmpyacc_VwVbVb(acc, w[v], act[v]);
    }
    return acc;
}

// int32 -> fp32, exact for |v| < 2^22: v + 1.5 * 2^23 as float bits, minus 1.5 * 2^23.
inline HVX_Vector hvx_w_small_to_sf(HVX_Vector v) {
    return hvx_sf_sub(Q6_Vw_vadd_VwVw(v, hvx_splat_w(0x4B400000)), hvx_splat_sf(12582912.0f));
}

// Q4_K: the Q4_0 nibble layout without the offset (q in 0..15).
inline void hvx_tile_unpack_q4_k(const HVX_Vector * tile, HVX_Vector * w) {
    const HVX_Vector nibble = hvx_splat_w(0x0F0F0F0F);
    for (int v = 0; v < 4; ++v) {
        const HVX_Vector     lo = Q6_V_vand_VV(tile[v], nibble);
        const HVX_Vector     hi = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(tile[v], 4), nibble);
        const HVX_VectorPair cp = Q6_W_vshuff_VVR(hi, lo, -1);
        w[2 * v]                = Q6_Vh_vshuff_Vh(Q6_V_lo_W(cp));
        w[2 * v + 1]            = Q6_Vh_vshuff_Vh(Q6_V_hi_W(cp));
    }
}

// Q6_K: already in vrmpy order. Group g's low 4 bits are nibble g & 1 of vector g >> 1, its high
// 2 bits at shift 2 (g & 3) of vector 4 + (g >> 2); the code minus 32 as a signed byte.
inline void hvx_tile_unpack_q6_k(const HVX_Vector * tile, HVX_Vector * w) {
    const HVX_Vector nibble = hvx_splat_w(0x0F0F0F0F);
    const HVX_Vector two    = hvx_splat_w(0x03030303);
    const HVX_Vector bias   = hvx_splat_w(0x20202020);
    for (int g = 0; g < 8; ++g) {
        const HVX_Vector lo4 = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(tile[g >> 1], 4 * (g & 1)), nibble);
        const HVX_Vector hi2 = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(tile[4 + (g >> 2)], 2 * (g & 3)), two);
        // hi2 << 4 on halfwords: each byte stays below 0x40, so nothing crosses into the next byte.
        w[g] = Q6_Vb_vsub_VbVb(Q6_V_vor_VV(lo4, Q6_Vh_vasl_VhR(hi2, 4)), bias);
    }
}

// The integer sums of groups [g0, g0 + n) only: Q6_K's two 16-column halves have their own scales.
inline HVX_Vector hvx_tile_isum_groups(const HVX_Vector * w, const HVX_Vector * act, int g0, int n) {
    HVX_Vector acc = Q6_V_vzero();
    for (int g = g0; g < g0 + n; ++g) {
        acc = Q6_Vw_vrmpyacc_VwVbVb(acc, w[g], act[g]);
    }
    return acc;
}

// acc + isum * (activation block scale) * (each row's weight scale, hvx_hf_rows_to_sf of the tile's).
inline HVX_Vector hvx_tile_accumulate(HVX_Vector acc, HVX_Vector isum, HVX_Vector w_scale, const HVX_Vector * act) {
    return hvx_sf_add(acc, hvx_sf_mul(hvx_sf_mul(hvx_w_small_to_sf(isum), act[8]), w_scale));
}

// The per-type tile kernels the matmul instantiates: unpack the quants, read the scales (sc[0..1])
// once per tile, then per activation row add the tile's fp32 contribution to the row's sums.
struct tile_q8_0 {
    static constexpr uint32_t type = 8;
    static void unpack(const HVX_Vector * t, HVX_Vector * w) { hvx_tile_unpack_q8_0(t, w); }
    static void scales(const HVX_Vector * t, HVX_Vector * sc) { sc[0] = hvx_hf_rows_to_sf(t[8]); }
    static HVX_Vector accumulate(HVX_Vector acc, const HVX_Vector * w, const HVX_Vector * sc, const HVX_Vector * a) {
        return hvx_tile_accumulate(acc, hvx_tile_isum(w, a), sc[0], a);
    }
};
struct tile_q4_0 {
    static constexpr uint32_t type = 2;
    static void unpack(const HVX_Vector * t, HVX_Vector * w) { hvx_tile_unpack_q4_0(t, w); }
    static void scales(const HVX_Vector * t, HVX_Vector * sc) { sc[0] = hvx_hf_rows_to_sf(t[4]); }
    static HVX_Vector accumulate(HVX_Vector acc, const HVX_Vector * w, const HVX_Vector * sc, const HVX_Vector * a) {
        return hvx_tile_accumulate(acc, hvx_tile_isum(w, a), sc[0], a);
    }
};
// x = D q + M per row: the dot is s (D isum + M sum(qa)).
struct tile_q4_k {
    static constexpr uint32_t type = 12;
    static void unpack(const HVX_Vector * t, HVX_Vector * w) { hvx_tile_unpack_q4_k(t, w); }
    static void scales(const HVX_Vector * t, HVX_Vector * sc) { hvx_hf_pairs_to_sf(t[4], &sc[0], &sc[1]); }
    static HVX_Vector accumulate(HVX_Vector acc, const HVX_Vector * w, const HVX_Vector * sc, const HVX_Vector * a) {
        const HVX_Vector d = hvx_sf_mul(hvx_w_small_to_sf(hvx_tile_isum(w, a)), sc[0]);
        const HVX_Vector m = hvx_sf_mul(hvx_w_small_to_sf(a[9]), sc[1]);
        return hvx_sf_add(acc, hvx_sf_mul(hvx_sf_add(d, m), a[8]));
    }
};
// x = D_s (q - 32), s the 16-column half: the dot is s (D_0 isum_0 + D_1 isum_1).
struct tile_q6_k {
    static constexpr uint32_t type = 14;
    static void unpack(const HVX_Vector * t, HVX_Vector * w) { hvx_tile_unpack_q6_k(t, w); }
    static void scales(const HVX_Vector * t, HVX_Vector * sc) {
        sc[0] = hvx_hf_rows_to_sf(t[6]);
        sc[1] = hvx_hf_rows_to_sf(Q6_V_vror_VR(t[6], 64));
    }
    static HVX_Vector accumulate(HVX_Vector acc, const HVX_Vector * w, const HVX_Vector * sc, const HVX_Vector * a) {
        const HVX_Vector h0 = hvx_sf_mul(hvx_w_small_to_sf(hvx_tile_isum_groups(w, a, 0, 4)), sc[0]);
        const HVX_Vector h1 = hvx_sf_mul(hvx_w_small_to_sf(hvx_tile_isum_groups(w, a, 4, 4)), sc[1]);
        return hvx_sf_add(acc, hvx_sf_mul(hvx_sf_add(h0, h1), a[8]));
    }
};

// ---- flat K-quant blocks, staged by the DMA in vrmpy order (proto/htp-matmul.h): vector v of the
// staging holds 4 bytes of every row, word lane r = row r. One staging = one 256-column super-block
// of 32 rows; tile t = its 32-column sub-block t. Both reuse their tiled siblings' accumulate.

inline HVX_Vector hvx_byte_of_words(HVX_Vector v, int b) {
    return Q6_V_vand_VV(Q6_Vuw_vlsr_VuwR(v, 8 * b), hvx_splat_w(0xFF));
}

// Q4_K flat: [0, 32) the quant words (qs bytes 4g..4g+3), [32, 36) d | dmin << 16 and scales[0..11].
// Sub-block t sits in nibble t & 1 of qs bytes 32 (t >> 1) .. + 31.
struct flat_q4_k : tile_q4_k {
    static void unpack(const HVX_Vector * st, uint32_t t, HVX_Vector * w) {
        const HVX_Vector nibble = hvx_splat_w(0x0F0F0F0F);
        for (uint32_t kg = 0; kg < 8; ++kg) {
            w[kg] = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(st[8 * (t >> 1) + kg], 4 * (t & 1)), nibble);
        }
    }
    // GGML's get_scale_min_k4 on every lane, then D = d sc and M = -dmin m in fp32.
    static void scales(const HVX_Vector * st, uint32_t t, HVX_Vector * sc) {
        auto scale_byte = [&](uint32_t b) { return hvx_byte_of_words(st[33 + b / 4], int(b % 4)); };
        HVX_Vector s, m;
        if (t < 4) {
            s = Q6_V_vand_VV(scale_byte(t), hvx_splat_w(63));
            m = Q6_V_vand_VV(scale_byte(t + 4), hvx_splat_w(63));
        } else {
            const HVX_Vector hi = scale_byte(t + 4);
            s = Q6_V_vor_VV(Q6_V_vand_VV(hi, hvx_splat_w(0xF)), Q6_Vw_vasl_VwR(Q6_Vuw_vlsr_VuwR(scale_byte(t - 4), 6), 4));
            m = Q6_V_vor_VV(Q6_Vuw_vlsr_VuwR(hi, 4), Q6_Vw_vasl_VwR(Q6_Vuw_vlsr_VuwR(scale_byte(t), 6), 4));
        }
        HVX_Vector d, dmin;
        hvx_hf_pairs_to_sf(st[32], &d, &dmin);
        sc[0] = hvx_sf_mul(d, hvx_w_small_to_sf(s));
        sc[1] = Q6_V_vxor_VV(hvx_sf_mul(dmin, hvx_w_small_to_sf(m)), hvx_splat_w(int32_t(0x80000000u)));
    }
};

// Q6_K flat: [0, 32) ql words, [32, 48) qh words, [48, 52) the int8 scales, [52] d (low halfword).
// Sub-block t = (half h = t >> 2, quarter g = t & 3): low 4 bits in nibble g >> 1 of ql bytes
// 64h + 32 (g & 1) + k, high 2 bits at shift 2g of qh bytes 32h + k, scales[2t], [2t + 1].
struct flat_q6_k : tile_q6_k {
    static void unpack(const HVX_Vector * st, uint32_t t, HVX_Vector * w) {
        const uint32_t   h = t >> 2, g = t & 3;
        const HVX_Vector nibble = hvx_splat_w(0x0F0F0F0F);
        const HVX_Vector two    = hvx_splat_w(0x03030303);
        const HVX_Vector bias   = hvx_splat_w(0x20202020);
        for (uint32_t kg = 0; kg < 8; ++kg) {
            const HVX_Vector lo4 = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(st[16 * h + 8 * (g & 1) + kg], 4 * (g >> 1)), nibble);
            const HVX_Vector hi2 = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(st[32 + 8 * h + kg], 2 * g), two);
            w[kg]                = Q6_Vb_vsub_VbVb(Q6_V_vor_VV(lo4, Q6_Vh_vasl_VhR(hi2, 4)), bias);
        }
    }
    static void scales(const HVX_Vector * st, uint32_t t, HVX_Vector * sc) {
        HVX_Vector d, unused;
        hvx_hf_pairs_to_sf(st[52], &d, &unused);
        for (uint32_t s = 0; s < 2; ++s) {
            const uint32_t   b  = 2 * t + s;  // the int8 scale, sign-extended from its byte
            const HVX_Vector sb = Q6_Vw_vasr_VwR(Q6_Vw_vasl_VwR(st[48 + b / 4], int32_t(24 - 8 * (b % 4))), 24);
            sc[s]               = hvx_sf_mul(d, hvx_w_small_to_sf(sb));
        }
    }
};

} // namespace hexnpu::htp
