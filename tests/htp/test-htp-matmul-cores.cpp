// The HVX matmul's integer cores against scalar models written from the formulas (proto/htp-matmul.h
// for the activation quantization, GGML's flat block definitions for the weights), not from the
// kernel code: the quantized activation block bit for bit, and each tile's 32 per-row integer sums
// exactly. Weight tiles come from the host's repack of flat blocks whose quants the test chose.
#include "core/fp16.h"
#include "core/quant-blocks.h"
#include "hexagon/repack.h"
#include "htp/hvx-quant-act.h"
#include "htp/hvx-tile-dot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

using namespace hexnpu;

struct act_block {
    int8_t  q[32];
    float   scale;
    int32_t sum;
};

// proto/htp-matmul.h: E the least integer with amax <= 127 * 2^E; q = round-half-even(x / 2^E).
act_block model_quantize(const float * x) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) {
        amax = std::fmax(amax, std::fabs(x[i]));
    }
    act_block b{};
    if (std::isinf(amax) || std::isnan(amax)) {
        b.scale = NAN;
        return b;
    }
    int e = -200;
    while (e < 200 && !(double(amax) <= 127.0 * std::ldexp(1.0, e))) {
        ++e;
    }
    if (amax == 0 || e < proto::HTP_MM_MIN_EXP) {
        return b;  // zero block
    }
    b.scale = float(std::ldexp(1.0, e));
    for (int i = 0; i < 32; ++i) {
        const double v = std::nearbyint(std::ldexp(double(x[i]), -e));  // round half to even
        b.q[i]         = int8_t(v);
        b.sum += b.q[i];
    }
    return b;
}

HVX_Vector load(const float * x) {
    HVX_Vector v;
    std::memcpy(&v, x, 128);
    return v;
}

int32_t word(const HVX_Vector & v, int lane) { return v[lane]; }
float   lane_f(const HVX_Vector & v, int lane) {
    float f;
    std::memcpy(&f, reinterpret_cast<const char *>(&v) + 4 * lane, 4);
    return f;
}

void expect_block(const HVX_Vector * out, const act_block & m, const char * what) {
    for (int g = 0; g < 8; ++g) {
        uint32_t w = 0;
        for (int j = 0; j < 4; ++j) {
            w |= uint32_t(uint8_t(m.q[4 * g + j])) << (8 * j);
        }
        for (int lane = 0; lane < 32; ++lane) {
            ASSERT_EQ(uint32_t(word(out[g], lane)), w) << what << " group " << g << " lane " << lane;
        }
    }
    for (int lane = 0; lane < 32; ++lane) {
        if (std::isnan(m.scale)) {
            ASSERT_TRUE(std::isnan(lane_f(out[8], lane))) << what;
        } else {
            ASSERT_EQ(lane_f(out[8], lane), m.scale) << what;
        }
        ASSERT_EQ(word(out[9], lane), m.sum) << what;
    }
}

TEST(HtpMatmulCores, ActivationBlocksQuantizeLikeTheModel) {
    std::mt19937 rng(5);
    std::vector<std::vector<float>> cases;
    for (int c = 0; c < 400; ++c) {
        std::uniform_int_distribution<int>    exp(-40, 40);
        std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
        const int                             e = exp(rng);
        std::vector<float>                    x(32);
        for (float & v : x) {
            v = std::ldexp(mant(rng), e);
        }
        cases.push_back(x);
    }
    cases.push_back(std::vector<float>(32, 0.0f));                 // zero block
    std::vector<float> edge(32, 0.0f);
    edge[7] = 127.0f, edge[8] = -0.5f, edge[9] = 1.5f, edge[10] = 2.5f;  // amax exactly 127 * 2^0, ties
    cases.push_back(edge);
    edge[7] = 127.5f;  // just above: E = 1
    cases.push_back(edge);
    edge[7] = std::ldexp(1.0f, -110);  // below 2^-100: zero
    cases.push_back(edge);
    edge[7] = INFINITY;
    cases.push_back(edge);
    for (size_t c = 0; c < cases.size(); ++c) {
        HVX_Vector out[proto::HTP_MM_ACT_VECTORS];
        htp::hvx_quantize_act_block(load(cases[c].data()), out);
        expect_block(out, model_quantize(cases[c].data()), ("case " + std::to_string(c)).c_str());
    }
}

// A tile from flat blocks: 32 rows x one 32-block of the given type with the quants chosen here.
template <class Block> std::vector<uint8_t> tile_of(ggml_type type, const std::vector<Block> & rows) {
    const int64_t        ne[4] = {32, 32, 1, 1};
    std::vector<uint8_t> tiled(hexagon::tiled_nbytes(type, ne) + 256, 0);
    EXPECT_TRUE(hexagon::repack_tensor(type, ne, rows.data(), tiled.data()).ok());
    return tiled;
}

