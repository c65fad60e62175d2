// GGUF metadata values: construction, typed access and display.
#include "gguf-layout.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace hexnpu::gguf {

const char * value_type_name(value_type type) {
    switch (type) {
        case value_type::UINT8:   return "uint8";
        case value_type::INT8:    return "int8";
        case value_type::UINT16:  return "uint16";
        case value_type::INT16:   return "int16";
        case value_type::UINT32:  return "uint32";
        case value_type::INT32:   return "int32";
        case value_type::FLOAT32: return "float32";
        case value_type::BOOL:    return "bool";
        case value_type::STRING:  return "string";
        case value_type::ARRAY:   return "array";
        case value_type::UINT64:  return "uint64";
        case value_type::INT64:   return "int64";
        case value_type::FLOAT64: return "float64";
    }
    return "unknown";
}

namespace {

template <typename T>
std::vector<uint8_t> bytes_of(T v) {
    std::vector<uint8_t> out(sizeof(T));
    std::memcpy(out.data(), &v, sizeof(T));
    return out;
}

template <typename T>
T load(const uint8_t * p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

bool is_integer(value_type t) {
    switch (t) {
        case value_type::UINT8:
        case value_type::INT8:
        case value_type::UINT16:
        case value_type::INT16:
        case value_type::UINT32:
        case value_type::INT32:
        case value_type::UINT64:
        case value_type::INT64: return true;
        default:                return false;
    }
}

// An integer element widened without loss: unsigned types to uint64, signed types to int64.
struct wide_integer {
    bool     is_signed;
    uint64_t u;
    int64_t  i;
};

wide_integer load_integer(value_type t, const uint8_t * p) {
    switch (t) {
        case value_type::UINT8:  return {false, load<uint8_t>(p), 0};
        case value_type::UINT16: return {false, load<uint16_t>(p), 0};
        case value_type::UINT32: return {false, load<uint32_t>(p), 0};
        case value_type::UINT64: return {false, load<uint64_t>(p), 0};
        case value_type::INT8:   return {true, 0, load<int8_t>(p)};
        case value_type::INT16:  return {true, 0, load<int16_t>(p)};
        case value_type::INT32:  return {true, 0, load<int32_t>(p)};
        default:                 return {true, 0, load<int64_t>(p)};
    }
}

template <typename T>
void append_number(std::string & out, T v) {
    char buf[64];
    const auto result = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round-trip form
    out.append(buf, result.ptr);
}

void append_scalar(std::string & out, value_type t, const uint8_t * p) {
    switch (t) {
        case value_type::FLOAT32: append_number(out, load<float>(p)); return;
        case value_type::FLOAT64: append_number(out, load<double>(p)); return;
        case value_type::BOOL:    out += p[0] ? "true" : "false"; return;
        default: {
            const wide_integer w = load_integer(t, p);
            if (w.is_signed) {
                append_number(out, w.i);
            } else {
                append_number(out, w.u);
            }
        }
    }
}

void append_string(std::string & out, std::string_view s) {
    out += '"';
    layout::append_escaped(out, s, '"');
    out += '"';
}

} // namespace

value value::scalar(value_type type, std::vector<uint8_t> bytes) {
    value v;
    v.type_  = type;
    v.bytes_ = std::move(bytes);
    return v;
}

value value::from_u8(uint8_t v) { return scalar(value_type::UINT8, bytes_of(v)); }
value value::from_i8(int8_t v) { return scalar(value_type::INT8, bytes_of(v)); }
value value::from_u16(uint16_t v) { return scalar(value_type::UINT16, bytes_of(v)); }
value value::from_i16(int16_t v) { return scalar(value_type::INT16, bytes_of(v)); }
value value::from_u32(uint32_t v) { return scalar(value_type::UINT32, bytes_of(v)); }
value value::from_i32(int32_t v) { return scalar(value_type::INT32, bytes_of(v)); }
value value::from_u64(uint64_t v) { return scalar(value_type::UINT64, bytes_of(v)); }
value value::from_i64(int64_t v) { return scalar(value_type::INT64, bytes_of(v)); }
value value::from_f32(float v) { return scalar(value_type::FLOAT32, bytes_of(v)); }
value value::from_f64(double v) { return scalar(value_type::FLOAT64, bytes_of(v)); }
value value::from_bool(bool v) { return scalar(value_type::BOOL, bytes_of(uint8_t(v ? 1 : 0))); }

value value::from_string(std::string v) {
    value out;
    out.type_ = value_type::STRING;
    out.bytes_.clear();
    out.strings_.push_back(std::move(v));
    return out;
}

value value::from_strings(std::vector<std::string> v) {
    value out;
    out.type_      = value_type::ARRAY;
    out.elem_type_ = value_type::STRING;
    out.count_     = v.size();
    out.bytes_.clear();
    out.strings_   = std::move(v);
    return out;
}

value value::from_array(value_type elem_type, uint64_t count, std::vector<uint8_t> data) {
    const size_t elem_size = layout::scalar_size(elem_type);
    if (elem_size == 0) {
        throw std::invalid_argument(std::string("gguf::value::from_array: element type ") +
                                    value_type_name(elem_type) + " is not a fixed-size scalar");
    }
    if (count > data.size() / elem_size || count * elem_size != data.size()) {
        throw std::invalid_argument("gguf::value::from_array: " + std::to_string(data.size()) +
                                    " bytes do not hold " + std::to_string(count) + " " +
                                    value_type_name(elem_type) + " elements");
    }
    if (elem_type == value_type::BOOL) {
        for (const uint8_t b : data) {
            if (b > 1) {
                throw std::invalid_argument("gguf::value::from_array: BOOL element " + std::to_string(b) +
                                            " is not 0 or 1");
            }
        }
    }
    value out;
    out.type_      = value_type::ARRAY;
    out.elem_type_ = elem_type;
    out.count_     = count;
    out.bytes_     = std::move(data);
    return out;
}

uint64_t value::array_size() const { return type_ == value_type::ARRAY ? count_ : 0; }

std::optional<uint64_t> value::as_uint() const {
    if (!is_integer(type_)) {
        return std::nullopt;
    }
    const wide_integer w = load_integer(type_, bytes_.data());
    if (!w.is_signed) {
        return w.u;
    }
    if (w.i < 0) {
        return std::nullopt;
    }
    return uint64_t(w.i);
}

std::optional<int64_t> value::as_int() const {
    if (!is_integer(type_)) {
        return std::nullopt;
    }
    const wide_integer w = load_integer(type_, bytes_.data());
    if (w.is_signed) {
        return w.i;
    }
    if (w.u > uint64_t(std::numeric_limits<int64_t>::max())) {
        return std::nullopt;
    }
    return int64_t(w.u);
}

std::optional<double> value::as_float() const {
    switch (type_) {
        case value_type::FLOAT32: return double(load<float>(bytes_.data()));
        case value_type::FLOAT64: return load<double>(bytes_.data());
        default:                  break;
    }
    if (!is_integer(type_)) {
        return std::nullopt;
    }
    const wide_integer w = load_integer(type_, bytes_.data());
    return w.is_signed ? double(w.i) : double(w.u);
}

std::optional<bool> value::as_bool() const {
    if (type_ != value_type::BOOL) {
        return std::nullopt;
    }
    return bytes_[0] != 0;
}

const std::string * value::as_string() const { return type_ == value_type::STRING ? &strings_[0] : nullptr; }

const std::vector<std::string> * value::as_strings() const {
    return type_ == value_type::ARRAY && elem_type_ == value_type::STRING ? &strings_ : nullptr;
}

std::span<const uint8_t> value::array_bytes() const {
    if (type_ != value_type::ARRAY || elem_type_ == value_type::STRING) {
        return {};
    }
    return bytes_;
}

std::span<const uint8_t> value::scalar_bytes() const {
    if (type_ == value_type::ARRAY || type_ == value_type::STRING) {
        return {};
    }
    return bytes_;
}

std::string value::to_display(size_t max_elems) const {
    std::string out;
    if (type_ == value_type::STRING) {
        append_string(out, strings_[0]);
        return out;
    }
    if (type_ != value_type::ARRAY) {
        append_scalar(out, type_, bytes_.data());
        return out;
    }
    out += '[';
    const uint64_t shown     = std::min<uint64_t>(count_, max_elems);
    const size_t   elem_size = layout::scalar_size(elem_type_);
    for (uint64_t i = 0; i < shown; ++i) {
        if (i > 0) {
            out += ", ";
        }
        if (elem_type_ == value_type::STRING) {
            append_string(out, strings_[i]);
        } else {
            append_scalar(out, elem_type_, bytes_.data() + i * elem_size);
        }
    }
    if (shown < count_) {
        out += shown > 0 ? ", ... (" : "... (";
        out += std::to_string(count_) + " total)";
    }
    out += ']';
    return out;
}

} // namespace hexnpu::gguf
