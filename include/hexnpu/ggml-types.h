// GGML tensor element types: the same ids, names, block sizes and byte sizes as GGML, so GGUF
// files from any GGML tool are read and written unchanged (shared/design/formats.md §1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hexnpu {

enum ggml_type : int32_t {
    GGML_TYPE_F32     = 0,
    GGML_TYPE_F16     = 1,
    GGML_TYPE_Q4_0    = 2,
    GGML_TYPE_Q4_1    = 3,
    // 4, 5: retired (Q4_2, Q4_3)
    GGML_TYPE_Q5_0    = 6,
    GGML_TYPE_Q5_1    = 7,
    GGML_TYPE_Q8_0    = 8,
    GGML_TYPE_Q8_1    = 9,
    GGML_TYPE_Q2_K    = 10,
    GGML_TYPE_Q3_K    = 11,
    GGML_TYPE_Q4_K    = 12,
    GGML_TYPE_Q5_K    = 13,
    GGML_TYPE_Q6_K    = 14,
    GGML_TYPE_Q8_K    = 15,
    GGML_TYPE_IQ2_XXS = 16,
    GGML_TYPE_IQ2_XS  = 17,
    GGML_TYPE_IQ3_XXS = 18,
    GGML_TYPE_IQ1_S   = 19,
    GGML_TYPE_IQ4_NL  = 20,
    GGML_TYPE_IQ3_S   = 21,
    GGML_TYPE_IQ2_S   = 22,
    GGML_TYPE_IQ4_XS  = 23,
    GGML_TYPE_I8      = 24,
    GGML_TYPE_I16     = 25,
    GGML_TYPE_I32     = 26,
    GGML_TYPE_I64     = 27,
    GGML_TYPE_F64     = 28,
    GGML_TYPE_IQ1_M   = 29,
    GGML_TYPE_BF16    = 30,
    // 31..33: retired (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8)
    GGML_TYPE_TQ1_0   = 34,
    GGML_TYPE_TQ2_0   = 35,
    // 36..38: retired (IQ4_NL_4_4, IQ4_NL_4_8, IQ4_NL_8_8)
    GGML_TYPE_MXFP4   = 39,
    GGML_TYPE_NVFP4   = 40,
    GGML_TYPE_Q1_0    = 41,
    GGML_TYPE_Q2_0    = 42,
    GGML_TYPE_COUNT   = 43,
};

// GGML's quantization format version, stored as general.quantization_version.
inline constexpr uint32_t GGML_QNT_VERSION = 2;

// n is a number of elements, always a multiple of the type's block size.
using ggml_to_float_fn   = void (*)(const void * src, float * dst, int64_t n);
using ggml_from_float_fn = void (*)(const float * src, void * dst, int64_t n);
// sum of dequantized(src)[i] * y[i], bit for bit dot_f32 of the dequantized row (src/core/dot-f32.h).
using ggml_dot_row_fn = float (*)(const void * src, const float * y, int64_t n);

struct ggml_type_traits {
    const char * type_name;      // GGML's name: "f32", "q4_0", "q4_0_4_4" (retired) ...
    int64_t      blck_size;      // elements per block; 0 for retired ids
    size_t       type_size;      // bytes per block; 0 for retired ids
    bool         is_quantized;
    bool         retired;        // an id GGML no longer defines: no tensor may use it
    // Fast paths (SIMD where the host has it); null when hexnpu cannot convert this type.
    ggml_to_float_fn   to_float;
    ggml_from_float_fn from_float;
    // Plain scalar reference paths; the fast paths must give the same bits.
    ggml_to_float_fn   to_float_ref;
    ggml_from_float_fn from_float_ref;
    ggml_dot_row_fn    dot_row;  // a row's dot with f32 values, without a dequantized copy
};

// Traits of any id in [0, GGML_TYPE_COUNT); nullptr for ids outside that range.
const ggml_type_traits * ggml_get_type_traits(int64_t type_id);

bool        ggml_type_is_valid(int64_t type_id);  // in range and not retired
const char *ggml_type_name(ggml_type type);       // "?" for ids outside the range
int64_t     ggml_blck_size(ggml_type type);
size_t      ggml_type_size(ggml_type type);
bool        ggml_is_quantized(ggml_type type);
// Bytes of a row of ne elements; ne must be a multiple of the block size.
size_t      ggml_row_size(ggml_type type, int64_t ne);

// Case-insensitive lookup of a valid (non-retired) type by name ("Q4_K", "bf16" ...).
std::optional<ggml_type> ggml_type_from_name(std::string_view name);

} // namespace hexnpu
