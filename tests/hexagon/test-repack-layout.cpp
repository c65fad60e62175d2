// Where every element and scale lands in the tiled formats: formats.md §4.1 (grid addressing), §4.2
// (intra-tile positions), §4.3 (scale locations) as literal values, and one-hot repacks at many
// positions checked against the test's own index formulas (test-repack-util.h).
#include "hexagon/repack.h"
#include "proto/tile-formats.h"
#include "test-repack-util.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace hexnpu;
using namespace repack_test;
namespace proto = hexnpu::proto;

namespace {

std::vector<uint8_t> repack(ggml_type t, const int64_t ne[4], const std::vector<uint8_t> & flat, int n_threads = 1) {
    std::vector<uint8_t>        tiled(hexagon::tiled_nbytes(t, ne));
    const hexagon::repack_result result = hexagon::repack_tensor(t, ne, flat.data(), tiled.data(), n_threads);
    EXPECT_TRUE(result.ok()) << result.error;
    return tiled;
}

// Repacks `flat` with one element changed to `code` and checks that the tiled bytes differ from
// the background repack exactly at the expected positions, with the expected values.
void expect_one_hot(ggml_type t, const int64_t ne[4], const std::vector<uint8_t> & background_flat,
                    const std::vector<uint8_t> & background_tiled, int64_t slice, int64_t row, int64_t col, int code) {
    SCOPED_TRACE(testing::Message() << ggml_type_name(t) << " slice " << slice << " row " << row << " col " << col
                                    << " code " << code);
    std::vector<uint8_t> flat = background_flat;
    set_code_at(t, flat, ne[0], slice * ne[1] + row, col, code);
    const std::vector<uint8_t> tiled = repack(t, ne, flat);

    // K-quant tiles cover 32 columns of a super-block; the others one flat block.
    const int    k     = int(col % k_cols(t));
    const size_t start = tile_start(t, ne[0], ne[1], slice, row, col);
    std::vector<std::pair<size_t, uint8_t>> expected;
    for (const tile_bits & b : expected_tile_bits(t, int(row % 32), k, code)) {
        expected.emplace_back(start + size_t(b.byte), b.value);
    }
    for (const auto & [at, value] : expected) {
        EXPECT_EQ(tiled[at], value) << "byte " << at - start << " of the tile";
    }
    for (size_t i = 0; i < tiled.size(); ++i) {
        const bool is_expected = std::any_of(expected.begin(), expected.end(), [&](const auto & x) { return x.first == i; });
        if (!is_expected && tiled[i] != background_tiled[i]) {
            ADD_FAILURE() << "unexpected change at tiled byte " << i << " (" << int(background_tiled[i]) << " -> "
                          << int(tiled[i]) << ")";
            return;
        }
    }
}

// Smallest tensor that is one K-column tile wide (a whole super-block for the K-quants) and 32 rows.
std::array<int64_t, 4> one_tile_shape(ggml_type t) { return {is_kquant(t) ? 256 : k_cols(t), 32, 1, 1}; }

} // namespace

// ---- §4.1 Grid addressing

struct grid_case {
    ggml_type t;
    int64_t   ne0, ne1, n, col;
    int64_t   ct, kt, r, k;
    int64_t   tile_idx;
    uint64_t  tile_off, slice_bytes;
};

const grid_case kGridCases[] = {
    {GGML_TYPE_Q4_0, 4096, 100, 99, 4095, 3, 127, 3, 31, 511, 294336, 294912},
    {GGML_TYPE_Q4_0, 4096, 100, 37, 70, 1, 2, 5, 6, 130, 74880, 294912},
    {GGML_TYPE_Q8_0, 2048, 64, 63, 33, 1, 1, 31, 1, 65, 70720, 139264},
    {GGML_TYPE_MXFP4, 2880, 2880, 2879, 2879, 89, 89, 31, 31, 8099, 4405856, 4406400},
    {GGML_TYPE_Q1_0, 1024, 48, 40, 300, 1, 2, 8, 44, 10, 5760, 9216},
    {GGML_TYPE_Q2_0, 512, 33, 32, 130, 1, 2, 0, 2, 10, 5760, 9216},
    {GGML_TYPE_Q2_K, 4096, 100, 45, 1000, 1, 31, 13, 8, 159, 53424, 172032},
    {GGML_TYPE_Q3_K, 4096, 100, 45, 1000, 1, 31, 13, 8, 159, 81408, 262144},
    {GGML_TYPE_Q4_K, 4096, 100, 45, 1000, 1, 31, 13, 8, 159, 101760, 327680},
    {GGML_TYPE_Q5_K, 4096, 100, 45, 1000, 1, 31, 13, 8, 159, 122112, 393216},
    {GGML_TYPE_Q6_K, 4096, 100, 45, 1000, 1, 31, 13, 8, 159, 142464, 458752},
};

