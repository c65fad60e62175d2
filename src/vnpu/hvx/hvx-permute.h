// Permutes: in-lane shuffles (vshuffe/vshuffo), cross-lane shuffles and deals, pack/unpack,
// zero/sign extension, the delta networks, aligns and rotates, and table lookups (vlut).
// Semantics: QEMU ext.idef "SHUFFLES", "Double Vector Shuffles", "Deal", "Pack", "Unpack",
// "GENERAL PERMUTE NETWORKS", "Vector Alignment", "lookup table instructions".
#pragma once

#include "vnpu/hvx/hvx-types.h"

#if (defined(__AVX512F__) || defined(__AVX512BW__) || defined(__AVX2__)) && !defined(__hexagon__)
#include <immintrin.h>
#endif

namespace hexnpu::hvx::intrinsics {

using detail::Lanes;
using detail::lanes;
using detail::vector_of;

// ---- in-lane shuffles: even/odd narrow elements of Vv (low position) and Vu (high) ---------

namespace detail_permute {
// d[2i] = v[2i + part], d[2i+1] = u[2i + part], on lanes of type T.
template <class T>
inline HVX_Vector shuffle_part(HVX_Vector u, HVX_Vector v, int part) {
    const Lanes<T> x = lanes<T>(u), y = lanes<T>(v);
    Lanes<T> d;
    for (int i = 0; i < Lanes<T>::count / 2; ++i) {
        d[2 * i] = y[2 * i + part];
        d[2 * i + 1] = x[2 * i + part];
    }
    return vector_of(d);
}
} // namespace detail_permute

inline HVX_Vector Q6_Vb_vshuffe_VbVb(HVX_Vector u, HVX_Vector v) { return detail_permute::shuffle_part<uint8_t>(u, v, 0); }
inline HVX_Vector Q6_Vb_vshuffo_VbVb(HVX_Vector u, HVX_Vector v) { return detail_permute::shuffle_part<uint8_t>(u, v, 1); }
inline HVX_Vector Q6_Vh_vshuffe_VhVh(HVX_Vector u, HVX_Vector v) { return detail_permute::shuffle_part<uint16_t>(u, v, 0); }
inline HVX_Vector Q6_Vh_vshuffo_VhVh(HVX_Vector u, HVX_Vector v) { return detail_permute::shuffle_part<uint16_t>(u, v, 1); }
inline HVX_VectorPair Q6_Wb_vshuffoe_VbVb(HVX_Vector u, HVX_Vector v) {
    return detail::pair_of(Q6_Vb_vshuffe_VbVb(u, v), Q6_Vb_vshuffo_VbVb(u, v));
}
inline HVX_VectorPair Q6_Wh_vshuffoe_VhVh(HVX_Vector u, HVX_Vector v) {
    return detail::pair_of(Q6_Vh_vshuffe_VhVh(u, v), Q6_Vh_vshuffo_VhVh(u, v));
}

// ---- single-vector deal (de-interleave) and shuffle (interleave) ---------------------------

namespace detail_permute {
template <class T>
inline HVX_Vector deal(HVX_Vector u) {
    const Lanes<T> x = lanes<T>(u);
    constexpr int half = Lanes<T>::count / 2;
    Lanes<T> d;
    for (int i = 0; i < half; ++i) {
        d[i] = x[2 * i];
        d[i + half] = x[2 * i + 1];
    }
    return vector_of(d);
}
template <class T>
inline HVX_Vector shuffle(HVX_Vector u) {
    const Lanes<T> x = lanes<T>(u);
    constexpr int half = Lanes<T>::count / 2;
    Lanes<T> d;
    for (int i = 0; i < half; ++i) {
        d[2 * i] = x[i];
        d[2 * i + 1] = x[i + half];
    }
    return vector_of(d);
}
} // namespace detail_permute

inline HVX_Vector Q6_Vb_vdeal_Vb(HVX_Vector u) { return detail_permute::deal<uint8_t>(u); }
inline HVX_Vector Q6_Vh_vdeal_Vh(HVX_Vector u) { return detail_permute::deal<uint16_t>(u); }
inline HVX_Vector Q6_Vb_vshuff_Vb(HVX_Vector u) { return detail_permute::shuffle<uint8_t>(u); }
#if defined(__AVX512BW__) && !defined(__hexagon__)
// Halfword i and i + 32 side by side: two halfword permutes of the vector's two halves.
inline HVX_Vector Q6_Vh_vshuff_Vh(HVX_Vector u) {
    alignas(64) static const uint16_t index[64] = {
        0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
        11, 43, 12, 44, 13, 45, 14, 46, 15, 47, 16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53,
        22, 54, 23, 55, 24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
    const __m512i lo = _mm512_load_si512(&u), hi = _mm512_load_si512(reinterpret_cast<const __m512i *>(&u) + 1);
    HVX_Vector    d;
    _mm512_store_si512(&d, _mm512_permutex2var_epi16(lo, _mm512_load_si512(index), hi));
    _mm512_store_si512(reinterpret_cast<__m512i *>(&d) + 1, _mm512_permutex2var_epi16(lo, _mm512_load_si512(index + 32), hi));
    return d;
}
#else
inline HVX_Vector Q6_Vh_vshuff_Vh(HVX_Vector u) { return detail_permute::shuffle<uint16_t>(u); }
#endif

// Bytes 0 and 2 of every word: Vv's byte-0s, Vv's byte-2s, Vu's byte-0s, Vu's byte-2s.
inline HVX_Vector Q6_Vb_vdeale_VbVb(HVX_Vector u, HVX_Vector v) {
    const Lanes<uint8_t> x = lanes<uint8_t>(u), y = lanes<uint8_t>(v);
    Lanes<uint8_t> d;
    for (int i = 0; i < 32; ++i) {
        d[i] = y[4 * i];
        d[32 + i] = y[4 * i + 2];
        d[64 + i] = x[4 * i];
        d[96 + i] = x[4 * i + 2];
    }
    return vector_of(d);
}

// ---- two-vector shuffle/deal by Rt: a 2x2 transpose at every element size set in Rt --------
// Start from (lo = Vv, hi = Vu); for each bit `offset` of Rt & 127 (ascending for vshuff,
// descending for vdeal) swap hi[k] with lo[k + offset] for every k without that bit.

namespace detail_permute {
inline HVX_VectorPair transpose_stages(HVX_Vector u, HVX_Vector v, int32_t rt, bool ascending) {
    Lanes<uint8_t> lo = lanes<uint8_t>(v), hi = lanes<uint8_t>(u);
    for (int step = 0; step < 7; ++step) {
        const int offset = ascending ? 1 << step : 64 >> step;
        if (!(rt & offset)) continue;
        for (int k = 0; k < 128; ++k) {
            if (k & offset) continue;
            const uint8_t t = hi[k];
            hi[k] = lo[k + offset];
            lo[k + offset] = t;
        }
    }
    return detail::pair_of(vector_of(lo), vector_of(hi));
}
} // namespace detail_permute

// Fast path (x86 with AVX-512 VBMI): every one of these permutes is a fixed byte permutation of
// (Vv, Vu) for a given Rt & 127, so it is read off once from the reference code above applied to
// index bytes, then applied with byte permutes (vpermt2b) instead of a loop per stage. Same results
// by construction; tests/vnpu/test-hvx-permute.cpp compares both for every Rt.
namespace detail_permute {
#if defined(__AVX512VBMI__) && !defined(__hexagon__)
struct byte_permutation {
    alignas(64) uint8_t lo[128], hi[128];  // output byte k takes byte [k] of Vv (0..127) then Vu (128..255)
};
struct transpose_table {
    byte_permutation shuff[128], deal[128];
    transpose_table() {
        Lanes<uint8_t> v, u;
        for (int k = 0; k < 128; ++k) {
            v[k] = uint8_t(k);
            u[k] = uint8_t(128 + k);
        }
        for (int32_t rt = 0; rt < 128; ++rt) {
            for (int direction = 0; direction < 2; ++direction) {
                const bool           ascending = direction == 0;
                const HVX_VectorPair w = transpose_stages(vector_of(u), vector_of(v), rt, ascending);
                byte_permutation &   p = (ascending ? shuff : deal)[rt];
                const HVX_Vector     lo = detail::lo_of(w), hi = detail::hi_of(w);
                __builtin_memcpy(p.lo, &lo, 128);
                __builtin_memcpy(p.hi, &hi, 128);
            }
        }
    }
};
// 128 bytes from the 256 of (v, u) by the index bytes idx.
inline HVX_Vector permute_bytes(const __m512i src[4], const uint8_t * idx) {
    HVX_Vector d;
    for (int k = 0; k < 2; ++k) {
        const __m512i i     = _mm512_load_si512(idx + 64 * k);
        const __m512i from0 = _mm512_permutex2var_epi8(src[0], i, src[1]);  // index bit 6 picks the half
        const __m512i from1 = _mm512_permutex2var_epi8(src[2], i, src[3]);
        _mm512_store_si512(reinterpret_cast<__m512i *>(&d) + k, _mm512_mask_blend_epi8(_mm512_movepi8_mask(i), from0, from1));
    }
    return d;
}
inline HVX_VectorPair transpose_fast(HVX_Vector u, HVX_Vector v, int32_t rt, bool ascending) {
    static const transpose_table table;
    const byte_permutation &     p      = (ascending ? table.shuff : table.deal)[rt & 127];
    const __m512i                src[4] = {_mm512_load_si512(&v), _mm512_load_si512(reinterpret_cast<const __m512i *>(&v) + 1),
                                           _mm512_load_si512(&u), _mm512_load_si512(reinterpret_cast<const __m512i *>(&u) + 1)};
    return detail::pair_of(permute_bytes(src, p.lo), permute_bytes(src, p.hi));
}
#elif defined(__AVX2__) && !defined(__hexagon__)
// x86 with AVX2 only: vshuff with Rt & 127 = 128 - e (e = 1, 2, 4, 8: every stage from e up) is a
// plain interleave of e-byte elements, lo from the vectors' first halves and hi from their second
// (Vv's at even positions), the way the kernels use it (V and K weight tiles, fp16 pairs): unpacks
// within 128-bit lanes, then the lanes put in order; vdeal with Rt = -4 its inverse (the words of
// Vv then Vu: evens to lo, odds to hi). Every other Rt: the stages.
template <int E> inline __m256i unpack_lo(__m256i a, __m256i b) {
    return E == 1 ? _mm256_unpacklo_epi8(a, b) : E == 2 ? _mm256_unpacklo_epi16(a, b)
                                               : E == 4 ? _mm256_unpacklo_epi32(a, b) : _mm256_unpacklo_epi64(a, b);
}
template <int E> inline __m256i unpack_hi(__m256i a, __m256i b) {
    return E == 1 ? _mm256_unpackhi_epi8(a, b) : E == 2 ? _mm256_unpackhi_epi16(a, b)
                                               : E == 4 ? _mm256_unpackhi_epi32(a, b) : _mm256_unpackhi_epi64(a, b);
}
template <int E> inline HVX_VectorPair interleave(HVX_Vector u, HVX_Vector v) {
    const __m256i * pu = reinterpret_cast<const __m256i *>(&u);
    const __m256i * pv = reinterpret_cast<const __m256i *>(&v);
    HVX_Vector      out[2];
    __m256i *       po = reinterpret_cast<__m256i *>(out);
    for (int k = 0; k < 4; ++k) {  // 32 bytes of each source make 64 of the result
        const __m256i a = _mm256_loadu_si256(pv + k), b = _mm256_loadu_si256(pu + k);
        const __m256i lo = unpack_lo<E>(a, b), hi = unpack_hi<E>(a, b);
        _mm256_storeu_si256(po + 2 * k, _mm256_permute2x128_si256(lo, hi, 0x20));
        _mm256_storeu_si256(po + 2 * k + 1, _mm256_permute2x128_si256(lo, hi, 0x31));
    }
    return detail::pair_of(out[0], out[1]);
}
inline HVX_VectorPair deal_words(HVX_Vector u, HVX_Vector v) {
    const __m256i   split = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);  // a chunk's evens low, odds high
    const __m256i * src[2] = {reinterpret_cast<const __m256i *>(&v), reinterpret_cast<const __m256i *>(&u)};
    HVX_Vector      out[2];
    __m256i *       po = reinterpret_cast<__m256i *>(out);
    for (int k = 0; k < 4; ++k) {  // chunks 2k, 2k + 1 of (Vv, Vu): 8 evens, 8 odds
        const __m256i a = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(src[k / 2] + 2 * (k % 2)), split);
        const __m256i b = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(src[k / 2] + 2 * (k % 2) + 1), split);
        _mm256_storeu_si256(po + k, _mm256_permute2x128_si256(a, b, 0x20));
        _mm256_storeu_si256(po + 4 + k, _mm256_permute2x128_si256(a, b, 0x31));
    }
    return detail::pair_of(out[0], out[1]);
}
inline HVX_VectorPair transpose_fast(HVX_Vector u, HVX_Vector v, int32_t rt, bool ascending) {
    if (ascending) {
        switch (rt & 127) {
            case 127: return interleave<1>(u, v);
            case 126: return interleave<2>(u, v);
            case 124: return interleave<4>(u, v);
            case 120: return interleave<8>(u, v);
            default: break;
        }
    } else if ((rt & 127) == 124) {
        return deal_words(u, v);
    }
    return transpose_stages(u, v, rt, ascending);
}
#else
inline HVX_VectorPair transpose_fast(HVX_Vector u, HVX_Vector v, int32_t rt, bool ascending) {
    return transpose_stages(u, v, rt, ascending);
}
#endif
} // namespace detail_permute

