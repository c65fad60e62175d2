// Values in the tiled formats: formats.md §4.4 value vectors, the §3.4 scale-product examples, the
// fp16-overflow rejection, the lossy-inverse property of Q3_K..Q6_K, and a scalar vrmpy model over
// the vrmpy-ordered tiles (Q1_0, Q2_0, Q2_K, Q3_K, Q6_K).
#include "hexagon/repack.h"
#include "proto/tile-formats.h"
#include "test-repack-util.h"

#include <gtest/gtest.h>

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

std::vector<float> dequantize(ggml_type t, const int64_t ne[4], const std::vector<uint8_t> & tiled) {
    std::vector<float> out(size_t(ne[0] * ne[1] * ne[2] * ne[3]));
    hexagon::dequantize_tiled_rows(t, ne, tiled.data(), 0, ne[1] * ne[2] * ne[3], out.data());
    return out;
}

const int64_t kOneSuperBlock[4] = {256, 32, 1, 1};

} // namespace

// ---- §4.4 and §3.4: rounded scale products

TEST(TileValues, Q3KScaleProducts) {
    std::vector<uint8_t> flat = zero_code_flat(GGML_TYPE_Q3_K, kOneSuperBlock);
    wr16(&flat[108], 0x1C00);
    set_q3_K_scale(flat.data(), 0, -32);  // raw 0
    wr16(&flat[110 + 108], 0x211F);       // row 1
    set_q3_K_scale(&flat[110], 0, 31);
    const std::vector<uint8_t> tiled = repack(GGML_TYPE_Q3_K, kOneSuperBlock, flat);
    EXPECT_EQ(rd16(&tiled[384]), 0xB000);      // -0.125, exact
    EXPECT_EQ(rd16(&tiled[384 + 2]), 0x34F6);  // rounded
}

TEST(TileValues, Q4KScaleProducts) {
    for (ggml_type t : {GGML_TYPE_Q4_K, GGML_TYPE_Q5_K}) {
        SCOPED_TRACE(ggml_type_name(t));
        const size_t         bs   = ggml_type_size(t);
        std::vector<uint8_t> flat = zero_code_flat(t, kOneSuperBlock);
        wr16(&flat[0], 0x211F);
        wr16(&flat[2], 0x3800);
        set_q4_K_scale_min(&flat[0], 0, 37, 0);
        set_q4_K_scale_min(&flat[0], 1, 31, 5);
        wr16(&flat[bs], 0x3C01);  // row 1
        set_q4_K_scale_min(&flat[bs], 0, 63, 0);
        const std::vector<uint8_t> tiled = repack(t, kOneSuperBlock, flat);
        const size_t               tile  = size_t(tile_bytes(t));
        EXPECT_EQ(rd16(&tiled[512]), 0x35EC);
        EXPECT_EQ(rd16(&tiled[514]), 0x8000);  // -(0.5 * 0) keeps its sign
        EXPECT_EQ(rd16(&tiled[tile + 512]), 0x34F6);
        EXPECT_EQ(rd16(&tiled[tile + 514]), 0xC100);  // -2.5
        EXPECT_EQ(rd16(&tiled[516]), 0x53E2);
        EXPECT_EQ(rd16(&tiled[2 * tile + 512]), 0x0000);  // d * 0 is +0, -(dmin * 0) is -0
        EXPECT_EQ(rd16(&tiled[2 * tile + 514]), 0x8000);
    }
}

TEST(TileValues, Q6KScaleProducts) {
    std::vector<uint8_t> flat = zero_code_flat(GGML_TYPE_Q6_K, kOneSuperBlock);
    wr16(&flat[208], 0x2E66);
    flat[192]     = 127;
    flat[193]     = uint8_t(-128);
    wr16(&flat[210 + 208], 0x211F);
    flat[210 + 192] = 127;
    flat[210 + 193] = uint8_t(-128);
    wr16(&flat[420 + 208], 0x1C00);
    flat[420 + 192] = uint8_t(-77);
    const std::vector<uint8_t> tiled = repack(GGML_TYPE_Q6_K, kOneSuperBlock, flat);
    EXPECT_EQ(rd16(&tiled[768]), 0x4A59);            // 12.6968994 -> 12.6953125
    EXPECT_EQ(rd16(&tiled[768 + 64]), 0xCA66);       // exact
    EXPECT_EQ(rd16(&tiled[768 + 2]), 0x3D15);        // rounded
    EXPECT_EQ(rd16(&tiled[768 + 64 + 2]), 0xBD1F);   // exact
    EXPECT_EQ(half_to_float(rd16(&tiled[768 + 4])), -77.0f * 0x1p-8f);  // d = 2^-8: exact for any scale
}

