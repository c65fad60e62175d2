// Per-sub-block scale searches of GGML's K-quant reference quantizers (formats.md §1.3).
// Each one picks the codes and the scale (and min) of one small group; the super-block
// quantizers then re-encode the group scales on a coarser grid and requantize. They must follow
// GGML's fp32 arithmetic step by step, since the chosen codes depend on every rounding.
#pragma once

#include "quant-common.h"

#include <cstdint>

namespace hexnpu::kquant {

// A group whose largest |x| is below this is treated as all zero.
inline constexpr float GROUP_MAX_EPS = 1e-15f;

// Largest group the searches accept (Q4_K/Q5_K sub-blocks).
inline constexpr int MAX_GROUP = 32;

// How make_qkx2_quants widens its search: after the first guess nmax / (max - min) it tries the
// inverse scales (rmin + rdelta*is + nmax) / (max - min) for is = 0..nstep, where min is that of
// the best fit found so far (as in GGML: an accepted step moves the origin of the later ones).
struct AffineSearch {
    float rmin;
    float rdelta;
    int   nstep;
    bool  use_mad;  // weigh absolute errors instead of squared ones
};

// Affine fit x ≈ scale*L - min with codes L in [0, nmax] (min >= 0 is returned in *out_min),
// minimizing the weighted error. Returns the scale. n <= MAX_GROUP.
float make_qkx2_quants(int n, int nmax, const float * x, const float * weights, uint8_t * L, float * out_min,
                       const AffineSearch & search);

// Symmetric fit x ≈ scale*(L - nmax) with L in [0, 2*nmax), weights x², refined by moving single
// codes while that improves the fit (GGML's do_rmse variant, the one Q3_K uses). An all-zero group
// gets L = 0 and scale 0.
float make_q3_quants(int n, int nmax, const float * x, int8_t * L);

// Symmetric fit x ≈ scale*(L - nmax) with L in [0, 2*nmax), weights x², trying 18 inverse scales
// around nmax/max (GGML's rmse_type 1 without importance weights, the one Q6_K uses). An all-zero
// group gets L = 0 and scale 0.
float make_qx_quants(int n, int nmax, const float * x, int8_t * L);

// The same two searches, bit for bit, evaluating eight candidate scales at once where the CPU
// has AVX2 (they are the plain ones otherwise).
float make_qkx2_quants_fast(int n, int nmax, const float * x, const float * weights, uint8_t * L, float * out_min,
                            const AffineSearch & search);
float make_qx_quants_fast(int n, int nmax, const float * x, int8_t * L);

using Qkx2Search = decltype(&make_qkx2_quants);
using QxSearch   = decltype(&make_qx_quants);

} // namespace hexnpu::kquant
