// The HVX matmul's integer cores against scalar models written from the formulas (proto/htp-matmul.h
// for the activation quantization, GGML's flat block definitions for the weights), not from the
// kernel code: the quantized activation block bit for bit, and each tile's 32 per-row integer sums
// exactly. Weight tiles come from the host's repack of flat blocks whose quants the test chose.
#include "core/fp16.h"
#include "core/quant-blocks.h"
#include "hexagon/repack.h"
#include "htp/hvx-quant-act.h"
#include "htp/hvx-tile-dot.h"
#include "act-quant-model.h"
#include "proto/tile-formats.h"

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
    int32_t sum, sum16;  // of all 32 values, of the first 16
};

// proto/htp-matmul.h's rule (act-quant-model.h).
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
    const htp_test::act_block_scale s = htp_test::model_act_scale(amax);
    if (s.zero) {
        return b;  // zero block
    }
    b.scale = s.d;
    for (int i = 0; i < 32; ++i) {
        b.q[i] = htp_test::model_act_q(x[i], s.c);
        b.sum += b.q[i];
        b.sum16 += i < 16 ? b.q[i] : 0;
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
        ASSERT_EQ(word(out[10], lane), m.sum16) << what;
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
    v[9]  = Q6_V_vsplat_R(a.sum);
    v[10] = Q6_V_vsplat_R(a.sum16);
    return v;
}