TEST(TileValues, MXFP4KernelScaleTable) {
    const std::pair<int, uint16_t> table[] = {{0, 0x0000},   {112, 0x0000}, {113, 0x0400}, {120, 0x2000}, {127, 0x3C00},
                                              {140, 0x7000}, {142, 0x7800}, {143, 0x7800}, {255, 0x7800}};
    for (const auto & [e, fp16] : table) {
        EXPECT_EQ(proto::mxfp4_kernel_scale_fp16(uint8_t(e)), fp16) << "e " << e;
    }
    // Times the true E2M1 values (half the table), the kernel scale reproduces 2^(e-128) * kvalues
    // exactly for e in [113, 140].
    for (int e = 113; e <= 140; ++e) {
        const float kernel_scale = half_to_float(proto::mxfp4_kernel_scale_fp16(uint8_t(e)));
        for (int v : {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}) {  // formats.md §1.2
            EXPECT_EQ(kernel_scale * (float(v) / 2), std::ldexp(float(v), e - 128)) << "e " << e;
        }
    }
}

TEST(TileValues, MXFP4DequantizesWithTheExactScale) {
    const int64_t        ne[4] = {32, 32, 1, 1};
    std::vector<uint8_t> flat  = zero_code_flat(GGML_TYPE_MXFP4, ne);
    const int            es[]  = {0, 1, 50, 112, 127, 143, 160, 200, 254};
    for (int r = 0; r < 9; ++r) {
        flat[r * 17]     = uint8_t(es[r]);
        flat[r * 17 + 1] = 0x7F;  // element 0: code 15 (-12), element 16: code 7 (+12)
    }
    const std::vector<float> y = dequantize(GGML_TYPE_MXFP4, ne, repack(GGML_TYPE_MXFP4, ne, flat));
    for (int r = 0; r < 9; ++r) {
        EXPECT_EQ(y[r * 32], -12.0f * std::ldexp(1.0f, es[r] - 128)) << "e " << es[r];
        EXPECT_EQ(y[r * 32 + 16], 12.0f * std::ldexp(1.0f, es[r] - 128)) << "e " << es[r];
        EXPECT_EQ(y[r * 32 + 1], 0.0f);
    }
}

TEST(TileValues, Q1_0AndQ2_0Codes) {
    {
        const int64_t        ne[4] = {128, 32, 1, 1};
        std::vector<uint8_t> flat  = zero_code_flat(GGML_TYPE_Q1_0, ne);
        wr16(&flat[0], 0x4100);  // 2.5
        set_flat_code(GGML_TYPE_Q1_0, flat.data(), 77, 1);
        const std::vector<float> y = dequantize(GGML_TYPE_Q1_0, ne, repack(GGML_TYPE_Q1_0, ne, flat));
        for (int k = 0; k < 128; ++k) {
            EXPECT_EQ(y[k], k == 77 ? 2.5f : -2.5f) << k;
        }
    }
    {
        const int64_t        ne[4] = {64, 32, 1, 1};
        std::vector<uint8_t> flat  = zero_code_flat(GGML_TYPE_Q2_0, ne);
        wr16(&flat[0], 0xB800);  // -0.5
        for (int k = 0; k < 64; ++k) {
            set_flat_code(GGML_TYPE_Q2_0, flat.data(), k, k % 4);
        }
        const std::vector<float> y = dequantize(GGML_TYPE_Q2_0, ne, repack(GGML_TYPE_Q2_0, ne, flat));
        const float expected[4]    = {0.5f, 0.0f, -0.5f, -1.0f};  // (c - 1) * d
        for (int k = 0; k < 64; ++k) {
            EXPECT_EQ(y[k], expected[k % 4]) << k;
        }
    }
}

TEST(TileValues, Q2KExample) {
    std::vector<uint8_t> flat = zero_code_flat(GGML_TYPE_Q2_K, kOneSuperBlock);
    wr16(&flat[80], 0x3C00);  // d = 1
    wr16(&flat[82], 0x3800);  // dmin = 0.5
    flat[5] = 0x3A;           // sub-block 5: sc = 10, m = 3
    const int e = 5 * 16 + 7;
    set_flat_code(GGML_TYPE_Q2_K, flat.data(), e, 2);
    const std::vector<float> y = dequantize(GGML_TYPE_Q2_K, kOneSuperBlock, repack(GGML_TYPE_Q2_K, kOneSuperBlock, flat));
    EXPECT_EQ(y[e], 18.5f);
    EXPECT_EQ(y[e + 1], -1.5f);  // q = 0
}

