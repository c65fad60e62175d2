// GGML's row quantizers for the block types SET_ROWS writes, on HVX, one 32-element block per
// vector, bit for bit:
//   Q8_0 (quantize_row_q8_0_ref): amax = max |x|, d = amax / 127 and id = 1 / d (0 for d = 0)
//     correctly rounded (hvx_sf_div_rn), q = round(x id) half away from zero (std::round's).
//   Q4_0 / Q5_0 (quantize_row_q4_0_ref / _q5_0_ref): max = the first value of largest magnitude
//     (+0 for a block of zeros), d = max / -8 (/ -16, exact), id = 1 / d as above,
//     q = min(15, trunc(x id + 8.5)) (min(31, trunc(x id + 16.5))).
//   IQ4_NL (quantize_row_iq4_nl_ref): iq4_nl_rows below.
//   Q4_1 / Q5_1 (quantize_row_q4_1_ref / _q5_1_ref): min and max of the block (the first of equal
//     values: +0 and -0 as GGML's compares meet them), d = (max - min) / 15 (/ 31) correctly
//     rounded, id = 1 / d, q = min(15, trunc((x - min) id + 0.5)) (Q5_1: no min(31, ...)), m = min.
// The 4-bit codes: element j in the low nibble of byte j and element j + 16 in its high nibble
// (Q5: their low four bits), Q5's fifth bits as the word qh, bit j for element j. d and m stored
// as fp16. Blocks whose scale lies outside [2^-97, 2^93] divide within 1 ulp instead (hvx_sf_div),
// which may move a code by one there; non-finite inputs give codes GGML leaves undefined.
#pragma once

#include "hvx-arith.h"
#include "hvx-div.h"
#include "hvx-hf-rows.h"
#include "hvx-quant-act.h"
#include "hvx-sort.h"
#include "hvx-tile-unpack.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

// floor(y) for 0 <= y < 2^22, as words: the nearest integer (y + 2^23's low mantissa bits), one
// less where it lies above y.
inline HVX_Vector hvx_sf_floor_w(HVX_Vector y) {
    const HVX_Vector biased = hvx_sf_add(y, hvx_splat_sf(8388608.0f));
    const HVX_Vector frac   = hvx_sf_sub(y, hvx_sf_sub(biased, hvx_splat_sf(8388608.0f)));  // exact, in [-0.5, 0.5]
    const HVX_Vector n      = Q6_Vw_vsub_VwVw(biased, hvx_splat_w(0x4B000000));
    return Q6_Vw_vadd_VwVw(n, Q6_V_vmux_QVV(Q6_Q_vcmp_gt_VwVw(Q6_V_vzero(), frac), hvx_splat_w(-1), Q6_V_vzero()));
}

// round(y) half away from zero for |y| < 2^22, as words: |y| + 2^23 rounds to the nearest even
// integer, which sits in the low mantissa bits; where the dropped fraction (|y| minus that integer,
// exact) is exactly one half, one more.
inline HVX_Vector hvx_sf_round_away_w(HVX_Vector y) {
    const HVX_Vector sign   = Q6_V_vand_VV(y, hvx_splat_w(int32_t(0x80000000u)));
    const HVX_Vector ay     = Q6_V_vxor_VV(y, sign);
    const HVX_Vector biased = hvx_sf_add(ay, hvx_splat_sf(8388608.0f));
    const HVX_Vector frac   = hvx_sf_sub(ay, hvx_sf_sub(biased, hvx_splat_sf(8388608.0f)));
    HVX_Vector       n      = Q6_Vw_vsub_VwVw(biased, hvx_splat_w(0x4B000000));
    n = Q6_Vw_vadd_VwVw(n, Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(frac, hvx_splat_sf(0.5f)), hvx_splat_w(1), Q6_V_vzero()));
    return Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(sign, Q6_V_vzero()), n, Q6_Vw_vsub_VwVw(Q6_V_vzero(), n));
}

// 1 / d for 32 block scales (0 for d = 0; either sign): correctly rounded where |d| lies in
// [2^-97, 2^93], within 1 ulp elsewhere.
inline HVX_Vector hvx_q_inverse_scales(HVX_Vector d) {
    const HVX_Vector     sign  = Q6_V_vand_VV(d, hvx_splat_w(int32_t(0x80000000u)));
    const HVX_Vector     mag   = Q6_V_vxor_VV(d, sign);
    const HVX_VectorPred in_rn = Q6_Q_and_QQ(Q6_Q_vcmp_gt_VwVw(mag, hvx_splat_sf(0x1p-97f)),
                                             Q6_Q_vcmp_gt_VwVw(hvx_splat_sf(0x1p93f), mag));
    const HVX_Vector     one   = hvx_splat_sf(1.0f);
    const HVX_Vector     recip = Q6_V_vmux_QVV(in_rn, hvx_sf_div_rn(one, mag), hvx_sf_div(one, mag));
    return Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(mag, Q6_V_vzero()), Q6_V_vzero(), Q6_V_vor_VV(recip, sign));
}

