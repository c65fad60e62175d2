// GET_ROWS and GET_ROWS_Q on the in-process virtual NPU (strict DMA on). GGML's semantics: dst row
// (i1, i2, i3) = src0 row ids[i1, i2, i3] of slice (i2, i3), converted to F32 (I32 rows stay I32).
//  GET_ROWS: F32, F16, BF16 and I32 tables (the conversions are exact: compared byte for byte,
//    F16 subnormals, infinities and -0 included), I32 and I64 ids, padded and permuted tables, rows
//    not a multiple of 32 elements, 1-4 threads, a small VTCM.
//  GET_ROWS_Q: quantized tables flat (GGML's bytes as they are; reference: the core library's
//    to_float of the row's bytes, bit for bit) and tiled (hexagon::repack_tensor's bytes; reference:
//    to_float of the flat row for the lossless tilings, and for the K-quants whose tiles hold fp16
//    scale products, hexagon::dequantize_tiled_rows, the tile format's own scalar dequantization),
//    45-row tables (a partial 32-row group), two slices, I32 and I64 ids.
// An id outside [0, src0.ne1) fails either op with INVAL_PARAMS and no DMA fault.
#include "hexagon/repack.h"
#include "hexnpu/ggml-types.h"
#include "htp-op-fixture.h"
#include "proto/htp-get-rows-q.h"
#include "proto/htp-rows.h"

#include <limits>

