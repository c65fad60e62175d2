// unpack_tensor: tiled -> flat for the lossless types. Deliberately written element by element from
// the position formulas in proto/tile-formats.h rather than as the inverse of the repack loops, so a
// round trip checks one against the other.
#include "repack.h"
#include "repack-internal.h"

#include "core/quant-blocks.h"

#include <cstring>

namespace hexnpu::hexagon {
namespace {

using proto::tile_field;

int read_field(const uint8_t * tile, tile_field f, int width) { return (tile[f.byte] >> f.shift) & ((1 << width) - 1); }

// qs[i] = element i (low nibble) | element i + 16 (high nibble), as in Q4_0.
void unpack_colpair_nibbles(const uint8_t * tile, int r, uint8_t * qs) {
    for (uint32_t i = 0; i < 16; ++i) {
        qs[i] = uint8_t(read_field(tile, proto::colpair_nibble(r, i), 4) | read_field(tile, proto::colpair_nibble(r, i + 16), 4) << 4);
    }
}

// Rebuilds flat block kt of tile row r; `tile` is tile (ct, kt).
void unpack_block(proto::tiled_type type, const uint8_t * tile, uint32_t r, uint8_t * block) {
    switch (type) {
        case proto::tiled_type::q4_0:
        case proto::tiled_type::iq4_nl:
            std::memcpy(block + offsetof(block_q4_0, d), tile + proto::row_d_offset(r), 2);
            unpack_colpair_nibbles(tile, r, block + offsetof(block_q4_0, qs));
            return;
        case proto::tiled_type::mxfp4:
            block[offsetof(block_mxfp4, e)] = tile[proto::mxfp4_e_offset(r)];
            unpack_colpair_nibbles(tile, r, block + offsetof(block_mxfp4, qs));
            return;
        case proto::tiled_type::q4_1:
            std::memcpy(block + offsetof(block_q4_1, d), tile + proto::pair_d_offset(r), 2);
            std::memcpy(block + offsetof(block_q4_1, m), tile + proto::pair_m_offset(r), 2);
            unpack_colpair_nibbles(tile, r, block + offsetof(block_q4_1, qs));
            return;
        case proto::tiled_type::q8_0:
            std::memcpy(block + offsetof(block_q8_0, d), tile + proto::q8_0_d_offset(r), 2);
            for (uint32_t k = 0; k < QK8_0; ++k) {
                block[offsetof(block_q8_0, qs) + k] = tile[proto::q8_0_byte(r, k)];
            }
            return;
        case proto::tiled_type::q1_0: {
            std::memcpy(block + offsetof(block_q1_0, d), tile + proto::row_d_offset(r), 2);
            uint8_t * qs = block + offsetof(block_q1_0, qs);
            std::memset(qs, 0, QK1_0 / 8);
            for (uint32_t k = 0; k < QK1_0; ++k) {
                qs[k / 8] |= uint8_t(read_field(tile, proto::q1_0_bit(r, k), 1) << (k % 8));
            }
            return;
        }
        case proto::tiled_type::q2_0: {
            std::memcpy(block + offsetof(block_q2_0, d), tile + proto::row_d_offset(r), 2);
            uint8_t * qs = block + offsetof(block_q2_0, qs);
            std::memset(qs, 0, QK2_0 / 4);
            for (uint32_t k = 0; k < QK2_0; ++k) {
                qs[k / 4] |= uint8_t(read_field(tile, proto::plane2(r, k), 2) << (2 * (k % 4)));
            }
            return;
        }
        default:
            return;  // K-quants go through unpack_q2_K_super_block; lossy ones are rejected earlier
    }
}

// Rebuilds flat super-block sb of tile row r; `tiles` are its 8 tiles.
void unpack_q2_K_super_block(const uint8_t * tiles, uint32_t r, uint8_t * block) {
    constexpr uint32_t kTile  = proto::TILE_SIZE_Q2_K;
    uint8_t *          qs     = block + offsetof(block_q2_K, qs);
    uint8_t *          scales = block + offsetof(block_q2_K, scales);
    std::memset(qs, 0, QK_K / 4);
    for (uint32_t j = 0; j < proto::KQUANT_TILES; ++j) {
        const uint8_t * tile = tiles + j * kTile;
        for (uint32_t k = 0; k < 32; ++k) {
            // Flat element 32j + k: byte 32*(j/4) + k, field j % 4.
            qs[32 * (j >> 2) + k] |= uint8_t(read_field(tile, proto::plane2(r, k), 2) << (2 * (j & 3)));
        }
        scales[2 * j]     = tile[proto::q2_K_scale_offset(r, 0)];
        scales[2 * j + 1] = tile[proto::q2_K_scale_offset(r, 1)];
    }
    const uint16_t d        = detail::load_u16(tiles + proto::q2_K_d_tile(r) * kTile + proto::q2_K_d_offset(r));
    const uint16_t neg_dmin = detail::load_u16(tiles + proto::q2_K_neg_dmin_tile(r) * kTile + proto::q2_K_d_offset(r));
    detail::store_u16(block + offsetof(block_q2_K, d), d);
    detail::store_u16(block + offsetof(block_q2_K, dmin), uint16_t(neg_dmin ^ 0x8000));
}

} // namespace

repack_result unpack_tensor(ggml_type type, const int64_t ne[4], const void * tiled, void * flat) {
    if (!is_tileable_type(type)) {
        return {std::string("type ") + ggml_type_name(type) + " has no tiled format"};
    }
    if (!is_lossless_tiling(type)) {
        return {std::string(ggml_type_name(type)) + " tiles hold rounded scale products: there is no exact inverse"};
    }
    const size_t    tiled_bytes = tiled_nbytes(type, ne);  // validates the shape
    const auto      tt          = proto::tiled_type(type);
    const int64_t   n_k_tiles   = proto::n_k_tiles(tt, ne[0]);
    const uint32_t  tile_bytes  = proto::tile_size(tt);
    const size_t    block_bytes = ggml_type_size(type);
    const size_t    row_bytes   = ggml_row_size(type, ne[0]);
    const int64_t   n_rows      = ne[1] * ne[2] * ne[3];
    const uint8_t * src         = static_cast<const uint8_t *>(tiled);
    uint8_t *       dst         = static_cast<uint8_t *>(flat);
    if (tiled_bytes == 0) {
        return {};
    }
    for (int64_t row = 0; row < n_rows; ++row) {
        const int64_t   i1    = row % ne[1];
        const uint8_t * group = src + size_t(row / ne[1]) * proto::tiled_slice_bytes(tt, ne[0], ne[1]) +
                                size_t(i1 / proto::TILE_N_ROWS) * n_k_tiles * tile_bytes;
        const uint32_t  r     = uint32_t(i1 % proto::TILE_N_ROWS);
        uint8_t *       out   = dst + size_t(row) * row_bytes;
        if (tt == proto::tiled_type::q2_K) {
            for (int64_t sb = 0; sb < n_k_tiles / proto::KQUANT_TILES; ++sb) {
                unpack_q2_K_super_block(group + sb * proto::KQUANT_TILES * tile_bytes, r, out + sb * block_bytes);
            }
        } else {
            for (int64_t kt = 0; kt < n_k_tiles; ++kt) {
                unpack_block(tt, group + kt * tile_bytes, r, out + kt * block_bytes);
            }
        }
    }
    return {};
}

} // namespace hexnpu::hexagon
