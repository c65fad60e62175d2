// The differential test's program, shared by both sides: for every integer intrinsic of the
// shared list that HVX v66 has, run a fixed set of cases (boundary patterns, then seeded random
// inputs) and hand each result to a sink. Built for Hexagon (real instructions, run under
// qemu-hexagon; the sink writes the bytes to stdout) and for x86 (the emulation; the sink
// compares with qemu's bytes). Freestanding: no library beyond <stdint.h>.
#pragma once

#include <stdint.h>

#include "vnpu/hvx/hvx-intrinsic-list.h"
#include "vnpu/hvx/hvx.h"

namespace hvx_diff {

inline constexpr int kCases = 32;
inline constexpr uint32_t kRecordMarker = 0xA5000000u; // | intrinsic index, before its results

// splitmix64: the same stream on both targets.
struct Rng {
    uint64_t state;
    uint32_t next() {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return uint32_t((z ^ (z >> 31)) >> 16);
    }
};

// Operands of one case: four vectors (a pair operand takes two consecutive ones) and two
// scalars. A predicate operand is bit 0 of each byte of its vector.
struct alignas(128) Inputs {
    uint8_t bytes[4][128];
    int32_t scalar[2];

    HVX_Vector vec(int k) const { return *reinterpret_cast<const HVX_Vector *>(bytes[k]); }
    HVX_VectorPair pair(int k) const { return Q6_W_vcombine_VV(vec(k + 1), vec(k)); }
    HVX_VectorPred pred(int k) const { return Q6_Q_vand_VR(vec(k), 0x01010101); }
};

// Lane values at the edges of every lane type: zero, one, all ones, sign bits, maxima.
inline void fill_pattern(uint8_t *v, int pattern, Rng &rng) {
    static const uint8_t edge_bytes[] = {0x00, 0x01, 0x7F, 0x80, 0x81, 0xFE, 0xFF, 0x10};
    static const uint16_t edge_halves[] = {0x0000, 0x0001, 0xFFFF, 0x7FFF, 0x8000, 0x8001, 0x00FF, 0xFF00, 0x000F, 0x0010};
    static const uint32_t edge_words[] = {0x00000000u, 0x00000001u, 0xFFFFFFFFu, 0x7FFFFFFFu, 0x80000000u,
                                          0x80000001u, 0x0000FFFFu, 0xFFFF0000u, 0x00007FFFu, 0x00008000u,
                                          0x0000001Fu, 0x00000020u, 0xFFFFFFE0u};
    for (int i = 0; i < 128; ++i) {
        const uint32_t r = rng.next();
        switch (pattern) {
        case 0: v[i] = 0x00; break;
        case 1: v[i] = 0xFF; break;
        case 2: v[i] = 0x80; break;
        case 3: v[i] = 0x7F; break;
        case 4: v[i] = edge_bytes[r % 8]; break;
        case 5: // whole halfwords, filled below
        case 6: // whole words, filled below
            v[i] = 0;
            break;
        case 7: v[i] = uint8_t(r % 72); break; // small counts and table indices
        default: v[i] = uint8_t(r); break;
        }
    }
    if (pattern == 5)
        for (int i = 0; i < 128; i += 2) {
            const uint16_t h = edge_halves[rng.next() % 10];
            v[i] = uint8_t(h);
            v[i + 1] = uint8_t(h >> 8);
        }
    if (pattern == 6)
        for (int i = 0; i < 128; i += 4) {
            const uint32_t w = edge_words[rng.next() % 13];
            for (int k = 0; k < 4; ++k) v[i + k] = uint8_t(w >> (8 * k));
        }
}

// Out of line (like run_intrinsic): one huge inlined run_all takes the compiler minutes.
__attribute__((noinline)) inline void make_inputs(int case_index, Inputs &in) {
    Rng rng{0x5EED0000ull + uint64_t(case_index)};
    static const int32_t edge_scalars[] = {0, 1, -1, 0x7FFFFFFF, int32_t(0x80000000u), 15, 16, 17,
                                           31, 32, 33, 7, 8, 0x01010101, int32_t(0x80808080u), 0x12345678};
    for (int k = 0; k < 4; ++k) fill_pattern(in.bytes[k], case_index < 12 ? (case_index + 3 * k) % 9 : 8, rng);
    for (int k = 0; k < 2; ++k) {
        const uint32_t r = rng.next();
        if (case_index < 16) in.scalar[k] = edge_scalars[(case_index + 5 * k) % 16];
        else in.scalar[k] = (case_index & 1) ? int32_t(r) : int32_t(r % 300) - 20;
    }
}

template <int N>
struct Imm {
    static constexpr int value = N;
};

// One call per case; immediates are enumerated (0..7 / 0..1) because they must be constants.
template <class Sink, class Call>
__attribute__((noinline)) void run_intrinsic(Sink &sink, uint32_t index, Call call) {
    sink.begin(kRecordMarker | index);
    for (int c = 0; c < kCases; ++c) {
        Inputs in;
        make_inputs(c, in);
        call(in, sink);
    }
}

template <class F>
inline void for_imm3(F f) {
    f(Imm<0>{}); f(Imm<1>{}); f(Imm<2>{}); f(Imm<3>{}); f(Imm<4>{}); f(Imm<5>{}); f(Imm<6>{}); f(Imm<7>{});
}
template <class F>
inline void for_imm1(F f) {
    f(Imm<0>{});
    f(Imm<1>{});
}

} // namespace hvx_diff

