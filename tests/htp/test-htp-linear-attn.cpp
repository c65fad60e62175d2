// NPU-level tests of GATED_DELTA_NET (htp/ops/gated-delta-net-ops.cpp) against a float64 reference
// written from GGML's text (decay, delta from the decayed state, rank-1 update, output from the
// updated state times 1/sqrt(S); the state stored as M[j S + i] = S[i][j]; K kept states newest
// first, slots past the tokens not written): the prompt path (the state turned into rows per key,
// token blocks through two slots) and the decode path (GGML's layout, rows summed by the shuffle
// network), KDA, shared key heads and sequences, strided q/k rows, 1-4 threads, small VTCM (fewer
// tokens per block), strict DMA on; and the guard refusing a state or kparams that do not fit. The
// HMX kernel for prompts (htp/ops/gated-delta-net-hmx-ops.cpp) against the same reference: chunks
// with a partial last one, groups of items over several rounds and across a VTCM bank, a state and
// values far beyond fp16's range, S 32 to 256.
#include "htp-op-fixture.h"

#include "proto/htp-gdn-hmx.h"
#include "proto/htp-linear-attn.h"

using namespace htp_op_fixture;

namespace {

struct gdn_case {
    uint32_t S, Hk, Hv, T, NS, qk_seqs, K;
    bool     kda;
    uint32_t threads, vtcm, seed;
    bool     hmx = false;  // the HMX kernel (GATED_DELTA_NET_HMX)
    float    amp = 1.0f;   // v and the state times this
};

uint32_t opcode_of(const gdn_case & c) {
    return c.hmx ? proto::HTP_OP_GATED_DELTA_NET_HMX : proto::HTP_OP_GATED_DELTA_NET;
}

struct gdn_operands {
    operand q, k, v, g, beta, state, dst;
};

gdn_operands make_gdn(const gdn_case & c) {
    gdn_operands o;
    o.q     = make(0, {c.S, c.Hk, c.T, c.qk_seqs}, {}, 12);  // rows apart, not packed
    o.k     = make(0, {c.S, c.Hk, c.T, c.qk_seqs}, {}, 4);
    o.v     = make(0, {c.S, c.Hv, c.T, c.NS});
    o.g     = make(0, {c.kda ? c.S : 1, c.Hv, c.T, c.NS});
    o.beta  = make(0, {1, c.Hv, c.T, c.NS});
    o.state = make(0, {c.S, c.S, c.Hv, c.NS});
    o.dst   = make(0, {c.S * c.Hv, c.T * c.NS + c.K * c.S * c.NS, 1, 1});
    std::mt19937                          rng(c.seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f), gd(-2.0f, -0.01f), bd(0.0f, 1.0f);
    for (operand * qk : {&o.q, &o.k}) {  // L2-normalised rows, as the models give them
        for (uint32_t s = 0; s < c.qk_seqs; ++s) {
            for (uint32_t t = 0; t < c.T; ++t) {
                for (uint32_t h = 0; h < c.Hk; ++h) {
                    std::vector<float> x(c.S);
                    double             n = 0;
                    for (float & f : x) {
                        f = u(rng);
                        n += double(f) * f;
                    }
                    for (uint32_t i = 0; i < c.S; ++i) {
                        qk->set<float>(float(x[i] / std::sqrt(n)), i, h, t, s);
                    }
                }
            }
        }
    }
    for (uint32_t s = 0; s < c.NS; ++s) {
        for (uint32_t t = 0; t < c.T; ++t) {
            for (uint32_t h = 0; h < c.Hv; ++h) {
                for (uint32_t i = 0; i < c.S; ++i) {
                    o.v.set<float>(c.amp * u(rng), i, h, t, s);
                }
                for (uint32_t i = 0; i < o.g.t.ne[0]; ++i) {
                    o.g.set<float>(gd(rng), i, h, t, s);
                }
                o.beta.set<float>(bd(rng), 0, h, t, s);
            }
        }
        for (uint32_t h = 0; h < c.Hv; ++h) {
            for (uint32_t j = 0; j < c.S; ++j) {
                for (uint32_t i = 0; i < c.S; ++i) {
                    o.state.set<float>(c.amp * u(rng), i, j, h, s);
                }
            }
        }
    }
    return o;
}

// The host's verdict on the operands for c's kernel (its kparams in words).
proto::htp_verdict host_verdict(const gdn_operands & o, const gdn_case & c, const int32_t * params,
                                int32_t words[proto::HTP_OP_MAX_KERN_PARAMS]) {
    proto::htp_op_args a{};
    a.opcode = opcode_of(c);
    for (const auto & [i, t] : {std::pair{0, &o.q}, {1, &o.k}, {2, &o.v}, {3, &o.g}, {4, &o.beta}, {5, &o.state}}) {
        a.src[i] = &t->t;
    }
    a.dst       = &o.dst.t;
    a.params    = params;
    a.n_threads = c.threads;
    a.vtcm_size = c.vtcm;
    return c.hmx ? proto::prepare_gdn_hmx_op(a, words) : proto::prepare_gdn_op(a, words);
}

template <typename Kparams = proto::htp_gdn_kparams>
Kparams prepare(const gdn_operands & o, const gdn_case & c, const int32_t * params) {
    int32_t                  words[proto::HTP_OP_MAX_KERN_PARAMS] = {};
    const proto::htp_verdict v                                     = host_verdict(o, c, params, words);
    EXPECT_TRUE(v) << (v.why ? v.why : "");
    Kparams kp{};
    std::memcpy(&kp, words, sizeof kp);
    return kp;
}

void check_gdn(in_process_session & s, const gdn_case & c) {
    SCOPED_TRACE("S " + std::to_string(c.S) + " Hk " + std::to_string(c.Hk) + " Hv " + std::to_string(c.Hv) + " T " +
                 std::to_string(c.T) + " seqs " + std::to_string(c.NS) + " K " + std::to_string(c.K) +
                 (c.kda ? " kda" : "") + " threads " + std::to_string(c.threads) + (c.hmx ? " HMX" : " HVX"));
    gdn_operands o                               = make_gdn(c);
    int32_t      params[proto::HTP_OP_MAX_PARAMS] = {int32_t(c.K)};
    const uint32_t status =
        c.hmx ? run_op(s, opcode_of(c), {&o.q, &o.k, &o.v, &o.g, &o.beta, &o.state}, o.dst,
                       prepare<proto::htp_gdn_hmx_kparams>(o, c, params), params)
              : run_op(s, opcode_of(c), {&o.q, &o.k, &o.v, &o.g, &o.beta, &o.state}, o.dst, prepare(o, c, params), params);
    ASSERT_EQ(status, proto::HTP_STATUS_OK);
    const uint32_t S = c.S, Hv = c.Hv, T = c.T, NS = c.NS;
    const double   scale = 1.0 / std::sqrt(double(S));
    double         err = 0, ref = 0;
    for (uint32_t sq = 0; sq < NS; ++sq) {
        for (uint32_t h = 0; h < Hv; ++h) {
            const uint32_t hk = h % c.Hk, sk = sq / (NS / c.qk_seqs);  // tiled heads, blocked sequences
            std::vector<double> St(size_t(S) * S);                    // St[i * S + j]: key i, value j
            for (uint32_t j = 0; j < S; ++j) {
                for (uint32_t i = 0; i < S; ++i) {
                    St[i * S + j] = o.state.get<float>(i, j, h, sq);
                }
            }
            for (uint32_t t = 0; t < T; ++t) {
                for (uint32_t i = 0; i < S; ++i) {
                    const double e = std::exp(double(o.g.get<float>(c.kda ? i : 0, h, t, sq)));
                    for (uint32_t j = 0; j < S; ++j) {
                        St[i * S + j] *= e;
                    }
                }
                const double beta = o.beta.get<float>(0, h, t, sq);
                for (uint32_t j = 0; j < S; ++j) {
                    double kn = 0;
                    for (uint32_t i = 0; i < S; ++i) {
                        kn += St[i * S + j] * o.k.get<float>(i, hk, t, sk);
                    }
                    const double d = beta * (o.v.get<float>(j, h, t, sq) - kn);
                    for (uint32_t i = 0; i < S; ++i) {
                        St[i * S + j] += o.k.get<float>(i, hk, t, sk) * d;
                    }
                }
                for (uint32_t j = 0; j < S; ++j) {
                    double out = 0;
                    for (uint32_t i = 0; i < S; ++i) {
                        out += St[i * S + j] * o.q.get<float>(i, hk, t, sk);
                    }
                    out *= scale;
                    const double got = o.dst.get<float>(j + S * h, t + T * sq);
                    err += (got - out) * (got - out);
                    ref += out * out;
                }
                const uint32_t slot = T - 1 - t;  // the state after token t, when kept
                if (slot < c.K) {
                    for (uint32_t j = 0; j < S; ++j) {
                        for (uint32_t i = 0; i < S; ++i) {
                            const uint64_t at  = uint64_t(slot) * S * S * Hv * NS + (uint64_t(sq) * Hv + h) * S * S + j * S + i;
                            const double   got = o.dst.get<float>(uint32_t(at % (S * Hv)), T * NS + uint32_t(at / (S * Hv)));
                            err += (got - St[i * S + j]) * (got - St[i * S + j]);
                            ref += St[i * S + j] * St[i * S + j];
                        }
                    }
                }
            }
        }
    }
    // fp32 sums in another order than float64's (the HMX kernel's products exact to 2^-22: its
    // header): both measure ~1e-14 .. 1e-12.
    EXPECT_LT(err / ref, 1e-10) << "NMSE over outputs and kept states";
    // Slots past the tokens are the caller's: not written.
    for (uint32_t slot = T; slot < c.K; ++slot) {
        const uint64_t first = (uint64_t(T) * NS + uint64_t(slot) * S * NS) * S * Hv * 4;
        for (uint64_t b = 0; b < uint64_t(S) * S * Hv * NS * 4; ++b) {
            ASSERT_EQ(o.dst.data()[first + b], SENTINEL) << "slot " << slot << " byte " << b;
        }
    }
}

} // namespace

