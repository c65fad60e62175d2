// The HMX unit as NPU-side kernels use it: fp16 32x32 tiles in VTCM, an fp32 accumulator inside
// the unit, fp16 output through a per-column scale/bias block. One unit per session, used only by
// the thread that locked it (the HMX queue thread). Each call below is one HMX instruction (group)
// of the device; on x86 the virtual NPU implements them (vnpu/hmx/hmx-unit.h).
//
// Tile layout. A tile holds a 32x32 fp16 matrix X[i][j] in 2048 bytes = 16 HVX vectors; vector
// i/2 holds matrix rows i and i+1 interleaved, so element (i, j) is halfword
//     64*(i >> 1) + 2*j + (i & 1)                                         (hmx_tile_index)
// The three operands use it in their mathematical orientation, out = act x wt:
//   activation A[m][k] (M x K):  halfword 64*(m >> 1) + 2k + (m & 1)   row pairs of activations;
//   weight     W[k][n] (K x N):  halfword 64*(k >> 1) + 2n + (k & 1)   K pairs, 32 output columns
//                                each: formats.md's "(r, k) at 64(k>>1)+2r+(k&1)" with r = n;
//   output     C[m][n] (M x N):  halfword 64*(m >> 1) + 2n + (m & 1).
// Tile runs (the K tiles of one multiply) are contiguous: tile t starts at byte 2048*t.
//
// Scale/bias block (256 bytes). 32-bit word n of the first 128 bytes belongs to output column n:
// low halfword = fp16 scale, high halfword = fp16 bias (hmx_scale_bias_word). The second 128 bytes
// are reserved and must be zero. A splat of the word 0x00003C00 gives scale 1.0, bias 0.
//
// Arithmetic (the virtual NPU's definition; the device's internal order is not public). The
// accumulator starts at +0. A multiply over tiles t = 0..n-1 adds, for k = 0..31 in order,
//     acc[m][n] = fp32(acc[m][n] + A_t[m][k] * W_t[k][n])
// where the product of two fp16 values is exact in fp32 and each sum is rounded to nearest even.
// Storing converts every element:
//     C[m][n] = fp16_rne(fp32(fp32(acc[m][n] * scale[n]) + bias[n]))
// (scale and bias widened exactly from fp16; product, then sum, each rounded in fp32, then one
// rounding to fp16; overflow gives inf). Storing clears the accumulator, as the device's
// accumulator-consuming conversion does.
//
// Hardware rules, enforced (a violation faults the unit: the call does nothing and returns the
// error, every later call returns HMX_ERR_FAULTED until hmx_reset, and hmx_fault() says why):
//   - every operand lies entirely inside the session's VTCM;
//   - tiles (activation run, weight run, output) start on a 2048-byte boundary; the scale/bias
//     block on a 256-byte boundary (the device reads other fields from its low address bits);
//   - a tile run does not cross a 4 MiB VTCM bank boundary (a bus error on the device);
//   - one multiply covers 1..HMX_MAX_RUN_TILES tiles;
//   - a store needs a scale/bias block loaded first, whose reserved half is zero;
//   - only the thread holding the unit's lock uses it.
#pragma once

#include <stdint.h>

