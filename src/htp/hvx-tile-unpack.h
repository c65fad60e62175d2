// The integer half of the HVX matmul: weight tiles (proto/tile-formats.h) and DMA-staged flat
// K-quant blocks unpacked into vrmpy operands (word lane r = four consecutive columns of weight row
// r, signed bytes), and their integer dot products with a quantized activation block. Integer HVX
// only (v66 and up): the same code runs under qemu-hexagon in the differential test
// (tests/qemu/htp-core-harness.h) and must give the x86 emulation's bits.
//
// The column-pair tiles (Q8_0, Q4_0, Q4_K) keep row r's values of columns 2cp, 2cp+1 side by side,
// 32 rows per 64 bytes (Q8_0) or, after the nibbles are split and interleaved, per 64 bytes. A
// halfword shuffle (vshuffh: halfword i and i+32 side by side) turns a vector of two column pairs
// into vrmpy byte order. Q6_K tiles are in vrmpy order already.
#pragma once

#include "vnpu/hvx/hvx.h"

#include <stdint.h>

namespace hexnpu::htp {

// A tile's quants as 8 vectors in vrmpy order (word lane r = four consecutive columns of row r,
// signed bytes), for every activation row to reuse. Q8_0: 8 vectors of two column pairs each.
inline void hvx_tile_unpack_q8_0(const HVX_Vector * tile, HVX_Vector * w) {
    for (int v = 0; v < 8; ++v) {
        w[v] = Q6_Vh_vshuff_Vh(tile[v]);
    }
}

// 4-bit column-pair tiles: 4 vectors of four column pairs each, low nibble the even column, the
// value q - offset as a signed byte (Q4_0: offset 8; Q4_K: 0, its minimum is a separate term).
inline void hvx_tile_unpack_nibbles(const HVX_Vector * tile, HVX_Vector * w, int32_t offset) {
    const HVX_Vector nibble = Q6_V_vsplat_R(0x0F0F0F0F);
    const HVX_Vector bias   = Q6_V_vsplat_R(offset * 0x01010101);
    for (int v = 0; v < 4; ++v) {
        const HVX_Vector     lo = Q6_Vb_vsub_VbVb(Q6_V_vand_VV(tile[v], nibble), bias);
        const HVX_Vector     hi = Q6_Vb_vsub_VbVb(Q6_V_vand_VV(Q6_Vub_vlsr_VubR(tile[v], 4), nibble), bias);
        const HVX_VectorPair cp = Q6_W_vshuff_VVR(hi, lo, -1);  // byte pairs (even, odd column)
        w[2 * v]                = Q6_Vh_vshuff_Vh(Q6_V_lo_W(cp));
        w[2 * v + 1]            = Q6_Vh_vshuff_Vh(Q6_V_hi_W(cp));
    }
}
inline void hvx_tile_unpack_q4_0(const HVX_Vector * tile, HVX_Vector * w) { hvx_tile_unpack_nibbles(tile, w, 8); }
inline void hvx_tile_unpack_q4_k(const HVX_Vector * tile, HVX_Vector * w) { hvx_tile_unpack_nibbles(tile, w, 0); }

// Q5_K: the Q4_K tile plus its 5th-bit plane at vector 5, whose byte L holds for quant vector v the
// high bit of its low nibble (bit 2v) and of its high nibble (bit 2v + 1) at the same byte L.
inline void hvx_tile_unpack_q5_k(const HVX_Vector * tile, HVX_Vector * w) {
    const HVX_Vector nibble = Q6_V_vsplat_R(0x0F0F0F0F);
    const HVX_Vector one    = Q6_V_vsplat_R(0x01010101);
    for (int v = 0; v < 4; ++v) {
        const HVX_Vector lo5 = Q6_Vh_vasl_VhR(Q6_V_vand_VV(Q6_Vub_vlsr_VubR(tile[5], 2 * v), one), 4);
        const HVX_Vector hi5 = Q6_Vh_vasl_VhR(Q6_V_vand_VV(Q6_Vub_vlsr_VubR(tile[5], 2 * v + 1), one), 4);
        const HVX_Vector lo  = Q6_V_vor_VV(Q6_V_vand_VV(tile[v], nibble), lo5);
        const HVX_Vector hi  = Q6_V_vor_VV(Q6_V_vand_VV(Q6_Vub_vlsr_VubR(tile[v], 4), nibble), hi5);
        const HVX_VectorPair cp = Q6_W_vshuff_VVR(hi, lo, -1);
        w[2 * v]                = Q6_Vh_vshuff_Vh(Q6_V_lo_W(cp));
        w[2 * v + 1]            = Q6_Vh_vshuff_Vh(Q6_V_hi_W(cp));
    }
}

// 4-bit tiles whose nibbles index a table of int8 values (IQ4_NL's kvalues_iq4nl, MXFP4's
// E2M1 values doubled): the Q4_0 layout, each nibble looked up with vlut32 (index bytes 0..15
// pick the low bytes of the table's halfwords 0..15).
inline void hvx_tile_unpack_lut(const HVX_Vector * tile, HVX_Vector * w, HVX_Vector table) {
    const HVX_Vector nibble = Q6_V_vsplat_R(0x0F0F0F0F);
    for (int v = 0; v < 4; ++v) {
        const HVX_Vector     lo = Q6_Vb_vlut32_VbVbR(Q6_V_vand_VV(tile[v], nibble), table, 0);
        const HVX_Vector     hi = Q6_Vb_vlut32_VbVbR(Q6_V_vand_VV(Q6_Vub_vlsr_VubR(tile[v], 4), nibble), table, 0);
        const HVX_VectorPair cp = Q6_W_vshuff_VVR(hi, lo, -1);
        w[2 * v]                = Q6_Vh_vshuff_Vh(Q6_V_lo_W(cp));
        w[2 * v + 1]            = Q6_Vh_vshuff_Vh(Q6_V_hi_W(cp));
    }
}
// GGML's kvalues_iq4nl, and as a vlut32 table (the values in halfwords 0..15): the tiles, the KV
// dequantizer (hvx-kv-dequant.h) and the SET_ROWS quantizer (hvx-quant-rows.h) share them.
inline constexpr int8_t HVX_IQ4NL_VALUES[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
struct alignas(128) hvx_lut16 {
    int16_t h[64];
};
constexpr hvx_lut16 hvx_lut16_of(const int8_t (&values)[16]) {
    hvx_lut16 t{};
    for (int i = 0; i < 16; ++i) {
        t.h[i] = values[i];
    }
    return t;
}
inline constexpr hvx_lut16 HVX_IQ4NL_LUT = hvx_lut16_of(HVX_IQ4NL_VALUES);
inline HVX_Vector hvx_iq4nl_table() { return *reinterpret_cast<const HVX_Vector *>(HVX_IQ4NL_LUT.h); }

inline void hvx_tile_unpack_iq4_nl(const HVX_Vector * tile, HVX_Vector * w) {
    hvx_tile_unpack_lut(tile, w, hvx_iq4nl_table());
}
inline void hvx_tile_unpack_mxfp4(const HVX_Vector * tile, HVX_Vector * w) {
    alignas(128) static const int16_t kTable[64] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
    hvx_tile_unpack_lut(tile, w, *reinterpret_cast<const HVX_Vector *>(kTable));
}

// A Q6_K code from its low 4 bits (at lo_shift of lo) and high 2 bits (at hi_shift of hi), minus 32.
// hi2 << 4 on halfwords: each byte stays below 0x40, so nothing crosses into the next byte.
inline HVX_Vector hvx_q6_value(HVX_Vector lo, int32_t lo_shift, HVX_Vector hi, int32_t hi_shift) {
    const HVX_Vector lo4 = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(lo, lo_shift), Q6_V_vsplat_R(0x0F0F0F0F));
    const HVX_Vector hi2 = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(hi, hi_shift), Q6_V_vsplat_R(0x03030303));
    return Q6_Vb_vsub_VbVb(Q6_V_vor_VV(lo4, Q6_Vh_vasl_VhR(hi2, 4)), Q6_V_vsplat_R(0x20202020));
}