TEST(HtpGatedDeltaNet, PromptAndDecodePathsMatchTheRecurrence) {
    in_process_session s(config(), 4);
    const gdn_case cases[] = {
        // S, Hk, Hv, T, NS, qk_seqs, K, kda, threads, vtcm, seed
        {64, 2, 4, 1, 2, 2, 1, false, 4, 1u << 22, 1},    // decode: GGML's layout, row sums
        {32, 2, 4, 40, 1, 1, 1, false, 2, 1u << 22, 2},   // prompt: turned state, two token blocks
        {32, 1, 2, 40, 1, 1, 3, false, 3, 1u << 18, 3},   // small VTCM: smaller blocks; kept states end them
        {32, 2, 2, 3, 2, 1, 5, false, 2, 1u << 22, 4},    // K > T: slots 3, 4 left alone; q/k shared by both sequences
        {32, 2, 2, 2, 1, 1, 1, true, 1, 1u << 22, 5},     // KDA, decode path
        {32, 2, 2, 12, 1, 1, 2, true, 2, 1u << 22, 6},    // KDA, prompt path
        {16, 2, 2, 1, 1, 1, 1, false, 2, 1u << 22, 7},    // S below a vector: the turned path
        {128, 4, 4, 1, 1, 1, 1, false, 4, 1u << 22, 8},   // Qwen3.5's head size
    };
    for (const gdn_case & c : cases) {
        check_gdn(s, c);
    }
}

