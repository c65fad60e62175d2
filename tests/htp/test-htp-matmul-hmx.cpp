// MUL_MAT_HMX on the in-process virtual NPU (strict DMA and HMX rules on) against a float64 model
// built from the formulas, not the kernel: weights = fp16 rounding of the scalar tile
// dequantization, activations = fp16 rounding of x 2^-e (e: the row's power-of-two scale,
// proto/htp-matmul-hmx.h) times 2^e. What separates kernel and model is then the unit's fp32
// accumulation (k rounded sums: at most k 2^-24 sum |a w|) and the output tile's one fp16 rounding
// (relative 2^-11, the column scale being a power of two), so every element must lie within
// 2^-11 |want| + k 2^-24 sum |a w| (+ the fp16 subnormal spacing 2^-24 of the scaled output).
#include "core/fp16.h"
#include "hexagon/repack.h"
#include "hexnpu/ggml-types.h"
#include "proto/htp-matmul-hmx.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-status.h"
#include "vnpu/platform/in-process-session.h"
#include "vnpu/platform/shared-buffer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace hexnpu;
using vnpu::batch_builder;
using vnpu::in_process_session;
using vnpu::packed_batch;
using vnpu::shared_buffer;

vnpu::platform_config config(uint32_t vtcm = 8u << 20) {
    vnpu::platform_config c;
    c.vtcm_size    = vtcm;
    c.host_threads = 4;
    c.log          = [](int, const std::string &) {};
    return c;
}

struct hmx_case {
    ggml_type type;
    uint32_t  k, n, m;          // weight rows n, activation rows m
    uint32_t  ne2 = 1, ne3 = 1; // activation slices
    uint32_t  w2 = 1, w3 = 1;   // weight matrices over dims 2 and 3
    bool      f16_act = false;
    float     act_mag = 1.0f;   // activations scaled by this (1e5: beyond fp16)
    float     w_mag   = 1.0f;   // weights scaled by this
    uint32_t  act_pad = 0, dst_pad = 0;
    bool      flat    = false;  // flat weights (a plain buffer) instead of tiled
    bool      one_act_buffer = false;  // the plan a VTCM too small for two row-pair stagings gets
};

struct hmx_run {
    std::vector<double> want, bound;  // per element: the model and its error bound
    std::vector<float>  got;
    uint32_t            status;
};

float fp16_round(float x) { return fp16_to_fp32(fp32_to_fp16(x)); }

