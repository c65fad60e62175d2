// ROPE on the in-process virtual NPU (strict DMA on) against a float64 reference written from GGML's
// semantics (ggml_compute_forward_rope / rope_yarn): pair j < n_dims / 2 of row (i1, i2, i3) turns
// by theta = theta_interp (1 - mix) + theta_extrap mix, theta_extrap = pos[i2] base^(-2j / n_dims)
// / ff[j], theta_interp = freq_scale theta_extrap, mix = ext_factor (1 - clamp((j - low) / max(0.001,
// high - low), 0, 1)) with YaRN's correction dims, cos and sin times mscale = attn_factor (times 1 +
// 0.1 ln(1 / freq_scale) with YaRN); NEOX pairs (j, j + n_dims / 2), NORMAL (2j, 2j + 1); elements
// from n_dims on are copied bit for bit. NEOX and NORMAL, partial n_dims, YaRN, frequency factors,
// F32/F16/BF16 rows, padded source rows and slices (a fused QKV view) and destination rows, 1-4
// threads, v73 (qf32) and v79, a small VTCM.
//
// Error bound (per rotated element, derived from the kernel's fp32 arithmetic, not measured): the
// angle carries a relative error eps_theta <= (j (|ln theta_scale| + 1/2) + 10) 2^-23 (GGML's own
// fp32 theta_scale and the fp32 ln of it times j, hvx exp's 2 ulp, the products by p, freq_scale,
// the division by ff and YaRN's mix, a few ulp each); hvx_sf_sincos adds 2e-7 absolute and the
// reduction |theta| 2^-24; the rotation x0 c - x1 s two more fp32 roundings. So |got - want| <=
// mscale (|x0| + |x1|) (|theta| (eps_theta + 2^-24) + 2e-7 + 2^-21), plus half an ulp of the row
// type (F16 2^-11, BF16 2^-8 relative) for 16-bit rows.
#include "htp-op-fixture.h"
#include "proto/htp-rope.h"

#include <algorithm>