// ---- fp16 overflow of a scale product: not tileable, never inf in a tile

TEST(TileOverflow, Q6KRejectsAndNamesRowAndBlock) {
    const int64_t        ne[4] = {512, 45, 2, 1};
    std::vector<uint8_t> flat  = zero_code_flat(GGML_TYPE_Q6_K, ne);
    uint8_t *            blk   = &flat[size_t(45 + 37) * 2 * 210 + 210];  // slice 1, row 37, super-block 1
    wr16(blk + 208, 0x6400);                                               // d = 1024
    blk[192 + 3] = 127;                                                    // 130048 -> inf
    std::vector<uint8_t> tiled(hexagon::tiled_nbytes(GGML_TYPE_Q6_K, ne));
    for (int threads : {1, 3}) {
        const hexagon::repack_result result = hexagon::repack_tensor(GGML_TYPE_Q6_K, ne, flat.data(), tiled.data(), threads);
        ASSERT_FALSE(result.ok());
        EXPECT_NE(result.error.find("row 37"), std::string::npos) << result.error;
        EXPECT_NE(result.error.find("super-block 1"), std::string::npos) << result.error;
        EXPECT_NE(result.error.find("i2=1"), std::string::npos) << result.error;
        EXPECT_NE(result.error.find("130048"), std::string::npos) << result.error;
    }
}

TEST(TileOverflow, BoundaryOfFp16Range) {
    struct product_case {
        uint16_t d;
        int      scale;
        bool     fits;
    };
    // 2047 * 32 = 65504 is the largest fp16; 546 * 120 = 65520 rounds (ties to even) to inf.
    for (const product_case & c : {product_case{0x67FF, 32, true}, product_case{0x6044, 120, false},
                                   product_case{0x6044, 119, true}, product_case{0x6044, -120, false},
                                   product_case{0x7C00, 0, false}, product_case{0x7E00, 1, false}}) {
        SCOPED_TRACE(testing::Message() << "d " << std::hex << c.d << std::dec << " scale " << c.scale);
        std::vector<uint8_t> flat = zero_code_flat(GGML_TYPE_Q6_K, kOneSuperBlock);
        wr16(&flat[5 * 210 + 208], c.d);
        flat[5 * 210 + 192 + 9] = uint8_t(int8_t(c.scale));
        std::vector<uint8_t> tiled(hexagon::tiled_nbytes(GGML_TYPE_Q6_K, kOneSuperBlock));
        const hexagon::repack_result result = hexagon::repack_tensor(GGML_TYPE_Q6_K, kOneSuperBlock, flat.data(), tiled.data());
        EXPECT_EQ(result.ok(), c.fits) << result.error;
        if (c.fits) {  // within half an fp16 ulp of the exact product
            const double exact = double(half_to_float(c.d)) * c.scale;
            EXPECT_LE(std::abs(half_to_float(rd16(&tiled[4 * 896 + 768 + 64 + 10])) - exact), std::abs(exact) * 0x1p-11);
        }
    }
}

TEST(TileOverflow, EveryLossyTypeRejects) {
    {
        std::vector<uint8_t> flat = zero_code_flat(GGML_TYPE_Q3_K, kOneSuperBlock);
        wr16(&flat[3 * 110 + 108], 0x7000);  // 8192 * -32
        std::vector<uint8_t> tiled(hexagon::tiled_nbytes(GGML_TYPE_Q3_K, kOneSuperBlock));
        const auto result = hexagon::repack_tensor(GGML_TYPE_Q3_K, kOneSuperBlock, flat.data(), tiled.data());
        ASSERT_FALSE(result.ok());
        EXPECT_NE(result.error.find("row 3"), std::string::npos) << result.error;
    }
    for (ggml_type t : {GGML_TYPE_Q4_K, GGML_TYPE_Q5_K}) {
        for (int field : {0, 2}) {  // d * sc, then -dmin * m
            SCOPED_TRACE(testing::Message() << ggml_type_name(t) << " field " << field);
            std::vector<uint8_t> flat = zero_code_flat(t, kOneSuperBlock);
            uint8_t *            blk  = &flat[9 * ggml_type_size(t)];
            wr16(blk + field, 0x7000);
            set_q4_K_scale_min(blk, 6, 9, 9);
            std::vector<uint8_t> tiled(hexagon::tiled_nbytes(t, kOneSuperBlock));
            const auto result = hexagon::repack_tensor(t, kOneSuperBlock, flat.data(), tiled.data());
            ASSERT_FALSE(result.ok());
            EXPECT_NE(result.error.find("row 9"), std::string::npos) << result.error;
            EXPECT_NE(result.error.find(field == 0 ? "d*scale" : "-dmin*min"), std::string::npos) << result.error;
        }
    }
}

