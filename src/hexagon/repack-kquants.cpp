// Repack of the K-quants (formats.md §3.3): super-block sb of a 32-row group becomes tiles
// 8*sb .. 8*sb+7, tile j covering elements [32j, 32j+32). Q2_K moves bits only; Q3_K..Q6_K replace
// d and the 6/8-bit sub-block scales by fp16(d*scale), computed exactly in fp32 and rounded once.
#include "repack-colpair.h"
#include "repack-internal.h"

#include "core/fp16.h"
#include "core/quant-blocks.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace hexnpu::hexagon::detail {
namespace {

using proto::KQUANT_TILES;

// Walks the super-blocks of a row group: put_row(block, r, tiles) fills row r's share of the
// super-block's 8 tiles, then finish(tiles) completes what needs all rows (the column-pair transposes).
template <typename PutRow, typename Finish>
std::optional<scale_overflow> for_each_super_block(const row_group & src, size_t block_bytes, uint32_t tile_bytes,
                                                   uint8_t * dst, PutRow put_row, Finish finish) {
    const int64_t n_super_blocks = src.n_k_tiles / KQUANT_TILES;
    for (int64_t sb = 0; sb < n_super_blocks; ++sb) {
        uint8_t *       tiles = dst + sb * KQUANT_TILES * tile_bytes;
        const uint8_t * block = src.first_row + sb * block_bytes;
        for (int r = 0; r < src.n_rows; ++r, block += src.row_bytes) {
            // The 32 rows are 32 streams the hardware prefetcher does not follow: fetch this row's
            // next super-block while the current one is repacked (a prefetch past the end never faults).
            const uint8_t * next = block + block_bytes;
            for (size_t offset = 0; offset < block_bytes; offset += 64) {
                __builtin_prefetch(next + offset);
            }
            __builtin_prefetch(next + block_bytes - 1);  // the last line, when the block straddles one more
            if (std::optional<scale_overflow> bad = put_row(block, r, tiles)) {
                bad->row         = r;
                bad->super_block = sb;
                return bad;
            }
        }
        finish(tiles);
    }
    return std::nullopt;
}

void no_finish(uint8_t *) {}

// Rounds exactly computed fp32 scale products once to fp16. Returns the index of the first one that
// is inf or NaN in fp16 (a tile must never hold one), or -1.
int round_scale_products(const float * products, int n, uint16_t * out) {
    fp32_to_fp16_row(products, out, n);
    for (int i = 0; i < n; ++i) {
        if ((out[i] & 0x7C00) == 0x7C00) {
            return i;
        }
    }
    return -1;
}

scale_overflow overflow(const char * name, float product) { return {0, 0, name, product}; }

// Row r's 2-bit vrmpy planes in all 8 tiles of a super-block. Tile j = 4h + f takes code k from
// field f of src[32h + k]; per 16 columns (vector m) its 32-bit word of row r holds column 16m + 4g + i
// in byte i, field g: a transpose of the 2-bit fields (g, f) of the words at src + 32h + 16m + 4g.
void put_plane2_tiles(const uint8_t * src, int r, uint8_t * tiles, uint32_t tile_bytes, uint32_t plane_offset) {
    uint8_t * row = tiles + plane_offset + 4 * r;
#if defined(__AVX2__)
    const __m256i fields     = _mm256_set1_epi8(0x03);
    const __m256i group_bits = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);  // lane 4m + g
    for (int h = 0; h < 2; ++h) {
        const __m256i words = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + 32 * h));
        for (int f = 0; f < 4; ++f) {
            __m256i t = _mm256_and_si256(_mm256_srl_epi32(words, _mm_cvtsi32_si128(2 * f)), fields);
            t         = _mm256_sllv_epi32(t, group_bits);
            t         = _mm256_or_si256(t, _mm256_shuffle_epi32(t, _MM_SHUFFLE(1, 0, 3, 2)));
            t         = _mm256_or_si256(t, _mm256_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1)));  // OR over g
            uint8_t * out = row + (4 * h + f) * tile_bytes;
            store_u32(out, uint32_t(_mm256_cvtsi256_si32(t)));
            store_u32(out + 128, uint32_t(_mm256_extract_epi32(t, 4)));
        }
    }
#else
    for (uint32_t j = 0; j < KQUANT_TILES; ++j) {
        for (int m = 0; m < 2; ++m) {
            uint32_t out = 0;
            for (int g = 0; g < 4; ++g) {
                out |= ((load_u32(src + 32 * (j >> 2) + 16 * m + 4 * g) >> (2 * (j & 3))) & 0x03030303u) << (2 * g);
            }
            store_u32(row + j * tile_bytes + 128 * m, out);
        }
    }
#endif
}

