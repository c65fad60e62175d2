// The 32 x 32 word transpose (HMX attention's K tiles, SSM_CONV's turns, the delta net's state) and
// the row-sum network (the delta net's and SSM_CONV's decode paths) against their definitions.
#include "htp/hvx-transpose.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

using namespace hexnpu::htp;

namespace {

float lane(const HVX_Vector & v, uint32_t i) {
    float f;
    std::memcpy(&f, reinterpret_cast<const uint8_t *>(&v) + 4 * i, 4);
    return f;
}

} // namespace

TEST(HvxTranspose, RowsBecomeColumnsWhateverTheStrides) {
    std::mt19937 rng(7);
    for (const uint32_t in_stride : {1u, 2u, 3u}) {
        for (const uint32_t out_stride : {1u, 4u}) {
            alignas(128) HVX_Vector in[32 * 3], out[32 * 4], tmp[64];
            std::vector<float>      m(32 * 32);
            for (float & f : m) {
                f = float(rng() % 1000) - 500.0f;
            }
            for (uint32_t r = 0; r < 32; ++r) {
                std::memcpy(&in[r * in_stride], &m[r * 32], 128);
            }
            hvx_transpose_32x32(in, in_stride, out, out_stride, tmp);
            for (uint32_t r = 0; r < 32; ++r) {
                for (uint32_t c = 0; c < 32; ++c) {
                    ASSERT_EQ(lane(out[c * out_stride], r), m[r * 32 + c]) << r << "," << c;
                }
            }
        }
    }
}

TEST(HvxRowSums, LaneRIsTheSumOfTheVectorPlacedForRowR) {
    // Integer values: every order of the additions gives the exact sum.
    std::mt19937 rng(11);
    alignas(128) HVX_Vector p[32];
    float                   want[32];
    for (uint32_t r = 0; r < 32; ++r) {
        float row[32];
        want[r] = 0.0f;
        for (float & f : row) {
            f = float(int(rng() % 201) - 100);
            want[r] += f;
        }
        std::memcpy(&p[hvx_row_sums_slot(r)], row, 128);
    }
    const HVX_Vector sums = hvx_sf_row_sums32(p);
    for (uint32_t r = 0; r < 32; ++r) {
        EXPECT_EQ(lane(sums, r), want[r]) << "row " << r;
    }
    // The slots are a permutation of the rows (bit reversal of 5 bits).
    bool seen[32] = {};
    for (uint32_t r = 0; r < 32; ++r) {
        ASSERT_LT(hvx_row_sums_slot(r), 32u);
        EXPECT_FALSE(seen[hvx_row_sums_slot(r)]);
        seen[hvx_row_sums_slot(r)] = true;
        EXPECT_EQ(hvx_row_sums_slot(hvx_row_sums_slot(r)), r);
    }
}
