// Element-wise integer arithmetic: splats, logic, add/sub (wrapping, saturating, widening),
// min/max, averages, absolute values, bit counts, register moves.
// Semantics: QEMU target/hexagon/imported/mmvec/ext.idef (MMVEC_ADDWRAP, MMVEC_ADDS_SAT,
// MMVEC_AVGS, MMVEC_SORT, ...) and macros.h (fVSATN, fVAVGS, fVNAVGU, ...).
#pragma once

#include "vnpu/hvx/hvx-types.h"

namespace hexnpu::hvx::intrinsics {

using detail::Lanes;
using detail::lanes;
using detail::map_lanes;
using detail::saturate;
using detail::vector_of;

// ---- splats, zero, moves -------------------------------------------------------------------

inline HVX_Vector Q6_V_vsplat_R(int32_t r) {
    HVX_Vector v;
    for (int i = 0; i < 32; ++i) v[i] = r;
    return v;
}
inline HVX_Vector Q6_Vb_vsplat_R(int32_t r) { return Q6_V_vsplat_R(int32_t(uint32_t(uint8_t(r)) * 0x01010101u)); }
inline HVX_Vector Q6_Vh_vsplat_R(int32_t r) { return Q6_V_vsplat_R(int32_t(uint32_t(uint16_t(r)) * 0x00010001u)); }
inline HVX_Vector Q6_V_vzero() { return Q6_V_vsplat_R(0); }
inline HVX_VectorPair Q6_W_vzero() { return detail::pair_of(Q6_V_vzero(), Q6_V_vzero()); }

inline HVX_Vector Q6_V_equals_V(HVX_Vector u) { return u; }
inline HVX_VectorPair Q6_W_equals_W(HVX_VectorPair uu) { return uu; }
inline HVX_Vector Q6_V_lo_W(HVX_VectorPair w) { return detail::lo_of(w); }
inline HVX_Vector Q6_V_hi_W(HVX_VectorPair w) { return detail::hi_of(w); }
// vcombine(Vu, Vv): Vv becomes the low (even) register.
inline HVX_VectorPair Q6_W_vcombine_VV(HVX_Vector u, HVX_Vector v) { return detail::pair_of(v, u); }

// Word (Rs & 127) / 4; the low two address bits are ignored.
inline int32_t Q6_R_vextract_VR(HVX_Vector u, int32_t rs) { return u[(uint32_t(rs) & 127) >> 2]; }
inline HVX_Vector Q6_Vw_vinsert_VwR(HVX_Vector x, int32_t rt) {
    x[0] = rt;
    return x;
}

// ---- logic (vector-extension operators: SIMD on every host) --------------------------------

inline HVX_Vector Q6_V_vand_VV(HVX_Vector u, HVX_Vector v) { return u & v; }
inline HVX_Vector Q6_V_vor_VV(HVX_Vector u, HVX_Vector v) { return u | v; }
inline HVX_Vector Q6_V_vxor_VV(HVX_Vector u, HVX_Vector v) { return u ^ v; }
inline HVX_Vector Q6_V_vnot_V(HVX_Vector u) { return ~u; }

// ---- wrapping add/sub (vector-extension operators wrap like the hardware) ------------------

#define HEXNPU_HVX_WRAP_OP(NAME, VEC, OP)                                                          \
    inline HVX_Vector NAME(HVX_Vector u, HVX_Vector v) {                                           \
        return (HVX_Vector)((detail::VEC)u OP (detail::VEC)v);                                     \
    }
HEXNPU_HVX_WRAP_OP(Q6_Vb_vadd_VbVb, VecU8, +)
HEXNPU_HVX_WRAP_OP(Q6_Vh_vadd_VhVh, VecU16, +)
HEXNPU_HVX_WRAP_OP(Q6_Vw_vadd_VwVw, VecU32, +)
HEXNPU_HVX_WRAP_OP(Q6_Vb_vsub_VbVb, VecU8, -)
HEXNPU_HVX_WRAP_OP(Q6_Vh_vsub_VhVh, VecU16, -)
HEXNPU_HVX_WRAP_OP(Q6_Vw_vsub_VwVw, VecU32, -)
#undef HEXNPU_HVX_WRAP_OP

// ---- saturating add/sub --------------------------------------------------------------------

#define HEXNPU_HVX_SAT_OP(NAME, T, OP)                                                             \
    inline HVX_Vector NAME(HVX_Vector u, HVX_Vector v) {                                           \
        return map_lanes<T>(u, v, [](int64_t x, int64_t y) { return saturate<T>(x OP y); });       \
    }
HEXNPU_HVX_SAT_OP(Q6_Vub_vadd_VubVub_sat, uint8_t, +)
HEXNPU_HVX_SAT_OP(Q6_Vuh_vadd_VuhVuh_sat, uint16_t, +)
HEXNPU_HVX_SAT_OP(Q6_Vuw_vadd_VuwVuw_sat, uint32_t, +)
HEXNPU_HVX_SAT_OP(Q6_Vb_vadd_VbVb_sat, int8_t, +)
HEXNPU_HVX_SAT_OP(Q6_Vh_vadd_VhVh_sat, int16_t, +)
HEXNPU_HVX_SAT_OP(Q6_Vw_vadd_VwVw_sat, int32_t, +)
HEXNPU_HVX_SAT_OP(Q6_Vub_vsub_VubVub_sat, uint8_t, -)
HEXNPU_HVX_SAT_OP(Q6_Vuh_vsub_VuhVuh_sat, uint16_t, -)
HEXNPU_HVX_SAT_OP(Q6_Vuw_vsub_VuwVuw_sat, uint32_t, -)
HEXNPU_HVX_SAT_OP(Q6_Vb_vsub_VbVb_sat, int8_t, -)
HEXNPU_HVX_SAT_OP(Q6_Vh_vsub_VhVh_sat, int16_t, -)
HEXNPU_HVX_SAT_OP(Q6_Vw_vsub_VwVw_sat, int32_t, -)
#undef HEXNPU_HVX_SAT_OP

// Unsigned bytes plus/minus signed bytes, saturated to unsigned bytes.
inline HVX_Vector Q6_Vub_vadd_VubVb_sat(HVX_Vector u, HVX_Vector v) {
    const Lanes<uint8_t> x = lanes<uint8_t>(u);
    const Lanes<int8_t> y = lanes<int8_t>(v);
    Lanes<uint8_t> d;
    for (int i = 0; i < 128; ++i) d[i] = saturate<uint8_t>(int(x[i]) + y[i]);
    return vector_of(d);
}
inline HVX_Vector Q6_Vub_vsub_VubVb_sat(HVX_Vector u, HVX_Vector v) {
    const Lanes<uint8_t> x = lanes<uint8_t>(u);
    const Lanes<int8_t> y = lanes<int8_t>(v);
    Lanes<uint8_t> d;
    for (int i = 0; i < 128; ++i) d[i] = saturate<uint8_t>(int(x[i]) - y[i]);
    return vector_of(d);
}

// Pair forms apply the single-vector operation to each register.
#define HEXNPU_HVX_PAIR_OP(PAIRNAME, NAME)                                                         \
    inline HVX_VectorPair PAIRNAME(HVX_VectorPair uu, HVX_VectorPair vv) {                         \
        return detail::pair_of(NAME(detail::lo_of(uu), detail::lo_of(vv)),                        \
                               NAME(detail::hi_of(uu), detail::hi_of(vv)));                        \
    }
HEXNPU_HVX_PAIR_OP(Q6_Wb_vadd_WbWb, Q6_Vb_vadd_VbVb)
HEXNPU_HVX_PAIR_OP(Q6_Wh_vadd_WhWh, Q6_Vh_vadd_VhVh)
HEXNPU_HVX_PAIR_OP(Q6_Ww_vadd_WwWw, Q6_Vw_vadd_VwVw)
HEXNPU_HVX_PAIR_OP(Q6_Wb_vsub_WbWb, Q6_Vb_vsub_VbVb)
HEXNPU_HVX_PAIR_OP(Q6_Wh_vsub_WhWh, Q6_Vh_vsub_VhVh)
HEXNPU_HVX_PAIR_OP(Q6_Ww_vsub_WwWw, Q6_Vw_vsub_VwVw)
HEXNPU_HVX_PAIR_OP(Q6_Wub_vadd_WubWub_sat, Q6_Vub_vadd_VubVub_sat)
HEXNPU_HVX_PAIR_OP(Q6_Wuh_vadd_WuhWuh_sat, Q6_Vuh_vadd_VuhVuh_sat)
HEXNPU_HVX_PAIR_OP(Q6_Wuw_vadd_WuwWuw_sat, Q6_Vuw_vadd_VuwVuw_sat)
HEXNPU_HVX_PAIR_OP(Q6_Wb_vadd_WbWb_sat, Q6_Vb_vadd_VbVb_sat)
HEXNPU_HVX_PAIR_OP(Q6_Wh_vadd_WhWh_sat, Q6_Vh_vadd_VhVh_sat)
HEXNPU_HVX_PAIR_OP(Q6_Ww_vadd_WwWw_sat, Q6_Vw_vadd_VwVw_sat)
HEXNPU_HVX_PAIR_OP(Q6_Wub_vsub_WubWub_sat, Q6_Vub_vsub_VubVub_sat)
HEXNPU_HVX_PAIR_OP(Q6_Wuh_vsub_WuhWuh_sat, Q6_Vuh_vsub_VuhVuh_sat)
HEXNPU_HVX_PAIR_OP(Q6_Wuw_vsub_WuwWuw_sat, Q6_Vuw_vsub_VuwVuw_sat)
HEXNPU_HVX_PAIR_OP(Q6_Wb_vsub_WbWb_sat, Q6_Vb_vsub_VbVb_sat)
HEXNPU_HVX_PAIR_OP(Q6_Wh_vsub_WhWh_sat, Q6_Vh_vsub_VhVh_sat)
HEXNPU_HVX_PAIR_OP(Q6_Ww_vsub_WwWw_sat, Q6_Vw_vsub_VwVw_sat)
#undef HEXNPU_HVX_PAIR_OP

// ---- widening add/sub: even source lanes go to the low register, odd lanes to the high -----

namespace detail_arith {
template <class Src, class Dst, class F>
inline HVX_VectorPair widen2(HVX_Vector u, HVX_Vector v, F f) {
    const Lanes<Src> x = lanes<Src>(u), y = lanes<Src>(v);
    Lanes<Dst> even, odd;
    for (int i = 0; i < Lanes<Dst>::count; ++i) {
        even[i] = Dst(f(x[2 * i], y[2 * i]));
        odd[i] = Dst(f(x[2 * i + 1], y[2 * i + 1]));
    }
    return detail::pair_of(vector_of(even), vector_of(odd));
}
template <class Src, class Dst, class F>
inline HVX_VectorPair widen2_acc(HVX_VectorPair xx, HVX_Vector u, HVX_Vector v, F f) {
    const Lanes<Src> x = lanes<Src>(u), y = lanes<Src>(v);
    Lanes<Dst> even = lanes<Dst>(detail::lo_of(xx)), odd = lanes<Dst>(detail::hi_of(xx));
    for (int i = 0; i < Lanes<Dst>::count; ++i) {
        even[i] = Dst(int64_t(even[i]) + f(x[2 * i], y[2 * i]));
        odd[i] = Dst(int64_t(odd[i]) + f(x[2 * i + 1], y[2 * i + 1]));
    }
    return detail::pair_of(vector_of(even), vector_of(odd));
}
inline int64_t plus(int64_t a, int64_t b) { return a + b; }
inline int64_t minus(int64_t a, int64_t b) { return a - b; }
} // namespace detail_arith

inline HVX_VectorPair Q6_Wh_vadd_VubVub(HVX_Vector u, HVX_Vector v) { return detail_arith::widen2<uint8_t, int16_t>(u, v, detail_arith::plus); }
inline HVX_VectorPair Q6_Wh_vsub_VubVub(HVX_Vector u, HVX_Vector v) { return detail_arith::widen2<uint8_t, int16_t>(u, v, detail_arith::minus); }
inline HVX_VectorPair Q6_Ww_vadd_VhVh(HVX_Vector u, HVX_Vector v) { return detail_arith::widen2<int16_t, int32_t>(u, v, detail_arith::plus); }
inline HVX_VectorPair Q6_Ww_vsub_VhVh(HVX_Vector u, HVX_Vector v) { return detail_arith::widen2<int16_t, int32_t>(u, v, detail_arith::minus); }
inline HVX_VectorPair Q6_Ww_vadd_VuhVuh(HVX_Vector u, HVX_Vector v) { return detail_arith::widen2<uint16_t, int32_t>(u, v, detail_arith::plus); }
inline HVX_VectorPair Q6_Ww_vsub_VuhVuh(HVX_Vector u, HVX_Vector v) { return detail_arith::widen2<uint16_t, int32_t>(u, v, detail_arith::minus); }
inline HVX_VectorPair Q6_Wh_vaddacc_WhVubVub(HVX_VectorPair xx, HVX_Vector u, HVX_Vector v) { return detail_arith::widen2_acc<uint8_t, int16_t>(xx, u, v, detail_arith::plus); }
inline HVX_VectorPair Q6_Ww_vaddacc_WwVhVh(HVX_VectorPair xx, HVX_Vector u, HVX_Vector v) { return detail_arith::widen2_acc<int16_t, int32_t>(xx, u, v, detail_arith::plus); }
inline HVX_VectorPair Q6_Ww_vaddacc_WwVuhVuh(HVX_VectorPair xx, HVX_Vector u, HVX_Vector v) { return detail_arith::widen2_acc<uint16_t, int32_t>(xx, u, v, detail_arith::plus); }

// ---- min / max -----------------------------------------------------------------------------

#define HEXNPU_HVX_MINMAX(T, SUFFIX)                                                               \
    inline HVX_Vector Q6_V##SUFFIX##_vmax_V##SUFFIX##V##SUFFIX(HVX_Vector u, HVX_Vector v) {       \
        return map_lanes<T>(u, v, [](T x, T y) { return x > y ? x : y; });                         \
    }                                                                                              \
    inline HVX_Vector Q6_V##SUFFIX##_vmin_V##SUFFIX##V##SUFFIX(HVX_Vector u, HVX_Vector v) {       \
        return map_lanes<T>(u, v, [](T x, T y) { return x < y ? x : y; });                         \
    }