TEST(TileGrid, ProtoFormulasMatchFormatsTable) {
    for (const grid_case & c : kGridCases) {
        SCOPED_TRACE(ggml_type_name(c.t));
        const auto    tt      = proto::tiled_type(c.t);
        const int64_t k_tiles = proto::n_k_tiles(tt, c.ne0);
        EXPECT_EQ(c.n / proto::TILE_N_ROWS, c.ct);
        EXPECT_EQ(c.col / proto::tile_k_cols(tt), c.kt);
        EXPECT_EQ(c.col % proto::tile_k_cols(tt), c.k);
        EXPECT_EQ(proto::tile_index(k_tiles, c.ct, c.kt), c.tile_idx);
        EXPECT_EQ(proto::tile_offset(tt, k_tiles, c.ct, c.kt), c.tile_off);
        EXPECT_EQ(proto::tiled_slice_bytes(tt, c.ne0, c.ne1), c.slice_bytes);
        const int64_t ne[4] = {c.ne0, c.ne1, 3, 2};
        EXPECT_EQ(hexagon::tiled_nbytes(c.t, ne), 6 * c.slice_bytes);
        EXPECT_EQ(proto::tiled_slice_offset(tt, c.ne0, c.ne1, 3, 2, 1), 5 * c.slice_bytes);
    }
}

TEST(TileGrid, OneHotLandsInTheTableTile) {
    for (const grid_case & c : kGridCases) {
        const int64_t              ne[4]      = {c.ne0, c.ne1, 1, 1};
        const std::vector<uint8_t> flat       = zero_code_flat(c.t, ne);
        const std::vector<uint8_t> background = repack(c.t, ne, flat);
        ASSERT_EQ(background.size(), c.slice_bytes);
        ASSERT_EQ(tile_start(c.t, c.ne0, c.ne1, 0, c.n, c.col), c.tile_off);
        expect_one_hot(c.t, ne, flat, background, 0, c.n, c.col, (1 << code_bits(c.t)) - 1 - (c.t == GGML_TYPE_Q3_K ? 4 : 0));
    }
}

TEST(TileGrid, Q2KScalesOfRow45AreInTiles153And157) {
    const int64_t        ne[4] = {4096, 100, 1, 1};
    std::vector<uint8_t> flat  = zero_code_flat(GGML_TYPE_Q2_K, ne);
    int                  e     = 0;
    uint8_t *            block = flat_block(GGML_TYPE_Q2_K, flat, ne[0], 45, 1000, &e);  // super-block 3
    wr16(block + 80, 0x1234);                                                            // d
    wr16(block + 82, 0x0567);                                                            // dmin
    const std::vector<uint8_t> tiled = repack(GGML_TYPE_Q2_K, ne, flat);
    EXPECT_EQ(rd16(&tiled[153 * 336 + 330]), 0x1234);
    EXPECT_EQ(rd16(&tiled[157 * 336 + 330]), 0x8567);
}

// ---- §4.2 Intra-tile positions

struct position_case {
    int r, k;
    int nibble_byte, nibble_shift;
    int q8_byte;
    int p2_byte, p2_shift;
    int q6_low_byte, q6_low_shift;
    int q3_neg_byte, q3_neg_bit;
    int q5_high_byte, q5_high_bit;
};

const position_case kPositions[] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 256, 0, 640, 0},         {0, 1, 0, 4, 1, 1, 0, 1, 0, 257, 0, 640, 1},
    {1, 0, 1, 0, 2, 4, 0, 4, 0, 260, 0, 641, 0},         {0, 2, 32, 0, 64, 2, 0, 2, 0, 258, 0, 672, 0},
    {0, 4, 64, 0, 128, 0, 2, 0, 4, 256, 1, 704, 0},      {0, 15, 224, 4, 449, 3, 6, 131, 4, 259, 3, 736, 3},
    {0, 16, 256, 0, 512, 128, 0, 256, 0, 256, 4, 640, 4}, {7, 9, 135, 4, 271, 29, 4, 157, 0, 285, 2, 647, 3},
    {5, 20, 325, 0, 650, 148, 2, 276, 4, 276, 5, 709, 4}, {17, 22, 369, 0, 738, 198, 2, 326, 4, 326, 5, 753, 4},
    {31, 31, 511, 4, 1023, 255, 6, 511, 4, 383, 7, 767, 7},
};