hmx_run run_case(in_process_session & s, const hmx_case & c, uint32_t n_threads, uint32_t seed) {
    std::mt19937                          rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const auto *                          traits    = ggml_get_type_traits(c.type);
    const size_t                          row_bytes = size_t(c.k) / traits->blck_size * traits->type_size;
    const uint32_t                        n_w       = c.w2 * c.w3;
    std::vector<float>                    wf(size_t(c.k) * c.n * n_w);
    for (float & v : wf) {
        v = dist(rng) * c.w_mag;
    }
    std::vector<uint8_t> flat(row_bytes * c.n * n_w);
    traits->from_float_ref(wf.data(), flat.data(), int64_t(wf.size()));
    const int64_t        ne[4] = {c.k, c.n, c.w2, c.w3};
    std::vector<uint8_t> tiled = flat;
    if (c.flat) {
        traits->to_float_ref(flat.data(), wf.data(), int64_t(wf.size()));
    } else {
        tiled.assign(hexagon::tiled_nbytes(c.type, ne), 0);
        EXPECT_TRUE(hexagon::repack_tensor(c.type, ne, flat.data(), tiled.data()).ok());
        hexagon::dequantize_tiled_rows(c.type, ne, tiled.data(), 0, int64_t(c.n) * n_w, wf.data());
    }

    const uint32_t a_size = c.f16_act ? 2 : 4;
    const uint32_t a_nb1 = c.k * a_size + c.act_pad, d_nb1 = c.n * 4 + c.dst_pad;
    const uint32_t rows  = c.m * c.ne2 * c.ne3;
    shared_buffer  wbuf(tiled.size()), abuf(size_t(a_nb1) * rows), dbuf(size_t(d_nb1) * rows);
    std::memcpy(wbuf.data(), tiled.data(), tiled.size());
    std::memset(dbuf.data(), 0x5A, dbuf.size());
    std::vector<float> act(size_t(c.k) * rows);
    for (uint32_t r = 0; r < rows; ++r) {
        for (uint32_t i = 0; i < c.k; ++i) {
            // Rows of different magnitudes, and blocks of different magnitudes within a row.
            float x = dist(rng) * c.act_mag * std::ldexp(1.0f, int(i / 32 % 5) - 2 + int(r % 7) - 3);
            if (c.f16_act) {
                x = fp16_round(x);
            }
            act[size_t(r) * c.k + i] = x;
            uint8_t * at = abuf.data() + size_t(r) * a_nb1 + size_t(i) * a_size;
            if (c.f16_act) {
                const uint16_t h = fp32_to_fp16(x);
                std::memcpy(at, &h, 2);
            } else {
                std::memcpy(at, &x, 4);
            }
        }
    }

    proto::htp_tensor w{}, a{}, d{};
    w.type  = uint32_t(c.type);
    w.flags = c.flat ? 0 : proto::HTP_TENSOR_TILED;
    w.size  = tiled.size();
    w.ne[0] = c.k, w.ne[1] = c.n, w.ne[2] = c.w2, w.ne[3] = c.w3;
    w.nb[0] = uint32_t(traits->type_size), w.nb[1] = uint32_t(row_bytes), w.nb[2] = uint32_t(row_bytes * c.n);
    w.nb[3] = w.nb[2] * c.w2;
    a.type  = c.f16_act ? 1 : 0;
    a.flags = d.flags = proto::HTP_TENSOR_COMPUTE;
    a.ne[0] = c.k, a.ne[1] = c.m, a.ne[2] = c.ne2, a.ne[3] = c.ne3;
    a.nb[0] = a_size, a.nb[1] = a_nb1, a.nb[2] = a_nb1 * c.m, a.nb[3] = a_nb1 * c.m * c.ne2;
    a.size  = abuf.size();
    d.ne[0] = c.n, d.ne[1] = c.m, d.ne[2] = c.ne2, d.ne[3] = c.ne3;
    d.nb[0] = 4, d.nb[1] = d_nb1, d.nb[2] = d_nb1 * c.m, d.nb[3] = d_nb1 * c.m * c.ne2;
    d.size  = dbuf.size();

    proto::htp_matmul_hmx_kparams kp{};
    EXPECT_TRUE(proto::prepare_matmul_hmx_kparams(w, a, d, n_threads, s.platform().table().vtcm_size, &kp));
    if (c.one_act_buffer) {
        kp.act_buffers = 1;
    }
    batch_builder b;
    const shared_buffer * bufs[] = {&wbuf, &abuf, &dbuf};
    proto::htp_tensor *   ts[]   = {&w, &a, &d};
    for (int i = 0; i < 3; ++i) {
        ts[i]->bi = b.add_buffer(*bufs[i], false);
        b.add_tensor(*ts[i]);
    }
    proto::htp_op_desc op = batch_builder::op(proto::HTP_OP_MUL_MAT_HMX, {0, 1}, {2});
    std::memcpy(op.kparams, &kp, sizeof kp);
    b.add_op(op);
    packed_batch batch = b.pack(1, 0, 0);
    hmx_run      r;
    r.status = s.process(batch).status;
    for (const shared_buffer * buf : bufs) {
        htp_iface_munmap(s.handle(), buf->fd());
    }

    for (uint32_t row = 0; row < rows; ++row) {
        const float * x    = act.data() + size_t(row) * c.k;
        float         amax = 0;
        for (uint32_t i = 0; i < c.k; ++i) {
            amax = std::fmax(amax, std::fabs(x[i]));
        }
        // 2^-e with amax 2^-e in [0.5, 1) (proto/htp-matmul-hmx.h).
        const int   e     = amax > 0 ? std::ilogb(amax) + 1 : -126;
        const float scale = std::ldexp(1.0f, -e);
        const uint32_t i2 = row / c.m % c.ne2, i3 = row / c.m / c.ne2;
        const uint32_t matrix = i3 / (c.ne3 / c.w3) * c.w2 + i2 / (c.ne2 / c.w2);
        for (uint32_t j = 0; j < c.n; ++j) {
            double sum = 0, mag = 0;
            for (uint32_t i = 0; i < c.k; ++i) {
                const double av = double(fp16_round(x[i] * scale)) / scale;
                const double wv = fp16_round(wf[(size_t(matrix) * c.n + j) * c.k + i]);
                sum += av * wv;
                mag += std::fabs(av * wv);
            }
            r.want.push_back(sum);
            r.bound.push_back(std::ldexp(std::fabs(sum), -11) + c.k * std::ldexp(mag, -24) +
                              std::ldexp(mag / double(scale), -24));
            float f;
            std::memcpy(&f, dbuf.data() + size_t(row) * d_nb1 + size_t(j) * 4, 4);
            r.got.push_back(f);
        }
        for (uint32_t p = c.n * 4; p < d_nb1; ++p) {
            EXPECT_EQ(dbuf.data()[size_t(row) * d_nb1 + p], 0x5A) << "output row " << row << " padding";
        }
    }
    return r;
}

