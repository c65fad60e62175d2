// SOFT_MAX on the in-process virtual NPU (strict DMA on) against a float64 reference written from
// GGML's semantics (ggml_compute_forward_soft_max_f32): w = x scale + slope mask[i1, i2 % m.ne2,
// i3 % m.ne3] (slope: ALiBi's m0^(h + 1) / m1^(2 (h - n_head_log2) + 1) of head h = i2, 1 without
// max_bias), p = e^(w - max) / sum, a sink (one logit per head) taking part in max and sum. No mask,
// F32 and F16 masks with -inf entries, masks with more rows than the op (GGML's padding) and
// broadcast over heads, ALiBi, sinks, padded rows, rows not a multiple of 32, 1-4 threads, v73's
// qf32 and v79's IEEE arithmetic, a small VTCM.
//
// Error bound (derived from the kernel's fp32 arithmetic): w carries the roundings of the product,
// the slope's e^(ln slope) (2 ulp, its argument's rounding |ln slope| 2^-24) and the sum, so
// |dw| <= 2^-22 (|x scale| + |slope mask|) + |slope mask| (|ln slope| + 2) 2^-23; e^(w - max) adds its
// argument's rounding 2^-24 |w - max| and 2 ulp; the sum of n terms (n / 32 per lane, then the lanes'
// tree) (n / 32 + 5) 2^-24 relative; the reciprocal and the product 2 more ulp. A probability p then
// lies within p (2 max|dw| + 2^-24 |w - max| + (n / 32 + 16) 2^-23) of the reference (the max's own
// error cancels). Masked entries (-inf) must be exactly 0.
#include "htp-op-fixture.h"
#include "proto/htp-binary.h"

#include <algorithm>
#include <limits>

namespace {

using namespace htp_op_fixture;

struct softmax_case {
    uint32_t ne0, ne1, ne2, ne3;
    int      mask;             // 0 none, 1 F32, 2 F16
    uint32_t mask_ne1, mask_ne2, mask_ne3;
    bool     sinks;
    float    scale, max_bias;
    uint32_t pad;              // bytes after each src/dst row
    uint32_t threads;
};

std::string describe(const softmax_case & c) {
    return "ne " + std::to_string(c.ne0) + "x" + std::to_string(c.ne1) + "x" + std::to_string(c.ne2) + "x" +
           std::to_string(c.ne3) + (c.mask == 0 ? " no mask" : c.mask == 1 ? " F32 mask" : " F16 mask") +
           (c.sinks ? " sinks" : "") + (c.max_bias > 0 ? " ALiBi" : "") + ", " + std::to_string(c.threads) + " threads";
}

// wrong_kernel: the NPU is given max_bias 0 and scale 1 where the reference uses the case's; the
// check must then find mismatches.
void run_and_check(in_process_session & s, const softmax_case & c, uint32_t seed, bool wrong_kernel = false) {
    SCOPED_TRACE(describe(c));
    std::mt19937                          rng(seed);
    std::uniform_real_distribution<float> dist(-6.0f, 6.0f);
    const float                           ninf = -std::numeric_limits<float>::infinity();
    operand src = make(0, {c.ne0, c.ne1, c.ne2, c.ne3}, {}, c.pad);
    operand dst = make(0, {c.ne0, c.ne1, c.ne2, c.ne3}, {}, c.pad);
    operand msk = make(c.mask == 2 ? 1 : 0, {c.ne0, std::max(1u, c.mask_ne1), std::max(1u, c.mask_ne2), std::max(1u, c.mask_ne3)});
    operand snk = make(0, {c.ne2, 1, 1, 1});
    for (uint32_t i3 = 0; i3 < c.ne3; ++i3)
        for (uint32_t i2 = 0; i2 < c.ne2; ++i2)
            for (uint32_t i1 = 0; i1 < c.ne1; ++i1)
                for (uint32_t i0 = 0; i0 < c.ne0; ++i0) src.setf(dist(rng), i0, i1, i2, i3);
    if (c.mask != 0) {
        for (uint32_t i3 = 0; i3 < msk.t.ne[3]; ++i3)
            for (uint32_t i2 = 0; i2 < msk.t.ne[2]; ++i2)
                for (uint32_t i1 = 0; i1 < msk.t.ne[1]; ++i1)
                    for (uint32_t i0 = 0; i0 < c.ne0; ++i0) {
                        // Causal -inf past i1 + a few (never the whole row), else a bias in [-2, 2].
                        const bool masked = i0 > i1 + 3 + i2 && i0 != 0;
                        msk.setf(masked ? ninf : std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng), i0, i1, i2, i3);
                    }
    }
    for (uint32_t h = 0; h < c.ne2; ++h) {
        snk.set<float>(std::uniform_real_distribution<float>(-3.0f, 8.0f)(rng), h);
    }