// The 32 rows' integer sums of an unpacked tile with one activation block: two independent
// vrmpy chains (their latency overlaps), added at the end.
inline HVX_Vector hvx_tile_isum(const HVX_Vector * w, const HVX_Vector * act) {
    HVX_Vector even = Q6_V_vzero(), odd = Q6_V_vzero();
    for (int v = 0; v < 8; v += 2) {
        even = Q6_Vw_vrmpyacc_VwVbVb(even, w[v], act[v]);
        odd  = Q6_Vw_vrmpyacc_VwVbVb(odd, w[v + 1], act[v + 1]);
    }
    return Q6_Vw_vadd_VwVw(even, odd);
}

// Q6_K: already in vrmpy order. Group g's low 4 bits are nibble g & 1 of vector g >> 1, its high
// 2 bits at shift 2 (g & 3) of vector 4 + (g >> 2); the code minus 32 as a signed byte.
inline void hvx_tile_unpack_q6_k(const HVX_Vector * tile, HVX_Vector * w) {
    for (int g = 0; g < 8; ++g) {
        w[g] = hvx_q6_value(tile[g >> 1], 4 * (g & 1), tile[4 + (g >> 2)], 2 * (g & 3));
    }
}

// A Q3_K value low2 - 4 neg from its low 2 bits (at lo_shift of lo) and its "negative" bit (at
// neg_shift of neg; set means subtract 4), as a signed byte.
inline HVX_Vector hvx_q3_value(HVX_Vector lo, int32_t lo_shift, HVX_Vector neg, int32_t neg_shift) {
    const HVX_Vector low2 = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(lo, lo_shift), Q6_V_vsplat_R(0x03030303));
    const HVX_Vector n    = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(neg, neg_shift), Q6_V_vsplat_R(0x01010101));
    return Q6_Vb_vsub_VbVb(low2, Q6_Vh_vasl_VhR(n, 2));
}

