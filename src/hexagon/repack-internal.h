// Internals shared by the repack-*.cpp files: the per-type writers that fill all tiles of one 32-row
// group, and little-endian load/store helpers.
#pragma once

#include "proto/tile-formats.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

namespace hexnpu::hexagon::detail {

// The flat rows of one 32-row group of a 2-D slice. The writer fills the group's n_k_tiles tiles
// (consecutive in dst) for rows 0..n_rows-1 and never touches the padding rows' bytes, which the
// caller zeroes.
struct row_group {
    const uint8_t * first_row;
    size_t          row_bytes;
    int             n_rows;  // 1..32
    int64_t         n_k_tiles;
};

// A Q3_K..Q6_K scale product whose fp16 rounding is inf or NaN.
struct scale_overflow {
    int          row;  // inside the group
    int64_t      super_block;
    const char * product_name;
    float        product;
};

using group_writer = std::optional<scale_overflow> (*)(const row_group & src, uint8_t * dst);

// nullptr for types without a tiled layout.
group_writer group_writer_for(proto::tiled_type type);

std::optional<scale_overflow> write_group_q4_0(const row_group & src, uint8_t * dst);
std::optional<scale_overflow> write_group_mxfp4(const row_group & src, uint8_t * dst);
std::optional<scale_overflow> write_group_q4_1(const row_group & src, uint8_t * dst);
std::optional<scale_overflow> write_group_q8_0(const row_group & src, uint8_t * dst);
std::optional<scale_overflow> write_group_q1_0(const row_group & src, uint8_t * dst);
std::optional<scale_overflow> write_group_q2_0(const row_group & src, uint8_t * dst);
std::optional<scale_overflow> write_group_q2_K(const row_group & src, uint8_t * dst);
std::optional<scale_overflow> write_group_q3_K(const row_group & src, uint8_t * dst);
std::optional<scale_overflow> write_group_q4_K(const row_group & src, uint8_t * dst);
std::optional<scale_overflow> write_group_q5_K(const row_group & src, uint8_t * dst);
std::optional<scale_overflow> write_group_q6_K(const row_group & src, uint8_t * dst);

inline uint16_t load_u16(const uint8_t * p) {
    uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

inline uint32_t load_u32(const uint8_t * p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

inline void store_u16(uint8_t * p, uint16_t v) { std::memcpy(p, &v, sizeof v); }
inline void store_u32(uint8_t * p, uint32_t v) { std::memcpy(p, &v, sizeof v); }

} // namespace hexnpu::hexagon::detail