namespace detail_q {

// Every lane: x's value in the lowest lane where `where` holds (summed out of an otherwise zero
// vector as integers).
inline HVX_Vector first_where(HVX_VectorPred where, HVX_Vector x, HVX_Vector lane) {
    const HVX_Vector first = hvx_w_allmin(Q6_V_vmux_QVV(where, lane, hvx_splat_w(32)));
    return hvx_w_allsum(Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(lane, first), x, Q6_V_vzero()));
}

// Order keys with -0 moved onto +0: equal keys are equal floats, as GGML's compares see them;
// float_of_key gives a moved key's float back (+0 for 0: keys below zero move back down by one).
inline HVX_Vector moved_order_key(HVX_Vector x) {
    const HVX_Vector key = hvx_sf_order_key(x);
    return Q6_Vw_vadd_VwVw(key, Q6_Vuw_vlsr_VuwR(key, 31));
}
inline HVX_Vector float_of_key(HVX_Vector k) { return hvx_sf_order_key(Q6_Vw_vsub_VwVw(k, Q6_Vuw_vlsr_VuwR(k, 31))); }

// The first value of largest magnitude, in every lane, +0 for a block of zeros (GGML's max keeps
// its initial value): of the block's largest and smallest values the one of larger magnitude;
// where their magnitudes tie (+a and -a, a constant block, zeros) the lowest lane holding it.
inline HVX_Vector first_max(HVX_Vector x, HVX_Vector lane) {
    const HVX_Vector k      = moved_order_key(x);
    const HVX_Vector hi     = float_of_key(hvx_w_allmax(k)), lo = float_of_key(hvx_w_allmin(k));
    const HVX_Vector abs_hi = Q6_V_vand_VV(hi, hvx_splat_w(0x7FFFFFFF));
    const HVX_Vector abs_lo = Q6_V_vand_VV(lo, hvx_splat_w(0x7FFFFFFF));
    HVX_Vector       max    = Q6_V_vmux_QVV(Q6_Q_vcmp_gt_VwVw(abs_hi, abs_lo), hi, lo);
    if (Q6_R_vextract_VR(abs_hi, 0) == Q6_R_vextract_VR(abs_lo, 0)) {
        const HVX_Vector mag = Q6_V_vand_VV(x, hvx_splat_w(0x7FFFFFFF));
        max = Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(abs_hi, Q6_V_vzero()), Q6_V_vzero(),
                            first_where(Q6_Q_vcmp_eq_VwVw(mag, abs_hi), x, lane));
    }
    return max;
}

// RN(v / divisor) for non-negative v, within 1 ulp where v lies outside [2^-90, 2^100].
inline HVX_Vector divide_scale(HVX_Vector v, float divisor) {
    const HVX_VectorPred in_rn = Q6_Q_and_QQ(Q6_Q_vcmp_gt_VwVw(v, hvx_splat_sf(0x1p-90f)),
                                             Q6_Q_vcmp_gt_VwVw(hvx_splat_sf(0x1p100f), v));
    const HVX_Vector     c     = hvx_splat_sf(divisor);
    return Q6_V_vmux_QVV(in_rn, hvx_sf_div_rn(v, c), hvx_sf_div(v, c));
}

// 32 codes (words) as 16 bytes of nibble pairs (their low four bits), repeated: lanes 0..15 hold
// element j | element j + 16 << 4, the upper lanes the same (period 16).
inline HVX_Vector nibble_pairs(HVX_Vector q) {
    const HVX_Vector low  = Q6_V_vand_VV(q, hvx_splat_w(15));
    const HVX_Vector pair = Q6_V_vor_VV(low, Q6_Vw_vasl_VwR(Q6_V_vror_VR(low, 64), 4));
    const HVX_Vector both = Q6_V_vmux_QVV(Q6_Q_vsetq_R(64), pair, Q6_V_vror_VR(pair, 64));
    const HVX_Vector h    = Q6_Vh_vpacke_VwVw(both, both);
    return Q6_Vb_vpacke_VhVh(h, h);  // byte i = both[i % 32]
}

} // namespace detail_q

