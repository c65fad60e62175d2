// Tiled weight formats shared by the host (repack) and the NPU (kernels): tile shapes and sizes,
// grid addressing, and the byte/bit position of every element inside a tile.
// Spec: "Tiled Weight Formats"; index formulas and resolved ambiguities: shared/design/formats.md §3.
// Plain constexpr C++17 with fixed-width integers: no STL containers, no host headers.
#pragma once

#include <stdint.h>

namespace hexnpu::proto {

// The types that have a tiled layout; each enumerator equals its GGML type id.
enum class tiled_type : int32_t {
    q4_0   = 2,
    q4_1   = 3,
    q8_0   = 8,
    q2_K   = 10,
    q3_K   = 11,
    q4_K   = 12,
    q5_K   = 13,
    q6_K   = 14,
    iq4_nl = 20,
    mxfp4  = 39,
    q1_0   = 41,
    q2_0   = 42,
};

constexpr bool is_tiled_type_id(int32_t ggml_type_id) {
    switch (ggml_type_id) {
        case 2: case 3: case 8: case 10: case 11: case 12: case 13: case 14: case 20: case 39: case 41: case 42:
            return true;
        default:
            return false;
    }
}

inline constexpr uint32_t TILE_N_ROWS     = 32;   // weight rows (ne1) per tile
inline constexpr uint32_t TILE_N_COLS     = 32;   // K columns of the block-32 and K-quant tiles, = HMX tile width
inline constexpr uint32_t TILE_K_Q2_0     = 64;
inline constexpr uint32_t TILE_K_Q1_0     = 128;
inline constexpr uint32_t TILE_SLOT_ALIGN = 128;  // VTCM slots start on an HVX vector boundary
inline constexpr uint32_t KQUANT_TILES    = 8;    // a 256-element K-quant super-block spans 8 tiles along K

inline constexpr uint32_t TILE_SIZE_Q4_0   = 576;
inline constexpr uint32_t TILE_SIZE_IQ4_NL = 576;
inline constexpr uint32_t TILE_SIZE_MXFP4  = 544;
inline constexpr uint32_t TILE_SIZE_Q4_1   = 640;
inline constexpr uint32_t TILE_SIZE_Q8_0   = 1088;
inline constexpr uint32_t TILE_SIZE_Q1_0   = 576;
inline constexpr uint32_t TILE_SIZE_Q2_0   = 576;
inline constexpr uint32_t TILE_SIZE_Q2_K   = 336;
inline constexpr uint32_t TILE_SIZE_Q3_K   = 512;
inline constexpr uint32_t TILE_SIZE_Q4_K   = 640;
inline constexpr uint32_t TILE_SIZE_Q5_K   = 768;
inline constexpr uint32_t TILE_SIZE_Q6_K   = 896;

// Start of each region inside a tile (the quants always start at byte 0).
inline constexpr uint32_t TILE_SCALES_4BIT  = 512;   // Q4_0/IQ4_NL/Q1_0/Q2_0 d, MXFP4 e, Q4_1/Q4_K/Q5_K (d, m) pairs
inline constexpr uint32_t TILE_SCALES_Q8_0  = 1024;
inline constexpr uint32_t TILE_Q2_K_SCALES  = 256;   // raw (m << 4 | sc) bytes
inline constexpr uint32_t TILE_Q2_K_D       = 320;   // 8 fp16: d (tiles 0..3) or -dmin (tiles 4..7)
inline constexpr uint32_t TILE_Q3_K_NEG     = 256;   // sign plane: bit set when q = low2 - 4
inline constexpr uint32_t TILE_Q3_K_SCALES  = 384;
inline constexpr uint32_t TILE_Q5_K_HIGH    = 640;   // 5th-bit plane
inline constexpr uint32_t TILE_Q6_K_HIGH    = 512;   // high 2-bit plane
inline constexpr uint32_t TILE_Q6_K_SCALES  = 768;

constexpr uint32_t tile_k_cols(tiled_type t) {
    switch (t) {
        case tiled_type::q1_0: return TILE_K_Q1_0;
        case tiled_type::q2_0: return TILE_K_Q2_0;
        default:               return TILE_N_COLS;
    }
}

constexpr uint32_t tile_size(tiled_type t) {
    switch (t) {
        case tiled_type::q4_0:   return TILE_SIZE_Q4_0;
        case tiled_type::q4_1:   return TILE_SIZE_Q4_1;
        case tiled_type::q8_0:   return TILE_SIZE_Q8_0;
        case tiled_type::q2_K:   return TILE_SIZE_Q2_K;
        case tiled_type::q3_K:   return TILE_SIZE_Q3_K;
        case tiled_type::q4_K:   return TILE_SIZE_Q4_K;
        case tiled_type::q5_K:   return TILE_SIZE_Q5_K;
        case tiled_type::q6_K:   return TILE_SIZE_Q6_K;
        case tiled_type::iq4_nl: return TILE_SIZE_IQ4_NL;
        case tiled_type::mxfp4:  return TILE_SIZE_MXFP4;
        case tiled_type::q1_0:   return TILE_SIZE_Q1_0;
        case tiled_type::q2_0:   return TILE_SIZE_Q2_0;
    }
    return 0;
}

// Size of a tile's VTCM staging slot. DDR tiles are packed; kernels read whole vectors at region
// starts (e.g. tile + 512), so the slot's tail padding must be readable.
constexpr uint32_t tile_slot_size(tiled_type t) {
    return (tile_size(t) + TILE_SLOT_ALIGN - 1) / TILE_SLOT_ALIGN * TILE_SLOT_ALIGN;
}

constexpr bool is_kquant(tiled_type t) {
    return t == tiled_type::q2_K || t == tiled_type::q3_K || t == tiled_type::q4_K || t == tiled_type::q5_K ||
           t == tiled_type::q6_K;
}

// Lossless tiles are a bit permutation of the flat blocks. Q3_K..Q6_K store rounded scale products.
constexpr bool is_lossless(tiled_type t) {
    return !is_kquant(t) || t == tiled_type::q2_K;
}

// ---- Grid addressing (per 2-D slice): ct indexes 32-row groups along ne1, kt tiles along K = ne0.

constexpr int64_t n_k_tiles(tiled_type t, int64_t ne0) { return ne0 / int64_t(tile_k_cols(t)); }
constexpr int64_t n_col_tiles(int64_t ne1) { return (ne1 + TILE_N_ROWS - 1) / TILE_N_ROWS; }
constexpr int64_t tile_index(int64_t n_k_tiles, int64_t ct, int64_t kt) { return ct * n_k_tiles + kt; }

constexpr uint64_t tile_offset(tiled_type t, int64_t n_k_tiles, int64_t ct, int64_t kt) {
    return uint64_t(tile_index(n_k_tiles, ct, kt)) * tile_size(t);
}

constexpr uint64_t tiled_slice_bytes(tiled_type t, int64_t ne0, int64_t ne1) {
    return uint64_t(n_col_tiles(ne1)) * uint64_t(n_k_tiles(t, ne0)) * tile_size(t);
}

// Each 2-D slice is tiled (and padded) on its own; slice i2 + ne2*i3 follows the ones before it.
constexpr uint64_t tiled_slice_offset(tiled_type t, int64_t ne0, int64_t ne1, int64_t ne2, int64_t i2, int64_t i3) {
    return uint64_t(i3 * ne2 + i2) * tiled_slice_bytes(t, ne0, ne1);
}

constexpr uint64_t tiled_nbytes(tiled_type t, const int64_t ne[4]) {
    return uint64_t(ne[2]) * uint64_t(ne[3]) * tiled_slice_bytes(t, ne[0], ne[1]);
}

// ---- Intra-tile positions of element (r, k): row r < 32, column k < tile_k_cols.

struct tile_field {
    uint32_t byte;
    uint32_t shift;  // bit position of the field's lowest bit
};

// Column-pair nibbles (Q4_0, IQ4_NL, MXFP4, Q4_1, Q4_K and the Q5_K low 4 bits): byte 32*(k/2) + r,
// even k in the low nibble. Mirrors the HMX fp16 tile, whose vector k/2 holds rows 0..31.
constexpr tile_field colpair_nibble(uint32_t r, uint32_t k) { return {32 * (k >> 1) + r, 4 * (k & 1)}; }

// Q8_0: int8 of (r, k) at 64*(k/2) + 2r + (k & 1).
constexpr uint32_t q8_0_byte(uint32_t r, uint32_t k) { return 64 * (k >> 1) + 2 * r + (k & 1); }

// vrmpy byte order: byte 4r + (k % 4) of a 128-byte vector carries row r, so one vrmpy against an
// activation vector repeating a[4g..4g+3] adds row r's group-g dot product to 32-bit lane r.

// Q1_0 (k < 128): quarter k/32 is one vector; bit (k % 32) / 4 of byte 4r + k % 4.
constexpr tile_field q1_0_bit(uint32_t r, uint32_t k) {
    return {128 * (k >> 5) + 4 * r + (k & 3), (k & 31) >> 2};
}

// 2-bit vrmpy plane (Q2_0 with k < 64; Q2_K/Q3_K low bits and Q6_K high bits with k < 32):
// vector k/16, group g = k/4 at bit offset 2*(g % 4).
constexpr tile_field plane2(uint32_t r, uint32_t k) {
    return {128 * (k >> 4) + 4 * r + (k & 3), 2 * ((k >> 2) & 3)};
}

// Q3_K sign plane: one vector, group k/4 in bit k/4.
constexpr tile_field q3_K_neg_bit(uint32_t r, uint32_t k) { return {TILE_Q3_K_NEG + 4 * r + (k & 3), k >> 2}; }

// Q5_K 5th bit: the quant byte b = 32*(k/2) + r lives in vector i = b / 128 at byte lane b % 128;
// plane byte 640 + lane gathers that lane's bits of vectors 0..3 (bit 2i for even k, 2i+1 for odd k).
constexpr tile_field q5_K_high_bit(uint32_t r, uint32_t k) {
    return {TILE_Q5_K_HIGH + 32 * ((k >> 1) & 3) + r, 2 * (k >> 3) + (k & 1)};
}

// Q6_K low 4 bits: vector k/8 holds group 2i in the low nibble and group 2i+1 in the high nibble.
constexpr tile_field q6_K_low_nibble(uint32_t r, uint32_t k) {
    return {128 * (k >> 3) + 4 * r + (k & 3), 4 * ((k >> 2) & 1)};
}

// ---- Scale positions of row r. Sub-block half s = k / 16 for the 16-element K-quant sub-blocks.

constexpr uint32_t row_d_offset(uint32_t r) { return TILE_SCALES_4BIT + 2 * r; }        // Q4_0, IQ4_NL, Q1_0, Q2_0
constexpr uint32_t q8_0_d_offset(uint32_t r) { return TILE_SCALES_Q8_0 + 2 * r; }
constexpr uint32_t mxfp4_e_offset(uint32_t r) { return TILE_SCALES_4BIT + r; }
constexpr uint32_t pair_d_offset(uint32_t r) { return TILE_SCALES_4BIT + 4 * r; }       // Q4_1 d, Q4_K/Q5_K D
constexpr uint32_t pair_m_offset(uint32_t r) { return TILE_SCALES_4BIT + 4 * r + 2; }   // Q4_1 m, Q4_K/Q5_K M
constexpr uint32_t q2_K_scale_offset(uint32_t r, uint32_t s) { return TILE_Q2_K_SCALES + 32 * s + r; }
constexpr uint32_t q3_K_d_offset(uint32_t r, uint32_t s) { return TILE_Q3_K_SCALES + 2 * (32 * s + r); }
constexpr uint32_t q6_K_d_offset(uint32_t r, uint32_t s) { return TILE_Q6_K_SCALES + 2 * (32 * s + r); }

// Q2_K keeps d and -dmin of the super-block's 32 rows spread over its 8 tiles: d of row r in
// tile r/8, -dmin in tile 4 + r/8, both at byte 320 + 2*(r % 8). A tile needs its 7 siblings.
constexpr uint32_t q2_K_d_tile(uint32_t r) { return r >> 3; }
constexpr uint32_t q2_K_neg_dmin_tile(uint32_t r) { return 4 + (r >> 3); }
constexpr uint32_t q2_K_d_offset(uint32_t r) { return TILE_Q2_K_D + 2 * (r & 7); }

// The HVX kernels' MXFP4 scale: E8M0 exponent e (bias 127) rebiased to an fp16 power of two,
// clamp(e - 112, 0, 30) << 10. Exact (2^(e-127)) only for e in [113, 142]: e <= 112 flushes to 0
// and e >= 143 saturates at 2^15. The tile stores e verbatim; the host reference dequantizes with
// the exact 2^(e-128) * kvalues_mxfp4 instead.
constexpr uint16_t mxfp4_kernel_scale_fp16(uint8_t e) {
    const int32_t exponent = int32_t(e) - 112;
    return uint16_t((exponent < 0 ? 0 : exponent > 30 ? 30 : exponent) << 10);
}

} // namespace hexnpu::proto