TEST(HtpGatedDeltaNet, HmxChunkedPathMatchesTheRecurrence) {
    in_process_session s(config(), 4);
    const gdn_case cases[] = {
        // S, Hk, Hv, T, NS, qk_seqs, K, kda, threads, vtcm, seed, hmx, amp
        {64, 2, 4, 70, 2, 2, 1, false, 4, 1u << 22, 11, true},          // 3 chunks, the last of 6 tokens
        {32, 1, 2, 32, 3, 1, 1, false, 2, 1u << 22, 12, true},          // one whole chunk; q/k shared by 3 sequences
        {128, 4, 4, 40, 1, 1, 1, false, 3, 1u << 22, 13, true},         // Qwen3.5's head size
        {32, 2, 4, 33, 1, 1, 1, false, 2, 160u << 10, 14, true},        // small VTCM: groups of 1, 4 rounds
        {64, 1, 2, 64, 1, 1, 1, false, 2, 1u << 22, 15, true, 3.0e4f},  // values and state past fp16's range
        {256, 1, 1, 32, 1, 1, 1, false, 1, 1u << 22, 16, true},         // the largest head size
    };
    for (const gdn_case & c : cases) {
        check_gdn(s, c);
    }
}

TEST(HtpGatedDeltaNet, HmxItemsDoNotStraddleAVtcmBank) {
    // 14 items of S = 128 (~330 KiB each) pass 4 MiB: the one that would straddle starts at it.
    const gdn_case c{128, 14, 14, 32, 1, 1, 1, false, 4, 8u << 20, 17, true};
    const auto     l   = proto::htp_gdn_hmx_item(128);
    uint32_t       off = proto::HTP_GDN_HMX_HEADER, moved = 0;
    for (uint32_t n = 0; n < 14; ++n, off += l.bytes) {
        const uint32_t at = proto::htp_gdn_hmx_place(off, l);
        moved += at != off;
        EXPECT_EQ(at / (4u << 20), (at + l.n - 1) / (4u << 20)) << "item " << n;
        off = at;
    }
    EXPECT_EQ(moved, 1u);
    in_process_session s(config(), 4);
    check_gdn(s, c);
}