// The types' block parts. block_lane(x, lane, &min): the value of a block its scale comes from, in
// every lane (Q8_0: amax; Q4_0/Q5_0: d itself; Q4_1/Q5_1: max - min, with the minimum into *min);
// scales(v, id): the 32 blocks' d in place of those values and their 1 / d into *id (not inlined:
// the division's constants stay out of the callers' loops); levels(x, id, min): the block's codes
// as words; pack(q): its code bytes, repeated so that its last code_bytes bytes hold them.
struct q8_0_rows {
    static constexpr uint32_t code_bytes = 32;
    static constexpr bool     with_min = false, with_qh = false;
    static HVX_Vector block_lane(HVX_Vector x, HVX_Vector, HVX_Vector *) {
        return hvx_w_allmax(Q6_V_vand_VV(x, hvx_splat_w(0x7FFFFFFF)));
    }
    __attribute__((noinline)) static void scales(HVX_Vector * amax_to_d, HVX_Vector * id) {
        *amax_to_d = detail_q::divide_scale(*amax_to_d, 127.0f);
        *id        = hvx_q_inverse_scales(*amax_to_d);
    }
    static HVX_Vector levels(HVX_Vector x, HVX_Vector id, HVX_Vector) { return hvx_sf_round_away_w(hvx_sf_mul(x, id)); }
    static HVX_Vector pack(HVX_Vector q) {
        const HVX_Vector h = Q6_Vh_vpack_VwVw_sat(q, q);
        return Q6_Vb_vpack_VhVh_sat(h, h);  // byte i = q[i % 32]
    }
};

// Q4_0 and Q5_0: d = max / -(2^(bits - 1)), codes min(2^bits - 1, trunc(x id + 2^(bits - 1) + 0.5)).
template <uint32_t Bits>
struct qx_0_rows {
    static constexpr uint32_t code_bytes = 16;
    static constexpr bool     with_min = false, with_qh = Bits == 5;
    static constexpr float    half     = float(1u << (Bits - 1));
    static HVX_Vector block_lane(HVX_Vector x, HVX_Vector lane, HVX_Vector *) {
        return hvx_sf_mul(detail_q::first_max(x, lane), hvx_splat_sf(-1.0f / half));
    }
    __attribute__((noinline)) static void scales(HVX_Vector * d, HVX_Vector * id) { *id = hvx_q_inverse_scales(*d); }
    static HVX_Vector levels(HVX_Vector x, HVX_Vector id, HVX_Vector) {
        return Q6_Vw_vmin_VwVw(hvx_sf_floor_w(hvx_sf_add(hvx_sf_mul(x, id), hvx_splat_sf(half + 0.5f))),
                               hvx_splat_w(int32_t(2 * half) - 1));
    }
    static HVX_Vector pack(HVX_Vector q) { return detail_q::nibble_pairs(q); }
};
using q4_0_rows = qx_0_rows<4>;
using q5_0_rows = qx_0_rows<5>;

// Q4_1 and Q5_1: d = (max - min) / (2^bits - 1), codes trunc((x - min) id + 0.5) (Q4_1 at most 15).
template <uint32_t Bits>
struct qx_1_rows {
    static constexpr uint32_t code_bytes = 16;
    static constexpr bool     with_min = true, with_qh = Bits == 5;
    static constexpr float    top      = float((1u << Bits) - 1);
    // An extreme is its moved key's float but for a zero, whose sign is the block's first zero's.
    static HVX_Vector block_lane(HVX_Vector x, HVX_Vector lane, HVX_Vector * min) {
        const HVX_Vector k    = detail_q::moved_order_key(x);
        const HVX_Vector kmax = hvx_w_allmax(k), kmin = hvx_w_allmin(k);
        HVX_Vector       max = detail_q::float_of_key(kmax), lo = detail_q::float_of_key(kmin);
        if (Q6_R_vextract_VR(kmax, 0) == 0 || Q6_R_vextract_VR(kmin, 0) == 0) {  // rare: a zero extreme
            const HVX_Vector zero = detail_q::first_where(Q6_Q_vcmp_eq_VwVw(k, Q6_V_vzero()), x, lane);
            max                   = Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(kmax, Q6_V_vzero()), zero, max);
            lo                    = Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(kmin, Q6_V_vzero()), zero, lo);
        }
        *min = lo;
        return hvx_sf_sub(max, lo);
    }
    __attribute__((noinline)) static void scales(HVX_Vector * range_to_d, HVX_Vector * id) {
        *range_to_d = detail_q::divide_scale(*range_to_d, top);
        *id         = hvx_q_inverse_scales(*range_to_d);
    }
    static HVX_Vector levels(HVX_Vector x, HVX_Vector id, HVX_Vector min) {
        const HVX_Vector q = hvx_sf_floor_w(hvx_sf_add(hvx_sf_mul(hvx_sf_sub(x, min), id), hvx_splat_sf(0.5f)));
        return Bits == 4 ? Q6_Vw_vmin_VwVw(q, hvx_splat_w(15)) : q;
    }
    static HVX_Vector pack(HVX_Vector q) { return detail_q::nibble_pairs(q); }
};
using q4_1_rows = qx_1_rows<4>;
using q5_1_rows = qx_1_rows<5>;

