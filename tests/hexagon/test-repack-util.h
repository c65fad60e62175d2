// Test-side knowledge of the flat and tiled formats, written from formats.md §1.3 and §3 independently
// of src/hexagon and src/proto: element codes of flat blocks, the expected tile position of each
// element, random valid flat tensors, and small fp16 helpers.
#pragma once

#include "hexnpu/ggml-types.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace repack_test {

using hexnpu::ggml_type;

inline constexpr std::array<ggml_type, 12> kTiledTypes = {
    hexnpu::GGML_TYPE_Q4_0, hexnpu::GGML_TYPE_Q4_1, hexnpu::GGML_TYPE_Q8_0,  hexnpu::GGML_TYPE_IQ4_NL,
    hexnpu::GGML_TYPE_MXFP4, hexnpu::GGML_TYPE_Q1_0, hexnpu::GGML_TYPE_Q2_0, hexnpu::GGML_TYPE_Q2_K,
    hexnpu::GGML_TYPE_Q3_K, hexnpu::GGML_TYPE_Q4_K, hexnpu::GGML_TYPE_Q5_K,  hexnpu::GGML_TYPE_Q6_K,
};

inline bool is_kquant(ggml_type t) { return t >= hexnpu::GGML_TYPE_Q2_K && t <= hexnpu::GGML_TYPE_Q6_K; }
inline bool lossless(ggml_type t) { return !is_kquant(t) || t == hexnpu::GGML_TYPE_Q2_K; }

// Spec tile geometry, restated.
inline int k_cols(ggml_type t) {
    return t == hexnpu::GGML_TYPE_Q1_0 ? 128 : t == hexnpu::GGML_TYPE_Q2_0 ? 64 : 32;
}

inline int tile_bytes(ggml_type t) {
    switch (t) {
        case hexnpu::GGML_TYPE_Q4_0:
        case hexnpu::GGML_TYPE_IQ4_NL:
        case hexnpu::GGML_TYPE_Q1_0:
        case hexnpu::GGML_TYPE_Q2_0: return 576;
        case hexnpu::GGML_TYPE_MXFP4: return 544;
        case hexnpu::GGML_TYPE_Q4_1:
        case hexnpu::GGML_TYPE_Q4_K: return 640;
        case hexnpu::GGML_TYPE_Q8_0: return 1088;
        case hexnpu::GGML_TYPE_Q2_K: return 336;
        case hexnpu::GGML_TYPE_Q3_K: return 512;
        case hexnpu::GGML_TYPE_Q5_K: return 768;
        case hexnpu::GGML_TYPE_Q6_K: return 896;
        default: return 0;
    }
}

// Whether tile byte i holds quant bits (not scales).
inline bool is_quant_byte(ggml_type t, int i) {
    switch (t) {
        case hexnpu::GGML_TYPE_Q8_0: return i < 1024;
        case hexnpu::GGML_TYPE_Q2_K: return i < 256;
        case hexnpu::GGML_TYPE_Q3_K: return i < 384;
        case hexnpu::GGML_TYPE_Q5_K: return i < 512 || (i >= 640 && i < 768);
        case hexnpu::GGML_TYPE_Q6_K: return i < 768;
        default: return i < 512;
    }
}

inline uint16_t rd16(const uint8_t * p) { return uint16_t(p[0] | p[1] << 8); }
inline void     wr16(uint8_t * p, uint16_t v) { p[0] = uint8_t(v); p[1] = uint8_t(v >> 8); }

// ---- Flat element codes (formats.md §1.3). A "code" is the raw unsigned field(s) of one element:
// Q8_0 0..255 (the int8 byte), Q1_0 0..1, Q2_0/Q2_K 0..3, Q3_K low2 | hmask_bit << 2 (0..7, q = code - 4),
// 4-bit types 0..15, Q5_K 0..31, Q6_K 0..63.

inline int code_bits(ggml_type t) {
    switch (t) {
        case hexnpu::GGML_TYPE_Q8_0: return 8;
        case hexnpu::GGML_TYPE_Q1_0: return 1;
        case hexnpu::GGML_TYPE_Q2_0:
        case hexnpu::GGML_TYPE_Q2_K: return 2;
        case hexnpu::GGML_TYPE_Q3_K: return 3;
        case hexnpu::GGML_TYPE_Q5_K: return 5;
        case hexnpu::GGML_TYPE_Q6_K: return 6;
        default: return 4;
    }
}