TEST(TileOverflow, LowestFailingRowIsReportedForAnyThreadCount) {
    const int64_t        ne[4] = {2048, 2048, 1, 1};  // 3.5 MiB of tiles: several threads take part
    std::vector<uint8_t> flat  = zero_code_flat(GGML_TYPE_Q6_K, ne);
    for (int row : {1900, 1000, 700, 1500}) {
        uint8_t * blk = &flat[size_t(row) * 8 * 210 + 2 * 210];
        wr16(blk + 208, 0x6400);
        blk[192] = uint8_t(-128);
    }
    std::vector<uint8_t> tiled(hexagon::tiled_nbytes(GGML_TYPE_Q6_K, ne));
    for (int threads : {1, 2, 8}) {
        const auto result = hexagon::repack_tensor(GGML_TYPE_Q6_K, ne, flat.data(), tiled.data(), threads);
        ASSERT_FALSE(result.ok());
        EXPECT_NE(result.error.find("row 700 "), std::string::npos) << result.error;
        EXPECT_NE(result.error.find("super-block 2"), std::string::npos) << result.error;
    }
}

// ---- Lossy inverse: (d, sc) and (2d, sc/2) give identical tiles, so no exact inverse exists.

TEST(TileLossy, DoubledDHalvedScalesGiveIdenticalTiles) {
    std::mt19937_64 rng(7);
    const int64_t   ne[4] = {512, 33, 2, 1};
    for (ggml_type t : {GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K}) {
        SCOPED_TRACE(ggml_type_name(t));
        std::vector<uint8_t> a  = random_flat(t, ne, rng);
        const size_t         bs = ggml_type_size(t);
        const int            d_at = t == GGML_TYPE_Q3_K ? 108 : t == GGML_TYPE_Q6_K ? 208 : 0;
        for (size_t at = 0; at < a.size(); at += bs) {
            uint8_t * blk = &a[at];
            wr16(blk + d_at, uint16_t(0x2000 + rng() % 0x2000));  // normal, room to double
            for (int s = 0; s < (t == GGML_TYPE_Q4_K || t == GGML_TYPE_Q5_K ? 8 : 16); ++s) {
                if (t == GGML_TYPE_Q3_K) {
                    set_q3_K_scale(blk, s, q3_K_scale(blk, s) & ~1);
                } else if (t == GGML_TYPE_Q6_K) {
                    blk[192 + s] &= 0xFE;
                } else {
                    int sc = 0, m = 0;
                    q4_K_scale_min(blk, s, &sc, &m);
                    set_q4_K_scale_min(blk, s, sc & ~1, m);
                }
            }
        }
        std::vector<uint8_t> b = a;
        for (size_t at = 0; at < b.size(); at += bs) {
            uint8_t * blk = &b[at];
            wr16(blk + d_at, uint16_t(rd16(blk + d_at) + 0x0400));  // exponent + 1: exactly 2d
            for (int s = 0; s < (t == GGML_TYPE_Q4_K || t == GGML_TYPE_Q5_K ? 8 : 16); ++s) {
                if (t == GGML_TYPE_Q3_K) {
                    set_q3_K_scale(blk, s, q3_K_scale(blk, s) / 2);
                } else if (t == GGML_TYPE_Q6_K) {
                    blk[192 + s] = uint8_t(int8_t(blk[192 + s]) / 2);
                } else {
                    int sc = 0, m = 0;
                    q4_K_scale_min(blk, s, &sc, &m);
                    set_q4_K_scale_min(blk, s, sc / 2, m);
                }
            }
        }
        ASSERT_NE(a, b);
        EXPECT_EQ(repack(t, ne, a), repack(t, ne, b));
        std::vector<uint8_t> back(a.size());
        EXPECT_FALSE(hexagon::unpack_tensor(t, ne, repack(t, ne, a).data(), back.data()).ok());
    }
}

// ---- vrmpy model: lane r of sum_g vrmpy(W_g, A_g) is row r's integer dot product.

namespace {

// Q6_vw_vrmpy(Vub/Vb, Vb): per 32-bit lane, the sum of the 4 byte products.
std::array<int32_t, 32> vrmpy(const std::array<int, 128> & w, const std::array<int8_t, 128> & a) {
    std::array<int32_t, 32> lanes{};
    for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < 4; ++i) {
            lanes[lane] += w[4 * lane + i] * a[4 * lane + i];
        }
    }
    return lanes;
}

