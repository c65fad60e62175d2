// GGUF v3 reader (memory-mapped, zero-copy, strict) and writer (shared/design/formats.md §2).
#pragma once

#include "hexnpu/ggml-types.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace hexnpu {
class output_file;
}

namespace hexnpu::gguf {

inline constexpr uint32_t GGUF_VERSION           = 3;
inline constexpr uint32_t GGUF_DEFAULT_ALIGNMENT = 32;
inline constexpr size_t   GGUF_MAX_NAME          = 64;  // tensor names are shorter than this

// A malformed or unreadable file. what() names the problem; offset is the byte where it was found.
class error : public std::runtime_error {
  public:
    error(const std::string & message, uint64_t offset);
    uint64_t offset() const { return offset_; }

  private:
    uint64_t offset_;
};

enum class value_type : uint32_t {
    UINT8   = 0,
    INT8    = 1,
    UINT16  = 2,
    INT16   = 3,
    UINT32  = 4,
    INT32   = 5,
    FLOAT32 = 6,
    BOOL    = 7,
    STRING  = 8,
    ARRAY   = 9,
    UINT64  = 10,
    INT64   = 11,
    FLOAT64 = 12,
};

const char * value_type_name(value_type type);

// One metadata value: a scalar, a string, or an array of scalars or strings (never of arrays).
class value {
  public:
    value() = default;  // the uint8 0
    static value from_u8(uint8_t v);
    static value from_i8(int8_t v);
    static value from_u16(uint16_t v);
    static value from_i16(int16_t v);
    static value from_u32(uint32_t v);
    static value from_i32(int32_t v);
    static value from_u64(uint64_t v);
    static value from_i64(int64_t v);
    static value from_f32(float v);
    static value from_f64(double v);
    static value from_bool(bool v);
    static value from_string(std::string v);
    static value from_strings(std::vector<std::string> v);
    // Array of fixed-size scalars; `data` holds count little-endian elements of elem_type.
    static value from_array(value_type elem_type, uint64_t count, std::vector<uint8_t> data);

    value_type type() const { return type_; }
    value_type elem_type() const { return elem_type_; }  // only for ARRAY
    uint64_t   array_size() const;                       // elements of an ARRAY

    // Scalar accessors: nullopt when the value is not of a compatible scalar type.
    std::optional<uint64_t>    as_uint() const;   // any unsigned integer type, or a non-negative signed one
    std::optional<int64_t>     as_int() const;    // any integer type that fits
    std::optional<double>      as_float() const;  // any numeric type
    std::optional<bool>        as_bool() const;
    const std::string *        as_string() const;  // STRING only
    const std::vector<std::string> * as_strings() const;  // ARRAY of STRING only
    std::span<const uint8_t>   array_bytes() const;        // ARRAY of scalars only
    std::span<const uint8_t>   scalar_bytes() const;       // little-endian bytes of a scalar; empty otherwise

    // Human-readable rendering; arrays show at most max_elems elements then "... (N total)".
    std::string to_display(size_t max_elems = 8) const;

    // Same type and same bytes (floats compare bitwise, so NaN payloads round-trip visibly).
    friend bool operator==(const value &, const value &) = default;

  private:
    static value scalar(value_type type, std::vector<uint8_t> bytes);

    value_type               type_      = value_type::UINT8;
    value_type               elem_type_ = value_type::UINT8;
    uint64_t                 count_     = 0;
    std::vector<uint8_t>     bytes_ = std::vector<uint8_t>(1, 0);  // scalar or scalar array elements, LE
    std::vector<std::string> strings_;  // STRING (one) or ARRAY of STRING
};

struct tensor_info {
    std::string            name;
    ggml_type              type = GGML_TYPE_F32;
    uint32_t               n_dims = 1;
    std::array<int64_t, 4> ne{1, 1, 1, 1};
    uint64_t               offset = 0;       // relative to the data section, as stored
    uint64_t               nbytes = 0;       // flat GGML size
    uint64_t               file_offset = 0;  // absolute position of the first byte in the file
    uint64_t               info_offset = 0;  // where this tensor's info record starts (for messages)