inline HVX_VectorPair Q6_W_vshuff_VVR(HVX_Vector u, HVX_Vector v, int32_t rt) { return detail_permute::transpose_fast(u, v, rt, true); }
inline HVX_VectorPair Q6_W_vdeal_VVR(HVX_Vector u, HVX_Vector v, int32_t rt) { return detail_permute::transpose_fast(u, v, rt, false); }

// ---- pack: even/odd narrow parts (or saturated values) of Vv then Vu -----------------------

namespace detail_permute {
template <class Src, class Dst, class F>
inline HVX_Vector pack(HVX_Vector u, HVX_Vector v, F f) {
    const Lanes<Src> x = lanes<Src>(u), y = lanes<Src>(v);
    constexpr int n = Lanes<Src>::count;
    Lanes<Dst> d;
    for (int i = 0; i < n; ++i) {
        d[i] = Dst(f(y[i]));
        d[i + n] = Dst(f(x[i]));
    }
    return vector_of(d);
}
} // namespace detail_permute

inline HVX_Vector Q6_Vb_vpacke_VhVh(HVX_Vector u, HVX_Vector v) { return detail_permute::pack<uint16_t, uint8_t>(u, v, [](uint16_t x) { return x; }); }
inline HVX_Vector Q6_Vb_vpacko_VhVh(HVX_Vector u, HVX_Vector v) { return detail_permute::pack<uint16_t, uint8_t>(u, v, [](uint16_t x) { return x >> 8; }); }
inline HVX_Vector Q6_Vh_vpacke_VwVw(HVX_Vector u, HVX_Vector v) { return detail_permute::pack<uint32_t, uint16_t>(u, v, [](uint32_t x) { return x; }); }
inline HVX_Vector Q6_Vh_vpacko_VwVw(HVX_Vector u, HVX_Vector v) { return detail_permute::pack<uint32_t, uint16_t>(u, v, [](uint32_t x) { return x >> 16; }); }
inline HVX_Vector Q6_Vub_vpack_VhVh_sat(HVX_Vector u, HVX_Vector v) { return detail_permute::pack<int16_t, uint8_t>(u, v, detail::saturate<uint8_t>); }
inline HVX_Vector Q6_Vb_vpack_VhVh_sat(HVX_Vector u, HVX_Vector v) { return detail_permute::pack<int16_t, int8_t>(u, v, detail::saturate<int8_t>); }
inline HVX_Vector Q6_Vuh_vpack_VwVw_sat(HVX_Vector u, HVX_Vector v) { return detail_permute::pack<int32_t, uint16_t>(u, v, detail::saturate<uint16_t>); }
inline HVX_Vector Q6_Vh_vpack_VwVw_sat(HVX_Vector u, HVX_Vector v) { return detail_permute::pack<int32_t, int16_t>(u, v, detail::saturate<int16_t>); }

