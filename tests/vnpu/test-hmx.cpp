// The virtual HMX unit (htp/hmx.h, vnpu/hmx): tile layout, matmul against scalar references,
// per-column scale/bias, accumulation across calls, SIMD path against the element loops, and
// every hardware rule the unit enforces.
#include "htp/hmx.h"

#include "core/fp16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace hexnpu::htp;
using hexnpu::fp16_to_fp32;
using hexnpu::fp32_to_fp16;

constexpr uint32_t VTCM_SIZE = 8u << 20;  // two 4 MiB banks, as on v73..v81
constexpr uint32_t TILE      = HMX_TILE_BYTES;

// ---- layout --------------------------------------------------------------------------------

TEST(HmxLayout, KnownPositions) {
    // Vector i/2 of 64 halfwords holds matrix rows i and i+1, column j at halfwords 2j and 2j+1.
    EXPECT_EQ(hmx_tile_index(0, 0), 0u);
    EXPECT_EQ(hmx_tile_index(1, 0), 1u);
    EXPECT_EQ(hmx_tile_index(0, 1), 2u);
    EXPECT_EQ(hmx_tile_index(1, 31), 63u);
    EXPECT_EQ(hmx_tile_index(2, 0), 64u);
    EXPECT_EQ(hmx_tile_index(3, 5), 64u + 11u);
    EXPECT_EQ(hmx_tile_index(30, 31), 1022u);
    EXPECT_EQ(hmx_tile_index(31, 31), 1023u);
}

TEST(HmxLayout, EveryElementAtTheFormulaOnce) {
    std::vector<int> hits(HMX_TILE_ELEMS, 0);
    for (uint32_t i = 0; i < 32; ++i) {
        for (uint32_t j = 0; j < 32; ++j) {
            const uint32_t vector = i / 2, lane = 2 * j + i % 2;
            ASSERT_EQ(hmx_tile_index(i, j), 64 * vector + lane) << i << "," << j;
            // formats.md §3.0 writes the weight tile as (r, k) at 64(k>>1)+2r+(k&1), r = output column.
            ASSERT_EQ(hmx_wt_index(i, j), 64 * (i >> 1) + 2 * j + (i & 1));
            ASSERT_EQ(hmx_act_index(i, j), hmx_tile_index(i, j));
            ASSERT_EQ(hmx_out_index(i, j), hmx_tile_index(i, j));
            ++hits[hmx_tile_index(i, j)];
        }
    }
    for (uint32_t h = 0; h < HMX_TILE_ELEMS; ++h) {
        EXPECT_EQ(hits[h], 1) << "halfword " << h;
    }
}

TEST(HmxLayout, PackAndUnpackRoundTrip) {
    constexpr uint32_t stride = 40;  // a wider row-major source, columns 32..39 not part of the tile
    std::vector<uint16_t> matrix(32 * stride), back(32 * stride, 0xFFFF), tile(HMX_TILE_ELEMS);
    for (uint32_t i = 0; i < matrix.size(); ++i) {
        matrix[i] = uint16_t(i * 7 + 1);
    }
    hmx_tile_pack(tile.data(), matrix.data(), stride);
    // Read the tile the other way round: halfword h belongs to row 2(h/64) + h%2, column (h%64)/2.
    for (uint32_t h = 0; h < HMX_TILE_ELEMS; ++h) {
        const uint32_t row = 2 * (h / 64) + h % 2, col = (h % 64) / 2;
        ASSERT_EQ(tile[h], matrix[row * stride + col]) << "halfword " << h;
    }
    hmx_tile_unpack(back.data(), stride, tile.data());
    for (uint32_t i = 0; i < 32; ++i) {
        for (uint32_t j = 0; j < stride; ++j) {
            ASSERT_EQ(back[i * stride + j], j < 32 ? matrix[i * stride + j] : 0xFFFF) << i << "," << j;
        }
    }
}

TEST(HmxLayout, ScaleBiasWord) {
    EXPECT_EQ(hmx_scale_bias_word(0x3C00, 0), 0x00003C00u);       // scale 1.0, bias 0
    EXPECT_EQ(hmx_scale_bias_word(0x4000, 0xBC00), 0xBC004000u);  // scale 2.0, bias -1.0
}

// ---- a unit on a test VTCM -----------------------------------------------------------------