// One call expression per signature class (see hvx-intrinsic-list.h). Predicates are emitted as
// vand(Q, -1): byte i is 0xFF when bit i is set. The intrinsics are macros on Hexagon, so every
// argument is spelled out.
#define HVX_DIFF_Q_Q(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(Q6_V_vand_QR(N(in.pred(0)), -1)); }
#define HVX_DIFF_Q_QQ(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(Q6_V_vand_QR(N(in.pred(0), in.pred(1)), -1)); }
#define HVX_DIFF_Q_QVR(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(Q6_V_vand_QR(N(in.pred(0), in.vec(1), in.scalar[0]), -1)); }
#define HVX_DIFF_Q_QVV(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(Q6_V_vand_QR(N(in.pred(0), in.vec(1), in.vec(2)), -1)); }
#define HVX_DIFF_Q_R(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(Q6_V_vand_QR(N(in.scalar[0]), -1)); }
#define HVX_DIFF_Q_VR(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(Q6_V_vand_QR(N(in.vec(0), in.scalar[0]), -1)); }
#define HVX_DIFF_Q_VV(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(Q6_V_vand_QR(N(in.vec(0), in.vec(1)), -1)); }
#define HVX_DIFF_R_VR(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_word(N(in.vec(0), in.scalar[0])); }
#define HVX_DIFF_S_QPV(N)                                                                          \
    [](const hvx_diff::Inputs &in, auto &out) {                                                    \
        HVX_Vector block = in.vec(2);                                                              \
        N(in.pred(0), &block, in.vec(1));                                                          \
        out.put_vec(block);                                                                        \
    }
#define HVX_DIFF_V_0(N) [](const hvx_diff::Inputs &, auto &out) { out.put_vec(N()); }
#define HVX_DIFF_V_Q(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(N(in.pred(0))); }
#define HVX_DIFF_V_QR(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(N(in.pred(0), in.scalar[0])); }
#define HVX_DIFF_V_QV(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(N(in.pred(0), in.vec(1))); }
#define HVX_DIFF_V_QVV(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(N(in.pred(0), in.vec(1), in.vec(2))); }
#define HVX_DIFF_V_R(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(N(in.scalar[0])); }
#define HVX_DIFF_V_V(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(N(in.vec(0))); }
#define HVX_DIFF_V_VQR(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(N(in.vec(0), in.pred(1), in.scalar[0])); }
#define HVX_DIFF_V_VR(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(N(in.vec(0), in.scalar[0])); }
#define HVX_DIFF_V_VV(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(N(in.vec(0), in.vec(1))); }
#define HVX_DIFF_V_VVI3(N)                                                                         \
    [](const hvx_diff::Inputs &in, auto &out) {                                                    \
        hvx_diff::for_imm3([&](auto imm) { out.put_vec(N(in.vec(0), in.vec(1), decltype(imm)::value)); }); \
    }
#define HVX_DIFF_V_VVQ(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(N(in.vec(0), in.vec(1), in.pred(2))); }
#define HVX_DIFF_V_VVQp(N)                                                                         \
    [](const hvx_diff::Inputs &in, auto &out) {                                                    \
        HVX_VectorPred carry = in.pred(2);                                                         \
        out.put_vec(N(in.vec(0), in.vec(1), &carry));                                              \
        out.put_vec(Q6_V_vand_QR(carry, -1));                                                      \
    }
