// The float half of the HVX matmul's tile dot products (the integer half: hvx-tile-unpack.h): a
// tile's 32 per-row integer sums with a quantized activation block (hvx-quant-act.h) scaled by the
// block's activation scale and the rows' weight scales into fp32, per weight type.
//
// The integer sums are exact: |sum| <= 32 * 128 * 127 (Q8_0), 32 * 32 * 127 (Q6_K) or less, below
// 2^22, so hvx_w_small_to_sf converts them exactly too.
#pragma once

#include "hvx-arith.h"
#include "hvx-hf-rows.h"
#include "hvx-tile-unpack.h"
#include "proto/tile-formats.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

// int32 -> fp32, exact for |v| < 2^22: v + 1.5 * 2^23 as float bits, minus 1.5 * 2^23.
inline HVX_Vector hvx_w_small_to_sf(HVX_Vector v) {
    return hvx_sf_sub(Q6_Vw_vadd_VwVw(v, hvx_splat_w(0x4B400000)), hvx_splat_sf(12582912.0f));
}

// acc + isum * (activation block scale) * (each row's weight scale, hvx_hf_rows_to_sf of the tile's).
inline HVX_Vector hvx_tile_accumulate(HVX_Vector acc, HVX_Vector isum, HVX_Vector w_scale, const HVX_Vector * act) {
    return hvx_sf_add(acc, hvx_sf_mul(hvx_sf_mul(hvx_w_small_to_sf(isum), act[8]), w_scale));
}

// The per-type tile kernels the matmul instantiates: unpack the quants, read the scales (sc[0..1])
// once per tile, then per activation row add the tile's fp32 contribution to the row's sums.

// Every tile kernel says how many 32-column activation blocks a tile covers (Q1_0: 4, Q2_0: 2).
struct one_block_tile {
    static constexpr uint32_t blocks     = 1;
    static constexpr bool     row_scaled = false;  // true: dequant(q) = q * sc[0], one scale per row
};