class Hmx : public ::testing::Test {
  protected:
    void SetUp() override {
        vtcm_ = static_cast<uint8_t *>(std::aligned_alloc(HMX_VTCM_BANK_BYTES, VTCM_SIZE));
        ASSERT_NE(vtcm_, nullptr);
        std::memset(vtcm_, 0, VTCM_SIZE);
        hmx_unit_init(&unit_, vtcm_, VTCM_SIZE);
        ASSERT_EQ(hmx_lock(&unit_), HMX_OK);
    }
    void TearDown() override {
        EXPECT_EQ(hmx_unlock(&unit_), HMX_OK);
        std::free(vtcm_);
    }

    uint16_t * tile_at(uint32_t offset) { return reinterpret_cast<uint16_t *>(vtcm_ + offset); }

    // Scale/bias block at VTCM offset `offset`: column n gets (scale[n], bias[n]), given as fp16.
    const void * scale_bias_at(uint32_t offset, const uint16_t * scale, const uint16_t * bias) {
        uint8_t * block = vtcm_ + offset;
        std::memset(block, 0, HMX_SCALE_BIAS_BYTES);
        for (uint32_t n = 0; n < 32; ++n) {
            block[4 * n + 0] = uint8_t(scale[n]);
            block[4 * n + 1] = uint8_t(scale[n] >> 8);
            block[4 * n + 2] = uint8_t(bias[n]);
            block[4 * n + 3] = uint8_t(bias[n] >> 8);
        }
        return block;
    }
    const void * identity_scale_at(uint32_t offset) {
        uint16_t one[32], zero[32] = {};
        std::fill(one, one + 32, uint16_t(0x3C00));
        return scale_bias_at(offset, one, zero);
    }

    // out (M x N, fp16 row-major) = act (M x K) x wt (K x N) through the unit, each K run split
    // into mac calls of at most `run` tiles; scale/bias per output column (fp16, N entries).
    std::vector<uint16_t> matmul(const std::vector<uint16_t> & act, const std::vector<uint16_t> & wt, uint32_t M,
                                 uint32_t K, uint32_t N, const std::vector<uint16_t> & scale,
                                 const std::vector<uint16_t> & bias, uint32_t run = HMX_MAX_RUN_TILES) {
        const uint32_t mt = M / 32, kt = K / 32, nt = N / 32;
        // VTCM: activation runs | weight runs | output tiles | scale/bias blocks.
        const uint32_t act_off = 0, wt_off = act_off + mt * kt * TILE, out_off = wt_off + nt * kt * TILE,
                       sb_off = out_off + mt * nt * TILE;
        EXPECT_LE(sb_off + nt * HMX_SCALE_BIAS_BYTES, VTCM_SIZE);
        for (uint32_t m = 0; m < mt; ++m) {
            for (uint32_t k = 0; k < kt; ++k) {
                hmx_tile_pack(tile_at(act_off + (m * kt + k) * TILE), &act[(32 * m) * K + 32 * k], K);
            }
        }
        for (uint32_t n = 0; n < nt; ++n) {
            for (uint32_t k = 0; k < kt; ++k) {
                hmx_tile_pack(tile_at(wt_off + (n * kt + k) * TILE), &wt[(32 * k) * N + 32 * n], N);
            }
        }
        std::vector<uint16_t> out(M * N);
        for (uint32_t n = 0; n < nt; ++n) {
            const void * sb = scale_bias_at(sb_off + n * HMX_SCALE_BIAS_BYTES, &scale[32 * n], &bias[32 * n]);
            EXPECT_EQ(hmx_set_scale_bias(&unit_, sb), HMX_OK);
            for (uint32_t m = 0; m < mt; ++m) {
                for (uint32_t k = 0; k < kt; k += run) {
                    const uint32_t count = std::min(run, kt - k);
                    EXPECT_EQ(hmx_mac_fp16(&unit_, tile_at(act_off + (m * kt + k) * TILE),
                                           tile_at(wt_off + (n * kt + k) * TILE), count),
                              HMX_OK);
                }
                uint16_t * o = tile_at(out_off + (m * nt + n) * TILE);
                EXPECT_EQ(hmx_store_fp16(&unit_, o), HMX_OK);
                hmx_tile_unpack(&out[(32 * m) * N + 32 * n], N, o);
            }
        }
        EXPECT_EQ(hmx_fault(&unit_), nullptr) << hmx_fault(&unit_);
        return out;
    }

