// The HVX matmul's activation quantization as proto/htp-matmul.h states it, written from that text
// in scalar C++ (not from the kernel): the scale d and multiplier c of a 32-element block, and each
// element's int8 value. The tests compare the kernels' blocks and results with it.
#pragma once

#include "proto/htp-matmul.h"

#include <cmath>
#include <cstdint>

namespace htp_test {

struct act_block_scale {
    bool  zero;  // amax is 0 or E < HTP_MM_MIN_EXP: every q and the scale are 0
    float d;     // m * 2^f
    float c;     // fl(1/m) * 2^-f
};

// For a finite amax.
inline act_block_scale model_act_scale(float amax) {
    int e = -200;
    while (!(double(amax) <= 127.0 * std::ldexp(1.0, e))) {
        ++e;
    }
    if (amax == 0 || e < hexnpu::proto::HTP_MM_MIN_EXP) {
        return {true, 0.0f, 0.0f};
    }
    const int f = e - 1;
    for (const float m : {1.125f, 1.25f, 1.375f, 1.5f, 1.625f, 1.75f, 1.875f, 2.0f}) {
        if (double(amax) <= 127.0 * m * std::ldexp(1.0, f)) {
            return {false, std::ldexp(m, f), std::ldexp(1.0f / m, -f)};
        }
    }
    return {true, 0.0f, 0.0f};  // not reached: m = 2 always fits
}

// round-to-even of the fp32 product x * c, clamped to [-127, 127].
inline int8_t model_act_q(float x, float c) {
    const float  y = x * c;
    const double q = std::nearbyint(double(y));
    return int8_t(q > 127 ? 127 : q < -127 ? -127 : q);
}

} // namespace htp_test
