// GGML's row quantizers for the block types SET_ROWS writes, on HVX, one 32-element block per
// vector, bit for bit:
//   Q8_0 (quantize_row_q8_0_ref): amax = max |x|, d = amax / 127 and id = 1 / d (0 for d = 0)
//     correctly rounded (hvx_sf_div_rn), q = round(x id) half away from zero (std::round's).
//   Q4_0 (quantize_row_q4_0_ref): max = the first value of largest magnitude, d = max / -8 (exact),
//     id = 1 / d as above, q = min(15, trunc(x id + 8.5)), element j in the low nibble of byte j
//     and element j + 16 in its high nibble.
// d stored as fp16. Blocks whose scale lies outside [2^-97, 2^93] divide within 1 ulp instead
// (hvx_sf_div), which may move a code by one there; non-finite inputs give codes GGML leaves
// undefined.
#pragma once

#include "hvx-arith.h"
#include "hvx-div.h"
#include "hvx-hf-rows.h"
#include "hvx-quant-act.h"
#include "hvx-sort.h"
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

// The two types' block parts. block_lane(x): the value of a block the scale comes from, in every
// lane (Q8_0: amax; Q4_0: d itself); scales(v, id): the 32 blocks' d in place of those values and
// their 1 / d into *id (not inlined: the division's constants stay out of the callers' loops);
// codes(x, id): the block's code bytes, repeated so that its last code_bytes bytes hold them.
struct q8_0_rows {
    static constexpr uint32_t code_bytes = 32;
    static HVX_Vector block_lane(HVX_Vector x, HVX_Vector) { return hvx_w_allmax(Q6_V_vand_VV(x, hvx_splat_w(0x7FFFFFFF))); }
    __attribute__((noinline)) static void scales(HVX_Vector * amax_to_d, HVX_Vector * id) {
        const HVX_Vector     amax  = *amax_to_d;
        const HVX_VectorPred in_rn = Q6_Q_and_QQ(Q6_Q_vcmp_gt_VwVw(amax, hvx_splat_sf(0x1p-90f)),
                                                 Q6_Q_vcmp_gt_VwVw(hvx_splat_sf(0x1p100f), amax));
        const HVX_Vector     c127  = hvx_splat_sf(127.0f);
        const HVX_Vector     d     = Q6_V_vmux_QVV(in_rn, hvx_sf_div_rn(amax, c127), hvx_sf_div(amax, c127));
        *amax_to_d                 = d;
        *id                        = hvx_q_inverse_scales(d);
    }
    static HVX_Vector codes(HVX_Vector x, HVX_Vector id) {
        const HVX_Vector q = hvx_sf_round_away_w(hvx_sf_mul(x, id));
        const HVX_Vector h = Q6_Vh_vpack_VwVw_sat(q, q);
        return Q6_Vb_vpack_VhVh_sat(h, h);  // byte i = q[i % 32]
    }
};

struct q4_0_rows {
    static constexpr uint32_t code_bytes = 16;
    // d = max / -8 (exact) of the first value of largest magnitude: the lowest lane where |x| is
    // the block's maximum, its value summed out of an otherwise zero vector as integers.
    static HVX_Vector block_lane(HVX_Vector x, HVX_Vector lane) {
        const HVX_Vector     mag   = Q6_V_vand_VV(x, hvx_splat_w(0x7FFFFFFF));
        const HVX_VectorPred top   = Q6_Q_vcmp_eq_VwVw(mag, hvx_w_allmax(mag));
        const HVX_Vector     first = hvx_w_allmin(Q6_V_vmux_QVV(top, lane, hvx_splat_w(32)));
        const HVX_Vector     max   = hvx_w_allsum(Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(lane, first), x, Q6_V_vzero()));
        return hvx_sf_mul(max, hvx_splat_sf(-0.125f));
    }
    __attribute__((noinline)) static void scales(HVX_Vector * d, HVX_Vector * id) { *id = hvx_q_inverse_scales(*d); }
    static HVX_Vector codes(HVX_Vector x, HVX_Vector id) {
        const HVX_Vector q = Q6_Vw_vmin_VwVw(hvx_sf_floor_w(hvx_sf_add(hvx_sf_mul(x, id), hvx_splat_sf(8.5f))),
                                             hvx_splat_w(15));
        // Lanes 0..15: element j | element j + 16 << 4; the upper lanes the same (period 16).
        const HVX_Vector pair = Q6_V_vor_VV(q, Q6_Vw_vasl_VwR(Q6_V_vror_VR(q, 64), 4));
        const HVX_Vector both = Q6_V_vmux_QVV(Q6_Q_vsetq_R(64), pair, Q6_V_vror_VR(pair, 64));
        const HVX_Vector h    = Q6_Vh_vpacke_VwVw(both, both);
        return Q6_Vb_vpacke_VhVh(h, h);  // byte i = both[i % 32]
    }
};

// Each pass its own function: no constant lives across another's calls. Gathering and packing go
// from the last block to the first, each block's lane or code bytes shifted in at the front of the
// vector being filled, stored once it starts with a vector's first block.
namespace detail_q {

template <class Q>
__attribute__((noinline)) void gather_block_lanes(const HVX_Vector * x, uint32_t n_blocks, HVX_Vector * out) {
    const HVX_Vector lane = hvx_lane_index_w();
    HVX_Vector       acc  = Q6_V_vzero();
    for (uint32_t v = n_blocks; v-- > 0;) {
        acc = Q6_V_vlalign_VVR(acc, Q::block_lane(x[v], lane), 4);
        if (v % 32 == 0) {
            out[v / 32] = acc;
        }
    }
}

template <class Q>
__attribute__((noinline)) void pack_codes(const HVX_Vector * x, uint32_t n_blocks, const HVX_Vector * ids,
                                          HVX_Vector * codes) {
    constexpr uint32_t per_vector = 128 / Q::code_bytes;
    HVX_Vector         acc        = Q6_V_vzero();
    for (uint32_t v = n_blocks; v-- > 0;) {
        const HVX_Vector id = Q6_V_vsplat_R(Q6_R_vextract_VR(ids[v / 32], int32_t(4 * (v % 32))));
        acc                 = Q6_V_vlalign_VVR(acc, Q::codes(x[v], id), int32_t(Q::code_bytes));
        if (v % per_vector == 0) {
            codes[v / per_vector] = acc;
        }
    }
}

} // namespace detail_q

// One row of n_blocks blocks (x, one vector each) into codes (Q::code_bytes per block, in order)
// and scales (fp16, in order), with ids (ceil(n_blocks / 32) vectors) as scratch for the inverse
// scales: the blocks' scale sources gathered 32 to a vector, their scales computed a vector at a
// time, then the codes.
template <class Q>
inline void hvx_quantize_block_row(const HVX_Vector * x, uint32_t n_blocks, HVX_Vector * codes, HVX_Vector * scales,
                                   HVX_Vector * ids) {
    detail_q::gather_block_lanes<Q>(x, n_blocks, scales);
    const uint32_t n_groups = (n_blocks + 31) / 32;
    for (uint32_t g = 0; g < n_groups; ++g) {
        Q::scales(scales + g, ids + g);
    }
    detail_q::pack_codes<Q>(x, n_blocks, ids, codes);
    hvx_sf_row_to_16(scales, scales, n_groups, false);
}

} // namespace hexnpu::htp
