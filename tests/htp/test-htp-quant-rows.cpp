// The HVX block quantizers SET_ROWS and CPY_Q run (htp/hvx-quant-rows.h) against the CPU
// reference's GGML quantizers (core/quants.h: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL), byte for byte, on blocks built to hit their edges:
// ties for the largest magnitude, +0 / -0 as the block's min or max, constant and all-zero blocks,
// codes exactly halfway, wide and narrow ranges, more blocks than one vector of scales holds.
#include "core/quants.h"
#include "htp/hvx-quant-rows.h"
#include "proto/htp-rows.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace {

using namespace hexnpu;

std::vector<float> edge_blocks(uint32_t seed) {
    std::mt19937                    rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<std::vector<float>> blocks;
    const auto random_block = [&](float scale, float shift) {
        std::vector<float> b(32);
        for (float & v : b) {
            v = normal(rng) * scale + shift;
        }
        return b;
    };
    blocks.push_back(std::vector<float>(32, 0.0f));
    blocks.push_back(std::vector<float>(32, -0.0f));
    blocks.push_back(std::vector<float>(32, 1.5f));   // max == min: d = 0
    blocks.push_back(std::vector<float>(32, -2.0f));
    for (int sign_first : {0, 1}) {                  // zeros of both signs, the first one -0 or +0
        std::vector<float> b(32, 0.0f);
        for (int j = 0; j < 32; ++j) {
            b[j] = ((j + sign_first) % 3 == 0) ? -0.0f : 0.0f;
        }
        blocks.push_back(b);
        std::vector<float> pos = b, neg = b;  // a zero as the minimum (pos) or the maximum (neg)
        pos[7]                 = 3.0f;
        neg[9]                 = -3.0f;
        blocks.push_back(pos);
        blocks.push_back(neg);
    }
    {
        std::vector<float> b = random_block(1.0f, 0.0f);  // +4 and -4 tie for the largest magnitude
        b[5]                 = -4.0f;
        b[20]                = 4.0f;
        blocks.push_back(b);
        std::swap(b[5], b[20]);
        blocks.push_back(b);
    }
    {
        std::vector<float> b(32);  // every code exactly halfway for Q4_1 (min 0, d = 1) and Q4_0
        for (int j = 0; j < 32; ++j) {
            b[j] = float(j % 15) + 0.5f;
        }
        b[0]  = 0.0f;
        b[31] = 15.0f;
        blocks.push_back(b);
        for (float & v : b) {
            v = -v;
        }
        blocks.push_back(b);
    }
    {
        std::vector<float> b(32);  // Q4_0 / Q5_0 levels on their halves: x id + 8.5 integral
        for (int j = 0; j < 32; ++j) {
            b[j] = float(j % 17) - 8.0f;
        }
        b[3] = -8.0f;
        blocks.push_back(b);
    }
    blocks.push_back(random_block(1e-3f, 0.0f));
    blocks.push_back(random_block(1e4f, 0.0f));
    blocks.push_back(random_block(1.0f, 100.0f));   // all positive: min far from 0
    blocks.push_back(random_block(1.0f, -100.0f));  // all negative
    blocks.push_back(random_block(1e-30f, 0.0f));   // scales near the correctly rounded range's edge
    while (blocks.size() < 45) {                    // past one vector of 32 block scales
        blocks.push_back(random_block(1.0f + float(blocks.size() % 5), 0.0f));
    }
    std::vector<float> row;
    for (const auto & b : blocks) {
        row.insert(row.end(), b.begin(), b.end());
    }
    return row;
}

template <class Q>
std::vector<uint8_t> npu_blocks(const std::vector<float> & row, uint32_t type) {
    const uint32_t          ne0 = uint32_t(row.size());
    const uint32_t          n   = proto::htp_qblock_slot_stride(ne0) / 128;
    std::vector<HVX_Vector> src(n), dst(n);
    std::memcpy(src.data(), row.data(), row.size() * 4);
    uint8_t * d = reinterpret_cast<uint8_t *>(dst.data());
    const auto at = [&](uint32_t offset) { return reinterpret_cast<HVX_Vector *>(d + offset); };
    htp::hvx_quantize_block_row<Q>(src.data(), ne0 / 32, at(0), at(proto::htp_qblock_scales_offset(ne0)),
                                   at(proto::htp_qblock_mins_offset(ne0)), at(proto::htp_qblock_qh_offset(ne0)),
                                   reinterpret_cast<HVX_Vector *>(reinterpret_cast<uint8_t *>(src.data()) +
                                                                  proto::htp_qblock_ids_offset(ne0)));
    // The blocks as the kernel's writebacks assemble them (rows-ops.cpp push_block_row).
    const proto::htp_qblock_layout l = proto::htp_qblock_layout_of(type);
    std::vector<uint8_t>           out(ne0 / 32 * l.bytes);
    for (uint32_t b = 0; b < ne0 / 32; ++b) {
        uint8_t * block = out.data() + b * l.bytes;
        std::memcpy(block + l.codes_at, d + b * l.codes, l.codes);
        std::memcpy(block, d + proto::htp_qblock_scales_offset(ne0) + 2 * b, 2);
        if (l.min_at != 0) {
            std::memcpy(block + l.min_at, d + proto::htp_qblock_mins_offset(ne0) + 2 * b, 2);
        }
        if (l.qh_at != 0) {
            std::memcpy(block + l.qh_at, d + proto::htp_qblock_qh_offset(ne0) + 4 * b, 4);
        }
    }
    return out;
}

template <class Q>
void expect_reference_bytes(uint32_t type, void (*reference)(const float *, void *, int64_t)) {
    for (uint32_t seed = 1; seed <= 4; ++seed) {
        const std::vector<float> row  = edge_blocks(seed);
        const std::vector<uint8_t> got = npu_blocks<Q>(row, type);
        std::vector<uint8_t>       want(got.size());
        reference(row.data(), want.data(), int64_t(row.size()));
        const uint32_t block = proto::htp_qblock_bytes(type);
        for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_EQ(got[i], want[i]) << "seed " << seed << ", block " << i / block << ", byte " << i % block;
        }
    }
}

TEST(HtpQuantRows, Q8_0IsGgmlsQuantizerBitForBit) { expect_reference_bytes<htp::q8_0_rows>(8, quantize_row_q8_0_ref); }
TEST(HtpQuantRows, Q4_0IsGgmlsQuantizerBitForBit) { expect_reference_bytes<htp::q4_0_rows>(2, quantize_row_q4_0_ref); }
TEST(HtpQuantRows, Q4_1IsGgmlsQuantizerBitForBit) { expect_reference_bytes<htp::q4_1_rows>(3, quantize_row_q4_1_ref); }
TEST(HtpQuantRows, Q5_0IsGgmlsQuantizerBitForBit) { expect_reference_bytes<htp::q5_0_rows>(6, quantize_row_q5_0_ref); }
TEST(HtpQuantRows, Q5_1IsGgmlsQuantizerBitForBit) { expect_reference_bytes<htp::q5_1_rows>(7, quantize_row_q5_1_ref); }
// GGML's from_float for IQ4_NL (no scale search): the table lookups' ties and clipping, and the
// in-order least-squares sums, byte for byte.
TEST(HtpQuantRows, IQ4_NLIsGgmlsQuantizerBitForBit) {
    expect_reference_bytes<htp::iq4_nl_rows>(20, quantize_row_iq4_nl_ref);
}

} // namespace
