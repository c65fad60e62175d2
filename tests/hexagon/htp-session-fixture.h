// Shared by the tests that run the host backend against real session processes: session and
// backend options for tests, the TEST_STREAM op (dst = src * scale) as the host prepares it, and
// exact checks of its results.
#pragma once

#include "hexagon/htp-backend.h"
#include "hexagon/htp-device.h"

#include "hexnpu/graph.h"
#include "proto/htp-test-stream.h"
#include "proto/htp-opcodes.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace htp_session_test {

using namespace hexnpu;
using namespace hexnpu::hexagon;
using namespace std::chrono_literals;

constexpr uint64_t MiB = 1 << 20;

inline uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

inline vnpu::rpc::session_options test_session(uint64_t window = 64 * MiB) {
    vnpu::rpc::session_options o;
    o.arch         = 79;
    o.window_size  = window;
    o.host_threads = 2;
    o.timeout      = 10s;
    o.test_ops     = true;  // TEST_STREAM / TEST_FAULT ...
    return o;
}

inline htp_options test_options(uint32_t n_devices = 1) {
    htp_options o;
    for (uint32_t i = 0; i < n_devices; ++i) {
        o.devices.push_back({"HTP0:" + std::to_string(i), 0, i});
    }
    o.op_batch = 64;
    o.op_queue = 4;
    o.n_hvx    = 2;
    return o;
}

// dst = src * scale on the NPU, as the host prepares TEST_STREAM.
inline htp_op stream_op(const ggml_tensor * src, const ggml_tensor * dst, float scale, const ggml_tensor * node = nullptr,
                 uint32_t misuse = proto::HTP_TEST_STREAM_CORRECT) {
    htp_op op;
    op.desc.opcode = proto::HTP_OP_TEST_STREAM;
    const uint32_t ne[4] = {uint32_t(src->ne[0]), uint32_t(src->ne[1]), uint32_t(src->ne[2]), uint32_t(src->ne[3])};
    const proto::htp_test_stream_kparams kp = proto::make_test_stream_kparams(ne, bits(scale), 2, 4, 2, misuse);
    std::memcpy(op.desc.kparams, &kp, sizeof kp);
    op.src[0] = src;
    op.dst[0] = dst;
    op.node   = node;
    return op;
}

inline void fill(ggml_tensor * t, uint32_t seed) {
    std::mt19937                          rng(seed);
    std::uniform_real_distribution<float> d(-4.0f, 4.0f);
    std::vector<float>                    v(size_t(ggml_nelements(t)));
    for (float & x : v) {
        x = d(rng);
    }
    tensor_set(t, v.data(), 0, v.size() * 4);
}

inline std::vector<float> values(const ggml_tensor * t) {
    std::vector<float> v(size_t(ggml_nelements(t)));
    tensor_get(t, v.data(), 0, v.size() * 4);
    return v;
}

// Every element of `out` is exactly `in` times the factors, multiplied in order in float.
inline ::testing::AssertionResult scaled_exactly(const std::vector<float> & in, const std::vector<float> & out,
                                          std::initializer_list<float> factors) {
    for (size_t i = 0; i < in.size(); ++i) {
        float want = in[i];
        for (float f : factors) {
            want = want * f;
        }
        if (bits(out[i]) != bits(want)) {
            return ::testing::AssertionFailure() << "element " << i << ": " << out[i] << " != " << want;
        }
    }
    return ::testing::AssertionSuccess();
}

struct fixture {
    std::vector<std::unique_ptr<htp_device>> devices;

    explicit fixture(const htp_options & o = test_options(), const vnpu::rpc::session_options & s = test_session())
        : devices(make_htp_devices(o, s)) {}
    htp_device & dev(size_t i = 0) { return *devices[i]; }
};

} // namespace htp_session_test
