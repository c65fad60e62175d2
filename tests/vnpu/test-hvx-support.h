// Test support for the HVX emulation tests: plain byte-array views of registers, lane access
// written independently of the emulation (explicit little-endian byte assembly), input pools
// of boundary patterns and seeded random values, and a checker that runs an intrinsic and an
// independent scalar reference over the same inputs.
#pragma once

#include "vnpu/hvx/hvx.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace hvx_test {

using Bytes = std::array<uint8_t, 128>;
using PairBytes = std::array<uint8_t, 256>;
using Pred = std::array<bool, 128>;

inline Bytes bytes_of(HVX_Vector v) {
    Bytes b;
    std::memcpy(b.data(), &v, 128);
    return b;
}
inline PairBytes bytes_of(HVX_VectorPair w) {
    PairBytes b;
    std::memcpy(b.data(), &w, 256);
    return b;
}
inline Pred bits_of(HVX_VectorPred q) {
    // The emulation's predicate form is a byte mask; anything else is a bug.
    const Bytes m = bytes_of(q.mask);
    Pred p;
    for (int i = 0; i < 128; ++i) {
        EXPECT_TRUE(m[i] == 0 || m[i] == 0xFF) << "predicate byte " << i << " is " << int(m[i]);
        p[i] = m[i] != 0;
    }
    return p;
}
inline HVX_Vector vec_of(const Bytes &b) {
    HVX_Vector v;
    std::memcpy(&v, b.data(), 128);
    return v;
}
inline HVX_VectorPair pair_of(const PairBytes &b) {
    HVX_VectorPair w;
    std::memcpy(&w, b.data(), 256);
    return w;
}
inline HVX_VectorPred pred_of(const Pred &p) {
    Bytes m;
    for (int i = 0; i < 128; ++i) m[i] = p[i] ? 0xFF : 0;
    return HVX_VectorPred{vec_of(m)};
}

// Lane i of `width` bytes at `b`, sign- or zero-extended.
inline int64_t get(const uint8_t *b, int width, bool is_signed, int i) {
    uint64_t u = 0;
    for (int k = 0; k < width; ++k) u |= uint64_t(b[i * width + k]) << (8 * k);
    if (is_signed && (u >> (8 * width - 1)) & 1) return int64_t(u) - (int64_t(1) << (8 * width));
    return int64_t(u);
}
// Store the low `width` bytes of v as lane i.
inline void put(uint8_t *b, int width, int i, int64_t v) {
    for (int k = 0; k < width; ++k) b[i * width + k] = uint8_t(uint64_t(v) >> (8 * k));
}
inline int64_t get(const Bytes &b, int width, bool is_signed, int i) { return get(b.data(), width, is_signed, i); }
inline void put(Bytes &b, int width, int i, int64_t v) { put(b.data(), width, i, v); }

inline int64_t sat(int64_t v, int width, bool is_signed) {
    const int bits = 8 * width;
    const int64_t lo = is_signed ? -(int64_t(1) << (bits - 1)) : 0;
    const int64_t hi = is_signed ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
    return v < lo ? lo : (v > hi ? hi : v);
}
// Byte / halfword k of a scalar.
inline int64_t sbyte(int32_t r, int k) { return int8_t(uint32_t(r) >> (8 * k)); }
inline int64_t ubyte(int32_t r, int k) { return uint8_t(uint32_t(r) >> (8 * k)); }
inline int64_t shalf(int32_t r, int k) { return int16_t(uint32_t(r) >> (16 * k)); }
inline int64_t uhalf(int32_t r, int k) { return uint16_t(uint32_t(r) >> (16 * k)); }

// ---- input pools -----------------------------------------------------------------------------

inline constexpr int kBoundaryPatterns = 10;

// Pattern p of the boundary set: constant bytes, then lanes drawn from the edges of the byte,
// halfword and word ranges, then small values (shift counts, table indices).
inline Bytes boundary_vector(int p, std::mt19937 &rng) {
    static const uint8_t edge_b[] = {0x00, 0x01, 0x7F, 0x80, 0x81, 0xFE, 0xFF};
    static const uint16_t edge_h[] = {0x0000, 0x0001, 0xFFFF, 0x7FFF, 0x8000, 0x8001, 0x00FF, 0xFF00, 0x000F, 0x0010};
    static const uint32_t edge_w[] = {0u, 1u, 0xFFFFFFFFu, 0x7FFFFFFFu, 0x80000000u, 0x80000001u, 0xFFFFu, 0xFFFF0000u, 0x1Fu, 0x20u};
    Bytes b{};
    for (int i = 0; i < 128; ++i) {
        switch (p) {
        case 0: b[i] = 0x00; break;
        case 1: b[i] = 0xFF; break;
        case 2: b[i] = 0x80; break;
        case 3: b[i] = 0x7F; break;
        case 4: b[i] = 0x01; break;
        case 5: b[i] = edge_b[rng() % 7]; break;
        case 6: if (i % 2 == 0) put(b, 2, i / 2, edge_h[rng() % 10]); break;
        case 7: if (i % 4 == 0) put(b, 4, i / 4, edge_w[rng() % 10]); break;
        case 8: b[i] = uint8_t(rng() % 70); break;
        default: b[i] = uint8_t(int(rng() % 70) - 35); break;
        }
    }
    return b;
}

inline int32_t boundary_scalar(int p) {
    static const int32_t edge[] = {0, 1, -1, 0x7FFFFFFF, int32_t(0x80000000u), 7, 8, 15, 16, 17, 31, 32, 33,
                                   63, 64, 127, 128, 255, 0x01020304, int32_t(0x80FF7F01u), 2, 3, 5, 6};
    return edge[p % 24];
}

