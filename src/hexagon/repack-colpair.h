// The column-pair byte order shared by Q4_0, IQ4_NL, MXFP4, Q4_1, Q4_K, the Q5_K low nibbles and
// (with 2-byte elements) Q8_0: byte (or halfword) cp*32 + r holds columns 2cp, 2cp+1 of row r. The
// repack builds each row's 16 column pairs, then transposes 32 rows x 16 pairs into the tile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace hexnpu::hexagon::detail {

// Row r's column pairs: byte cp = code(2cp) | code(2cp + 1) << 4.
using colpair_rows = uint8_t[32][16];

// From Q4_0-order bytes: qs[i] holds element i (low nibble) and element i + 16 (high nibble).
inline void colpairs_from_block32(const uint8_t * qs, uint8_t * pairs) {
#if defined(__AVX2__)
    const __m128i nibble = _mm_set1_epi8(0x0F);
    const __m128i weight = _mm_set1_epi16(0x1001);  // code(2cp) * 1 + code(2cp + 1) * 16
    const __m128i x      = _mm_loadu_si128(reinterpret_cast<const __m128i *>(qs));
    const __m128i low    = _mm_maddubs_epi16(_mm_and_si128(x, nibble), weight);                     // elements 0..15
    const __m128i high   = _mm_maddubs_epi16(_mm_and_si128(_mm_srli_epi16(x, 4), nibble), weight);  // elements 16..31
    _mm_storeu_si128(reinterpret_cast<__m128i *>(pairs), _mm_packus_epi16(low, high));
#else
    for (int cp = 0; cp < 8; ++cp) {
        pairs[cp]     = uint8_t((qs[2 * cp] & 0x0F) | (qs[2 * cp + 1] << 4));
        pairs[cp + 8] = uint8_t((qs[2 * cp] >> 4) | (qs[2 * cp + 1] & 0xF0));
    }
#endif
}

// From K-quant-order bytes: element k is the nibble at `shift` (0 or 4) of src[k], k < 32.
inline void colpairs_from_kquant(const uint8_t * src, int shift, uint8_t * pairs) {
#if defined(__AVX2__)
    const __m256i x     = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src));
    const __m256i codes = _mm256_and_si256(_mm256_srl_epi16(x, _mm_cvtsi32_si128(shift)), _mm256_set1_epi8(0x0F));
    const __m256i words = _mm256_maddubs_epi16(codes, _mm256_set1_epi16(0x1001));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(pairs),
                     _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1)));
#else
    for (int cp = 0; cp < 16; ++cp) {
        pairs[cp] = uint8_t(((src[2 * cp] >> shift) & 0x0F) | ((src[2 * cp + 1] >> shift) & 0x0F) << 4);
    }
#endif
}

#if defined(__AVX2__)
// One round of an in-lane transpose: v[i] and v[i + N/2] interleave the W-byte elements of v[2i]
// and v[2i + 1]. log2(lane elements) rounds leave column c in v[bit_reverse(c)].
template <int W, int N> inline void interleave_round(__m256i (&v)[N]) {
    __m256i out[N];
    for (int i = 0; i < N / 2; ++i) {
        const __m256i a = v[2 * i], b = v[2 * i + 1];
        if constexpr (W == 1) {
            out[i] = _mm256_unpacklo_epi8(a, b), out[i + N / 2] = _mm256_unpackhi_epi8(a, b);
        } else if constexpr (W == 2) {
            out[i] = _mm256_unpacklo_epi16(a, b), out[i + N / 2] = _mm256_unpackhi_epi16(a, b);
        } else if constexpr (W == 4) {
            out[i] = _mm256_unpacklo_epi32(a, b), out[i + N / 2] = _mm256_unpackhi_epi32(a, b);
        } else {
            out[i] = _mm256_unpacklo_epi64(a, b), out[i + N / 2] = _mm256_unpackhi_epi64(a, b);
        }
    }
    std::memcpy(v, out, sizeof out);
}

inline __m256i load_two_rows(const uint8_t * lane0, const uint8_t * lane1) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(lane0))),
                                   _mm_loadu_si128(reinterpret_cast<const __m128i *>(lane1)), 1);
}
#endif

// Tile bytes [0, 512): byte 32*cp + r = rows[r][cp].
inline void store_colpair_tile(const colpair_rows & rows, uint8_t * tile) {
#if defined(__AVX2__)
    // Lane 0 carries rows 0..15, lane 1 rows 16..31: each transposed vector is one 32-byte cp row.
    __m256i v[16];
    for (int i = 0; i < 16; ++i) {
        v[i] = load_two_rows(rows[i], rows[i + 16]);
    }
    interleave_round<1>(v);
    interleave_round<2>(v);
    interleave_round<4>(v);
    interleave_round<8>(v);
    constexpr int kBitReverse4[16] = {0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15};
    for (int j = 0; j < 16; ++j) {
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(tile + 32 * kBitReverse4[j]), v[j]);
    }
#else
    for (int cp = 0; cp < 16; ++cp) {
        for (int r = 0; r < 32; ++r) {
            tile[32 * cp + r] = rows[r][cp];
        }
    }
#endif
}

// Q8_0 tile bytes [0, 1024): halfword 32*cp + r = halfword cp of row r (its columns 2cp, 2cp + 1).
// rows[r] points at row r's 32 quant bytes.
inline void store_q8_0_tile(const uint8_t * const (&rows)[32], uint8_t * tile) {
#if defined(__AVX2__)
    // 8x8-halfword blocks: rows 8g..8g+7 in lane 0 and 8g+8..8g+15 in lane 1, columns 8h..8h+7.
    constexpr int kBitReverse3[8] = {0, 4, 2, 6, 1, 5, 3, 7};
    for (int g = 0; g < 32; g += 16) {
        for (int h = 0; h < 2; ++h) {
            __m256i v[8];
            for (int i = 0; i < 8; ++i) {
                v[i] = load_two_rows(rows[g + i] + 16 * h, rows[g + 8 + i] + 16 * h);
            }
            interleave_round<2>(v);
            interleave_round<4>(v);
            interleave_round<8>(v);
            for (int j = 0; j < 8; ++j) {
                _mm256_storeu_si256(reinterpret_cast<__m256i *>(tile + 64 * (8 * h + kBitReverse3[j]) + 2 * g), v[j]);
            }
        }
    }
#else
    for (int cp = 0; cp < 16; ++cp) {
        for (int r = 0; r < 32; ++r) {
            std::memcpy(tile + 64 * cp + 2 * r, rows[r] + 2 * cp, 2);
        }
    }
#endif
}

} // namespace hexnpu::hexagon::detail
