// Scalar rounding and table-search helpers shared by the reference quantizers (formats.md §1.0).
// They reproduce GGML's integer conversions exactly, because the quantized bytes depend on them.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace hexnpu {

// Round to nearest, ties to even, for |x| <= 2^22: adding 1.5*2^23 leaves the rounded integer,
// offset by 2^22, in the low mantissa bits.
inline int nearest_int(float x) {
    const float biased = x + 12582912.f;
    return int(std::bit_cast<uint32_t>(biased) & 0x007fffffu) - 0x00400000;
}

// A C cast (int)x as x86-64 executes it (cvttss2si): truncation toward zero, and INT32_MIN for NaN
// or values outside the int32 range, where C++ leaves the cast undefined. GGML's reference casts
// straight to int8_t, uint8_t or int without range checks; they leave the range only in degenerate
// blocks (a scale whose inverse overflows to inf), and there GGML on x86 writes the low bits of
// this value. Narrow the result with int8_t(...) / uint8_t(...) to get those bits.
inline int32_t truncate_to_int32(float x) {
    if (x >= -2147483648.0f && x < 2147483648.0f) {
        return int32_t(x);
    }
    return std::numeric_limits<int32_t>::min();
}

// Index of the entry of the ascending table v[0..n) nearest to x; an exact tie between two
// neighbours goes to the upper one. The comparisons are GGML's, in fp32.
inline int best_index_int8(int n, const int8_t * v, float x) {
    if (x <= v[0]) {
        return 0;
    }
    if (x >= v[n - 1]) {
        return n - 1;
    }
    int lo = 0;
    int hi = n - 1;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (x < v[mid]) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    return x - v[hi - 1] < v[hi] - x ? hi - 1 : hi;
}

// The signed value of the first element with the largest |x| (a strict `<` scan, so ties keep
// the first); +0 for an all-zero block.
inline float first_max_abs(const float * x, int n) {
    float amax = 0.0f;
    float max  = 0.0f;
    for (int i = 0; i < n; ++i) {
        if (amax < std::fabs(x[i])) {
            amax = std::fabs(x[i]);
            max  = x[i];
        }
    }
    return max;
}

struct MinMax {
    float min;
    float max;
};

// Block minimum and maximum by GGML's scan: strict comparisons from +-FLT_MAX, so between equal
// values (+0 and -0) the first one wins.
inline MinMax min_max(const float * x, int n) {
    MinMax r{std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()};
    for (int i = 0; i < n; ++i) {
        if (x[i] < r.min) {
            r.min = x[i];
        }
        if (x[i] > r.max) {
            r.max = x[i];
        }
    }
    return r;
}

} // namespace hexnpu
