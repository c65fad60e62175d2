// AVX2 building blocks of the block-32 fast paths (quant-q4/q5/q8/iq4nl/mxfp4/q1-q2.cpp). Each
// helper is exact: the fast paths built from them give the same bits as the scalar references.
#pragma once

#if defined(__AVX2__)

#include "dot-f32.h"
#include "quant-common.h"

#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace hexnpu::avx2 {

// 32 consecutive floats of one block, as four vectors of 8.
struct Floats32 {
    __m256 v[4];
};

inline Floats32 load_floats32(const float * x) {
    return {{_mm256_loadu_ps(x), _mm256_loadu_ps(x + 8), _mm256_loadu_ps(x + 16), _mm256_loadu_ps(x + 24)}};
}

inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

// True when every element is finite. Blocks holding inf or NaN take the scalar path: there the
// reference's comparisons and casts do things no vector reduction reproduces cheaply.
inline bool all_finite(const Floats32 & x) {
    const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
    __m256       bad = _mm256_setzero_ps();
    for (const __m256 v : x.v) {
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(abs_ps(v), inf, _CMP_NLT_UQ));  // NaN or inf
    }
    return _mm256_testz_ps(bad, bad);
}

// Horizontal max/min; exact for NaN-free input (the sign of a zero result is arbitrary).
inline float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m        = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m        = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

