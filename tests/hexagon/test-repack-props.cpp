// Property tests of the tiled formats on random valid data (formats.md §4.5): tiled dequantization
// against ggml's flat reference, padding, allocation size, round trips and bit flips for the lossless
// types, thread-count independence, and the API's error paths.
#include "hexagon/repack.h"
#include "test-repack-util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace hexnpu;
using namespace repack_test;

namespace {

std::vector<uint8_t> repack(ggml_type t, const int64_t ne[4], const std::vector<uint8_t> & flat, int n_threads = 1) {
    std::vector<uint8_t>        tiled(hexagon::tiled_nbytes(t, ne));
    const hexagon::repack_result result = hexagon::repack_tensor(t, ne, flat.data(), tiled.data(), n_threads);
    EXPECT_TRUE(result.ok()) << result.error;
    return tiled;
}

std::array<int64_t, 4> padded_shape(ggml_type t, int64_t ne1, int64_t ne2, int64_t ne3) {
    return {is_kquant(t) ? 512 : 3 * k_cols(t), ne1, ne2, ne3};
}

// Every (byte, mask) of a tile that belongs to row r: the bits of all its codes and its scales.
// For the K-quants `j` is the tile's place in its super-block (Q2_K keeps d/-dmin in tiles r/8, 4 + r/8).
std::vector<std::pair<int, uint8_t>> row_owned_bits(ggml_type t, int r, int j) {
    std::vector<std::pair<int, uint8_t>> owned;
    const int all_ones = t == GGML_TYPE_Q3_K ? 3 : (1 << code_bits(t)) - 1;  // Q3_K: low2 = 3 and the sign bit
    for (int k = 0; k < k_cols(t); ++k) {
        for (const tile_bits & b : expected_tile_bits(t, r, k, all_ones)) {
            owned.emplace_back(b.byte, b.value);
        }
    }
    const auto bytes = [&](int first, int n) {
        for (int i = 0; i < n; ++i) {
            owned.emplace_back(first + i, 0xFF);
        }
    };
    switch (t) {
        case GGML_TYPE_Q8_0: bytes(1024 + 2 * r, 2); break;
        case GGML_TYPE_MXFP4: bytes(512 + r, 1); break;
        case GGML_TYPE_Q4_1:
        case GGML_TYPE_Q4_K:
        case GGML_TYPE_Q5_K: bytes(512 + 4 * r, 4); break;
        case GGML_TYPE_Q2_K:
            bytes(256 + r, 1);
            bytes(288 + r, 1);
            if (j == r / 8 || j == 4 + r / 8) {
                bytes(320 + 2 * (r % 8), 2);
            }
            break;
        case GGML_TYPE_Q3_K:
            bytes(384 + 2 * r, 2);
            bytes(448 + 2 * r, 2);
            break;
        case GGML_TYPE_Q6_K:
            bytes(768 + 2 * r, 2);
            bytes(832 + 2 * r, 2);
            break;
        default: bytes(512 + 2 * r, 2); break;  // Q4_0, IQ4_NL, Q1_0, Q2_0
    }
    return owned;
}

// Reference dequantization of a whole flat tensor with ggml's scalar to_float_ref.
std::vector<float> flat_reference(ggml_type t, const int64_t ne[4], const std::vector<uint8_t> & flat) {
    const int64_t      rows = ne[1] * ne[2] * ne[3];
    std::vector<float> out(size_t(rows * ne[0]));
    ggml_get_type_traits(t)->to_float_ref(flat.data(), out.data(), rows * ne[0]);
    return out;
}

// formats.md §3.4: |tiled - flat| <= 2^-11 (|D| |q| + |M|) + 2^-25 (|q| + 1), with D and M the exact
// scale products of element e of a flat K-quant block.
double kquant_error_bound(ggml_type t, const uint8_t * block, int e) {
    const int code = flat_code(t, block, e);
    double    D = 0, M = 0, q = 0;
    switch (t) {
        case GGML_TYPE_Q3_K:
            D = double(half_to_float(rd16(block + 108))) * q3_K_scale(block, e / 16);
            q = code - 4;
            break;
        case GGML_TYPE_Q4_K:
        case GGML_TYPE_Q5_K: {
            int sc = 0, m = 0;
            q4_K_scale_min(block, e / 32, &sc, &m);
            D = double(half_to_float(rd16(block))) * sc;
            M = -double(half_to_float(rd16(block + 2))) * m;
            q = code;
            break;
        }
        case GGML_TYPE_Q6_K:
            D = double(half_to_float(rd16(block + 208))) * int8_t(block[192 + e / 16]);
            q = code - 32;
            break;
        default: break;
    }
    return 0x1p-11 * (std::abs(D) * std::abs(q) + std::abs(M)) + 0x1p-25 * (std::abs(q) + 1);
}

} // namespace

