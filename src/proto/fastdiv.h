// Division by a run-time constant without a divide instruction (Hexagon has none): the host
// precomputes {mp, l} for a divisor d once; the NPU then divides with a multiply-high, an add and a
// shift. Valid for every 32-bit n and every d >= 1.
#pragma once

#include <stdint.h>

namespace hexnpu::proto {

struct fastdiv_values {
    uint32_t mp;  // magic multiplier
    uint32_t l;   // shift: ceil(log2(d))
    uint32_t d;   // the divisor, for fastmodulo
    uint32_t pad;
};

// l = ceil(log2 d); mp = floor(2^32 * (2^l - d) / d) + 1.
constexpr fastdiv_values init_fastdiv(uint32_t d) {
    uint32_t l = 0;
    while (l < 32 && (uint64_t(1) << l) < d) {
        ++l;
    }
    const uint64_t mp = ((uint64_t(1) << 32) * ((uint64_t(1) << l) - d)) / d + 1;
    return fastdiv_values{uint32_t(mp), l, d, 0};
}

// n / d: (mulhi(n, mp) + n) >> l, with the sum formed in 64 bits so it cannot overflow.
constexpr uint32_t fastdiv(uint32_t n, const fastdiv_values & v) {
    const uint64_t hi = (uint64_t(n) * v.mp) >> 32;
    return uint32_t((hi + n) >> v.l);
}

constexpr uint32_t fastmodulo(uint32_t n, const fastdiv_values & v) { return n - fastdiv(n, v) * v.d; }

} // namespace hexnpu::proto