std::vector<HVX_Vector> act_vectors(const act_block & a) {
    std::vector<HVX_Vector> v(proto::HTP_MM_ACT_VECTORS);
    for (int g = 0; g < 8; ++g) {
        uint32_t w = 0;
        for (int j = 0; j < 4; ++j) {
            w |= uint32_t(uint8_t(a.q[4 * g + j])) << (8 * j);
        }
        v[g] = Q6_V_vsplat_R(int32_t(w));
    }
    v[8] = hvx::intrinsics::Q6_V_vsplat_R(__builtin_bit_cast(int32_t, a.scale));
    v[9] = Q6_V_vsplat_R(a.sum);
    return v;
}

act_block random_act(std::mt19937 & rng) {
    std::uniform_int_distribution<int> q(-127, 127);
    act_block                          a{};
    for (int8_t & v : a.q) {
        v = int8_t(q(rng));
        a.sum += v;
    }
    a.scale = 0.25f;
    return a;
}

std::vector<HVX_Vector> as_vectors(const std::vector<uint8_t> & bytes) {
    std::vector<HVX_Vector> v((bytes.size() + 127) / 128);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
}

TEST(HtpMatmulCores, Q8_0TileSumsAreTheExactRowDotProducts) {
    std::mt19937                       rng(7);
    std::uniform_int_distribution<int> q(-128, 127);
    for (int iter = 0; iter < 50; ++iter) {
        std::vector<block_q8_0> rows(32);
        for (int r = 0; r < 32; ++r) {
            rows[r].d = fp32_to_fp16(0.5f + r);
            for (int8_t & v : rows[r].qs) {
                v = int8_t(iter == 0 ? (r % 2 ? -128 : 127) : q(rng));  // iteration 0: the extremes
            }
        }
        const act_block               a     = random_act(rng);
        const std::vector<HVX_Vector> tile  = as_vectors(tile_of(GGML_TYPE_Q8_0, rows));
        const std::vector<HVX_Vector> act   = act_vectors(a);
        HVX_Vector                    w[8];
        htp::hvx_tile_unpack_q8_0(tile.data(), w);
        const HVX_Vector isum  = htp::hvx_tile_isum(w, act.data());
        const HVX_Vector accum =
            htp::hvx_tile_accumulate(Q6_V_vzero(), isum, htp::hvx_hf_rows_to_sf(tile[8]), act.data());
        for (int r = 0; r < 32; ++r) {
            int32_t want = 0;
            for (int k = 0; k < 32; ++k) {
                want += int32_t(rows[r].qs[k]) * a.q[k];
            }
            ASSERT_EQ(word(isum, r), want) << "row " << r;
            EXPECT_EQ(lane_f(accum, r), float(want) * a.scale * fp16_to_fp32(rows[r].d)) << "row " << r;
        }
    }
}

TEST(HtpMatmulCores, Q4_0TileSumsAreTheExactRowDotProducts) {
    std::mt19937                       rng(9);
    std::uniform_int_distribution<int> nib(0, 15);
    for (int iter = 0; iter < 50; ++iter) {
        std::vector<block_q4_0> rows(32);
        std::vector<int>        values(32 * 32);  // q - 8, element k of row r
        for (int r = 0; r < 32; ++r) {
            rows[r].d = fp32_to_fp16(0.125f * (r + 1));
            int n[32];
            for (int k = 0; k < 32; ++k) {
                n[k]                = iter == 0 ? (k % 2 ? 15 : 0) : nib(rng);
                values[r * 32 + k] = n[k] - 8;
            }
            // GGML: byte j holds element j (low nibble) and element j + 16 (high nibble).
            for (int j = 0; j < 16; ++j) {
                rows[r].qs[j] = uint8_t(n[j] | (n[j + 16] << 4));
            }
        }
        const act_block               a     = random_act(rng);
        const std::vector<HVX_Vector> tile  = as_vectors(tile_of(GGML_TYPE_Q4_0, rows));
        const std::vector<HVX_Vector> act   = act_vectors(a);
        HVX_Vector                    w[8];
        htp::hvx_tile_unpack_q4_0(tile.data(), w);
        const HVX_Vector isum  = htp::hvx_tile_isum(w, act.data());
        const HVX_Vector accum =
            htp::hvx_tile_accumulate(Q6_V_vzero(), isum, htp::hvx_hf_rows_to_sf(tile[4]), act.data());
        for (int r = 0; r < 32; ++r) {
            int32_t want = 0;
            for (int k = 0; k < 32; ++k) {
                want += values[r * 32 + k] * a.q[k];
            }
            ASSERT_EQ(word(isum, r), want) << "row " << r;
            EXPECT_EQ(lane_f(accum, r), float(want) * a.scale * fp16_to_fp32(rows[r].d)) << "row " << r;
        }
    }
}

} // namespace