// The test's own position formulas must give every bit of a tile to exactly one row: a check on the
// formulas the other tests trust.
TEST(TileProps, RowsPartitionEveryTileBit) {
    for (ggml_type t : kTiledTypes) {
        SCOPED_TRACE(ggml_type_name(t));
        for (int j = 0; j < (is_kquant(t) ? 8 : 1); ++j) {
            std::vector<uint8_t> seen(size_t(tile_bytes(t)), 0);
            for (int r = 0; r < 32; ++r) {
                for (const auto & [byte, mask] : row_owned_bits(t, r, j)) {
                    ASSERT_LT(byte, tile_bytes(t));
                    ASSERT_EQ(seen[byte] & mask, 0) << "byte " << byte << " row " << r << " j " << j;
                    seen[byte] |= mask;
                }
            }
            for (int i = 0; i < tile_bytes(t); ++i) {
                ASSERT_EQ(seen[i], 0xFF) << "byte " << i << " j " << j;
            }
        }
    }
}

TEST(TileProps, TiledDequantizationMatchesFlatReference) {
    std::mt19937_64 rng(1);
    for (ggml_type t : kTiledTypes) {
        for (const auto & shape : {padded_shape(t, 45, 3, 1), padded_shape(t, 33, 2, 2)}) {
            SCOPED_TRACE(testing::Message() << ggml_type_name(t) << " ne1 " << shape[1] << " ne3 " << shape[3]);
            const int64_t *            ne    = shape.data();
            const std::vector<uint8_t> flat  = random_flat(t, ne, rng);
            const std::vector<uint8_t> tiled = repack(t, ne, flat);
            const std::vector<float>   ref   = flat_reference(t, ne, flat);
            const int64_t              rows  = ne[1] * ne[2] * ne[3];
            std::vector<float>         y(ref.size());
            // In two calls, to exercise a row range that starts inside a slice.
            hexagon::dequantize_tiled_rows(t, ne, tiled.data(), 0, 50, y.data());
            hexagon::dequantize_tiled_rows(t, ne, tiled.data(), 50, rows, y.data() + 50 * ne[0]);
            for (int64_t row = 0; row < rows; ++row) {
                for (int64_t col = 0; col < ne[0]; ++col) {
                    const size_t i = size_t(row * ne[0] + col);
                    if (lossless(t)) {
                        ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(ref[i]))
                            << "row " << row << " col " << col << ": " << y[i] << " vs " << ref[i];
                    } else {
                        int             e     = 0;
                        const uint8_t * block = flat_block(t, flat, ne[0], row, col, &e);
                        ASSERT_LE(std::abs(double(y[i]) - double(ref[i])), kquant_error_bound(t, block, e))
                            << "row " << row << " col " << col << ": " << y[i] << " vs " << ref[i];
                    }
                }
            }
        }
    }
}

