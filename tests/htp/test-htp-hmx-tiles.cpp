// The HVX side of the HMX matmul (htp/hvx-hmx-tiles.h) against independent references: every
// tiled type's expansion equals, element for element, the fp16 rounding (core/fp16.h) of the
// scalar tile dequantization (hexagon/repack-dequant.cpp) at the HMX weight layout's position
// (htp/hmx.h), Q1_0's four and Q2_0's two HMX tiles per weight tile included; the row stats are
// the rows' L1 norms and maxima; the activation and output conversions and the power-of-two row
// and column scales follow their formulas.
#include "core/fp16.h"
#include "hexagon/repack.h"
#include "hexnpu/ggml-types.h"
#include "htp/hmx.h"
#include "htp/hvx-hmx-tiles.h"
#include "proto/tile-formats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

using namespace hexnpu;

constexpr ggml_type kTiledTypes[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q8_0, GGML_TYPE_IQ4_NL,
                                     GGML_TYPE_MXFP4, GGML_TYPE_Q1_0, GGML_TYPE_Q2_0, GGML_TYPE_Q2_K,
                                     GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};

void expand(ggml_type type, const uint8_t * slot, const HVX_Vector * dd, HVX_Vector * out, htp::hmx_row_stats & st) {
    switch (type) {
        case GGML_TYPE_Q4_0: return htp::hvx_expand_tile<htp::tile_q4_0>(slot, dd, out, st);
        case GGML_TYPE_Q4_1: return htp::hvx_expand_tile<htp::tile_q4_1>(slot, dd, out, st);
        case GGML_TYPE_Q8_0: return htp::hvx_expand_tile<htp::tile_q8_0>(slot, dd, out, st);
        case GGML_TYPE_IQ4_NL: return htp::hvx_expand_tile<htp::tile_iq4_nl>(slot, dd, out, st);
        case GGML_TYPE_MXFP4: return htp::hvx_expand_tile<htp::tile_mxfp4>(slot, dd, out, st);
        case GGML_TYPE_Q1_0: return htp::hvx_expand_tile<htp::tile_q1_0>(slot, dd, out, st);
        case GGML_TYPE_Q2_0: return htp::hvx_expand_tile<htp::tile_q2_0>(slot, dd, out, st);
        case GGML_TYPE_Q2_K: return htp::hvx_expand_tile<htp::tile_q2_k>(slot, dd, out, st);
        case GGML_TYPE_Q3_K: return htp::hvx_expand_tile<htp::tile_q3_k>(slot, dd, out, st);
        case GGML_TYPE_Q4_K: return htp::hvx_expand_tile<htp::tile_q4_k>(slot, dd, out, st);
        case GGML_TYPE_Q5_K: return htp::hvx_expand_tile<htp::tile_q5_k>(slot, dd, out, st);
        default: return htp::hvx_expand_tile<htp::tile_q6_k>(slot, dd, out, st);
    }
}

std::vector<float> lanes(const HVX_Vector & v) {
    std::vector<float> f(32);
    std::memcpy(f.data(), &v, 128);
    return f;
}