// ---- unpack (order-preserving widening) and zxt/sxt (even lanes low, odd lanes high) -------

namespace detail_permute {
template <class Src, class Dst>
inline HVX_VectorPair unpack(HVX_Vector u) {
    const Lanes<Src> x = lanes<Src>(u);
    constexpr int n = Lanes<Dst>::count;
    Lanes<Dst> lo, hi;
    for (int i = 0; i < n; ++i) {
        lo[i] = Dst(x[i]);
        hi[i] = Dst(x[i + n]);
    }
    return detail::pair_of(vector_of(lo), vector_of(hi));
}
template <class Src, class Dst>
inline HVX_VectorPair extend_even_odd(HVX_Vector u) {
    const Lanes<Src> x = lanes<Src>(u);
    Lanes<Dst> lo, hi;
    for (int i = 0; i < Lanes<Dst>::count; ++i) {
        lo[i] = Dst(x[2 * i]);
        hi[i] = Dst(x[2 * i + 1]);
    }
    return detail::pair_of(vector_of(lo), vector_of(hi));
}
// Or each source element into the upper half of the matching wide element (order-preserving).
template <class Src, class Dst>
inline HVX_VectorPair unpack_odd_or(HVX_VectorPair xx, HVX_Vector u) {
    const Lanes<Src> x = lanes<Src>(u);
    constexpr int n = Lanes<Dst>::count;
    Lanes<Dst> lo = lanes<Dst>(detail::lo_of(xx)), hi = lanes<Dst>(detail::hi_of(xx));
    for (int i = 0; i < n; ++i) {
        lo[i] |= Dst(Dst(x[i]) << (8 * sizeof(Src)));
        hi[i] |= Dst(Dst(x[i + n]) << (8 * sizeof(Src)));
    }
    return detail::pair_of(vector_of(lo), vector_of(hi));
}
} // namespace detail_permute