// x = d_r * value(q): one scale per row, sc[0].
// Every kernel also dequantizes (the HMX expansion, hvx-hmx-tiles.h): dequant(q, sc, s) is the
// value of code q (fp32, every lane a row) in 16-column half s, in the scalar reference's operation
// order (hexagon/repack-dequant.cpp), so the fp32 results are the reference's bit for bit.
struct row_scaled_tile : one_block_tile {
    static constexpr bool row_scaled = true;
    static HVX_Vector dequant(HVX_Vector q, const HVX_Vector * sc, uint32_t) { return hvx_sf_mul(q, sc[0]); }
    static HVX_Vector accumulate(HVX_Vector acc, const HVX_Vector * w, const HVX_Vector * sc, const HVX_Vector * a) {
        return hvx_tile_accumulate(acc, hvx_tile_isum(w, a), sc[0], a);
    }
};
// ... with the 32 fp16 row scales at vector ScaleVector of the tile.
template <uint32_t ScaleVector> struct fp16_row_scaled_tile : row_scaled_tile {
    static void scales(const HVX_Vector * t, HVX_Vector * sc) { sc[0] = hvx_hf_rows_to_sf(t[ScaleVector]); }
};
struct tile_q8_0 : fp16_row_scaled_tile<8> {
    static constexpr uint32_t type = 8;
    static void unpack(const HVX_Vector * t, HVX_Vector * w) { hvx_tile_unpack_q8_0(t, w); }
};
struct tile_q4_0 : fp16_row_scaled_tile<4> {
    static constexpr uint32_t type = 2;
    static void unpack(const HVX_Vector * t, HVX_Vector * w) { hvx_tile_unpack_q4_0(t, w); }
};
// Q1_0: x = +-d per row; a 128-column tile is 4 activation blocks, one vector each.
struct tile_q1_0 : fp16_row_scaled_tile<4> {
    static constexpr uint32_t type = 41, blocks = 4;
    static void unpack(const HVX_Vector * t, uint32_t sub, HVX_Vector * w) { hvx_unpack_q1_0(t[sub], w); }
};
// Q2_0: x = (c - 1) d per row; a 64-column tile is 2 activation blocks, two vectors each.
struct tile_q2_0 : fp16_row_scaled_tile<4> {
    static constexpr uint32_t type = 42, blocks = 2;
    static void unpack(const HVX_Vector * t, uint32_t sub, HVX_Vector * w) { hvx_unpack_q2_0(t + 2 * sub, w); }
};
// x = d * kvalues_iq4nl[q] per row.
struct tile_iq4_nl : fp16_row_scaled_tile<4> {
    static constexpr uint32_t type = 20;
    static void unpack(const HVX_Vector * t, HVX_Vector * w) { hvx_tile_unpack_iq4_nl(t, w); }
};
// x = kvalues_mxfp4[q] * 2^(e - 128) per row (GGML's ggml_e8m0_to_fp32_half of the row's E8M0
// byte e: the normal float (e - 1) << 23 from e = 2 on, 2^-127 and 2^-128 below). The 32 exponent
// bytes at byte 512 are widened to word lanes (order-preserving unpacks), so lane r = row r.
struct tile_mxfp4 : row_scaled_tile {
    static constexpr uint32_t type = 39;
    static void unpack(const HVX_Vector * t, HVX_Vector * w) { hvx_tile_unpack_mxfp4(t, w); }
    static void scales(const HVX_Vector * t, HVX_Vector * sc) {
        const HVX_Vector e      = Q6_V_lo_W(Q6_Wuw_vunpack_Vuh(Q6_V_lo_W(Q6_Wuh_vunpack_Vub(t[4]))));
        const HVX_Vector normal = Q6_Vw_vasl_VwR(Q6_Vw_vsub_VwVw(e, hvx_splat_w(1)), 23);
        HVX_Vector       s      = Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(e, hvx_splat_w(1)), hvx_splat_w(0x00400000), normal);
        sc[0]                   = Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(e, Q6_V_vzero()), hvx_splat_w(0x00200000), s);
    }
};
// x = D q + M per row: the dot is s (D isum + M sum(qa)).
struct tile_q4_k : one_block_tile {
    static constexpr uint32_t type = 12;
    static void unpack(const HVX_Vector * t, HVX_Vector * w) { hvx_tile_unpack_q4_k(t, w); }
    static void scales(const HVX_Vector * t, HVX_Vector * sc) { hvx_hf_pairs_to_sf(t[4], &sc[0], &sc[1]); }
    static HVX_Vector accumulate(HVX_Vector acc, const HVX_Vector * w, const HVX_Vector * sc, const HVX_Vector * a) {
        const HVX_Vector d = hvx_sf_mul(hvx_w_small_to_sf(hvx_tile_isum(w, a)), sc[0]);
        const HVX_Vector m = hvx_sf_mul(hvx_w_small_to_sf(a[9]), sc[1]);
        return hvx_sf_add(acc, hvx_sf_mul(hvx_sf_add(d, m), a[8]));
    }
    static HVX_Vector dequant(HVX_Vector q, const HVX_Vector * sc, uint32_t) { return hvx_sf_add(hvx_sf_mul(sc[0], q), sc[1]); }
};
// Q5_K: the Q4_K tile plus a 5th-bit plane; x = D q + M as Q4_K.
struct tile_q5_k : tile_q4_k {
    static constexpr uint32_t type = 13;
    static void unpack(const HVX_Vector * t, HVX_Vector * w) { hvx_tile_unpack_q5_k(t, w); }
};
// Q4_1: the same tile layout and value (x = d q + m per row).
struct tile_q4_1 : tile_q4_k {
    static constexpr uint32_t type = 3;
};
// x = D_s (q - 32), s the 16-column half: the dot is s (D_0 isum_0 + D_1 isum_1).
struct tile_q6_k : one_block_tile {
    static constexpr uint32_t type = 14;
    static void unpack(const HVX_Vector * t, HVX_Vector * w) { hvx_tile_unpack_q6_k(t, w); }
    static void scales(const HVX_Vector * t, HVX_Vector * sc) { hvx_hf_halves_to_sf(t[6], &sc[0], &sc[1]); }
    static HVX_Vector accumulate(HVX_Vector acc, const HVX_Vector * w, const HVX_Vector * sc, const HVX_Vector * a) {
        const HVX_Vector h0 = hvx_sf_mul(hvx_w_small_to_sf(hvx_tile_isum_groups(w, a, 0, 4)), sc[0]);
        const HVX_Vector h1 = hvx_sf_mul(hvx_w_small_to_sf(hvx_tile_isum_groups(w, a, 4, 4)), sc[1]);
        return hvx_sf_add(acc, hvx_sf_mul(hvx_sf_add(h0, h1), a[8]));
    }
    static HVX_Vector dequant(HVX_Vector q, const HVX_Vector * sc, uint32_t s) { return hvx_sf_mul(sc[s], q); }
};

