// ARGSORT and TOP_K on the in-process virtual NPU (strict DMA on). GGML's semantics: dst row (i1, i2,
// i3), I32, holds the indices of src0's row in ascending or descending order (ARGSORT, op_params 0),
// or those of its k = dst.ne0 largest values, largest first (TOP_K); the CPU reference orders NaN
// above every number (last ascending, first descending and in TOP_K); equal values may come in any
// order (GGML leaves it open). Rows of distinct values are compared with std::sort's result byte for
// byte; rows with ties and NaNs by what the order requires (a permutation whose values are in order,
// the k chosen no smaller than any left out). Row lengths not a power of two (the network pads to
// one), permuted and padded sources, 1-4 threads, a long row's TOP_K by the vectors' minima (with
// and without ties on the threshold), a small VTCM that leaves fewer threads.
#include "htp-op-fixture.h"
#include "proto/htp-sort.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace {

using namespace htp_op_fixture;

struct sort_case {
    uint32_t opcode;  // HTP_OP_ARGSORT or HTP_OP_TOP_K
    uint32_t ne0, ne1, ne2;
    uint32_t k;       // TOP_K's; ARGSORT: ne0
    bool     descending;
    bool     permuted;
    uint32_t threads;
    int      values;  // 0 distinct, 1 few distinct (ties), 2 distinct with NaNs, infinities, zeros
};

std::string describe(const sort_case & c) {
    return std::string(c.opcode == proto::HTP_OP_TOP_K ? "TOP_K " + std::to_string(c.k) : c.descending ? "ARGSORT desc" : "ARGSORT asc") +
           " ne0 " + std::to_string(c.ne0) + " rows " + std::to_string(c.ne1) + "x" + std::to_string(c.ne2) +
           (c.permuted ? " permuted" : "") + " values " + std::to_string(c.values) + ", " + std::to_string(c.threads) +
           " threads";
}

// The CPU reference's order (NaN above everything), without its index tie-break.
bool before(float a, float b, bool descending) {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) {
        return descending ? na && !nb : nb && !na;
    }
    return descending ? a > b : a < b;
}

void fill_row(std::vector<float> & row, std::mt19937 & rng, int values) {
    const uint32_t n = uint32_t(row.size());
    if (values == 1) {
        for (float & v : row) {
            v = float(int(rng() % 7) - 3);
        }
        return;
    }
    // Distinct: a shuffled ramp with random offsets below its step (never two equal, never +-0 pairs).
    std::vector<uint32_t> perm(n);
    std::iota(perm.begin(), perm.end(), 0u);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (uint32_t i = 0; i < n; ++i) {
        row[i] = (float(perm[i]) - float(n) / 2 + 0.5f * std::uniform_real_distribution<float>(0.0f, 1.0f)(rng)) * 0.37f;
    }
    if (values == 2 && n >= 8) {
        uint32_t nan_bits[] = {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FFFFFFFu};
        for (uint32_t t = 0; t < 4; ++t) {
            std::memcpy(&row[(perm[t] * 7 + t) % n], &nan_bits[t], 4);  // NaNs of both signs and payloads
        }
        row[perm[4]] = std::numeric_limits<float>::infinity();
        row[perm[5]] = -std::numeric_limits<float>::infinity();
        row[perm[6]] = -0.0f;
    }
}

