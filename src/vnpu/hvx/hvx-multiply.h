// Multiplies: widening (vmpy: even lanes to the low register, odd lanes to the high), integer
// low-part (vmpyi), word-by-halfword parts (vmpye/vmpyo/vmpyie/vmpyio), fractional halfword
// (:<<1:rnd:sat), dual and vertical multiply-accumulate reductions (vdmpy, vmpa, vtmpy).
// Scalar operands: byte k of Rt pairs with lane j when k == j % 4 (halfword k: j % 2).
// Semantics: QEMU ext.idef "MMVECTOR MULTIPLICATIONS" and "2-WAY/3-WAY REDUCTION".
#pragma once

#include "vnpu/hvx/hvx-types.h"

namespace hexnpu::hvx::intrinsics {

using detail::byte_of;
using detail::half_of;
using detail::Lanes;
using detail::lanes;
using detail::ubyte_of;
using detail::uhalf_of;
using detail::vector_of;

namespace detail_mpy {

// Widening multiply of two vectors: d_lo[i] = f(u[2i], v[2i]) + acc_lo[i], d_hi from odd lanes.
template <class A, class B, class D, class F>
inline HVX_VectorPair widen(HVX_Vector u, HVX_Vector v, const HVX_VectorPair *acc, F f) {
    const Lanes<A> x = lanes<A>(u);
    const Lanes<B> y = lanes<B>(v);
    Lanes<D> even{}, odd{};
    if (acc) {
        even = lanes<D>(detail::lo_of(*acc));
        odd = lanes<D>(detail::hi_of(*acc));
    }
    for (int i = 0; i < Lanes<D>::count; ++i) {
        even[i] = D(int64_t(even[i]) + f(x[2 * i], y[2 * i]));
        odd[i] = D(int64_t(odd[i]) + f(x[2 * i + 1], y[2 * i + 1]));
    }
    return detail::pair_of(vector_of(even), vector_of(odd));
}

inline int64_t product(int64_t a, int64_t b) { return a * b; }

} // namespace detail_mpy

// Element-loop versions of the widening multiplies: the reference the SIMD paths below are
// tested against.
namespace portable {
inline HVX_VectorPair vmpy_ub_b(HVX_Vector u, HVX_Vector v, const HVX_VectorPair *acc) {
    return detail_mpy::widen<uint8_t, int8_t, int16_t>(u, v, acc, detail_mpy::product);
}
inline HVX_VectorPair vmpy_b_b(HVX_Vector u, HVX_Vector v, const HVX_VectorPair *acc) {
    return detail_mpy::widen<int8_t, int8_t, int16_t>(u, v, acc, detail_mpy::product);
}
inline HVX_VectorPair vmpy_ub_ub(HVX_Vector u, HVX_Vector v, const HVX_VectorPair *acc) {
    return detail_mpy::widen<uint8_t, uint8_t, uint16_t>(u, v, acc, detail_mpy::product);
}
inline HVX_VectorPair vmpy_h_h(HVX_Vector u, HVX_Vector v, const HVX_VectorPair *acc) {
    return detail_mpy::widen<int16_t, int16_t, int32_t>(u, v, acc, detail_mpy::product);
}
} // namespace portable

namespace detail_mpy {
// SIMD path for the widening byte multiplies, in vector-extension form (AVX-512 / AVX2 / SSE as
// the target allows): split every halfword into its even and odd byte, extended with each side's
// signedness, and multiply as 16-bit lanes; the low 16 bits of an 8x8-bit product are exact.
template <bool SignedU, bool SignedV>
inline HVX_VectorPair vmpy_bytes_simd(HVX_Vector u, HVX_Vector v, const HVX_VectorPair *acc) {
    using detail::VecI16;
    using detail::VecU16;
    const VecI16 hu = (VecI16)u, hv = (VecI16)v;
    const VecU16 ue = SignedU ? (VecU16)((VecI16)((VecU16)hu << 8) >> 8) : (VecU16)hu & 0xFF;
    const VecU16 uo = SignedU ? (VecU16)(hu >> 8) : (VecU16)hu >> 8;
    const VecU16 ve = SignedV ? (VecU16)((VecI16)((VecU16)hv << 8) >> 8) : (VecU16)hv & 0xFF;
    const VecU16 vo = SignedV ? (VecU16)(hv >> 8) : (VecU16)hv >> 8;
    VecU16 even = ue * ve, odd = uo * vo;
    if (acc) {
        even += (VecU16)detail::lo_of(*acc);
        odd += (VecU16)detail::hi_of(*acc);
    }
    return detail::pair_of((HVX_Vector)even, (HVX_Vector)odd);
}
} // namespace detail_mpy

inline HVX_VectorPair Q6_Wh_vmpy_VubVb(HVX_Vector u, HVX_Vector v) { return detail_mpy::vmpy_bytes_simd<false, true>(u, v, nullptr); }
inline HVX_VectorPair Q6_Wh_vmpyacc_WhVubVb(HVX_VectorPair xx, HVX_Vector u, HVX_Vector v) { return detail_mpy::vmpy_bytes_simd<false, true>(u, v, &xx); }
inline HVX_VectorPair Q6_Wh_vmpy_VbVb(HVX_Vector u, HVX_Vector v) { return detail_mpy::vmpy_bytes_simd<true, true>(u, v, nullptr); }
inline HVX_VectorPair Q6_Wh_vmpyacc_WhVbVb(HVX_VectorPair xx, HVX_Vector u, HVX_Vector v) { return detail_mpy::vmpy_bytes_simd<true, true>(u, v, &xx); }
inline HVX_VectorPair Q6_Wuh_vmpy_VubVub(HVX_Vector u, HVX_Vector v) { return detail_mpy::vmpy_bytes_simd<false, false>(u, v, nullptr); }
inline HVX_VectorPair Q6_Wuh_vmpyacc_WuhVubVub(HVX_VectorPair xx, HVX_Vector u, HVX_Vector v) { return detail_mpy::vmpy_bytes_simd<false, false>(u, v, &xx); }

inline HVX_VectorPair Q6_Ww_vmpy_VhVh(HVX_Vector u, HVX_Vector v) { return portable::vmpy_h_h(u, v, nullptr); }
inline HVX_VectorPair Q6_Ww_vmpyacc_WwVhVh(HVX_VectorPair xx, HVX_Vector u, HVX_Vector v) { return portable::vmpy_h_h(u, v, &xx); }
inline HVX_VectorPair Q6_Wuw_vmpy_VuhVuh(HVX_Vector u, HVX_Vector v) { return detail_mpy::widen<uint16_t, uint16_t, uint32_t>(u, v, nullptr, detail_mpy::product); }
inline HVX_VectorPair Q6_Wuw_vmpyacc_WuwVuhVuh(HVX_VectorPair xx, HVX_Vector u, HVX_Vector v) { return detail_mpy::widen<uint16_t, uint16_t, uint32_t>(u, v, &xx, detail_mpy::product); }
inline HVX_VectorPair Q6_Ww_vmpy_VhVuh(HVX_Vector u, HVX_Vector v) { return detail_mpy::widen<int16_t, uint16_t, int32_t>(u, v, nullptr, detail_mpy::product); }
inline HVX_VectorPair Q6_Ww_vmpyacc_WwVhVuh(HVX_VectorPair xx, HVX_Vector u, HVX_Vector v) { return detail_mpy::widen<int16_t, uint16_t, int32_t>(u, v, &xx, detail_mpy::product); }

// ---- widening vector-by-scalar: lane j uses byte (j % 4) / halfword (j % 2) of Rt ----------

namespace detail_mpy {
template <class A, class D, class Coef>
inline HVX_VectorPair widen_scalar(HVX_Vector u, int32_t rt, const HVX_VectorPair *acc, Coef coef) {
    const Lanes<A> x = lanes<A>(u);
    Lanes<D> even{}, odd{};
    if (acc) {
        even = lanes<D>(detail::lo_of(*acc));
        odd = lanes<D>(detail::hi_of(*acc));
    }
    for (int i = 0; i < Lanes<D>::count; ++i) {
        even[i] = D(int64_t(even[i]) + int64_t(x[2 * i]) * coef(rt, 2 * i));
        odd[i] = D(int64_t(odd[i]) + int64_t(x[2 * i + 1]) * coef(rt, 2 * i + 1));
    }
    return detail::pair_of(vector_of(even), vector_of(odd));
}
inline int64_t coef_b(int32_t rt, int lane) { return byte_of(rt, lane % 4); }
inline int64_t coef_ub(int32_t rt, int lane) { return ubyte_of(rt, lane % 4); }
inline int64_t coef_h(int32_t rt, int lane) { return half_of(rt, lane % 2); }
inline int64_t coef_uh(int32_t rt, int lane) { return uhalf_of(rt, lane % 2); }
} // namespace detail_mpy

inline HVX_VectorPair Q6_Wh_vmpy_VubRb(HVX_Vector u, int32_t rt) { return detail_mpy::widen_scalar<uint8_t, int16_t>(u, rt, nullptr, detail_mpy::coef_b); }
inline HVX_VectorPair Q6_Wh_vmpyacc_WhVubRb(HVX_VectorPair xx, HVX_Vector u, int32_t rt) { return detail_mpy::widen_scalar<uint8_t, int16_t>(u, rt, &xx, detail_mpy::coef_b); }
inline HVX_VectorPair Q6_Wuh_vmpy_VubRub(HVX_Vector u, int32_t rt) { return detail_mpy::widen_scalar<uint8_t, uint16_t>(u, rt, nullptr, detail_mpy::coef_ub); }
inline HVX_VectorPair Q6_Wuh_vmpyacc_WuhVubRub(HVX_VectorPair xx, HVX_Vector u, int32_t rt) { return detail_mpy::widen_scalar<uint8_t, uint16_t>(u, rt, &xx, detail_mpy::coef_ub); }
inline HVX_VectorPair Q6_Ww_vmpy_VhRh(HVX_Vector u, int32_t rt) { return detail_mpy::widen_scalar<int16_t, int32_t>(u, rt, nullptr, detail_mpy::coef_h); }
inline HVX_VectorPair Q6_Ww_vmpyacc_WwVhRh(HVX_VectorPair xx, HVX_Vector u, int32_t rt) { return detail_mpy::widen_scalar<int16_t, int32_t>(u, rt, &xx, detail_mpy::coef_h); }
inline HVX_VectorPair Q6_Wuw_vmpy_VuhRuh(HVX_Vector u, int32_t rt) { return detail_mpy::widen_scalar<uint16_t, uint32_t>(u, rt, nullptr, detail_mpy::coef_uh); }
inline HVX_VectorPair Q6_Wuw_vmpyacc_WuwVuhRuh(HVX_VectorPair xx, HVX_Vector u, int32_t rt) { return detail_mpy::widen_scalar<uint16_t, uint32_t>(u, rt, &xx, detail_mpy::coef_uh); }

// Accumulate and saturate each 32-bit sum.
inline HVX_VectorPair Q6_Ww_vmpyacc_WwVhRh_sat(HVX_VectorPair xx, HVX_Vector u, int32_t rt) {
    const Lanes<int16_t> x = lanes<int16_t>(u);
    Lanes<int32_t> even = lanes<int32_t>(detail::lo_of(xx)), odd = lanes<int32_t>(detail::hi_of(xx));
    for (int i = 0; i < 32; ++i) {
        even[i] = detail::saturate<int32_t>(int64_t(even[i]) + int64_t(x[2 * i]) * half_of(rt, 0));
        odd[i] = detail::saturate<int32_t>(int64_t(odd[i]) + int64_t(x[2 * i + 1]) * half_of(rt, 1));
    }
    return detail::pair_of(vector_of(even), vector_of(odd));
}

// ---- fractional halfword multiplies: upper half of sat32((u * v) << 1 [+ 0x8000]) ----------

namespace detail_mpy {
inline int16_t frac_mul(int64_t a, int64_t b, bool round) {
    const int64_t p = detail::saturate<int32_t>((a * b << 1) + (round ? 0x8000 : 0));
    return int16_t(p >> 16);
}
} // namespace detail_mpy

inline HVX_Vector Q6_Vh_vmpy_VhRh_s1_sat(HVX_Vector u, int32_t rt) {
    const Lanes<int16_t> x = lanes<int16_t>(u);
    Lanes<int16_t> d;
    for (int j = 0; j < 64; ++j) d[j] = detail_mpy::frac_mul(x[j], half_of(rt, j % 2), false);
    return vector_of(d);
}
inline HVX_Vector Q6_Vh_vmpy_VhRh_s1_rnd_sat(HVX_Vector u, int32_t rt) {
    const Lanes<int16_t> x = lanes<int16_t>(u);
    Lanes<int16_t> d;
    for (int j = 0; j < 64; ++j) d[j] = detail_mpy::frac_mul(x[j], half_of(rt, j % 2), true);
    return vector_of(d);
}
inline HVX_Vector Q6_Vh_vmpy_VhVh_s1_rnd_sat(HVX_Vector u, HVX_Vector v) {
    return detail::map_lanes<int16_t>(u, v, [](int16_t a, int16_t b) { return detail_mpy::frac_mul(a, b, true); });
}

// ---- integer (low part) multiplies ---------------------------------------------------------

inline HVX_Vector Q6_Vh_vmpyi_VhVh(HVX_Vector u, HVX_Vector v) { return (HVX_Vector)((detail::VecU16)u * (detail::VecU16)v); }
inline HVX_Vector Q6_Vh_vmpyiacc_VhVhVh(HVX_Vector x, HVX_Vector u, HVX_Vector v) {
    return (HVX_Vector)((detail::VecU16)x + (detail::VecU16)u * (detail::VecU16)v);
}

namespace detail_mpy {
template <class T, class Coef>
inline HVX_Vector mpyi_scalar(const HVX_Vector *acc, HVX_Vector u, int32_t rt, Coef coef) {
    const Lanes<T> x = lanes<T>(u);
    Lanes<T> d{};
    if (acc) d = lanes<T>(*acc);
    for (int j = 0; j < Lanes<T>::count; ++j) d[j] = T(uint64_t(d[j]) + uint64_t(int64_t(x[j]) * coef(rt, j)));
    return vector_of(d);
}
} // namespace detail_mpy

inline HVX_Vector Q6_Vh_vmpyi_VhRb(HVX_Vector u, int32_t rt) { return detail_mpy::mpyi_scalar<int16_t>(nullptr, u, rt, detail_mpy::coef_b); }
inline HVX_Vector Q6_Vh_vmpyiacc_VhVhRb(HVX_Vector x, HVX_Vector u, int32_t rt) { return detail_mpy::mpyi_scalar<int16_t>(&x, u, rt, detail_mpy::coef_b); }
inline HVX_Vector Q6_Vw_vmpyi_VwRb(HVX_Vector u, int32_t rt) { return detail_mpy::mpyi_scalar<int32_t>(nullptr, u, rt, detail_mpy::coef_b); }
inline HVX_Vector Q6_Vw_vmpyiacc_VwVwRb(HVX_Vector x, HVX_Vector u, int32_t rt) { return detail_mpy::mpyi_scalar<int32_t>(&x, u, rt, detail_mpy::coef_b); }
inline HVX_Vector Q6_Vw_vmpyi_VwRub(HVX_Vector u, int32_t rt) { return detail_mpy::mpyi_scalar<int32_t>(nullptr, u, rt, detail_mpy::coef_ub); }
inline HVX_Vector Q6_Vw_vmpyiacc_VwVwRub(HVX_Vector x, HVX_Vector u, int32_t rt) { return detail_mpy::mpyi_scalar<int32_t>(&x, u, rt, detail_mpy::coef_ub); }
inline HVX_Vector Q6_Vw_vmpyi_VwRh(HVX_Vector u, int32_t rt) { return detail_mpy::mpyi_scalar<int32_t>(nullptr, u, rt, detail_mpy::coef_h); }
inline HVX_Vector Q6_Vw_vmpyiacc_VwVwRh(HVX_Vector x, HVX_Vector u, int32_t rt) { return detail_mpy::mpyi_scalar<int32_t>(&x, u, rt, detail_mpy::coef_h); }

// ---- word by halfword: the halfword is the even (e) or odd (o) half of the matching Vv word --

inline HVX_Vector Q6_Vw_vmpyie_VwVuh(HVX_Vector u, HVX_Vector v) {
    return detail::map_lanes<int32_t>(u, v, [](int64_t a, int32_t b) { return a * uhalf_of(b, 0); });
}
inline HVX_Vector Q6_Vw_vmpyieacc_VwVwVuh(HVX_Vector x, HVX_Vector u, HVX_Vector v) {
    return detail::map_lanes<int32_t>(x, u, v, [](int64_t acc, int64_t a, int32_t b) { return acc + a * uhalf_of(b, 0); });
}
inline HVX_Vector Q6_Vw_vmpyieacc_VwVwVh(HVX_Vector x, HVX_Vector u, HVX_Vector v) {
    return detail::map_lanes<int32_t>(x, u, v, [](int64_t acc, int64_t a, int32_t b) { return acc + a * half_of(b, 0); });
}
inline HVX_Vector Q6_Vw_vmpyio_VwVh(HVX_Vector u, HVX_Vector v) {
    return detail::map_lanes<int32_t>(u, v, [](int64_t a, int32_t b) { return a * half_of(b, 1); });
}
// (even half of Vu) * (odd half of Vv), shifted into the upper half.
inline HVX_Vector Q6_Vw_vmpyieo_VhVh(HVX_Vector u, HVX_Vector v) {
    return detail::map_lanes<int32_t>(u, v, [](int32_t a, int32_t b) { return int64_t(uint64_t(int64_t(half_of(a, 0)) * half_of(b, 1)) << 16); });
}
// Upper bits of the 48-bit product: (Vu.w * Vv.uh[even]) >> 16.
inline HVX_Vector Q6_Vw_vmpye_VwVuh(HVX_Vector u, HVX_Vector v) {
    return detail::map_lanes<int32_t>(u, v, [](int64_t a, int32_t b) { return (a * uhalf_of(b, 0)) >> 16; });
}
// Full 48-bit product split over the pair: hi = p >> 16, lo = p << 16.
inline HVX_VectorPair Q6_W_vmpye_VwVuh(HVX_Vector u, HVX_Vector v) {
    const Lanes<int32_t> x = lanes<int32_t>(u), y = lanes<int32_t>(v);
    Lanes<int32_t> lo, hi;
    for (int i = 0; i < 32; ++i) {
        const int64_t p = int64_t(x[i]) * uhalf_of(y[i], 0);
        hi[i] = int32_t(p >> 16);
        lo[i] = int32_t(uint64_t(p) << 16);
    }
    return detail::pair_of(vector_of(lo), vector_of(hi));
}
// sat32(((Vu.w * Vv.h[odd]) >> 14 [+ 1]) >> 1): the Q31 x Q15 fractional product.
inline HVX_Vector Q6_Vw_vmpyo_VwVh_s1_sat(HVX_Vector u, HVX_Vector v) {
    return detail::map_lanes<int32_t>(u, v, [](int64_t a, int32_t b) { return detail::saturate<int32_t>(((a * half_of(b, 1)) >> 14) >> 1); });
}
inline HVX_Vector Q6_Vw_vmpyo_VwVh_s1_rnd_sat(HVX_Vector u, HVX_Vector v) {
    return detail::map_lanes<int32_t>(u, v, [](int64_t a, int32_t b) { return detail::saturate<int32_t>((((a * half_of(b, 1)) >> 14) + 1) >> 1); });
}
// Even unsigned halfword of each Vu word times the low unsigned halfword of Rt.
inline HVX_Vector Q6_Vuw_vmpye_VuhRuh(HVX_Vector u, int32_t rt) {
    return detail::map_lanes<uint32_t>(u, [rt](uint32_t a) { return uint64_t(uhalf_of(int32_t(a), 0)) * uhalf_of(rt, 0); });
}
inline HVX_Vector Q6_Vuw_vmpyeacc_VuwVuhRuh(HVX_Vector x, HVX_Vector u, int32_t rt) {
    return detail::map_lanes<uint32_t>(x, u, [rt](uint32_t acc, uint32_t a) { return acc + uint64_t(uhalf_of(int32_t(a), 0)) * uhalf_of(rt, 0); });
}

// ---- dual multiply-accumulate (vdmpy): two adjacent narrow lanes into one wide lane --------

namespace detail_mpy {
// d[i] (+)= a[2i] * coef(2i) + a[2i+1] * coef(2i+1), wrapping to D.
template <class A, class D, class Coef>
inline HVX_Vector dual(const HVX_Vector *acc, HVX_Vector u, int32_t rt, Coef coef) {
    const Lanes<A> x = lanes<A>(u);
    Lanes<D> d{};
    if (acc) d = lanes<D>(*acc);
    for (int i = 0; i < Lanes<D>::count; ++i)
        d[i] = D(int64_t(d[i]) + int64_t(x[2 * i]) * coef(rt, 2 * i) + int64_t(x[2 * i + 1]) * coef(rt, 2 * i + 1));
    return vector_of(d);
}
// Sliding-window pair form: the low result pairs lanes (2i, 2i+1) of Vuu.lo, the high result
// pairs lane 2i+1 of Vuu.lo with lane 2i of Vuu.hi.
template <class A, class D, class Coef>
inline HVX_VectorPair dual_pair(const HVX_VectorPair *acc, HVX_VectorPair uu, int32_t rt, Coef coef) {
    const Lanes<A> x0 = lanes<A>(detail::lo_of(uu)), x1 = lanes<A>(detail::hi_of(uu));
    Lanes<D> lo{}, hi{};
    if (acc) {
        lo = lanes<D>(detail::lo_of(*acc));
        hi = lanes<D>(detail::hi_of(*acc));
    }
    for (int i = 0; i < Lanes<D>::count; ++i) {
        lo[i] = D(int64_t(lo[i]) + int64_t(x0[2 * i]) * coef(rt, 2 * i) + int64_t(x0[2 * i + 1]) * coef(rt, 2 * i + 1));
        hi[i] = D(int64_t(hi[i]) + int64_t(x0[2 * i + 1]) * coef(rt, 2 * i) + int64_t(x1[2 * i]) * coef(rt, 2 * i + 1));
    }
    return detail::pair_of(vector_of(lo), vector_of(hi));
}
} // namespace detail_mpy

inline HVX_Vector Q6_Vh_vdmpy_VubRb(HVX_Vector u, int32_t rt) { return detail_mpy::dual<uint8_t, int16_t>(nullptr, u, rt, detail_mpy::coef_b); }
inline HVX_Vector Q6_Vh_vdmpyacc_VhVubRb(HVX_Vector x, HVX_Vector u, int32_t rt) { return detail_mpy::dual<uint8_t, int16_t>(&x, u, rt, detail_mpy::coef_b); }
inline HVX_Vector Q6_Vw_vdmpy_VhRb(HVX_Vector u, int32_t rt) { return detail_mpy::dual<int16_t, int32_t>(nullptr, u, rt, detail_mpy::coef_b); }
inline HVX_Vector Q6_Vw_vdmpyacc_VwVhRb(HVX_Vector x, HVX_Vector u, int32_t rt) { return detail_mpy::dual<int16_t, int32_t>(&x, u, rt, detail_mpy::coef_b); }
inline HVX_VectorPair Q6_Wh_vdmpy_WubRb(HVX_VectorPair uu, int32_t rt) { return detail_mpy::dual_pair<uint8_t, int16_t>(nullptr, uu, rt, detail_mpy::coef_b); }
inline HVX_VectorPair Q6_Wh_vdmpyacc_WhWubRb(HVX_VectorPair xx, HVX_VectorPair uu, int32_t rt) { return detail_mpy::dual_pair<uint8_t, int16_t>(&xx, uu, rt, detail_mpy::coef_b); }
inline HVX_VectorPair Q6_Ww_vdmpy_WhRb(HVX_VectorPair uu, int32_t rt) { return detail_mpy::dual_pair<int16_t, int32_t>(nullptr, uu, rt, detail_mpy::coef_b); }
inline HVX_VectorPair Q6_Ww_vdmpyacc_WwWhRb(HVX_VectorPair xx, HVX_VectorPair uu, int32_t rt) { return detail_mpy::dual_pair<int16_t, int32_t>(&xx, uu, rt, detail_mpy::coef_b); }

// Halfword dual products saturated to a word; the accumulating forms saturate the total once.
namespace detail_mpy {
template <class Coef>
inline HVX_Vector dual_sat(const HVX_Vector *acc, HVX_Vector u, Coef coef) {
    const Lanes<int16_t> x = lanes<int16_t>(u);
    Lanes<int32_t> d{};
    if (acc) d = lanes<int32_t>(*acc);
    for (int i = 0; i < 32; ++i)
        d[i] = detail::saturate<int32_t>(int64_t(d[i]) + int64_t(x[2 * i]) * coef(i, 0) + int64_t(x[2 * i + 1]) * coef(i, 1));
    return vector_of(d);
}
// The pair form reads the odd lane of Vuu.lo and the even lane of Vuu.hi (offset by one).
template <class Coef>
inline HVX_Vector dual_sat_pair(const HVX_Vector *acc, HVX_VectorPair uu, Coef coef) {
    const Lanes<int16_t> x0 = lanes<int16_t>(detail::lo_of(uu)), x1 = lanes<int16_t>(detail::hi_of(uu));
    Lanes<int32_t> d{};
    if (acc) d = lanes<int32_t>(*acc);
    for (int i = 0; i < 32; ++i)
        d[i] = detail::saturate<int32_t>(int64_t(d[i]) + int64_t(x0[2 * i + 1]) * coef(i, 0) + int64_t(x1[2 * i]) * coef(i, 1));
    return vector_of(d);
}
} // namespace detail_mpy

inline HVX_Vector Q6_Vw_vdmpy_VhRh_sat(HVX_Vector u, int32_t rt) { return detail_mpy::dual_sat(nullptr, u, [rt](int, int k) { return int64_t(half_of(rt, k)); }); }
inline HVX_Vector Q6_Vw_vdmpyacc_VwVhRh_sat(HVX_Vector x, HVX_Vector u, int32_t rt) { return detail_mpy::dual_sat(&x, u, [rt](int, int k) { return int64_t(half_of(rt, k)); }); }
inline HVX_Vector Q6_Vw_vdmpy_VhRuh_sat(HVX_Vector u, int32_t rt) { return detail_mpy::dual_sat(nullptr, u, [rt](int, int k) { return int64_t(uhalf_of(rt, k)); }); }
inline HVX_Vector Q6_Vw_vdmpyacc_VwVhRuh_sat(HVX_Vector x, HVX_Vector u, int32_t rt) { return detail_mpy::dual_sat(&x, u, [rt](int, int k) { return int64_t(uhalf_of(rt, k)); }); }
inline HVX_Vector Q6_Vw_vdmpy_VhVh_sat(HVX_Vector u, HVX_Vector v) {
    const Lanes<int16_t> y = lanes<int16_t>(v);
    return detail_mpy::dual_sat(nullptr, u, [&y](int i, int k) { return int64_t(y[2 * i + k]); });
}
inline HVX_Vector Q6_Vw_vdmpyacc_VwVhVh_sat(HVX_Vector x, HVX_Vector u, HVX_Vector v) {
    const Lanes<int16_t> y = lanes<int16_t>(v);
    return detail_mpy::dual_sat(&x, u, [&y](int i, int k) { return int64_t(y[2 * i + k]); });
}
inline HVX_Vector Q6_Vw_vdmpy_WhRh_sat(HVX_VectorPair uu, int32_t rt) { return detail_mpy::dual_sat_pair(nullptr, uu, [rt](int, int k) { return int64_t(half_of(rt, k)); }); }
inline HVX_Vector Q6_Vw_vdmpyacc_VwWhRh_sat(HVX_Vector x, HVX_VectorPair uu, int32_t rt) { return detail_mpy::dual_sat_pair(&x, uu, [rt](int, int k) { return int64_t(half_of(rt, k)); }); }
inline HVX_Vector Q6_Vw_vdmpy_WhRuh_sat(HVX_VectorPair uu, int32_t rt) { return detail_mpy::dual_sat_pair(nullptr, uu, [rt](int, int k) { return int64_t(uhalf_of(rt, k)); }); }
inline HVX_Vector Q6_Vw_vdmpyacc_VwWhRuh_sat(HVX_Vector x, HVX_VectorPair uu, int32_t rt) { return detail_mpy::dual_sat_pair(&x, uu, [rt](int, int k) { return int64_t(uhalf_of(rt, k)); }); }

// ---- vertical multiply-add (vmpa): lane j of both registers of Vuu, with fixed Rt bytes -----
// Low result: Vuu.lo[2i]*b0 + Vuu.hi[2i]*b1; high result: Vuu.lo[2i+1]*b2 + Vuu.hi[2i+1]*b3.

namespace detail_mpy {
template <class A, class D, class Coef>
inline HVX_VectorPair vertical(const HVX_VectorPair *acc, HVX_VectorPair uu, Coef coef) {
    const Lanes<A> x0 = lanes<A>(detail::lo_of(uu)), x1 = lanes<A>(detail::hi_of(uu));
    Lanes<D> lo{}, hi{};
    if (acc) {
        lo = lanes<D>(detail::lo_of(*acc));
        hi = lanes<D>(detail::hi_of(*acc));
    }
    for (int i = 0; i < Lanes<D>::count; ++i) {
        lo[i] = D(int64_t(lo[i]) + int64_t(x0[2 * i]) * coef(2 * i, 0) + int64_t(x1[2 * i]) * coef(2 * i, 1));
        hi[i] = D(int64_t(hi[i]) + int64_t(x0[2 * i + 1]) * coef(2 * i + 1, 2) + int64_t(x1[2 * i + 1]) * coef(2 * i + 1, 3));
    }
    return detail::pair_of(vector_of(lo), vector_of(hi));
}
} // namespace detail_mpy

inline HVX_VectorPair Q6_Wh_vmpa_WubRb(HVX_VectorPair uu, int32_t rt) { return detail_mpy::vertical<uint8_t, int16_t>(nullptr, uu, [rt](int, int k) { return int64_t(byte_of(rt, k)); }); }
inline HVX_VectorPair Q6_Wh_vmpaacc_WhWubRb(HVX_VectorPair xx, HVX_VectorPair uu, int32_t rt) { return detail_mpy::vertical<uint8_t, int16_t>(&xx, uu, [rt](int, int k) { return int64_t(byte_of(rt, k)); }); }
inline HVX_VectorPair Q6_Wh_vmpa_WubRub(HVX_VectorPair uu, int32_t rt) { return detail_mpy::vertical<uint8_t, uint16_t>(nullptr, uu, [rt](int, int k) { return int64_t(ubyte_of(rt, k)); }); }
inline HVX_VectorPair Q6_Wh_vmpaacc_WhWubRub(HVX_VectorPair xx, HVX_VectorPair uu, int32_t rt) { return detail_mpy::vertical<uint8_t, uint16_t>(&xx, uu, [rt](int, int k) { return int64_t(ubyte_of(rt, k)); }); }
inline HVX_VectorPair Q6_Ww_vmpa_WhRb(HVX_VectorPair uu, int32_t rt) { return detail_mpy::vertical<int16_t, int32_t>(nullptr, uu, [rt](int, int k) { return int64_t(byte_of(rt, k)); }); }
inline HVX_VectorPair Q6_Ww_vmpaacc_WwWhRb(HVX_VectorPair xx, HVX_VectorPair uu, int32_t rt) { return detail_mpy::vertical<int16_t, int32_t>(&xx, uu, [rt](int, int k) { return int64_t(byte_of(rt, k)); }); }
inline HVX_VectorPair Q6_Ww_vmpa_WuhRb(HVX_VectorPair uu, int32_t rt) { return detail_mpy::vertical<uint16_t, int32_t>(nullptr, uu, [rt](int, int k) { return int64_t(byte_of(rt, k)); }); }
inline HVX_VectorPair Q6_Ww_vmpaacc_WwWuhRb(HVX_VectorPair xx, HVX_VectorPair uu, int32_t rt) { return detail_mpy::vertical<uint16_t, int32_t>(&xx, uu, [rt](int, int k) { return int64_t(byte_of(rt, k)); }); }
// Vector coefficients: Vvv supplies the matching bytes of its low/high register.
inline HVX_VectorPair Q6_Wh_vmpa_WubWb(HVX_VectorPair uu, HVX_VectorPair vv) {
    const Lanes<int8_t> c0 = lanes<int8_t>(detail::lo_of(vv)), c1 = lanes<int8_t>(detail::hi_of(vv));
    return detail_mpy::vertical<uint8_t, int16_t>(nullptr, uu, [&](int j, int k) { return int64_t((k & 1) ? c1[j] : c0[j]); });
}
inline HVX_VectorPair Q6_Wh_vmpa_WubWub(HVX_VectorPair uu, HVX_VectorPair vv) {
    const Lanes<uint8_t> c0 = lanes<uint8_t>(detail::lo_of(vv)), c1 = lanes<uint8_t>(detail::hi_of(vv));
    return detail_mpy::vertical<uint8_t, int16_t>(nullptr, uu, [&](int j, int k) { return int64_t((k & 1) ? c1[j] : c0[j]); });
}

// ---- 3-tap (vtmpy): two products of a sliding window plus the next element unscaled --------

namespace detail_mpy {
template <class A, class D, class Coef>
inline HVX_VectorPair triple(const HVX_VectorPair *acc, HVX_VectorPair uu, int32_t rt, Coef coef) {
    const Lanes<A> x0 = lanes<A>(detail::lo_of(uu)), x1 = lanes<A>(detail::hi_of(uu));
    Lanes<D> lo{}, hi{};
    if (acc) {
        lo = lanes<D>(detail::lo_of(*acc));
        hi = lanes<D>(detail::hi_of(*acc));
    }
    for (int i = 0; i < Lanes<D>::count; ++i) {
        lo[i] = D(int64_t(lo[i]) + int64_t(x0[2 * i]) * coef(rt, 2 * i) + int64_t(x0[2 * i + 1]) * coef(rt, 2 * i + 1) + x1[2 * i]);
        hi[i] = D(int64_t(hi[i]) + int64_t(x0[2 * i + 1]) * coef(rt, 2 * i) + int64_t(x1[2 * i]) * coef(rt, 2 * i + 1) + x1[2 * i + 1]);
    }
    return detail::pair_of(vector_of(lo), vector_of(hi));
}
} // namespace detail_mpy

inline HVX_VectorPair Q6_Wh_vtmpy_WbRb(HVX_VectorPair uu, int32_t rt) { return detail_mpy::triple<int8_t, int16_t>(nullptr, uu, rt, detail_mpy::coef_b); }
inline HVX_VectorPair Q6_Wh_vtmpyacc_WhWbRb(HVX_VectorPair xx, HVX_VectorPair uu, int32_t rt) { return detail_mpy::triple<int8_t, int16_t>(&xx, uu, rt, detail_mpy::coef_b); }
inline HVX_VectorPair Q6_Wh_vtmpy_WubRb(HVX_VectorPair uu, int32_t rt) { return detail_mpy::triple<uint8_t, int16_t>(nullptr, uu, rt, detail_mpy::coef_b); }
inline HVX_VectorPair Q6_Wh_vtmpyacc_WhWubRb(HVX_VectorPair xx, HVX_VectorPair uu, int32_t rt) { return detail_mpy::triple<uint8_t, int16_t>(&xx, uu, rt, detail_mpy::coef_b); }
inline HVX_VectorPair Q6_Ww_vtmpy_WhRb(HVX_VectorPair uu, int32_t rt) { return detail_mpy::triple<int16_t, int32_t>(nullptr, uu, rt, detail_mpy::coef_b); }
inline HVX_VectorPair Q6_Ww_vtmpyacc_WwWhRb(HVX_VectorPair xx, HVX_VectorPair uu, int32_t rt) { return detail_mpy::triple<int16_t, int32_t>(&xx, uu, rt, detail_mpy::coef_b); }

} // namespace hexnpu::hvx::intrinsics