// Bit k of the result is bit `bit` of bytes[k], k < 32.
uint32_t bit_plane(const uint8_t * bytes, int bit) {
#if defined(__AVX2__)
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(bytes));
    return uint32_t(_mm256_movemask_epi8(_mm256_sll_epi16(x, _mm_cvtsi32_si128(7 - bit))));
#else
    uint32_t plane = 0;
    for (int k = 0; k < 32; ++k) {
        plane |= uint32_t((bytes[k] >> bit) & 1) << k;
    }
    return plane;
#endif
}

// Row r's Q3_K sign planes in all 8 tiles: in tile j, bit k/4 of byte 4r + k%4 is set when bit j of
// hmask[k] (the high bit of column k) is clear, i.e. q = low2 - 4.
void put_q3_K_sign_planes(const uint8_t * hmask, int r, uint8_t * tiles) {
    uint8_t * row = tiles + proto::TILE_Q3_K_NEG + 4 * r;
#if defined(__AVX2__)
    const __m256i clear     = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(hmask)),
                                               _mm256_set1_epi8(-1));  // lane g: columns 4g..4g+3
    const __m256i group_bit = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (uint32_t j = 0; j < KQUANT_TILES; ++j) {
        __m256i t = _mm256_and_si256(_mm256_srl_epi32(clear, _mm_cvtsi32_si128(int(j))), _mm256_set1_epi8(1));
        t         = _mm256_sllv_epi32(t, group_bit);
        t         = _mm256_or_si256(t, _mm256_shuffle_epi32(t, _MM_SHUFFLE(1, 0, 3, 2)));
        t         = _mm256_or_si256(t, _mm256_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1)));
        store_u32(row + j * proto::TILE_SIZE_Q3_K, uint32_t(_mm256_cvtsi256_si32(t) | _mm256_extract_epi32(t, 4)));
    }
#else
    for (uint32_t j = 0; j < KQUANT_TILES; ++j) {
        uint32_t negative = 0;
        for (int g = 0; g < 8; ++g) {
            negative |= ((~load_u32(hmask + 4 * g) >> j) & 0x01010101u) << g;
        }
        store_u32(row + j * proto::TILE_SIZE_Q3_K, negative);
    }
#endif
}

// Row r's Q6_K low-nibble planes in all 8 tiles. Tile j = 4h + g takes column k from nibble g/2 of
// ql[64h + 32(g%2) + k]; its vector v holds columns 8v + i (low nibble) and 8v + 4 + i (high) in
// byte 4r + i.
void put_q6_K_low_planes(const uint8_t * ql, int r, uint8_t * tiles) {
    for (uint32_t j = 0; j < KQUANT_TILES; ++j) {
        const uint8_t * low   = ql + 64 * (j >> 2) + 32 * (j & 1);
        const int       shift = 4 * int((j & 3) >> 1);
        uint8_t *       out   = tiles + j * proto::TILE_SIZE_Q6_K + 4 * r;
#if defined(__AVX2__)
        __m256i t = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(low));  // lane 2v + n: columns 8v + 4n + i
        t         = _mm256_and_si256(_mm256_srl_epi32(t, _mm_cvtsi32_si128(shift)), _mm256_set1_epi8(0x0F));
        t         = _mm256_sllv_epi32(t, _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
        t         = _mm256_or_si256(t, _mm256_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1)));  // lane 2v: both halves
        store_u32(out, uint32_t(_mm256_cvtsi256_si32(t)));
        store_u32(out + 128, uint32_t(_mm256_extract_epi32(t, 2)));
        store_u32(out + 256, uint32_t(_mm256_extract_epi32(t, 4)));
        store_u32(out + 384, uint32_t(_mm256_extract_epi32(t, 6)));
#else
        for (int v = 0; v < 4; ++v) {
            const uint32_t first  = (load_u32(low + 8 * v) >> shift) & 0x0F0F0F0Fu;
            const uint32_t second = (load_u32(low + 8 * v + 4) >> shift) & 0x0F0F0F0Fu;
            store_u32(out + 128 * v, first | second << 4);
        }
#endif
    }
}

// Q3_K's sixteen 6-bit sub-block scales, unbiased to [-32, 31].
void decode_q3_K_scales(const uint8_t * packed, int scales[16]) {
    for (int t = 0; t < 16; ++t) {
        const int low4  = t < 8 ? packed[t] & 0x0F : packed[t - 8] >> 4;
        const int high2 = (packed[8 + (t & 3)] >> (2 * (t >> 2))) & 3;
        scales[t]       = (low4 | high2 << 4) - 32;
    }
}

