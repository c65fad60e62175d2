// Floating point: IEEE sf (fp32) and hf (fp16) arithmetic and conversions (v68+), and the
// qfloat formats qf32/qf16.
//
// Deviation (qf32/qf16): real qfloat keeps a few extra mantissa bits between operations, has no
// inf/NaN and normalizes only when converted back to sf/hf. Here qf32 is IEEE fp32 and qf16 is
// IEEE fp16, rounded to nearest-even after every operation, so results can differ from the
// device in the last bits and overflow gives inf where the device saturates. Every qf
// intrinsic below has this deviation; the conversions Q6_Vsf_equals_Vqf32 / Q6_Vhf_equals_Vqf16
// are therefore identities.
// Semantics of the IEEE forms: QEMU ext.idef "KVX - IEEE FP Instructions" (round to nearest
// even, lane order as for the integer widening forms: even lanes to the low register).
#pragma once

#include "vnpu/hvx/hvx-types.h"

#include <cmath>
#include <cstring>

#if defined(__AVX512F__) && defined(__F16C__) && !defined(__hexagon__)
#include <immintrin.h>
#endif

namespace hexnpu::hvx::intrinsics {

using detail::Lanes;
using detail::lanes;
using detail::vector_of;

namespace detail_float {

inline float f32_of(uint32_t bits) { float f; std::memcpy(&f, &bits, 4); return f; }
inline uint32_t bits_of(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

// fp16 -> fp32 (exact).
inline float f16_to_f32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    const uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    if (exp == 0x1F) return f32_of(sign | 0x7F800000u | (mant << 13));          // inf / NaN
    if (exp != 0) return f32_of(sign | ((exp + 112) << 23) | (mant << 13));      // normal
    const float sub = float(mant) * 0x1p-24f;                                   // subnormal
    return sign ? -sub : sub;
}

// fp32 -> fp16, round to nearest even; overflow gives inf, NaN stays a (quiet) NaN.
inline uint16_t f32_to_f16(float f) {
    const uint32_t u = bits_of(f);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000);
    const uint32_t abs = u & 0x7FFFFFFFu;
    if (abs > 0x7F800000u) return uint16_t(sign | 0x7E00 | ((abs >> 13) & 0x1FF));
    if (abs >= 0x477FF000u) return uint16_t(sign | 0x7C00);                    // rounds past 65504
    if (abs < 0x38800000u) {                                                    // below 2^-14: subnormal
        // Scale so the fp16 subnormal unit (2^-24) becomes 1, then round to even as an integer.
        const float scaled = f32_of(abs) * 0x1p24f;
        return uint16_t(sign | uint16_t(std::nearbyint(scaled)));
    }
    const uint32_t round = 0xFFF + ((abs >> 13) & 1);                           // ties to even
    return uint16_t(sign | ((abs - 0x38000000u + round) >> 13));
}

// 32 fp32 lanes as a compiler vector: one IEEE operation per lane, round to nearest even, exactly
// what the scalar float operators give (and what the qemu-defined sf instructions do), compiled to
// the host's SIMD (two AVX-512 or four AVX2 instructions) instead of a loop over lanes.
typedef float sf_lanes __attribute__((__vector_size__(128), __aligned__(128)));
inline sf_lanes sf_of(HVX_Vector v) { return __builtin_bit_cast(sf_lanes, v); }
inline HVX_Vector vector_of_sf(sf_lanes v) { return __builtin_bit_cast(HVX_Vector, v); }
// hf lanes computed in fp32 and rounded once to fp16: exact for add, sub and mul because the
// fp32 result of two fp16 operands is the exact value rounded at most once before.
template <class F>
inline HVX_Vector map_hf(HVX_Vector u, HVX_Vector v, F f) {
    const Lanes<uint16_t> x = lanes<uint16_t>(u), y = lanes<uint16_t>(v);
    Lanes<uint16_t> d;
    for (int i = 0; i < 64; ++i) d[i] = f32_to_f16(f(f16_to_f32(x[i]), f16_to_f32(y[i])));
    return vector_of(d);
}
// Widening hf op: fp32 results of even lanes to the low register, odd lanes to the high one.
template <class F>
inline HVX_VectorPair widen_hf(const HVX_VectorPair *acc, HVX_Vector u, HVX_Vector v, F f) {
    const Lanes<uint16_t> x = lanes<uint16_t>(u), y = lanes<uint16_t>(v);
    Lanes<uint32_t> lo{}, hi{};
    if (acc) {
        lo = lanes<uint32_t>(detail::lo_of(*acc));
        hi = lanes<uint32_t>(detail::hi_of(*acc));
    }
    for (int i = 0; i < 32; ++i) {
        lo[i] = bits_of(f(f32_of(lo[i]), f16_to_f32(x[2 * i]), f16_to_f32(y[2 * i])));
        hi[i] = bits_of(f(f32_of(hi[i]), f16_to_f32(x[2 * i + 1]), f16_to_f32(y[2 * i + 1])));
    }
    return detail::pair_of(vector_of(lo), vector_of(hi));
}

inline float add(float a, float b) { return a + b; }
inline float sub(float a, float b) { return a - b; }
inline float mul(float a, float b) { return a * b; }

} // namespace detail_float