inline HVX_VectorPair Q6_Wuh_vunpack_Vub(HVX_Vector u) { return detail_permute::unpack<uint8_t, uint16_t>(u); }
inline HVX_VectorPair Q6_Wh_vunpack_Vb(HVX_Vector u) { return detail_permute::unpack<int8_t, int16_t>(u); }
inline HVX_VectorPair Q6_Wuw_vunpack_Vuh(HVX_Vector u) { return detail_permute::unpack<uint16_t, uint32_t>(u); }
inline HVX_VectorPair Q6_Ww_vunpack_Vh(HVX_Vector u) { return detail_permute::unpack<int16_t, int32_t>(u); }
inline HVX_VectorPair Q6_Wh_vunpackoor_WhVb(HVX_VectorPair xx, HVX_Vector u) { return detail_permute::unpack_odd_or<uint8_t, uint16_t>(xx, u); }
inline HVX_VectorPair Q6_Ww_vunpackoor_WwVh(HVX_VectorPair xx, HVX_Vector u) { return detail_permute::unpack_odd_or<uint16_t, uint32_t>(xx, u); }
inline HVX_VectorPair Q6_Wuh_vzxt_Vub(HVX_Vector u) { return detail_permute::extend_even_odd<uint8_t, uint16_t>(u); }
inline HVX_VectorPair Q6_Wh_vsxt_Vb(HVX_Vector u) { return detail_permute::extend_even_odd<int8_t, int16_t>(u); }
inline HVX_VectorPair Q6_Wuw_vzxt_Vuh(HVX_Vector u) { return detail_permute::extend_even_odd<uint16_t, uint32_t>(u); }
inline HVX_VectorPair Q6_Ww_vsxt_Vh(HVX_Vector u) { return detail_permute::extend_even_odd<int16_t, int32_t>(u); }