// Q4_K/Q5_K's eight 6-bit (scale, min) pairs.
void decode_q4_K_scales(const uint8_t * packed, int scales[8], int mins[8]) {
    for (int t = 0; t < 4; ++t) {
        scales[t] = packed[t] & 63;
        mins[t]   = packed[t + 4] & 63;
    }
    for (int t = 4; t < 8; ++t) {
        scales[t] = (packed[t + 4] & 0x0F) | (packed[t - 4] >> 6) << 4;
        mins[t]   = (packed[t + 4] >> 4) | (packed[t] >> 6) << 4;
    }
}

// Row r's share of the Q4_K tiles (also the Q5_K low part): the column pairs of sub-block j go to
// pairs[j][r] for the transpose, the (D, M) pair straight into tile j.
std::optional<scale_overflow> put_q4_K_row(const uint8_t * block, const uint8_t * qs, int r, uint8_t * tiles,
                                           uint32_t tile_bytes, colpair_rows (&pairs)[KQUANT_TILES]) {
    static_assert(offsetof(block_q4_K, d) == offsetof(block_q5_K, d) && offsetof(block_q4_K, scales) == offsetof(block_q5_K, scales));
    const float d    = fp16_to_fp32(load_u16(block + offsetof(block_q4_K, d)));
    const float dmin = fp16_to_fp32(load_u16(block + offsetof(block_q4_K, dmin)));
    int         scales[8], mins[8];
    decode_q4_K_scales(block + offsetof(block_q4_K, scales), scales, mins);
    float products[2 * KQUANT_TILES];  // D of sub-blocks 0..7, then M
    for (uint32_t j = 0; j < KQUANT_TILES; ++j) {
        products[j]                = d * float(scales[j]);
        products[KQUANT_TILES + j] = -(dmin * float(mins[j]));
    }
    uint16_t rounded[2 * KQUANT_TILES];
    if (const int bad = round_scale_products(products, 2 * KQUANT_TILES, rounded); bad >= 0) {
        return overflow(bad < int(KQUANT_TILES) ? "d*scale" : "-dmin*min", products[bad]);
    }
    for (uint32_t j = 0; j < KQUANT_TILES; ++j) {
        uint8_t * tile = tiles + j * tile_bytes;
        colpairs_from_kquant(qs + 32 * (j >> 1), 4 * (j & 1), pairs[j][r]);
        store_u16(tile + proto::pair_d_offset(r), rounded[j]);
        store_u16(tile + proto::pair_m_offset(r), rounded[KQUANT_TILES + j]);
    }
    return std::nullopt;
}

void store_colpair_tiles(const colpair_rows (&pairs)[KQUANT_TILES], uint8_t * tiles, uint32_t tile_bytes) {
    for (uint32_t j = 0; j < KQUANT_TILES; ++j) {
        store_colpair_tile(pairs[j], tiles + j * tile_bytes);
    }
}

} // namespace

std::optional<scale_overflow> write_group_q2_K(const row_group & src, uint8_t * dst) {
    constexpr uint32_t kTile = proto::TILE_SIZE_Q2_K;
    return for_each_super_block(
        src, sizeof(block_q2_K), kTile, dst,
        [](const uint8_t * block, int r, uint8_t * tiles) -> std::optional<scale_overflow> {
            const uint8_t * qs     = block + offsetof(block_q2_K, qs);
            const uint8_t * scales = block + offsetof(block_q2_K, scales);
            put_plane2_tiles(qs, r, tiles, kTile, 0);
            for (uint32_t j = 0; j < KQUANT_TILES; ++j) {
                uint8_t * tile = tiles + j * kTile;
                tile[proto::q2_K_scale_offset(r, 0)] = scales[2 * j];
                tile[proto::q2_K_scale_offset(r, 1)] = scales[2 * j + 1];
            }
            const uint16_t d    = load_u16(block + offsetof(block_q2_K, d));
            const uint16_t dmin = load_u16(block + offsetof(block_q2_K, dmin));
            store_u16(tiles + proto::q2_K_d_tile(r) * kTile + proto::q2_K_d_offset(r), d);
            // -dmin is an exact sign flip, so the tile stays lossless.
            store_u16(tiles + proto::q2_K_neg_dmin_tile(r) * kTile + proto::q2_K_d_offset(r), uint16_t(dmin ^ 0x8000));
            return std::nullopt;
        },
        no_finish);
}