    uint8_t * vtcm_ = nullptr;
    hmx_unit  unit_;
};

std::vector<uint16_t> fp16_values(size_t count, std::mt19937 & rng, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<uint16_t>                 v(count);
    for (auto & h : v) {
        h = fp32_to_fp16(dist(rng));
    }
    return v;
}

std::vector<uint16_t> small_integers(size_t count, std::mt19937 & rng, int lo, int hi) {
    std::uniform_int_distribution<int> dist(lo, hi);
    std::vector<uint16_t>              v(count);
    for (auto & h : v) {
        h = fp32_to_fp16(float(dist(rng)));
    }
    return v;
}

std::vector<uint16_t> filled(size_t count, float value) { return std::vector<uint16_t>(count, fp32_to_fp16(value)); }

double ref_dot(const std::vector<uint16_t> & act, const std::vector<uint16_t> & wt, uint32_t K, uint32_t N,
               uint32_t m, uint32_t n, double * abs_sum = nullptr) {
    double sum = 0, abs = 0;
    for (uint32_t k = 0; k < K; ++k) {
        const double p = double(fp16_to_fp32(act[m * K + k])) * double(fp16_to_fp32(wt[k * N + n]));
        sum += p;
        abs += std::fabs(p);
    }
    if (abs_sum) {
        *abs_sum = abs;
    }
    return sum;
}

// ---- arithmetic ----------------------------------------------------------------------------

TEST_F(Hmx, IdentityAndPermutationWeightsReturnTheActivations) {
    std::mt19937 rng(1);
    const auto   act = fp16_values(32 * 32, rng, -100.0f, 100.0f);
    std::vector<uint16_t> eye(32 * 32, 0), shift(32 * 32, 0);
    for (uint32_t k = 0; k < 32; ++k) {
        eye[k * 32 + k]                   = 0x3C00;
        shift[k * 32 + (k + 31) % 32]     = 0x3C00;  // W[k][n] = 1 where k = n + 1 (mod 32)
    }
    const auto ones = filled(32, 1.0f), zeros = filled(32, 0.0f);
    EXPECT_EQ(matmul(act, eye, 32, 32, 32, ones, zeros), act);
    const auto out = matmul(act, shift, 32, 32, 32, ones, zeros);
    for (uint32_t m = 0; m < 32; ++m) {
        for (uint32_t n = 0; n < 32; ++n) {
            ASSERT_EQ(out[m * 32 + n], act[m * 32 + (n + 1) % 32]) << m << "," << n;
        }
    }
}

TEST_F(Hmx, SmallIntegerMatmulIsExact) {
    // |sum| <= 160 * 16 < 2048: every partial sum and the result are exact in fp32 and fp16.
    constexpr uint32_t M = 64, K = 160, N = 96;
    std::mt19937       rng(2);
    const auto act = small_integers(M * K, rng, -4, 4), wt = small_integers(K * N, rng, -4, 4);
    const auto out = matmul(act, wt, M, K, N, filled(N, 1.0f), filled(N, 0.0f));
    for (uint32_t m = 0; m < M; ++m) {
        for (uint32_t n = 0; n < N; ++n) {
            ASSERT_EQ(double(fp16_to_fp32(out[m * N + n])), ref_dot(act, wt, K, N, m, n)) << m << "," << n;
        }
    }
}

TEST_F(Hmx, RealMatmulWithinFp16Rounding) {
    constexpr uint32_t M = 32, K = 256, N = 64;
    std::mt19937       rng(3);
    const auto act = fp16_values(M * K, rng, -2.0f, 2.0f), wt = fp16_values(K * N, rng, -1.0f, 1.0f);
    const auto out = matmul(act, wt, M, K, N, filled(N, 1.0f), filled(N, 0.0f));
    for (uint32_t m = 0; m < M; ++m) {
        for (uint32_t n = 0; n < N; ++n) {
            double     abs_sum;
            const double ref = ref_dot(act, wt, K, N, m, n, &abs_sum);
            // fp32 accumulation: at most K roundings of 2^-24 relative to the running |sum|;
            // then one fp16 rounding (half an ulp at the result's binade, 2^-11 relative, or 2^-25
            // absolute in the subnormal range).
            const double acc_err = K * std::ldexp(abs_sum, -24);
            const double half_ulp = std::max(std::ldexp(std::fabs(ref) + acc_err, -11), std::ldexp(1.0, -25));
            ASSERT_NEAR(fp16_to_fp32(out[m * N + n]), ref, acc_err + half_ulp) << m << "," << n;
        }
    }
}