// IQ4_NL (quantize_row_iq4_nl_ref, GGML's from_float): max = the first value of largest magnitude,
// d0 = max / -127 and id = 1 / d0 correctly rounded, each element's index the table entry nearest
// x id as best_index_int8 picks it (its range checks, then of the two entries around x the nearer
// by fp32 subtractions, the upper on a tie; NaN: 15); then d = sum(w q x) / sum(w q q), w = x^2,
// the sums taken over the block's elements in order, one lane at a time (refit), correctly rounded.
// A block with |max| < 1e-15: d = 0 and every index 8 (GGML leaves those indices stale).
struct iq4_nl_rows {
    static constexpr uint32_t code_bytes = 16;
    static constexpr bool     with_min = false, with_qh = false;
    static constexpr const int8_t (&values)[16] = HVX_IQ4NL_VALUES;
    static HVX_Vector block_lane(HVX_Vector x, HVX_Vector lane, HVX_Vector *) { return detail_q::first_max(x, lane); }
    __attribute__((noinline)) static void scales(HVX_Vector * max_to_d, HVX_Vector * id) {
        const HVX_Vector sign = Q6_V_vand_VV(*max_to_d, hvx_splat_w(int32_t(0x80000000u)));
        const HVX_Vector mag  = Q6_V_vxor_VV(*max_to_d, sign);
        const HVX_Vector d0   = Q6_V_vor_VV(detail_q::divide_scale(mag, 127.0f), Q6_V_vxor_VV(sign, hvx_splat_w(int32_t(0x80000000u))));
        *max_to_d             = Q6_V_vmux_QVV(Q6_Q_vcmp_gt_VwVw(hvx_splat_sf(1e-15f), mag), Q6_V_vzero(), d0);
        *id                   = hvx_q_inverse_scales(*max_to_d);
    }
    // The index of the table entry nearest x * id (words).
    __attribute__((noinline)) static HVX_Vector levels(HVX_Vector x, HVX_Vector id, HVX_Vector) {
        const HVX_Vector al  = hvx_sf_mul(x, id);
        const HVX_Vector key = hvx_sf_order_key(al);
        HVX_Vector       ml = Q6_V_vzero(), lower = hvx_splat_sf(float(values[0])), upper = hvx_splat_sf(float(values[15]));
        for (int k = 1; k < 15; ++k) {  // ml: the entries 1..14 at most al; lower = values[ml]
            const HVX_VectorPred at_least = Q6_Q_not_Q(Q6_Q_vcmp_gt_VwVw(hvx_sf_order_key(hvx_splat_sf(float(values[k]))), key));
            ml    = Q6_Vw_vadd_VwVw(ml, Q6_V_vmux_QVV(at_least, hvx_splat_w(1), Q6_V_vzero()));
            lower = Q6_V_vmux_QVV(at_least, hvx_splat_sf(float(values[k])), lower);
        }
        for (int k = 14; k >= 1; --k) {  // upper = values[ml + 1]: the first entry above al
            const HVX_VectorPred above = Q6_Q_vcmp_gt_VwVw(hvx_sf_order_key(hvx_splat_sf(float(values[k]))), key);
            upper = Q6_V_vmux_QVV(above, hvx_splat_sf(float(values[k])), upper);
        }
        const HVX_VectorPred nearer_lower = Q6_Q_vcmp_gt_VwVw(hvx_sf_order_key(hvx_sf_sub(upper, al)),
                                                              hvx_sf_order_key(hvx_sf_sub(al, lower)));
        HVX_Vector l = Q6_Vw_vadd_VwVw(ml, Q6_V_vmux_QVV(nearer_lower, Q6_V_vzero(), hvx_splat_w(1)));
        l = Q6_V_vmux_QVV(Q6_Q_vcmp_gt_VwVw(key, hvx_sf_order_key(hvx_splat_sf(-127.0f))), l, Q6_V_vzero());  // al <= -127: 0
        const HVX_VectorPred top = Q6_Q_or_QQ(Q6_Q_not_Q(Q6_Q_vcmp_gt_VwVw(hvx_sf_order_key(hvx_splat_sf(113.0f)), key)),
                                              Q6_Q_vcmp_gt_VwVw(Q6_V_vand_VV(al, hvx_splat_w(0x7FFFFFFF)), hvx_splat_w(0x7F800000)));
        return Q6_V_vmux_QVV(top, hvx_splat_w(15), l);  // al >= 113, or NaN
    }
    static HVX_Vector pack(HVX_Vector q) { return detail_q::nibble_pairs(q); }
    // The table's values of 32 indices, as fp32.
    static HVX_Vector values_of(HVX_Vector l) {
        HVX_Vector q = Q6_V_vzero();
        for (int k = 0; k < 16; ++k) {
            q = Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(l, hvx_splat_w(k)), hvx_splat_sf(float(values[k])), q);
        }
        return q;
    }
};