void expect_within_bounds(const hmx_run & r, const std::string & what) {
    ASSERT_EQ(r.status, proto::HTP_STATUS_OK) << what;
    size_t bad = 0;
    for (size_t i = 0; i < r.want.size(); ++i) {
        ASSERT_TRUE(std::isfinite(r.got[i])) << what << " element " << i;
        if (std::fabs(r.got[i] - r.want[i]) > r.bound[i]) {
            ADD_FAILURE() << what << " element " << i << ": " << r.got[i] << " vs " << r.want[i] << " (bound "
                          << r.bound[i] << ")";
            if (++bad == 5) {
                return;
            }
        }
    }
}

std::string describe(const hmx_case & c, uint32_t threads) {
    return std::string(ggml_type_name(c.type)) + " k " + std::to_string(c.k) + " n " + std::to_string(c.n) + " m " +
           std::to_string(c.m) + "x" + std::to_string(c.ne2) + "x" + std::to_string(c.ne3) +
           (c.f16_act ? " f16" : " f32") + (c.flat ? " flat" : " tiled") + ", " + std::to_string(threads) + " threads";
}

constexpr ggml_type kTiledTypes[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q8_0, GGML_TYPE_IQ4_NL,
                                     GGML_TYPE_MXFP4, GGML_TYPE_Q1_0, GGML_TYPE_Q2_0, GGML_TYPE_Q2_K,
                                     GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};

TEST(HtpMatmulHmx, EveryTiledTypeOverActivationRowCounts) {
    in_process_session s(config(), 4);
    uint32_t           seed = 1;
    for (const ggml_type t : kTiledTypes) {
        const uint32_t k = ggml_blck_size(t) == 256 ? 512 : 256;
        for (const uint32_t m : {5u, 8u, 32u, 33u, 64u, 128u, 512u}) {
            const hmx_case c{t, k, 45, m};
            expect_within_bounds(run_case(s, c, m % 2 == 0 ? 4 : 1, seed++), describe(c, m % 2 == 0 ? 4 : 1));
            EXPECT_EQ(s.platform().last_violation(), "") << describe(c, 4);
        }
    }
}

TEST(HtpMatmulHmx, ShapesThatExerciseThePipeline) {
    in_process_session s(config(), 4);
    const hmx_case     cases[] = {
        {GGML_TYPE_Q4_0, 2048, 300, 40},                       // runs of 32 K tiles, 10 strips, padding rows
        {GGML_TYPE_Q6_K, 1280, 200, 77, 1, 1, 1, 1, true},     // F16 activations, 7 strips
        {GGML_TYPE_Q8_0, 128, 70, 600},                        // two row chunks (512 + 88)
        {GGML_TYPE_Q8_0, 128, 70, 600, 1, 1, 1, 1, false, 1.0f, 1.0f, 0, 0, false, true},  // one row-pair staging
        {GGML_TYPE_Q4_K, 256, 64, 9, 2, 3, 1, 1, false, 1.0f, 1.0f, 12, 8},  // slices, padded rows
        {GGML_TYPE_Q2_K, 512, 40, 6, 4, 3, 2, 3},              // weights broadcast over dims 2 and 3
        {GGML_TYPE_Q1_0, 1024, 96, 20, 2, 1, 2, 1, true},
    };
    uint32_t seed = 100;
    for (const hmx_case & c : cases) {
        for (const uint32_t threads : {1u, 4u}) {
            expect_within_bounds(run_case(s, c, threads, seed++), describe(c, threads));
            EXPECT_EQ(s.platform().last_violation(), "") << describe(c, threads);
        }
    }
}

