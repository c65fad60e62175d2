// dequantize_tiled_rows: the scalar reference that reads every value straight from the tile bytes
// (tests, and CPU fallbacks such as GET_ROWS on a tiled embedding table). Each expression mirrors
// ggml's flat dequantization, so the lossless types match it bit for bit.
#include "repack.h"
#include "repack-internal.h"

#include "core/fp16.h"
#include "core/quant-blocks.h"

#include <cinttypes>
#include <cmath>
#include <stdexcept>
#include <string>

namespace hexnpu::hexagon {
namespace {

using proto::tile_field;
using detail::load_u16;

int read_field(const uint8_t * tile, tile_field f, int width) { return (tile[f.byte] >> f.shift) & ((1 << width) - 1); }

float read_fp16(const uint8_t * at) { return fp16_to_fp32(load_u16(at)); }

// One 32-column (or K_cols) tile row of a block-style tile; out gets tile_k_cols values.
void dequantize_block_row(proto::tiled_type type, const uint8_t * tile, uint32_t r, float * out) {
    switch (type) {
        case proto::tiled_type::q4_0: {
            const float d = read_fp16(tile + proto::row_d_offset(r));
            for (uint32_t k = 0; k < 32; ++k) {
                out[k] = float(read_field(tile, proto::colpair_nibble(r, k), 4) - 8) * d;
            }
            return;
        }
        case proto::tiled_type::iq4_nl: {
            const float d = read_fp16(tile + proto::row_d_offset(r));
            for (uint32_t k = 0; k < 32; ++k) {
                out[k] = d * float(kvalues_iq4nl[read_field(tile, proto::colpair_nibble(r, k), 4)]);
            }
            return;
        }
        case proto::tiled_type::mxfp4: {
            // Exact 2^(e-128) (the table values are doubled E2M1), not the kernel's clamped fp16 scale.
            const float d = std::ldexp(1.0f, int(tile[proto::mxfp4_e_offset(r)]) - 128);
            for (uint32_t k = 0; k < 32; ++k) {
                out[k] = float(kvalues_mxfp4[read_field(tile, proto::colpair_nibble(r, k), 4)]) * d;
            }
            return;
        }
        case proto::tiled_type::q4_1: {
            const float d = read_fp16(tile + proto::pair_d_offset(r));
            const float m = read_fp16(tile + proto::pair_m_offset(r));
            for (uint32_t k = 0; k < 32; ++k) {
                out[k] = float(read_field(tile, proto::colpair_nibble(r, k), 4)) * d + m;
            }
            return;
        }
        case proto::tiled_type::q8_0: {
            const float d = read_fp16(tile + proto::q8_0_d_offset(r));
            for (uint32_t k = 0; k < 32; ++k) {
                out[k] = float(int8_t(tile[proto::q8_0_byte(r, k)])) * d;
            }
            return;
        }
        case proto::tiled_type::q1_0: {
            const float d = read_fp16(tile + proto::row_d_offset(r));
            for (uint32_t k = 0; k < QK1_0; ++k) {
                out[k] = read_field(tile, proto::q1_0_bit(r, k), 1) ? d : -d;
            }
            return;
        }
        case proto::tiled_type::q2_0: {
            const float d = read_fp16(tile + proto::row_d_offset(r));
            for (uint32_t k = 0; k < QK2_0; ++k) {
                out[k] = float(read_field(tile, proto::plane2(r, k), 2) - 1) * d;
            }
            return;
        }
        default:
            return;  // K-quants: dequantize_super_block_row
    }
}

// One 256-column super-block of tile row r; `tiles` are its 8 tiles.
void dequantize_super_block_row(proto::tiled_type type, const uint8_t * tiles, uint32_t r, float * out) {
    const uint32_t tile_bytes = proto::tile_size(type);
    for (uint32_t j = 0; j < proto::KQUANT_TILES; ++j) {
        const uint8_t * tile = tiles + j * tile_bytes;
        float *         y    = out + 32 * j;
        switch (type) {
            case proto::tiled_type::q2_K: {
                const float d        = read_fp16(tiles + proto::q2_K_d_tile(r) * tile_bytes + proto::q2_K_d_offset(r));
                const float neg_dmin = read_fp16(tiles + proto::q2_K_neg_dmin_tile(r) * tile_bytes + proto::q2_K_d_offset(r));
                for (uint32_t k = 0; k < 32; ++k) {
                    const int scale_byte = tile[proto::q2_K_scale_offset(r, k >> 4)];
                    y[k] = d * float(scale_byte & 15) * float(read_field(tile, proto::plane2(r, k), 2)) +
                           neg_dmin * float(scale_byte >> 4);
                }
                break;
            }
            case proto::tiled_type::q3_K:
                for (uint32_t k = 0; k < 32; ++k) {
                    const int q = read_field(tile, proto::plane2(r, k), 2) - 4 * read_field(tile, proto::q3_K_neg_bit(r, k), 1);
                    y[k]        = read_fp16(tile + proto::q3_K_d_offset(r, k >> 4)) * float(q);
                }
                break;
            case proto::tiled_type::q4_K:
            case proto::tiled_type::q5_K: {
                const float scale = read_fp16(tile + proto::pair_d_offset(r));
                const float min   = read_fp16(tile + proto::pair_m_offset(r));
                for (uint32_t k = 0; k < 32; ++k) {
                    int q = read_field(tile, proto::colpair_nibble(r, k), 4);
                    if (type == proto::tiled_type::q5_K) {
                        q |= read_field(tile, proto::q5_K_high_bit(r, k), 1) << 4;
                    }
                    y[k] = scale * float(q) + min;
                }
                break;
            }
            case proto::tiled_type::q6_K:
                for (uint32_t k = 0; k < 32; ++k) {
                    const tile_field high = proto::plane2(r, k);
                    const int q = read_field(tile, proto::q6_K_low_nibble(r, k), 4) |
                                  read_field(tile + proto::TILE_Q6_K_HIGH, high, 2) << 4;
                    y[k] = read_fp16(tile + proto::q6_K_d_offset(r, k >> 4)) * float(q - 32);
                }
                break;
            default:
                return;
        }
    }
}

} // namespace

void dequantize_tiled_rows(ggml_type type, const int64_t ne[4], const void * tiled, int64_t row_begin, int64_t row_end,
                           float * out) {
    tiled_nbytes(type, ne);  // throws on a type or shape without a tiled layout
    const int64_t n_rows = ne[1] * ne[2] * ne[3];
    if (row_begin < 0 || row_begin > row_end || row_end > n_rows) {
        throw std::invalid_argument("dequantize_tiled_rows: rows [" + std::to_string(row_begin) + ", " +
                                    std::to_string(row_end) + ") outside the tensor's " + std::to_string(n_rows) + " rows");
    }
    const auto      tt          = proto::tiled_type(type);
    const int64_t   n_k_tiles   = proto::n_k_tiles(tt, ne[0]);
    const uint32_t  tile_bytes  = proto::tile_size(tt);
    const uint64_t  slice_bytes = proto::tiled_slice_bytes(tt, ne[0], ne[1]);
    const uint8_t * base        = static_cast<const uint8_t *>(tiled);
    for (int64_t row = row_begin; row < row_end; ++row) {
        const int64_t   i1    = row % ne[1];
        const uint8_t * group = base + size_t(row / ne[1]) * slice_bytes + size_t(i1 / proto::TILE_N_ROWS) * n_k_tiles * tile_bytes;
        const uint32_t  r     = uint32_t(i1 % proto::TILE_N_ROWS);
        float *         y     = out + (row - row_begin) * ne[0];
        if (proto::is_kquant(tt)) {
            for (int64_t sb = 0; sb < n_k_tiles / proto::KQUANT_TILES; ++sb) {
                dequantize_super_block_row(tt, group + sb * proto::KQUANT_TILES * tile_bytes, r, y + sb * QK_K);
            }
        } else {
            for (int64_t kt = 0; kt < n_k_tiles; ++kt) {
                dequantize_block_row(tt, group + kt * tile_bytes, r, y + kt * proto::tile_k_cols(tt));
            }
        }
    }
}

} // namespace hexnpu::hexagon
