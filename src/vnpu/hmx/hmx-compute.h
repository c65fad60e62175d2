// The arithmetic of the virtual HMX unit on one tile pair / one output tile, in the order
// htp/hmx.h defines: fp32 accumulation with k ascending (products of fp16 values are exact in
// fp32), then out = fp16_rne(fp32(fp32(acc * scale) + bias)). The element loops live in namespace
// portable; the AVX-512 and AVX2 paths behind the same names round the same values in the same order per
// element (the scale/bias step as a separate multiply and add; the build uses -ffp-contract=off),
// so both give the same bits, which a test checks.
#pragma once

#include "vnpu/hvx/hvx-float.h"

#include <stdint.h>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
#include <immintrin.h>
#endif

namespace hexnpu::vnpu::hmx {

inline constexpr int TILE_DIM = 32;

using acc_tile = float[TILE_DIM][TILE_DIM];

// Element (i, j) of a tile: halfword 64*(i >> 1) + 2*j + (i & 1) (htp/hmx.h).
constexpr int tile_halfword(int i, int j) { return 64 * (i >> 1) + 2 * j + (i & 1); }

namespace portable {

using hvx::intrinsics::detail_float::f16_to_f32;
using hvx::intrinsics::detail_float::f32_to_f16;

inline void tile_to_f32(float (&x)[TILE_DIM][TILE_DIM], const uint16_t * tile) {
    for (int i = 0; i < TILE_DIM; ++i) {
        for (int j = 0; j < TILE_DIM; ++j) {
            x[i][j] = f16_to_f32(tile[tile_halfword(i, j)]);
        }
    }
}

// acc += act x wt for one tile pair.
inline void mac_tile(acc_tile & acc, const uint16_t * act, const uint16_t * wt) {
    float a[TILE_DIM][TILE_DIM], w[TILE_DIM][TILE_DIM];
    tile_to_f32(a, act);
    tile_to_f32(w, wt);
    for (int m = 0; m < TILE_DIM; ++m) {
        for (int k = 0; k < TILE_DIM; ++k) {
            for (int n = 0; n < TILE_DIM; ++n) {
                acc[m][n] = acc[m][n] + a[m][k] * w[k][n];
            }
        }
    }
}

inline void store_tile(uint16_t * out, const acc_tile & acc, const float * scale, const float * bias) {
    for (int m = 0; m < TILE_DIM; ++m) {
        for (int n = 0; n < TILE_DIM; ++n) {
            const float scaled = acc[m][n] * scale[n];
            out[tile_halfword(m, n)] = f32_to_f16(scaled + bias[n]);
        }
    }
}

} // namespace portable

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
namespace avx2 {

// Tile vector v (64 halfwords: rows 2v and 2v+1 interleaved) to the two fp32 rows, 8 columns at a time.
inline void vector_to_rows(const uint16_t * vec, float * row0, float * row1) {
    for (int q = 0; q < 4; ++q) {
        const uint16_t * p = vec + 16 * q;  // columns 8q .. 8q + 7
        const __m256     x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
        const __m256     y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p + 8)));
        // In-lane shuffles give columns (0 1 4 5 | 2 3 6 7); swapping the middle 64-bit pairs sorts them.
        const __m256 even = _mm256_shuffle_ps(x, y, _MM_SHUFFLE(2, 0, 2, 0));
        const __m256 odd  = _mm256_shuffle_ps(x, y, _MM_SHUFFLE(3, 1, 3, 1));
        _mm256_storeu_ps(row0 + 8 * q, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), 0xD8)));
        _mm256_storeu_ps(row1 + 8 * q, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(odd), 0xD8)));
    }
}

inline void tile_to_f32(float (&x)[TILE_DIM][TILE_DIM], const uint16_t * tile) {
    for (int v = 0; v < TILE_DIM / 2; ++v) {
        vector_to_rows(tile + 64 * v, x[2 * v], x[2 * v + 1]);
    }
}