// Code whose tile bits are all zero (Q3_K: a set hmask bit is a clear sign-plane bit).
inline int zero_code(ggml_type t) { return t == hexnpu::GGML_TYPE_Q3_K ? 4 : 0; }

struct bit_ref {
    int byte;  // inside the block
    int shift;
    int width;
};

// Where the code bits of element e live in a flat block, low field first.
inline std::vector<bit_ref> flat_fields(ggml_type t, int e) {
    switch (t) {
        case hexnpu::GGML_TYPE_Q4_0:
        case hexnpu::GGML_TYPE_IQ4_NL: return {{2 + e % 16, 4 * (e / 16), 4}};
        case hexnpu::GGML_TYPE_Q4_1: return {{4 + e % 16, 4 * (e / 16), 4}};
        case hexnpu::GGML_TYPE_MXFP4: return {{1 + e % 16, 4 * (e / 16), 4}};
        case hexnpu::GGML_TYPE_Q8_0: return {{2 + e, 0, 8}};
        case hexnpu::GGML_TYPE_Q1_0: return {{2 + e / 8, e % 8, 1}};
        case hexnpu::GGML_TYPE_Q2_0: return {{2 + e / 4, 2 * (e % 4), 2}};
        case hexnpu::GGML_TYPE_Q2_K: return {{16 + 32 * (e / 128) + e % 32, 2 * ((e / 32) % 4), 2}};
        case hexnpu::GGML_TYPE_Q3_K: return {{32 + 32 * (e / 128) + e % 32, 2 * ((e / 32) % 4), 2}, {e % 32, e / 32, 1}};
        case hexnpu::GGML_TYPE_Q4_K: return {{16 + 32 * (e / 64) + e % 32, 4 * ((e / 32) % 2), 4}};
        case hexnpu::GGML_TYPE_Q5_K: return {{48 + 32 * (e / 64) + e % 32, 4 * ((e / 32) % 2), 4}, {16 + e % 32, e / 32, 1}};
        case hexnpu::GGML_TYPE_Q6_K: {
            const int half = e / 128, group = (e / 32) % 4, l = e % 32;
            return {{64 * half + 32 * (group % 2) + l, 4 * (group / 2), 4}, {128 + 32 * half + l, 2 * group, 2}};
        }
        default: return {};
    }
}

inline int flat_code(ggml_type t, const uint8_t * block, int e) {
    int code = 0, at = 0;
    for (const bit_ref & f : flat_fields(t, e)) {
        code |= ((block[f.byte] >> f.shift) & ((1 << f.width) - 1)) << at;
        at += f.width;
    }
    return code;
}

inline void set_flat_code(ggml_type t, uint8_t * block, int e, int code) {
    for (const bit_ref & f : flat_fields(t, e)) {
        const int mask = (1 << f.width) - 1;
        block[f.byte]  = uint8_t((block[f.byte] & ~(mask << f.shift)) | (code & mask) << f.shift);
        code >>= f.width;
    }
}

// Signed integer an element contributes to a dot product before scaling (Q1_0 ±1, Q2_0 c - 1,
// Q2_K q, Q3_K q, Q6_K q - 32).
inline int signed_value(ggml_type t, int code) {
    switch (t) {
        case hexnpu::GGML_TYPE_Q1_0: return code ? 1 : -1;
        case hexnpu::GGML_TYPE_Q2_0: return code - 1;
        case hexnpu::GGML_TYPE_Q3_K: return code - 4;
        case hexnpu::GGML_TYPE_Q6_K: return code - 32;
        default: return code;
    }
}

// ---- Expected tile positions (formats.md §3.1-§3.3). For element (r, k) of a tile holding `code`,
// the tile bits it sets, as (byte, mask-shifted value) pairs. Tiles of Q2_K..Q6_K are tile j of a
// super-block and k is the column inside the tile.

struct tile_bits {
    int     byte;
    uint8_t value;
};