TEST_F(Hmx, ScaleAndBiasPerColumnInTheDocumentedOrder) {
    constexpr uint32_t M = 32, K = 64, N = 64;
    std::mt19937       rng(4);
    const auto act = small_integers(M * K, rng, -8, 8), wt = small_integers(K * N, rng, -8, 8);
    std::vector<uint16_t> scale(N), bias(N);
    for (uint32_t n = 0; n < N; ++n) {
        scale[n] = fp32_to_fp16(0.1f * float(n + 1) - 3.0f);   // inexact fp16 values, both signs
        bias[n]  = fp32_to_fp16(0.37f * float(n) - 11.0f);
    }
    scale[5] = 0x0001;  // the smallest subnormal: outputs round into the fp16 subnormal range
    scale[6] = 0x7BFF;  // 65504: large sums overflow to inf
    const auto out = matmul(act, wt, M, K, N, scale, bias);
    for (uint32_t m = 0; m < M; ++m) {
        for (uint32_t n = 0; n < N; ++n) {
            const double acc    = ref_dot(act, wt, K, N, m, n);  // an exact integer
            const float  scaled = float(acc * double(fp16_to_fp32(scale[n])));  // exact product, one fp32 rounding
            const float  biased = float(double(scaled) + double(fp16_to_fp32(bias[n])));
            ASSERT_EQ(out[m * N + n], fp32_to_fp16(biased)) << m << "," << n << " acc " << acc;
        }
    }
}

TEST_F(Hmx, ScaledValueIsRoundedToFp32BeforeTheBias) {
    // acc = 1 + 2^-14 + 2^-23 (exact: 1*1 + 2^-14*1 + 2^-23*1), scale = 1 + 2^-10, bias = -(1 + 2^-10).
    // acc*scale = 1 + 2^-10 + 2^-14 + 2^-23 + 2^-24 + 2^-33 rounds up in fp32 to
    // 1 + 2^-10 + 2^-14 + 2^-22; adding the bias leaves 2^-14 + 2^-22 = fp16 0x0404. Without the
    // fp32 rounding it would be 2^-14 + 3*2^-24 (+2^-33) = fp16 0x0403.
    std::vector<uint16_t> act(32 * 32, 0), wt(32 * 32, 0);
    act[0] = 0x3C00;  // 1
    act[1] = 0x0400;  // 2^-14
    act[2] = 0x0002;  // 2^-23 (subnormal)
    wt[0 * 32] = wt[1 * 32] = wt[2 * 32] = 0x3C00;
    std::vector<uint16_t> scale(32, 0x3C00), bias(32, 0);
    scale[0] = 0x3C01;
    bias[0]  = 0xBC01;
    EXPECT_EQ(matmul(act, wt, 32, 32, 32, scale, bias)[0], 0x0404);
}

TEST_F(Hmx, AccumulatesAcrossCallsAsOneRun) {
    constexpr uint32_t M = 32, K = 40 * 32, N = 32;  // 40 K tiles: more than one run can hold
    std::mt19937       rng(5);
    const auto act = fp16_values(M * K, rng, -1.0f, 1.0f), wt = fp16_values(K * N, rng, -1.0f, 1.0f);
    const auto ones = filled(N, 1.0f), zeros = filled(N, 0.0f);
    const auto whole = matmul(act, wt, M, K, N, ones, zeros);            // runs of 32 + 8
    EXPECT_EQ(matmul(act, wt, M, K, N, ones, zeros, 1), whole);          // tile by tile
    EXPECT_EQ(matmul(act, wt, M, K, N, ones, zeros, 7), whole);          // uneven runs
    for (uint32_t m = 0; m < M; ++m) {
        for (uint32_t n = 0; n < N; ++n) {
            double       abs_sum;
            const double ref = ref_dot(act, wt, K, N, m, n, &abs_sum);
            ASSERT_NEAR(fp16_to_fp32(whole[m * N + n]), ref,
                        K * std::ldexp(abs_sum, -24) + std::ldexp(std::fabs(ref), -10) + 0x1p-24)
                << m << "," << n;
        }
    }
}