// Flat weights (a plain HTPn buffer, Q5_0/Q5_1 which have no tiled format, the float types): the
// DMA gathers feed the expansion; odd N (stale rows in the last strip's staging), several strips.
TEST(HtpMatmulHmx, FlatWeightsOfEveryType) {
    in_process_session s(config(), 4);
    uint32_t           seed = 300;
    std::vector<ggml_type> types(std::begin(kTiledTypes), std::end(kTiledTypes));
    for (const ggml_type t : {GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16}) {
        types.push_back(t);
    }
    for (const ggml_type t : types) {
        const uint32_t k = ggml_blck_size(t) == 256 ? 512 : 256;
        for (const uint32_t m : {7u, 40u}) {
            hmx_case c{t, k, 77, m, 1, 1, 1, 1, m == 40};
            c.flat = true;
            expect_within_bounds(run_case(s, c, 4, seed++), describe(c, 4));
            EXPECT_EQ(s.platform().last_violation(), "") << describe(c, 4);
        }
    }
}

// Activations around 1e5 (fp16 ends at 65504) and tiny rows, weights whose products exceed the fp16
// range in the output: the row and column scales keep everything finite and within the bounds.
TEST(HtpMatmulHmx, ActivationsAndOutputsBeyondTheFp16RangeDoNotOverflow) {
    in_process_session s(config(), 2);
    const hmx_case     big_act{GGML_TYPE_Q8_0, 512, 64, 40, 1, 1, 1, 1, false, 1e5f};
    const hmx_case     tiny_act{GGML_TYPE_Q4_0, 256, 33, 9, 1, 1, 1, 1, false, 1e-30f};
    const hmx_case     big_out{GGML_TYPE_Q8_0, 2048, 64, 12, 1, 1, 1, 1, false, 1e4f, 200.0f};
    uint32_t           seed = 500;
    for (const hmx_case & c : {big_act, tiny_act, big_out}) {
        const hmx_run r = run_case(s, c, 2, seed++);
        expect_within_bounds(r, describe(c, 2) + " act " + std::to_string(c.act_mag));
        double largest = 0;
        for (double v : r.want) {
            largest = std::fmax(largest, std::fabs(v));
        }
        if (c.act_mag > 1) {
            EXPECT_GT(largest, 65504.0) << "the case's results are beyond fp16";
        }
    }
}

// A weight value that fp16 cannot hold (Q8_0 scale 1000 x 127) fails the op with a clear status
// instead of turning into infinities.
TEST(HtpMatmulHmx, AWeightBeyondTheFp16RangeFailsTheOp) {
    in_process_session s(config(), 2);
    const hmx_case     c{GGML_TYPE_Q8_0, 128, 32, 8, 1, 1, 1, 1, false, 1.0f, 1e5f};
    EXPECT_EQ(run_case(s, c, 2, 9).status, proto::HTP_STATUS_INVAL_PARAMS);
}

TEST(HtpMatmulHmx, ThePlanShrinksToTheVtcmAndIsRefusedWhenNothingFits) {
    proto::htp_tensor w{}, a{}, d{};
    w.type = 2, w.flags = proto::HTP_TENSOR_TILED, w.ne[0] = 4096, w.ne[1] = 4096, w.ne[2] = w.ne[3] = 1;
    a.ne[0] = 4096, a.ne[1] = 512, a.ne[2] = a.ne[3] = 1, a.nb[0] = 4, a.nb[1] = 4 * 4096;
    d.ne[0] = 4096, d.ne[1] = 512, d.ne[2] = d.ne[3] = 1, d.nb[0] = 4, d.nb[1] = 4 * 4096;
    proto::htp_matmul_hmx_kparams big{}, small{};
    ASSERT_TRUE(proto::prepare_matmul_hmx_kparams(w, a, d, 4, 8u << 20, &big));
    EXPECT_EQ(big.m_tiles, 16u);
    EXPECT_EQ(big.act_buffers, 2u) << "the next row pair lands while one is prepared";
    EXPECT_LE(big.vtcm_size, 8u << 20);
    ASSERT_TRUE(proto::prepare_matmul_hmx_kparams(w, a, d, 4, 1u << 20, &small));
    EXPECT_LE(small.vtcm_size, 1u << 20);
    EXPECT_EQ(small.act_buffers, 1u) << "the row staging is the first to shrink";
    EXPECT_LT(small.m_tiles * small.n_chunk, big.m_tiles * big.n_chunk);
    EXPECT_FALSE(proto::prepare_matmul_hmx_kparams(w, a, d, 4, 256u << 10, &small)) << "not even one tile row";
    w.flags = 0, w.nb[1] = 4096 / 32 * 18;
    ASSERT_TRUE(proto::prepare_matmul_hmx_kparams(w, a, d, 4, 8u << 20, &small)) << "flat weights";
    EXPECT_EQ(small.flat, 1u);
    EXPECT_EQ(small.tiles_per_block, 1u);
    w.type = 1;
    EXPECT_FALSE(proto::prepare_matmul_hmx_kparams(w, a, d, 4, 8u << 20, &small)) << "F16 weights: HVX";
}