// ---- delta networks: 7 butterfly stages; at stage `offset` byte k takes byte k ^ offset when
// bit `offset` of control byte Vv[k] is set. vdelta runs offsets 64..1, vrdelta 1..64. -------

namespace detail_permute {
inline HVX_Vector butterfly(HVX_Vector u, HVX_Vector v, bool descending) {
    const Lanes<uint8_t> control = lanes<uint8_t>(v);
    Lanes<uint8_t> cur = lanes<uint8_t>(u), next;
    for (int step = 0; step < 7; ++step) {
        const int offset = descending ? 64 >> step : 1 << step;
        for (int k = 0; k < 128; ++k) next[k] = (control[k] & offset) ? cur[k ^ offset] : cur[k];
        cur = next;
    }
    return vector_of(cur);
}
} // namespace detail_permute

inline HVX_Vector Q6_V_vdelta_VV(HVX_Vector u, HVX_Vector v) { return detail_permute::butterfly(u, v, true); }
inline HVX_Vector Q6_V_vrdelta_VV(HVX_Vector u, HVX_Vector v) { return detail_permute::butterfly(u, v, false); }

// ---- align and rotate ------------------------------------------------------------------------
// valign(Vu, Vv, n): bytes n..127 of Vv followed by bytes 0..n-1 of Vu (n = Rt & 127);
// vlalign(Vu, Vv, n) is valign by 128 - n (n = 0 gives Vu); vror rotates down by Rt & 127.

// Bytes [s, s + 128) of the 256-byte string lo:hi (s <= 128): valign's and vror's window.
namespace portable {
inline HVX_Vector window(HVX_Vector lo, HVX_Vector hi, unsigned s) {
    alignas(128) uint8_t pair[256];
    __builtin_memcpy(pair, &lo, 128);
    __builtin_memcpy(pair + 128, &hi, 128);
    HVX_Vector d;
    __builtin_memcpy(&d, pair + s, 128);
    return d;
}
} // namespace portable