TEST(TilePositions, ProtoFormulasMatchFormatsTable) {
    for (const position_case & c : kPositions) {
        SCOPED_TRACE(testing::Message() << "(" << c.r << "," << c.k << ")");
        const auto nib = proto::colpair_nibble(c.r, c.k);
        EXPECT_EQ(int(nib.byte), c.nibble_byte);
        EXPECT_EQ(int(nib.shift), c.nibble_shift);
        EXPECT_EQ(int(proto::q8_0_byte(c.r, c.k)), c.q8_byte);
        const auto p2 = proto::plane2(c.r, c.k);
        EXPECT_EQ(int(p2.byte), c.p2_byte);
        EXPECT_EQ(int(p2.shift), c.p2_shift);
        const auto low = proto::q6_K_low_nibble(c.r, c.k);
        EXPECT_EQ(int(low.byte), c.q6_low_byte);
        EXPECT_EQ(int(low.shift), c.q6_low_shift);
        const auto neg = proto::q3_K_neg_bit(c.r, c.k);
        EXPECT_EQ(int(neg.byte), c.q3_neg_byte);
        EXPECT_EQ(int(neg.shift), c.q3_neg_bit);
        const auto high = proto::q5_K_high_bit(c.r, c.k);
        EXPECT_EQ(int(high.byte), c.q5_high_byte);
        EXPECT_EQ(int(high.shift), c.q5_high_bit);
    }
}

// Each table row through a real repack: a one-hot code in tile 0 (sub-range j = 0 for the K-quants).
TEST(TilePositions, RepackPutsTableRowsInPlace) {
    for (const position_case & c : kPositions) {
        SCOPED_TRACE(testing::Message() << "(" << c.r << "," << c.k << ")");
        struct check {
            ggml_type t;
            int       code;
            std::vector<std::pair<int, int>> bytes;  // (byte, value)
        };
        const std::vector<check> checks = {
            {GGML_TYPE_Q4_0, 15, {{c.nibble_byte, 15 << c.nibble_shift}}},
            {GGML_TYPE_IQ4_NL, 9, {{c.nibble_byte, 9 << c.nibble_shift}}},
            {GGML_TYPE_MXFP4, 6, {{c.nibble_byte, 6 << c.nibble_shift}}},
            {GGML_TYPE_Q4_1, 3, {{c.nibble_byte, 3 << c.nibble_shift}}},
            {GGML_TYPE_Q4_K, 13, {{c.nibble_byte, 13 << c.nibble_shift}}},
            {GGML_TYPE_Q8_0, 0x81, {{c.q8_byte, 0x81}}},
            {GGML_TYPE_Q2_K, 2, {{c.p2_byte, 2 << c.p2_shift}}},
            {GGML_TYPE_Q3_K, 1, {{c.p2_byte, 1 << c.p2_shift}, {c.q3_neg_byte, 1 << c.q3_neg_bit}}},  // q = -3
            {GGML_TYPE_Q5_K, 0x1A, {{c.nibble_byte, 0xA << c.nibble_shift}, {c.q5_high_byte, 1 << c.q5_high_bit}}},
            {GGML_TYPE_Q6_K, 0x27, {{c.q6_low_byte, 7 << c.q6_low_shift}, {512 + c.p2_byte, 2 << c.p2_shift}}},
        };
        for (const check & x : checks) {
            SCOPED_TRACE(ggml_type_name(x.t));
            const auto           shape = one_tile_shape(x.t);
            std::vector<uint8_t> flat  = zero_code_flat(x.t, shape.data());
            set_code_at(x.t, flat, shape[0], c.r, c.k, x.code);
            const std::vector<uint8_t> tiled = repack(x.t, shape.data(), flat);
            for (int i = 0; i < tile_bytes(x.t); ++i) {
                if (!is_quant_byte(x.t, i)) {
                    continue;
                }
                int expected = 0;
                for (const auto & [byte, value] : x.bytes) {
                    expected = byte == i ? value : expected;
                }
                ASSERT_EQ(int(tiled[i]), expected) << "tile byte " << i;
            }
        }
    }
}

