// The vrmpy family: each 32-bit lane is the sum of the products of its four bytes with four
// bytes of the other operand (the matching bytes of Vv, or bytes 0..3 of Rt), plus the
// accumulator in the acc forms; sums wrap modulo 2^32. This is the dot-product workhorse of the
// quantized kernels, so it has AVX-512 (VNNI where available) and AVX2 fast paths; namespace
// `portable` keeps the element loops the fast paths are tested against.
// Semantics: QEMU ext.idef "4-WAY REDUCTION" (vrmpyub, vrmpybus, vrmpybv, vrmpyubi, ...).
#pragma once

#include "vnpu/hvx/hvx-types.h"

#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace hexnpu::hvx::intrinsics {

namespace portable {

// d.w[i] = acc.w[i] + sum_k u.byte[4i+k] * v.byte[4i+k], bytes signed or unsigned per side.
template <class A, class B>
inline HVX_Vector vrmpy(HVX_Vector acc, HVX_Vector u, HVX_Vector v) {
    const detail::Lanes<A> x = detail::lanes<A>(u);
    const detail::Lanes<B> y = detail::lanes<B>(v);
    detail::Lanes<uint32_t> d = detail::lanes<uint32_t>(acc);
    for (int i = 0; i < 32; ++i) {
        int32_t sum = 0;
        for (int k = 0; k < 4; ++k) sum += int32_t(x[4 * i + k]) * int32_t(y[4 * i + k]);
        d[i] += uint32_t(sum);
    }
    return detail::vector_of(d);
}

} // namespace portable

namespace detail_vrmpy {

// The four bytes of Rt repeated over the vector, so scalar forms reuse the vector-vector path.
inline HVX_Vector splat_word(int32_t rt) {
    HVX_Vector v;
    for (int i = 0; i < 32; ++i) v[i] = rt;
    return v;
}

#if defined(__AVX512BW__)
// Exact 4-byte dot products per 32-bit lane: split every halfword into its even and odd byte,
// extended to 16 bits with each side's signedness, and let vpmaddwd add the pairs (16-bit
// products of 8-bit values never overflow, nor does the pair sum in 32 bits).
template <bool SignedU, bool SignedV>
inline __m512i dot4(__m512i u, __m512i v) {
    const __m512i low = _mm512_set1_epi16(0xFF);
    const __m512i ue = SignedU ? _mm512_srai_epi16(_mm512_slli_epi16(u, 8), 8) : _mm512_and_si512(u, low);
    const __m512i uo = SignedU ? _mm512_srai_epi16(u, 8) : _mm512_srli_epi16(u, 8);
    const __m512i ve = SignedV ? _mm512_srai_epi16(_mm512_slli_epi16(v, 8), 8) : _mm512_and_si512(v, low);
    const __m512i vo = SignedV ? _mm512_srai_epi16(v, 8) : _mm512_srli_epi16(v, 8);
    return _mm512_add_epi32(_mm512_madd_epi16(ue, ve), _mm512_madd_epi16(uo, vo));
}

template <bool SignedU, bool SignedV>
inline HVX_Vector vrmpy_simd(HVX_Vector acc, HVX_Vector u, HVX_Vector v) {
    HVX_Vector d;
    for (int k = 0; k < 2; ++k) {
        const __m512i a = _mm512_load_si512(reinterpret_cast<const __m512i *>(&u) + k);
        const __m512i b = _mm512_load_si512(reinterpret_cast<const __m512i *>(&v) + k);
        const __m512i c = _mm512_load_si512(reinterpret_cast<const __m512i *>(&acc) + k);
        __m512i r;
#if defined(__AVX512VNNI__)
        // vpdpbusd is exactly unsigned x signed with a wrapping accumulate; signed x signed
        // becomes (u + 128) x v - 128 x v, both exact modulo 2^32.
        if constexpr (!SignedU && SignedV) {
            r = _mm512_dpbusd_epi32(c, a, b);
        } else if constexpr (SignedU && SignedV) {
            const __m512i bias = _mm512_set1_epi8(char(0x80));
            r = _mm512_dpbusd_epi32(c, _mm512_xor_si512(a, bias), b);
            r = _mm512_sub_epi32(r, _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, b));
        } else {
            r = _mm512_add_epi32(c, dot4<SignedU, SignedV>(a, b));
        }
#else
        r = _mm512_add_epi32(c, dot4<SignedU, SignedV>(a, b));
#endif
        _mm512_store_si512(reinterpret_cast<__m512i *>(&d) + k, r);
    }
    return d;
}
#elif defined(__AVX2__)
// As above with 256-bit registers.
template <bool SignedU, bool SignedV>
inline __m256i dot4(__m256i u, __m256i v) {
    const __m256i low = _mm256_set1_epi16(0xFF);
    const __m256i ue = SignedU ? _mm256_srai_epi16(_mm256_slli_epi16(u, 8), 8) : _mm256_and_si256(u, low);
    const __m256i uo = SignedU ? _mm256_srai_epi16(u, 8) : _mm256_srli_epi16(u, 8);
    const __m256i ve = SignedV ? _mm256_srai_epi16(_mm256_slli_epi16(v, 8), 8) : _mm256_and_si256(v, low);
    const __m256i vo = SignedV ? _mm256_srai_epi16(v, 8) : _mm256_srli_epi16(v, 8);
    return _mm256_add_epi32(_mm256_madd_epi16(ue, ve), _mm256_madd_epi16(uo, vo));
}