// wrong_order: the kernel is prepared with the other order; the exact check must fail.
void run_and_check(in_process_session & s, const sort_case & c, uint32_t seed, bool wrong_order = false) {
    SCOPED_TRACE(describe(c));
    std::mt19937 rng(seed);
    operand      src = c.permuted ? make(0, {c.ne0, c.ne1, c.ne2, 1},
                                         {4, c.ne2 * c.ne0 * 4 + 8, c.ne0 * 4, (c.ne2 * c.ne0 * 4 + 8) * c.ne1})
                                  : make(0, {c.ne0, c.ne1, c.ne2, 1}, {}, 12);
    operand      dst = make(26, {c.k, c.ne1, c.ne2, 1}, {}, 8);
    std::vector<std::vector<float>> rows(size_t(c.ne1) * c.ne2, std::vector<float>(c.ne0));
    for (uint32_t r = 0; r < rows.size(); ++r) {
        fill_row(rows[r], rng, c.values);
        for (uint32_t i = 0; i < c.ne0; ++i) {
            src.set<float>(rows[r][i], i, r % c.ne1, r / c.ne1);
        }
    }
    int32_t params[proto::HTP_OP_MAX_PARAMS] = {};
    params[0] = c.opcode == proto::HTP_OP_ARGSORT ? int32_t(c.descending != wrong_order) : 0;
    proto::htp_sort_kparams kp{};
    const proto::htp_verdict v = proto::prepare_sort_kparams(c.opcode, src.t, dst.t, params, c.threads,
                                                             s.platform().table().vtcm_size, &kp);
    ASSERT_TRUE(v) << v.why;
    if (c.opcode == proto::HTP_OP_TOP_K && c.ne0 >= 32768) {
        EXPECT_NE(kp.top_k_cap_log2, 0u) << "a long row's TOP_K goes by the vectors' minima";
    }
    ASSERT_EQ(run_op(s, c.opcode, {&src}, dst, kp, params), proto::HTP_STATUS_OK) << s.platform().last_violation();
    EXPECT_EQ(s.platform().last_violation(), "");
    EXPECT_TRUE(untouched_outside(dst));

    size_t bad = 0;
    for (uint32_t r = 0; r < rows.size() && bad < 5; ++r) {
        const std::vector<float> & x = rows[r];
        std::vector<int32_t>       got(c.k);
        for (uint32_t i = 0; i < c.k; ++i) {
            got[i] = dst.get<int32_t>(i, r % c.ne1, r / c.ne1);
        }
        if (c.values == 0) {  // distinct: one right answer
            std::vector<int32_t> want(c.ne0);
            std::iota(want.begin(), want.end(), 0);
            std::stable_sort(want.begin(), want.end(), [&](int32_t a, int32_t b) { return before(x[a], x[b], c.descending); });
            want.resize(c.k);
            if (std::memcmp(got.data(), want.data(), c.k * 4) != 0) {
                if (!wrong_order) {
                    const size_t at = std::mismatch(got.begin(), got.end(), want.begin()).first - got.begin();
                    ADD_FAILURE() << "row " << r << " index " << at << ": got " << got[at] << ", want " << want[at];
                }
                ++bad;
            }
            continue;
        }
        // Ties and NaNs: distinct indices in range, in order, and (TOP_K) none left out greater.
        std::vector<char> seen(c.ne0, 0);
        std::string       why;
        for (uint32_t i = 0; i < c.k && why.empty(); ++i) {
            if (got[i] < 0 || uint32_t(got[i]) >= c.ne0 || seen[size_t(got[i])]++) {
                why = "index " + std::to_string(i) + " is " + std::to_string(got[i]) + ": out of range or repeated";
            } else if (i > 0 && before(x[size_t(got[i])], x[size_t(got[i - 1])], c.descending)) {
                why = "indices " + std::to_string(i - 1) + ", " + std::to_string(i) + " out of order";
            }
        }
        for (uint32_t j = 0; j < c.ne0 && why.empty() && c.k < c.ne0; ++j) {
            if (!seen[j] && before(x[j], x[size_t(got[c.k - 1])], c.descending)) {
                why = "element " + std::to_string(j) + " belongs among the first k";
            }
        }
        if (!why.empty()) {
            if (!wrong_order) {
                ADD_FAILURE() << "row " << r << ": " << why;
            }
            ++bad;
        }
    }
    if (wrong_order) {
        EXPECT_GT(bad, 0u) << "the check accepts indices in the wrong order";
    }
}

TEST(HtpSort, ArgsortAscendingAndDescendingOfDistinctValues) {
    in_process_session s(config(), 4);
    using proto::HTP_OP_ARGSORT;
    const sort_case cases[] = {
        {HTP_OP_ARGSORT, 100, 7, 3, 100, false, false, 1, 0},   // 100 of 128 sorted: padding lanes
        {HTP_OP_ARGSORT, 100, 7, 3, 100, true, false, 4, 0},
        {HTP_OP_ARGSORT, 32, 40, 1, 32, false, true, 3, 0},     // one vector, permuted rows
        {HTP_OP_ARGSORT, 1, 9, 2, 1, true, false, 2, 0},        // one key
        {HTP_OP_ARGSORT, 1000, 5, 1, 1000, true, true, 4, 0},   // 1024-key network
        {HTP_OP_ARGSORT, 4096, 3, 1, 4096, false, false, 2, 0},
    };
    uint32_t seed = 1;
    for (const sort_case & c : cases) {
        run_and_check(s, c, seed++);
    }
}