TEST(TilePositions, Q1_0Table) {
    const int cases[][4] = {{0, 0, 0, 0},   {0, 1, 1, 0},    {1, 0, 4, 0},     {0, 4, 0, 1},
                            {0, 31, 3, 7},  {0, 32, 128, 0}, {5, 20, 20, 5},   {8, 44, 160, 3},
                            {17, 70, 326, 1}, {3, 99, 399, 0}, {31, 127, 511, 7}};
    const auto shape = one_tile_shape(GGML_TYPE_Q1_0);
    for (const auto & c : cases) {
        SCOPED_TRACE(testing::Message() << "(" << c[0] << "," << c[1] << ")");
        const auto f = proto::q1_0_bit(c[0], c[1]);
        EXPECT_EQ(int(f.byte), c[2]);
        EXPECT_EQ(int(f.shift), c[3]);
        std::vector<uint8_t> flat = zero_code_flat(GGML_TYPE_Q1_0, shape.data());
        set_code_at(GGML_TYPE_Q1_0, flat, 128, c[0], c[1], 1);
        const std::vector<uint8_t> tiled = repack(GGML_TYPE_Q1_0, shape.data(), flat);
        for (int i = 0; i < 512; ++i) {
            ASSERT_EQ(int(tiled[i]), i == c[2] ? 1 << c[3] : 0) << "tile byte " << i;
        }
    }
}

TEST(TilePositions, Q2_0Table) {
    const int cases[][4] = {{0, 0, 0, 0},    {0, 1, 1, 0},    {1, 0, 4, 0},    {0, 4, 0, 2},
                            {0, 15, 3, 6},   {0, 16, 128, 0}, {0, 31, 131, 6}, {0, 32, 256, 0},
                            {2, 2, 10, 0},   {5, 20, 148, 2}, {17, 38, 326, 2}, {31, 63, 511, 6}};
    const auto shape = one_tile_shape(GGML_TYPE_Q2_0);
    for (const auto & c : cases) {
        SCOPED_TRACE(testing::Message() << "(" << c[0] << "," << c[1] << ")");
        const auto f = proto::plane2(c[0], c[1]);
        EXPECT_EQ(int(f.byte), c[2]);
        EXPECT_EQ(int(f.shift), c[3]);
        std::vector<uint8_t> flat = zero_code_flat(GGML_TYPE_Q2_0, shape.data());
        set_code_at(GGML_TYPE_Q2_0, flat, 64, c[0], c[1], 3);
        const std::vector<uint8_t> tiled = repack(GGML_TYPE_Q2_0, shape.data(), flat);
        for (int i = 0; i < 512; ++i) {
            ASSERT_EQ(int(tiled[i]), i == c[2] ? 3 << c[3] : 0) << "tile byte " << i;
        }
    }
}

// formats.md §4.2 "one-hot recipe": the literal byte values.
TEST(TilePositions, OneHotRecipeValues) {
    struct recipe {
        ggml_type t;
        int       r, k, code, byte, value;
    };
    for (const recipe & x : {recipe{GGML_TYPE_Q4_0, 7, 9, 15, 135, 0xF0}, recipe{GGML_TYPE_Q8_0, 7, 9, 0x81, 271, 0x81},
                             recipe{GGML_TYPE_Q1_0, 17, 70, 1, 326, 0x02}, recipe{GGML_TYPE_Q2_0, 17, 38, 3, 326, 0x0C}}) {
        SCOPED_TRACE(ggml_type_name(x.t));
        const auto           shape = one_tile_shape(x.t);
        std::vector<uint8_t> flat  = zero_code_flat(x.t, shape.data());
        set_code_at(x.t, flat, shape[0], x.r, x.k, x.code);
        const std::vector<uint8_t> tiled = repack(x.t, shape.data(), flat);
        for (int i = 0; i < tile_bytes(x.t); ++i) {
            ASSERT_TRUE(!is_quant_byte(x.t, i) || tiled[i] == (i == x.byte ? x.value : 0)) << "tile byte " << i;
        }
    }
}

