// Byte layouts of GGML's quantized blocks (shared/design/formats.md §1.3). All fields little-endian;
// fp16 values are stored as raw uint16_t bits.
#pragma once

#include <cstdint>

namespace hexnpu {

inline constexpr int QK4_0  = 32;
inline constexpr int QK4_1  = 32;
inline constexpr int QK5_0  = 32;
inline constexpr int QK5_1  = 32;
inline constexpr int QK8_0  = 32;
inline constexpr int QK4_NL = 32;
inline constexpr int QK_MXFP4 = 32;
inline constexpr int QK1_0  = 128;
inline constexpr int QK2_0  = 64;
inline constexpr int QK_K   = 256;
inline constexpr int K_SCALE_SIZE = 12;

struct block_q4_0 { uint16_t d; uint8_t qs[QK4_0 / 2]; };
struct block_q4_1 { uint16_t d; uint16_t m; uint8_t qs[QK4_1 / 2]; };
struct block_q5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; };
struct block_q5_1 { uint16_t d; uint16_t m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; };
struct block_q8_0 { uint16_t d; int8_t qs[QK8_0]; };
struct block_iq4_nl { uint16_t d; uint8_t qs[QK4_NL / 2]; };
struct block_mxfp4 { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; };
struct block_q1_0 { uint16_t d; uint8_t qs[QK1_0 / 8]; };
struct block_q2_0 { uint16_t d; uint8_t qs[QK2_0 / 4]; };

struct block_q2_K { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d; uint16_t dmin; };
struct block_q3_K { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; uint16_t d; };
struct block_q4_K { uint16_t d; uint16_t dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; };
struct block_q5_K { uint16_t d; uint16_t dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; };
struct block_q6_K { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; };

static_assert(sizeof(block_q4_0) == 18);
static_assert(sizeof(block_q4_1) == 20);
static_assert(sizeof(block_q5_0) == 22);
static_assert(sizeof(block_q5_1) == 24);
static_assert(sizeof(block_q8_0) == 34);
static_assert(sizeof(block_iq4_nl) == 18);
static_assert(sizeof(block_mxfp4) == 17);
static_assert(sizeof(block_q1_0) == 18);
static_assert(sizeof(block_q2_0) == 18);
static_assert(sizeof(block_q2_K) == 84);
static_assert(sizeof(block_q3_K) == 110);
static_assert(sizeof(block_q4_K) == 144);
static_assert(sizeof(block_q5_K) == 176);
static_assert(sizeof(block_q6_K) == 210);

// Non-linear 4-bit tables (formats.md §1.2).
inline constexpr int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                             1,    13,   25,  38,  53,  69,  89,  113};
// E2M1 values doubled; MXFP4 multiplies them by 2^(e-128).
inline constexpr int8_t kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

} // namespace hexnpu
