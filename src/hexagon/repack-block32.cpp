// Repack of the block-32 types (Q4_0, IQ4_NL, MXFP4, Q4_1, Q8_0): tile row r of tile (ct, kt) is
// flat block kt of row 32*ct + r, so the repack only transposes quants and copies scales
// (formats.md §3.1).
#include "repack-internal.h"

#include "core/quant-blocks.h"

#include <cstring>

namespace hexnpu::hexagon::detail {
namespace {

// Tiles of one row group, one flat block per tile row. Walking a tile at a time keeps the
// transposed writes inside one L1-resident tile.
template <typename PutRow>
void for_each_tile_row(const row_group & src, size_t block_bytes, uint32_t tile_bytes, uint8_t * dst, PutRow put_row) {
    for (int64_t kt = 0; kt < src.n_k_tiles; ++kt) {
        uint8_t *       tile  = dst + kt * tile_bytes;
        const uint8_t * block = src.first_row + kt * block_bytes;
        for (int r = 0; r < src.n_rows; ++r, block += src.row_bytes) {
            put_row(block, r, tile);
        }
    }
}

// Flat qs[i] holds element i (low nibble) and element i + 16 (high nibble); the tile wants
// elements 2cp and 2cp + 1 in byte 32*cp + r.
void put_colpair_nibbles(const uint8_t * qs, int r, uint8_t * tile) {
    for (int cp = 0; cp < 8; ++cp) {
        const uint8_t lo = qs[2 * cp];
        const uint8_t hi = qs[2 * cp + 1];
        tile[32 * cp + r]       = uint8_t((lo & 0x0F) | (hi << 4));
        tile[32 * (cp + 8) + r] = uint8_t((lo >> 4) | (hi & 0xF0));
    }
}

} // namespace

// Q4_0 and IQ4_NL share the byte layout: only the meaning of the 4-bit codes differs.
std::optional<scale_overflow> write_group_q4_0(const row_group & src, uint8_t * dst) {
    for_each_tile_row(src, sizeof(block_q4_0), proto::TILE_SIZE_Q4_0, dst, [](const uint8_t * block, int r, uint8_t * tile) {
        put_colpair_nibbles(block + offsetof(block_q4_0, qs), r, tile);
        std::memcpy(tile + proto::row_d_offset(r), block + offsetof(block_q4_0, d), 2);
    });
    return std::nullopt;
}

std::optional<scale_overflow> write_group_mxfp4(const row_group & src, uint8_t * dst) {
    for_each_tile_row(src, sizeof(block_mxfp4), proto::TILE_SIZE_MXFP4, dst, [](const uint8_t * block, int r, uint8_t * tile) {
        put_colpair_nibbles(block + offsetof(block_mxfp4, qs), r, tile);
        tile[proto::mxfp4_e_offset(r)] = block[offsetof(block_mxfp4, e)];
    });
    return std::nullopt;
}

std::optional<scale_overflow> write_group_q4_1(const row_group & src, uint8_t * dst) {
    static_assert(offsetof(block_q4_1, m) == offsetof(block_q4_1, d) + 2, "d and m copy as one pair");
    for_each_tile_row(src, sizeof(block_q4_1), proto::TILE_SIZE_Q4_1, dst, [](const uint8_t * block, int r, uint8_t * tile) {
        put_colpair_nibbles(block + offsetof(block_q4_1, qs), r, tile);
        std::memcpy(tile + proto::pair_d_offset(r), block + offsetof(block_q4_1, d), 4);
    });
    return std::nullopt;
}

std::optional<scale_overflow> write_group_q8_0(const row_group & src, uint8_t * dst) {
    for_each_tile_row(src, sizeof(block_q8_0), proto::TILE_SIZE_Q8_0, dst, [](const uint8_t * block, int r, uint8_t * tile) {
        const uint8_t * qs = block + offsetof(block_q8_0, qs);
        for (int cp = 0; cp < 16; ++cp) {
            std::memcpy(tile + proto::q8_0_byte(r, 2 * cp), qs + 2 * cp, 2);
        }
        std::memcpy(tile + proto::q8_0_d_offset(r), block + offsetof(block_q8_0, d), 2);
    });
    return std::nullopt;
}

} // namespace hexnpu::hexagon::detail