// The value of argument `arg` in case `c`: boundary values first, then random ones.
template <class T>
struct Arg;
template <>
struct Arg<HVX_Vector> {
    using Plain = Bytes;
    static Bytes make(int c, int arg, std::mt19937 &rng) {
        if (c < 3 * kBoundaryPatterns) return boundary_vector((c + 3 * arg) % kBoundaryPatterns, rng);
        Bytes b;
        for (auto &x : b) x = uint8_t(rng());
        return b;
    }
    static HVX_Vector hvx(const Bytes &b) { return vec_of(b); }
};
template <>
struct Arg<HVX_VectorPair> {
    using Plain = PairBytes;
    static PairBytes make(int c, int arg, std::mt19937 &rng) {
        const Bytes lo = Arg<HVX_Vector>::make(c, arg, rng), hi = Arg<HVX_Vector>::make(c, arg + 5, rng);
        PairBytes w;
        std::memcpy(w.data(), lo.data(), 128);
        std::memcpy(w.data() + 128, hi.data(), 128);
        return w;
    }
    static HVX_VectorPair hvx(const PairBytes &b) { return pair_of(b); }
};
template <>
struct Arg<HVX_VectorPred> {
    using Plain = Pred;
    static Pred make(int c, int arg, std::mt19937 &rng) {
        const Bytes b = Arg<HVX_Vector>::make(c, arg, rng);
        Pred p;
        for (int i = 0; i < 128; ++i) p[i] = (c % 4 == 3) ? ((i / 4) % 3 == 0) : (b[i] & 1);
        return p;
    }
    static HVX_VectorPred hvx(const Pred &p) { return pred_of(p); }
};
template <>
struct Arg<int32_t> {
    using Plain = int32_t;
    static int32_t make(int c, int arg, std::mt19937 &rng) {
        if (c < 48) return boundary_scalar(c + 7 * arg);
        return (c % 2) ? int32_t(rng()) : int32_t(rng() % 300) - 20;
    }
    static int32_t hvx(int32_t r) { return r; }
};

inline Bytes plain(HVX_Vector v) { return bytes_of(v); }
inline PairBytes plain(HVX_VectorPair w) { return bytes_of(w); }
inline Pred plain(HVX_VectorPred q) { return bits_of(q); }
inline int32_t plain(int32_t r) { return r; }

template <class T>
std::string describe_difference(const T &expected, const T &actual) {
    if constexpr (std::is_same_v<T, int32_t>) {
        return "expected " + std::to_string(expected) + ", got " + std::to_string(actual);
    } else {
        for (size_t i = 0; i < expected.size(); ++i)
            if (expected[i] != actual[i])
                return "first difference at byte/bit " + std::to_string(i) + ": expected " + std::to_string(int(expected[i])) +
                       ", got " + std::to_string(int(actual[i]));
        return "";
    }
}

inline constexpr int kCases = 96;

// Runs fn and ref on kCases argument sets (boundary patterns, then random) and reports the first
// case where they differ.
template <class R, class... A, class Ref, size_t... I>
void check_cases(const char *name, R (*fn)(A...), Ref ref, std::index_sequence<I...>) {
    for (int c = 0; c < kCases; ++c) {
        std::mt19937 rng(0xC0FFEEu + 977u * unsigned(c));
        // A braced list evaluates left to right, so the random stream is consumed in order.
        const std::tuple<typename Arg<A>::Plain...> args{Arg<A>::make(c, int(I), rng)...};
        const auto expected = std::apply(ref, args);
        const auto actual = plain(std::apply([&](const auto &...a) { return fn(Arg<A>::hvx(a)...); }, args));
        if (!(expected == actual)) {
            ADD_FAILURE() << name << ", case " << c << ": " << describe_difference(expected, actual);
            return;
        }
    }
}

template <class R, class... A, class Ref>
void check(const char *name, R (*fn)(A...), Ref ref) {
    check_cases(name, fn, ref, std::index_sequence_for<A...>{});
}

// The reference may be a lambda with commas outside parentheses, hence the variadic macro.
#define HVX_CHECK(FN, ...) ::hvx_test::check(#FN, &FN, __VA_ARGS__)

// Reference builders for lane-wise operations.
template <class F>
auto lanes1(int width, bool s, int out_width, F f) {
    return [=](const Bytes &u) {
        Bytes d{};
        for (int i = 0; i < 128 / width; ++i) put(d.data(), out_width, i, f(get(u, width, s, i)));
        return d;
    };
}
template <class F>
auto lanes2(int width, bool su, bool sv, F f) {
    return [=](const Bytes &u, const Bytes &v) {
        Bytes d{};
        for (int i = 0; i < 128 / width; ++i) put(d, width, i, f(get(u, width, su, i), get(v, width, sv, i)));
        return d;
    };
}
template <class F>
auto lanes_scalar(int width, bool s, F f) {
    return [=](const Bytes &u, int32_t r) {
        Bytes d{};
        for (int i = 0; i < 128 / width; ++i) put(d, width, i, f(get(u, width, s, i), r, i));
        return d;
    };
}

inline PairBytes join(const Bytes &lo, const Bytes &hi) {
    PairBytes w;
    std::memcpy(w.data(), lo.data(), 128);
    std::memcpy(w.data() + 128, hi.data(), 128);
    return w;
}
inline Bytes lo_of(const PairBytes &w) {
    Bytes b;
    std::memcpy(b.data(), w.data(), 128);
    return b;
}
inline Bytes hi_of(const PairBytes &w) {
    Bytes b;
    std::memcpy(b.data(), w.data() + 128, 128);
    return b;
}

} // namespace hvx_test
