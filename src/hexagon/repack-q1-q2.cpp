// Repack of Q1_0 (K_cols 128) and Q2_0 (K_cols 64): tile row r of tile (ct, kt) is flat block kt of
// row 32*ct + r, rearranged into vrmpy byte order (formats.md §3.2).
#include "repack-internal.h"

#include "core/quant-blocks.h"

#include <cstring>

namespace hexnpu::hexagon::detail {
namespace {

// Bits 0, 4, 8, ..., 28 of w packed into bits 0..7.
uint32_t gather_every_fourth_bit(uint32_t w) {
    uint32_t x = w & 0x11111111u;
    x          = (x | (x >> 3)) & 0x03030303u;
    x          = (x | (x >> 6)) & 0x000F000Fu;
    return (x | (x >> 12)) & 0xFFu;
}

// Swaps bit groups `mask` with the groups `shift` bits above them.
uint32_t delta_swap(uint32_t x, uint32_t mask, int shift) {
    const uint32_t t = ((x >> shift) ^ x) & mask;
    return x ^ t ^ (t << shift);
}

// Transposes a 4x4 matrix of 2-bit fields: field i of byte b <-> field b of byte i.
uint32_t transpose_2bit_4x4(uint32_t x) {
    x = delta_swap(x, 0x0000F0F0u, 12);  // swap the off-diagonal 2x2 blocks
    return delta_swap(x, 0x00CC00CCu, 6);  // transpose inside each 2x2 block
}

template <typename PutRow>
void for_each_tile_row(const row_group & src, uint8_t * dst, PutRow put_row) {
    for (int64_t kt = 0; kt < src.n_k_tiles; ++kt) {
        uint8_t *       tile  = dst + kt * proto::TILE_SIZE_Q1_0;
        const uint8_t * block = src.first_row + kt * sizeof(block_q1_0);
        for (int r = 0; r < src.n_rows; ++r, block += src.row_bytes) {
            put_row(block, r, tile);
        }
    }
}

static_assert(proto::TILE_SIZE_Q1_0 == proto::TILE_SIZE_Q2_0 && sizeof(block_q1_0) == sizeof(block_q2_0));

} // namespace

// Flat bit k is bit k % 8 of qs[k / 8]. Per 32-column quarter, the 4 tile bytes of row r take
// bits i, i + 4, ..., i + 28 of the quarter's 32-bit word (byte i, bit g = column 4g + i).
std::optional<scale_overflow> write_group_q1_0(const row_group & src, uint8_t * dst) {
    for_each_tile_row(src, dst, [](const uint8_t * block, int r, uint8_t * tile) {
        const uint8_t * qs = block + offsetof(block_q1_0, qs);
        for (int quarter = 0; quarter < 4; ++quarter) {
            const uint32_t w   = load_u32(qs + 4 * quarter);
            const uint32_t out = gather_every_fourth_bit(w) | gather_every_fourth_bit(w >> 1) << 8 |
                                 gather_every_fourth_bit(w >> 2) << 16 | gather_every_fourth_bit(w >> 3) << 24;
            store_u32(tile + 128 * quarter + 4 * r, out);
        }
        std::memcpy(tile + proto::row_d_offset(r), block + offsetof(block_q1_0, d), 2);
    });
    return std::nullopt;
}

// Flat code k is field k % 4 of qs[k / 4]. Per 16 columns (one vector), the 4 flat bytes hold group
// b in byte b, column i in field i; the tile wants column i in byte i, group b in field b.
std::optional<scale_overflow> write_group_q2_0(const row_group & src, uint8_t * dst) {
    for_each_tile_row(src, dst, [](const uint8_t * block, int r, uint8_t * tile) {
        const uint8_t * qs = block + offsetof(block_q2_0, qs);
        for (int vec = 0; vec < 4; ++vec) {
            store_u32(tile + 128 * vec + 4 * r, transpose_2bit_4x4(load_u32(qs + 4 * vec)));
        }
        std::memcpy(tile + proto::row_d_offset(r), block + offsetof(block_q2_0, d), 2);
    });
    return std::nullopt;
}

} // namespace hexnpu::hexagon::detail