TEST_F(Hmx, StoreAndClearEmptyTheAccumulator) {
    std::mt19937 rng(6);
    const auto   a = fp16_values(1024, rng, -1, 1), w = fp16_values(1024, rng, -1, 1);
    hmx_tile_pack(tile_at(0), a.data(), 32);
    hmx_tile_pack(tile_at(TILE), w.data(), 32);
    ASSERT_EQ(hmx_set_scale_bias(&unit_, identity_scale_at(8 * TILE)), HMX_OK);

    ASSERT_EQ(hmx_mac_fp16(&unit_, tile_at(0), tile_at(TILE), 1), HMX_OK);
    ASSERT_EQ(hmx_store_fp16(&unit_, tile_at(2 * TILE)), HMX_OK);
    ASSERT_EQ(hmx_store_fp16(&unit_, tile_at(3 * TILE)), HMX_OK);  // nothing accumulated since
    for (uint32_t h = 0; h < HMX_TILE_ELEMS; ++h) {
        ASSERT_EQ(tile_at(3 * TILE)[h], 0) << h;
    }

    ASSERT_EQ(hmx_mac_fp16(&unit_, tile_at(0), tile_at(TILE), 1), HMX_OK);
    ASSERT_EQ(hmx_clear_acc(&unit_), HMX_OK);
    ASSERT_EQ(hmx_mac_fp16(&unit_, tile_at(0), tile_at(TILE), 1), HMX_OK);
    ASSERT_EQ(hmx_store_fp16(&unit_, tile_at(4 * TILE)), HMX_OK);
    EXPECT_EQ(std::memcmp(tile_at(2 * TILE), tile_at(4 * TILE), TILE), 0);
}

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
namespace emu = hexnpu::vnpu::hmx;

using mac_fn   = void (*)(emu::acc_tile &, const uint16_t *, const uint16_t *);
using store_fn = void (*)(uint16_t *, const emu::acc_tile &, const float *, const float *);

void expect_same_bits_as_element_loops(mac_fn mac, store_fn store) {
    std::mt19937                          rng(7);
    std::uniform_int_distribution<int>    exponent(-20, 12);
    std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
    // Mixed magnitudes: cancellation, fp32 rounding in the sums, fp16 overflow and subnormals.
    auto tile = [&] {
        std::vector<uint16_t> t(HMX_TILE_ELEMS);
        for (auto & h : t) {
            h = fp32_to_fp16(std::ldexp(mantissa(rng), exponent(rng)));
        }
        return t;
    };
    alignas(64) float fast[32][32], slow[32][32];
    std::uniform_real_distribution<float> start(-1000.0f, 1000.0f);
    for (auto & row : fast) {
        for (auto & x : row) {
            x = start(rng);
        }
    }
    std::memcpy(slow, fast, sizeof fast);
    for (int t = 0; t < 6; ++t) {
        const auto a = tile(), w = tile();
        mac(fast, a.data(), w.data());
        emu::portable::mac_tile(slow, a.data(), w.data());
        ASSERT_EQ(std::memcmp(fast, slow, sizeof fast), 0) << "tile " << t;
    }
    float scale[32], bias[32];
    for (int n = 0; n < 32; ++n) {
        scale[n] = fp16_to_fp32(fp32_to_fp16(std::ldexp(mantissa(rng), exponent(rng))));
        bias[n]  = fp16_to_fp32(fp32_to_fp16(std::ldexp(mantissa(rng), exponent(rng))));
    }
    uint16_t out_fast[HMX_TILE_ELEMS], out_slow[HMX_TILE_ELEMS];
    store(out_fast, fast, scale, bias);
    emu::portable::store_tile(out_slow, slow, scale, bias);
    for (uint32_t h = 0; h < HMX_TILE_ELEMS; ++h) {
        ASSERT_EQ(out_fast[h], out_slow[h]) << "halfword " << h;
    }
}
#endif