TEST(TileProps, PaddingRowsAreZeroAndDequantizeToZero) {
    std::mt19937_64 rng(2);
    for (ggml_type t : kTiledTypes) {
        SCOPED_TRACE(ggml_type_name(t));
        const auto                 shape = padded_shape(t, 45, 2, 1);
        const std::vector<uint8_t> tiled = repack(t, shape.data(), random_flat(t, shape.data(), rng));
        const int64_t              k_tiles = shape[0] / k_cols(t);
        for (int64_t slice = 0; slice < 2; ++slice) {
            for (int64_t kt = 0; kt < k_tiles; ++kt) {
                const size_t tile = tile_start(t, shape[0], shape[1], slice, 32, kt * k_cols(t));
                for (int r = 45 - 32; r < 32; ++r) {
                    for (const auto & [byte, mask] : row_owned_bits(t, r, int(kt % 8))) {
                        ASSERT_EQ(tiled[tile + byte] & mask, 0) << "slice " << slice << " kt " << kt << " row " << r;
                    }
                }
            }
        }
        // Slice 0 viewed as 64 rows (same tile count) exposes the padding rows to the dequantizer.
        const int64_t      view[4] = {shape[0], 64, 1, 1};
        std::vector<float> y(size_t(19 * shape[0]), 1.0f);
        hexagon::dequantize_tiled_rows(t, view, tiled.data(), 45, 64, y.data());
        for (float v : y) {
            ASSERT_EQ(v, 0.0f);
        }
    }
}

TEST(TileProps, SizeIsSlicesTimesSliceBytesAndEveryByteIsWritten) {
    std::mt19937_64 rng(3);
    for (ggml_type t : kTiledTypes) {
        SCOPED_TRACE(ggml_type_name(t));
        for (const auto & shape : {padded_shape(t, 1, 1, 1), padded_shape(t, 33, 3, 2), padded_shape(t, 64, 1, 5)}) {
            const int64_t * ne       = shape.data();
            const size_t    expected = size_t(ne[2] * ne[3] * ((ne[1] + 31) / 32) * (ne[0] / k_cols(t)) * tile_bytes(t));
            ASSERT_EQ(hexagon::tiled_nbytes(t, ne), expected);
            const std::vector<uint8_t> flat = random_flat(t, ne, rng);
            std::vector<uint8_t>       a(expected + 64, 0xAA), b(expected + 64, 0x55);
            ASSERT_TRUE(hexagon::repack_tensor(t, ne, flat.data(), a.data()).ok());
            ASSERT_TRUE(hexagon::repack_tensor(t, ne, flat.data(), b.data()).ok());
            EXPECT_TRUE(std::equal(a.begin(), a.begin() + ptrdiff_t(expected), b.begin()));  // nothing left unwritten
            EXPECT_TRUE(std::all_of(a.begin() + ptrdiff_t(expected), a.end(), [](uint8_t x) { return x == 0xAA; }));
            EXPECT_TRUE(std::all_of(b.begin() + ptrdiff_t(expected), b.end(), [](uint8_t x) { return x == 0x55; }));
        }
    }
}

TEST(TileProps, LosslessTypesRoundTrip) {
    std::mt19937_64 rng(4);
    for (ggml_type t : kTiledTypes) {
        if (!lossless(t)) {
            continue;
        }
        SCOPED_TRACE(ggml_type_name(t));
        for (const auto & shape : {padded_shape(t, 45, 3, 1), padded_shape(t, 32, 1, 2), padded_shape(t, 1, 2, 1)}) {
            const std::vector<uint8_t> flat  = random_flat(t, shape.data(), rng);
            const std::vector<uint8_t> tiled = repack(t, shape.data(), flat);
            std::vector<uint8_t>       back(flat.size(), 0xCD);
            const hexagon::repack_result result = hexagon::unpack_tensor(t, shape.data(), tiled.data(), back.data());
            ASSERT_TRUE(result.ok()) << result.error;
            EXPECT_EQ(back, flat);
        }
    }
}

