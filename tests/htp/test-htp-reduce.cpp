// SUM, ARGMAX, ROLL, STEP and LEAKY_RELU on the in-process virtual NPU (strict DMA on), against
// references written from GGML's text: ARGMAX as ggml-cpu's scan (max = MAX(max, x); idx = i where
// max == x, MAX(a, b) = a > b ? a : b), so ties go to the last index and a NaN restarts the scan;
// SUM in double; ROLL as dst[i] = src[(i - shift) mod ne]; STEP as x > 0; LEAKY_RELU as
// (x > 0 ? x : 0) + slope * (x < 0 ? x : 0). Rows longer than a chunk (the plans are made for a
// small VTCM so rows cross chunks), padded and permuted sources, 1-4 threads, NaN, infinities, -0.
#include "htp-op-fixture.h"
#include "proto/htp-layout.h"
#include "proto/htp-reduce.h"
#include "proto/htp-unary.h"

#include <limits>

namespace {

using namespace htp_op_fixture;

constexpr float kInf = std::numeric_limits<float>::infinity();

float from_bits(uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

int32_t ggml_argmax(const std::vector<float> & x) {
    float   max = -kInf;
    int32_t idx = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        max = max > x[i] ? max : x[i];
        if (max == x[i]) {
            idx = int32_t(i);
        }
    }
    return idx;
}

// Row r of an ARGMAX input: kind 0 continuous, 1 ties, 2 NaNs here and there, 3 ending in NaNs,
// 4 all NaN, 5 signed zeros and infinities, 6 NaN first.
std::vector<float> argmax_row(uint32_t n, int kind, std::mt19937 & rng) {
    std::vector<float> x(n);
    for (float & v : x) {
        v = kind == 1 || kind == 5 ? float(int(rng() % 5) - 2) : std::uniform_real_distribution<float>(-3.0f, 3.0f)(rng);
    }
    const float nan = from_bits(0x7FC00000u), nan_neg = from_bits(0xFFC00001u);
    switch (kind) {
    case 2:
        for (uint32_t t = 0; t < 3; ++t) {
            x[rng() % n] = t % 2 ? nan : nan_neg;
        }
        break;
    case 3:
        x[n - 1] = nan;
        if (n > 2) {
            x[n - 2] = nan_neg;
        }
        break;
    case 4:
        for (float & v : x) {
            v = nan;
        }
        break;
    case 5:
        for (float & v : x) {
            v = v == 2.0f ? -0.0f : v == -2.0f ? 0.0f : v == 1.0f ? -kInf : v;
        }
        x[rng() % n] = 0.0f;
        x[rng() % n] = -0.0f;
        break;
    case 6: x[0] = nan; break;
    default: break;
    }
    return x;
}

void check_argmax(in_process_session & s, uint32_t ne0, uint32_t ne1, uint32_t threads, uint32_t vtcm_budget,
                  uint32_t row_pad, uint32_t seed) {
    SCOPED_TRACE("ARGMAX ne0 " + std::to_string(ne0) + " rows " + std::to_string(ne1) + ", " + std::to_string(threads) +
                 " threads, VTCM budget " + std::to_string(vtcm_budget));
    std::mt19937 rng(seed);
    operand      src = make(0, {ne0, ne1, 1, 1}, {}, row_pad);
    operand      dst = make(26, {ne1, 1, 1, 1}, {}, 0, 8);
    std::vector<int32_t> want(ne1);
    for (uint32_t r = 0; r < ne1; ++r) {
        const std::vector<float> x = argmax_row(ne0, int(r % 7), rng);
        for (uint32_t i = 0; i < ne0; ++i) {
            src.set<float>(x[i], i, r);
        }
        want[r] = ggml_argmax(x);
    }
    proto::htp_reduce_kparams kp{};
    ASSERT_TRUE(proto::prepare_reduce_kparams(proto::HTP_OP_ARGMAX, src.t, dst.t, threads, vtcm_budget, &kp));
    ASSERT_EQ(run_op(s, proto::HTP_OP_ARGMAX, {&src}, dst, kp), proto::HTP_STATUS_OK);
    for (uint32_t r = 0; r < ne1; ++r) {
        EXPECT_EQ(dst.get<int32_t>(r), want[r]) << "row " << r << " (kind " << r % 7 << ")";
    }
    EXPECT_TRUE(untouched_outside(dst));
}

TEST(HtpReduce, ArgmaxIsGgmlsScanAcrossChunksAndThreads) {
    in_process_session s(config(), 4);
    // 2 KiB budgets leave chunks of 32..64 elements: every longer row crosses chunks.
    check_argmax(s, 33, 14, 1, 2048, 0, 1);
    check_argmax(s, 300, 21, 3, 4096, 12, 2);
    check_argmax(s, 1000, 7, 4, 1u << 20, 0, 3);
    check_argmax(s, 5000, 9, 2, 8192, 4, 4);
    check_argmax(s, 1, 5, 4, 1u << 20, 0, 5);
}

TEST(HtpReduce, ArgmaxTiesGoToTheLastIndex) {
    in_process_session s(config(), 4);
    operand src = make(0, {100, 2, 1, 1});
    operand dst = make(26, {2, 1, 1, 1});
    for (uint32_t i = 0; i < 100; ++i) {
        src.set<float>(i == 3 || i == 70 ? 5.0f : 1.0f, i, 0);
        src.set<float>(i == 0 || i == 31 || i == 32 ? 5.0f : 1.0f, i, 1);  // both sides of a vector's edge
    }
    proto::htp_reduce_kparams kp{};
    ASSERT_TRUE(proto::prepare_reduce_kparams(proto::HTP_OP_ARGMAX, src.t, dst.t, 2, 1u << 20, &kp));
    ASSERT_EQ(run_op(s, proto::HTP_OP_ARGMAX, {&src}, dst, kp), proto::HTP_STATUS_OK);
    EXPECT_EQ(dst.get<int32_t>(0), 70);
    EXPECT_EQ(dst.get<int32_t>(1), 32);
}

void check_sum(in_process_session & s, uint32_t type, std::array<uint32_t, 4> ne, bool permuted, uint32_t threads,
               uint32_t vtcm_budget, uint32_t seed) {
    SCOPED_TRACE("SUM type " + std::to_string(type) + " ne " + std::to_string(ne[0]) + "x" + std::to_string(ne[1]) + "x" +
                 std::to_string(ne[2]) + (permuted ? " permuted" : "") + ", " + std::to_string(threads) + " threads");
    const uint32_t e   = elem_size(type);
    operand        src = permuted ? make(type, ne, {e, ne[2] * ne[0] * e + 8, ne[0] * e, (ne[2] * ne[0] * e + 8) * ne[1]})
                                  : make(type, ne, {}, 6);
    operand        dst = make(type, {1, 1, 1, 1}, {}, 0, 4);
    std::mt19937   rng(seed);
    double         want = 0.0, magnitude = 0.0;
    for (uint32_t i3 = 0; i3 < ne[3]; ++i3) {
        for (uint32_t i2 = 0; i2 < ne[2]; ++i2) {
            for (uint32_t i1 = 0; i1 < ne[1]; ++i1) {
                for (uint32_t i0 = 0; i0 < ne[0]; ++i0) {
                    src.setf(std::uniform_real_distribution<float>(-1.0f, 2.0f)(rng), i0, i1, i2, i3);
                    want += src.getf(i0, i1, i2, i3);
                    magnitude += std::fabs(src.getf(i0, i1, i2, i3));
                }
            }
        }
    }
    proto::htp_reduce_kparams kp{};
    ASSERT_TRUE(proto::prepare_reduce_kparams(proto::HTP_OP_SUM, src.t, dst.t, threads, vtcm_budget, &kp));
    ASSERT_EQ(run_op(s, proto::HTP_OP_SUM, {&src}, dst, kp), proto::HTP_STATUS_OK);
    // fp32 partial sums: a few ulp of the magnitude; then one rounding to the result's type.
    const double result_ulp = type == 0 ? 0.0 : std::fabs(want) * (type == 1 ? 0x1p-11 : 0x1p-8);
    EXPECT_NEAR(dst.getf(0), want, magnitude * 1e-6 + result_ulp);
    EXPECT_TRUE(untouched_outside(dst));
}

TEST(HtpReduce, SumOfEveryElementInEachType) {
    in_process_session s(config(), 4);
    check_sum(s, 0, {1000, 7, 3, 2}, false, 4, 1u << 20, 1);
    check_sum(s, 0, {33, 5, 4, 1}, true, 3, 4096, 2);
    check_sum(s, 0, {70000, 1, 1, 1}, false, 4, 8192, 3);
    check_sum(s, 1, {130, 9, 2, 1}, false, 2, 2048, 4);
    check_sum(s, 30, {64, 4, 3, 1}, true, 4, 1u << 20, 5);
    check_sum(s, 0, {1, 1, 1, 1}, false, 4, 1u << 20, 6);
}

TEST(HtpReduce, RollRotatesEveryDimension) {
    in_process_session s(config(), 4);
    struct roll_case {
        std::array<uint32_t, 4> ne;
        std::array<int32_t, 4>  shift;
        uint32_t                type, threads;
    };
    const roll_case cases[] = {
        {{10, 5, 4, 3}, {3, -2, 1, -1}, 0, 4}, {{37, 3, 1, 1}, {-36, 0, 0, 0}, 0, 1}, {{64, 4, 2, 1}, {0, 3, 1, 0}, 1, 2},
        {{9, 2, 2, 2}, {4, 1, -1, 1}, 26, 3},
    };
    for (const roll_case & c : cases) {
        SCOPED_TRACE("ROLL ne " + std::to_string(c.ne[0]) + " shift " + std::to_string(c.shift[0]) + "," +
                     std::to_string(c.shift[1]) + "," + std::to_string(c.shift[2]) + "," + std::to_string(c.shift[3]));
        operand src = make(c.type, c.ne, {}, 8);
        operand dst = make(c.type, c.ne, {}, 4);
        for (uint64_t b = 0; b < src.t.size; ++b) {
            src.data()[b] = uint8_t(b * 37 + 11);
        }
        int32_t params[proto::HTP_OP_MAX_PARAMS] = {c.shift[0], c.shift[1], c.shift[2], c.shift[3]};
        proto::htp_roll_kparams kp{};
        ASSERT_TRUE(proto::prepare_roll_kparams(src.t, dst.t, params, c.threads, 1u << 20, &kp));
        ASSERT_EQ(run_op(s, proto::HTP_OP_ROLL, {&src}, dst, kp, params), proto::HTP_STATUS_OK);
        auto from = [&](uint32_t i, int d) {
            const int64_t n = c.ne[d];
            return uint32_t(((int64_t(i) - c.shift[d]) % n + n) % n);
        };
        for (uint32_t i3 = 0; i3 < c.ne[3]; ++i3) {
            for (uint32_t i2 = 0; i2 < c.ne[2]; ++i2) {
                for (uint32_t i1 = 0; i1 < c.ne[1]; ++i1) {
                    for (uint32_t i0 = 0; i0 < c.ne[0]; ++i0) {
                        ASSERT_EQ(std::memcmp(dst.data() + dst.offset(i0, i1, i2, i3),
                                              src.data() + src.offset(from(i0, 0), from(i1, 1), from(i2, 2), from(i3, 3)),
                                              src.elem),
                                  0)
                            << "element " << i0 << "," << i1 << "," << i2 << "," << i3;
                    }
                }
            }
        }
        EXPECT_TRUE(untouched_outside(dst));
    }
}

// Every special value, bit for bit: STEP gives 1 only for x > 0, LEAKY_RELU follows GGML's sum of
// both sides (NaN -> 0, -0 -> +0, -inf -> -inf * slope).
TEST(HtpReduce, StepAndLeakyReluOnSpecialValuesBitForBit) {
    in_process_session s(config(), 4);
    const uint32_t special[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u,
                                0x00000001u, 0x80000001u, 0x3F800000u, 0xBF800000u, 0x7F7FFFFFu, 0xFF7FFFFFu};
    constexpr uint32_t n = 40;
    for (const uint32_t opcode : {proto::HTP_OP_STEP, proto::HTP_OP_LEAKY_RELU}) {
        const float slope = -0.25f;
        operand     src   = make(0, {n, 3, 1, 1});
        operand     dst   = make(0, {n, 3, 1, 1});
        for (uint32_t r = 0; r < 3; ++r) {
            for (uint32_t i = 0; i < n; ++i) {
                src.set<float>(from_bits(special[(i + r) % std::size(special)]), i, r);
            }
        }
        int32_t params[proto::HTP_OP_MAX_PARAMS] = {fbits(slope)};
        proto::htp_unary_kparams kp{};
        ASSERT_TRUE(proto::prepare_unary_kparams(opcode, src.t, dst.t, params, 2, 1u << 20, &kp));
        ASSERT_EQ(run_op(s, opcode, {&src}, dst, kp, params), proto::HTP_STATUS_OK);
        for (uint32_t r = 0; r < 3; ++r) {
            for (uint32_t i = 0; i < n; ++i) {
                const float x    = src.get<float>(i, r);
                const float want = opcode == proto::HTP_OP_STEP ? (x > 0.0f ? 1.0f : 0.0f)
                                                                : (x > 0.0f ? x : 0.0f) + slope * (x < 0.0f ? x : 0.0f);
                uint32_t got_bits, want_bits;
                const float got = dst.get<float>(i, r);
                std::memcpy(&got_bits, &got, 4);
                std::memcpy(&want_bits, &want, 4);
                EXPECT_EQ(got_bits, want_bits) << (opcode == proto::HTP_OP_STEP ? "STEP" : "LEAKY_RELU") << " of 0x"
                                               << std::hex << special[(i + r) % std::size(special)];
            }
        }
    }
}

} // namespace