inline std::vector<tile_bits> expected_tile_bits(ggml_type t, int r, int k, int code) {
    const auto colpair = [&](int nibble) { return tile_bits{(k / 2) * 32 + r, uint8_t(nibble << ((k % 2) * 4))}; };
    const auto vrmpy2  = [&](int base, int v) { return tile_bits{base + (k / 16) * 128 + r * 4 + k % 4, uint8_t(v << ((k / 4) % 4) * 2)}; };
    switch (t) {
        case hexnpu::GGML_TYPE_Q4_0:
        case hexnpu::GGML_TYPE_IQ4_NL:
        case hexnpu::GGML_TYPE_MXFP4:
        case hexnpu::GGML_TYPE_Q4_1:
        case hexnpu::GGML_TYPE_Q4_K: return {colpair(code)};
        case hexnpu::GGML_TYPE_Q8_0: return {{(k / 2) * 64 + r * 2 + k % 2, uint8_t(code)}};
        case hexnpu::GGML_TYPE_Q1_0: return {{(k / 32) * 128 + r * 4 + k % 4, uint8_t(code << (k % 32) / 4)}};
        case hexnpu::GGML_TYPE_Q2_0:
        case hexnpu::GGML_TYPE_Q2_K: return {vrmpy2(0, code)};
        case hexnpu::GGML_TYPE_Q3_K:
            return {vrmpy2(0, code & 3), {256 + r * 4 + k % 4, uint8_t((code >> 2 ? 0 : 1) << (k / 4))}};
        case hexnpu::GGML_TYPE_Q5_K:
            return {colpair(code & 15), {640 + ((k / 2) % 4) * 32 + r, uint8_t((code >> 4) << ((k / 8) * 2 + k % 2))}};
        case hexnpu::GGML_TYPE_Q6_K:
            return {{(k / 8) * 128 + r * 4 + k % 4, uint8_t((code & 15) << ((k / 4) % 2) * 4)}, vrmpy2(512, code >> 4)};
        default: return {};
    }
}

// ---- K-quant sub-block scales (formats.md §1.3): Q3_K signed 6-bit, Q4_K/Q5_K 6-bit (scale, min).
inline void set_q3_K_scale(uint8_t * block, int t, int signed_scale) {
    const int raw     = signed_scale + 32;
    uint8_t * packed  = block + 96;
    packed[t % 8]     = uint8_t((packed[t % 8] & ~(15 << (4 * (t / 8)))) | (raw & 15) << (4 * (t / 8)));
    packed[8 + t % 4] = uint8_t((packed[8 + t % 4] & ~(3 << (2 * (t / 4)))) | (raw >> 4) << (2 * (t / 4)));
}

inline void set_q4_K_scale_min(uint8_t * block, int t, int sc, int m) {
    uint8_t * packed = block + 4;
    if (t < 4) {
        packed[t]     = uint8_t((packed[t] & 0xC0) | sc);
        packed[t + 4] = uint8_t((packed[t + 4] & 0xC0) | m);
    } else {
        packed[t + 4] = uint8_t((sc & 15) | (m & 15) << 4);
        packed[t - 4] = uint8_t((packed[t - 4] & 0x3F) | (sc >> 4) << 6);
        packed[t]     = uint8_t((packed[t] & 0x3F) | (m >> 4) << 6);
    }
}

inline int q3_K_scale(const uint8_t * block, int t) {
    const uint8_t * packed = block + 96;
    return (((packed[t % 8] >> (4 * (t / 8))) & 15) | ((packed[8 + t % 4] >> (2 * (t / 4))) & 3) << 4) - 32;
}

inline void q4_K_scale_min(const uint8_t * block, int t, int * sc, int * m) {
    const uint8_t * packed = block + 4;
    if (t < 4) {
        *sc = packed[t] & 63;
        *m  = packed[t + 4] & 63;
    } else {
        *sc = (packed[t + 4] & 15) | (packed[t - 4] >> 6) << 4;
        *m  = (packed[t + 4] >> 4) | (packed[t] >> 6) << 4;
    }
}

// ---- fp16 helpers (IEEE binary16; test-side so the tests do not trust core/fp16.h blindly).

inline float half_to_float(uint16_t h) {
    const int   exp  = (h >> 10) & 31;
    const int   mant = h & 1023;
    const float mag  = exp == 0 ? std::ldexp(float(mant), -24) : std::ldexp(float(1024 + mant), exp - 25);
    return (h & 0x8000) ? -mag : mag;
}

