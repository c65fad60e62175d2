// Shifts: by scalar (count masked to the lane width), by vector (signed count: a negative count
// shifts the other way), shift-and-accumulate, rotate, and the narrowing shift/round/saturate
// packs whose results interleave the two sources (Vv feeds the even lanes, Vu the odd lanes).
// Semantics: QEMU ext.idef V_SHIFT, NARROWING_SHIFT, vround*, vsat*, vrotr; macros.h fBIDIR_*.
#pragma once

#include "vnpu/hvx/hvx-types.h"

namespace hexnpu::hvx::intrinsics {

// ---- by scalar: the count is Rt & (lane bits - 1); vector-extension shifts are SIMD ---------

inline HVX_Vector Q6_Vh_vasl_VhR(HVX_Vector u, int32_t rt) { return (HVX_Vector)((detail::VecU16)u << uint16_t(rt & 15)); }
inline HVX_Vector Q6_Vw_vasl_VwR(HVX_Vector u, int32_t rt) { return (HVX_Vector)((detail::VecU32)u << uint32_t(rt & 31)); }
inline HVX_Vector Q6_Vh_vasr_VhR(HVX_Vector u, int32_t rt) { return (HVX_Vector)((detail::VecI16)u >> int16_t(rt & 15)); }
inline HVX_Vector Q6_Vw_vasr_VwR(HVX_Vector u, int32_t rt) { return (HVX_Vector)((detail::VecI32)u >> int32_t(rt & 31)); }
inline HVX_Vector Q6_Vub_vlsr_VubR(HVX_Vector u, int32_t rt) { return (HVX_Vector)((detail::VecU8)u >> uint8_t(rt & 7)); }
inline HVX_Vector Q6_Vuh_vlsr_VuhR(HVX_Vector u, int32_t rt) { return (HVX_Vector)((detail::VecU16)u >> uint16_t(rt & 15)); }
inline HVX_Vector Q6_Vuw_vlsr_VuwR(HVX_Vector u, int32_t rt) { return (HVX_Vector)((detail::VecU32)u >> uint32_t(rt & 31)); }

inline HVX_Vector Q6_Vw_vaslacc_VwVwR(HVX_Vector x, HVX_Vector u, int32_t rt) {
    return (HVX_Vector)((detail::VecU32)x + ((detail::VecU32)u << uint32_t(rt & 31)));
}
inline HVX_Vector Q6_Vw_vasracc_VwVwR(HVX_Vector x, HVX_Vector u, int32_t rt) {
    return (HVX_Vector)((detail::VecU32)x + (detail::VecU32)((detail::VecI32)u >> int32_t(rt & 31)));
}
inline HVX_Vector Q6_Vh_vaslacc_VhVhR(HVX_Vector x, HVX_Vector u, int32_t rt) {
    return (HVX_Vector)((detail::VecU16)x + ((detail::VecU16)u << uint16_t(rt & 15)));
}
inline HVX_Vector Q6_Vh_vasracc_VhVhR(HVX_Vector x, HVX_Vector u, int32_t rt) {
    return (HVX_Vector)((detail::VecU16)x + (detail::VecU16)((detail::VecI16)u >> int16_t(rt & 15)));
}

// ---- by vector: count = sign-extended low log2(bits)+1 bits of the matching Vv lane ---------

namespace detail_shift {
// Signed count in [-bits, bits-1] from the low log2(bits)+1 bits of c.
inline int count_of(int32_t c, int bits) {
    const int field = bits == 32 ? 6 : 5;
    return int32_t(uint32_t(c) << (32 - field)) >> (32 - field);
}
// Right shift for s >= 0, left shift by -s otherwise; arithmetic or logical on the value x
// already widened to 64 bits with the lane's signedness. Left shifts by the full width give 0.
inline int64_t shift_right(int64_t x, int s) { return s >= 0 ? x >> s : int64_t(uint64_t(x) << -s); }
// Left shift for s >= 0, right shift by -s otherwise.
inline int64_t shift_left(int64_t x, int s) { return s >= 0 ? int64_t(uint64_t(x) << s) : x >> -s; }
} // namespace detail_shift

inline HVX_Vector Q6_Vh_vasl_VhVh(HVX_Vector u, HVX_Vector v) {
    return detail::map_lanes<int16_t>(u, v, [](int16_t x, int16_t c) { return detail_shift::shift_left(x, detail_shift::count_of(c, 16)); });
}
inline HVX_Vector Q6_Vh_vasr_VhVh(HVX_Vector u, HVX_Vector v) {
    return detail::map_lanes<int16_t>(u, v, [](int16_t x, int16_t c) { return detail_shift::shift_right(x, detail_shift::count_of(c, 16)); });
}
inline HVX_Vector Q6_Vh_vlsr_VhVh(HVX_Vector u, HVX_Vector v) {
    return detail::map_lanes<uint16_t>(u, v, [](uint16_t x, uint16_t c) { return detail_shift::shift_right(x, detail_shift::count_of(c, 16)); });
}
inline HVX_Vector Q6_Vw_vasl_VwVw(HVX_Vector u, HVX_Vector v) {
    return detail::map_lanes<int32_t>(u, v, [](int32_t x, int32_t c) { return detail_shift::shift_left(x, detail_shift::count_of(c, 32)); });
}
inline HVX_Vector Q6_Vw_vasr_VwVw(HVX_Vector u, HVX_Vector v) {
    return detail::map_lanes<int32_t>(u, v, [](int32_t x, int32_t c) { return detail_shift::shift_right(x, detail_shift::count_of(c, 32)); });
}
inline HVX_Vector Q6_Vw_vlsr_VwVw(HVX_Vector u, HVX_Vector v) {
    return detail::map_lanes<uint32_t>(u, v, [](uint32_t x, uint32_t c) { return detail_shift::shift_right(x, detail_shift::count_of(int32_t(c), 32)); });
}

// Rotate each word right by Vv & 31.
inline HVX_Vector Q6_Vuw_vrotr_VuwVuw(HVX_Vector u, HVX_Vector v) {
    return detail::map_lanes<uint32_t>(u, v, [](uint32_t x, uint32_t c) {
        const unsigned s = c & 31;
        return s == 0 ? x : (x >> s) | (x << (32 - s));
    });
}

// Saturate the 64-bit value (Vu.w : Vv.w) to a word.
inline HVX_Vector Q6_Vw_vsatdw_VwVw(HVX_Vector u, HVX_Vector v) {
    return detail::map_lanes<int32_t>(u, v, [](int32_t hi, int32_t lo) {
        return detail::saturate<int32_t>(int64_t(uint64_t(int64_t(hi)) << 32 | uint32_t(lo)));
    });
}

// ---- narrowing: lane i of each source becomes narrow lane 2i (from Vv) and 2i+1 (from Vu) ---

namespace detail_shift {
template <class Src, class Dst, class F>
inline HVX_Vector narrow_interleave(HVX_Vector u, HVX_Vector v, F f) {
    const detail::Lanes<Src> x = detail::lanes<Src>(u), y = detail::lanes<Src>(v);
    detail::Lanes<Dst> d;
    for (int i = 0; i < detail::Lanes<Src>::count; ++i) {
        d[2 * i] = Dst(f(int64_t(y[i])));
        d[2 * i + 1] = Dst(f(int64_t(x[i])));
    }
    return detail::vector_of(d);
}
// x >> s, with :rnd adding half of the dropped range first (nothing when s is 0).
inline int64_t shift_round(int64_t x, int s, bool round) { return (round && s > 0 ? x + (int64_t(1) << (s - 1)) : x) >> s; }
} // namespace detail_shift

#define HEXNPU_HVX_NARROW_SHIFT(NAME, SRC, DST, MASK, ROUND, SAT)                                  \
    inline HVX_Vector NAME(HVX_Vector u, HVX_Vector v, int32_t rt) {                               \
        const int s = rt & MASK;                                                                   \
        return detail_shift::narrow_interleave<SRC, DST>(u, v, [s](int64_t x) {                    \
            const int64_t r = detail_shift::shift_round(x, s, ROUND);                              \
            return SAT ? int64_t(detail::saturate<DST>(r)) : r;                                    \
        });                                                                                        \
    }
HEXNPU_HVX_NARROW_SHIFT(Q6_Vh_vasr_VwVwR, int32_t, int16_t, 15, false, false)
HEXNPU_HVX_NARROW_SHIFT(Q6_Vh_vasr_VwVwR_sat, int32_t, int16_t, 15, false, true)
HEXNPU_HVX_NARROW_SHIFT(Q6_Vh_vasr_VwVwR_rnd_sat, int32_t, int16_t, 15, true, true)
HEXNPU_HVX_NARROW_SHIFT(Q6_Vuh_vasr_VwVwR_sat, int32_t, uint16_t, 15, false, true)
HEXNPU_HVX_NARROW_SHIFT(Q6_Vuh_vasr_VwVwR_rnd_sat, int32_t, uint16_t, 15, true, true)
HEXNPU_HVX_NARROW_SHIFT(Q6_Vuh_vasr_VuwVuwR_sat, uint32_t, uint16_t, 15, false, true)
HEXNPU_HVX_NARROW_SHIFT(Q6_Vuh_vasr_VuwVuwR_rnd_sat, uint32_t, uint16_t, 15, true, true)
HEXNPU_HVX_NARROW_SHIFT(Q6_Vub_vasr_VhVhR_sat, int16_t, uint8_t, 7, false, true)
HEXNPU_HVX_NARROW_SHIFT(Q6_Vub_vasr_VhVhR_rnd_sat, int16_t, uint8_t, 7, true, true)
HEXNPU_HVX_NARROW_SHIFT(Q6_Vb_vasr_VhVhR_sat, int16_t, int8_t, 7, false, true)
HEXNPU_HVX_NARROW_SHIFT(Q6_Vb_vasr_VhVhR_rnd_sat, int16_t, int8_t, 7, true, true)
HEXNPU_HVX_NARROW_SHIFT(Q6_Vub_vasr_VuhVuhR_sat, uint16_t, uint8_t, 7, false, true)
HEXNPU_HVX_NARROW_SHIFT(Q6_Vub_vasr_VuhVuhR_rnd_sat, uint16_t, uint8_t, 7, true, true)
#undef HEXNPU_HVX_NARROW_SHIFT

// Round to the upper half: (x + half) >> half-width bits, then saturate.
#define HEXNPU_HVX_ROUND(NAME, SRC, DST, BITS)                                                     \
    inline HVX_Vector NAME(HVX_Vector u, HVX_Vector v) {                                           \
        return detail_shift::narrow_interleave<SRC, DST>(u, v, [](int64_t x) {                     \
            return int64_t(detail::saturate<DST>((x + (int64_t(1) << (BITS - 1))) >> BITS));       \
        });                                                                                        \
    }
HEXNPU_HVX_ROUND(Q6_Vh_vround_VwVw_sat, int32_t, int16_t, 16)
HEXNPU_HVX_ROUND(Q6_Vuh_vround_VwVw_sat, int32_t, uint16_t, 16)
HEXNPU_HVX_ROUND(Q6_Vuh_vround_VuwVuw_sat, uint32_t, uint16_t, 16)
HEXNPU_HVX_ROUND(Q6_Vb_vround_VhVh_sat, int16_t, int8_t, 8)
HEXNPU_HVX_ROUND(Q6_Vub_vround_VhVh_sat, int16_t, uint8_t, 8)
HEXNPU_HVX_ROUND(Q6_Vub_vround_VuhVuh_sat, uint16_t, uint8_t, 8)
#undef HEXNPU_HVX_ROUND

// Saturate and interleave without shifting.
inline HVX_Vector Q6_Vub_vsat_VhVh(HVX_Vector u, HVX_Vector v) {
    return detail_shift::narrow_interleave<int16_t, uint8_t>(u, v, [](int64_t x) { return int64_t(detail::saturate<uint8_t>(x)); });
}
inline HVX_Vector Q6_Vh_vsat_VwVw(HVX_Vector u, HVX_Vector v) {
    return detail_shift::narrow_interleave<int32_t, int16_t>(u, v, [](int64_t x) { return int64_t(detail::saturate<int16_t>(x)); });
}
inline HVX_Vector Q6_Vuh_vsat_VuwVuw(HVX_Vector u, HVX_Vector v) {
    return detail_shift::narrow_interleave<uint32_t, uint16_t>(u, v, [](int64_t x) { return int64_t(detail::saturate<uint16_t>(x)); });
}

} // namespace hexnpu::hvx::intrinsics