#if defined(__AVX512F__) && !defined(__hexagon__)
// The window by two-register permutes of the four 64-byte halves: no store reloaded at an offset
// (a stalled store forward each time, most of the block quantizers' time). Any offset with VBMI,
// word offsets with AVX-512F alone.
namespace detail_permute {
struct halves4 {
    __m512i r[4];
    halves4(HVX_Vector lo, HVX_Vector hi) {
        __builtin_memcpy(r, &lo, 128);
        __builtin_memcpy(r + 2, &hi, 128);
    }
    // Bytes: idx selects bytes (VBMI), else words.
    template <bool Bytes> HVX_Vector window(unsigned s, __m512i idx) const {
        const unsigned a = s / 64, c = a + 2 > 3 ? 3 : a + 2;
        __m512i        lo, hi;
        if constexpr (Bytes) {
#if defined(__AVX512VBMI__)
            lo = _mm512_permutex2var_epi8(r[a], idx, r[a + 1]);
            hi = _mm512_permutex2var_epi8(r[a + 1], idx, r[c]);
#endif
        } else {
            lo = _mm512_permutex2var_epi32(r[a], idx, r[a + 1]);
            hi = _mm512_permutex2var_epi32(r[a + 1], idx, r[c]);
        }
        HVX_Vector     d;
        __builtin_memcpy(&d, &lo, 64);
        __builtin_memcpy(reinterpret_cast<char *>(&d) + 64, &hi, 64);
        return d;
    }
};
inline HVX_Vector window_words(HVX_Vector lo, HVX_Vector hi, unsigned s) {  // s % 4 == 0
    const __m512i idx = _mm512_add_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                         _mm512_set1_epi32(int(s % 64 / 4)));
    return halves4(lo, hi).window<false>(s, idx);
}
#if defined(__AVX512VBMI__)
inline HVX_Vector window_bytes(HVX_Vector lo, HVX_Vector hi, unsigned s) {
    const __m512i idx = _mm512_add_epi8(_mm512_set_epi8(63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47,
                                                        46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30,
                                                        29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13,
                                                        12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                        _mm512_set1_epi8(char(s % 64)));
    return halves4(lo, hi).window<true>(s, idx);
}
#endif
} // namespace detail_permute
#endif

namespace detail_permute {
inline HVX_Vector window(HVX_Vector lo, HVX_Vector hi, unsigned s) {
#if defined(__AVX512VBMI__) && !defined(__hexagon__)
    return window_bytes(lo, hi, s);
#elif defined(__AVX512F__) && !defined(__hexagon__)
    return s % 4 == 0 ? window_words(lo, hi, s) : portable::window(lo, hi, s);
#else
    return portable::window(lo, hi, s);
#endif
}
// Bytes [shift, shift + 128) of Vv followed by Vu.
inline HVX_Vector align_bytes(HVX_Vector u, HVX_Vector v, unsigned shift) { return window(v, u, shift); }
} // namespace detail_permute

inline HVX_Vector Q6_V_valign_VVR(HVX_Vector u, HVX_Vector v, int32_t rt) { return detail_permute::align_bytes(u, v, unsigned(rt) & 127); }
inline HVX_Vector Q6_V_vlalign_VVR(HVX_Vector u, HVX_Vector v, int32_t rt) { return detail_permute::align_bytes(u, v, 128 - (unsigned(rt) & 127)); }
inline HVX_Vector Q6_V_valign_VVI(HVX_Vector u, HVX_Vector v, int32_t iu3) { return detail_permute::align_bytes(u, v, unsigned(iu3) & 7); }
inline HVX_Vector Q6_V_vlalign_VVI(HVX_Vector u, HVX_Vector v, int32_t iu3) { return detail_permute::align_bytes(u, v, 128 - (unsigned(iu3) & 7)); }
// Byte k of the result is byte (k + Rt) & 127 of Vu: the window of the vector written twice.
inline HVX_Vector Q6_V_vror_VR(HVX_Vector u, int32_t rt) { return detail_permute::window(u, u, unsigned(rt) & 127); }

