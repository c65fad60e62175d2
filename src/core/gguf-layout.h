// Byte-level facts of the GGUF format shared by the reader and the writer
// (shared/design/formats.md §2), and the quoting used when a key or name appears in a message.
#pragma once

#include "hexnpu/ggml-types.h"
#include "hexnpu/gguf.h"

#include <array>
#include <bit>
#include <cstdint>
#include <string>
#include <string_view>

namespace hexnpu::gguf::layout {

// GGUF is little-endian; values are stored and read with plain memcpy.
static_assert(std::endian::native == std::endian::little, "hexnpu's GGUF code assumes a little-endian host");

inline constexpr uint32_t MAGIC          = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr uint64_t HEADER_SIZE    = 24;          // magic, version, tensor_count, kv_count
inline constexpr uint64_t MAX_KEY_LENGTH = 65535;
inline constexpr uint32_t MAX_DIMS       = 4;
inline constexpr uint32_t MAX_VALUE_TYPE = uint32_t(value_type::FLOAT64);

inline constexpr std::string_view ALIGNMENT_KEY = "general.alignment";
// The largest general.alignment accepted. The format allows any power of two up to 2^31, but files
// use 32 (GGML's default) up to a page; a gigabyte of padding before the data (which a round trip
// through the writer would then allocate) is an attack, not a layout.
inline constexpr uint64_t MAX_ALIGNMENT = uint64_t(1) << 20;

// The smallest records the format allows. A count that cannot fit in the bytes left at this size
// is rejected before anything is allocated for it.
inline constexpr uint64_t MIN_KV_SIZE          = 8 + 1 + 4 + 1;          // key length, key, type, u8 value
inline constexpr uint64_t MIN_TENSOR_INFO_SIZE = 8 + 1 + 4 + 8 + 4 + 8;  // name length, name, n_dims, ne[0], type, offset
inline constexpr uint64_t STRING_LENGTH_SIZE   = 8;

// Bytes of one fixed-size value; 0 for STRING, ARRAY and unknown codes.
inline constexpr size_t scalar_size(value_type type) {
    switch (type) {
        case value_type::UINT8:
        case value_type::INT8:
        case value_type::BOOL:    return 1;
        case value_type::UINT16:
        case value_type::INT16:   return 2;
        case value_type::UINT32:
        case value_type::INT32:
        case value_type::FLOAT32: return 4;
        case value_type::UINT64:
        case value_type::INT64:
        case value_type::FLOAT64: return 8;
        case value_type::STRING:
        case value_type::ARRAY:   return 0;
    }
    return 0;
}

inline constexpr bool is_power_of_two(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

// `alignment` is a power of two; `offset` is at most a file size, so this cannot overflow.
inline constexpr uint64_t align_up(uint64_t offset, uint64_t alignment) {
    return (offset + alignment - 1) & ~(alignment - 1);
}

enum class size_error { none, elements_overflow, bytes_overflow };

struct tensor_size {
    size_error error  = size_error::none;
    uint64_t   nbytes = 0;
};

// GGML's flat size (ne0/blck)*type_size*ne1*ne2*ne3, with overflow of the element count (int64)
// and of the byte size (uint64) reported. ne must be positive, ne[0] a multiple of the block size.
inline tensor_size compute_tensor_size(const ggml_type_traits & traits, const std::array<int64_t, 4> & ne) {
    int64_t elements = ne[0];
    for (size_t i = 1; i < ne.size(); ++i) {
        if (__builtin_mul_overflow(elements, ne[i], &elements)) {
            return {size_error::elements_overflow, 0};
        }
    }
    uint64_t nbytes = uint64_t(ne[0] / traits.blck_size);
    if (__builtin_mul_overflow(nbytes, uint64_t(traits.type_size), &nbytes)) {
        return {size_error::bytes_overflow, 0};
    }
    for (size_t i = 1; i < ne.size(); ++i) {
        if (__builtin_mul_overflow(nbytes, uint64_t(ne[i]), &nbytes)) {
            return {size_error::bytes_overflow, 0};
        }
    }
    return {size_error::none, nbytes};
}

// Appends s with backslash escapes for quotes, backslashes and control bytes, so that keys, names
// and string values from an untrusted file print on one line. Bytes >= 0x80 pass through (UTF-8).
inline void append_escaped(std::string & out, std::string_view s, char quote) {
    static constexpr char hex[] = "0123456789abcdef";
    for (const char c : s) {
        const auto b = static_cast<unsigned char>(c);
        if (c == quote || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\r') {
            out += "\\r";
        } else if (b < 0x20 || b == 0x7f) {
            out += "\\x";
            out += hex[b >> 4];
            out += hex[b & 15];
        } else {
            out += c;
        }
    }
}

// 'name' for messages; names longer than max_chars are cut and marked with "...".
inline std::string quoted(std::string_view s, size_t max_chars = 80) {
    std::string out = "'";
    append_escaped(out, s.substr(0, max_chars), '\'');
    out += s.size() > max_chars ? "'..." : "'";
    return out;
}

} // namespace hexnpu::gguf::layout