#if defined(__AVX512F__)
TEST(HmxSimd, Avx512MatchesTheElementLoops) {
    expect_same_bits_as_element_loops(emu::avx512::mac_tile, emu::avx512::store_tile);
}
#endif

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
TEST(HmxSimd, Avx2MatchesTheElementLoops) {
    expect_same_bits_as_element_loops(emu::avx2::mac_tile, emu::avx2::store_tile);
}
#endif

// ---- hardware rules ------------------------------------------------------------------------

// The first violation faults the unit: the call does nothing, later calls fail until a reset.
#define EXPECT_FAULT(call, status, text)                                                        \
    do {                                                                                        \
        EXPECT_EQ((call), (status));                                                            \
        ASSERT_NE(hmx_fault(&unit_), nullptr);                                                  \
        EXPECT_NE(std::string(hmx_fault(&unit_)).find(text), std::string::npos) << hmx_fault(&unit_); \
        EXPECT_EQ(hmx_clear_acc(&unit_), HMX_ERR_FAULTED);                                      \
        hmx_reset(&unit_);                                                                      \
        EXPECT_EQ(hmx_fault(&unit_), nullptr);                                                  \
    } while (0)

// The unit with helper threads (its stores computed in batches on them, vnpu/hmx/hmx-deferral.h)
// against the unit alone, on a random program over 64 tiles that stores into its own operands
// (outputs read, operands and outputs overwritten later: the chains' order matters), clears, and
// changes scale/bias: every byte the same after hmx_drain. The helpers' unit runs each batch's
// chains last first, so a dependency it missed would read or overwrite a tile too early.
TEST(HmxHelpers, AProgramStoresTheSameBytesOnHelperThreads) {
    constexpr uint32_t TILES = 64, SB = TILES * TILE;
    struct unit_mem {
        uint8_t * vtcm;
        hmx_unit  unit;
    } units[2];
    std::mt19937 init(7);
    std::vector<uint16_t> values = fp16_values(TILES * HMX_TILE_ELEMS, init, -1.0f, 1.0f);
    for (uint32_t u = 0; u < 2; ++u) {
        units[u].vtcm = static_cast<uint8_t *>(std::aligned_alloc(HMX_VTCM_BANK_BYTES, VTCM_SIZE));
        std::memset(units[u].vtcm, 0, VTCM_SIZE);
        std::memcpy(units[u].vtcm, values.data(), values.size() * 2);
        for (uint32_t b = 0; b < 2; ++b) {  // scale 1/8 and 1/16: outputs stay near the inputs' range
            for (uint32_t n = 0; n < 32; ++n) {
                const uint32_t word = hmx_scale_bias_word(b == 0 ? 0x3000 : 0x2C00, 0);
                std::memcpy(units[u].vtcm + SB + b * HMX_SCALE_BIAS_BYTES + 4 * n, &word, 4);
            }
        }
        hmx_unit_init(&units[u].unit, units[u].vtcm, VTCM_SIZE);
        ASSERT_EQ(hmx_lock(&units[u].unit), HMX_OK);
    }
    hmx_unit_set_helpers(&units[1].unit, 3, /*last_first*/ true);
    // Products of 1-3 multiplies over any tiles, stored into tiles 0..31 (32..63 keep their
    // values: the program never runs dry of nonzero operands).
    std::mt19937                    rng(11);
    std::uniform_int_distribution<> kind(0, 99), count(1, 4), macs(1, 3);
    uint32_t                        stores = 0;
    auto each = [&](auto && call) {
        for (unit_mem & m : units) {
            ASSERT_EQ(call(m), HMX_OK) << "store " << stores;
        }
    };
    for (; stores < 1200; ++stores) {
        if (stores == 0 || kind(rng) < 10) {
            const uint32_t sb = uint32_t(rng() % 2);
            each([&](unit_mem & m) { return hmx_set_scale_bias(&m.unit, m.vtcm + SB + sb * HMX_SCALE_BIAS_BYTES); });
        }
        if (kind(rng) < 5) {
            each([&](unit_mem & m) { return hmx_clear_acc(&m.unit); });
        }
        for (int i = macs(rng); i > 0; --i) {
            const uint32_t n = uint32_t(count(rng));
            const uint32_t a = uint32_t(rng() % (TILES - n + 1)), w = uint32_t(rng() % (TILES - n + 1));
            each([&](unit_mem & m) { return hmx_mac_fp16(&m.unit, m.vtcm + a * TILE, m.vtcm + w * TILE, n); });
        }
        const uint32_t o = uint32_t(rng() % (TILES / 2));
        each([&](unit_mem & m) { return hmx_store_fp16(&m.unit, m.vtcm + o * TILE); });
    }
    hmx_drain(&units[1].unit);
    EXPECT_GT(stores, 3 * hexnpu::vnpu::hmx::deferral::MAX_TASKS);  // several batches
    for (uint32_t b = 0; b < TILES * TILE; ++b) {
        ASSERT_EQ(units[0].vtcm[b], units[1].vtcm[b]) << "tile " << b / TILE << " byte " << b % TILE;
    }
    for (unit_mem & m : units) {
        hmx_unit_set_helpers(&m.unit, 0);
        EXPECT_EQ(hmx_unlock(&m.unit), HMX_OK);
        std::free(m.vtcm);
    }
}

