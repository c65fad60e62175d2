#include "cpu-tensor.h"

#include "core/fp16.h"

#include <cstring>

namespace hexnpu::cpu {

int64_t load_index(const ggml_tensor * ids, int64_t i0, int64_t i1, int64_t i2) {
    const uint8_t * p = static_cast<const uint8_t *>(ids->data) + i0 * int64_t(ids->nb[0]) + i1 * int64_t(ids->nb[1]) +
                        i2 * int64_t(ids->nb[2]);
    if (ids->type == GGML_TYPE_I64) {
        int64_t v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

bool is_float_type(ggml_type type) {
    return type == GGML_TYPE_F32 || type == GGML_TYPE_F16 || type == GGML_TYPE_BF16;
}

float load_float(ggml_type type, const uint8_t * p) {
    uint16_t h;
    switch (type) {
        case GGML_TYPE_F32: {
            float f;
            std::memcpy(&f, p, sizeof f);
            return f;
        }
        case GGML_TYPE_F16:
            std::memcpy(&h, p, sizeof h);
            return fp16_to_fp32(h);
        default:
            std::memcpy(&h, p, sizeof h);
            return bf16_to_fp32(h);
    }
}

void store_float(ggml_type type, uint8_t * p, float value) {
    uint16_t h;
    switch (type) {
        case GGML_TYPE_F32:
            std::memcpy(p, &value, sizeof value);
            return;
        case GGML_TYPE_F16:
            h = fp32_to_fp16(value);
            break;
        default:
            h = fp32_to_bf16(value);
            break;
    }
    std::memcpy(p, &h, sizeof h);
}

bool can_load_rows(const ggml_tensor * t) {
    if (is_float_type(t->type)) {
        return true;
    }
    const ggml_type_traits * traits = ggml_get_type_traits(t->type);
    return traits && traits->to_float && ggml_is_contiguous_rows(t);
}

bool can_store_rows(const ggml_tensor * t) {
    if (is_float_type(t->type)) {
        return true;
    }
    const ggml_type_traits * traits = ggml_get_type_traits(t->type);
    return traits && traits->from_float && ggml_is_contiguous_rows(t);
}

void load_row(const ggml_tensor * t, row_index r, float * out) {
    const uint8_t * src = row_ptr(t, r);
    const int64_t   n   = t->ne[0];
    if (!is_float_type(t->type) || t->nb[0] == ggml_type_size(t->type) || n == 1) {
        ggml_get_type_traits(t->type)->to_float(src, out, n);
        return;
    }
    for (int64_t i = 0; i < n; ++i) {
        out[i] = load_float(t->type, src + i * int64_t(t->nb[0]));
    }
}

void store_row(ggml_tensor * t, row_index r, const float * row) {
    uint8_t *     dst = row_ptr(t, r);
    const int64_t n   = t->ne[0];
    if (!is_float_type(t->type) || t->nb[0] == ggml_type_size(t->type) || n == 1) {
        ggml_get_type_traits(t->type)->from_float(row, dst, n);
        return;
    }
    for (int64_t i = 0; i < n; ++i) {
        store_float(t->type, dst + i * int64_t(t->nb[0]), row[i]);
    }
}

const float * row_f32(const ggml_tensor * t, row_index r, float * scratch) {
    if (has_dense_f32_rows(t)) {
        return reinterpret_cast<const float *>(row_ptr(t, r));
    }
    load_row(t, r, scratch);
    return scratch;
}

float * out_row_f32(ggml_tensor * t, row_index r, float * scratch) {
    return has_dense_f32_rows(t) ? reinterpret_cast<float *>(row_ptr(t, r)) : scratch;
}

void commit_row(ggml_tensor * t, row_index r, const float * row) {
    if (row != reinterpret_cast<const float *>(row_ptr(t, r))) {
        store_row(t, r, row);
    }
}

} // namespace hexnpu::cpu