TEST(HtpMatmulHmx, ASmallVtcmStillGivesResultsWithinTheBounds) {
    in_process_session s(config(512u << 10), 2);
    const hmx_case     c{GGML_TYPE_Q4_K, 1024, 100, 70};
    expect_within_bounds(run_case(s, c, 2, 77), "512 KiB VTCM");
}

} // namespace

namespace {

// The result is a function of the operands alone: not of the thread count, nor of whatever VTCM
// held before (every byte the unit reads is written first).
TEST(HtpMatmulHmx, ResultsDoNotDependOnThreadsOrStaleVtcm) {
    in_process_session s(config(), 4);
    const hmx_case     c{GGML_TYPE_Q8_0, 640, 256, 6};
    const hmx_run      first = run_case(s, c, 2, 42);
    ASSERT_EQ(first.status, proto::HTP_STATUS_OK);
    for (const uint32_t threads : {1u, 4u}) {
        std::mt19937 rng(threads);
        uint8_t *    vtcm = s.platform().table().vtcm_base;
        for (uint32_t i = 0; i < s.platform().table().vtcm_size; ++i) {
            vtcm[i] = uint8_t(rng());
        }
        const hmx_run again = run_case(s, c, threads, 42);
        ASSERT_EQ(again.status, proto::HTP_STATUS_OK);
        for (size_t i = 0; i < first.got.size(); ++i) {
            ASSERT_EQ(std::memcmp(&first.got[i], &again.got[i], 4), 0) << threads << " threads, element " << i;
        }
    }
}

} // namespace

namespace {

// The unit's strict rules stay on under the kernels: each planted misuse (the test library's
// TEST_HMX_MISUSE) fails its op with STRICT and a message naming the rule, and the next HMX
// matmul in the same session runs clean.
TEST(HtpMatmulHmx, APlantedHmxMisuseFailsItsOpWithStrict) {
    struct misuse {
        int32_t     kind;
        const char * says;
    };
    const misuse misuses[] = {
        {proto::HTP_TEST_HMX_NO_SCALE_BIAS, "no scale/bias"},  // first: no block loaded in this session yet
        {proto::HTP_TEST_HMX_NOT_OWNER, "does not hold the unit"},
        {proto::HTP_TEST_HMX_MISALIGNED, "aligned"},
        {proto::HTP_TEST_HMX_NOT_VTCM, "VTCM"},
        {proto::HTP_TEST_HMX_BANK_CROSSING, "bank"},
    };
    in_process_session s(config(), 2);
    for (const misuse & m : misuses) {
        batch_builder      b;
        proto::htp_op_desc op = batch_builder::op(proto::HTP_OP_TEST_HMX_MISUSE, {}, {});
        op.params[0]          = m.kind;
        b.add_op(op);
        packed_batch batch = b.pack(1, 0, 0);
        EXPECT_EQ(s.process(batch).status, proto::HTP_STATUS_STRICT) << m.says;
        EXPECT_NE(s.platform().last_violation().find(m.says), std::string::npos) << s.platform().last_violation();
        const hmx_case c{GGML_TYPE_Q4_0, 256, 40, 8};
        expect_within_bounds(run_case(s, c, 2, uint32_t(m.kind)), std::string("after ") + m.says);
    }
}

} // namespace