TEST_F(Hmx, TilesOutsideVtcmAreRejected) {
    alignas(2048) static uint16_t ddr[2][HMX_TILE_ELEMS];
    EXPECT_FAULT(hmx_mac_fp16(&unit_, ddr[0], tile_at(0), 1), HMX_ERR_NOT_VTCM, "activation tiles");
    EXPECT_FAULT(hmx_mac_fp16(&unit_, tile_at(0), ddr[1], 1), HMX_ERR_NOT_VTCM, "weight tiles");
    // A run that starts inside VTCM and ends past it.
    EXPECT_FAULT(hmx_mac_fp16(&unit_, tile_at(VTCM_SIZE - TILE), tile_at(0), 2), HMX_ERR_NOT_VTCM, "not inside VTCM");
    ASSERT_EQ(hmx_set_scale_bias(&unit_, identity_scale_at(0)), HMX_OK);
    EXPECT_FAULT(hmx_store_fp16(&unit_, ddr[0]), HMX_ERR_NOT_VTCM, "output tile");
    alignas(256) static uint8_t block[HMX_SCALE_BIAS_BYTES] = {};
    EXPECT_FAULT(hmx_set_scale_bias(&unit_, block), HMX_ERR_NOT_VTCM, "scale/bias");
}

TEST_F(Hmx, MisalignedOperandsAreRejected) {
    EXPECT_FAULT(hmx_mac_fp16(&unit_, tile_at(128), tile_at(4 * TILE), 1), HMX_ERR_MISALIGNED, "2048-byte");
    EXPECT_FAULT(hmx_mac_fp16(&unit_, tile_at(0), tile_at(4 * TILE + 1024), 1), HMX_ERR_MISALIGNED, "weight tiles");
    EXPECT_FAULT(hmx_set_scale_bias(&unit_, identity_scale_at(8 * TILE + 128)), HMX_ERR_MISALIGNED, "256-byte");
    ASSERT_EQ(hmx_set_scale_bias(&unit_, identity_scale_at(8 * TILE + 256)), HMX_OK);
    EXPECT_FAULT(hmx_store_fp16(&unit_, tile_at(2 * TILE + 128)), HMX_ERR_MISALIGNED, "output tile");
}

TEST_F(Hmx, RunsMustStayInOneBankAndBeOneToThirtyTwoTiles) {
    const uint32_t bank = HMX_VTCM_BANK_BYTES;
    EXPECT_EQ(hmx_mac_fp16(&unit_, tile_at(bank - 2 * TILE), tile_at(bank), 2), HMX_OK);  // ends at the boundary
    EXPECT_FAULT(hmx_mac_fp16(&unit_, tile_at(bank - TILE), tile_at(bank), 2), HMX_ERR_BANK_CROSSING, "4 MiB");
    EXPECT_FAULT(hmx_mac_fp16(&unit_, tile_at(0), tile_at(bank - TILE), 2), HMX_ERR_BANK_CROSSING, "weight tiles");
    EXPECT_FAULT(hmx_mac_fp16(&unit_, tile_at(0), tile_at(64 * TILE), 0), HMX_ERR_RUN_LENGTH, "0 tiles");
    EXPECT_FAULT(hmx_mac_fp16(&unit_, tile_at(0), tile_at(64 * TILE), 33), HMX_ERR_RUN_LENGTH, "33 tiles");
    EXPECT_EQ(hmx_mac_fp16(&unit_, tile_at(0), tile_at(64 * TILE), 32), HMX_OK);
}