inline float hmin(__m256 v) {
    __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m        = _mm_min_ps(m, _mm_movehl_ps(m, m));
    m        = _mm_min_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

inline float max_abs(const Floats32 & x) {
    return hmax(_mm256_max_ps(_mm256_max_ps(abs_ps(x.v[0]), abs_ps(x.v[1])),
                              _mm256_max_ps(abs_ps(x.v[2]), abs_ps(x.v[3]))));
}

// Index of the first element for which `cmp(v)` holds; there must be one.
template <typename Cmp> int first_where(const Floats32 & x, Cmp cmp) {
    uint32_t mask = 0;
    for (int k = 0; k < 4; ++k) {
        mask |= uint32_t(_mm256_movemask_ps(cmp(x.v[k]))) << (8 * k);
    }
    return std::countr_zero(mask);
}

// first_max_abs (quant-common.h) of a finite block: the reduction finds |max|, the first element
// reaching it gives the sign; a zero block gives the scan's initial +0.
inline float first_max_abs(const float * x, const Floats32 & v) {
    const float amax = max_abs(v);
    if (amax == 0.0f) {
        return 0.0f;
    }
    const __m256 target = _mm256_set1_ps(amax);
    return x[first_where(v, [&](__m256 a) { return _mm256_cmp_ps(abs_ps(a), target, _CMP_EQ_OQ); })];
}

// min_max (quant-common.h) of a finite block. The reductions are exact except for the sign of a
// zero result; the scan keeps the first zero of either sign, so take that element.
inline MinMax min_max(const float * x, const Floats32 & v) {
    MinMax r{hmin(_mm256_min_ps(_mm256_min_ps(v.v[0], v.v[1]), _mm256_min_ps(v.v[2], v.v[3]))),
             hmax(_mm256_max_ps(_mm256_max_ps(v.v[0], v.v[1]), _mm256_max_ps(v.v[2], v.v[3])))};
    if (r.min == 0.0f || r.max == 0.0f) {
        const __m256 zero       = _mm256_setzero_ps();
        const float  first_zero = x[first_where(v, [&](__m256 a) { return _mm256_cmp_ps(a, zero, _CMP_EQ_OQ); })];
        if (r.min == 0.0f) {
            r.min = first_zero;
        }
        if (r.max == 0.0f) {
            r.max = first_zero;
        }
    }
    return r;
}

// Truncates the 32 floats toward zero and narrows them to 32 bytes in element order, saturating
// to 0..255 (Unsigned) or -128..127. Callers keep the values inside the byte range, so the
// saturation never changes a value.
template <bool Unsigned> __m256i truncate_to_bytes(const __m256 (&v)[4]) {
    const __m256i w01 = _mm256_packs_epi32(_mm256_cvttps_epi32(v[0]), _mm256_cvttps_epi32(v[1]));
    const __m256i w23 = _mm256_packs_epi32(_mm256_cvttps_epi32(v[2]), _mm256_cvttps_epi32(v[3]));
    const __m256i b   = Unsigned ? _mm256_packus_epi16(w01, w23) : _mm256_packs_epi16(w01, w23);
    // The packs interleave the 128-bit lanes: dword groups come out as v0lo v1lo v2lo v3lo | v0hi ...
    return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Codes of one block, or nothing when the block needs the scalar path.
struct BlockCodes {
    float   d;
    float   min;    // affine quantizers only
    __m256i codes;  // one byte per element, in element order
};

// GGML's symmetric quantizer with codes 0..2*Half-1 (Q4_0: Half 8, Q5_0: Half 16):
// d = max / -Half, q = min(2*Half - 1, trunc(x*id + Half + 0.5)). Fails for blocks with inf or NaN
// and for subnormal d whose inverse overflows; otherwise x*id lies in [-Half, Half] up to rounding,
// so the saturating narrowing is exact.
template <int Half> bool quantize_symmetric(const float * x, BlockCodes & out) {
    const Floats32 v = load_floats32(x);
    if (!all_finite(v)) {
        return false;
    }
    const float d  = first_max_abs(x, v) / -Half;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    if (!std::isfinite(id)) {
        return false;
    }
    const __m256 scale  = _mm256_set1_ps(id);
    const __m256 offset = _mm256_set1_ps(Half + 0.5f);
    __m256       t[4];
    for (int k = 0; k < 4; ++k) {
        t[k] = _mm256_add_ps(_mm256_mul_ps(v.v[k], scale), offset);
    }
    out.d     = d;
    out.codes = _mm256_min_epu8(truncate_to_bytes<true>(t), _mm256_set1_epi8(char(2 * Half - 1)));
    return true;
}

// GGML's affine quantizer with codes 0..Levels (Q4_1: 15, Q5_1: 31): d = (max - min) / Levels,
// q = min(Levels, trunc((x - min)*id + 0.5)). Fails for blocks with inf or NaN, for max - min
// overflowing and for subnormal d whose inverse overflows.
template <int Levels> bool quantize_affine(const float * x, BlockCodes & out) {
    const Floats32 v = load_floats32(x);
    if (!all_finite(v)) {
        return false;
    }
    const MinMax range = min_max(x, v);
    const float  d     = (range.max - range.min) / Levels;
    const float  id    = d != 0.0f ? 1.0f / d : 0.0f;
    if (!std::isfinite(d) || !std::isfinite(id)) {
        return false;
    }
    const __m256 min   = _mm256_set1_ps(range.min);
    const __m256 scale = _mm256_set1_ps(id);
    const __m256 half  = _mm256_set1_ps(0.5f);
    __m256       t[4];
    for (int k = 0; k < 4; ++k) {
        t[k] = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(v.v[k], min), scale), half);
    }
    out.d     = d;
    out.min   = range.min;
    out.codes = _mm256_min_epu8(truncate_to_bytes<true>(t), _mm256_set1_epi8(char(Levels)));
    return true;
}

// 16 bytes of nibbles in GGML's half-split order -> 32 codes in element order: element j < 16 is
// the low nibble of byte j, element j + 16 its high nibble.
inline __m256i unpack_nibbles(const uint8_t * qs) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i *>(qs));
    const __m128i low   = _mm_set1_epi8(0x0f);
    return _mm256_setr_m128i(_mm_and_si128(bytes, low), _mm_and_si128(_mm_srli_epi16(bytes, 4), low));
}

// 32 codes -> 16 bytes: element j in the low nibble of byte j, element j + 16 in its high nibble.
// Codes must be < 16.
inline void pack_nibbles(__m256i codes, uint8_t * qs) {
    const __m128i low  = _mm256_castsi256_si128(codes);
    const __m128i high = _mm256_extracti128_si256(codes, 1);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(qs), _mm_or_si128(low, _mm_slli_epi16(high, 4)));
}

// Converts 8 signed bytes (the low 8 of `bytes`) to floats.
inline __m256 int8x8_to_float(__m128i bytes) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)); }

