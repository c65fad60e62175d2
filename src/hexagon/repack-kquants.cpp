// Repack of the K-quants (formats.md §3.3): super-block sb of a 32-row group becomes tiles
// 8*sb .. 8*sb+7, tile j covering elements [32j, 32j+32). Q2_K moves bits only; Q3_K..Q6_K replace
// d and the 6/8-bit sub-block scales by fp16(d*scale), computed exactly in fp32 and rounded once.
#include "repack-internal.h"

#include "core/fp16.h"
#include "core/quant-blocks.h"

namespace hexnpu::hexagon::detail {
namespace {

using proto::KQUANT_TILES;

template <typename PutRow>
std::optional<scale_overflow> for_each_super_block_row(const row_group & src, size_t block_bytes, uint32_t tile_bytes,
                                                       uint8_t * dst, PutRow put_row) {
    const int64_t n_super_blocks = src.n_k_tiles / KQUANT_TILES;
    for (int64_t sb = 0; sb < n_super_blocks; ++sb) {
        uint8_t *       tiles = dst + sb * KQUANT_TILES * tile_bytes;
        const uint8_t * block = src.first_row + sb * block_bytes;
        for (int r = 0; r < src.n_rows; ++r, block += src.row_bytes) {
            if (std::optional<scale_overflow> bad = put_row(block, r, tiles)) {
                bad->row         = r;
                bad->super_block = sb;
                return bad;
            }
        }
    }
    return std::nullopt;
}

// Stores fp16(product) at `at`; false when that is inf or NaN (the tile must never hold one).
bool store_scale_product(uint8_t * at, float product) {
    const uint16_t h = fp32_to_fp16(product);
    store_u16(at, h);
    return (h & 0x7C00) != 0x7C00;
}

scale_overflow overflow(const char * name, float product) { return {0, 0, name, product}; }

// 2-bit vrmpy plane of tile row r: code k is field `field` of src[k]. Per 16 columns, the tile's
// 32-bit word of row r holds column 4g + i in byte i, field g.
void put_plane2(const uint8_t * src, int field, int r, uint8_t * plane) {
    for (int vec = 0; vec < 2; ++vec) {
        uint32_t out = 0;
        for (int g = 0; g < 4; ++g) {
            out |= ((load_u32(src + 16 * vec + 4 * g) >> (2 * field)) & 0x03030303u) << (2 * g);
        }
        store_u32(plane + 128 * vec + 4 * r, out);
    }
}

// Column-pair nibbles of tile row r: code k is the nibble at `shift` of src[k].
void put_colpair_nibbles(const uint8_t * src, int shift, int r, uint8_t * tile) {
    for (int cp = 0; cp < 16; ++cp) {
        const int lo = (src[2 * cp] >> shift) & 0x0F;
        const int hi = (src[2 * cp + 1] >> shift) & 0x0F;
        tile[32 * cp + r] = uint8_t(lo | hi << 4);
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

// The Q4_K tile part shared with Q5_K: nibbles of sub-block j and the (D, M) pair of every row.
std::optional<scale_overflow> put_q4_K_part(const uint8_t * block, const uint8_t * qs, int r, uint8_t * tiles,
                                            uint32_t tile_bytes) {
    static_assert(offsetof(block_q4_K, d) == offsetof(block_q5_K, d) && offsetof(block_q4_K, scales) == offsetof(block_q5_K, scales));
    const float d    = fp16_to_fp32(load_u16(block + offsetof(block_q4_K, d)));
    const float dmin = fp16_to_fp32(load_u16(block + offsetof(block_q4_K, dmin)));
    int         scales[8], mins[8];
    decode_q4_K_scales(block + offsetof(block_q4_K, scales), scales, mins);
    for (uint32_t j = 0; j < KQUANT_TILES; ++j) {
        uint8_t * tile = tiles + j * tile_bytes;
        put_colpair_nibbles(qs + 32 * (j >> 1), 4 * (j & 1), r, tile);
        const float scale = d * float(scales[j]);
        const float min   = -(dmin * float(mins[j]));
        if (!store_scale_product(tile + proto::pair_d_offset(r), scale)) {
            return overflow("d*scale", scale);
        }
        if (!store_scale_product(tile + proto::pair_m_offset(r), min)) {
            return overflow("-dmin*min", min);
        }
    }
    return std::nullopt;
}

} // namespace

std::optional<scale_overflow> write_group_q2_K(const row_group & src, uint8_t * dst) {
    constexpr uint32_t kTile = proto::TILE_SIZE_Q2_K;
    return for_each_super_block_row(src, sizeof(block_q2_K), kTile, dst, [](const uint8_t * block, int r, uint8_t * tiles) {
        const uint8_t * qs     = block + offsetof(block_q2_K, qs);
        const uint8_t * scales = block + offsetof(block_q2_K, scales);
        for (uint32_t j = 0; j < KQUANT_TILES; ++j) {
            uint8_t * tile = tiles + j * kTile;
            put_plane2(qs + 32 * (j >> 2), j & 3, r, tile);
            tile[proto::q2_K_scale_offset(r, 0)] = scales[2 * j];
            tile[proto::q2_K_scale_offset(r, 1)] = scales[2 * j + 1];
        }
        const uint16_t d    = load_u16(block + offsetof(block_q2_K, d));
        const uint16_t dmin = load_u16(block + offsetof(block_q2_K, dmin));
        store_u16(tiles + proto::q2_K_d_tile(r) * kTile + proto::q2_K_d_offset(r), d);
        // -dmin is an exact sign flip, so the tile stays lossless.
        store_u16(tiles + proto::q2_K_neg_dmin_tile(r) * kTile + proto::q2_K_d_offset(r), uint16_t(dmin ^ 0x8000));
        return std::optional<scale_overflow>();
    });
}

std::optional<scale_overflow> write_group_q3_K(const row_group & src, uint8_t * dst) {
    constexpr uint32_t kTile = proto::TILE_SIZE_Q3_K;
    return for_each_super_block_row(src, sizeof(block_q3_K), kTile, dst,
                                    [](const uint8_t * block, int r, uint8_t * tiles) -> std::optional<scale_overflow> {
        const uint8_t * hmask = block + offsetof(block_q3_K, hmask);
        const uint8_t * qs    = block + offsetof(block_q3_K, qs);
        const float     d     = fp16_to_fp32(load_u16(block + offsetof(block_q3_K, d)));
        int             scales[16];
        decode_q3_K_scales(block + offsetof(block_q3_K, scales), scales);
        for (uint32_t j = 0; j < KQUANT_TILES; ++j) {
            uint8_t * tile = tiles + j * kTile;
            put_plane2(qs + 32 * (j >> 2), j & 3, r, tile);
            // hmask bit j of byte k is the high bit of column k; the tile's sign plane is its
            // complement, in vrmpy order (byte 4r + k % 4, bit k / 4).
            uint32_t negative = 0;
            for (int g = 0; g < 8; ++g) {
                negative |= ((~load_u32(hmask + 4 * g) >> j) & 0x01010101u) << g;
            }
            store_u32(tile + proto::TILE_Q3_K_NEG + 4 * r, negative);
            for (uint32_t s = 0; s < 2; ++s) {
                const float scale = d * float(scales[2 * j + s]);
                if (!store_scale_product(tile + proto::q3_K_d_offset(r, s), scale)) {
                    return overflow("d*scale", scale);
                }
            }
        }
        return std::nullopt;
    });
}

std::optional<scale_overflow> write_group_q4_K(const row_group & src, uint8_t * dst) {
    constexpr uint32_t kTile = proto::TILE_SIZE_Q4_K;
    return for_each_super_block_row(src, sizeof(block_q4_K), kTile, dst, [](const uint8_t * block, int r, uint8_t * tiles) {
        return put_q4_K_part(block, block + offsetof(block_q4_K, qs), r, tiles, kTile);
    });
}

std::optional<scale_overflow> write_group_q5_K(const row_group & src, uint8_t * dst) {
    constexpr uint32_t kTile = proto::TILE_SIZE_Q5_K;
    return for_each_super_block_row(src, sizeof(block_q5_K), kTile, dst,
                                    [](const uint8_t * block, int r, uint8_t * tiles) -> std::optional<scale_overflow> {
        if (std::optional<scale_overflow> bad = put_q4_K_part(block, block + offsetof(block_q5_K, qs), r, tiles, kTile)) {
            return bad;
        }
        // qh bit j of byte k is the 5th bit of column k of sub-block j. Plane byte 640 + 32c + r
        // takes columns 8q + 2c + p (q = 0..3, p = 0..1) in bit 2q + p.
        const uint8_t * qh = block + offsetof(block_q5_K, qh);
        for (uint32_t j = 0; j < KQUANT_TILES; ++j) {
            uint8_t * tile = tiles + j * kTile;
            for (int c = 0; c < 4; ++c) {
                int bits = 0;
                for (int q = 0; q < 4; ++q) {
                    bits |= ((qh[8 * q + 2 * c] >> j) & 1) << (2 * q);
                    bits |= ((qh[8 * q + 2 * c + 1] >> j) & 1) << (2 * q + 1);
                }
                tile[proto::TILE_Q5_K_HIGH + 32 * c + r] = uint8_t(bits);
            }
        }
        return std::nullopt;
    });
}

std::optional<scale_overflow> write_group_q6_K(const row_group & src, uint8_t * dst) {
    constexpr uint32_t kTile = proto::TILE_SIZE_Q6_K;
    return for_each_super_block_row(src, sizeof(block_q6_K), kTile, dst,
                                    [](const uint8_t * block, int r, uint8_t * tiles) -> std::optional<scale_overflow> {
        const uint8_t * ql     = block + offsetof(block_q6_K, ql);
        const uint8_t * qh     = block + offsetof(block_q6_K, qh);
        const int8_t *  scales = reinterpret_cast<const int8_t *>(block + offsetof(block_q6_K, scales));
        const float     d      = fp16_to_fp32(load_u16(block + offsetof(block_q6_K, d)));
        for (uint32_t j = 0; j < KQUANT_TILES; ++j) {
            uint8_t *      tile  = tiles + j * kTile;
            const uint32_t half  = j >> 2;  // flat elements [128*half, 128*half + 128)
            const uint32_t group = j & 3;   // 32-element group inside that half
            // Low nibbles: column k at nibble 4*(group/2) of ql[64*half + 32*(group%2) + k]; tile
            // vector k/8 holds columns 8v + i (low nibble) and 8v + 4 + i (high) in byte 4r + i.
            const uint8_t * low   = ql + 64 * half + 32 * (group & 1);
            const int       shift = 4 * int(group >> 1);
            for (int vec = 0; vec < 4; ++vec) {
                const uint32_t first  = (load_u32(low + 8 * vec) >> shift) & 0x0F0F0F0Fu;
                const uint32_t second = (load_u32(low + 8 * vec + 4) >> shift) & 0x0F0F0F0Fu;
                store_u32(tile + 128 * vec + 4 * r, first | second << 4);
            }
            put_plane2(qh + 32 * half, int(group), r, tile + proto::TILE_Q6_K_HIGH);
            for (uint32_t s = 0; s < 2; ++s) {
                const float scale = d * float(scales[2 * j + s]);
                if (!store_scale_product(tile + proto::q6_K_d_offset(r, s), scale)) {
                    return overflow("d*scale", scale);
                }
            }
        }
        return std::nullopt;
    });
}

} // namespace hexnpu::hexagon::detail