HEXNPU_HVX_MINMAX(int8_t, b)
HEXNPU_HVX_MINMAX(uint8_t, ub)
HEXNPU_HVX_MINMAX(int16_t, h)
HEXNPU_HVX_MINMAX(uint16_t, uh)
HEXNPU_HVX_MINMAX(int32_t, w)
#undef HEXNPU_HVX_MINMAX

// ---- averages: (u + v) >> 1, :rnd adds 1 first, vnavg is (u - v) >> 1; all exact, no overflow

#define HEXNPU_HVX_AVG(T, SUFFIX)                                                                  \
    inline HVX_Vector Q6_V##SUFFIX##_vavg_V##SUFFIX##V##SUFFIX(HVX_Vector u, HVX_Vector v) {       \
        return map_lanes<T>(u, v, [](int64_t x, int64_t y) { return (x + y) >> 1; });              \
    }                                                                                              \
    inline HVX_Vector Q6_V##SUFFIX##_vavg_V##SUFFIX##V##SUFFIX##_rnd(HVX_Vector u, HVX_Vector v) { \
        return map_lanes<T>(u, v, [](int64_t x, int64_t y) { return (x + y + 1) >> 1; });          \
    }
HEXNPU_HVX_AVG(int8_t, b)
HEXNPU_HVX_AVG(uint8_t, ub)
HEXNPU_HVX_AVG(int16_t, h)
HEXNPU_HVX_AVG(uint16_t, uh)
HEXNPU_HVX_AVG(int32_t, w)
HEXNPU_HVX_AVG(uint32_t, uw)
#undef HEXNPU_HVX_AVG