// The 32 signed bytes of q as floats, in four vectors of 8 (element order).
inline Floats32 int8x32_to_floats(__m256i q) {
    const __m128i lo = _mm256_castsi256_si128(q);
    const __m128i hi = _mm256_extracti128_si256(q, 1);
    return {{int8x8_to_float(lo), int8x8_to_float(_mm_srli_si128(lo, 8)), int8x8_to_float(hi),
             int8x8_to_float(_mm_srli_si128(hi, 8))}};
}

// 8 bytes widened to 32-bit lanes straight from memory (one shuffle-port uop per 8 elements, where
// widening a 32-byte register costs extra lane moves): the row dots are bound by that port.
inline __m256i load_u8x8(const uint8_t * p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p)));
}
inline __m256i load_i8x8(const int8_t * p) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p)));
}

// The 32 codes of 16 nibble bytes in GGML's half-split order (elements j and j + 16 in byte j), as
// four vectors of eight 32-bit codes in element order.
struct Codes32 {
    __m256i v[4];
};
inline Codes32 unpack_nibbles_i32(const uint8_t * qs) {
    const __m256i low = _mm256_set1_epi32(15);
    const __m256i b0 = load_u8x8(qs), b1 = load_u8x8(qs + 8);
    return {{_mm256_and_si256(b0, low), _mm256_and_si256(b1, low), _mm256_srli_epi32(b0, 4), _mm256_srli_epi32(b1, 4)}};
}

// float(q[e]) * d for 32 integer codes, as the scalar `q * d`.
inline Floats32 scaled(const Codes32 & q, float d) {
    const __m256 scale = _mm256_set1_ps(d);
    Floats32     f;
    for (int k = 0; k < 4; ++k) {
        f.v[k] = _mm256_mul_ps(_mm256_cvtepi32_ps(q.v[k]), scale);
    }
    return f;
}

inline Codes32 minus(Codes32 q, int32_t offset) {
    for (__m256i & v : q.v) {
        v = _mm256_sub_epi32(v, _mm256_set1_epi32(offset));
    }
    return q;
}

// float(q[e]) * d for 32 signed byte values q, as the scalar `q * d`.
inline Floats32 scaled(__m256i q, float d) {
    const __m256 scale = _mm256_set1_ps(d);
    Floats32     f     = int8x32_to_floats(q);
    for (__m256 & v : f.v) {
        v = _mm256_mul_ps(v, scale);
    }
    return f;
}

// float(q[e]) * d + m for 32 signed byte values q: a product rounded, then a sum rounded, as the
// scalar `q * d + m` (the build forbids FMA contraction).
template <class Codes> Floats32 affine(const Codes & q, float d, float m) {
    const __m256 min = _mm256_set1_ps(m);
    Floats32     f   = scaled(q, d);
    for (__m256 & v : f.v) {
        v = _mm256_add_ps(v, min);
    }
    return f;
}

// Where a block decoder (`decode_<type>(src, n, sink)`) sends elements [e, e + 32) of a row, in
// increasing e: into a dequantized row, or into a dot with an f32 row (dot-f32.h's order).
struct store_sink {
    float * dst;
    void    operator()(int64_t e, const Floats32 & f) const {
        for (int k = 0; k < 4; ++k) {
            _mm256_storeu_ps(dst + e + 8 * k, f.v[k]);
        }
    }
};

struct dot_sink {
    dot_f32_accumulator & acc;
    const float *         y;
    void                  operator()(int64_t e, const Floats32 & f) const { acc.add32(f.v, y + e); }
};

} // namespace hexnpu::avx2

#endif // __AVX2__

// dequantize_row_T and dot_row_T of a type from its block decoder decode_T.
#define HEXNPU_DECODED_ROW_FNS(T)                                                                   \
    void dequantize_row_##T(const void * src, float * dst, int64_t n) {                             \
        decode_##T(src, n, avx2::store_sink{dst});                                                  \
    }                                                                                               \
    float dot_row_##T(const void * src, const float * y, int64_t n) {                               \
        dot_f32_accumulator acc;                                                                    \
        decode_##T(src, n, avx2::dot_sink{acc, y});                                                 \
        return acc.sum();                                                                           \
    }
