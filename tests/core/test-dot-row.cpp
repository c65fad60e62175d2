// dot_row (the CPU matmul's token-generation path) against the dequantize-then-dot path it replaces:
// bit for bit dot_f32 of the scalar reference dequantization, for every type with a dequantizer and
// row lengths that end inside, exactly at and past the 256-element chunks; and, independently of
// that order, within float rounding of a double-precision sum.
#include "core/dot-f32.h"
#include "hexnpu/ggml-types.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace hexnpu;

namespace {

struct case_data {
    std::vector<uint8_t> row;
    std::vector<float>   dequantized, y;
};

case_data make_case(ggml_type type, int64_t n, std::mt19937 & rng) {
    const ggml_type_traits * t = ggml_get_type_traits(type);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float>              x(static_cast<size_t>(n));
    // Blocks of very different magnitudes, as real weight rows have.
    for (int64_t i = 0; i < n; ++i) {
        x[size_t(i)] = normal(rng) * std::ldexp(1.0f, int((i / 32) % 7) - 3);
    }
    case_data c;
    c.row.resize(ggml_row_size(type, n));
    t->from_float_ref(x.data(), c.row.data(), n);
    c.dequantized.resize(size_t(n));
    t->to_float_ref(c.row.data(), c.dequantized.data(), n);
    c.y.resize(size_t(n));
    for (float & v : c.y) {
        v = normal(rng);
    }
    return c;
}

} // namespace

TEST(DotRow, EqualsDotOfTheDequantizedRowBitForBit) {
    std::mt19937 rng(7);
    int          types_checked = 0;
    for (int id = 0; id < GGML_TYPE_COUNT; ++id) {
        const ggml_type_traits * t = ggml_get_type_traits(id);
        if (!t->to_float) {
            EXPECT_EQ(t->dot_row, nullptr) << t->type_name;
            continue;
        }
        ASSERT_NE(t->dot_row, nullptr) << t->type_name;
        ++types_checked;
        const int64_t blck = t->blck_size;
        std::vector<int64_t> lengths;
        for (int64_t blocks : {1, 3, 8, 9, 16, 17, 40}) {
            lengths.push_back(blocks * blck);
        }
        if (blck == 1) {
            lengths.insert(lengths.end(), {7, 31, 33, 255, 256, 257, 263, 513, 1000});
        }
        for (int64_t n : lengths) {
            SCOPED_TRACE(std::string(t->type_name) + " n=" + std::to_string(n));
            const case_data c    = make_case(ggml_type(id), n, rng);
            const float     got  = t->dot_row(c.row.data(), c.y.data(), n);
            const float     want = dot_f32(c.dequantized.data(), c.y.data(), n);
            uint32_t        got_bits, want_bits;
            std::memcpy(&got_bits, &got, 4);
            std::memcpy(&want_bits, &want, 4);
            EXPECT_EQ(got_bits, want_bits) << got << " vs " << want;

            double exact = 0.0, magnitude = 0.0;
            for (int64_t i = 0; i < n; ++i) {
                exact += double(c.dequantized[size_t(i)]) * double(c.y[size_t(i)]);
                magnitude += std::fabs(double(c.dequantized[size_t(i)]) * double(c.y[size_t(i)]));
            }
            // A float sum of n terms is off by at most ~n·eps·sum|terms|.
            EXPECT_NEAR(got, exact, double(n) * 6e-8 * magnitude + 1e-30);
        }
    }
    EXPECT_GE(types_checked, 17);
}