std::optional<scale_overflow> write_group_q3_K(const row_group & src, uint8_t * dst) {
    constexpr uint32_t kTile = proto::TILE_SIZE_Q3_K;
    return for_each_super_block(
        src, sizeof(block_q3_K), kTile, dst,
        [](const uint8_t * block, int r, uint8_t * tiles) -> std::optional<scale_overflow> {
            const float d = fp16_to_fp32(load_u16(block + offsetof(block_q3_K, d)));
            int         scales[16];
            decode_q3_K_scales(block + offsetof(block_q3_K, scales), scales);
            float products[16];
            for (int t = 0; t < 16; ++t) {
                products[t] = d * float(scales[t]);
            }
            uint16_t rounded[16];
            if (const int bad = round_scale_products(products, 16, rounded); bad >= 0) {
                return overflow("d*scale", products[bad]);
            }
            put_plane2_tiles(block + offsetof(block_q3_K, qs), r, tiles, kTile, 0);
            put_q3_K_sign_planes(block + offsetof(block_q3_K, hmask), r, tiles);
            for (uint32_t j = 0; j < KQUANT_TILES; ++j) {
                store_u16(tiles + j * kTile + proto::q3_K_d_offset(r, 0), rounded[2 * j]);
                store_u16(tiles + j * kTile + proto::q3_K_d_offset(r, 1), rounded[2 * j + 1]);
            }
            return std::nullopt;
        },
        no_finish);
}

std::optional<scale_overflow> write_group_q4_K(const row_group & src, uint8_t * dst) {
    constexpr uint32_t       kTile = proto::TILE_SIZE_Q4_K;
    alignas(32) colpair_rows pairs[KQUANT_TILES] = {};  // padding rows stay zero
    return for_each_super_block(
        src, sizeof(block_q4_K), kTile, dst,
        [&](const uint8_t * block, int r, uint8_t * tiles) {
            return put_q4_K_row(block, block + offsetof(block_q4_K, qs), r, tiles, kTile, pairs);
        },
        [&](uint8_t * tiles) { store_colpair_tiles(pairs, tiles, kTile); });
}

std::optional<scale_overflow> write_group_q5_K(const row_group & src, uint8_t * dst) {
    constexpr uint32_t       kTile = proto::TILE_SIZE_Q5_K;
    alignas(32) colpair_rows pairs[KQUANT_TILES] = {};
    return for_each_super_block(
        src, sizeof(block_q5_K), kTile, dst,
        [&](const uint8_t * block, int r, uint8_t * tiles) -> std::optional<scale_overflow> {
            if (std::optional<scale_overflow> bad = put_q4_K_row(block, block + offsetof(block_q5_K, qs), r, tiles, kTile, pairs)) {
                return bad;
            }
            // Bit j of qh[k] is the 5th bit of column k of sub-block j. Plane byte 640 + 32c + r takes
            // columns 8q + 2c + p (q = 0..3, p = 0..1) in bit 2q + p.
            const uint8_t * qh = block + offsetof(block_q5_K, qh);
            for (uint32_t j = 0; j < KQUANT_TILES; ++j) {
                const uint32_t plane = bit_plane(qh, int(j));
                for (int c = 0; c < 4; ++c) {
                    uint32_t x = (plane >> (2 * c)) & 0x03030303u;  // columns 8q + 2c + p at bit 8q + p
                    x          = (x | (x >> 6)) & 0x000F000Fu;
                    x          = (x | (x >> 12)) & 0xFFu;
                    tiles[j * kTile + proto::TILE_Q5_K_HIGH + 32 * c + r] = uint8_t(x);
                }
            }
            return std::nullopt;
        },
        [&](uint8_t * tiles) { store_colpair_tiles(pairs, tiles, kTile); });
}

std::optional<scale_overflow> write_group_q6_K(const row_group & src, uint8_t * dst) {
    constexpr uint32_t kTile = proto::TILE_SIZE_Q6_K;
    return for_each_super_block(
        src, sizeof(block_q6_K), kTile, dst,
        [](const uint8_t * block, int r, uint8_t * tiles) -> std::optional<scale_overflow> {
            const int8_t * scales = reinterpret_cast<const int8_t *>(block + offsetof(block_q6_K, scales));
            const float    d      = fp16_to_fp32(load_u16(block + offsetof(block_q6_K, d)));
            float          products[16];
            for (int t = 0; t < 16; ++t) {
                products[t] = d * float(scales[t]);
            }
            uint16_t rounded[16];
            if (const int bad = round_scale_products(products, 16, rounded); bad >= 0) {
                return overflow("d*scale", products[bad]);
            }
            put_q6_K_low_planes(block + offsetof(block_q6_K, ql), r, tiles);
            put_plane2_tiles(block + offsetof(block_q6_K, qh), r, tiles, kTile, proto::TILE_Q6_K_HIGH);
            for (uint32_t j = 0; j < KQUANT_TILES; ++j) {
                store_u16(tiles + j * kTile + proto::q6_K_d_offset(r, 0), rounded[2 * j]);
                store_u16(tiles + j * kTile + proto::q6_K_d_offset(r, 1), rounded[2 * j + 1]);
            }
            return std::nullopt;
        },
        no_finish);
}

} // namespace hexnpu::hexagon::detail