// ---- table lookups -----------------------------------------------------------------------
// vlut32: index byte u[i] selects table entry u[i] & 63 (entries are the halfwords of Vv; bit 1
// of the control picks their low or high byte) only when its top three bits equal control & 7;
// otherwise the lane is 0 (or unchanged for the |= form). vlut16 works on halfword entries
// (the words of Vv, half chosen by control bit 1), indices matched on the top four bits against
// control & 15; even index bytes fill the low result register, odd ones the high register.
// :nomatch forces the match bits to the control's, so every lane looks up an entry.

// Element loops: the reference for the SIMD paths below.
namespace portable {
inline uint8_t lut32_entry(const Lanes<uint16_t> &table, unsigned index, unsigned control) {
    return uint8_t(table[index % 64] >> (((control >> 1) & 1) * 8));
}
inline uint16_t lut16_entry(const Lanes<uint32_t> &table, unsigned index, unsigned control) {
    return uint16_t(table[index % 32] >> (((control >> 1) & 1) * 16));
}
inline HVX_Vector lut32(const HVX_Vector *acc, HVX_Vector u, HVX_Vector v, unsigned control, bool nomatch) {
    const Lanes<uint8_t> index = lanes<uint8_t>(u);
    const Lanes<uint16_t> table = lanes<uint16_t>(v);
    const unsigned match = control & 7;
    Lanes<uint8_t> d{};
    if (acc) d = lanes<uint8_t>(*acc);
    for (int i = 0; i < 128; ++i) {
        const unsigned idx = nomatch ? (index[i] & 0x1F) | (match << 5) : index[i];
        if ((idx & 0xE0) == (match << 5)) d[i] |= lut32_entry(table, idx, control);
    }
    return vector_of(d);
}
inline HVX_VectorPair lut16(const HVX_VectorPair *acc, HVX_Vector u, HVX_Vector v, unsigned control, bool nomatch) {
    const Lanes<uint8_t> index = lanes<uint8_t>(u);
    const Lanes<uint32_t> table = lanes<uint32_t>(v);
    const unsigned match = control & 15;
    Lanes<uint16_t> lo{}, hi{};
    if (acc) {
        lo = lanes<uint16_t>(detail::lo_of(*acc));
        hi = lanes<uint16_t>(detail::hi_of(*acc));
    }
    for (int i = 0; i < 64; ++i) {
        for (int part = 0; part < 2; ++part) {
            const unsigned raw = index[2 * i + part];
            const unsigned idx = nomatch ? (raw & 0x0F) | (match << 4) : raw;
            if ((idx & 0xF0) == (match << 4)) (part ? hi : lo)[i] |= lut16_entry(table, idx, control);
        }
    }
    return detail::pair_of(vector_of(lo), vector_of(hi));
}
} // namespace portable