namespace {

using namespace htp_op_fixture;

operand make_ids(uint32_t n, uint32_t ne2, uint32_t ne3, bool i64) {
    return make(i64 ? 27 : 26, {n, ne2, ne3, 1});
}

// Ids drawn from [0, rows), some repeated; returns them in the ids' order.
std::vector<int64_t> fill_ids(operand & ids, uint32_t rows, std::mt19937 & rng) {
    std::vector<int64_t> v;
    for (uint32_t i2 = 0; i2 < ids.t.ne[2]; ++i2)
        for (uint32_t i1 = 0; i1 < ids.t.ne[1]; ++i1)
            for (uint32_t i0 = 0; i0 < ids.t.ne[0]; ++i0) {
                const int64_t id = i0 == 0 ? int64_t(rows - 1) : int64_t(rng() % rows);  // the last row always
                v.push_back(id);
                if (ids.t.type == 27) {
                    ids.set<int64_t>(id, i0, i1, i2);
                } else {
                    ids.set<int32_t>(int32_t(id), i0, i1, i2);
                }
            }
    return v;
}

void set_id(operand & ids, size_t flat, int64_t id) {
    const uint32_t i0 = uint32_t(flat % ids.t.ne[0]), i1 = uint32_t(flat / ids.t.ne[0] % ids.t.ne[1]),
                   i2 = uint32_t(flat / ids.t.ne[0] / ids.t.ne[1]);
    if (ids.t.type == 27) {
        ids.set<int64_t>(id, i0, i1, i2);
    } else {
        ids.set<int32_t>(int32_t(id), i0, i1, i2);
    }
}

struct get_rows_case {
    uint32_t type;  // 0 F32, 1 F16, 30 BF16, 26 I32
    uint32_t ne0, rows, n, ne2, ne3;
    bool     i64, permuted;
    uint32_t threads;
};

struct get_rows_setup {
    operand              src, ids, dst;
    std::vector<int64_t> id;
};

get_rows_setup setup_get_rows(const get_rows_case & c, uint32_t seed) {
    std::mt19937   rng(seed);
    get_rows_setup st;
    const uint32_t e = elem_size(c.type);
    if (c.permuted) {  // slices interleaved: physically [ne0 + pad, ne2, rows, ne3]
        const uint32_t r = c.ne0 * e + 8;
        st.src = make(c.type, {c.ne0, c.rows, c.ne2, c.ne3}, {e, r * c.ne2, r, r * c.ne2 * c.rows});
    } else {
        st.src = make(c.type, {c.ne0, c.rows, c.ne2, c.ne3}, {}, 3 * e);
    }
    st.ids = make_ids(c.n, c.ne2, c.ne3, c.i64);
    st.dst = make(c.type == 26 ? 26 : 0, {c.ne0, c.n, c.ne2, c.ne3}, {}, 4);
    for (uint32_t i3 = 0; i3 < c.ne3; ++i3)
        for (uint32_t i2 = 0; i2 < c.ne2; ++i2)
            for (uint32_t i1 = 0; i1 < c.rows; ++i1)
                for (uint32_t i0 = 0; i0 < c.ne0; ++i0) {
                    uint32_t bits = rng();
                    if (c.type == 1 && (bits & 0x7C00) == 0x7C00 && (bits & 0x3FF) != 0) {
                        bits &= ~0x3FFu;  // an F16 NaN becomes an infinity: no payloads to argue about
                    }
                    if (c.type == 30 && (bits & 0x7F80) == 0x7F80 && (bits & 0x7F) != 0) {
                        bits &= ~0x7Fu;
                    }
                    if (c.type == 0) {
                        const float f = std::ldexp(float(int32_t(bits)) / 2147483648.0f, int(rng() % 60) - 30);
                        st.src.set<float>(f, i0, i1, i2, i3);
                    } else if (c.type == 26) {
                        st.src.set<uint32_t>(bits, i0, i1, i2, i3);
                    } else {
                        st.src.set<uint16_t>(uint16_t(bits), i0, i1, i2, i3);
                    }
                }
    st.id = fill_ids(st.ids, c.rows, rng);
    return st;
}

uint32_t run_get_rows(in_process_session & s, get_rows_setup & st, uint32_t threads, bool * prepared) {
    proto::htp_get_rows_kparams kp{};
    const proto::htp_verdict    v =
        proto::prepare_get_rows_kparams(st.src.t, st.ids.t, st.dst.t, threads, s.platform().table().vtcm_size, &kp);
    *prepared = bool(v);
    EXPECT_TRUE(v) << v.why;
    return v ? run_op(s, proto::HTP_OP_GET_ROWS, {&st.src, &st.ids}, st.dst, kp) : ~0u;
}

// Every dst element is the exact conversion of the source element its id names.
::testing::AssertionResult rows_match(const get_rows_case & c, const get_rows_setup & st) {
    size_t k = 0;
    for (uint32_t i3 = 0; i3 < c.ne3; ++i3)
        for (uint32_t i2 = 0; i2 < c.ne2; ++i2)
            for (uint32_t i1 = 0; i1 < c.n; ++i1, ++k) {
                const uint32_t row = uint32_t(st.id[k]);
                for (uint32_t i0 = 0; i0 < c.ne0; ++i0) {
                    uint32_t want;
                    if (c.type == 26) {
                        want = st.src.get<uint32_t>(i0, row, i2, i3);
                    } else {
                        const float f = st.src.getf(i0, row, i2, i3);
                        std::memcpy(&want, &f, 4);
                    }
                    const uint32_t got = st.dst.get<uint32_t>(i0, i1, i2, i3);
                    if (got != want) {
                        return ::testing::AssertionFailure() << "dst row (" << i1 << "," << i2 << "," << i3 << ") from row "
                                                             << row << ", element " << i0 << ": got 0x" << std::hex
                                                             << got << ", want 0x" << want;
                    }
                }
            }
    return untouched_outside(st.dst);
}

std::string describe(const get_rows_case & c) {
    return "type " + std::to_string(c.type) + " ne0 " + std::to_string(c.ne0) + " rows " + std::to_string(c.rows) +
           " ids " + std::to_string(c.n) + "x" + std::to_string(c.ne2) + "x" + std::to_string(c.ne3) +
           (c.i64 ? " I64" : " I32") + (c.permuted ? " permuted" : "") + ", " + std::to_string(c.threads) + " threads";
}

TEST(HtpGetRows, FloatAndIntRowsByI32AndI64Ids) {
    in_process_session  s(config(), 4);
    const get_rows_case cases[] = {
        {0, 100, 37, 9, 2, 1, false, false, 1},    // F32, I32 ids, 1 thread
        {0, 100, 37, 9, 2, 1, true, true, 4},      // F32, I64 ids, permuted table
        {1, 45, 20, 33, 3, 2, true, false, 3},     // F16 (subnormals, infinities, -0), dim 3
        {1, 256, 64, 1, 1, 1, false, true, 4},     // one decode row
        {30, 77, 12, 6, 2, 1, false, false, 2},    // BF16
        {26, 33, 10, 7, 2, 2, true, true, 4},      // I32 rows into I32
        {0, 1, 5, 40, 1, 1, false, false, 4},      // one-element rows
    };
    uint32_t seed = 1;
    for (const get_rows_case & c : cases) {
        SCOPED_TRACE(describe(c));
        get_rows_setup st = setup_get_rows(c, seed++);
        bool           prepared;
        ASSERT_EQ(run_get_rows(s, st, c.threads, &prepared), proto::HTP_STATUS_OK) << s.platform().last_violation();
        EXPECT_EQ(s.platform().last_violation(), "");
        EXPECT_TRUE(rows_match(c, st));
    }
}

TEST(HtpGetRows, SmallVtcmAndTheCheckCanFail) {
    const get_rows_case c{0, 8000, 6, 9, 1, 1, false, false, 4};  // rows of 32 KB
    get_rows_setup      st = setup_get_rows(c, 11);
    proto::htp_get_rows_kparams roomy{}, tight{};
    ASSERT_TRUE(proto::prepare_get_rows_kparams(st.src.t, st.ids.t, st.dst.t, 4, 8u << 20, &roomy));
    ASSERT_TRUE(proto::prepare_get_rows_kparams(st.src.t, st.ids.t, st.dst.t, 4, 600u << 10, &tight));
    EXPECT_LT(tight.pipe.n_slots, roomy.pipe.n_slots);
    in_process_session s(config(79, 600u << 10), 4);
    bool               prepared;
    ASSERT_EQ(run_get_rows(s, st, 4, &prepared), proto::HTP_STATUS_OK) << s.platform().last_violation();
    EXPECT_TRUE(rows_match(c, st));
    st.id[3] = (st.id[3] + 1) % c.rows;  // the check, told another id, finds the difference
    EXPECT_FALSE(rows_match(c, st));
}

TEST(HtpGetRows, AnIdOutsideTheTableIsInvalParams) {
    in_process_session s(config(), 4);
    for (const bool i64 : {false, true}) {
        for (const int64_t bad : {int64_t(37), int64_t(-1), i64 ? int64_t(1) << 33 : int64_t(INT32_MIN)}) {
            const get_rows_case c{0, 100, 37, 9, 2, 1, i64, false, 2};
            get_rows_setup      st = setup_get_rows(c, 21);
            set_id(st.ids, 13, bad);
            bool prepared;
            EXPECT_EQ(run_get_rows(s, st, c.threads, &prepared), proto::HTP_STATUS_INVAL_PARAMS) << bad;
            EXPECT_EQ(s.platform().last_violation(), "") << bad;
        }
    }
}

// GET_ROWS_Q.
struct q_case {
    ggml_type type;
    bool      tiled;
    uint32_t  ne0, rows, n, ne2;
    bool      i64;
    uint32_t  threads;
};

struct q_setup {
    operand              src, ids, dst;
    std::vector<int64_t> id;
    std::vector<float>   want_rows;  // every table row, dequantized by the reference: [ne2][rows][ne0]
};

q_setup setup_q(const q_case & c, uint32_t seed) {
    std::mt19937                          rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const auto *                          traits    = ggml_get_type_traits(c.type);
    const size_t                          row_bytes = size_t(c.ne0) / traits->blck_size * traits->type_size;
    std::vector<float>                    values(size_t(c.ne0) * c.rows * c.ne2);
    for (size_t i = 0; i < values.size(); ++i) {
        values[i] = dist(rng) * std::ldexp(1.0f, int(i / 256 % 5) - 2);  // blocks of different scales
    }
    std::vector<uint8_t> flat(row_bytes * c.rows * c.ne2);
    traits->from_float_ref(values.data(), flat.data(), int64_t(values.size()));
    q_setup        st;
    const int64_t  ne[4] = {c.ne0, c.rows, c.ne2, 1};
    const uint32_t pad   = c.tiled ? 0 : 32;  // flat rows padded: rows anywhere
    st.want_rows.resize(values.size());
    if (c.tiled) {
        std::vector<uint8_t> tiled(hexagon::tiled_nbytes(c.type, ne));
        EXPECT_TRUE(hexagon::repack_tensor(c.type, ne, flat.data(), tiled.data()).ok());
        st.src.buf = std::make_unique<shared_buffer>(tiled.size());
        std::memcpy(st.src.data(), tiled.data(), tiled.size());
        st.src.t.size  = tiled.size();
        st.src.t.flags = proto::HTP_TENSOR_TILED;
        if (hexagon::is_lossless_tiling(c.type)) {
            traits->to_float(flat.data(), st.want_rows.data(), int64_t(values.size()));
        } else {  // the tiles hold fp16 scale products: the tile format's own dequantization
            hexagon::dequantize_tiled_rows(c.type, ne, tiled.data(), 0, int64_t(c.rows) * c.ne2, st.want_rows.data());
        }
    } else {
        st.src.buf = std::make_unique<shared_buffer>((row_bytes + pad) * c.rows * c.ne2);
        for (size_t r = 0; r < size_t(c.rows) * c.ne2; ++r) {
            std::memcpy(st.src.data() + r * (row_bytes + pad), flat.data() + r * row_bytes, row_bytes);
            traits->to_float(flat.data() + r * row_bytes, st.want_rows.data() + r * c.ne0, c.ne0);
        }
        st.src.t.size  = st.src.buf->size();
        st.src.t.flags = 0;
    }
    st.src.t.type  = uint32_t(c.type);
    st.src.t.ne[0] = c.ne0, st.src.t.ne[1] = c.rows, st.src.t.ne[2] = c.ne2, st.src.t.ne[3] = 1;
    st.src.t.nb[0] = uint32_t(traits->type_size);
    st.src.t.nb[1] = uint32_t(row_bytes + pad);
    st.src.t.nb[2] = st.src.t.nb[1] * c.rows;
    st.src.t.nb[3] = st.src.t.nb[2] * c.ne2;
    st.ids         = make_ids(c.n, c.ne2, 1, c.i64);
    st.dst         = make(0, {c.ne0, c.n, c.ne2, 1}, {}, 12);
    st.id          = fill_ids(st.ids, c.rows, rng);
    return st;
}

uint32_t run_q(in_process_session & s, q_setup & st, uint32_t threads) {
    proto::htp_get_rows_q_kparams kp{};
    const proto::htp_verdict      v = proto::prepare_get_rows_q_kparams(st.src.t, &st.ids.t, st.dst.t, threads,
                                                                       s.platform().table().vtcm_size, &kp);
    EXPECT_TRUE(v) << v.why;
    return v ? run_op(s, proto::HTP_OP_GET_ROWS_Q, {&st.src, &st.ids}, st.dst, kp) : ~0u;
}

::testing::AssertionResult q_rows_match(const q_case & c, const q_setup & st) {
    size_t k = 0;
    for (uint32_t i2 = 0; i2 < c.ne2; ++i2)
        for (uint32_t i1 = 0; i1 < c.n; ++i1, ++k) {
            const float * want = st.want_rows.data() + (size_t(i2) * c.rows + size_t(st.id[k])) * c.ne0;
            for (uint32_t i0 = 0; i0 < c.ne0; ++i0) {
                const float got = st.dst.get<float>(i0, i1, i2);
                if (std::memcmp(&got, &want[i0], 4) != 0) {
                    return ::testing::AssertionFailure() << "dst row (" << i1 << "," << i2 << ") from row " << st.id[k]
                                                         << ", element " << i0 << ": got " << got << ", want " << want[i0];
                }
            }
        }
    return untouched_outside(st.dst);
}

std::string describe(const q_case & c) {
    return std::string(ggml_type_name(c.type)) + (c.tiled ? " tiled" : " flat") + " ne0 " + std::to_string(c.ne0) +
           " rows " + std::to_string(c.rows) + " ids " + std::to_string(c.n) + "x" + std::to_string(c.ne2) +
           (c.i64 ? " I64" : " I32") + ", " + std::to_string(c.threads) + " threads";
}

TEST(HtpGetRowsQ, FlatAndTiledTablesBitForBit) {
    in_process_session s(config(), 4);
    const q_case       cases[] = {
        {GGML_TYPE_Q4_0, false, 96, 45, 7, 2, false, 1},   // flat, 3 blocks a row, padded rows
        {GGML_TYPE_Q4_0, true, 96, 45, 7, 2, true, 4},     // tiled: a partial last 32-row group
        {GGML_TYPE_Q8_0, true, 512, 45, 9, 2, false, 3},
        {GGML_TYPE_Q8_0, false, 160, 33, 5, 1, true, 2},
        {GGML_TYPE_Q5_0, false, 128, 40, 6, 2, true, 4},   // flat only
        {GGML_TYPE_Q4_K, false, 512, 45, 7, 2, false, 4},  // a K-quant, flat
        {GGML_TYPE_Q2_K, true, 512, 45, 7, 2, true, 2},    // a K-quant, tiled losslessly
        {GGML_TYPE_Q6_K, true, 768, 45, 5, 1, false, 4},   // tiled with fp16 scale products
    };
    uint32_t seed = 31;
    for (const q_case & c : cases) {
        SCOPED_TRACE(describe(c));
        q_setup st = setup_q(c, seed++);
        ASSERT_EQ(run_q(s, st, c.threads), proto::HTP_STATUS_OK) << s.platform().last_violation();
        EXPECT_EQ(s.platform().last_violation(), "");
        EXPECT_TRUE(q_rows_match(c, st));
    }
}

// The other types the kernel reads, once each, tiled and flat where both exist.
TEST(HtpGetRowsQ, EveryOtherType) {
    in_process_session s(config(), 4);
    uint32_t           seed = 61;
    for (const ggml_type t : {GGML_TYPE_Q4_1, GGML_TYPE_IQ4_NL, GGML_TYPE_MXFP4, GGML_TYPE_Q1_0, GGML_TYPE_Q2_0,
                              GGML_TYPE_Q3_K, GGML_TYPE_Q5_K, GGML_TYPE_Q5_1}) {
        for (const bool tiled : {false, true}) {
            if (tiled && t == GGML_TYPE_Q5_1) {
                continue;  // flat only
            }
            const q_case c{t, tiled, 512, 37, 6, 2, tiled, 3};
            SCOPED_TRACE(describe(c));
            q_setup st = setup_q(c, seed++);
            ASSERT_EQ(run_q(s, st, c.threads), proto::HTP_STATUS_OK) << s.platform().last_violation();
            EXPECT_EQ(s.platform().last_violation(), "");
            EXPECT_TRUE(q_rows_match(c, st));
        }
    }
}

TEST(HtpGetRowsQ, SmallVtcmAndTheCheckCanFail) {
    const q_case c{GGML_TYPE_Q8_0, true, 4096, 40, 12, 1, false, 4};
    q_setup      st = setup_q(c, 41);
    proto::htp_get_rows_q_kparams roomy{}, tight{};
    ASSERT_TRUE(proto::prepare_get_rows_q_kparams(st.src.t, &st.ids.t, st.dst.t, 4, 8u << 20, &roomy));
    // Five eighths of what four slots take: two slots fit, three do not.
    const uint32_t vtcm = (roomy.vtcm_size / 8 * 5 + 4095) / 4096 * 4096;
    ASSERT_EQ(roomy.n_slots, 4u);
    ASSERT_TRUE(proto::prepare_get_rows_q_kparams(st.src.t, &st.ids.t, st.dst.t, 4, vtcm, &tight));
    EXPECT_EQ(tight.n_slots, 2u);
    EXPECT_LE(tight.vtcm_size, vtcm);
    in_process_session s(config(79, vtcm), 4);
    ASSERT_EQ(run_q(s, st, 4), proto::HTP_STATUS_OK) << s.platform().last_violation();
    EXPECT_EQ(s.platform().last_violation(), "");
    EXPECT_TRUE(q_rows_match(c, st));
    st.id[5] = (st.id[5] + 1) % c.rows;  // the check, told another id, finds the difference
    EXPECT_FALSE(q_rows_match(c, st));
}

TEST(HtpGetRowsQ, AnIdOutsideTheTableIsInvalParams) {
    in_process_session s(config(), 4);
    for (const bool tiled : {false, true}) {
        for (const int64_t bad : {int64_t(45), int64_t(-1), int64_t(1) << 35}) {
            const q_case c{GGML_TYPE_Q4_0, tiled, 96, 45, 7, 2, true, 2};
            q_setup      st = setup_q(c, 51);
            set_id(st.ids, 9, bad);
            EXPECT_EQ(run_q(s, st, c.threads), proto::HTP_STATUS_INVAL_PARAMS) << bad << (tiled ? " tiled" : " flat");
            EXPECT_EQ(s.platform().last_violation(), "") << bad;
        }
    }
}

} // namespace