// A random finite fp16 of either sign: mostly normal in [2^-14, 2^6), sometimes subnormal.
inline uint16_t random_half(std::mt19937_64 & rng) {
    const uint16_t sign = uint16_t(rng() & 1) << 15;
    const uint16_t mant = uint16_t(rng() & 1023);
    const int      exp  = (rng() % 16 == 0) ? 0 : 1 + int(rng() % 20);
    return uint16_t(sign | exp << 10 | mant);
}

// Offsets of a flat block's fp16 scale fields.
inline std::vector<int> half_fields(ggml_type t) {
    switch (t) {
        case hexnpu::GGML_TYPE_Q4_1:
        case hexnpu::GGML_TYPE_Q4_K:
        case hexnpu::GGML_TYPE_Q5_K: return {0, 2};
        case hexnpu::GGML_TYPE_Q2_K: return {80, 82};
        case hexnpu::GGML_TYPE_Q3_K: return {108};
        case hexnpu::GGML_TYPE_Q6_K: return {208};
        case hexnpu::GGML_TYPE_MXFP4: return {};
        default: return {0};
    }
}

// A valid flat tensor: random quant and sub-scale bytes, finite fp16 scales, MXFP4 exponents in
// [100, 160] (2^(e-128) stays a normal float).
inline std::vector<uint8_t> random_flat(ggml_type t, const int64_t ne[4], std::mt19937_64 & rng) {
    const size_t         block = hexnpu::ggml_type_size(t);
    const size_t         bytes = hexnpu::ggml_row_size(t, ne[0]) * size_t(ne[1] * ne[2] * ne[3]);
    std::vector<uint8_t> flat(bytes);
    for (uint8_t & b : flat) {
        b = uint8_t(rng());
    }
    for (size_t at = 0; at < bytes; at += block) {
        for (int f : half_fields(t)) {
            wr16(&flat[at + f], random_half(rng));
        }
        if (t == hexnpu::GGML_TYPE_MXFP4) {
            flat[at] = uint8_t(100 + rng() % 61);
        }
    }
    return flat;
}

// A flat tensor whose every element has the all-zero-tile code and whose scale fields are zero.
inline std::vector<uint8_t> zero_code_flat(ggml_type t, const int64_t ne[4]) {
    std::vector<uint8_t> flat(hexnpu::ggml_row_size(t, ne[0]) * size_t(ne[1] * ne[2] * ne[3]), 0);
    if (t == hexnpu::GGML_TYPE_Q3_K) {
        for (size_t at = 0; at < flat.size(); at += 110) {
            std::memset(&flat[at], 0xFF, 32);  // hmask
        }
    }
    return flat;
}

// Offset of the flat block holding element `col` of flat row `row`, and the element's index in it.
inline size_t flat_block_offset(ggml_type t, int64_t ne0, int64_t row, int64_t col, int * e) {
    const int64_t blck = hexnpu::ggml_blck_size(t);
    *e                 = int(col % blck);
    return size_t(row) * hexnpu::ggml_row_size(t, ne0) + size_t(col / blck) * hexnpu::ggml_type_size(t);
}

inline uint8_t * flat_block(ggml_type t, std::vector<uint8_t> & flat, int64_t ne0, int64_t row, int64_t col, int * e) {
    return flat.data() + flat_block_offset(t, ne0, row, col, e);
}

inline const uint8_t * flat_block(ggml_type t, const std::vector<uint8_t> & flat, int64_t ne0, int64_t row, int64_t col, int * e) {
    return flat.data() + flat_block_offset(t, ne0, row, col, e);
}

// Sets the code of element `col` of flat row `row`.
inline void set_code_at(ggml_type t, std::vector<uint8_t> & flat, int64_t ne0, int64_t row, int64_t col, int code) {
    int       e     = 0;
    uint8_t * block = flat_block(t, flat, ne0, row, col, &e);
    set_flat_code(t, block, e, code);
}

// Offset of the tile holding (row, col) of 2-D slice `slice`, from the spec's grid formulas.
inline size_t tile_start(ggml_type t, int64_t ne0, int64_t ne1, int64_t slice, int64_t row, int64_t col) {
    const int64_t k_tiles = ne0 / k_cols(t);
    const int64_t slice_b = (ne1 + 31) / 32 * k_tiles * tile_bytes(t);
    return size_t(slice * slice_b + ((row / 32) * k_tiles + col / k_cols(t)) * tile_bytes(t));
}

} // namespace repack_test