TEST(HmxTiles, EveryTypesExpansionIsTheFp16RoundingOfTheDequantizedTile) {
    std::mt19937 rng(7);
    for (const ggml_type type : kTiledTypes) {
        const auto         tt     = proto::tiled_type(type);
        const auto *       traits = ggml_get_type_traits(type);
        const int64_t      k      = 512;  // whole blocks of every type; 2 super-blocks
        const int64_t      ne[4]  = {k, 32, 1, 1};
        for (int trial = 0; trial < 4; ++trial) {
            // Rows of different magnitudes (down to fp16 subnormal weights, up to values that need
            // rounding to fp16): the expansion's rounding is exercised, not only exact values.
            std::vector<float> w(size_t(k) * 32);
            std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
            for (int64_t r = 0; r < 32; ++r) {
                const float mag = std::ldexp(1.0f, int(r % 8) * 3 - 12 + trial);
                for (int64_t i = 0; i < k; ++i) {
                    w[size_t(r * k + i)] = dist(rng) * mag;
                }
            }
            std::vector<uint8_t> flat(size_t(32) * (k / traits->blck_size) * traits->type_size);
            traits->from_float_ref(w.data(), flat.data(), int64_t(w.size()));
            std::vector<uint8_t> tiled(hexagon::tiled_nbytes(type, ne));
            ASSERT_TRUE(hexagon::repack_tensor(type, ne, flat.data(), tiled.data()).ok());
            std::vector<float> ref(w.size());
            hexagon::dequantize_tiled_rows(type, ne, tiled.data(), 0, 32, ref.data());

            // The tiles in 128-aligned slots, as the DMA lands them.
            const uint32_t size = proto::tile_size(tt), slot = proto::tile_slot_size(tt);
            const uint32_t n_tiles = uint32_t(proto::n_k_tiles(tt, k)), per = proto::tile_k_cols(tt) / 32;
            std::vector<HVX_Vector> slots(size_t(n_tiles) * slot / 128);
            auto * bytes = reinterpret_cast<uint8_t *>(slots.data());
            for (uint32_t t = 0; t < n_tiles; ++t) {
                std::memcpy(bytes + size_t(t) * slot, tiled.data() + size_t(t) * size, size);
            }
            std::vector<HVX_Vector> out(size_t(n_tiles) * per * htp::HMX_TILE_VECTORS);
            htp::hmx_row_stats st{Q6_V_vzero(), Q6_V_vzero()};
            for (uint32_t t = 0; t < n_tiles; ++t) {
                HVX_Vector dd[2] = {};  // Q2_K: the super-block's d and -dmin rows
                if (type == GGML_TYPE_Q2_K) {
                    htp::tile_q2_k::group(bytes + size_t(t & ~7u) * slot, slot, dd);
                }
                expand(type, bytes + size_t(t) * slot, dd, out.data() + size_t(t) * per * htp::HMX_TILE_VECTORS, st);
            }
            const auto * halves = reinterpret_cast<const uint16_t *>(out.data());
            std::vector<double> l1(32, 0.0);
            std::vector<float>  amax(32, 0.0f);
            for (uint32_t r = 0; r < 32; ++r) {
                for (uint32_t i = 0; i < k; ++i) {
                    const float    x    = ref[size_t(r) * k + i];
                    const uint16_t want = fp32_to_fp16(x);
                    const uint16_t got  = halves[size_t(i / 32) * htp::HMX_TILE_ELEMS + htp::hmx_wt_index(i % 32, r)];
                    ASSERT_EQ(got, want) << ggml_type_name(type) << " row " << r << " column " << i << " value " << x;
                    l1[r] += std::fabs(x);
                    amax[r] = std::fmax(amax[r], std::fabs(x));
                }
            }
            const std::vector<float> got_l1 = lanes(st.l1), got_max = lanes(st.max_bits);
            for (uint32_t r = 0; r < 32; ++r) {
                EXPECT_NEAR(got_l1[r], l1[r], l1[r] * 1e-5) << ggml_type_name(type) << " row " << r;
                EXPECT_EQ(got_max[r], amax[r]) << ggml_type_name(type) << " row " << r;
            }
        }
    }
}

HVX_Vector splat(float f) { return htp::hvx_splat_sf(f); }

TEST(HmxTiles, RowScaleBringsTheLargestMagnitudeIntoHalfToOneAndInvertsExactly) {
    for (const float amax : {1e5f, 1.0f, 0.75f, 0.5f, 3e-7f, 1e-30f, 1e-40f, 0.0f, 3e38f}) {
        HVX_Vector scale, inverse;
        const HVX_Vector bits = splat(amax);
        htp::hvx_row_scale(bits, &scale, &inverse);
        const float s = lanes(scale)[0], inv = lanes(inverse)[0];
        EXPECT_EQ(s * inv, 1.0f) << amax;
        if (amax >= 1.2e-38f && amax < 1e38f) {
            EXPECT_GE(amax * s, 0.5f) << amax;
            EXPECT_LT(amax * s, 1.0f) << amax;
        } else {
            // Zero and subnormal rows: the largest factor (below 1 still); beyond 2^126: below 4.
            EXPECT_LT(amax * s, amax < 1.0f ? 1.0f : 4.0f) << amax;
            EXPECT_TRUE(std::isfinite(fp16_to_fp32(fp32_to_fp16(amax * s)))) << amax;
        }
    }
}

