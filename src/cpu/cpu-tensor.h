// Reading and writing tensor rows as f32 whatever the type and strides, so kernels compute in f32
// and touch the memory layout in one place.
#pragma once

#include "hexnpu/tensor.h"

#include <cstdint>
#include <cstring>
#include <initializer_list>

namespace hexnpu::cpu {

struct row_index {
    int64_t i1, i2, i3;
};

// Row r of t in GGML's flat order (i1 fastest).
inline row_index unravel_row(const ggml_tensor * t, int64_t r) {
    const int64_t i1 = r % t->ne[1];
    r /= t->ne[1];
    return {i1, r % t->ne[2], r / t->ne[2]};
}

inline uint8_t * row_ptr(const ggml_tensor * t, int64_t i1, int64_t i2, int64_t i3) {
    return static_cast<uint8_t *>(t->data) + i1 * int64_t(t->nb[1]) + i2 * int64_t(t->nb[2]) + i3 * int64_t(t->nb[3]);
}
inline uint8_t * row_ptr(const ggml_tensor * t, row_index r) { return row_ptr(t, r.i1, r.i2, r.i3); }

// Element (i0, i1, i2) of an I32 or I64 index tensor, honouring its strides.
int64_t load_index(const ggml_tensor * ids, int64_t i0, int64_t i1, int64_t i2);

// Copies n elements of `size` bytes between strided runs (one memcpy when both are dense).
inline void copy_elements(uint8_t * dst, int64_t dst_stride, const uint8_t * src, int64_t src_stride, int64_t n,
                          size_t size) {
    if (dst_stride == int64_t(size) && src_stride == int64_t(size)) {
        std::memcpy(dst, src, size_t(n) * size);
        return;
    }
    for (int64_t i = 0; i < n; ++i) {
        std::memcpy(dst + i * dst_stride, src + i * src_stride, size);
    }
}

// F32, F16, BF16: element-addressable types the kernels read and write with any strides.
bool is_float_type(ggml_type type);

float load_float(ggml_type type, const uint8_t * p);        // a float type's element
void  store_float(ggml_type type, uint8_t * p, float value);  // rounds as the type's from_float does

// Rows load_row/store_row can convert: float types with any strides; other types need a
// to_float (from_float) path and rows whose blocks are adjacent.
bool can_load_rows(const ggml_tensor * t);
bool can_store_rows(const ggml_tensor * t);

// True when row data is already f32 with adjacent elements, so kernels use it in place.
inline bool has_dense_f32_rows(const ggml_tensor * t) {
    return t->type == GGML_TYPE_F32 && (t->nb[0] == sizeof(float) || t->ne[0] == 1);
}
// has_dense_f32_rows for each of ts, none of them null.
inline bool all_dense_f32_rows(std::initializer_list<const ggml_tensor *> ts) {
    for (const ggml_tensor * t : ts) {
        if (!t || !has_dense_f32_rows(t)) {
            return false;
        }
    }
    return true;
}

void load_row(const ggml_tensor * t, row_index r, float * out);    // ne[0] values
void store_row(ggml_tensor * t, row_index r, const float * row);   // ne[0] values

// The row as f32: t's own memory when dense f32, else `scratch` (ne[0] floats) after load_row.
const float * row_f32(const ggml_tensor * t, row_index r, float * scratch);
// Where a kernel writes an output row: t's own memory when dense f32, else `scratch`; then
// commit_row stores it (nothing to do when it already is t's memory).
float * out_row_f32(ggml_tensor * t, row_index r, float * scratch);
void    commit_row(ggml_tensor * t, row_index r, const float * row);

} // namespace hexnpu::cpu