act_block random_act(std::mt19937 & rng) {
    std::uniform_int_distribution<int> q(-127, 127);
    act_block                          a{};
    for (int i = 0; i < 32; ++i) {
        a.q[i] = int8_t(q(rng));
        a.sum += a.q[i];
        a.sum16 += i < 16 ? a.q[i] : 0;
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


// The integer value of element e of a flat block, from GGML's block definitions (the unsigned code
// for the types with a minimum: Q4_1, Q2_K, Q4_K, Q5_K).
int flat_code(ggml_type type, const uint8_t * b, int e) {
    static const int8_t kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    static const int8_t kMxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
    auto nib = [&](const uint8_t * qs) { return (qs[e % 16] >> (4 * (e / 16))) & 15; };  // j and j + 16
    const int h = e >> 7, j = (e >> 5) & 3, l = e & 31;
    switch (type) {
        case GGML_TYPE_Q8_0: return int8_t(b[2 + e]);
        case GGML_TYPE_Q4_0: return nib(b + 2) - 8;
        case GGML_TYPE_Q4_1: return nib(b + 4);
        case GGML_TYPE_IQ4_NL: return kIq4nl[nib(b + 2)];
        case GGML_TYPE_MXFP4: return kMxfp4[nib(b + 1)];
        case GGML_TYPE_Q1_0: return (b[2 + e / 8] >> (e % 8)) & 1 ? 1 : -1;
        case GGML_TYPE_Q2_0: return ((b[2 + e / 4] >> (2 * (e % 4))) & 3) - 1;
        case GGML_TYPE_Q5_0: return (nib(b + 6) | ((b[2 + e / 8] >> (e % 8)) & 1) << 4) - 16;
        case GGML_TYPE_Q5_1: return nib(b + 8) | ((b[4 + e / 8] >> (e % 8)) & 1) << 4;
        case GGML_TYPE_Q2_K: return (b[16 + 32 * h + l] >> (2 * j)) & 3;
        case GGML_TYPE_Q3_K: return ((b[32 + 32 * h + l] >> (2 * j)) & 3) - ((b[e & 31] >> (e >> 5)) & 1 ? 0 : 4);
        case GGML_TYPE_Q4_K: return (b[16 + 32 * (e >> 6) + l] >> (4 * ((e >> 5) & 1))) & 15;
        case GGML_TYPE_Q5_K:
            return ((b[48 + 32 * (e >> 6) + l] >> (4 * ((e >> 5) & 1))) & 15) | ((b[16 + l] >> (e >> 5)) & 1) << 4;
        case GGML_TYPE_Q6_K:
            return (((b[64 * h + 32 * (j & 1) + l] >> (4 * (j >> 1))) & 15) | ((b[128 + 32 * h + l] >> (2 * j)) & 3) << 4) - 32;
        default: ADD_FAILURE() << "no model for " << ggml_type_name(type); return 0;
    }
}

// Activation block t of a tile (tiles slot_size bytes apart) unpacked by the type's tile kernel.
void unpack_block(ggml_type type, const HVX_Vector * tiles, uint32_t slot_vectors, uint32_t t, HVX_Vector * w) {
    const HVX_Vector * tile = tiles + (t / 4) * slot_vectors;  // Q1_0: 4 blocks per tile
    switch (type) {
        case GGML_TYPE_Q8_0: return htp::tile_q8_0::unpack(tiles + t * slot_vectors, w);
        case GGML_TYPE_Q4_0: return htp::tile_q4_0::unpack(tiles + t * slot_vectors, w);
        case GGML_TYPE_Q4_1: return htp::tile_q4_1::unpack(tiles + t * slot_vectors, w);
        case GGML_TYPE_IQ4_NL: return htp::tile_iq4_nl::unpack(tiles + t * slot_vectors, w);
        case GGML_TYPE_MXFP4: return htp::tile_mxfp4::unpack(tiles + t * slot_vectors, w);
        case GGML_TYPE_Q1_0: return htp::tile_q1_0::unpack(tile, t % 4, w);
        case GGML_TYPE_Q2_0: return htp::tile_q2_0::unpack(tiles + (t / 2) * slot_vectors, t % 2, w);
        case GGML_TYPE_Q2_K: return htp::tile_q2_k::unpack(tiles + t * slot_vectors, w);
        case GGML_TYPE_Q3_K: return htp::tile_q3_k::unpack(tiles + t * slot_vectors, w);
        case GGML_TYPE_Q4_K: return htp::tile_q4_k::unpack(tiles + t * slot_vectors, w);
        case GGML_TYPE_Q5_K: return htp::tile_q5_k::unpack(tiles + t * slot_vectors, w);
        case GGML_TYPE_Q6_K: return htp::tile_q6_k::unpack(tiles + t * slot_vectors, w);
        default: ADD_FAILURE() << "no tile kernel for " << ggml_type_name(type);
    }
}

// Every tiled type: 32 rows of one flat block of random bytes (scale fields 1.0), tiled by the
// host's repack; each activation block's two 16-column half sums are exactly the model's.
TEST(HtpMatmulCores, EveryTiledTypesHalfSumsAreTheExactRowDotProducts) {
    const ggml_type types[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_IQ4_NL,
                               GGML_TYPE_MXFP4, GGML_TYPE_Q1_0, GGML_TYPE_Q2_0, GGML_TYPE_Q2_K,
                               GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};
    std::mt19937 rng(11);
    for (const ggml_type type : types) {
        const auto *   traits = ggml_get_type_traits(type);
        const int      elems  = int(traits->blck_size);
        const size_t   bytes  = traits->type_size;
        // Where each type keeps its fp16 scales (set to 1.0 so the repack's products stay finite).
        std::vector<size_t> scale_at;
        switch (type) {
            case GGML_TYPE_MXFP4: break;
            case GGML_TYPE_Q2_K: scale_at = {80, 82}; break;
            case GGML_TYPE_Q3_K: scale_at = {108}; break;
            case GGML_TYPE_Q6_K: scale_at = {208}; break;
            case GGML_TYPE_Q4_1: case GGML_TYPE_Q4_K: case GGML_TYPE_Q5_K: scale_at = {0, 2}; break;
            default: scale_at = {0};
        }
        for (int iter = 0; iter < 20; ++iter) {
            std::vector<uint8_t> flat(32 * bytes);
            for (uint8_t & v : flat) {
                v = uint8_t(rng());
            }
            for (int r = 0; r < 32; ++r) {
                for (const size_t at : scale_at) {
                    flat[r * bytes + at] = 0x00, flat[r * bytes + at + 1] = 0x3C;
                }
            }
            const int64_t        ne[4] = {elems, 32, 1, 1};
            std::vector<uint8_t> tiled(hexagon::tiled_nbytes(type, ne), 0);
            ASSERT_TRUE(hexagon::repack_tensor(type, ne, flat.data(), tiled.data()).ok());
            // The tiles one slot (a multiple of 128 bytes) apart, as in VTCM.
            const size_t n_tiles = tiled.size() / proto::tile_size(proto::tiled_type(type));
            const uint32_t slot  = proto::tile_slot_size(proto::tiled_type(type));
            std::vector<HVX_Vector> slots(n_tiles * slot / 128);
            for (size_t t = 0; t < n_tiles; ++t) {
                std::memcpy(reinterpret_cast<uint8_t *>(slots.data()) + t * slot,
                            tiled.data() + t * proto::tile_size(proto::tiled_type(type)),
                            proto::tile_size(proto::tiled_type(type)));
            }
            for (int t = 0; t < elems / 32; ++t) {
                const act_block               a   = random_act(rng);
                const std::vector<HVX_Vector> act = act_vectors(a);
                HVX_Vector                    w[8];
                unpack_block(type, slots.data(), slot / 128, uint32_t(t), w);
                const HVX_Vector half0 = htp::hvx_tile_isum_groups(w, act.data(), 0, 4);
                const HVX_Vector half1 = htp::hvx_tile_isum_groups(w, act.data(), 4, 4);
                for (int r = 0; r < 32; ++r) {
                    int32_t want[2] = {0, 0};
                    for (int k = 0; k < 32; ++k) {
                        want[k / 16] += flat_code(type, &flat[r * bytes], 32 * t + k) * a.q[k];
                    }
                    ASSERT_EQ(word(half0, r), want[0]) << ggml_type_name(type) << " block " << t << " row " << r;
                    ASSERT_EQ(word(half1, r), want[1]) << ggml_type_name(type) << " block " << t << " row " << r;
                }
            }
        }
    }
}

// Flat Q5_0 / Q5_1 as the DMA stages them (word lane r = 4 bytes of row r's block: the qs words,
// the qh word): each 16-column half sum is exactly the model's, with activations in element order.
TEST(HtpMatmulCores, FlatQ5HalfSumsAreTheExactRowDotProducts) {
    std::mt19937 rng(13);
    for (const ggml_type type : {GGML_TYPE_Q5_0, GGML_TYPE_Q5_1}) {
        const size_t bytes = ggml_get_type_traits(type)->type_size;
        const size_t qs = type == GGML_TYPE_Q5_0 ? 6 : 8, qh = qs - 4;
        for (int iter = 0; iter < 50; ++iter) {
            std::vector<uint8_t> flat(32 * bytes);
            for (uint8_t & v : flat) {
                v = uint8_t(rng());
            }
            HVX_Vector st[5];
            for (int r = 0; r < 32; ++r) {
                for (int w = 0; w < 5; ++w) {
                    std::memcpy(reinterpret_cast<uint8_t *>(&st[w]) + 4 * r, &flat[r * bytes + (w < 4 ? qs + 4 * w : qh)], 4);
                }
            }
            const act_block               a   = random_act(rng);
            const std::vector<HVX_Vector> act = act_vectors(a);
            HVX_Vector                    w[8];
            htp::hvx_flat_unpack_q5(st, w, type == GGML_TYPE_Q5_0 ? 16 : 0);
            const HVX_Vector half0 = htp::hvx_tile_isum_groups(w, act.data(), 0, 4);
            const HVX_Vector half1 = htp::hvx_tile_isum_groups(w, act.data(), 4, 4);
            for (int r = 0; r < 32; ++r) {
                int32_t want[2] = {0, 0};
                for (int k = 0; k < 32; ++k) {
                    want[k / 16] += flat_code(type, &flat[r * bytes], k) * a.q[k];
                }
                ASSERT_EQ(word(half0, r), want[0]) << ggml_type_name(type) << " row " << r;
                ASSERT_EQ(word(half1, r), want[1]) << ggml_type_name(type) << " row " << r;
            }
        }
    }
}

} // namespace