    int32_t params[proto::HTP_OP_MAX_PARAMS] = {};
    params[0] = fbits(wrong_kernel ? 1.0f : c.scale);
    params[1] = fbits(wrong_kernel ? 0.0f : c.max_bias);
    proto::htp_binary_kparams kp{};
    const proto::htp_verdict  v = proto::prepare_softmax_kparams(src.t, c.mask ? &msk.t : nullptr, c.sinks ? &snk.t : nullptr,
                                                                dst.t, params, c.threads, s.platform().table().vtcm_size, &kp);
    ASSERT_TRUE(v) << v.why;
    ASSERT_EQ(run_op(s, proto::HTP_OP_SOFT_MAX, {&src, c.mask ? &msk : nullptr, c.sinks ? &snk : nullptr}, dst, kp, params),
              proto::HTP_STATUS_OK)
        << s.platform().last_violation();
    EXPECT_EQ(s.platform().last_violation(), "");
    EXPECT_TRUE(untouched_outside(dst));

    size_t              bad = 0;
    std::vector<double> w(c.ne0);
    for (uint32_t i3 = 0; i3 < c.ne3; ++i3) {
        for (uint32_t i2 = 0; i2 < c.ne2; ++i2) {
            const double slope    = alibi_slope(c.max_bias, c.ne2, i2);
            const double ln_slope = std::fabs(std::log(slope));
            for (uint32_t i1 = 0; i1 < c.ne1; ++i1) {
                double mx = c.sinks ? double(snk.get<float>(i2)) : -INFINITY, dw = 0;
                for (uint32_t i0 = 0; i0 < c.ne0; ++i0) {
                    const double x = double(src.get<float>(i0, i1, i2, i3)) * c.scale;
                    const double m = c.mask ? slope * msk.getf(i0, i1, i2 % msk.t.ne[2], i3 % msk.t.ne[3]) : 0.0;
                    w[i0]          = x + m;
                    mx             = std::max(mx, w[i0]);
                    if (std::isfinite(m)) {
                        dw = std::max(dw, std::ldexp(std::fabs(x) + std::fabs(m), -22) +
                                              std::fabs(m) * (ln_slope + 2) * std::ldexp(1.0, -23));
                    }
                }
                double sum = c.sinks ? std::exp(double(snk.get<float>(i2)) - mx) : 0.0;
                for (uint32_t i0 = 0; i0 < c.ne0; ++i0) {
                    sum += std::exp(w[i0] - mx);
                }
                for (uint32_t i0 = 0; i0 < c.ne0; ++i0) {
                    const double want  = std::exp(w[i0] - mx) / sum;
                    const double got   = dst.get<float>(i0, i1, i2, i3);
                    const double bound = std::isinf(w[i0])
                                             ? 0.0
                                             : want * (2 * dw + std::ldexp(std::fabs(w[i0] - mx), -24) +
                                                       (c.ne0 / 32.0 + 16) * std::ldexp(1.0, -23)) +
                                                   1e-37;
                    if (!(std::fabs(got - want) <= bound)) {
                        if (!wrong_kernel && ++bad <= 5) {
                            ADD_FAILURE() << "row (" << i1 << "," << i2 << "," << i3 << ") element " << i0 << ": got "
                                          << got << ", want " << want << " (bound " << bound << ")";
                        }
                        bad += wrong_kernel;
                    }
                }
            }
        }
    }
    if (wrong_kernel) {
        EXPECT_GT(bad, 0u) << "the reference accepts a result computed without the scale and ALiBi";
    }
}