namespace hexnpu::htp {

inline constexpr uint32_t HMX_TILE_ROWS      = 32;
inline constexpr uint32_t HMX_TILE_COLS      = 32;
inline constexpr uint32_t HMX_TILE_ELEMS     = HMX_TILE_ROWS * HMX_TILE_COLS;
inline constexpr uint32_t HMX_TILE_BYTES     = HMX_TILE_ELEMS * 2;
inline constexpr uint32_t HMX_TILE_ALIGN     = 2048;
inline constexpr uint32_t HMX_SCALE_BIAS_BYTES = 256;
inline constexpr uint32_t HMX_SCALE_BIAS_ALIGN = 256;
inline constexpr uint32_t HMX_VTCM_BANK_BYTES  = 4u << 20;
// K tiles one multiply may stream (upstream issues at most 32 per instruction group).
inline constexpr uint32_t HMX_MAX_RUN_TILES = 32;

// Halfword index of element (i, j) of the 32x32 matrix a tile holds.
constexpr uint32_t hmx_tile_index(uint32_t i, uint32_t j) { return 64 * (i >> 1) + 2 * j + (i & 1); }

constexpr uint32_t hmx_act_index(uint32_t m, uint32_t k) { return hmx_tile_index(m, k); }
constexpr uint32_t hmx_wt_index(uint32_t k, uint32_t n) { return hmx_tile_index(k, n); }
constexpr uint32_t hmx_out_index(uint32_t m, uint32_t n) { return hmx_tile_index(m, n); }

// The 32-bit word of output column n in the scale/bias block.
constexpr uint32_t hmx_scale_bias_word(uint16_t scale_fp16, uint16_t bias_fp16) {
    return uint32_t(scale_fp16) | (uint32_t(bias_fp16) << 16);
}

// Scalar (re)packing between a row-major 32x32 fp16 matrix (row stride in elements) and a tile:
// for host-side preparation and tests; kernels do the same with HVX shuffles.
inline void hmx_tile_pack(uint16_t * tile, const uint16_t * matrix, uint32_t stride) {
    for (uint32_t i = 0; i < HMX_TILE_ROWS; ++i) {
        for (uint32_t j = 0; j < HMX_TILE_COLS; ++j) {
            tile[hmx_tile_index(i, j)] = matrix[i * stride + j];
        }
    }
}

inline void hmx_tile_unpack(uint16_t * matrix, uint32_t stride, const uint16_t * tile) {
    for (uint32_t i = 0; i < HMX_TILE_ROWS; ++i) {
        for (uint32_t j = 0; j < HMX_TILE_COLS; ++j) {
            matrix[i * stride + j] = tile[hmx_tile_index(i, j)];
        }
    }
}

enum hmx_status : int {
    HMX_OK = 0,
    HMX_ERR_NOT_OWNER,      // the calling thread does not hold the unit (or the lock is taken)
    HMX_ERR_NOT_VTCM,       // an operand is not entirely inside VTCM
    HMX_ERR_MISALIGNED,     // a tile not 2048-byte aligned, a scale/bias block not 256-byte aligned
    HMX_ERR_BANK_CROSSING,  // a tile run crosses a 4 MiB VTCM bank boundary
    HMX_ERR_RUN_LENGTH,     // a multiply over 0 or more than HMX_MAX_RUN_TILES tiles
    HMX_ERR_NO_SCALE_BIAS,  // a store before any scale/bias block was loaded
    HMX_ERR_RESERVED,       // the reserved half of a scale/bias block is not zero
    HMX_ERR_FAULTED,        // an earlier call faulted the unit; see hmx_fault()
};

struct hmx_unit;

// Binds the unit to the session's VTCM; no owner, empty accumulator, no scale/bias.
inline void hmx_unit_init(hmx_unit * u, uint8_t * vtcm_base, uint32_t vtcm_size);

// The calling thread takes / gives back the unit (the HMX queue thread, for its lifetime).
inline hmx_status hmx_lock(hmx_unit * u);
inline hmx_status hmx_unlock(hmx_unit * u);

// Loads the scale/bias block into the unit; later stores use it until the next load.
inline hmx_status hmx_set_scale_bias(hmx_unit * u, const void * block);
// Multiplies n_tiles activation tiles by n_tiles weight tiles (tile t of each run pairs up),
// accumulating into the accumulator.
inline hmx_status hmx_mac_fp16(hmx_unit * u, const void * act_tiles, const void * wt_tiles, uint32_t n_tiles);
// Converts the accumulator through the scale/bias block into one fp16 output tile; clears it.
inline hmx_status hmx_store_fp16(hmx_unit * u, void * out_tile);
// Discards the accumulator.
inline hmx_status hmx_clear_acc(hmx_unit * u);
// Returns once every tile stored so far is in VTCM: the HMX queue thread calls it at the end of
// each job, before the job counts as done, and a job calls it before closing its HMX_COMP trace
// event. On a device the stores are done when they return (a no-op); the virtual NPU may compute
// them on other host threads meanwhile (vnpu/hmx).
inline void hmx_drain(hmx_unit * u);

// Why the unit faulted (nullptr when it did not): the op that caused it is to fail with
// HTP_STATUS_STRICT. hmx_reset() clears fault, accumulator and scale/bias but keeps the owner;
// both are for the batch loop between ops, while the HMX queue is idle.
inline const char * hmx_fault(const hmx_unit * u);
inline void         hmx_reset(hmx_unit * u);

} // namespace hexnpu::htp

#if defined(__hexagon__)
#include "hmx-device.h"
#else
#include "vnpu/hmx/hmx-unit.h"
#endif