namespace {

// MUL_MAT_ID on HMX: Q4_K experts (tiled) and Q5_0 ones (flat), 1100 tokens x 2 slots routed to 4
// experts (some rows of a shared activation; expert 0 in every token's first slot: more rows than
// the id walk's bucket table, walked alone), every output row within the bound against its
// expert's product; an id outside [0, 4) is refused before any work.
TEST(HtpMatmulHmx, MulMatIdRoutesEachRowToItsExpert) {
    in_process_session s(config(), 2);
    for (const auto & [type, tiled, shared] : {std::tuple{GGML_TYPE_Q4_K, true, false}, std::tuple{GGML_TYPE_Q5_0, false, true}}) {
        const uint32_t k = 256, n = 72, n_expert = 4, n_used = 2, n_tokens = 1100, n_b = shared ? 1 : n_used;
        const auto *   traits = ggml_get_type_traits(type);
        std::mt19937   rng(7);
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        std::vector<float> wf(size_t(k) * n * n_expert), act(size_t(k) * n_b * n_tokens);
        for (float & v : wf) {
            v = dist(rng);
        }
        for (float & v : act) {
            v = dist(rng);
        }
        const size_t         row_bytes = k / traits->blck_size * traits->type_size;
        std::vector<uint8_t> flat(row_bytes * n * n_expert), bytes = flat;
        traits->from_float_ref(wf.data(), flat.data(), int64_t(wf.size()));
        const int64_t ne[4] = {k, n, n_expert, 1};
        if (tiled) {
            bytes.assign(hexagon::tiled_nbytes(type, ne), 0);
            ASSERT_TRUE(hexagon::repack_tensor(type, ne, flat.data(), bytes.data()).ok());
            hexagon::dequantize_tiled_rows(type, ne, bytes.data(), 0, int64_t(n) * n_expert, wf.data());
        } else {
            bytes = flat;
            traits->to_float_ref(flat.data(), wf.data(), int64_t(wf.size()));
        }
        std::vector<int32_t> ids(size_t(n_used) * n_tokens);
        for (uint32_t t = 0; t < n_tokens; ++t) {
            ids[t * n_used]     = 0;
            ids[t * n_used + 1] = int32_t(1 + rng() % (n_expert - 1));  // distinct
        }
        shared_buffer wbuf(bytes.size()), abuf(act.size() * 4), ibuf(ids.size() * 4), dbuf(size_t(n) * 4 * n_used * n_tokens);
        std::memcpy(wbuf.data(), bytes.data(), bytes.size());
        std::memcpy(abuf.data(), act.data(), act.size() * 4);
        std::memcpy(ibuf.data(), ids.data(), ids.size() * 4);

        proto::htp_tensor w{}, a{}, id{}, d{};
        w.type = uint32_t(type), w.size = bytes.size(), w.flags = tiled ? proto::HTP_TENSOR_TILED : 0;
        w.ne[0] = k, w.ne[1] = n, w.ne[2] = n_expert, w.ne[3] = 1;
        w.nb[0] = uint32_t(traits->type_size), w.nb[1] = uint32_t(row_bytes), w.nb[2] = w.nb[3] = uint32_t(row_bytes * n);
        a.ne[0] = k, a.ne[1] = n_b, a.ne[2] = n_tokens, a.ne[3] = 1, a.size = abuf.size();
        a.nb[0] = 4, a.nb[1] = k * 4, a.nb[2] = a.nb[3] = k * 4 * n_b;
        id.type = 26, id.ne[0] = n_used, id.ne[1] = n_tokens, id.ne[2] = id.ne[3] = 1, id.size = ibuf.size();
        id.nb[0] = 4, id.nb[1] = n_used * 4, id.nb[2] = id.nb[3] = uint32_t(ibuf.size());
        d.ne[0] = n, d.ne[1] = n_used, d.ne[2] = n_tokens, d.ne[3] = 1, d.size = dbuf.size();
        d.nb[0] = 4, d.nb[1] = n * 4, d.nb[2] = d.nb[3] = n * 4 * n_used;
        a.flags = id.flags = d.flags = proto::HTP_TENSOR_COMPUTE;
        proto::htp_matmul_hmx_kparams kp{};
        ASSERT_TRUE(proto::prepare_matmul_id_hmx_kparams(w, a, id, d, 2, 8u << 20, &kp));
        auto run = [&] {
            batch_builder b;
            const std::pair<proto::htp_tensor *, const shared_buffer *> operands[] = {
                {&w, &wbuf}, {&a, &abuf}, {&id, &ibuf}, {&d, &dbuf}};
            for (const auto & [t, buf] : operands) {
                t->bi = b.add_buffer(*buf, false);
                b.add_tensor(*t);
            }
            proto::htp_op_desc op = batch_builder::op(proto::HTP_OP_MUL_MAT_ID_HMX, {0, 1, 2}, {3});
            std::memcpy(op.kparams, &kp, sizeof kp);
            b.add_op(op);
            packed_batch   batch  = b.pack(1, 0, 0);
            const uint32_t status = s.process(batch).status;
            for (const auto & [t, buf] : operands) {
                htp_iface_munmap(s.handle(), buf->fd());
            }
            return status;
        };
        ASSERT_EQ(run(), proto::HTP_STATUS_OK);
        EXPECT_EQ(s.platform().last_violation(), "");
        hmx_run r{{}, {}, {}, proto::HTP_STATUS_OK};
        for (uint32_t t = 0; t < n_tokens; ++t) {
            for (uint32_t slot = 0; slot < n_used; ++slot) {
                const float * x    = &act[(size_t(t) * n_b + (shared ? 0 : slot)) * k];
                float         amax = 0;
                for (uint32_t i = 0; i < k; ++i) {
                    amax = std::fmax(amax, std::fabs(x[i]));
                }
                const float    scale = std::ldexp(1.0f, -(std::ilogb(amax) + 1));
                const uint32_t e     = uint32_t(ids[t * n_used + slot]);
                for (uint32_t j = 0; j < n; ++j) {
                    double sum = 0, mag = 0;
                    for (uint32_t i = 0; i < k; ++i) {
                        const double p = double(fp16_round(x[i] * scale)) / scale * fp16_round(wf[(size_t(e) * n + j) * k + i]);
                        sum += p;
                        mag += std::fabs(p);
                    }
                    r.want.push_back(sum);
                    r.bound.push_back(std::ldexp(std::fabs(sum), -11) + k * std::ldexp(mag, -24) + std::ldexp(mag / scale, -24));
                    float f;
                    std::memcpy(&f, dbuf.data() + ((size_t(t) * n_used + slot) * n + j) * 4, 4);
                    r.got.push_back(f);
                }
            }
        }
        expect_within_bounds(r, std::string("MUL_MAT_ID ") + ggml_type_name(type));
        ids[7] = int32_t(n_expert);
        std::memcpy(ibuf.data(), ids.data(), ids.size() * 4);
        EXPECT_EQ(run(), proto::HTP_STATUS_INVAL_PARAMS) << "id " << n_expert;
    }
}

} // namespace