inline HVX_Vector Q6_Vb_vnavg_VbVb(HVX_Vector u, HVX_Vector v) {
    return map_lanes<int8_t>(u, v, [](int64_t x, int64_t y) { return (x - y) >> 1; });
}
inline HVX_Vector Q6_Vh_vnavg_VhVh(HVX_Vector u, HVX_Vector v) {
    return map_lanes<int16_t>(u, v, [](int64_t x, int64_t y) { return (x - y) >> 1; });
}
inline HVX_Vector Q6_Vw_vnavg_VwVw(HVX_Vector u, HVX_Vector v) {
    return map_lanes<int32_t>(u, v, [](int64_t x, int64_t y) { return (x - y) >> 1; });
}
// Unsigned inputs, signed byte result (the difference halved fits in a signed byte).
inline HVX_Vector Q6_Vb_vnavg_VubVub(HVX_Vector u, HVX_Vector v) {
    return map_lanes<uint8_t>(u, v, [](int64_t x, int64_t y) { return (x - y) >> 1; });
}

// ---- absolute values -----------------------------------------------------------------------

// Without :sat the most negative value stays itself (|min| wraps); with :sat it becomes max.
inline HVX_Vector Q6_Vb_vabs_Vb(HVX_Vector u) { return map_lanes<int8_t>(u, [](int64_t x) { return x < 0 ? -x : x; }); }
inline HVX_Vector Q6_Vh_vabs_Vh(HVX_Vector u) { return map_lanes<int16_t>(u, [](int64_t x) { return x < 0 ? -x : x; }); }
inline HVX_Vector Q6_Vw_vabs_Vw(HVX_Vector u) { return map_lanes<int32_t>(u, [](int64_t x) { return x < 0 ? -x : x; }); }
inline HVX_Vector Q6_Vb_vabs_Vb_sat(HVX_Vector u) { return map_lanes<int8_t>(u, [](int64_t x) { return saturate<int8_t>(x < 0 ? -x : x); }); }
inline HVX_Vector Q6_Vh_vabs_Vh_sat(HVX_Vector u) { return map_lanes<int16_t>(u, [](int64_t x) { return saturate<int16_t>(x < 0 ? -x : x); }); }
inline HVX_Vector Q6_Vw_vabs_Vw_sat(HVX_Vector u) { return map_lanes<int32_t>(u, [](int64_t x) { return saturate<int32_t>(x < 0 ? -x : x); }); }