// The lossless tilings are bit permutations: each single-bit flip of the flat input flips exactly one
// tiled bit, and different input bits land on different tiled bits.
TEST(TileProps, EverySingleBitFlipMovesToItsOwnTiledBit) {
    std::mt19937_64 rng(5);
    for (ggml_type t : kTiledTypes) {
        if (!lossless(t)) {
            continue;
        }
        SCOPED_TRACE(ggml_type_name(t));
        const int64_t              ne[4] = {is_kquant(t) ? 256 : k_cols(t), 33, 1, 1};
        std::vector<uint8_t>       flat  = random_flat(t, ne, rng);
        const std::vector<uint8_t> base  = repack(t, ne, flat);
        std::vector<uint8_t>       tiled(base.size());
        std::set<size_t>           landed;
        for (size_t bit = 0; bit < flat.size() * 8; ++bit) {
            flat[bit / 8] ^= uint8_t(1 << (bit % 8));
            ASSERT_TRUE(hexagon::repack_tensor(t, ne, flat.data(), tiled.data()).ok());
            flat[bit / 8] ^= uint8_t(1 << (bit % 8));
            size_t changed = 0, where = 0;
            for (size_t i = 0; i < tiled.size(); ++i) {
                if (const uint8_t diff = tiled[i] ^ base[i]) {
                    changed += size_t(std::popcount(diff));
                    where = 8 * i + size_t(std::countr_zero(diff));
                }
            }
            ASSERT_EQ(changed, 1u) << "flat bit " << bit;
            ASSERT_TRUE(landed.insert(where).second) << "flat bit " << bit << " lands on a taken tiled bit";
        }
    }
}

TEST(TileProps, OutputDoesNotDependOnThreadCount) {
    std::mt19937_64 rng(6);
    for (ggml_type t : {GGML_TYPE_Q4_0, GGML_TYPE_Q1_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q6_K}) {
        SCOPED_TRACE(ggml_type_name(t));
        // 1.5..3.5 MiB of tiles: split over several threads.
        const int64_t              ne[4] = {4096, t == GGML_TYPE_Q1_0 ? 1500 : 500, 2, 1};
        const std::vector<uint8_t> flat  = random_flat(t, ne, rng);
        const std::vector<uint8_t> one   = repack(t, ne, flat, 1);
        EXPECT_EQ(repack(t, ne, flat, 2), one);
        EXPECT_EQ(repack(t, ne, flat, 7), one);
    }
}

TEST(TileProps, ErrorsAndPreconditions) {
    const int64_t ne[4] = {64, 32, 1, 1};
    uint8_t       buf[4096]{};
    for (ggml_type t : {GGML_TYPE_F16, GGML_TYPE_Q5_0, GGML_TYPE_Q8_1, GGML_TYPE_IQ4_XS}) {
        EXPECT_FALSE(hexagon::is_tileable_type(t));
        const hexagon::repack_result result = hexagon::repack_tensor(t, ne, buf, buf);
        ASSERT_FALSE(result.ok());
        EXPECT_NE(result.error.find(ggml_type_name(t)), std::string::npos) << result.error;
        EXPECT_THROW(hexagon::tiled_nbytes(t, ne), std::invalid_argument);
    }
    for (ggml_type t : kTiledTypes) {
        EXPECT_TRUE(hexagon::is_tileable_type(t));
        EXPECT_EQ(hexagon::is_lossless_tiling(t), lossless(t));
    }
    const int64_t ragged[4] = {48, 32, 1, 1};  // not a whole number of Q4_0 blocks
    EXPECT_FALSE(hexagon::repack_tensor(GGML_TYPE_Q4_0, ragged, buf, buf).ok());
    EXPECT_FALSE(hexagon::repack_tensor(GGML_TYPE_Q4_K, ne, buf, buf).ok());  // 64 < one super-block
    float out[64];
    EXPECT_THROW(hexagon::dequantize_tiled_rows(GGML_TYPE_Q4_0, ne, buf, 31, 33, out), std::invalid_argument);
    EXPECT_THROW(hexagon::dequantize_tiled_rows(GGML_TYPE_Q4_0, ne, buf, 2, 1, out), std::invalid_argument);
    EXPECT_FALSE(hexagon::unpack_tensor(GGML_TYPE_Q6_K, ne, buf, buf).ok());
}