// Byte vector of group g (columns 4g..4g+3 of the tile) as the kernel would unpack it, from the
// spec's vector-level description: which vector, which bits, and what the code means.
std::array<int, 128> unpack_group(ggml_type t, const uint8_t * tile, int g) {
    std::array<int, 128> w{};
    for (int b = 0; b < 128; ++b) {
        switch (t) {
            case GGML_TYPE_Q1_0: {  // quarter g/8 is vector g/8; bit g%8; +-1
                const int bit = (tile[128 * (g / 8) + b] >> (g % 8)) & 1;
                w[b]          = bit ? 1 : -1;
                break;
            }
            case GGML_TYPE_Q2_0:  // vector g/4 holds group g at bits 2(g%4); c - 1
                w[b] = ((tile[128 * (g / 4) + b] >> (2 * (g % 4))) & 3) - 1;
                break;
            case GGML_TYPE_Q2_K:  // vec m holds groups 4m..4m+3 at bit offsets 0, 2, 4, 6
                w[b] = (tile[128 * (g / 4) + b] >> (2 * (g % 4))) & 3;
                break;
            case GGML_TYPE_Q3_K: {  // low2 as Q2_K; vec 2 bit g: quant = low2 - 4
                const int low2 = (tile[128 * (g / 4) + b] >> (2 * (g % 4))) & 3;
                const int neg  = (tile[256 + b] >> g) & 1;
                w[b]           = low2 - 4 * neg;
                break;
            }
            case GGML_TYPE_Q6_K: {  // vec g/2: group 2i low nibble, 2i+1 high; vec 4 + g/4: high 2 bits
                const int low  = (tile[128 * (g / 2) + b] >> (4 * (g % 2))) & 15;
                const int high = (tile[512 + 128 * (g / 4) + b] >> (2 * (g % 4))) & 3;
                w[b]           = (low | high << 4) - 32;
                break;
            }
            default: break;
        }
    }
    return w;
}

} // namespace

TEST(TileVrmpy, LanesGiveRowDotProducts) {
    std::mt19937_64 rng(11);
    for (ggml_type t : {GGML_TYPE_Q1_0, GGML_TYPE_Q2_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q6_K}) {
        SCOPED_TRACE(ggml_type_name(t));
        const int64_t              ne[4] = {is_kquant(t) ? 512 : 2 * k_cols(t), 40, 1, 1};
        const std::vector<uint8_t> flat  = random_flat(t, ne, rng);
        const std::vector<uint8_t> tiled = repack(t, ne, flat);
        std::vector<int8_t>        act(static_cast<size_t>(ne[0]));
        for (int8_t & a : act) {
            a = int8_t(rng());
        }
        const int64_t k_tiles = ne[0] / k_cols(t);
        for (int64_t ct = 0; ct < 2; ++ct) {
            std::array<int64_t, 32> lanes{};
            for (int64_t kt = 0; kt < k_tiles; ++kt) {
                const uint8_t * tile = &tiled[size_t((ct * k_tiles + kt) * tile_bytes(t))];
                for (int g = 0; g < k_cols(t) / 4; ++g) {
                    std::array<int8_t, 128> a{};
                    for (int b = 0; b < 128; ++b) {
                        a[b] = act[size_t(kt * k_cols(t) + 4 * g + b % 4)];
                    }
                    const auto partial = vrmpy(unpack_group(t, tile, g), a);
                    for (int r = 0; r < 32; ++r) {
                        lanes[r] += partial[r];
                    }
                }
            }
            for (int r = 0; r < 32; ++r) {
                const int64_t n = ct * 32 + r;
                int64_t       expected = 0;
                if (n < ne[1]) {
                    for (int64_t col = 0; col < ne[0]; ++col) {
                        int             e   = 0;
                        const uint8_t * blk = flat_block(t, flat, ne[0], n, col, &e);
                        expected += int64_t(signed_value(t, flat_code(t, blk, e))) * act[size_t(col)];
                    }
                } else {  // padding rows: all-zero bits unpack to the codes of 0 bits
                    const int zero_bits_value = t == GGML_TYPE_Q1_0 ? -1 : t == GGML_TYPE_Q2_0 ? -1 : t == GGML_TYPE_Q6_K ? -32 : 0;
                    for (int64_t col = 0; col < ne[0]; ++col) {
                        expected += int64_t(zero_bits_value) * act[size_t(col)];
                    }
                }
                EXPECT_EQ(lanes[r], expected) << "row " << n;
            }
        }
    }
}