// ---- IEEE sf / hf ----------------------------------------------------------------------------

inline HVX_Vector Q6_Vsf_vadd_VsfVsf(HVX_Vector u, HVX_Vector v) {
    return detail_float::vector_of_sf(detail_float::sf_of(u) + detail_float::sf_of(v));
}
inline HVX_Vector Q6_Vsf_vsub_VsfVsf(HVX_Vector u, HVX_Vector v) {
    return detail_float::vector_of_sf(detail_float::sf_of(u) - detail_float::sf_of(v));
}
inline HVX_Vector Q6_Vsf_vmpy_VsfVsf(HVX_Vector u, HVX_Vector v) {
    return detail_float::vector_of_sf(detail_float::sf_of(u) * detail_float::sf_of(v));
}
inline HVX_Vector Q6_Vhf_vadd_VhfVhf(HVX_Vector u, HVX_Vector v) { return detail_float::map_hf(u, v, detail_float::add); }
inline HVX_Vector Q6_Vhf_vsub_VhfVhf(HVX_Vector u, HVX_Vector v) { return detail_float::map_hf(u, v, detail_float::sub); }
inline HVX_Vector Q6_Vhf_vmpy_VhfVhf(HVX_Vector u, HVX_Vector v) { return detail_float::map_hf(u, v, detail_float::mul); }

inline HVX_VectorPair Q6_Wsf_vadd_VhfVhf(HVX_Vector u, HVX_Vector v) {
    return detail_float::widen_hf(nullptr, u, v, [](float, float a, float b) { return a + b; });
}
inline HVX_VectorPair Q6_Wsf_vsub_VhfVhf(HVX_Vector u, HVX_Vector v) {
    return detail_float::widen_hf(nullptr, u, v, [](float, float a, float b) { return a - b; });
}
inline HVX_VectorPair Q6_Wsf_vmpy_VhfVhf(HVX_Vector u, HVX_Vector v) {
    return detail_float::widen_hf(nullptr, u, v, [](float, float a, float b) { return a * b; });
}
// Fused on the device; a product of two fp16 values is exact in fp32, so one rounding in the
// add gives the fused result.
inline HVX_VectorPair Q6_Wsf_vmpyacc_WsfVhfVhf(HVX_VectorPair xx, HVX_Vector u, HVX_Vector v) {
    return detail_float::widen_hf(&xx, u, v, [](float acc, float a, float b) { return acc + a * b; });
}

inline HVX_Vector Q6_Vsf_vabs_Vsf(HVX_Vector u) { return u & int32_t(0x7FFFFFFF); }
inline HVX_Vector Q6_Vhf_vabs_Vhf(HVX_Vector u) { return u & int32_t(0x7FFF7FFF); }
inline HVX_Vector Q6_Vsf_vfneg_Vsf(HVX_Vector u) { return u ^ int32_t(0x80000000u); }
inline HVX_Vector Q6_Vhf_vfneg_Vhf(HVX_Vector u) { return u ^ int32_t(0x80008000u); }