// |u - v| computed exactly; the result lanes are unsigned of the same width.
inline HVX_Vector Q6_Vub_vabsdiff_VubVub(HVX_Vector u, HVX_Vector v) {
    return map_lanes<uint8_t>(u, v, [](int64_t x, int64_t y) { return x > y ? x - y : y - x; });
}
inline HVX_Vector Q6_Vuh_vabsdiff_VuhVuh(HVX_Vector u, HVX_Vector v) {
    return map_lanes<uint16_t>(u, v, [](int64_t x, int64_t y) { return x > y ? x - y : y - x; });
}
inline HVX_Vector Q6_Vuh_vabsdiff_VhVh(HVX_Vector u, HVX_Vector v) {
    return map_lanes<int16_t>(u, v, [](int64_t x, int64_t y) { return x > y ? x - y : y - x; });
}
inline HVX_Vector Q6_Vuw_vabsdiff_VwVw(HVX_Vector u, HVX_Vector v) {
    return map_lanes<int32_t>(u, v, [](int64_t x, int64_t y) { return x > y ? x - y : y - x; });
}

// ---- bit counts ----------------------------------------------------------------------------

namespace detail_arith {
// Leading zeros of the low `bits` bits of x (bits when x is 0).
inline int leading_zeros(uint32_t x, int bits) { return x == 0 ? bits : __builtin_clz(x) - (32 - bits); }
// Leading sign bits: the longer run of equal leading bits (ones or zeros).
inline int leading_sign_bits(int32_t x, int bits) {
    const uint32_t mask = bits == 32 ? 0xFFFFFFFFu : (1u << bits) - 1;
    const int zeros = leading_zeros(uint32_t(x) & mask, bits);
    const int ones = leading_zeros(~uint32_t(x) & mask, bits);
    return zeros > ones ? zeros : ones;
}
} // namespace detail_arith