// Q2_K: x = D_s q + M_s per row and 16-column half s, D_s = d sc_s and M_s = -dmin m_s; the dot is
// s (D_0 isum_0 + D_1 isum_1 + M_0 sum_0(qa) + M_1 sum_1(qa)). A tile's (m << 4 | sc) bytes are at
// byte 256 + 32 s + r; each row's d and -dmin sit in the super-block's tiles (group()).
struct tile_q2_k : one_block_tile {
    static constexpr uint32_t type = 10;
    static void unpack(const HVX_Vector * t, HVX_Vector * w) { hvx_tile_unpack_q2_k(t, w); }
    // dd[0] = d, dd[1] = -dmin of the 32 rows: the 8 fp16 at byte 320 of tiles 0..3 (d) and 4..7
    // (-dmin) of the super-block whose first tile is at `first`, tiles `stride` bytes apart.
    static void group(const uint8_t * first, uint32_t stride, HVX_Vector * dd) {
        for (uint32_t h = 0; h < 2; ++h) {
            auto field = [&](uint32_t j) {
                const HVX_Vector * t = reinterpret_cast<const HVX_Vector *>(first + (4 * h + j) * stride);
                return Q6_V_vror_VR(t[2], int32_t(64 - 16 * j));  // bytes 320..335 to 16 j
            };
            HVX_Vector v = field(3);
            v            = Q6_V_vmux_QVV(Q6_Q_vsetq_R(48), field(2), v);
            v            = Q6_V_vmux_QVV(Q6_Q_vsetq_R(32), field(1), v);
            v            = Q6_V_vmux_QVV(Q6_Q_vsetq_R(16), field(0), v);
            dd[h]        = hvx_hf_rows_to_sf(v);
        }
    }
    // sc[0..1] = D_0, D_1, sc[2..3] = M_0, M_1 from the raw bytes (widened to word lanes: row r).
    static void scales(const HVX_Vector * t, const HVX_Vector * dd, HVX_Vector * sc) {
        const HVX_VectorPair raw = Q6_Wuw_vunpack_Vuh(Q6_V_lo_W(Q6_Wuh_vunpack_Vub(t[2])));
        from_raw(Q6_V_lo_W(raw), Q6_V_hi_W(raw), dd[0], dd[1], sc);
    }
    static void from_raw(HVX_Vector raw0, HVX_Vector raw1, HVX_Vector d, HVX_Vector neg_dmin, HVX_Vector * sc) {
        const HVX_Vector low = hvx_splat_w(0xF);
        sc[0]                = hvx_sf_mul(d, hvx_w_small_to_sf(Q6_V_vand_VV(raw0, low)));
        sc[1]                = hvx_sf_mul(d, hvx_w_small_to_sf(Q6_V_vand_VV(raw1, low)));
        sc[2]                = hvx_sf_mul(neg_dmin, hvx_w_small_to_sf(Q6_Vuw_vlsr_VuwR(raw0, 4)));
        sc[3]                = hvx_sf_mul(neg_dmin, hvx_w_small_to_sf(Q6_Vuw_vlsr_VuwR(raw1, 4)));
    }
    static HVX_Vector accumulate(HVX_Vector acc, const HVX_Vector * w, const HVX_Vector * sc, const HVX_Vector * a) {
        const HVX_Vector sum0 = a[10], sum1 = Q6_Vw_vsub_VwVw(a[9], a[10]);
        HVX_Vector       x    = hvx_sf_mul(hvx_w_small_to_sf(hvx_tile_isum_groups(w, a, 0, 4)), sc[0]);
        x = hvx_sf_add(x, hvx_sf_mul(hvx_w_small_to_sf(hvx_tile_isum_groups(w, a, 4, 4)), sc[1]));
        x = hvx_sf_add(x, hvx_sf_mul(hvx_w_small_to_sf(sum0), sc[2]));
        x = hvx_sf_add(x, hvx_sf_mul(hvx_w_small_to_sf(sum1), sc[3]));
        return hvx_sf_add(acc, hvx_sf_mul(x, a[8]));
    }
    static HVX_Vector dequant(HVX_Vector q, const HVX_Vector * sc, uint32_t s) {
        return hvx_sf_add(hvx_sf_mul(sc[s], q), sc[2 + s]);
    }
};