TEST(HtpSort, TopKOfDistinctValues) {
    in_process_session s(config(), 4);
    using proto::HTP_OP_TOP_K;
    const sort_case cases[] = {
        {HTP_OP_TOP_K, 100, 7, 3, 5, true, false, 1, 0},
        {HTP_OP_TOP_K, 257, 6, 2, 40, true, true, 4, 0},
        {HTP_OP_TOP_K, 50, 3, 1, 50, true, false, 2, 0},        // k = n
        {HTP_OP_TOP_K, 40000, 2, 1, 8, true, false, 2, 0},      // long rows: by the vectors' minima
        {HTP_OP_TOP_K, 33000, 1, 2, 100, true, true, 2, 0},
        {HTP_OP_TOP_K, 40000, 3, 1, 1, true, false, 4, 0},      // k = 1
    };
    uint32_t seed = 11;
    for (const sort_case & c : cases) {
        run_and_check(s, c, seed++);
    }
}

// NaNs (both signs, quiet and signalling payloads, 0x7FFFFFFF), infinities, -0 and many ties: NaNs
// last ascending, first descending and in TOP_K, as the CPU reference orders them.
TEST(HtpSort, NansInfinitiesAndTies) {
    in_process_session s(config(), 4);
    using proto::HTP_OP_ARGSORT;
    using proto::HTP_OP_TOP_K;
    const sort_case cases[] = {
        {HTP_OP_ARGSORT, 100, 5, 2, 100, false, false, 3, 2},
        {HTP_OP_ARGSORT, 100, 5, 2, 100, true, false, 3, 2},
        {HTP_OP_ARGSORT, 70, 4, 1, 70, false, true, 2, 1},      // seven values, many ties
        {HTP_OP_TOP_K, 100, 5, 2, 6, true, false, 4, 2},        // the four NaNs and +inf among the top 6
        {HTP_OP_TOP_K, 300, 4, 1, 20, true, true, 2, 1},
        {HTP_OP_TOP_K, 40000, 2, 1, 16, true, false, 2, 1},     // ties on the minima's threshold: whole sort
        {HTP_OP_TOP_K, 40000, 1, 1, 12, true, false, 1, 2},     // long row with NaNs
    };
    uint32_t seed = 21;
    for (const sort_case & c : cases) {
        run_and_check(s, c, seed++);
    }
}

// 4000-key rows (16 KiB slots) in 128 KiB of VTCM: fewer threads than asked, same indices.
TEST(HtpSort, ASmallVtcmLeavesFewerThreads) {
    const sort_case c{proto::HTP_OP_ARGSORT, 4000, 6, 1, 4000, true, false, 4, 0};
    operand         src = make(0, {c.ne0, c.ne1, 1, 1}), dst = make(26, {c.ne0, c.ne1, 1, 1});
    const int32_t   params[proto::HTP_OP_MAX_PARAMS] = {1};
    proto::htp_sort_kparams roomy{}, tight{};
    ASSERT_TRUE(proto::prepare_sort_kparams(c.opcode, src.t, dst.t, params, 4, 8u << 20, &roomy));
    ASSERT_TRUE(proto::prepare_sort_kparams(c.opcode, src.t, dst.t, params, 4, 128u << 10, &tight));
    EXPECT_EQ(roomy.pipe.n_threads, 4u);
    EXPECT_LT(tight.pipe.n_threads, 4u);
    EXPECT_LE(tight.pipe.vtcm_size, 128u << 10);
    in_process_session s(config(79, 128u << 10), 4);
    run_and_check(s, c, 31);
    run_and_check(s, {proto::HTP_OP_TOP_K, 3000, 5, 1, 10, true, true, 4, 2}, 32);
}

// The checks can fail: indices sorted in the other order are caught, exact and order-based.
TEST(HtpSort, TheCheckCatchesTheWrongOrder) {
    in_process_session s(config(), 2);
    run_and_check(s, {proto::HTP_OP_ARGSORT, 100, 3, 1, 100, false, false, 2, 0}, 41, true);
    run_and_check(s, {proto::HTP_OP_ARGSORT, 100, 3, 1, 100, true, false, 2, 2}, 42, true);
}

} // namespace