TEST_F(Hmx, StoreNeedsAScaleBiasBlockWithZeroReservedHalf) {
    EXPECT_FAULT(hmx_store_fp16(&unit_, tile_at(0)), HMX_ERR_NO_SCALE_BIAS, "no scale/bias");
    uint8_t * block = static_cast<uint8_t *>(const_cast<void *>(identity_scale_at(TILE)));
    block[200]      = 1;
    EXPECT_FAULT(hmx_set_scale_bias(&unit_, block), HMX_ERR_RESERVED, "reserved byte 200");
    block[200] = 0;
    ASSERT_EQ(hmx_set_scale_bias(&unit_, block), HMX_OK);
    hmx_reset(&unit_);  // a reset forgets the block as well
    EXPECT_FAULT(hmx_store_fp16(&unit_, tile_at(0)), HMX_ERR_NO_SCALE_BIAS, "no scale/bias");
}

TEST_F(Hmx, AFaultingCallChangesNothing) {
    std::mt19937 rng(8);
    const auto   a = fp16_values(1024, rng, -1, 1);
    hmx_tile_pack(tile_at(0), a.data(), 32);
    hmx_tile_pack(tile_at(TILE), a.data(), 32);
    ASSERT_EQ(hmx_mac_fp16(&unit_, tile_at(0), tile_at(TILE), 1), HMX_OK);
    float before[32][32];
    std::memcpy(before, unit_.acc, sizeof before);
    EXPECT_EQ(hmx_mac_fp16(&unit_, tile_at(0), tile_at(TILE + 2), 1), HMX_ERR_MISALIGNED);
    EXPECT_EQ(std::memcmp(before, unit_.acc, sizeof before), 0);
    EXPECT_EQ(hmx_set_scale_bias(&unit_, identity_scale_at(4 * TILE)), HMX_ERR_FAULTED);
    std::memset(tile_at(2 * TILE), 0xAB, TILE);
    EXPECT_EQ(hmx_store_fp16(&unit_, tile_at(2 * TILE)), HMX_ERR_FAULTED);
    for (uint32_t h = 0; h < HMX_TILE_ELEMS; ++h) {
        ASSERT_EQ(tile_at(2 * TILE)[h], 0xABAB) << h;
    }
    EXPECT_NE(std::string(hmx_fault(&unit_)).find("weight tiles"), std::string::npos);  // the first fault stays
}

TEST_F(Hmx, OnlyTheLockingThreadUsesTheUnit) {
    hmx_status from_other = HMX_OK, lock_other = HMX_OK;
    std::thread other([&] {
        lock_other = hmx_lock(&unit_);
        from_other = hmx_mac_fp16(&unit_, tile_at(0), tile_at(TILE), 1);
    });
    other.join();
    EXPECT_EQ(lock_other, HMX_ERR_NOT_OWNER);
    EXPECT_EQ(from_other, HMX_ERR_NOT_OWNER);
    ASSERT_NE(hmx_fault(&unit_), nullptr);
    EXPECT_NE(std::string(hmx_fault(&unit_)).find("another thread holds"), std::string::npos) << hmx_fault(&unit_);
    // The owner's op fails too: the unit was misused while it ran.
    EXPECT_EQ(hmx_mac_fp16(&unit_, tile_at(0), tile_at(TILE), 1), HMX_ERR_FAULTED);
    hmx_reset(&unit_);

    // Once unlocked, no thread may use it, the former owner included; another thread may lock it.
    ASSERT_EQ(hmx_unlock(&unit_), HMX_OK);
    EXPECT_EQ(hmx_clear_acc(&unit_), HMX_ERR_NOT_OWNER);
    EXPECT_NE(std::string(hmx_fault(&unit_)).find("does not hold the unit"), std::string::npos);
    hmx_reset(&unit_);
    std::thread next([&] {
        lock_other = hmx_lock(&unit_);
        from_other = hmx_clear_acc(&unit_);
        hmx_unlock(&unit_);
    });
    next.join();
    EXPECT_EQ(lock_other, HMX_OK);
    EXPECT_EQ(from_other, HMX_OK);
    ASSERT_EQ(hmx_lock(&unit_), HMX_OK);  // for TearDown
}

} // namespace