// Q3_K: in vrmpy order. Group g's low 2 bits at shift 2 (g & 3) of vector g >> 2, its negative bit
// (set when q = low2 - 4) at bit g of vector 2.
inline void hvx_tile_unpack_q3_k(const HVX_Vector * tile, HVX_Vector * w) {
    for (int g = 0; g < 8; ++g) {
        w[g] = hvx_q3_value(tile[g >> 2], 2 * (g & 3), tile[2], g);
    }
}

// A 2-bit code (at shift of v) minus offset, as a signed byte.
inline HVX_Vector hvx_low2_value(HVX_Vector v, int32_t shift, int32_t offset) {
    const HVX_Vector code = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(v, shift), Q6_V_vsplat_R(0x03030303));
    return Q6_Vb_vsub_VbVb(code, Q6_V_vsplat_R(offset * 0x01010101));
}

// Q2_K: the P2(0) plane in vrmpy order, group g at shift 2 (g & 3) of vector g >> 2; the unsigned
// code (its minimum is a separate term).
inline void hvx_tile_unpack_q2_k(const HVX_Vector * tile, HVX_Vector * w) {
    for (int g = 0; g < 8; ++g) {
        w[g] = hvx_low2_value(tile[g >> 2], 2 * (g & 3), 0);
    }
}

// Q2_0: 32 columns (two vectors of the 64-column tile's four) in the P2 layout; the code minus 1.
// Flat Q2_0 words staged by the DMA (flat byte i of a word = elements 4i..4i+3) use the same
// extraction against activations in their order (htp/ops/matmul-ops.cpp).
inline void hvx_unpack_q2_0(const HVX_Vector * half, HVX_Vector * w) {
    for (int g = 0; g < 8; ++g) {
        w[g] = hvx_low2_value(half[g >> 2], 2 * (g & 3), 1);
    }
}

// Q1_0: 32 columns (one vector of the 128-column tile's four): group g is bit g of every byte, the
// value +1 for a set bit and -1 for a clear one. Flat Q1_0 words staged by the DMA likewise.
inline void hvx_unpack_q1_0(HVX_Vector bits, HVX_Vector * w) {
    const HVX_Vector one = Q6_V_vsplat_R(0x01010101);
    for (int g = 0; g < 8; ++g) {
        const HVX_Vector b = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(bits, g), one);
        w[g]               = Q6_Vb_vsub_VbVb(Q6_Vb_vadd_VbVb(b, b), one);
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

inline HVX_Vector hvx_byte_of_words(HVX_Vector v, int b) {
    return Q6_V_vand_VV(Q6_Vuw_vlsr_VuwR(v, 8 * b), Q6_V_vsplat_R(0xFF));
}

// Flat Q5_0 / Q5_1 staged: [0, 4) the qs words, [4] the qh word. Group g's low 4 bits are nibble
// g >> 2 of word g & 3 (flat byte j holds elements j and j + 16: in word order that is element
// 4g + i at byte i), its 5th bit is bit 4g + i of qh: the four bits qh >> 4g spread to bit 0 of
// bytes 0..3 by one multiply (x * 0x00204081: bit i moves to bit 8i, no partial products overlap),
// then to bit 4. The code minus offset (Q5_0: 16) as a signed byte.
inline void hvx_flat_unpack_q5(const HVX_Vector * st, HVX_Vector * w, int32_t offset) {
    const HVX_Vector nibble = Q6_V_vsplat_R(0x0F0F0F0F);
    const HVX_Vector spread = Q6_V_vsplat_R(0x00204081);
    for (int g = 0; g < 8; ++g) {
        const HVX_Vector lo4  = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(st[g & 3], 4 * (g >> 2)), nibble);
        const HVX_Vector bits = Q6_V_vand_VV(Q6_Vuw_vlsr_VuwR(st[4], 4 * g), Q6_V_vsplat_R(0xF));
        const HVX_Vector hi   = Q6_V_vand_VV(Q6_Vw_vmpyie_VwVuh(spread, bits), Q6_V_vsplat_R(0x01010101));
        w[g]                  = Q6_Vb_vsub_VbVb(Q6_V_vor_VV(lo4, Q6_Vw_vasl_VwR(hi, 4)), Q6_V_vsplat_R(offset * 0x01010101));
    }
}

