// The tensor split's ALLREDUCE against real session processes: 2..4 sessions, each with its partial
// result in its own buffer, end up holding the sum the CPU computes (F32: the same fp32 additions in
// source order, bit for bit; F16: summed in fp32 and rounded once), for sizes around the chunk size;
// what the NPU cannot take is declined with nothing written; a member killed is a clear error at
// once, a member stalled one within the deadlines, and the next all-reduce works.
#include "htp-session-fixture.h"

#include "core/fp16.h"
#include "hexagon/htp-allreduce.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace htp_session_test;

// One partial result per member, each in a buffer of its own member's device.
struct partials {
    std::vector<std::unique_ptr<ggml_context>>    ctx;
    std::vector<std::unique_ptr<backend_buffer>>  bufs;
    std::vector<const ggml_tensor *>              t;

    partials(fixture & f, uint32_t n, ggml_type type, int64_t ne0, int64_t ne1) {
        for (uint32_t k = 0; k < n; ++k) {
            ctx.push_back(std::make_unique<ggml_context>());
            ggml_tensor * x = ggml_new_tensor_2d(ctx.back().get(), type, ne0, ne1);
            bufs.push_back(alloc_ctx_tensors(*ctx.back(), f.dev(k).buffer_type()));
            t.push_back(x);
        }
    }
};

// Values in [-4, 4) as floats (F16: already representable).
std::vector<float> random_values(size_t n, ggml_type type, uint32_t seed) {
    std::mt19937                          rng(seed);
    std::uniform_real_distribution<float> d(-4.0f, 4.0f);
    std::vector<float>                    v(n);
    for (float & x : v) {
        x = d(rng);
        if (type == GGML_TYPE_F16) {
            x = fp16_to_fp32(fp32_to_fp16(x));
        }
    }
    return v;
}

void store(const ggml_tensor * t, const std::vector<float> & v) {
    if (t->type == GGML_TYPE_F32) {
        tensor_set(const_cast<ggml_tensor *>(t), v.data(), 0, v.size() * 4);
        return;
    }
    std::vector<uint16_t> h(v.size());
    fp32_to_fp16_row(v.data(), h.data(), int64_t(v.size()));
    tensor_set(const_cast<ggml_tensor *>(t), h.data(), 0, h.size() * 2);
}

std::vector<float> load(const ggml_tensor * t) {
    std::vector<float> v(size_t(ggml_nelements(t)));
    if (t->type == GGML_TYPE_F32) {
        tensor_get(t, v.data(), 0, v.size() * 4);
        return v;
    }
    std::vector<uint16_t> h(v.size());
    tensor_get(t, h.data(), 0, h.size() * 2);
    fp16_to_fp32_row(h.data(), v.data(), int64_t(v.size()));
    return v;
}

// Every member's result equals the sum of the inputs in source order (fp32; F16 rounded once).
void expect_summed(const partials & p, const std::vector<std::vector<float>> & in) {
    const size_t n = in[0].size();
    std::vector<float> want(n);
    for (size_t i = 0; i < n; ++i) {
        float s = in[0][i];
        for (size_t k = 1; k < in.size(); ++k) {
            s += in[k][i];
        }
        want[i] = p.t[0]->type == GGML_TYPE_F16 ? fp16_to_fp32(fp32_to_fp16(s)) : s;
    }
    for (size_t k = 0; k < p.t.size(); ++k) {
        const std::vector<float> got = load(p.t[k]);
        for (size_t i = 0; i < n; ++i) {
            ASSERT_EQ(bits(got[i]), bits(want[i])) << "member " << k << ", element " << i << ": " << got[i]
                                                   << " != " << want[i];
        }
    }
}

struct ar_case {
    uint32_t  members;
    ggml_type type;
    int64_t   ne0, ne1;
};

class HtpAllreduce : public ::testing::TestWithParam<ar_case> {};

TEST_P(HtpAllreduce, EveryMemberHoldsTheSum) {
    const ar_case c = GetParam();
    fixture       f(test_options(c.members), test_session());
    std::vector<htp_device *> devices;
    for (auto & d : f.devices) {
        devices.push_back(d.get());
    }
    htp_allreduce ar(devices);
    partials      p(f, c.members, c.type, c.ne0, c.ne1);
    std::vector<std::vector<float>> in;
    for (uint32_t k = 0; k < c.members; ++k) {
        in.push_back(random_values(size_t(c.ne0 * c.ne1), c.type, 100 + k));
        store(p.t[k], in.back());
    }
    ASSERT_EQ(ar.run(p.t), "");
    expect_summed(p, in);
}