TEST(HtpSoftmax, NoMaskF32AndF16MasksOverThreads) {
    in_process_session s(config(), 4);
    const softmax_case cases[] = {
        {100, 7, 3, 1, 0, 0, 0, 0, false, 1.0f, 0.0f, 0, 1},        // no mask, rows of 100, 1 thread
        {100, 7, 3, 1, 0, 0, 0, 0, false, 0.3f, 0.0f, 12, 4},       // padded rows, 4 threads
        {64, 5, 4, 1, 1, 5, 4, 1, false, 0.125f, 0.0f, 0, 2},       // F32 mask per head
        {96, 9, 4, 2, 1, 16, 1, 1, false, 0.125f, 0.0f, 0, 3},      // F32 mask of 16 rows broadcast over heads, dim 3
        {33, 40, 2, 1, 2, 40, 1, 1, false, 1.0f, 0.0f, 4, 4},       // F16 mask, 33 columns, 40 rows
        {1000, 6, 2, 1, 2, 8, 2, 1, false, 0.0883883f, 0.0f, 0, 4}, // F16 mask, long rows
        {1, 3, 2, 1, 0, 0, 0, 0, false, 1.0f, 0.0f, 0, 2},          // one column: every result is 1
    };
    uint32_t seed = 1;
    for (const softmax_case & c : cases) {
        run_and_check(s, c, seed++);
    }
}

TEST(HtpSoftmax, AlibiAndSinks) {
    in_process_session s(config(), 4);
    const softmax_case cases[] = {
        {64, 4, 6, 1, 1, 4, 6, 1, false, 0.125f, 8.0f, 0, 4},      // ALiBi, 6 heads: m1 for heads 4, 5
        {80, 3, 12, 1, 2, 4, 1, 1, false, 1.0f, 4.0f, 0, 2},       // ALiBi, F16 mask shared by 12 heads
        {64, 5, 3, 1, 0, 0, 0, 0, true, 1.0f, 0.0f, 0, 1},         // sinks without a mask
        {50, 5, 4, 1, 1, 5, 4, 1, true, 0.5f, 0.0f, 8, 3},         // sinks and a mask
        {128, 2, 5, 1, 2, 2, 5, 1, true, 0.125f, 2.0f, 0, 4},      // everything at once
    };
    uint32_t seed = 11;
    for (const softmax_case & c : cases) {
        run_and_check(s, c, seed++);
    }
}

TEST(HtpSoftmax, Qf32ArchAndASmallVtcm) {
    in_process_session s73(config(73), 4);
    run_and_check(s73, {100, 7, 3, 1, 2, 7, 3, 1, true, 0.5f, 0.0f, 0, 4}, 21);
    run_and_check(s73, {64, 4, 6, 1, 1, 4, 6, 1, false, 0.125f, 8.0f, 4, 2}, 22);

    // Rows of 6000 F32 (24 KB) on 2 threads: 384 KiB of VTCM holds blocks of one row, two slots deep.
    const softmax_case big{6000, 6, 2, 1, 1, 6, 2, 1, true, 0.1f, 0.0f, 0, 2};
    operand            a = make(0, {big.ne0, big.ne1, big.ne2, 1}), m = make(0, {big.ne0, big.ne1, big.ne2, 1});
    const int32_t      params[proto::HTP_OP_MAX_PARAMS] = {fbits(0.1f)};
    proto::htp_binary_kparams roomy{}, tight{};
    ASSERT_TRUE(proto::prepare_softmax_kparams(a.t, &m.t, nullptr, a.t, params, 2, 8u << 20, &roomy));
    const proto::htp_verdict v = proto::prepare_softmax_kparams(a.t, &m.t, nullptr, a.t, params, 2, 384u << 10, &tight);
    ASSERT_TRUE(v) << v.why;
    EXPECT_EQ(tight.pipe.block_rows, 1u);
    EXPECT_EQ(tight.pipe.n_slots, 2u);
    EXPECT_LT(tight.pipe.block_rows * tight.pipe.n_slots, roomy.pipe.block_rows * roomy.pipe.n_slots);
    in_process_session small(config(79, 384u << 10), 4);
    run_and_check(small, big, 23);
}

// The reference can fail: a kernel run without the scale and ALiBi is caught.
TEST(HtpSoftmax, TheReferenceCatchesAWrongScale) {
    in_process_session s(config(), 2);
    run_and_check(s, {64, 4, 6, 1, 1, 4, 6, 1, false, 0.125f, 8.0f, 0, 2}, 31, true);
}

} // namespace