#define HVX_DIFF_V_VVR(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(N(in.vec(0), in.vec(1), in.scalar[0])); }
#define HVX_DIFF_V_VVV(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(N(in.vec(0), in.vec(1), in.vec(2))); }
#define HVX_DIFF_V_VVVI3(N)                                                                        \
    [](const hvx_diff::Inputs &in, auto &out) {                                                    \
        hvx_diff::for_imm3([&](auto imm) { out.put_vec(N(in.vec(0), in.vec(1), in.vec(2), decltype(imm)::value)); }); \
    }
#define HVX_DIFF_V_VVVR(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(N(in.vec(0), in.vec(1), in.vec(2), in.scalar[0])); }
#define HVX_DIFF_V_VWR(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(N(in.vec(0), in.pair(1), in.scalar[0])); }
#define HVX_DIFF_V_W(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(N(in.pair(0))); }
#define HVX_DIFF_V_WR(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_vec(N(in.pair(0), in.scalar[0])); }
#define HVX_DIFF_W_0(N) [](const hvx_diff::Inputs &, auto &out) { out.put_pair(N()); }
#define HVX_DIFF_W_QVV(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_pair(N(in.pred(0), in.vec(1), in.vec(2))); }
#define HVX_DIFF_W_V(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_pair(N(in.vec(0))); }
#define HVX_DIFF_W_VR(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_pair(N(in.vec(0), in.scalar[0])); }
#define HVX_DIFF_W_VV(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_pair(N(in.vec(0), in.vec(1))); }
#define HVX_DIFF_W_VVI3(N)                                                                         \
    [](const hvx_diff::Inputs &in, auto &out) {                                                    \
        hvx_diff::for_imm3([&](auto imm) { out.put_pair(N(in.vec(0), in.vec(1), decltype(imm)::value)); }); \
    }
#define HVX_DIFF_W_VVR(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_pair(N(in.vec(0), in.vec(1), in.scalar[0])); }
#define HVX_DIFF_W_W(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_pair(N(in.pair(0))); }
#define HVX_DIFF_W_WR(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_pair(N(in.pair(0), in.scalar[0])); }
#define HVX_DIFF_W_WRI1(N)                                                                         \
    [](const hvx_diff::Inputs &in, auto &out) {                                                    \
        hvx_diff::for_imm1([&](auto imm) { out.put_pair(N(in.pair(0), in.scalar[0], decltype(imm)::value)); }); \
    }
#define HVX_DIFF_W_WV(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_pair(N(in.pair(0), in.vec(2))); }
#define HVX_DIFF_W_WVR(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_pair(N(in.pair(0), in.vec(2), in.scalar[0])); }
#define HVX_DIFF_W_WVV(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_pair(N(in.pair(0), in.vec(2), in.vec(3))); }
#define HVX_DIFF_W_WVVI3(N)                                                                        \
    [](const hvx_diff::Inputs &in, auto &out) {                                                    \
        hvx_diff::for_imm3([&](auto imm) { out.put_pair(N(in.pair(0), in.vec(2), in.vec(3), decltype(imm)::value)); }); \
    }
#define HVX_DIFF_W_WVVR(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_pair(N(in.pair(0), in.vec(2), in.vec(3), in.scalar[0])); }
#define HVX_DIFF_W_WW(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_pair(N(in.pair(0), in.pair(2))); }
#define HVX_DIFF_W_WWR(N) [](const hvx_diff::Inputs &in, auto &out) { out.put_pair(N(in.pair(0), in.pair(2), in.scalar[0])); }
#define HVX_DIFF_W_WWRI1(N)                                                                        \
    [](const hvx_diff::Inputs &in, auto &out) {                                                    \
        hvx_diff::for_imm1([&](auto imm) { out.put_pair(N(in.pair(0), in.pair(2), in.scalar[0], decltype(imm)::value)); }); \
    }

namespace hvx_diff {

// Runs every listed v60..v66 integer intrinsic, in list order.
template <class Sink>
inline void run_all(Sink &sink) {
    uint32_t index = 0;
#define HVX_DIFF_RUN(NAME, CLASS) run_intrinsic(sink, index++, HVX_DIFF_##CLASS(NAME));
    HEXNPU_HVX_INTEGER_UP_TO_V66(HVX_DIFF_RUN)
#undef HVX_DIFF_RUN
}

} // namespace hvx_diff
