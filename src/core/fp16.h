// IEEE binary16 and bfloat16 conversions with GGML's rounding and NaN/inf behaviour
// (shared/design/formats.md §1.0). Scalar versions are the reference; the row versions use
// F16C/AVX2 where the host has them and give the same bits.
#pragma once

#include <bit>
#include <cstdint>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace hexnpu {

inline float fp16_to_fp32(uint16_t h) {
#if defined(__F16C__)
    if ((h & 0x7c00) != 0x7c00) {  // finite: the hardware conversion is exact
        return _cvtsh_ss(h);
    }
#endif
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    const uint32_t exp  = (h >> 10) & 0x1f;
    const uint32_t mant = h & 0x3ff;
    if (exp == 0x1f) {  // inf or NaN: payload kept
        return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
    }
    if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in fp32
        return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(float(mant) * 0x1p-24f));
    }
    return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

// Round to nearest, ties to even; too large -> +-inf; NaN -> 0x7E00 with the sign kept.
inline uint16_t fp32_to_fp16(float f) {
    const uint32_t x    = std::bit_cast<uint32_t>(f);
    const uint16_t sign = uint16_t((x >> 16) & 0x8000);
    uint32_t       ax   = x & 0x7fffffffu;
    if (ax > 0x7f800000u) {
        return sign | 0x7e00;
    }
    if (ax >= 0x477ff000u) {  // >= 65520 rounds (ties to even) past 65504
        return sign | 0x7c00;
    }
    if (ax < 0x38800000u) {  // below 2^-14: subnormal result; adding 0.5 aligns the ulp to 2^-24
        const float a = std::bit_cast<float>(ax) + 0.5f;
        return sign | uint16_t(std::bit_cast<uint32_t>(a) - 0x3f000000u);
    }
    const uint32_t odd = (ax >> 13) & 1;
    ax += 0xc8000fffu + odd;  // rebias the exponent by -112 and round the 13 dropped bits
    return sign | uint16_t(ax >> 13);
}

inline float bf16_to_fp32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

// Round to nearest, ties to even; NaN -> quiet NaN with the top bits kept.
inline uint16_t fp32_to_bf16(float f) {
    const uint32_t u = std::bit_cast<uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return uint16_t((u >> 16) | 0x40);
    }
    return uint16_t((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

// Row conversions (fast paths).
void fp16_to_fp32_row(const uint16_t * src, float * dst, int64_t n);
void fp32_to_fp16_row(const float * src, uint16_t * dst, int64_t n);
void bf16_to_fp32_row(const uint16_t * src, float * dst, int64_t n);
void fp32_to_bf16_row(const float * src, uint16_t * dst, int64_t n);

} // namespace hexnpu