TEST(HmxTiles, ColumnScaleKeepsTheBoundBelow2To15AndItsFactorInvertsIt) {
    for (const float bound : {0.0f, 1.0f, 32767.0f, 32768.0f, 65504.0f, 1e6f, 5e11f, 1e30f, INFINITY}) {
        HVX_Vector words, factor;
        htp::hvx_column_scale(splat(bound), &words, &factor);
        uint32_t w[32];
        std::memcpy(w, &words, 128);
        const float scale = fp16_to_fp32(uint16_t(w[0] & 0xFFFF));
        EXPECT_EQ(w[0] >> 16, 0u) << "bias 0";
        EXPECT_EQ(scale * lanes(factor)[0], 1.0f) << bound;
        if (bound <= 5e11f) {
            EXPECT_LT(bound * scale, 32768.0f) << bound;
            EXPECT_GE(bound * scale * 2, bound >= 32768.0f ? 32768.0f : 0.0f) << "the least such power: " << bound;
        } else {
            EXPECT_EQ(scale, std::ldexp(1.0f, -24)) << bound;
        }
    }
}

TEST(HmxTiles, ActivationAndOutputConversionsFollowTheTileLayout) {
    // Two rows -> activation vector: halfword 2k + (m & 1).
    std::vector<float> r0(32), r1(32);
    for (int i = 0; i < 32; ++i) {
        r0[i] = float(i) * 0.25f + 0.1f;
        r1[i] = -float(i) * 3.0f - 0.3f;
    }
    HVX_Vector a, b;
    std::memcpy(&a, r0.data(), 128);
    std::memcpy(&b, r1.data(), 128);
    const HVX_Vector v = htp::hvx_sf_interleave_to_hf(a, b);
    uint16_t         h[64];
    std::memcpy(h, &v, 128);
    for (int k = 0; k < 32; ++k) {
        EXPECT_EQ(h[htp::hmx_act_index(0, k)], fp32_to_fp16(r0[k]));
        EXPECT_EQ(h[htp::hmx_act_index(1, k)], fp32_to_fp16(r1[k]));
    }
    // Output tile -> rows, times column and row factors.
    std::vector<uint16_t> tile(htp::HMX_TILE_ELEMS);
    for (uint32_t m = 0; m < 32; ++m) {
        for (uint32_t n = 0; n < 32; ++n) {
            tile[htp::hmx_out_index(m, n)] = fp32_to_fp16(float(int(m * 32 + n) - 500) / 8.0f);
        }
    }
    std::vector<HVX_Vector> tv(16), rows(32), out(32);
    std::memcpy(tv.data(), tile.data(), 2048);
    std::vector<float> col(32);
    for (uint32_t n = 0; n < 32; ++n) {
        col[n] = std::ldexp(1.0f, int(n % 5));
    }
    HVX_Vector colv;
    std::memcpy(&colv, col.data(), 128);
    for (uint32_t m = 0; m < 32; ++m) {
        rows[m] = splat(std::ldexp(1.0f, -int(m % 3)));
    }
    htp::hvx_output_tile_to_rows(tv.data(), colv, rows.data(), out.data());
    for (uint32_t m = 0; m < 32; ++m) {
        const std::vector<float> got = lanes(out[m]);
        for (uint32_t n = 0; n < 32; ++n) {
            const float want = fp16_to_fp32(tile[htp::hmx_out_index(m, n)]) * col[n] * std::ldexp(1.0f, -int(m % 3));
            EXPECT_EQ(got[n], want) << "row " << m << " column " << n;
        }
    }
}

} // namespace