// sf -> hf narrowing: hf lane 2i from Vu.sf[i], lane 2i+1 from Vv.sf[i]; rounded to nearest even,
// overflow to infinity, NaNs quieted with their top payload bits (detail_float::f32_to_f16).
inline HVX_Vector Q6_Vhf_vcvt_VsfVsf(HVX_Vector u, HVX_Vector v) {
#if defined(__AVX512F__) && defined(__F16C__) && !defined(__hexagon__)
    // The host's conversion instruction (the same rounding and NaN rule), 16 lanes at a time, the two
    // results interleaved by halfword: word i = hf(v[i]) << 16 | hf(u[i]).
    HVX_Vector out;
    for (int half = 0; half < 2; ++half) {
        __m512 a, b;
        std::memcpy(&a, reinterpret_cast<const char *>(&u) + 64 * half, 64);
        std::memcpy(&b, reinterpret_cast<const char *>(&v) + 64 * half, 64);
        const __m512i ha = _mm512_cvtepu16_epi32(_mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        const __m512i hb = _mm512_cvtepu16_epi32(_mm512_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        const __m512i w  = _mm512_or_si512(ha, _mm512_slli_epi32(hb, 16));
        std::memcpy(reinterpret_cast<char *>(&out) + 64 * half, &w, 64);
    }
    return out;
#endif
    const Lanes<uint32_t> x = lanes<uint32_t>(u), y = lanes<uint32_t>(v);
    Lanes<uint16_t> d;
    for (int i = 0; i < 32; ++i) {
        d[2 * i] = detail_float::f32_to_f16(detail_float::f32_of(x[i]));
        d[2 * i + 1] = detail_float::f32_to_f16(detail_float::f32_of(y[i]));
    }
    return vector_of(d);
}
// hf -> sf widening: even lanes to the low register, odd lanes to the high one. The conversion of
// f16_to_f32 done on all 32 lanes at once (vector code rather than a loop over lanes; the same bits).
inline HVX_VectorPair Q6_Wsf_vcvt_Vhf(HVX_Vector u) {
    typedef uint32_t u32s __attribute__((__vector_size__(128)));
#if defined(__AVX512F__) && defined(__F16C__) && !defined(__hexagon__)
    // The host's conversion instruction, 16 lanes at a time; NaNs keep their payload bits (the
    // instruction would quiet a signalling one).
    auto convert = [](u32s h) {
        HVX_Vector out;
        for (int half = 0; half < 2; ++half) {
            __m512i x;
            std::memcpy(&x, reinterpret_cast<const char *>(&h) + 64 * half, 64);
            const __m512i   f    = _mm512_castps_si512(_mm512_cvtph_ps(_mm512_cvtepi32_epi16(x)));
            const __m512i   exp  = _mm512_and_si512(x, _mm512_set1_epi32(0x7C00));
            const __m512i   mant = _mm512_and_si512(x, _mm512_set1_epi32(0x3FF));
            const __mmask16 nan  = _mm512_cmpeq_epi32_mask(exp, _mm512_set1_epi32(0x7C00)) &
                                  _mm512_cmpneq_epi32_mask(mant, _mm512_setzero_si512());
            const __m512i exact = _mm512_or_si512(
                _mm512_or_si512(_mm512_slli_epi32(_mm512_and_si512(x, _mm512_set1_epi32(0x8000)), 16),
                                _mm512_set1_epi32(0x7F800000)),
                _mm512_slli_epi32(mant, 13));
            const __m512i r = _mm512_mask_blend_epi32(nan, f, exact);
            std::memcpy(reinterpret_cast<char *>(&out) + 64 * half, &r, 64);
        }
        return out;
    };
#else
    auto convert = [](u32s h) {
        const u32s sign    = (h & 0x8000u) << 16;
        const u32s e       = (h >> 10) & 0x1Fu;
        const u32s m       = h & 0x3FFu;
        const u32s normal  = sign | ((e + 112u) << 23) | (m << 13);
        const u32s special = sign | 0x7F800000u | (m << 13);
        const u32s sub     = sign | (u32s) (__builtin_convertvector(m, detail_float::sf_lanes) * 0x1p-24f);
        // Selected with masks: GCC lowers ?: on 128-byte vectors to per-lane branches.
        const u32s is_special = (u32s) (e == 31u), is_sub = (u32s) (e == 0u);
        return (HVX_Vector) ((special & is_special) | (sub & is_sub) | (normal & ~(is_special | is_sub)));
    };
#endif
    const u32s w = (u32s) u;
    return detail::pair_of(convert(w & 0xFFFFu), convert(w >> 16));
}
// Integer halfwords to hf, rounded to nearest even (every int16 is in range).
inline HVX_Vector Q6_Vhf_vcvt_Vh(HVX_Vector u) {
    return detail::map_lanes<int16_t>(u, [](int16_t x) { return int16_t(detail_float::f32_to_f16(float(x))); });
}
// hf to integer halfwords, rounded to nearest even and saturated. The device's result for NaN
// is not documented in the public sources; here NaN converts like +inf (0x7FFF).
inline HVX_Vector Q6_Vh_vcvt_Vhf(HVX_Vector u) {
    return detail::map_lanes<uint16_t>(u, [](uint16_t h) {
        const float f = detail_float::f16_to_f32(h);
        if (std::isnan(f)) return uint16_t(0x7FFF);
        return uint16_t(detail::saturate<int16_t>(int64_t(std::nearbyint(f < -32768.f ? -32768.f : (f > 32767.f ? 32767.f : f)))));
    });
}

// ---- qf32 / qf16 (emulated as IEEE fp32 / fp16; see the deviation note at the top) --------

inline HVX_Vector Q6_Vqf32_vadd_VsfVsf(HVX_Vector u, HVX_Vector v) { return Q6_Vsf_vadd_VsfVsf(u, v); }
inline HVX_Vector Q6_Vqf32_vadd_Vqf32Vqf32(HVX_Vector u, HVX_Vector v) { return Q6_Vsf_vadd_VsfVsf(u, v); }
inline HVX_Vector Q6_Vqf32_vadd_Vqf32Vsf(HVX_Vector u, HVX_Vector v) { return Q6_Vsf_vadd_VsfVsf(u, v); }
inline HVX_Vector Q6_Vqf32_vsub_VsfVsf(HVX_Vector u, HVX_Vector v) { return Q6_Vsf_vsub_VsfVsf(u, v); }
inline HVX_Vector Q6_Vqf32_vsub_Vqf32Vqf32(HVX_Vector u, HVX_Vector v) { return Q6_Vsf_vsub_VsfVsf(u, v); }
inline HVX_Vector Q6_Vqf32_vsub_Vqf32Vsf(HVX_Vector u, HVX_Vector v) { return Q6_Vsf_vsub_VsfVsf(u, v); }
inline HVX_Vector Q6_Vqf32_vmpy_VsfVsf(HVX_Vector u, HVX_Vector v) { return Q6_Vsf_vmpy_VsfVsf(u, v); }
inline HVX_Vector Q6_Vqf32_vmpy_Vqf32Vqf32(HVX_Vector u, HVX_Vector v) { return Q6_Vsf_vmpy_VsfVsf(u, v); }
inline HVX_Vector Q6_Vsf_equals_Vqf32(HVX_Vector u) { return u; }

inline HVX_Vector Q6_Vqf16_vadd_VhfVhf(HVX_Vector u, HVX_Vector v) { return Q6_Vhf_vadd_VhfVhf(u, v); }
inline HVX_Vector Q6_Vqf16_vadd_Vqf16Vqf16(HVX_Vector u, HVX_Vector v) { return Q6_Vhf_vadd_VhfVhf(u, v); }
inline HVX_Vector Q6_Vqf16_vadd_Vqf16Vhf(HVX_Vector u, HVX_Vector v) { return Q6_Vhf_vadd_VhfVhf(u, v); }
inline HVX_Vector Q6_Vqf16_vsub_VhfVhf(HVX_Vector u, HVX_Vector v) { return Q6_Vhf_vsub_VhfVhf(u, v); }
inline HVX_Vector Q6_Vqf16_vsub_Vqf16Vqf16(HVX_Vector u, HVX_Vector v) { return Q6_Vhf_vsub_VhfVhf(u, v); }
inline HVX_Vector Q6_Vqf16_vsub_Vqf16Vhf(HVX_Vector u, HVX_Vector v) { return Q6_Vhf_vsub_VhfVhf(u, v); }
inline HVX_Vector Q6_Vqf16_vmpy_VhfVhf(HVX_Vector u, HVX_Vector v) { return Q6_Vhf_vmpy_VhfVhf(u, v); }
inline HVX_Vector Q6_Vqf16_vmpy_Vqf16Vqf16(HVX_Vector u, HVX_Vector v) { return Q6_Vhf_vmpy_VhfVhf(u, v); }
inline HVX_Vector Q6_Vqf16_vmpy_Vqf16Vhf(HVX_Vector u, HVX_Vector v) { return Q6_Vhf_vmpy_VhfVhf(u, v); }
inline HVX_Vector Q6_Vhf_equals_Vqf16(HVX_Vector u) { return u; }
// hf x hf -> qf32 pair, lanes as in Q6_Wsf_vmpy_VhfVhf.
inline HVX_VectorPair Q6_Wqf32_vmpy_VhfVhf(HVX_Vector u, HVX_Vector v) { return Q6_Wsf_vmpy_VhfVhf(u, v); }
// qf32 pair -> hf: lane 2i from the low register's word i, lane 2i+1 from the high one's, so
// Q6_Vhf_equals_Wqf32(Q6_Wqf32_vmpy_VhfVhf(a, b)) is the lane-wise product in a's order.
inline HVX_Vector Q6_Vhf_equals_Wqf32(HVX_VectorPair uu) { return Q6_Vhf_vcvt_VsfVsf(detail::lo_of(uu), detail::hi_of(uu)); }

} // namespace hexnpu::hvx::intrinsics