TEST(HtpGatedDeltaNet, AStateOrKparamsThatDoNotFitAreRefusedUnwritten) {
    in_process_session s(config(), 4);
    const gdn_case     c{32, 2, 2, 4, 1, 1, 1, false, 2, 1u << 22, 9};
    int32_t            params[proto::HTP_OP_MAX_PARAMS] = {1};
    {
        gdn_operands                 o  = make_gdn(c);
        const proto::htp_gdn_kparams kp = prepare(o, c, params);
        for (auto corrupt : {+[](proto::htp_gdn_kparams & k) { k.state_off += 4; },
                             +[](proto::htp_gdn_kparams & k) { k.S = 64; },
                             +[](proto::htp_gdn_kparams & k) { k.by_rows = 1; k.S = 32; k.tb = 0; },
                             +[](proto::htp_gdn_kparams & k) { k.heads.div_hq = proto::init_fastdiv(3); }}) {
            proto::htp_gdn_kparams bad = kp;
            corrupt(bad);
            EXPECT_EQ(run_op(s, proto::HTP_OP_GATED_DELTA_NET, {&o.q, &o.k, &o.v, &o.g, &o.beta, &o.state}, o.dst, bad,
                             params),
                      proto::HTP_STATUS_INVAL_PARAMS);
            for (uint64_t b = 0; b < o.dst.t.size; ++b) {
                ASSERT_EQ(o.dst.data()[b], SENTINEL) << "byte " << b;
            }
        }
    }
    // A state of another head count than v's: the layout check refuses it (host and NPU alike).
    gdn_operands o = make_gdn(c);
    o.state        = make(0, {c.S, c.S, c.Hv + 1, c.NS});
    int32_t words[proto::HTP_OP_MAX_KERN_PARAMS] = {};
    EXPECT_FALSE(host_verdict(o, c, params, words));
    gdn_operands good = make_gdn(c);
    const proto::htp_gdn_kparams kp = prepare(good, c, params);
    EXPECT_EQ(run_op(s, proto::HTP_OP_GATED_DELTA_NET, {&o.q, &o.k, &o.v, &o.g, &o.beta, &o.state}, o.dst, kp, params),
              proto::HTP_STATUS_INVAL_PARAMS);
    for (uint64_t b = 0; b < o.dst.t.size; ++b) {
        ASSERT_EQ(o.dst.data()[b], SENTINEL) << "byte " << b;
    }
}

TEST(HtpGatedDeltaNet, HmxKparamsThatDoNotFitAreRefusedUnwritten) {
    in_process_session s(config(), 4);
    const gdn_case     c{32, 2, 2, 40, 1, 1, 1, false, 2, 1u << 22, 18, true};
    int32_t            params[proto::HTP_OP_MAX_PARAMS] = {1};
    gdn_operands       o  = make_gdn(c);
    const auto         kp = prepare<proto::htp_gdn_hmx_kparams>(o, c, params);
    for (auto corrupt : {+[](proto::htp_gdn_hmx_kparams & k) { k.n_chunks += 1; },
                         +[](proto::htp_gdn_hmx_kparams & k) { k.group_items += 1; },
                         +[](proto::htp_gdn_hmx_kparams & k) { k.S = 64; },
                         +[](proto::htp_gdn_hmx_kparams & k) { k.state_off -= 4; }}) {
        proto::htp_gdn_hmx_kparams bad = kp;
        corrupt(bad);
        EXPECT_EQ(run_op(s, proto::HTP_OP_GATED_DELTA_NET_HMX, {&o.q, &o.k, &o.v, &o.g, &o.beta, &o.state}, o.dst, bad,
                         params),
                  proto::HTP_STATUS_INVAL_PARAMS);
        for (uint64_t b = 0; b < o.dst.t.size; ++b) {
            ASSERT_EQ(o.dst.data()[b], SENTINEL) << "byte " << b;
        }
    }
    // What the HMX kernel does not take, the host refuses (the HVX kernel then runs it).
    for (auto change : {+[](gdn_case & k) { k.K = 2; }, +[](gdn_case & k) { k.kda = true; },
                        +[](gdn_case & k) { k.S = 48; }, +[](gdn_case & k) { k.T = 31; }}) {
        gdn_case d = c;
        change(d);
        const gdn_operands od                               = make_gdn(d);
        const int32_t      p2[proto::HTP_OP_MAX_PARAMS]    = {int32_t(d.K)};
        int32_t            words[proto::HTP_OP_MAX_KERN_PARAMS] = {};
        EXPECT_FALSE(host_verdict(od, d, p2, words)) << "K " << d.K << " kda " << d.kda << " S " << d.S << " T " << d.T;
    }
}