namespace detail_permute {
#if defined(__AVX512VBMI__)
// vlut32 as a two-register byte permute: entry byte 2 * (index & 63) + odd of the 128-byte
// table, kept where the index's top three bits match.
inline HVX_Vector lut32(const HVX_Vector *acc, HVX_Vector u, HVX_Vector v, unsigned control, bool nomatch) {
    const __m512i table0 = _mm512_load_si512(reinterpret_cast<const __m512i *>(&v));
    const __m512i table1 = _mm512_load_si512(reinterpret_cast<const __m512i *>(&v) + 1);
    const __m512i odd = _mm512_set1_epi8(char((control >> 1) & 1));
    const __m512i match = _mm512_set1_epi8(char((control & 7) << 5));
    HVX_Vector d;
    for (int k = 0; k < 2; ++k) {
        __m512i index = _mm512_load_si512(reinterpret_cast<const __m512i *>(&u) + k);
        if (nomatch) index = _mm512_or_si512(_mm512_and_si512(index, _mm512_set1_epi8(0x1F)), match);
        const __m512i entry = _mm512_or_si512(_mm512_add_epi8(index, index), odd); // bit 7 is ignored
        const __mmask64 keep = _mm512_cmpeq_epi8_mask(_mm512_and_si512(index, _mm512_set1_epi8(char(0xE0))), match);
        __m512i r = _mm512_maskz_mov_epi8(keep, _mm512_permutex2var_epi8(table0, entry, table1));
        if (acc) r = _mm512_or_si512(r, _mm512_load_si512(reinterpret_cast<const __m512i *>(acc) + k));
        _mm512_store_si512(reinterpret_cast<__m512i *>(&d) + k, r);
    }
    return d;
}
// vlut16 as a two-register halfword permute: entry halfword 2 * (index & 31) + odd of the table,
// kept where the index's top four bits match; even index bytes fill the low register.
inline HVX_VectorPair lut16(const HVX_VectorPair *acc, HVX_Vector u, HVX_Vector v, unsigned control, bool nomatch) {
    const __m512i table0 = _mm512_load_si512(reinterpret_cast<const __m512i *>(&v));
    const __m512i table1 = _mm512_load_si512(reinterpret_cast<const __m512i *>(&v) + 1);
    const __m512i odd = _mm512_set1_epi16(short((control >> 1) & 1));
    const __m512i match = _mm512_set1_epi16(short((control & 15) << 4));
    HVX_VectorPair d;
    for (int k = 0; k < 2; ++k) {
        const __m512i pairs = _mm512_load_si512(reinterpret_cast<const __m512i *>(&u) + k);
        for (int part = 0; part < 2; ++part) {
            __m512i index = part ? _mm512_srli_epi16(pairs, 8) : _mm512_and_si512(pairs, _mm512_set1_epi16(0xFF));
            if (nomatch) index = _mm512_or_si512(_mm512_and_si512(index, _mm512_set1_epi16(0x0F)), match);
            const __m512i entry = _mm512_or_si512(_mm512_slli_epi16(_mm512_and_si512(index, _mm512_set1_epi16(31)), 1), odd);
            const __mmask32 keep = _mm512_cmpeq_epi16_mask(_mm512_and_si512(index, _mm512_set1_epi16(0xF0)), match);
            __m512i r = _mm512_maskz_mov_epi16(keep, _mm512_permutex2var_epi16(table0, entry, table1));
            if (acc) r = _mm512_or_si512(r, _mm512_load_si512(reinterpret_cast<const __m512i *>(acc) + 2 * part + k));
            _mm512_store_si512(reinterpret_cast<__m512i *>(&d) + 2 * part + k, r);
        }
    }
    return d;
}
#else
using portable::lut16;
using portable::lut32;
#endif
} // namespace detail_permute

inline HVX_Vector Q6_Vb_vlut32_VbVbR(HVX_Vector u, HVX_Vector v, int32_t rt) { return detail_permute::lut32(nullptr, u, v, unsigned(rt), false); }
inline HVX_Vector Q6_Vb_vlut32_VbVbI(HVX_Vector u, HVX_Vector v, int32_t iu3) { return detail_permute::lut32(nullptr, u, v, unsigned(iu3) & 7, false); }
inline HVX_Vector Q6_Vb_vlut32_VbVbR_nomatch(HVX_Vector u, HVX_Vector v, int32_t rt) { return detail_permute::lut32(nullptr, u, v, unsigned(rt), true); }
inline HVX_Vector Q6_Vb_vlut32or_VbVbVbR(HVX_Vector x, HVX_Vector u, HVX_Vector v, int32_t rt) { return detail_permute::lut32(&x, u, v, unsigned(rt), false); }
inline HVX_Vector Q6_Vb_vlut32or_VbVbVbI(HVX_Vector x, HVX_Vector u, HVX_Vector v, int32_t iu3) { return detail_permute::lut32(&x, u, v, unsigned(iu3) & 7, false); }
inline HVX_VectorPair Q6_Wh_vlut16_VbVhR(HVX_Vector u, HVX_Vector v, int32_t rt) { return detail_permute::lut16(nullptr, u, v, unsigned(rt), false); }
inline HVX_VectorPair Q6_Wh_vlut16_VbVhI(HVX_Vector u, HVX_Vector v, int32_t iu3) { return detail_permute::lut16(nullptr, u, v, unsigned(iu3) & 7, false); }
inline HVX_VectorPair Q6_Wh_vlut16_VbVhR_nomatch(HVX_Vector u, HVX_Vector v, int32_t rt) { return detail_permute::lut16(nullptr, u, v, unsigned(rt), true); }
inline HVX_VectorPair Q6_Wh_vlut16or_WhVbVhR(HVX_VectorPair xx, HVX_Vector u, HVX_Vector v, int32_t rt) { return detail_permute::lut16(&xx, u, v, unsigned(rt), false); }
inline HVX_VectorPair Q6_Wh_vlut16or_WhVbVhI(HVX_VectorPair xx, HVX_Vector u, HVX_Vector v, int32_t iu3) { return detail_permute::lut16(&xx, u, v, unsigned(iu3) & 7, false); }

} // namespace hexnpu::hvx::intrinsics