namespace {

// A multi-device group (simulated indices): each device writes only its share of whole 32-column
// strips (remainder to the last), the others' columns untouched; together the whole product.
TEST(HtpMatmulHmx, DevicesOfAGroupEachWriteTheirStripsOfN) {
    const hmx_case c{GGML_TYPE_Q4_0, 256, 230, 40, 1, 1, 1, 1, false, 1.0f, 1.0f, 0, 104};  // rows of 1024 bytes: 8 strips
    hmx_run        whole{};
    for (uint32_t idx = 0; idx < 3; ++idx) {
        vnpu::platform_config cfg = config();
        cfg.mdev_idx              = idx;
        cfg.mdev_count            = 3;
        in_process_session s(cfg, 2);
        const hmx_run      r = run_case(s, c, 2, 5);  // the same seed: the same operands on every device
        ASSERT_EQ(r.status, proto::HTP_STATUS_OK);
        whole.want  = r.want;
        whole.bound = r.bound;
        whole.got.resize(r.got.size());
        for (uint32_t row = 0; row < c.m; ++row) {
            for (uint32_t j = 0; j < c.n; ++j) {
                const size_t   i     = size_t(row) * c.n + j;
                const uint32_t strip = j / 32;
                const bool     mine  = idx < 2 ? strip / 2 == idx : strip >= 4;  // 8 strips: 2, 2, 4
                float          untouched;
                std::memset(&untouched, 0x5A, 4);
                if (mine) {
                    whole.got[i] = r.got[i];
                } else {
                    ASSERT_EQ(std::memcmp(&r.got[i], &untouched, 4), 0) << "device " << idx << " wrote column " << j;
                }
            }
        }
    }
    whole.status = proto::HTP_STATUS_OK;
    expect_within_bounds(whole, "three devices");
}

} // namespace