inline void mac_tile(acc_tile & acc, const uint16_t * act, const uint16_t * wt) {
    alignas(32) float a[TILE_DIM][TILE_DIM];
    alignas(32) float w[TILE_DIM][TILE_DIM];
    tile_to_f32(a, act);
    tile_to_f32(w, wt);
    // 4 rows x 16 columns of accumulator (8 registers) over the whole k loop; the fused
    // multiply-add is exact as in the AVX-512 path.
    constexpr int ROWS = 4;
    for (int n0 = 0; n0 < TILE_DIM; n0 += 16) {
        for (int m0 = 0; m0 < TILE_DIM; m0 += ROWS) {
            __m256 c[ROWS][2];
            for (int r = 0; r < ROWS; ++r) {
                c[r][0] = _mm256_loadu_ps(acc[m0 + r] + n0);
                c[r][1] = _mm256_loadu_ps(acc[m0 + r] + n0 + 8);
            }
            for (int k = 0; k < TILE_DIM; ++k) {
                const __m256 w0 = _mm256_load_ps(w[k] + n0);
                const __m256 w1 = _mm256_load_ps(w[k] + n0 + 8);
                for (int r = 0; r < ROWS; ++r) {
                    const __m256 am = _mm256_broadcast_ss(&a[m0 + r][k]);
                    c[r][0]         = _mm256_fmadd_ps(am, w0, c[r][0]);
                    c[r][1]         = _mm256_fmadd_ps(am, w1, c[r][1]);
                }
            }
            for (int r = 0; r < ROWS; ++r) {
                _mm256_storeu_ps(acc[m0 + r] + n0, c[r][0]);
                _mm256_storeu_ps(acc[m0 + r] + n0 + 8, c[r][1]);
            }
        }
    }
}

inline void store_tile(uint16_t * out, const acc_tile & acc, const float * scale, const float * bias) {
    constexpr int RNE = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    for (int q = 0; q < 4; ++q) {
        const __m256 s = _mm256_loadu_ps(scale + 8 * q);
        const __m256 b = _mm256_loadu_ps(bias + 8 * q);
        for (int v = 0; v < TILE_DIM / 2; ++v) {
            const __m256 r0 = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(acc[2 * v] + 8 * q), s), b);
            const __m256 r1 = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(acc[2 * v + 1] + 8 * q), s), b);
            // Interleave in lanes (columns 0 1 4 5 | 2 3 6 7 as pairs), then put the halves in order.
            const __m256 lo = _mm256_unpacklo_ps(r0, r1);
            const __m256 hi = _mm256_unpackhi_ps(r0, r1);
            uint16_t *   p  = out + 64 * v + 16 * q;
            _mm_storeu_si128(reinterpret_cast<__m128i *>(p), _mm256_cvtps_ph(_mm256_permute2f128_ps(lo, hi, 0x20), RNE));
            _mm_storeu_si128(reinterpret_cast<__m128i *>(p + 8),
                             _mm256_cvtps_ph(_mm256_permute2f128_ps(lo, hi, 0x31), RNE));
        }
    }
}

} // namespace avx2
#endif