// Q3_K: from hmask all ones, clearing one hmask bit sets exactly that sign-plane bit (every j).
TEST(TilePositions, Q3KClearedHmaskBitSetsOneSignBit) {
    const auto shape = one_tile_shape(GGML_TYPE_Q3_K);
    for (int col : {0, 5, 31, 32, 77, 128, 200, 255}) {
        for (int r : {0, 13, 31}) {
            std::vector<uint8_t> flat = zero_code_flat(GGML_TYPE_Q3_K, shape.data());
            flat[size_t(r) * 110 + col % 32] &= uint8_t(~(1 << (col / 32)));
            const std::vector<uint8_t> tiled = repack(GGML_TYPE_Q3_K, shape.data(), flat);
            const int                  j = col / 32, k = col % 32;
            for (int i = 0; i < 8 * 512; ++i) {
                const bool in_quants = i % 512 < 384;
                if (in_quants) {
                    const int expected = i == j * 512 + 256 + 4 * r + k % 4 ? 1 << (k / 4) : 0;
                    ASSERT_EQ(int(tiled[i]), expected) << "col " << col << " row " << r << " byte " << i;
                }
            }
        }
    }
}

// ---- §4.3 Scale locations

TEST(TileScales, ProtoOffsetsMatchFormatsTable) {
    EXPECT_EQ(proto::row_d_offset(31), 574u);
    EXPECT_EQ(proto::q8_0_d_offset(31), 1086u);
    EXPECT_EQ(proto::mxfp4_e_offset(31), 543u);
    EXPECT_EQ(proto::pair_d_offset(31), 636u);
    EXPECT_EQ(proto::pair_m_offset(31), 638u);
    EXPECT_EQ(proto::q2_K_scale_offset(5, 20 / 16), 293u);
    EXPECT_EQ(proto::q3_K_d_offset(5, 20 / 16), 458u);
    EXPECT_EQ(proto::q6_K_d_offset(5, 20 / 16), 842u);
    EXPECT_EQ(proto::q2_K_d_tile(13), 1u);
    EXPECT_EQ(proto::q2_K_neg_dmin_tile(13), 5u);
    EXPECT_EQ(proto::q2_K_d_offset(13), 330u);
}

TEST(TileScales, BlockScalesLandAtTheirRow) {
    for (ggml_type t : {GGML_TYPE_Q4_0, GGML_TYPE_IQ4_NL, GGML_TYPE_Q1_0, GGML_TYPE_Q2_0, GGML_TYPE_Q8_0, GGML_TYPE_Q4_1,
                        GGML_TYPE_MXFP4}) {
        SCOPED_TRACE(ggml_type_name(t));
        const auto           shape = one_tile_shape(t);
        std::vector<uint8_t> flat  = zero_code_flat(t, shape.data());
        const size_t         rowb  = ggml_row_size(t, shape[0]);
        for (int r = 0; r < 32; ++r) {
            if (t == GGML_TYPE_MXFP4) {
                flat[r * rowb] = uint8_t(100 + r);
            } else {
                wr16(&flat[r * rowb], uint16_t(0x3C00 + r));
                if (t == GGML_TYPE_Q4_1) {
                    wr16(&flat[r * rowb + 2], uint16_t(0xB800 + r));
                }
            }
        }
        const std::vector<uint8_t> tiled = repack(t, shape.data(), flat);
        for (int r = 0; r < 32; ++r) {
            switch (t) {
                case GGML_TYPE_MXFP4: EXPECT_EQ(tiled[512 + r], 100 + r); break;
                case GGML_TYPE_Q8_0: EXPECT_EQ(rd16(&tiled[1024 + 2 * r]), 0x3C00 + r); break;
                case GGML_TYPE_Q4_1:
                    EXPECT_EQ(rd16(&tiled[512 + 4 * r]), 0x3C00 + r);
                    EXPECT_EQ(rd16(&tiled[514 + 4 * r]), 0xB800 + r);
                    break;
                default: EXPECT_EQ(rd16(&tiled[512 + 2 * r]), 0x3C00 + r); break;
            }
        }
    }
}