inline HVX_Vector Q6_Vuh_vcl0_Vuh(HVX_Vector u) { return map_lanes<uint16_t>(u, [](uint16_t x) { return detail_arith::leading_zeros(x, 16); }); }
inline HVX_Vector Q6_Vuw_vcl0_Vuw(HVX_Vector u) { return map_lanes<uint32_t>(u, [](uint32_t x) { return detail_arith::leading_zeros(x, 32); }); }
// Shift that normalizes the value: leading sign bits minus one (0 and -1 give width - 1).
inline HVX_Vector Q6_Vh_vnormamt_Vh(HVX_Vector u) { return map_lanes<int16_t>(u, [](int16_t x) { return detail_arith::leading_sign_bits(x, 16) - 1; }); }
inline HVX_Vector Q6_Vw_vnormamt_Vw(HVX_Vector u) { return map_lanes<int32_t>(u, [](int32_t x) { return detail_arith::leading_sign_bits(x, 32) - 1; }); }
inline HVX_Vector Q6_Vh_vadd_vclb_VhVh(HVX_Vector u, HVX_Vector v) {
    return map_lanes<int16_t>(u, v, [](int16_t x, int16_t y) { return detail_arith::leading_sign_bits(x, 16) + y; });
}
inline HVX_Vector Q6_Vw_vadd_vclb_VwVw(HVX_Vector u, HVX_Vector v) {
    return map_lanes<int32_t>(u, v, [](int32_t x, int32_t y) { return int64_t(detail_arith::leading_sign_bits(x, 32)) + y; });
}
inline HVX_Vector Q6_Vh_vpopcount_Vh(HVX_Vector u) { return map_lanes<uint16_t>(u, [](uint16_t x) { return __builtin_popcount(x); }); }

} // namespace hexnpu::hvx::intrinsics