template <bool SignedU, bool SignedV>
inline HVX_Vector vrmpy_simd(HVX_Vector acc, HVX_Vector u, HVX_Vector v) {
    HVX_Vector d;
    for (int k = 0; k < 4; ++k) {
        const __m256i a = _mm256_load_si256(reinterpret_cast<const __m256i *>(&u) + k);
        const __m256i b = _mm256_load_si256(reinterpret_cast<const __m256i *>(&v) + k);
        const __m256i c = _mm256_load_si256(reinterpret_cast<const __m256i *>(&acc) + k);
        _mm256_store_si256(reinterpret_cast<__m256i *>(&d) + k, _mm256_add_epi32(c, dot4<SignedU, SignedV>(a, b)));
    }
    return d;
}
#endif

template <bool SignedU, bool SignedV>
inline HVX_Vector vrmpy(HVX_Vector acc, HVX_Vector u, HVX_Vector v) {
#if defined(__AVX2__)
    return vrmpy_simd<SignedU, SignedV>(acc, u, v);
#else
    using A = std::conditional_t<SignedU, int8_t, uint8_t>;
    using B = std::conditional_t<SignedV, int8_t, uint8_t>;
    return portable::vrmpy<A, B>(acc, u, v);
#endif
}

} // namespace detail_vrmpy

inline HVX_Vector Q6_Vw_vrmpy_VbVb(HVX_Vector u, HVX_Vector v) { return detail_vrmpy::vrmpy<true, true>(HVX_Vector{}, u, v); }
inline HVX_Vector Q6_Vw_vrmpyacc_VwVbVb(HVX_Vector x, HVX_Vector u, HVX_Vector v) { return detail_vrmpy::vrmpy<true, true>(x, u, v); }
inline HVX_Vector Q6_Vw_vrmpy_VubVb(HVX_Vector u, HVX_Vector v) { return detail_vrmpy::vrmpy<false, true>(HVX_Vector{}, u, v); }
inline HVX_Vector Q6_Vw_vrmpyacc_VwVubVb(HVX_Vector x, HVX_Vector u, HVX_Vector v) { return detail_vrmpy::vrmpy<false, true>(x, u, v); }
inline HVX_Vector Q6_Vuw_vrmpy_VubVub(HVX_Vector u, HVX_Vector v) { return detail_vrmpy::vrmpy<false, false>(HVX_Vector{}, u, v); }
inline HVX_Vector Q6_Vuw_vrmpyacc_VuwVubVub(HVX_Vector x, HVX_Vector u, HVX_Vector v) { return detail_vrmpy::vrmpy<false, false>(x, u, v); }
inline HVX_Vector Q6_Vw_vrmpy_VubRb(HVX_Vector u, int32_t rt) { return detail_vrmpy::vrmpy<false, true>(HVX_Vector{}, u, detail_vrmpy::splat_word(rt)); }
inline HVX_Vector Q6_Vw_vrmpyacc_VwVubRb(HVX_Vector x, HVX_Vector u, int32_t rt) { return detail_vrmpy::vrmpy<false, true>(x, u, detail_vrmpy::splat_word(rt)); }
inline HVX_Vector Q6_Vuw_vrmpy_VubRub(HVX_Vector u, int32_t rt) { return detail_vrmpy::vrmpy<false, false>(HVX_Vector{}, u, detail_vrmpy::splat_word(rt)); }
inline HVX_Vector Q6_Vuw_vrmpyacc_VuwVubRub(HVX_Vector x, HVX_Vector u, int32_t rt) { return detail_vrmpy::vrmpy<false, false>(x, u, detail_vrmpy::splat_word(rt)); }