// Q3_K: x = D_s q, the two 16-column halves' scales at byte 384 (as Q6_K's at 768).
struct tile_q3_k : tile_q6_k {
    static constexpr uint32_t type = 11;
    static void unpack(const HVX_Vector * t, HVX_Vector * w) { hvx_tile_unpack_q3_k(t, w); }
    static void scales(const HVX_Vector * t, HVX_Vector * sc) { hvx_hf_halves_to_sf(t[3], &sc[0], &sc[1]); }
};

// ---- flat K-quant blocks, staged by the DMA in vrmpy order (proto/htp-matmul.h): vector v of the
// staging holds 4 bytes of every row, word lane r = row r. One staging = one 256-column super-block
// of 32 rows; tile t = its 32-column sub-block t. Both reuse their tiled siblings' accumulate.

// Flat Q1_0 / Q2_0: [0, 4) the quant words, [4] d (low halfword). Activation block t is word t
// (Q1_0) or words 2t, 2t + 1 (Q2_0), against activations in the flat order (matmul-ops.cpp).
struct flat_d_scaled : row_scaled_tile {
    static void scales(const HVX_Vector * st, uint32_t, HVX_Vector * sc) {
        HVX_Vector unused;
        hvx_hf_pairs_to_sf(st[4], &sc[0], &unused);
    }
};
struct flat_q1_0 : flat_d_scaled {
    static constexpr uint32_t type = 41;
    static void unpack(const HVX_Vector * st, uint32_t t, HVX_Vector * w) { hvx_unpack_q1_0(st[t], w); }
};
struct flat_q2_0 : flat_d_scaled {
    static constexpr uint32_t type = 42;
    static void unpack(const HVX_Vector * st, uint32_t t, HVX_Vector * w) { hvx_unpack_q2_0(st + 2 * t, w); }
};

// Q5_0 flat: x = d (q - 16), d at [5] (high halfword); Q5_1 flat: x = d q + m, d | m << 16 at [5].
struct flat_q5_0 : row_scaled_tile {
    static constexpr uint32_t type = 6;
    static void unpack(const HVX_Vector * st, uint32_t, HVX_Vector * w) { hvx_flat_unpack_q5(st, w, 16); }
    static void scales(const HVX_Vector * st, uint32_t, HVX_Vector * sc) {
        HVX_Vector unused;
        hvx_hf_pairs_to_sf(st[5], &unused, &sc[0]);
    }
};
struct flat_q5_1 : tile_q4_k {
    static constexpr uint32_t type = 7;
    static void unpack(const HVX_Vector * st, uint32_t, HVX_Vector * w) { hvx_flat_unpack_q5(st, w, 0); }
    static void scales(const HVX_Vector * st, uint32_t, HVX_Vector * sc) { hvx_hf_pairs_to_sf(st[5], &sc[0], &sc[1]); }
};

// Q2_K flat: [0, 16) the qs words, [16, 20) scales[0..15], [20] d | dmin << 16. Sub-block t's halves
// have the bytes scales[2t], scales[2t + 1].
struct flat_q2_k : tile_q2_k {
    static void unpack(const HVX_Vector * st, uint32_t t, HVX_Vector * w) { hvx_flat_unpack_q2_k(st, t, w); }
    static void scales(const HVX_Vector * st, uint32_t t, HVX_Vector * sc) {
        HVX_Vector d, dmin;
        hvx_hf_pairs_to_sf(st[20], &d, &dmin);
        const uint32_t b = 2 * t;  // even: both bytes in word b / 4
        from_raw(hvx_byte_of_words(st[16 + b / 4], int(b % 4)), hvx_byte_of_words(st[16 + b / 4], int(b % 4 + 1)), d,
                 Q6_V_vxor_VV(dmin, hvx_splat_w(int32_t(0x80000000u))), sc);
    }
};

