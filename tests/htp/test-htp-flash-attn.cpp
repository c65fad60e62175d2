// FLASH_ATTN_EXT on HVX and on the HMX unit (FLASH_ATTN_EXT_HMX), in-process (strict DMA on, the HMX
// unit's strict rules on), against a float64 reference written from GGML's semantics
// (ggml_compute_forward_flash_attn_ext_f16): for query row iq1 of head iq2, s_j = scale q.k_j over
// the keys of K/V head iq2 / (n_head / n_head_kv), s_j = softcap tanh(s_j / softcap) when a softcap
// is set, s_j += slope mask[iq1, j] (ALiBi's slope of head iq2, 1 without max_bias; the mask's head
// iq2 % mask.ne2), out = sum_j e^(s_j - M) v_j / (sum_j e^(s_j - M) + e^(sink - M)) with M the max
// over the scores and the sink, written to dst row (iq2, iq1); a row whose keys are all masked gives
// 0. K and V values are their fp16 (or fp32) values exactly, a quantized or BF16 cache's its
// dequantized values (hexnpu's to_float, GGML's dequantize_row_*); Q is fp32.
//
// Error bounds, derived:
//  HVX (fp32 throughout): a score carries the dot's roundings, at most (d / 32 + 8) 2^-23 scale
//    sum_i |q_i k_i| (32-lane partial sums, then a fold tree), plus 2^-22 |s| for the scale, the
//    softcap's tanh (a few ulp of softcap) and the mask's sum; a probability then moves by e^(2 ds)
//    relative (its score and, through the max-free normalization, the others), the exponentials,
//    the online rescales (one per key block) and the division add (n_blocks + 24) 2^-23. So element
//    i lies within (2 ds_max + (n_blocks + 24) 2^-23) sum_j p_j |v_ji| of the reference.
//  HMX (proto/htp-flash-attn-hmx.h): Q rounded to fp16 (after its power-of-two scale: relative
//    2^-11) and S stored in fp16 (2^-11) give ds <= 2^-11 scale sum_i |q_i k_i| + 2^-11 |s|; P and
//    each block's P.V stored in fp16 add 2^-11 each. Element i within (2 ds_max + 4 2^-11) sum_j
//    p_j |v_ji|, and the whole result's NMSE (sum (got - want)^2 / sum want^2) below 1e-6.
#include "hexnpu/ggml-types.h"
#include "htp-op-fixture.h"
#include "proto/htp-flash-attn-hmx.h"
#include "proto/htp-flash-attn.h"

#include <algorithm>
#include <limits>

namespace {

using namespace htp_op_fixture;

struct fa_case {
    uint32_t d, n_q, n_head, n_head_kv, n_kv;
    int      mask;        // 0 none, 1 F32, 2 F16
    uint32_t mask_heads;  // mask.ne2: 1 (shared) or n_head
    bool     sinks;
    float    softcap, max_bias;
    bool     f32_kv;
    bool     permuted;    // Q and K/V as llama.cpp's views: tokens' rows of all heads interleaved
    uint32_t threads;
};

std::string describe(const fa_case & c, bool hmx) {
    return std::string(hmx ? "HMX" : "HVX") + " d " + std::to_string(c.d) + " n_q " + std::to_string(c.n_q) +
           " heads " + std::to_string(c.n_head) + "/" + std::to_string(c.n_head_kv) + " n_kv " +
           std::to_string(c.n_kv) + (c.mask == 0 ? " no mask" : c.mask == 1 ? " F32 mask" : " F16 mask") +
           (c.mask_heads > 1 ? " per head" : "") + (c.sinks ? " sinks" : "") +
           (c.softcap > 0 ? " softcap" : "") + (c.max_bias > 0 ? " ALiBi" : "") + (c.f32_kv ? " F32 K/V" : "") +
           (c.permuted ? " permuted" : "") + ", " + std::to_string(c.threads) + " threads";
}

struct fa_operands {
    operand q, k, v, mask, sinks, dst;
    operand k_values, v_values;  // a quantized or BF16 cache's dequantized values (F32), else empty

