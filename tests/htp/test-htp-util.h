// Shared pieces of the runtime tests: a TEST_STREAM op descriptor as the host would prepare it, F32
// fills, and the expected results computed independently in scalar C++.
#pragma once

#include "proto/fastdiv.h"
#include "proto/htp-msg.h"
#include "proto/htp-test-stream.h"
#include "proto/htp-opcodes.h"
#include "vnpu/platform/batch-builder.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace htp_test {

using namespace hexnpu;

inline uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

inline float float_of(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

struct stream_params {
    float    scale      = 1.5f;
    uint32_t n_threads  = 1;
    uint32_t block_rows = 2;
    uint32_t n_slots    = 2;
    uint32_t misuse     = proto::HTP_TEST_STREAM_CORRECT;
};

// The host-side preparation of a TEST_STREAM op over tensors src and dst of shape ne.
inline proto::htp_op_desc stream_op(uint16_t src, uint16_t dst, const std::array<uint32_t, 4> & ne,
                                    const stream_params & p) {
    proto::htp_op_desc             op = vnpu::batch_builder::op(proto::HTP_OP_TEST_STREAM, {src}, {dst});
    const uint32_t                 dims[4] = {ne[0], ne[1], ne[2], ne[3]};
    const proto::htp_test_stream_kparams kp =
        proto::make_test_stream_kparams(dims, float_bits(p.scale), p.n_threads, p.block_rows, p.n_slots, p.misuse);
    std::memcpy(op.kparams, &kp, sizeof kp);
    return op;
}

// Deterministic non-trivial floats (mixed signs and magnitudes, no NaN).
inline void fill_random(float * p, size_t n, uint32_t seed) {
    std::mt19937                          rng(seed);
    std::uniform_real_distribution<float> mant(-2.0f, 2.0f);
    std::uniform_int_distribution<int>    exp(-20, 20);
    for (size_t i = 0; i < n; ++i) {
        p[i] = std::ldexp(mant(rng), exp(rng));
    }
}

// Byte offset of element (i0, i1, i2, i3) under strides nb.
inline uint64_t offset_of(const std::array<uint32_t, 4> & nb, uint32_t i0, uint32_t i1, uint32_t i2, uint32_t i3) {
    return uint64_t(i0) * nb[0] + uint64_t(i1) * nb[1] + uint64_t(i2) * nb[2] + uint64_t(i3) * nb[3];
}

} // namespace htp_test