// Q4_K flat: [0, 32) the quant words (qs bytes 4g..4g+3), [32, 36) d | dmin << 16 and scales[0..11].
// Sub-block t sits in nibble t & 1 of qs bytes 32 (t >> 1) .. + 31.
struct flat_q4_k : tile_q4_k {
    static void unpack(const HVX_Vector * st, uint32_t t, HVX_Vector * w) { hvx_flat_unpack_q4_k(st, t, w); }
    // GGML's get_scale_min_k4 on every lane, then D = d sc and M = -dmin m in fp32.
    static void scales(const HVX_Vector * st, uint32_t t, HVX_Vector * sc) {
        auto scale_byte = [&](uint32_t b) { return hvx_byte_of_words(st[33 + b / 4], int(b % 4)); };
        HVX_Vector s, m;
        if (t < 4) {
            s = Q6_V_vand_VV(scale_byte(t), hvx_splat_w(63));
            m = Q6_V_vand_VV(scale_byte(t + 4), hvx_splat_w(63));
        } else {
            const HVX_Vector hi = scale_byte(t + 4);
            s = Q6_V_vor_VV(Q6_V_vand_VV(hi, hvx_splat_w(0xF)),
                            Q6_Vw_vasl_VwR(Q6_Vuw_vlsr_VuwR(scale_byte(t - 4), 6), 4));
            m = Q6_V_vor_VV(Q6_Vuw_vlsr_VuwR(hi, 4), Q6_Vw_vasl_VwR(Q6_Vuw_vlsr_VuwR(scale_byte(t), 6), 4));
        }
        HVX_Vector d, dmin;
        hvx_hf_pairs_to_sf(st[32], &d, &dmin);
        sc[0] = hvx_sf_mul(d, hvx_w_small_to_sf(s));
        sc[1] = Q6_V_vxor_VV(hvx_sf_mul(dmin, hvx_w_small_to_sf(m)), hvx_splat_w(int32_t(0x80000000u)));
    }
};

// Q5_K flat: Q4_K's staging (quants, header) plus the qh words at [36, 44); the same scales.
struct flat_q5_k : flat_q4_k {
    static constexpr uint32_t type = 13;
    static void unpack(const HVX_Vector * st, uint32_t t, HVX_Vector * w) { hvx_flat_unpack_q5_k(st, t, w); }
};

// Q6_K flat: [0, 32) ql words, [32, 48) qh words, [48, 52) the int8 scales, [52] d (low halfword).
// Sub-block t = (half h = t >> 2, quarter g = t & 3): low 4 bits in nibble g >> 1 of ql bytes
// 64h + 32 (g & 1) + k, high 2 bits at shift 2g of qh bytes 32h + k, scales[2t], [2t + 1].
struct flat_q6_k : tile_q6_k {
    static void unpack(const HVX_Vector * st, uint32_t t, HVX_Vector * w) { hvx_flat_unpack_q6_k(st, t, w); }
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

// Q3_K flat: GGML's 6-bit scale decode on every lane (scales[b] - 32 for b = 2t + s, from the 12
// packed bytes: low nibbles of bytes 0..7 or high nibbles, plus 2 bits of bytes 8..11), D = d (sc - 32).
struct flat_q3_k : tile_q3_k {
    static void unpack(const HVX_Vector * st, uint32_t t, HVX_Vector * w) { hvx_flat_unpack_q3_k(st, t, w); }
    static void scales(const HVX_Vector * st, uint32_t t, HVX_Vector * sc) {
        HVX_Vector d, unused;
        hvx_hf_pairs_to_sf(st[27], &d, &unused);
        for (uint32_t s = 0; s < 2; ++s) {
            const uint32_t   b    = 2 * t + s;
            const uint32_t   q    = b % 4;                               // byte within each word
            const HVX_Vector low  = hvx_byte_of_words(st[24 + (b / 4) % 2], int(q));  // scales[b % 8] for b < 8
            const HVX_Vector nib  = b < 8 ? Q6_V_vand_VV(low, hvx_splat_w(0xF)) : Q6_Vuw_vlsr_VuwR(low, 4);
            const HVX_Vector bits = hvx_byte_of_words(st[26], int(q));
            const HVX_Vector high = Q6_V_vand_VV(Q6_Vuw_vlsr_VuwR(bits, int32_t(2 * (b / 4))), hvx_splat_w(3));
            const HVX_Vector code = Q6_Vw_vsub_VwVw(Q6_V_vor_VV(nib, Q6_Vw_vasl_VwR(high, 4)), hvx_splat_w(32));
            sc[s]                 = hvx_sf_mul(d, hvx_w_small_to_sf(code));
        }
    }
};

} // namespace hexnpu::htp