    const operand & keys() const { return k_values.buf ? k_values : k; }
    const operand & values() const { return v_values.buf ? v_values : v; }
};

fa_operands make_operands(const fa_case & c, uint32_t seed);

// K and V of cache type `type` (llama.cpp's -ctk/-ctv: BF16, Q8_0, Q4_0, ...): the F16 operands'
// values requantized row by row by hexnpu's from_float, their dequantized values kept for the
// reference.
fa_operands make_cache_operands(const fa_case & c, uint32_t type, uint32_t seed) {
    fa_operands   o      = make_operands(c, seed);
    const auto *  traits = ggml_get_type_traits(type);
    const uint32_t bs    = uint32_t(traits->type_size), row = c.d / uint32_t(traits->blck_size) * bs;
    auto requantize = [&](operand & from, operand & values) {
        operand to = make(type, {c.d, c.n_kv, c.n_head_kv, 1}, {bs, row, row * c.n_kv, row * c.n_kv * c.n_head_kv});
        values     = make(0, {c.d, c.n_kv, c.n_head_kv, 1});
        std::vector<float> x(c.d);
        for (uint32_t h = 0; h < c.n_head_kv; ++h) {
            for (uint32_t j = 0; j < c.n_kv; ++j) {
                for (uint32_t i = 0; i < c.d; ++i) {
                    x[i] = from.getf(i, j, h);
                }
                uint8_t * dst = to.data() + to.offset(0, j, h);
                traits->from_float(x.data(), dst, c.d);
                traits->to_float(dst, x.data(), c.d);
                for (uint32_t i = 0; i < c.d; ++i) {
                    values.set<float>(x[i], i, j, h);
                }
            }
        }
        from = std::move(to);
    };
    requantize(o.k, o.k_values);
    requantize(o.v, o.v_values);
    return o;
}

fa_operands make_operands(const fa_case & c, uint32_t seed) {
    std::mt19937                          rng(seed);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    const float                           ninf  = -std::numeric_limits<float>::infinity();
    const uint32_t                        kv_t  = c.f32_kv ? 0 : 1, kv_e = c.f32_kv ? 4 : 2;
    fa_operands                           o;
    if (c.permuted) {  // physically [d, n_head, n_q] and [d, n_head_kv, n_kv]
        o.q = make(0, {c.d, c.n_q, c.n_head, 1}, {4, c.n_head * c.d * 4, c.d * 4, c.n_q * c.n_head * c.d * 4});
        o.k = make(kv_t, {c.d, c.n_kv, c.n_head_kv, 1},
                   {kv_e, c.n_head_kv * c.d * kv_e, c.d * kv_e, c.n_kv * c.n_head_kv * c.d * kv_e}, 0, 256);
        o.v = make(kv_t, {c.d, c.n_kv, c.n_head_kv, 1},
                   {kv_e, c.n_head_kv * c.d * kv_e, c.d * kv_e, c.n_kv * c.n_head_kv * c.d * kv_e});
    } else {
        o.q = make(0, {c.d, c.n_q, c.n_head, 1}, {}, 64);
        o.k = make(kv_t, {c.d, c.n_kv, c.n_head_kv, 1});
        o.v = make(kv_t, {c.d, c.n_kv, c.n_head_kv, 1}, {}, 128);
    }
    o.mask  = make(c.mask == 2 ? 1 : 0, {c.n_kv, c.n_q + 3, std::max(1u, c.mask_heads), 1});
    o.sinks = make(0, {c.n_head, 1, 1, 1});
    o.dst   = make(0, {c.d, c.n_head, c.n_q, 1}, {}, 32);
    for (uint32_t h = 0; h < c.n_head; ++h)
        for (uint32_t r = 0; r < c.n_q; ++r)
            for (uint32_t i = 0; i < c.d; ++i) o.q.setf(6.0f * unit(rng), i, r, h);
    for (uint32_t h = 0; h < c.n_head_kv; ++h)
        for (uint32_t j = 0; j < c.n_kv; ++j)
            for (uint32_t i = 0; i < c.d; ++i) {
                o.k.setf(unit(rng), i, j, h);
                o.v.setf(4.0f * unit(rng), i, j, h);
            }
    // Mask rows by pattern (row r of head slice h): all -inf (a row with nothing to attend to), causal,
    // a window in the middle (the blocks before it all -inf), a window at the start (the rest -inf),
    // random biases with some -inf.
    for (uint32_t h = 0; h < o.mask.t.ne[2]; ++h) {
        for (uint32_t r = 0; r < o.mask.t.ne[1]; ++r) {
            const uint32_t pattern = (r + h) % 6;
            for (uint32_t j = 0; j < o.mask.t.ne[0]; ++j) {
                float m = unit(rng);
                switch (pattern) {
                    case 0: m = ninf; break;
                    case 1: m = j <= r + c.n_kv - c.n_q ? 0.0f : ninf; break;
                    case 2: m = j >= c.n_kv / 2 && j < c.n_kv / 2 + 10 ? m : ninf; break;
                    case 3: m = j < 3 + h % 40 ? m : ninf; break;
                    default: m = rng() % 5 == 0 ? ninf : m; break;
                }
                o.mask.setf(m, j, r, h);
            }
        }
    }
    for (uint32_t h = 0; h < c.n_head; ++h) {
        o.sinks.set<float>(std::uniform_real_distribution<float>(-2.0f, 6.0f)(rng), h);
    }
    return o;
}

struct fa_result {
    size_t bad = 0;
    double err2 = 0, want2 = 0;
};

// The reference and the bounds; hmx picks the HMX bound. Reports (up to 5) elements outside.
fa_result check(const fa_case & c, const fa_operands & o, bool hmx, bool report) {
    const double scale = 1.0 / std::sqrt(double(c.d));
    const uint32_t group = c.n_head / c.n_head_kv, n_blocks = (c.n_kv + 31) / 32;
    fa_result      res;
    std::vector<double> s(c.n_kv), p(c.n_kv), mag(c.n_kv);
    for (uint32_t iq1 = 0; iq1 < c.n_q; ++iq1) {
        for (uint32_t iq2 = 0; iq2 < c.n_head; ++iq2) {
            const uint32_t ik2   = iq2 / group;
            const double   slope = alibi_slope(c.max_bias, c.n_head, iq2);
            double         mx = -INFINITY, ds = 0;
            for (uint32_t j = 0; j < c.n_kv; ++j) {
                const double m = c.mask ? slope * o.mask.getf(j, iq1, iq2 % o.mask.t.ne[2]) : 0.0;
                double       dot = 0, absdot = 0;
                for (uint32_t i = 0; i < c.d; ++i) {
                    const double qk = double(o.q.getf(i, iq1, iq2)) * o.keys().getf(i, j, ik2);
                    dot += qk;
                    absdot += std::fabs(qk);
                }
                double sj = dot * scale;
                if (c.softcap > 0) {
                    sj = c.softcap * std::tanh(sj / c.softcap);
                }
                s[j] = sj + m;
                mx   = std::max(mx, s[j]);
                if (std::isfinite(m)) {
                    const double e = hmx ? std::ldexp(scale * absdot + std::fabs(s[j]), -11)
                                         : (c.d / 32.0 + 8) * std::ldexp(scale * absdot, -23) +
                                               std::ldexp(std::fabs(s[j]) + std::fabs(m) + c.softcap * 4, -22);
                    ds = std::max(ds, e);
                }
            }
            const bool   sink = c.sinks;
            const double sv   = sink ? double(o.sinks.get<float>(iq2)) : -INFINITY;
            if (sink && std::isfinite(mx)) {
                mx = std::max(mx, sv);
            } else if (sink) {
                mx = sv;
            }
            double den = sink ? std::exp(sv - mx) : 0.0;
            for (uint32_t j = 0; j < c.n_kv; ++j) {
                p[j] = std::isinf(s[j]) ? 0.0 : std::exp(s[j] - mx);
                den += p[j];
            }
            const double rel = hmx ? 2 * ds + 4 * std::ldexp(1.0, -11) : 2 * ds + (n_blocks + 24) * std::ldexp(1.0, -23);
            for (uint32_t i = 0; i < c.d; ++i) {
                double want = 0, absw = 0;
                for (uint32_t j = 0; j < c.n_kv; ++j) {
                    const double vj = o.values().getf(i, j, ik2);
                    want += p[j] * vj;
                    absw += p[j] * std::fabs(vj);
                }
                want = den == 0 ? 0.0 : want / den;
                absw = den == 0 ? 0.0 : absw / den;
                const double got   = o.dst.get<float>(i, iq2, iq1);
                const double bound = rel * absw + 1e-30;
                res.err2 += (got - want) * (got - want);
                res.want2 += want * want;
                if (!(std::fabs(got - want) <= bound)) {
                    if (report && ++res.bad <= 5) {
                        ADD_FAILURE() << "query " << iq1 << " head " << iq2 << " element " << i << ": got " << got
                                      << ", want " << want << " (bound " << bound << ")";
                    }
                    res.bad += !report;
                }
            }
        }
    }
    return res;
}

int32_t * fa_params(const fa_case & c, int32_t (&params)[proto::HTP_OP_MAX_PARAMS]) {
    std::fill(std::begin(params), std::end(params), 0);
    params[0] = fbits(float(1.0 / std::sqrt(double(c.d))));
    params[1] = fbits(c.max_bias);
    params[2] = fbits(c.softcap);
    return params;
}

// wrong_kernel: the NPU is given a scale of 1 / d instead of 1 / sqrt(d); the check must fail.
// cache_type: K and V of that type (make_cache_operands), 1 (F16) or 0 (F32, f32_kv) otherwise.
void run_hvx(in_process_session & s, const fa_case & c, uint32_t seed, bool wrong_kernel = false,
             uint32_t cache_type = 1) {
    SCOPED_TRACE(describe(c, false) + ", cache type " + std::to_string(cache_type));
    fa_operands o = cache_type > 1 ? make_cache_operands(c, cache_type, seed) : make_operands(c, seed);
    int32_t     params[proto::HTP_OP_MAX_PARAMS];
    fa_params(c, params);
    if (wrong_kernel) {
        params[0] = fbits(1.0f / float(c.d));
    }
    proto::htp_flash_attn_kparams kp{};
    const proto::htp_verdict      v =
        proto::prepare_flash_attn_kparams(o.q.t, o.k.t, o.v.t, c.mask ? &o.mask.t : nullptr, c.sinks ? &o.sinks.t : nullptr,
                                          o.dst.t, params, c.threads, s.platform().table().vtcm_size, &kp);
    ASSERT_TRUE(v) << v.why;
    ASSERT_EQ(run_op(s, proto::HTP_OP_FLASH_ATTN_EXT,
                     {&o.q, &o.k, &o.v, c.mask ? &o.mask : nullptr, c.sinks ? &o.sinks : nullptr}, o.dst, kp, params),
              proto::HTP_STATUS_OK)
        << s.platform().last_violation();
    EXPECT_EQ(s.platform().last_violation(), "");
    EXPECT_TRUE(untouched_outside(o.dst));
    const fa_result r = check(c, o, false, !wrong_kernel);
    if (wrong_kernel) {
        EXPECT_GT(r.bad, 0u) << "the reference accepts a result of the wrong scale";
    }
}

fa_result run_hmx(in_process_session & s, const fa_case & c, uint32_t seed, bool wrong_kernel = false) {
    SCOPED_TRACE(describe(c, true));
    fa_operands o = make_operands(c, seed);
    int32_t     params[proto::HTP_OP_MAX_PARAMS];
    fa_params(c, params);
    if (wrong_kernel) {
        params[0] = fbits(1.0f / float(c.d));
    }
    proto::htp_fa_hmx_kparams kp{};
    const proto::htp_verdict  v = proto::prepare_flash_attn_hmx_kparams(
        o.q.t, o.k.t, o.v.t, c.mask ? &o.mask.t : nullptr, c.sinks ? &o.sinks.t : nullptr, o.dst.t, params, c.threads,
        s.platform().table().vtcm_size, &kp);
    EXPECT_TRUE(v) << v.why;
    if (!v) {
        return {};
    }
    const uint32_t status = run_op(s, proto::HTP_OP_FLASH_ATTN_EXT_HMX,
                                   {&o.q, &o.k, &o.v, c.mask ? &o.mask : nullptr, c.sinks ? &o.sinks : nullptr}, o.dst,
                                   kp, params);
    EXPECT_EQ(status, proto::HTP_STATUS_OK) << s.platform().last_violation();
    EXPECT_EQ(s.platform().last_violation(), "");
    EXPECT_TRUE(untouched_outside(o.dst));
    const fa_result r = check(c, o, true, !wrong_kernel);
    if (!wrong_kernel) {
        EXPECT_LE(r.err2, 1e-6 * r.want2) << "NMSE " << r.err2 / r.want2;
    } else {
        EXPECT_GT(r.bad, 0u) << "the reference accepts a result of the wrong scale";
    }
    return r;
}

TEST(HtpFlashAttn, HvxHeadSizesGqaMasksAndSinks) {
    in_process_session s(config(), 4);
    const fa_case      cases[] = {
        {64, 1, 8, 2, 77, 2, 1, false, 0.0f, 0.0f, false, false, 4},     // decode, GQA 4, F16 mask
        {128, 7, 4, 4, 100, 1, 4, true, 0.0f, 0.0f, false, false, 3},    // F32 per-head mask, sinks
        {256, 3, 6, 2, 40, 0, 1, false, 0.0f, 0.0f, false, false, 1},    // d 256, no mask, 1 thread
        {128, 5, 8, 2, 70, 2, 1, true, 0.0f, 0.0f, false, true, 4},      // llama.cpp's permuted views
        {512, 2, 2, 1, 33, 2, 1, false, 0.0f, 0.0f, false, false, 2},    // the largest head size
        {64, 1, 32, 2, 5, 2, 1, true, 0.0f, 0.0f, false, false, 4},      // 5 keys, GQA 16 (two items a group)
        {128, 1, 4, 1, 1, 0, 1, true, 0.0f, 0.0f, false, false, 2},      // one key
        // Head sizes that are no multiple of 64 (vision encoders: 40, 72, 80; 100 not even of 32):
        // computed in 64-element chunks whose padding must stay zero.
        {40, 3, 4, 2, 50, 2, 1, false, 0.0f, 0.0f, false, false, 2},
        {72, 2, 4, 4, 70, 1, 4, true, 0.0f, 0.0f, false, true, 3},
        {80, 1, 8, 2, 33, 2, 1, false, 0.0f, 0.0f, false, false, 4},
        {100, 4, 2, 1, 40, 2, 1, true, 0.0f, 0.0f, true, false, 2},      // F32 K/V
    };
    uint32_t seed = 1;
    for (const fa_case & c : cases) {
        run_hvx(s, c, seed++);
    }
}

TEST(HtpFlashAttn, HvxSoftcapAlibiAndF32KV) {
    in_process_session s(config(), 4);
    const fa_case      cases[] = {
        {128, 4, 4, 2, 65, 2, 1, false, 1.5f, 0.0f, false, false, 4},    // softcap below the logits
        {64, 3, 6, 3, 50, 1, 6, true, 0.0f, 8.0f, false, false, 2},      // ALiBi (6 heads: m1 too), sinks
        {128, 2, 4, 1, 64, 2, 1, false, 0.0f, 0.0f, true, false, 2},     // F32 K and V, GQA 4
        {64, 5, 4, 2, 90, 1, 4, true, 2.0f, 4.0f, true, true, 3},        // all of it, F32 K/V, permuted
    };
    uint32_t seed = 11;
    for (const fa_case & c : cases) {
        run_hvx(s, c, seed++);
    }
}

// Quantized and BF16 caches: each block's K/V rows dequantized in VTCM after their DMA.
TEST(HtpFlashAttn, HvxQuantizedAndBf16Caches) {
    in_process_session s(config(), 4);
    const fa_case      cases[] = {
        {128, 1, 8, 2, 77, 2, 8, false, 0.0f, 0.0f, false, false, 4},  // decode, GQA 4, a mask per head
        {64, 5, 4, 4, 100, 1, 4, true, 0.0f, 0.0f, false, true, 3},    // permuted views, sinks, per-head mask
        {256, 2, 4, 1, 40, 2, 1, false, 0.0f, 0.0f, false, false, 1},  // Gemma 3's head size, 1 thread
        {96, 3, 4, 2, 45, 2, 1, true, 0.0f, 0.0f, false, false, 2},    // 3 blocks a row: half a chunk padded
    };
    uint32_t seed = 41;
    for (const uint32_t type : {8u, 2u, 3u, 6u, 7u, 20u, 30u}) {  // Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, BF16
        for (const fa_case & c : cases) {
            run_hvx(s, c, seed++, false, type);
        }
    }
    run_hvx(s, cases[1], 99, true, 8);  // the reference still catches a wrong scale
}

// More mask slices than the kernel's memo of last unmasked blocks (32): heads 0 and 32 share a memo
// entry but not their masks (pattern 3's windows differ per head); masks shared by some heads.
TEST(HtpFlashAttn, HvxManyMaskSlices) {
    in_process_session s(config(), 4);
    run_hvx(s, {64, 2, 40, 40, 100, 2, 40, false, 0.0f, 0.0f, false, false, 4}, 21);
    run_hvx(s, {64, 3, 40, 5, 130, 1, 40, true, 0.0f, 0.0f, false, false, 2}, 22);
    run_hvx(s, {64, 3, 8, 2, 64, 2, 2, false, 0.0f, 0.0f, false, false, 4}, 23);  // a mask per two heads: h % 2
    run_hmx(s, {64, 40, 8, 4, 64, 1, 2, true, 0.0f, 0.0f, false, false, 4}, 24);
}

// A small VTCM: the plan gives up slots, then heads per item, then threads; the result is the same.
TEST(HtpFlashAttn, HvxSmallVtcmAndQf32Arch) {
    const fa_case c{256, 4, 8, 2, 200, 2, 1, true, 0.0f, 0.0f, false, false, 4};
    fa_operands   o = make_operands(c, 31);
    int32_t       params[proto::HTP_OP_MAX_PARAMS];
    fa_params(c, params);
    proto::htp_flash_attn_kparams roomy{}, tight{};
    ASSERT_TRUE(proto::prepare_flash_attn_kparams(o.q.t, o.k.t, o.v.t, &o.mask.t, &o.sinks.t, o.dst.t, params, 4,
                                                  8u << 20, &roomy));
    ASSERT_TRUE(proto::prepare_flash_attn_kparams(o.q.t, o.k.t, o.v.t, &o.mask.t, &o.sinks.t, o.dst.t, params, 4,
                                                  160u << 10, &tight));
    EXPECT_LE(tight.vtcm_size, 160u << 10);
    EXPECT_LT(tight.n_slots * tight.heads * tight.n_threads, roomy.n_slots * roomy.heads * roomy.n_threads);
    in_process_session small(config(79, 160u << 10), 4);
    run_hvx(small, c, 31);
    in_process_session s73(config(73), 4);
    run_hvx(s73, {128, 3, 4, 2, 70, 2, 1, true, 1.5f, 0.0f, false, true, 4}, 32);
    run_hvx(s73, {64, 2, 6, 3, 45, 1, 6, false, 0.0f, 8.0f, true, false, 2}, 33);
}

TEST(HtpFlashAttn, HmxHeadSizesGqaMasksAndSinks) {
    in_process_session s(config(), 4);
    const fa_case      cases[] = {
        {64, 40, 4, 2, 100, 2, 1, false, 0.0f, 0.0f, false, false, 4},   // 40 rows: a partial query block
        {128, 33, 2, 1, 64, 0, 1, true, 0.0f, 0.0f, false, false, 1},    // no mask, sinks, 1 thread
        {256, 32, 2, 2, 70, 1, 2, false, 0.0f, 0.0f, false, false, 2},   // d 256, F32 per-head mask
        {128, 70, 8, 2, 150, 2, 1, true, 0.0f, 0.0f, false, true, 4},    // permuted views, 3 query blocks
        {64, 9, 3, 3, 40, 2, 3, true, 0.0f, 0.0f, false, false, 3},      // 9 rows
        {64, 20, 16, 1, 20, 2, 1, false, 0.0f, 0.0f, false, false, 4},   // 20 keys, GQA 16
        {256, 64, 4, 1, 600, 2, 1, true, 0.0f, 0.0f, false, true, 4},    // 19 key blocks, d 256
    };
    uint32_t seed = 41;
    for (const fa_case & c : cases) {
        run_hmx(s, c, seed++);
    }
}

// A VTCM that holds two items: groups of two, the K/V blocks landed once per group; still right.
TEST(HtpFlashAttn, HmxSmallVtcm) {
    const uint32_t vtcm = uint32_t(proto::htp_fa_hmx_vtcm_size(2, 128)) + 4096;
    const fa_case  c{128, 64, 4, 2, 100, 2, 1, true, 0.0f, 0.0f, false, false, 4};
    fa_operands    o = make_operands(c, 51);
    int32_t        params[proto::HTP_OP_MAX_PARAMS];
    fa_params(c, params);
    proto::htp_fa_hmx_kparams kp{};
    ASSERT_TRUE(proto::prepare_flash_attn_hmx_kparams(o.q.t, o.k.t, o.v.t, &o.mask.t, &o.sinks.t, o.dst.t, params, 4,
                                                      vtcm, &kp));
    EXPECT_EQ(kp.group_items, 2u);
    EXPECT_EQ(kp.n_items, 8u);
    vnpu::platform_config cfg = config(79, 0);
    cfg.vtcm_size             = std::max(vtcm, 256u << 10);
    in_process_session s(cfg, 4);
    run_hmx(s, c, 51);
}

// The HMX kernel refuses what it does not do (ALiBi, softcap, head sizes past 256).
TEST(HtpFlashAttn, HmxRefusesAlibiSoftcapAndLargeHeads) {
    for (const fa_case & c : {fa_case{128, 32, 2, 1, 64, 2, 1, false, 0.0f, 8.0f, false, false, 2},
                              fa_case{128, 32, 2, 1, 64, 2, 1, false, 30.0f, 0.0f, false, false, 2},
                              fa_case{512, 32, 2, 1, 64, 2, 1, false, 0.0f, 0.0f, false, false, 2},
                              fa_case{128, 32, 2, 1, 64, 2, 1, false, 0.0f, 0.0f, true, false, 2}}) {
        fa_operands o = make_operands(c, 1);
        int32_t     params[proto::HTP_OP_MAX_PARAMS];
        fa_params(c, params);
        proto::htp_fa_hmx_kparams kp{};
        EXPECT_FALSE(proto::prepare_flash_attn_hmx_kparams(o.q.t, o.k.t, o.v.t, &o.mask.t, nullptr, o.dst.t, params,
                                                           2, 8u << 20, &kp))
            << describe(c, true);
    }
}

// The references can fail: a kernel given the wrong scale is caught on both paths.
TEST(HtpFlashAttn, TheReferenceCatchesAWrongScale) {
    in_process_session s(config(), 2);
    run_hvx(s, {64, 2, 4, 2, 40, 2, 1, false, 0.0f, 0.0f, false, false, 2}, 61, true);
    run_hmx(s, {64, 32, 2, 1, 40, 2, 1, false, 0.0f, 0.0f, false, false, 2}, 62, true);
}

} // namespace