// K-quants: row 5, column 20 of sub-range j uses sub-block 2j + 1 (16-element sub-blocks) or j.
TEST(TileScales, KQuantScalesOfRow5Column20) {
    const int r = 5;
    for (int j = 0; j < 8; ++j) {
        SCOPED_TRACE(testing::Message() << "j " << j);
        {  // Q2_K: raw scale byte of sub-block 2j + 1 at 256 + 32 + 5 = 293
            const int64_t        ne[4] = {256, 32, 1, 1};
            std::vector<uint8_t> flat  = zero_code_flat(GGML_TYPE_Q2_K, ne);
            flat[r * 84 + 2 * j + 1]   = uint8_t(0xA7 ^ j);
            const std::vector<uint8_t> tiled = repack(GGML_TYPE_Q2_K, ne, flat);
            EXPECT_EQ(tiled[j * 336 + 293], 0xA7 ^ j);
        }
        {  // Q3_K: D of sub-block 2j + 1 at 458; d = 1.0, S = -3 -> 0xC200 (-3.0)
            const int64_t        ne[4] = {256, 32, 1, 1};
            std::vector<uint8_t> flat  = zero_code_flat(GGML_TYPE_Q3_K, ne);
            uint8_t *            blk   = &flat[r * 110];
            set_q3_K_scale(blk, 2 * j + 1, -3);
            wr16(blk + 108, 0x3C00);
            const std::vector<uint8_t> tiled = repack(GGML_TYPE_Q3_K, ne, flat);
            EXPECT_EQ(rd16(&tiled[j * 512 + 458]), 0xC200);
            EXPECT_EQ(rd16(&tiled[j * 512 + 384 + 2 * r]), 0xD000);  // sub-block 2j: raw 0 -> S = -32
        }
        {  // Q6_K: D of sub-block 2j + 1 at 842; d = 0.5, scale -7 -> -3.5 = 0xC300
            const int64_t        ne[4] = {256, 32, 1, 1};
            std::vector<uint8_t> flat  = zero_code_flat(GGML_TYPE_Q6_K, ne);
            flat[r * 210 + 192 + 2 * j + 1] = uint8_t(-7);
            wr16(&flat[r * 210 + 208], 0x3800);
            const std::vector<uint8_t> tiled = repack(GGML_TYPE_Q6_K, ne, flat);
            EXPECT_EQ(rd16(&tiled[j * 896 + 842]), 0xC300);
        }
        for (ggml_type t : {GGML_TYPE_Q4_K, GGML_TYPE_Q5_K}) {  // (D, M) of sub-block j at 532, 534
            SCOPED_TRACE(ggml_type_name(t));
            const int64_t        ne[4] = {256, 32, 1, 1};
            std::vector<uint8_t> flat  = zero_code_flat(t, ne);
            uint8_t *            blk   = &flat[r * ggml_type_size(t)];
            wr16(blk, 0x3C00);      // d = 1
            wr16(blk + 2, 0x4000);  // dmin = 2
            const int sc = 5 + j, m = 40 + j;  // 6-bit values
            set_q4_K_scale_min(blk, j, sc, m);
            const std::vector<uint8_t> tiled = repack(t, ne, flat);
            const size_t               tile  = size_t(j) * tile_bytes(t);
            EXPECT_EQ(half_to_float(rd16(&tiled[tile + 532])), float(sc));
            EXPECT_EQ(half_to_float(rd16(&tiled[tile + 534])), -2.0f * float(m));
        }
    }
}

// ---- One-hot everywhere: every type, padded shapes, several slices, many (row, column) positions.

TEST(TileOneHot, EveryTypeManyPositions) {
    std::mt19937_64 rng(42);
    for (ggml_type t : kTiledTypes) {
        const int64_t              ne[4]      = {is_kquant(t) ? 512 : 4 * k_cols(t), 45, 2, 2};
        const std::vector<uint8_t> flat       = zero_code_flat(t, ne);
        const std::vector<uint8_t> background = repack(t, ne, flat);
        std::vector<std::array<int64_t, 3>> positions = {
            {0, 0, 0}, {0, 0, ne[0] - 1}, {0, 44, 0}, {3, 44, ne[0] - 1}, {1, 31, 33}, {2, 32, 31}, {3, 7, 9}};
        for (int i = 0; i < 40; ++i) {
            positions.push_back({int64_t(rng() % 4), int64_t(rng() % 45), int64_t(rng() % ne[0])});
        }
        for (const auto & [slice, row, col] : positions) {
            int code = 0;
            do {
                code = int(rng() % (1u << code_bits(t)));
            } while (code == zero_code(t));
            expect_one_hot(t, ne, flat, background, slice, row, col, code);
            if (HasFailure()) {
                return;
            }
        }
    }
}