    int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

struct metadata_entry {
    std::string key;
    value       val;
};

// Reads and validates a whole GGUF v2/v3 file up front, as strictly as GGML's reader (formats.md
// §2), and a little more: every dimension must be positive (GGML accepts 0). Tensor data stays in
// the file and is handed out as views. Every problem throws gguf::error naming it and its offset.
class reader {
  public:
    // Memory-maps the file read-only; the reader owns the mapping. Also throws gguf::error (at
    // offset 0) when the file cannot be opened or mapped.
    static reader open(const std::string & path);
    // Parses a buffer the caller keeps alive as long as the reader (tensor_data points into it).
    static reader from_memory(const uint8_t * data, size_t size);

    reader(reader &&) noexcept;
    reader & operator=(reader &&) noexcept;
    ~reader();

    uint32_t version() const;
    uint32_t alignment() const;
    uint64_t data_offset() const;  // start of the tensor-data section
    uint64_t file_size() const;

    const std::vector<metadata_entry> & metadata() const;
    const value *                       find(std::string_view key) const;
    const std::vector<tensor_info> &    tensors() const;
    const tensor_info *                 find_tensor(std::string_view name) const;
    // A view of the tensor's bytes in the file; std::out_of_range if t is not from this file.
    std::span<const uint8_t>            tensor_data(const tensor_info & t) const;

  private:
    struct impl;
    explicit reader(std::unique_ptr<impl> p);
    std::unique_ptr<impl> p_;
};

// Builds a GGUF v3 file. Metadata keeps insertion order (set() on an existing key replaces it in
// place); tensors are laid out in the order added, each padded to the alignment with zeros.
class writer {
  public:
    // Fills exactly the tensor's nbytes at dst.
    using fill_fn     = std::function<void(uint8_t * dst)>;
    // Called after each tensor is written: (index, count, tensor).
    using progress_fn = std::function<void(size_t index, size_t count, const tensor_info & t)>;

    // Throws std::invalid_argument on an empty key or one longer than 65535 bytes. Setting
    // general.alignment (a uint32 power of two, else invalid_argument) also sets the alignment.
    void set(const std::string & key, value v);
    bool remove(const std::string & key);  // removing general.alignment restores 32
    // Throws std::invalid_argument unless a non-zero power of two. general.alignment is then
    // stored when the alignment is not 32 and dropped when it is.
    void set_alignment(uint32_t alignment);

    // ne has 1 to 4 entries; n_dims is its length without trailing 1s (at least 1), as GGML
    // writes it. Throws std::invalid_argument on an empty, too long (>= 64 bytes) or duplicate
    // name, a dimension <= 0, ne[0] not a multiple of the block size, a size overflow or a type
    // without a layout (unknown or retired).
    void add_tensor(const std::string & name, ggml_type type, std::span<const int64_t> ne, fill_fn fill);
    // The bytes at data must stay valid until write() returns.
    void add_tensor(const std::string & name, ggml_type type, std::span<const int64_t> ne, const void * data);

    // Writes the file through output_file (output-file.h): a unique temporary next to path, then
    // an atomic rename, so a failed write leaves no partial file and an existing path untouched.
    // Tensors are streamed one at a time (one fill buffer, sized for the largest filled tensor).
    // Throws output_error (a std::runtime_error) naming the path and the reason.
    void write(const std::string & path, const progress_fn & progress = {}) const;
    // Writes the whole file into out (which a command created with its inputs, so the target is
    // checked against them); the caller commits it.
    void write(output_file & out, const progress_fn & progress = {}) const;
    // Serializes to memory (small files, tests).
    std::vector<uint8_t> write_to_memory() const;

  private:
    struct pending_tensor {
        tensor_info  info;
        fill_fn      fill;            // either fill ...
        const void * data = nullptr;  // ... or caller-owned bytes, written without a copy
    };
    using sink_fn = std::function<void(const uint8_t * bytes, size_t n)>;

    void add_pending(const std::string & name, ggml_type type, std::span<const int64_t> ne, pending_tensor t);
    // Header, metadata, tensor infos and padding; fills each tensor's offset and file_offset.
    std::vector<uint8_t> encode_header(std::vector<tensor_info> & laid_out) const;
    void emit_tensors(const std::vector<tensor_info> & laid_out, const sink_fn & sink,
                      const progress_fn & progress) const;

    std::vector<metadata_entry> metadata_;
    std::vector<pending_tensor> tensors_;
    uint32_t                    alignment_ = GGUF_DEFAULT_ALIGNMENT;
};

} // namespace hexnpu::gguf
