// CONCAT and REPEAT on the in-process virtual NPU (strict DMA on), byte for byte against GGML's
// definitions (elements moved, never converted): CONCAT(a, b, dim): dst[i] = a[i] where i_dim <
// a.ne[dim], else b[i with i_dim - a.ne[dim]]; REPEAT(a): dst[i0, i1, i2, i3] = a[i0 % ne00, i1 % ne01,
// i2 % ne02, i3 % ne03]. Every dim of CONCAT, F32/F16/BF16/I32 elements, rows whose bytes are not a
// multiple of 128 (nor of 4 for dim 0's second piece), padded and permuted sources, REPEAT over all
// dims and of a transposed source (gathered element by element), 1-4 threads, a small VTCM; the
// destination's padding keeps its sentinel bytes.
#include "htp-op-fixture.h"
#include "proto/htp-layout.h"

namespace {

using namespace htp_op_fixture;

using dims = std::array<uint32_t, 4>;

// Random bytes in every element (NaN patterns included: nothing may be converted).
void fill_bytes(operand & o, std::mt19937 & rng) {
    for (uint32_t i3 = 0; i3 < o.t.ne[3]; ++i3)
        for (uint32_t i2 = 0; i2 < o.t.ne[2]; ++i2)
            for (uint32_t i1 = 0; i1 < o.t.ne[1]; ++i1)
                for (uint32_t i0 = 0; i0 < o.t.ne[0]; ++i0)
                    for (uint32_t e = 0; e < o.elem; ++e) o.data()[o.offset(i0, i1, i2, i3) + e] = uint8_t(rng());
}

// dst compared with want(i0..i3) -> the source operand and element; every byte.
template <class F>
::testing::AssertionResult matches(const operand & dst, F && from) {
    for (uint32_t i3 = 0; i3 < dst.t.ne[3]; ++i3)
        for (uint32_t i2 = 0; i2 < dst.t.ne[2]; ++i2)
            for (uint32_t i1 = 0; i1 < dst.t.ne[1]; ++i1)
                for (uint32_t i0 = 0; i0 < dst.t.ne[0]; ++i0) {
                    uint32_t        j[4] = {i0, i1, i2, i3};
                    const operand & src  = from(j);
                    if (std::memcmp(dst.data() + dst.offset(i0, i1, i2, i3), src.data() + src.offset(j[0], j[1], j[2], j[3]),
                                    dst.elem) != 0) {
                        return ::testing::AssertionFailure() << "element (" << i0 << "," << i1 << "," << i2 << "," << i3 << ")";
                    }
                }
    return untouched_outside(dst);
}

// An operand of shape ne whose dims 1 and 2 are swapped in memory (a permuted view), rows padded.
operand permuted(uint32_t type, dims ne) {
    const uint32_t e  = elem_size(type);
    const uint32_t r  = ne[0] * e + 6 * e;  // padded rows
    return make(type, ne, {e, r * ne[2], r, r * ne[2] * ne[1]});
}

struct concat_case {
    uint32_t type;
    dims     a, b;
    uint32_t dim;
    bool     permuted_b;
    uint32_t threads;
};

::testing::AssertionResult run_concat(in_process_session & s, const concat_case & c, uint32_t seed, bool swapped = false) {
    std::mt19937 rng(seed);
    operand      a = make(c.type, c.a, {}, 2 * elem_size(c.type));
    operand      b = c.permuted_b ? permuted(c.type, c.b) : make(c.type, c.b);
    dims         nd = c.a;
    nd[c.dim] += c.b[c.dim];
    operand dst = make(c.type, nd, {}, 4 * elem_size(c.type));
    fill_bytes(a, rng);
    fill_bytes(b, rng);
    int32_t params[proto::HTP_OP_MAX_PARAMS] = {int32_t(c.dim)};
    proto::htp_layout_kparams kp{};
    const proto::htp_verdict  v = proto::prepare_layout_kparams(proto::HTP_OP_CONCAT, a.t, &b.t, dst.t, params, c.threads,
                                                               s.platform().table().vtcm_size, &kp);
    if (!v) {
        return ::testing::AssertionFailure() << "refused: " << v.why;
    }
    const uint32_t status = run_op(s, proto::HTP_OP_CONCAT, {&a, &b}, dst, kp, params);
    if (status != proto::HTP_STATUS_OK || s.platform().last_violation() != "") {
        return ::testing::AssertionFailure() << "status " << status << ": " << s.platform().last_violation();
    }
    return matches(dst, [&](uint32_t * j) -> const operand & {
        if (j[c.dim] < a.t.ne[c.dim]) {
            return swapped ? b : a;  // wrong: the reference with a and b swapped (shapes alike)
        }
        j[c.dim] -= a.t.ne[c.dim];
        return swapped ? a : b;
    });
}

struct repeat_case {
    uint32_t type;
    dims     a, dst;
    bool     transposed;  // a is the transpose of a packed [ne1, ne0] matrix: elements ne1 apart
    uint32_t threads;
    bool     permuted = false;  // a's dims 1 and 2 swapped in memory, rows padded
};

::testing::AssertionResult run_repeat(in_process_session & s, const repeat_case & c, uint32_t seed, bool wrong = false) {
    std::mt19937   rng(seed);
    const uint32_t e = elem_size(c.type);
    operand        a = c.transposed ? make(c.type, c.a, {e * c.a[1], e, e * c.a[0] * c.a[1], e * c.a[0] * c.a[1] * c.a[2]})
                                    : c.permuted ? permuted(c.type, c.a) : make(c.type, c.a, {}, 3 * e);
    operand dst = make(c.type, c.dst, {}, e);
    fill_bytes(a, rng);
    int32_t params[proto::HTP_OP_MAX_PARAMS] = {};
    proto::htp_layout_kparams kp{};
    const proto::htp_verdict  v = proto::prepare_layout_kparams(proto::HTP_OP_REPEAT, a.t, nullptr, dst.t, params,
                                                               c.threads, s.platform().table().vtcm_size, &kp);
    if (!v) {
        return ::testing::AssertionFailure() << "refused: " << v.why;
    }
    if (kp.gather != (c.transposed ? 1u : 0u)) {
        return ::testing::AssertionFailure() << "gather " << kp.gather;
    }
    const uint32_t status = run_op(s, proto::HTP_OP_REPEAT, {&a}, dst, kp, params);
    if (status != proto::HTP_STATUS_OK || s.platform().last_violation() != "") {
        return ::testing::AssertionFailure() << "status " << status << ": " << s.platform().last_violation();
    }
    return matches(dst, [&](uint32_t * j) -> const operand & {
        for (int d = 0; d < 4; ++d) {
            j[d] %= a.t.ne[d];
        }
        if (wrong) {  // the reference reading the source untransposed
            std::swap(j[0], j[1]);
            j[0] %= a.t.ne[0];
            j[1] %= a.t.ne[1];
        }
        return a;
    });
}

TEST(HtpConcat, AlongEveryDimOfEveryType) {
    in_process_session s(config(), 4);
    uint32_t           seed = 1;
    for (const uint32_t type : {0u, 1u, 30u, 26u}) {
        const concat_case cases[] = {
            {type, {13, 5, 3, 2}, {7, 5, 3, 2}, 0, false, 1},    // odd row pieces side by side
            {type, {40, 5, 3, 2}, {40, 3, 3, 2}, 1, true, 4},    // b permuted
            {type, {33, 4, 2, 3}, {33, 4, 5, 3}, 2, false, 3},
            {type, {64, 3, 2, 1}, {64, 3, 2, 2}, 3, true, 2},
        };
        for (const concat_case & c : cases) {
            EXPECT_TRUE(run_concat(s, c, seed++)) << "type " << type << " dim " << c.dim;
        }
    }
}

TEST(HtpConcat, LongRowsInASmallVtcm) {
    // Rows of 8000 F32 (32 KB): 600 KiB hold 4 threads' blocks two slots deep, not three.
    const concat_case c{0, {5000, 3, 2, 1}, {3000, 3, 2, 1}, 0, false, 4};
    operand           a = make(0, c.a), b = make(0, c.b), d = make(0, {8000, 3, 2, 1});
    const int32_t     params[proto::HTP_OP_MAX_PARAMS] = {0};
    proto::htp_layout_kparams roomy{}, tight{};
    ASSERT_TRUE(proto::prepare_layout_kparams(proto::HTP_OP_CONCAT, a.t, &b.t, d.t, params, 4, 8u << 20, &roomy));
    ASSERT_TRUE(proto::prepare_layout_kparams(proto::HTP_OP_CONCAT, a.t, &b.t, d.t, params, 4, 600u << 10, &tight));
    EXPECT_LT(tight.pipe.n_slots, roomy.pipe.n_slots);
    in_process_session s(config(79, 600u << 10), 4);
    EXPECT_TRUE(run_concat(s, c, 11));
    EXPECT_TRUE(run_concat(s, {1, {3001, 3, 2, 1}, {4999, 3, 2, 1}, 0, true, 4}, 12));
}

TEST(HtpRepeat, OverEveryDimAndFromATransposedSource) {
    in_process_session s(config(), 4);
    const repeat_case  cases[] = {
        {0, {5, 3, 2, 1}, {15, 6, 2, 3}, false, 1},       // every dim repeated
        {1, {33, 2, 1, 1}, {99, 4, 3, 1}, false, 4},      // F16, odd rows
        {26, {40, 1, 2, 2}, {40, 7, 4, 2}, false, 3},     // I32, dim 0 once
        {30, {1, 3, 1, 1}, {64, 3, 2, 1}, false, 2},      // one element made a row
        {0, {5, 3, 1, 1}, {20, 6, 2, 1}, true, 4},        // transposed source: gathered, 4 repeats
        {1, {7, 4, 2, 1}, {112, 4, 2, 2}, true, 2},       // transposed F16, 16 repeats (the most)
        {0, {24, 3, 4, 1}, {48, 6, 8, 2}, false, 4, true}, // permuted source
    };
    uint32_t seed = 21;
    for (const repeat_case & c : cases) {
        EXPECT_TRUE(run_repeat(s, c, seed++)) << "type " << c.type << " a " << c.a[0] << "x" << c.a[1];
    }
    // More than 16 gathers per row: the host refuses.
    operand a = make(0, {5, 3, 1, 1}, {12, 4, 60, 60}), d = make(0, {85, 3, 1, 1});
    const int32_t params[proto::HTP_OP_MAX_PARAMS] = {};
    proto::htp_layout_kparams kp{};
    EXPECT_FALSE(proto::prepare_layout_kparams(proto::HTP_OP_REPEAT, a.t, nullptr, d.t, params, 2, 8u << 20, &kp));
}

// The comparison can fail: a reference with a and b swapped, or reading the source untransposed.
TEST(HtpLayout, TheReferenceCatchesSwappedSourcesOrATransposition) {
    in_process_session s(config(), 2);
    EXPECT_FALSE(run_concat(s, {0, {8, 4, 4, 1}, {8, 4, 4, 1}, 1, false, 2}, 31, true));
    EXPECT_FALSE(run_repeat(s, {0, {5, 3, 1, 1}, {10, 6, 1, 1}, true, 2}, 32, true));
}

} // namespace