// Each pass its own function: no constant lives across another's calls. Gathering and packing go
// from the last block to the first, each block's lane or code bytes shifted in at the front of the
// vector being filled, stored once it starts with a vector's first block.
namespace detail_q {

template <class Q>
__attribute__((noinline)) void gather_block_lanes(const HVX_Vector * x, uint32_t n_blocks, HVX_Vector * out,
                                                  HVX_Vector * mins) {
    const HVX_Vector lane = hvx_lane_index_w();
    HVX_Vector       acc = Q6_V_vzero(), acc_min = Q6_V_vzero();
    for (uint32_t v = n_blocks; v-- > 0;) {
        HVX_Vector min;
        acc = Q6_V_vlalign_VVR(acc, Q::block_lane(x[v], lane, &min), 4);
        if constexpr (Q::with_min) {
            acc_min = Q6_V_vlalign_VVR(acc_min, min, 4);
        }
        if (v % 32 == 0) {
            out[v / 32] = acc;
            if constexpr (Q::with_min) {
                mins[v / 32] = acc_min;
            }
        }
    }
}

inline HVX_Vector lane_of(const HVX_Vector * groups, uint32_t v) {
    return Q6_V_vsplat_R(Q6_R_vextract_VR(groups[v / 32], int32_t(4 * (v % 32))));
}

template <class Q>
__attribute__((noinline)) void pack_codes(const HVX_Vector * x, uint32_t n_blocks, const HVX_Vector * ids,
                                          const HVX_Vector * mins, HVX_Vector * codes, HVX_Vector * high) {
    constexpr uint32_t per_vector = 128 / Q::code_bytes;
    const HVX_Vector   lane       = hvx_lane_index_w();
    HVX_Vector         acc = Q6_V_vzero(), acc_high = Q6_V_vzero();
    for (uint32_t v = n_blocks; v-- > 0;) {
        const HVX_Vector q = Q::levels(x[v], lane_of(ids, v), Q::with_min ? lane_of(mins, v) : Q6_V_vzero());
        acc                = Q6_V_vlalign_VVR(acc, Q::pack(q), int32_t(Q::code_bytes));
        if (v % per_vector == 0) {
            codes[v / per_vector] = acc;
        }
        if constexpr (Q::with_qh) {  // bit j of the word: bit 4 of element j's code
            const HVX_Vector bits = Q6_Vw_vasl_VwVw(Q6_V_vand_VV(Q6_Vw_vasr_VwR(q, 4), hvx_splat_w(1)), lane);
            acc_high              = Q6_V_vlalign_VVR(acc_high, hvx_w_allsum(bits), 4);
            if (v % 32 == 0) {
                high[v / 32] = acc_high;
            }
        }
    }
}

// std::is_same_v (the Hexagon build has no standard library headers).
template <class A, class B> inline constexpr bool same_type = false;
template <class A> inline constexpr bool same_type<A, A> = true;

// IQ4_NL's final scales: per block (last to first, shifted in at the front as the gathers are),
// d = sum(w q x) / sum(w q q) over its elements in order, correctly rounded (within 1 ulp outside
// hvx_sf_div_rn's range); 0 where the block fell below epsilon (id 0).
__attribute__((noinline)) inline void refit_iq4_nl(const HVX_Vector * x, uint32_t n_blocks, const HVX_Vector * ids,
                                                   HVX_Vector * scales) {
    HVX_Vector acc = Q6_V_vzero();
    for (uint32_t v = n_blocks; v-- > 0;) {
        const HVX_Vector id = lane_of(ids, v);
        const HVX_Vector q  = iq4_nl_rows::values_of(iq4_nl_rows::levels(x[v], id, Q6_V_vzero()));
        const HVX_Vector wq = hvx_sf_mul(hvx_sf_mul(x[v], x[v]), q);
        const HVX_Vector t1 = hvx_sf_mul(wq, x[v]), t2 = hvx_sf_mul(wq, q);
        HVX_Vector       s1 = Q6_V_vzero(), s2 = Q6_V_vzero();
        for (int32_t j = 0; j < 32; ++j) {  // lane 0: ((0 + t[0]) + t[1]) + ...
            s1 = hvx_sf_add(s1, Q6_V_vror_VR(t1, 4 * j));
            s2 = hvx_sf_add(s2, Q6_V_vror_VR(t2, 4 * j));
        }
        const HVX_Vector     num   = Q6_V_vsplat_R(Q6_R_vextract_VR(s1, 0));
        const HVX_Vector     den   = Q6_V_vsplat_R(Q6_R_vextract_VR(s2, 0));
        const HVX_Vector     sign  = Q6_V_vand_VV(num, hvx_splat_w(int32_t(0x80000000u)));
        const HVX_Vector     mag   = Q6_V_vxor_VV(num, sign);
        // Both within [2^-45, 2^45]: a quotient of at least 2^-90, where hvx_sf_div_rn rounds correctly.
        const HVX_VectorPred in_rn = Q6_Q_and_QQ(Q6_Q_and_QQ(Q6_Q_vcmp_gt_VwVw(mag, hvx_splat_sf(0x1p-45f)),
                                                             Q6_Q_vcmp_gt_VwVw(hvx_splat_sf(0x1p45f), mag)),
                                                 Q6_Q_and_QQ(Q6_Q_vcmp_gt_VwVw(den, hvx_splat_sf(0x1p-45f)),
                                                             Q6_Q_vcmp_gt_VwVw(hvx_splat_sf(0x1p45f), den)));
        const HVX_VectorPred keep = Q6_Q_and_QQ(Q6_Q_vcmp_gt_VwVw(den, Q6_V_vzero()),
                                                Q6_Q_not_Q(Q6_Q_vcmp_eq_VwVw(id, Q6_V_vzero())));
        const HVX_Vector     d = Q6_V_vor_VV(Q6_V_vmux_QVV(in_rn, hvx_sf_div_rn(mag, den), hvx_sf_div(mag, den)), sign);
        acc = Q6_V_vlalign_VVR(acc, Q6_V_vmux_QVV(keep, d, Q6_V_vzero()), 4);
        if (v % 32 == 0) {
            scales[v / 32] = acc;
        }
    }
}

} // namespace detail_q