// Sliding-window pair forms, #u1 in {0, 1}. With c(k) = byte (k & 3) of Rt, lane i gives
//   lo = s[0]*c(-u1) + lo[1]*c(1-u1) + lo[2]*c(2-u1) + lo[3]*c(3-u1)
//   hi = hi[0]*c(2-u1) + hi[1]*c(3-u1) + s[2]*c(-u1) + lo[3]*c(1-u1)
// where lo/hi are the bytes of word i of Vuu.lo/Vuu.hi and s is Vuu.hi when u1 is 1, else Vuu.lo.
namespace detail_vrmpy {
template <class A, class B, class D>
inline HVX_VectorPair vrmpy_window(const HVX_VectorPair *acc, HVX_VectorPair uu, int32_t rt, int u1) {
    const detail::Lanes<A> x0 = detail::lanes<A>(detail::lo_of(uu)), x1 = detail::lanes<A>(detail::hi_of(uu));
    const detail::Lanes<A> &xs = u1 ? x1 : x0;
    const auto c = [rt](int k) { return int64_t(B(uint32_t(rt) >> (8 * (k & 3)))); };
    detail::Lanes<D> lo{}, hi{};
    if (acc) {
        lo = detail::lanes<D>(detail::lo_of(*acc));
        hi = detail::lanes<D>(detail::hi_of(*acc));
    }
    for (int i = 0; i < 32; ++i) {
        lo[i] = D(int64_t(lo[i]) + xs[4 * i] * c(0 - u1) + x0[4 * i + 1] * c(1 - u1) + x0[4 * i + 2] * c(2 - u1) +
                  x0[4 * i + 3] * c(3 - u1));
        hi[i] = D(int64_t(hi[i]) + x1[4 * i] * c(2 - u1) + x1[4 * i + 1] * c(3 - u1) + xs[4 * i + 2] * c(0 - u1) +
                  x0[4 * i + 3] * c(1 - u1));
    }
    return detail::pair_of(detail::vector_of(lo), detail::vector_of(hi));
}
} // namespace detail_vrmpy

inline HVX_VectorPair Q6_Ww_vrmpy_WubRbI(HVX_VectorPair uu, int32_t rt, int32_t u1) { return detail_vrmpy::vrmpy_window<uint8_t, int8_t, int32_t>(nullptr, uu, rt, u1 & 1); }
inline HVX_VectorPair Q6_Ww_vrmpyacc_WwWubRbI(HVX_VectorPair xx, HVX_VectorPair uu, int32_t rt, int32_t u1) { return detail_vrmpy::vrmpy_window<uint8_t, int8_t, int32_t>(&xx, uu, rt, u1 & 1); }
inline HVX_VectorPair Q6_Wuw_vrmpy_WubRubI(HVX_VectorPair uu, int32_t rt, int32_t u1) { return detail_vrmpy::vrmpy_window<uint8_t, uint8_t, uint32_t>(nullptr, uu, rt, u1 & 1); }
inline HVX_VectorPair Q6_Wuw_vrmpyacc_WuwWubRubI(HVX_VectorPair xx, HVX_VectorPair uu, int32_t rt, int32_t u1) { return detail_vrmpy::vrmpy_window<uint8_t, uint8_t, uint32_t>(&xx, uu, rt, u1 & 1); }

} // namespace hexnpu::hvx::intrinsics
