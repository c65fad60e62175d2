// Host-side conversion between flat GGML weights and the NPU's tiled formats (spec "Tiled Weight
// Formats", shared/design/formats.md §3): repack flat -> tiled, unpack tiled -> flat for the lossless
// types, and a scalar reference that dequantizes straight from tiles.
//
// A tensor [ne0, ne1, ne2, ne3] is tiled per 2-D slice: slice i2 + ne2*i3 sits at
// (i3*ne2 + i2) * slice_bytes and holds ceil(ne1/32) * (ne0/K_cols) tiles; rows ne1..ceil32(ne1)-1
// are padding (all-zero bytes). Layouts and sizes: src/proto/tile-formats.h.
#pragma once

#include "hexnpu/ggml-types.h"
#include "proto/tile-formats.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace hexnpu::hexagon {

bool is_tileable_type(ggml_type type);
// Unpack restores the flat bytes exactly: block-32 types, Q1_0, Q2_0, Q2_K.
bool is_lossless_tiling(ggml_type type);

// Bytes of the tiled form: ne2*ne3 slices (not ggml_nbytes: padding rows and K-quant scale planes add
// bytes). type must be tileable and ne0 a multiple of its block size.
size_t tiled_nbytes(ggml_type type, const int64_t ne[4]);

struct repack_result {
    std::string error;  // empty on success; otherwise why the tensor must stay flat

    bool ok() const { return error.empty(); }
};

// Fills tiled_nbytes(type, ne) bytes at `tiled` from the flat rows at `flat`. Fails, leaving `tiled`
// unspecified, when the type has no tiled layout, ne0 is not a whole number of blocks, or (Q3_K..Q6_K)
// a scale product rounds to inf/NaN in fp16; the error names the row and block. The output does
// not depend on n_threads.
repack_result repack_tensor(ggml_type type, const int64_t ne[4], const void * flat, void * tiled, int n_threads = 1);

// Inverse of repack_tensor for the lossless types: writes ggml_nbytes of flat rows. Fails for the
// lossy K-quants, whose original d and 6-bit scales are not stored.
repack_result unpack_tensor(ggml_type type, const int64_t ne[4], const void * tiled, void * flat);

// Dequantizes rows [row_begin, row_end) of a tiled tensor into out (ne0 floats per row), reading every
// value straight from the tile bytes. Row i is (i1, i2, i3) = (i % ne1, i / ne1 % ne2, i / (ne1*ne2)), as
// for flat rows. Values equal ggml's flat dequantization bit for bit for the lossless types (MXFP4
// with the exact 2^(e-128) * kvalues_mxfp4 scale) and up to the fp16 rounding of the stored scale
// products for Q3_K..Q6_K (formats.md §3.4). Throws std::invalid_argument on a bad type or range.
void dequantize_tiled_rows(ggml_type type, const int64_t ne[4], const void * tiled, int64_t row_begin,
                           int64_t row_end, float * out);

} // namespace hexnpu::hexagon