// One row of n_blocks blocks (x, one vector each) into codes (Q::code_bytes per block, in order),
// scales and mins (fp16, in order; mins of Q4_1/Q5_1 only) and high (Q5's qh words), with ids
// (ceil(n_blocks / 32) vectors) as scratch for the inverse scales: the blocks' scale sources
// gathered 32 to a vector, their scales computed a vector at a time, then the codes.
template <class Q>
inline void hvx_quantize_block_row(const HVX_Vector * x, uint32_t n_blocks, HVX_Vector * codes, HVX_Vector * scales,
                                   HVX_Vector * mins, HVX_Vector * high, HVX_Vector * ids) {
    detail_q::gather_block_lanes<Q>(x, n_blocks, scales, mins);
    const uint32_t n_groups = (n_blocks + 31) / 32;
    for (uint32_t g = 0; g < n_groups; ++g) {
        Q::scales(scales + g, ids + g);
    }
    detail_q::pack_codes<Q>(x, n_blocks, ids, mins, codes, high);
    if constexpr (detail_q::same_type<Q, iq4_nl_rows>) {
        detail_q::refit_iq4_nl(x, n_blocks, ids, scales);
    }
    hvx_sf_row_to_16(scales, scales, n_groups, false);
    if constexpr (Q::with_min) {
        hvx_sf_row_to_16(mins, mins, n_groups, false);
    }
}

} // namespace hexnpu::htp