// Sizes: one element, a chunk's worth less and more one (4096 elements), several chunks with a
// partial last one, more chunks than the members have threads.
INSTANTIATE_TEST_SUITE_P(
    Shapes, HtpAllreduce,
    ::testing::Values(ar_case{2, GGML_TYPE_F32, 1, 1}, ar_case{2, GGML_TYPE_F32, 4095, 1},
                      ar_case{2, GGML_TYPE_F32, 4097, 1}, ar_case{3, GGML_TYPE_F32, 640, 37},
                      ar_case{4, GGML_TYPE_F32, 2048, 64}, ar_case{2, GGML_TYPE_F16, 640, 7},
                      ar_case{3, GGML_TYPE_F16, 4099, 3}, ar_case{4, GGML_TYPE_F16, 1, 1}),
    [](const ::testing::TestParamInfo<ar_case> & i) {
        return std::to_string(i.param.members) + "x" + (i.param.type == GGML_TYPE_F32 ? "f32_" : "f16_") +
               std::to_string(i.param.ne0) + "x" + std::to_string(i.param.ne1);
    });

TEST(HtpAllreduceRefusal, WhatTheNpuCannotTakeIsDeclinedUnwritten) {
    fixture f(test_options(2), test_session());
    htp_allreduce ar({&f.dev(0), &f.dev(1)});
    partials mixed(f, 2, GGML_TYPE_F32, 64, 2);
    partials other(f, 2, GGML_TYPE_F16, 64, 2);
    const std::vector<float> a = random_values(128, GGML_TYPE_F32, 1);
    store(mixed.t[0], a);
    const ggml_tensor * types[] = {mixed.t[0], other.t[1]};
    EXPECT_NE(ar.run(types).find("one type and size"), std::string::npos);
    partials bf(f, 2, GGML_TYPE_BF16, 64, 2);
    EXPECT_NE(ar.run(bf.t).find("F32 or F16"), std::string::npos);
    const ggml_tensor * one[] = {mixed.t[0]};
    EXPECT_FALSE(ar.run(one).empty());
    EXPECT_EQ(load(mixed.t[0]), a) << "a declined all-reduce writes nothing";
    EXPECT_THROW(htp_allreduce({&f.dev(0)}), std::invalid_argument);
    EXPECT_THROW(htp_allreduce({&f.dev(0), &f.dev(0)}), std::invalid_argument);
}

// Two sessions summed once (both up), then `sig` sent to the second session's process: the next
// all-reduce must fail within `within`, naming that member and each of `expected`; once the member
// can run again, the all-reduce after starts its session anew and sums right.
void expect_fault_then_recovery(uint32_t fence_ms, std::chrono::milliseconds session_timeout, int sig,
                                std::chrono::milliseconds within, std::initializer_list<const char *> expected) {
    htp_options o      = test_options(2);
    o.fence_timeout_ms = fence_ms;
    vnpu::rpc::session_options so = test_session();
    so.timeout                    = session_timeout;
    fixture       f(o, so);
    htp_allreduce ar({&f.dev(0), &f.dev(1)});
    partials      p(f, 2, GGML_TYPE_F32, 4096, 16);
    const std::vector<std::vector<float>> in = {random_values(65536, GGML_TYPE_F32, 7),
                                                random_values(65536, GGML_TYPE_F32, 8)};
    store(p.t[0], in[0]);
    store(p.t[1], in[1]);
    ASSERT_EQ(ar.run(p.t), "");
    const pid_t victim = f.dev(1).session().pid();
    ASSERT_EQ(::kill(victim, sig), 0);
    const auto start = std::chrono::steady_clock::now();
    try {
        ar.run(p.t);
        FAIL() << "no error";
    } catch (const backend_error & e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("HTP0:1"), std::string::npos) << what;
        for (const char * text : expected) {
            EXPECT_NE(what.find(text), std::string::npos) << what;
        }
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, within);
    if (sig == SIGSTOP) {
        ::kill(victim, SIGCONT);  // the host ended it at its deadline; harmless if it is gone
    }
    store(p.t[0], in[0]);
    store(p.t[1], in[1]);
    ASSERT_EQ(ar.run(p.t), "");
    expect_summed(p, in);
}

// A member whose session was killed: the all-reduce fails naming it, within the fence deadline (not
// at it: the dead member's fence fails at once).
TEST(HtpAllreduceFault, AKilledMemberIsAClearErrorThenTheNextWorks) {
    expect_fault_then_recovery(15000, 10s, SIGKILL, 5s, {});
}

// A member stalled (its session process stopped) during the all-reduce: its peer gives up at the
// fence deadline (FENCE_TIMEOUT), the stalled session misses the session deadline and is ended, so
// the call fails within both deadlines instead of hanging.
TEST(HtpAllreduceFault, AStalledMemberIsADeadlineErrorNotAHang) {
    expect_fault_then_recovery(300, 2s, SIGSTOP, 6s, {"FENCE_TIMEOUT"});
}

} // namespace