#if defined(__AVX512F__)
namespace avx512 {

// fp16 <-> fp32 for 16 lanes. The zero-masking forms with every lane selected are the plain
// conversions; GCC 12's unmasked ones trip -Wuninitialized on their internal undefined source.
inline __m512 widen(__m256i halves) { return _mm512_maskz_cvtph_ps(__mmask16(0xFFFF), halves); }

inline __m256i narrow_rne(__m512 floats) {
    return _mm512_maskz_cvtps_ph(__mmask16(0xFFFF), floats, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// Tile vector v (64 halfwords: rows 2v and 2v+1 interleaved) to the two fp32 rows.
inline void vector_to_rows(const uint16_t * vec, float * row0, float * row1) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd  = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (int half = 0; half < 2; ++half) {
        const uint16_t * p  = vec + 32 * half;  // columns 16*half .. 16*half + 15
        const __m512     lo = widen(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
        const __m512     hi = widen(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p + 16)));
        _mm512_storeu_ps(row0 + 16 * half, _mm512_permutex2var_ps(lo, even, hi));
        _mm512_storeu_ps(row1 + 16 * half, _mm512_permutex2var_ps(lo, odd, hi));
    }
}

inline void tile_to_f32(float (&x)[TILE_DIM][TILE_DIM], const uint16_t * tile) {
    for (int v = 0; v < TILE_DIM / 2; ++v) {
        vector_to_rows(tile + 64 * v, x[2 * v], x[2 * v + 1]);
    }
}

inline void mac_tile(acc_tile & acc, const uint16_t * act, const uint16_t * wt) {
    alignas(64) float a[TILE_DIM][TILE_DIM];
    alignas(64) float w[TILE_DIM][TILE_DIM];
    tile_to_f32(a, act);
    tile_to_f32(w, wt);
    // 8 accumulator rows (16 registers) stay in registers over the whole k loop. A fused
    // multiply-add rounds once, exactly like the separate add: the product of two fp16 values
    // is exact in fp32 (22 significant bits, no overflow or underflow).
    constexpr int ROWS = 8;
    for (int m0 = 0; m0 < TILE_DIM; m0 += ROWS) {
        __m512 c[ROWS][2];
        for (int r = 0; r < ROWS; ++r) {
            c[r][0] = _mm512_loadu_ps(acc[m0 + r]);
            c[r][1] = _mm512_loadu_ps(acc[m0 + r] + 16);
        }
        for (int k = 0; k < TILE_DIM; ++k) {
            const __m512 w0 = _mm512_load_ps(w[k]);
            const __m512 w1 = _mm512_load_ps(w[k] + 16);
            for (int r = 0; r < ROWS; ++r) {
                const __m512 am = _mm512_set1_ps(a[m0 + r][k]);
                c[r][0]         = _mm512_fmadd_ps(am, w0, c[r][0]);
                c[r][1]         = _mm512_fmadd_ps(am, w1, c[r][1]);
            }
        }
        for (int r = 0; r < ROWS; ++r) {
            _mm512_storeu_ps(acc[m0 + r], c[r][0]);
            _mm512_storeu_ps(acc[m0 + r] + 16, c[r][1]);
        }
    }
}

inline void store_tile(uint16_t * out, const acc_tile & acc, const float * scale, const float * bias) {
    // Positions 2t / 2t+1 of 16 output halfwords take column t of row 2v / 2v+1.
    const __m512i first  = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i second = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    for (int half = 0; half < 2; ++half) {
        const __m512 s = _mm512_loadu_ps(scale + 16 * half);
        const __m512 b = _mm512_loadu_ps(bias + 16 * half);
        for (int v = 0; v < TILE_DIM / 2; ++v) {
            const __m512 r0 = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(acc[2 * v] + 16 * half), s), b);
            const __m512 r1 = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(acc[2 * v + 1] + 16 * half), s), b);
            uint16_t *   p  = out + 64 * v + 32 * half;
            _mm256_storeu_si256(reinterpret_cast<__m256i *>(p),
                                narrow_rne(_mm512_permutex2var_ps(r0, first, r1)));
            _mm256_storeu_si256(reinterpret_cast<__m256i *>(p + 16),
                                narrow_rne(_mm512_permutex2var_ps(r0, second, r1)));
        }
    }
}

} // namespace avx512
#endif

#if defined(__AVX512F__)
using avx512::mac_tile;
using avx512::store_tile;
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
using avx2::mac_tile;
using avx2::store_tile;
#else
using portable::mac_tile;
using portable::store_tile;
#endif

} // namespace hexnpu::vnpu::hmx
