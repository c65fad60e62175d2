// Repack of the block-32 types (Q4_0, IQ4_NL, MXFP4, Q4_1, Q8_0): tile row r of tile (ct, kt) is
// flat block kt of row 32*ct + r, so the repack only transposes quants and copies scales
// (formats.md §3.1).
#include "repack-colpair.h"
#include "repack-internal.h"

#include "core/quant-blocks.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace hexnpu::hexagon::detail {
namespace {

// The 4-bit types: per tile, gather every row's column pairs, transpose them into the tile, and
// let put_scales(block, r, tile) store row r's scale fields.
template <typename Block, typename PutScales>
void write_nibble_tiles(const row_group & src, uint32_t tile_bytes, uint8_t * dst, PutScales put_scales) {
    alignas(32) colpair_rows pairs = {};  // padding rows stay zero
    for (int64_t kt = 0; kt < src.n_k_tiles; ++kt) {
        uint8_t *       tile  = dst + kt * tile_bytes;
        const uint8_t * block = src.first_row + kt * sizeof(Block);
        for (int r = 0; r < src.n_rows; ++r, block += src.row_bytes) {
            __builtin_prefetch(block + 4 * sizeof(Block));  // this row's tiles ahead; never faults
            colpairs_from_block32(block + offsetof(Block, qs), pairs[r]);
            put_scales(block, r, tile);
        }
        store_colpair_tile(pairs, tile);
    }
}

} // namespace

// Q4_0 and IQ4_NL share the byte layout: only the meaning of the 4-bit codes differs.
std::optional<scale_overflow> write_group_q4_0(const row_group & src, uint8_t * dst) {
    write_nibble_tiles<block_q4_0>(src, proto::TILE_SIZE_Q4_0, dst, [](const uint8_t * block, int r, uint8_t * tile) {
        std::memcpy(tile + proto::row_d_offset(r), block + offsetof(block_q4_0, d), 2);
    });
    return std::nullopt;
}

std::optional<scale_overflow> write_group_mxfp4(const row_group & src, uint8_t * dst) {
    write_nibble_tiles<block_mxfp4>(src, proto::TILE_SIZE_MXFP4, dst, [](const uint8_t * block, int r, uint8_t * tile) {
        tile[proto::mxfp4_e_offset(r)] = block[offsetof(block_mxfp4, e)];
    });
    return std::nullopt;
}

std::optional<scale_overflow> write_group_q4_1(const row_group & src, uint8_t * dst) {
    static_assert(offsetof(block_q4_1, m) == offsetof(block_q4_1, d) + 2, "d and m copy as one pair");
    write_nibble_tiles<block_q4_1>(src, proto::TILE_SIZE_Q4_1, dst, [](const uint8_t * block, int r, uint8_t * tile) {
        std::memcpy(tile + proto::pair_d_offset(r), block + offsetof(block_q4_1, d), 4);
    });
    return std::nullopt;
}

std::optional<scale_overflow> write_group_q8_0(const row_group & src, uint8_t * dst) {
    static constexpr uint8_t kZeroRow[QK8_0] = {};
    const uint8_t *          rows[32];
    std::fill(std::begin(rows), std::end(rows), kZeroRow);  // padding rows
    for (int64_t kt = 0; kt < src.n_k_tiles; ++kt) {
        uint8_t *       tile  = dst + kt * proto::TILE_SIZE_Q8_0;
        const uint8_t * block = src.first_row + kt * sizeof(block_q8_0);
        for (int r = 0; r < src.n_rows; ++r, block += src.row_bytes) {
            __builtin_prefetch(block + 4 * sizeof(block_q8_0));
            rows[r] = block + offsetof(block_q8_0, qs);
            std::memcpy(tile + proto::q8_0_d_offset(r), block + offsetof(block_q8_0, d), 2);
        }
        store_q8_0_tile(rows, tile);
    }
    return std::nullopt;
}

} // namespace hexnpu::hexagon::detail