// Flat Q2_K staged: [0, 16) the qs words. Sub-block t = (half h = t >> 2, j = t & 3): the code at
// shift 2j of qs bytes 32h + k, i.e. of the words 8h .. 8h + 7 in vrmpy order.
inline void hvx_flat_unpack_q2_k(const HVX_Vector * st, uint32_t t, HVX_Vector * w) {
    for (uint32_t kg = 0; kg < 8; ++kg) {
        w[kg] = hvx_low2_value(st[8 * (t >> 2) + kg], int32_t(2 * (t & 3)), 0);
    }
}

// Flat Q4_K staged (proto/htp-matmul.h): sub-block t sits in nibble t & 1 of the quant words
// 8 (t >> 1) .. + 7.
inline void hvx_flat_unpack_q4_k(const HVX_Vector * st, uint32_t t, HVX_Vector * w) {
    const HVX_Vector nibble = Q6_V_vsplat_R(0x0F0F0F0F);
    for (uint32_t kg = 0; kg < 8; ++kg) {
        w[kg] = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(st[8 * (t >> 1) + kg], 4 * (t & 1)), nibble);
    }
}

// Flat Q5_K staged: [0, 32) the quant words, [32, 36) the header, [36, 44) the qh words (qh bytes
// 4kg..4kg+3): sub-block t's 5th bit is bit t of qh byte k.
inline void hvx_flat_unpack_q5_k(const HVX_Vector * st, uint32_t t, HVX_Vector * w) {
    const HVX_Vector nibble = Q6_V_vsplat_R(0x0F0F0F0F);
    const HVX_Vector one    = Q6_V_vsplat_R(0x01010101);
    for (uint32_t kg = 0; kg < 8; ++kg) {
        const HVX_Vector lo4 = Q6_V_vand_VV(Q6_Vub_vlsr_VubR(st[8 * (t >> 1) + kg], int32_t(4 * (t & 1))), nibble);
        const HVX_Vector hi1 = Q6_Vh_vasl_VhR(Q6_V_vand_VV(Q6_Vub_vlsr_VubR(st[36 + kg], int32_t(t)), one), 4);
        w[kg]                = Q6_V_vor_VV(lo4, hi1);
    }
}

// Flat Q3_K staged: [0, 16) the qs words, [16, 24) the hmask words, [24, 27) the scale words, [27]
// d (low halfword). Sub-block t = (half h = t >> 2, j = t & 3): low 2 bits at shift 2j of qs bytes
// 32h + k, and the flat hmask bit t of byte k clear means q = low2 - 4.
inline void hvx_flat_unpack_q3_k(const HVX_Vector * st, uint32_t t, HVX_Vector * w) {
    for (uint32_t kg = 0; kg < 8; ++kg) {
        const HVX_Vector neg = Q6_V_vnot_V(st[16 + kg]);
        w[kg] = hvx_q3_value(st[8 * (t >> 2) + kg], int32_t(2 * (t & 3)), neg, int32_t(t));
    }
}

// Flat Q6_K staged: sub-block t = (half h = t >> 2, quarter g = t & 3): low 4 bits in nibble g >> 1
// of the ql words 16h + 8 (g & 1) + kg, high 2 bits at shift 2g of the qh words 32 + 8h + kg.
inline void hvx_flat_unpack_q6_k(const HVX_Vector * st, uint32_t t, HVX_Vector * w) {
    const uint32_t h = t >> 2, g = t & 3;
    for (uint32_t kg = 0; kg < 8; ++kg) {
        w[kg] = hvx_q6_value(st[16 * h + 8 * (g & 1) + kg], int32_t(4 * (g >> 1)), st[32 + 8 * h + kg], int32_t(2 * g));
    }
}

} // namespace hexnpu::htp