namespace {

using namespace htp_op_fixture;

struct rope_case {
    uint32_t ne0, n_dims, ne1, ne2, ne3;
    int32_t  mode;        // 0 NORMAL, 2 NEOX
    uint32_t type;        // 0 F32, 1 F16, 30 BF16
    uint32_t src_pad, dst_pad;  // bytes after each row
    bool     ff;
    float    ext_factor, freq_scale, attn_factor;
    uint32_t threads;
    float    freq_base = 10000.0f;
};

std::string describe(const rope_case & c) {
    return std::string(c.mode == 2 ? "NEOX" : "NORMAL") + " type " + std::to_string(c.type) + " ne0 " +
           std::to_string(c.ne0) + " n_dims " + std::to_string(c.n_dims) + " rows " + std::to_string(c.ne1) + "x" +
           std::to_string(c.ne2) + "x" + std::to_string(c.ne3) + (c.ff ? " ff" : "") +
           (c.ext_factor != 0 ? " YaRN" : "") + ", " + std::to_string(c.threads) + " threads";
}

// Runs the case and checks every element. expect_wrong: the kernel is given the other mode than the
// reference assumes, and the check must find mismatches (the reference can fail).
void run_and_check(in_process_session & s, const rope_case & c, uint32_t seed, bool expect_wrong = false) {
    SCOPED_TRACE(describe(c));
    std::mt19937                          rng(seed);
    std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
    // The source's slices a few rows apart, as a view of a fused QKV tensor holds them.
    const uint32_t e = elem_size(c.type), nb1 = c.ne0 * e + c.src_pad, nb2 = nb1 * (c.ne1 + 3);
    operand        src = make(c.type, {c.ne0, c.ne1, c.ne2, c.ne3}, {e, nb1, nb2, nb2 * c.ne2});
    operand dst = make(c.type, {c.ne0, c.ne1, c.ne2, c.ne3}, {}, c.dst_pad);
    operand pos = make(26, {c.ne2, 1, 1, 1});
    operand ffo = make(0, {std::max(1u, c.n_dims / 2), 1, 1, 1});
    for (uint32_t i3 = 0; i3 < c.ne3; ++i3)
        for (uint32_t i2 = 0; i2 < c.ne2; ++i2)
            for (uint32_t i1 = 0; i1 < c.ne1; ++i1)
                for (uint32_t i0 = 0; i0 < c.ne0; ++i0) src.setf(dist(rng), i0, i1, i2, i3);
    std::vector<int32_t> positions(c.ne2);
    for (uint32_t i2 = 0; i2 < c.ne2; ++i2) {
        positions[i2] = i2 == 0 ? 0 : int32_t(rng() % 300);  // position 0 once: the identity rotation
        pos.set<int32_t>(positions[i2], i2);
    }
    std::vector<float> factors(c.n_dims / 2, 1.0f);
    for (uint32_t j = 0; j < c.n_dims / 2; ++j) {
        factors[j] = c.ff ? std::uniform_real_distribution<float>(0.5f, 40.0f)(rng) : 1.0f;
        ffo.set<float>(factors[j], j);
    }

    int32_t params[proto::HTP_OP_MAX_PARAMS] = {};
    params[1]  = int32_t(c.n_dims);
    params[2]  = expect_wrong ? 2 - c.mode : c.mode;
    params[4]  = 4096;  // n_ctx_orig
    params[5]  = fbits(c.freq_base);
    params[6]  = fbits(c.freq_scale);
    params[7]  = fbits(c.ext_factor);
    params[8]  = fbits(c.attn_factor);
    params[9]  = fbits(32.0f);  // beta_fast, beta_slow as llama.cpp sets them
    params[10] = fbits(1.0f);
    proto::htp_rope_kparams kp{};
    const proto::htp_verdict v = proto::prepare_rope_kparams(src.t, pos.t, c.ff ? &ffo.t : nullptr, dst.t, params,
                                                             c.threads, s.platform().table().vtcm_size, &kp);
    ASSERT_TRUE(v) << v.why;
    ASSERT_EQ(run_op(s, proto::HTP_OP_ROPE, {&src, &pos, c.ff ? &ffo : nullptr}, dst, kp, params),
              proto::HTP_STATUS_OK)
        << s.platform().last_violation();
    EXPECT_EQ(s.platform().last_violation(), "");
    EXPECT_TRUE(untouched_outside(dst));

    // The reference, in double from GGML's definitions.
    const double n_dims = c.n_dims, base = c.freq_base, fs = c.freq_scale;
    auto corr_dim = [&](double n_rot) { return n_dims * std::log(4096.0 / (n_rot * 2.0 * M_PI)) / (2.0 * std::log(base)); };
    const double low    = std::max(0.0, std::floor(corr_dim(32.0)));
    const double high   = std::min(n_dims - 1, std::ceil(corr_dim(1.0)));
    double       mscale = c.attn_factor;
    if (c.ext_factor != 0.0f) {
        mscale *= 1.0 + 0.1 * std::log(1.0 / fs);
    }
    const double ln_ts   = std::fabs(std::log(std::pow(base, -2.0 / n_dims)));
    const double half_ulp = c.type == 1 ? std::ldexp(1.0, -11) : c.type == 30 ? std::ldexp(1.0, -8) : 0.0;
    const uint32_t half  = c.n_dims / 2;
    const uint32_t stride = c.mode == 2 ? half : 1, step = c.mode == 2 ? 1 : 2;
    size_t bad = 0;
    for (uint32_t i3 = 0; i3 < c.ne3; ++i3) {
        for (uint32_t i2 = 0; i2 < c.ne2; ++i2) {
            for (uint32_t i1 = 0; i1 < c.ne1; ++i1) {
                for (uint32_t j = 0; j < half; ++j) {
                    const double extrap = positions[i2] * std::pow(base, -2.0 * j / n_dims) / factors[j];
                    double       theta  = fs * extrap;
                    if (c.ext_factor != 0.0f) {
                        const double y   = (j - low) / std::max(0.001, high - low);
                        const double mix = (1.0 - std::clamp(y, 0.0, 1.0)) * c.ext_factor;
                        theta            = theta * (1.0 - mix) + extrap * mix;
                    }
                    const uint32_t j0 = j * step, j1 = j0 + stride;
                    const double   x0 = src.getf(j0, i1, i2, i3), x1 = src.getf(j1, i1, i2, i3);
                    const double   cs = std::cos(theta) * mscale, sn = std::sin(theta) * mscale;
                    const double   want[2] = {x0 * cs - x1 * sn, x0 * sn + x1 * cs};
                    const double   eps     = (j * (ln_ts + 0.5) + 10) * std::ldexp(1.0, -23);
                    const double   fp32_bound =
                        mscale * (std::fabs(x0) + std::fabs(x1)) *
                        (std::fabs(theta) * (eps + std::ldexp(1.0, -24)) + 2e-7 + std::ldexp(1.0, -21));
                    const uint32_t at[2] = {j0, j1};
                    for (int e = 0; e < 2; ++e) {
                        const double got   = dst.getf(at[e], i1, i2, i3);
                        const double bound = fp32_bound * (1 + 2 * half_ulp) + std::fabs(want[e]) * half_ulp;
                        if (!(std::fabs(got - want[e]) <= bound)) {
                            if (!expect_wrong && ++bad <= 5) {
                                ADD_FAILURE() << "row (" << i1 << "," << i2 << "," << i3 << ") element " << at[e]
                                              << " pos " << positions[i2] << ": got " << got << ", want " << want[e]
                                              << " (bound " << bound << ")";
                            }
                            bad += expect_wrong;
                        }
                    }
                }
                for (uint32_t i0 = c.n_dims; i0 < c.ne0; ++i0) {  // copied, bit for bit
                    if (std::memcmp(src.data() + src.offset(i0, i1, i2, i3), dst.data() + dst.offset(i0, i1, i2, i3),
                                    src.elem) != 0) {
                        if (!expect_wrong && ++bad <= 5) {
                            ADD_FAILURE() << "row (" << i1 << "," << i2 << "," << i3 << ") element " << i0
                                          << " past n_dims is not a copy";
                        }
                        bad += expect_wrong;
                    }
                }
            }
        }
    }
    if (expect_wrong) {
        EXPECT_GT(bad, 0u) << "the reference accepts a result computed with the wrong mode";
    }
}

TEST(HtpRope, NeoxAndNormalFullAndPartialDimsOverThreads) {
    in_process_session s(config(), 4);
    const rope_case    cases[] = {
        {128, 128, 5, 7, 1, 2, 0, 0, 0, false, 0.0f, 1.0f, 1.0f, 1},     // NEOX, whole rows, 1 thread
        {128, 128, 5, 7, 1, 0, 0, 0, 0, false, 0.0f, 1.0f, 1.0f, 4},     // NORMAL, 4 threads
        {96, 64, 3, 9, 2, 0, 0, 36, 20, false, 0.0f, 1.0f, 0.75f, 3},    // partial n_dims, padded rows, dim 3
        {80, 32, 4, 5, 1, 2, 0, 8, 0, false, 0.0f, 0.5f, 1.0f, 2},       // ne0 not a multiple of 32, freq_scale
        {10, 6, 33, 3, 1, 2, 0, 0, 4, false, 0.0f, 1.0f, 1.0f, 4},       // tiny rows: n_dims 6 of 10
        {256, 256, 1, 1, 1, 2, 0, 0, 0, false, 0.0f, 1.0f, 1.0f, 4},     // one decode row
        {200, 66, 3, 4, 1, 2, 0, 0, 0, true, 1.0f, 0.5f, 1.0f, 3},       // 33 pairs: a partial pair vector
        {200, 98, 3, 4, 1, 0, 1, 4, 2, false, 0.0f, 1.0f, 1.0f, 2},      // F16, 49 pairs, NORMAL
        {34, 34, 5, 3, 1, 2, 1, 2, 6, false, 0.0f, 1.0f, 1.0f, 4},       // F16 rows of 68 bytes
    };
    uint32_t seed = 1;
    for (const rope_case & c : cases) {
        run_and_check(s, c, seed++);
    }
}

TEST(HtpRope, YarnAndFrequencyFactors) {
    in_process_session s(config(), 4);
    const rope_case    cases[] = {
        {128, 128, 4, 6, 1, 2, 0, 0, 0, false, 1.0f, 0.25f, 1.0f, 2},    // YaRN: ramp over the correction dims
        {128, 64, 3, 5, 1, 0, 0, 0, 0, false, 0.5f, 0.125f, 0.9f, 3},    // YaRN, NORMAL, partial, ext 0.5
        {128, 128, 4, 6, 1, 2, 0, 0, 0, true, 0.0f, 1.0f, 1.0f, 4},      // frequency factors (NEOX)
        {72, 64, 5, 4, 1, 0, 0, 0, 12, true, 1.0f, 0.5f, 1.0f, 1},       // both, NORMAL
    };
    uint32_t seed = 11;
    for (const rope_case & c : cases) {
        run_and_check(s, c, seed++);
    }
}

TEST(HtpRope, SixteenBitRows) {
    in_process_session s(config(), 4);
    const rope_case    cases[] = {
        {128, 128, 4, 5, 1, 2, 1, 0, 0, false, 0.0f, 1.0f, 1.0f, 2},     // F16 NEOX
        {64, 32, 7, 3, 1, 0, 1, 4, 4, true, 0.0f, 1.0f, 1.0f, 3},        // F16 NORMAL, partial, ff, padded
        {96, 64, 3, 4, 1, 2, 30, 0, 0, false, 1.0f, 0.25f, 1.0f, 4},     // BF16 NEOX with YaRN
    };
    uint32_t seed = 21;
    for (const rope_case & c : cases) {
        run_and_check(s, c, seed++);
    }
}

// A VTCM of 128 KiB: the plan shrinks to fewer rows per block (and is still right); on v73 (qf32).
TEST(HtpRope, SmallVtcmAndQf32Arch) {
    const rope_case c{256, 128, 16, 12, 1, 2, 0, 0, 0, true, 1.0f, 0.5f, 1.0f, 4};
    {
        in_process_session s(config(79, 128u << 10), 4);
        operand            so = make(0, {c.ne0, c.ne1, c.ne2, 1}), po = make(26, {c.ne2, 1, 1, 1});
        int32_t            params[proto::HTP_OP_MAX_PARAMS] = {0, 128, 2, 0, 4096, fbits(10000.0f), fbits(1.0f), 0, fbits(1.0f)};
        proto::htp_rope_kparams big{}, small{};
        ASSERT_TRUE(proto::prepare_rope_kparams(so.t, po.t, nullptr, so.t, params, 4, 8u << 20, &big));
        ASSERT_TRUE(proto::prepare_rope_kparams(so.t, po.t, nullptr, so.t, params, 4, 128u << 10, &small));
        EXPECT_LT(small.pipe.block_rows, big.pipe.block_rows);
        EXPECT_LE(small.pipe.vtcm_size, 128u << 10);
        run_and_check(s, c, 31);
    }
    in_process_session s73(config(73), 4);
    run_and_check(s73, c, 32);
    run_and_check(s73, {96, 64, 3, 9, 2, 0, 1, 36, 20, true, 0.0f, 1.0f, 0.75f, 3}, 33);
}

// The ops the kernel cannot compute are refused, with the reason; what it computes is taken: a
// rotation offset (op_params 15, DeepSeek's MLA) inside the row, MROPE with four positions per token.
TEST(HtpRope, TheHostRefusesWhatTheKernelDoesNotCompute) {
    operand so = make(0, {64, 4, 3, 1}), po = make(26, {3, 1, 1, 1}), po4 = make(26, {12, 1, 1, 1});
    int32_t params[proto::HTP_OP_MAX_PARAMS] = {0, 32, 2, 0, 4096, fbits(10000.0f), fbits(1.0f), 0, fbits(1.0f)};
    proto::htp_rope_kparams kp{};
    auto refused_because = [&](const operand & pos, const char * why) {
        const proto::htp_verdict v = proto::prepare_rope_kparams(so.t, pos.t, nullptr, so.t, params, 2, 8u << 20, &kp);
        EXPECT_FALSE(v);
        EXPECT_NE(std::string(v ? "" : v.why).find(why), std::string::npos) << (v ? "taken" : v.why);
    };
    ASSERT_TRUE(proto::prepare_rope_kparams(so.t, po.t, nullptr, so.t, params, 2, 8u << 20, &kp));
    params[15] = 16;
    ASSERT_TRUE(proto::prepare_rope_kparams(so.t, po.t, nullptr, so.t, params, 2, 8u << 20, &kp));
    EXPECT_EQ(kp.n_offs, 16u);
    params[15] = 34;  // 34 + 32 > 64
    refused_because(po, "rotated window");
    params[15] = 0;
    params[2]  = 8;  // GGML_ROPE_TYPE_MROPE, no sections
    refused_because(po4, "sections");
    params[11] = 8, params[12] = 4, params[13] = 4;
    refused_because(po, "four I32");
    ASSERT_TRUE(proto::prepare_rope_kparams(so.t, po4.t, nullptr, so.t, params, 2, 8u << 20, &kp));
    EXPECT_EQ(kp.multi, uint32_t(proto::HTP_ROPE_MROPE));
    params[2] = 24;  // VISION rotates 2 n_dims = 64 elements: the whole row, and no offset
    ASSERT_TRUE(proto::prepare_rope_kparams(so.t, po4.t, nullptr, so.t, params, 2, 8u << 20, &kp));
    EXPECT_EQ(kp.n_dims, 64u);
    params[15] = 2;
    refused_because(po4, "rotated window");
    params[15] = 0;
    params[2]  = 1;  // no such mode
    refused_because(po, "modes");
}

// The reference can fail: the kernel prepared for NORMAL, checked as NEOX (and the other way round),
// gives elements outside the bounds.
TEST(HtpRope, TheReferenceCatchesAWrongMode) {
    in_process_session s(config(), 2);
    run_and_check(s, {64, 64, 2, 3, 1, 2, 0, 0, 0, false, 0.0f, 1.0f, 1.0f, 2}, 41, true);
    run_and_check(s, {96, 64, 2, 3, 1, 0, 0, 0, 0, true, 1.0f, 0.5f, 1.0f, 2}, 42, true);
}

} // namespace
