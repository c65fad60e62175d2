// Strict GGUF reader (shared/design/formats.md §2). The file is validated completely up front;
// every problem throws gguf::error with the byte offset where it was found. Nothing is read
// before its bounds are checked, and no allocation is sized by a count that has not first been
// shown to fit in the bytes left in the file.
#include "gguf-layout.h"

#include "hexnpu/input-file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>
#include <unordered_map>

namespace hexnpu::gguf {

error::error(const std::string & message, uint64_t offset) : std::runtime_error(message), offset_(offset) {}

namespace {

using index_map = std::unordered_map<std::string_view, size_t>;

std::string at(uint64_t offset) { return " at byte " + std::to_string(offset); }

std::string byte_count(uint64_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }

// Bounds-checked sequential reads. `what` is a callable that names the item being read; it is
// only called to build the message of a truncation error.
class cursor {
  public:
    cursor(const uint8_t * data, uint64_t size) : data_(data), size_(size) {}

    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return size_ - pos_; }

    template <typename What>
    const uint8_t * take(uint64_t n, const What & what) {
        if (n > remaining()) {
            throw error("truncated at byte " + std::to_string(pos_) + ": " + what() + " needs " + byte_count(n) +
                            " but only " + std::to_string(remaining()) + " remain",
                        pos_);
        }
        const uint8_t * p = data_ + pos_;
        pos_ += n;
        return p;
    }

    // Checks that `count` items of at least `item_size` bytes each can fit before any is read.
    template <typename What>
    void require_items(uint64_t count, uint64_t item_size, const What & what) const {
        if (count > remaining() / item_size) {
            throw error("truncated at byte " + std::to_string(pos_) + ": " + what() + " (" + std::to_string(count) +
                            " x " + std::to_string(item_size) + " bytes) cannot fit in the " +
                            std::to_string(remaining()) + " bytes left",
                        pos_);
        }
    }

    template <typename T, typename What>
    T read(const What & what) {
        T v;
        std::memcpy(&v, take(sizeof(T), what), sizeof(T));
        return v;
    }

    template <typename What>
    std::string_view read_string_body(uint64_t length, const What & what) {
        return {reinterpret_cast<const char *>(take(length, what)), size_t(length)};
    }

  private:
    const uint8_t * data_;
    uint64_t        size_;
    uint64_t        pos_ = 0;
};

// Everything the reader knows about a file once it has been validated.
struct parsed_file {
    uint32_t                    version     = 0;
    uint32_t                    alignment   = GGUF_DEFAULT_ALIGNMENT;
    uint64_t                    data_offset = 0;
    std::vector<metadata_entry> metadata;
    std::vector<tensor_info>    tensors;
};

std::string shape_of(const std::array<int64_t, 4> & ne, uint32_t n_dims) {
    std::string s = "[";
    for (uint32_t i = 0; i < n_dims; ++i) {
        s += (i ? ", " : "") + std::to_string(ne[i]);
    }
    return s + "]";
}

// Reserving for more than this many records waits until they have actually been read: a count
// may fit in the file and still be far more than a real model has.
constexpr uint64_t MAX_RESERVE = 4096;

class parser {
  public:
    parser(const uint8_t * data, uint64_t size) : in_(data, size), size_(size) {}

    parsed_file run() {
        parse_header();
        parse_metadata();
        parse_tensor_infos();
        check_tensor_data();
        return std::move(out_);
    }

  private:
    cursor      in_;
    uint64_t    size_;
    parsed_file out_;
    uint64_t    tensor_count_ = 0;
    uint64_t    kv_count_     = 0;

    void parse_header() {
        if (size_ >= 4) {
            const uint8_t * magic = in_.take(4, [] { return std::string("magic"); });
            uint32_t        word;
            std::memcpy(&word, magic, 4);
            if (word != layout::MAGIC) {
                std::string shown;
                layout::append_escaped(shown, {reinterpret_cast<const char *>(magic), 4}, '"');
                throw error("bad magic \"" + shown + "\"" + at(0) + ": not a GGUF file (expected \"GGUF\")", 0);
            }
        }
        if (size_ < layout::HEADER_SIZE) {
            throw error("file is " + std::to_string(size_) + " bytes, shorter than the " +
                            std::to_string(layout::HEADER_SIZE) + "-byte GGUF header",
                        0);
        }
        const uint64_t version_at = in_.pos();
        const uint32_t version    = in_.read<uint32_t>([] { return std::string("version"); });
        if ((version & 0xffff) == 0 && version != 0) {
            char hex[16];
            std::snprintf(hex, sizeof(hex), "0x%08x", version);
            throw error(std::string("GGUF version") + at(version_at) + " reads as " + hex +
                            ", a byte-swapped " + std::to_string(__builtin_bswap32(version)) +
                            ": big-endian GGUF files are not supported",
                        version_at);
        }
        if (version < 2 || version > GGUF_VERSION) {
            throw error("unsupported GGUF version " + std::to_string(version) + at(version_at) +
                            " (versions 2 and 3 are supported)",
                        version_at);
        }
        out_.version = version;

        const uint64_t tensor_count_at = in_.pos();
        tensor_count_                  = in_.read<uint64_t>([] { return std::string("tensor_count"); });
        const uint64_t kv_count_at     = in_.pos();
        kv_count_                      = in_.read<uint64_t>([] { return std::string("metadata_kv_count"); });

        const uint64_t left = in_.remaining();
        if (tensor_count_ > left / layout::MIN_TENSOR_INFO_SIZE) {
            throw error("tensor_count " + std::to_string(tensor_count_) + at(tensor_count_at) +
                            " cannot fit in the " + std::to_string(left) +
                            " bytes after the header (a tensor info takes at least " +
                            std::to_string(layout::MIN_TENSOR_INFO_SIZE) + " bytes)",
                        tensor_count_at);
        }
        const uint64_t left_for_kv = left - tensor_count_ * layout::MIN_TENSOR_INFO_SIZE;
        if (kv_count_ > left_for_kv / layout::MIN_KV_SIZE) {
            throw error("metadata_kv_count " + std::to_string(kv_count_) + at(kv_count_at) + " cannot fit in the " +
                            std::to_string(left_for_kv) +
                            " bytes left after the header and the smallest possible tensor infos (a key-value "
                            "pair takes at least " +
                            std::to_string(layout::MIN_KV_SIZE) + " bytes)",
                        kv_count_at);
        }
    }

    void parse_metadata() {
        out_.metadata.reserve(std::min(kv_count_, MAX_RESERVE));
        index_map             first_seen;  // key -> entry offset; views into the file
        std::optional<size_t> alignment_index;
        uint64_t              alignment_at = 0;
        for (uint64_t i = 0; i < kv_count_; ++i) {
            const uint64_t entry_at = in_.pos();
            const auto     entry    = [&] { return "metadata entry #" + std::to_string(i) + at(entry_at); };
            const uint64_t length   = in_.read<uint64_t>([&] { return "the key length of " + entry(); });
            if (length == 0) {
                throw error(entry() + ": empty key", entry_at);
            }
            if (length > layout::MAX_KEY_LENGTH) {
                throw error(entry() + ": key length " + std::to_string(length) + " exceeds " +
                                std::to_string(layout::MAX_KEY_LENGTH),
                            entry_at);
            }
            const std::string_view key = in_.read_string_body(length, [&] { return "the key of " + entry(); });
            const auto [it, inserted]  = first_seen.emplace(key, entry_at);
            if (!inserted) {
                throw error("key " + layout::quoted(key) + at(entry_at) + ": duplicate key (first at byte " +
                                std::to_string(it->second) + ")",
                            entry_at);
            }
            if (key == layout::ALIGNMENT_KEY) {
                alignment_index = out_.metadata.size();
                alignment_at    = in_.pos() + sizeof(uint32_t);  // the value, after its type code
            }
            out_.metadata.push_back({std::string(key), parse_value(key)});
        }
        if (alignment_index) {
            apply_alignment(out_.metadata[*alignment_index].val, alignment_at);
        }
    }

    // general.alignment governs the layout of everything after the metadata.
    void apply_alignment(const value & v, uint64_t value_at) {
        const std::string where = "key " + layout::quoted(layout::ALIGNMENT_KEY) + at(value_at);
        if (v.type() != value_type::UINT32) {
            throw error(where + ": must be a uint32, not " +
                            (v.type() == value_type::ARRAY ? std::string("an array")
                                                            : std::string("a ") + value_type_name(v.type())),
                        value_at);
        }
        const uint64_t alignment = *v.as_uint();
        if (!layout::is_power_of_two(alignment)) {
            throw error(where + ": " + std::to_string(alignment) + " is not a non-zero power of two", value_at);
        }
        if (alignment > layout::MAX_ALIGNMENT) {
            throw error(where + ": " + std::to_string(alignment) + " exceeds the largest alignment accepted (" +
                            std::to_string(layout::MAX_ALIGNMENT) + ")",
                        value_at);
        }
        out_.alignment = uint32_t(alignment);
    }

    value_type read_value_type(std::string_view key, bool element) {
        const uint64_t type_at = in_.pos();
        const uint32_t code    = in_.read<uint32_t>([&] {
            return std::string(element ? "the element type" : "the value type") + " of key " + layout::quoted(key);
        });
        if (code > layout::MAX_VALUE_TYPE) {
            throw error("key " + layout::quoted(key) + at(type_at) + ": unknown " +
                            (element ? "array element type " : "value type ") + std::to_string(code),
                        type_at);
        }
        return value_type(code);
    }

    // Reads the value type and the value; arrays read their element type after it.
    value parse_value(std::string_view key) {
        const value_type type = read_value_type(key, false);
        const auto       what = [&] { return "the value of key " + layout::quoted(key); };
        switch (type) {
            case value_type::STRING: return value::from_string(std::string(read_string(what)));
            case value_type::ARRAY:  return parse_array(key);
            default:                 break;
        }
        const uint64_t  value_at = in_.pos();
        const uint8_t * p        = in_.take(layout::scalar_size(type), what);
        return scalar_value(type, p, key, value_at);
    }

    template <typename What>
    std::string_view read_string(const What & what) {
        const uint64_t length = in_.read<uint64_t>([&] { return "the string length of " + what(); });
        return in_.read_string_body(length, what);
    }

    value scalar_value(value_type type, const uint8_t * p, std::string_view key, uint64_t value_at) {
        const auto load = [p]<typename T>(T) {
            T v;
            std::memcpy(&v, p, sizeof(T));
            return v;
        };
        switch (type) {
            case value_type::UINT8:   return value::from_u8(load(uint8_t{}));
            case value_type::INT8:    return value::from_i8(load(int8_t{}));
            case value_type::UINT16:  return value::from_u16(load(uint16_t{}));
            case value_type::INT16:   return value::from_i16(load(int16_t{}));
            case value_type::UINT32:  return value::from_u32(load(uint32_t{}));
            case value_type::INT32:   return value::from_i32(load(int32_t{}));
            case value_type::FLOAT32: return value::from_f32(load(float{}));
            case value_type::UINT64:  return value::from_u64(load(uint64_t{}));
            case value_type::INT64:   return value::from_i64(load(int64_t{}));
            case value_type::FLOAT64: return value::from_f64(load(double{}));
            default:                  break;
        }
        if (p[0] > 1) {
            throw_bad_bool(p[0], key, value_at, "BOOL value");
        }
        return value::from_bool(p[0] != 0);
    }

    [[noreturn]] static void throw_bad_bool(uint8_t b, std::string_view key, uint64_t b_at, const std::string & what) {
        throw error("key " + layout::quoted(key) + at(b_at) + ": " + what + " is " + std::to_string(b) + ", not 0 or 1",
                    b_at);
    }

    value parse_array(std::string_view key) {
        const uint64_t   elem_type_at = in_.pos();
        const value_type elem_type    = read_value_type(key, true);
        if (elem_type == value_type::ARRAY) {
            throw error("key " + layout::quoted(key) + at(elem_type_at) +
                            ": nested arrays (array of ARRAY) are not supported",
                        elem_type_at);
        }
        const uint64_t count =
            in_.read<uint64_t>([&] { return "the element count of array " + layout::quoted(key); });
        const auto elements = [&] {
            return "the " + std::to_string(count) + " " + value_type_name(elem_type) + " elements of array " +
                   layout::quoted(key);
        };

        if (elem_type == value_type::STRING) {
            in_.require_items(count, layout::STRING_LENGTH_SIZE, elements);
            std::vector<std::string> strings;
            strings.reserve(std::min(count, MAX_RESERVE));
            for (uint64_t i = 0; i < count; ++i) {
                strings.emplace_back(read_string([&] {
                    return "element #" + std::to_string(i) + " of array " + layout::quoted(key);
                }));
            }
            return value::from_strings(std::move(strings));
        }

        const uint64_t elem_size = layout::scalar_size(elem_type);
        in_.require_items(count, elem_size, elements);
        const uint64_t  data_at = in_.pos();
        const uint8_t * data    = in_.take(count * elem_size, elements);
        if (elem_type == value_type::BOOL) {
            for (uint64_t i = 0; i < count; ++i) {
                if (data[i] > 1) {
                    throw_bad_bool(data[i], key, data_at + i, "BOOL element #" + std::to_string(i));
                }
            }
        }
        return value::from_array(elem_type, count, std::vector<uint8_t>(data, data + count * elem_size));
    }

    void parse_tensor_infos() {
        out_.tensors.reserve(std::min(tensor_count_, MAX_RESERVE));
        index_map first_seen;  // name -> info offset; views into the file
        for (uint64_t i = 0; i < tensor_count_; ++i) {
            tensor_info t;
            t.info_offset     = in_.pos();
            const auto number = [&] { return "tensor #" + std::to_string(i) + " (info" + at(t.info_offset) + ")"; };
            const auto named  = [&] {
                return "tensor " + layout::quoted(t.name) + " (info" + at(t.info_offset) + ")";
            };

            const uint64_t length = in_.read<uint64_t>([&] { return "the name length of " + number(); });
            if (length == 0) {
                throw error(number() + ": empty name", t.info_offset);
            }
            if (length >= GGUF_MAX_NAME) {
                throw error(number() + ": name is " + std::to_string(length) + " bytes; names must be shorter than " +
                                std::to_string(GGUF_MAX_NAME),
                            t.info_offset);
            }
            const std::string_view name = in_.read_string_body(length, [&] { return "the name of " + number(); });
            t.name                      = std::string(name);
            const auto [it, inserted]   = first_seen.emplace(name, t.info_offset);
            if (!inserted) {
                throw error(named() + ": duplicate name (first at byte " + std::to_string(it->second) + ")",
                            t.info_offset);
            }

            t.n_dims = in_.read<uint32_t>([&] { return "n_dims of " + named(); });
            if (t.n_dims == 0 || t.n_dims > layout::MAX_DIMS) {
                throw error(named() + ": n_dims " + std::to_string(t.n_dims) + " is not in 1.." +
                                std::to_string(layout::MAX_DIMS),
                            t.info_offset);
            }
            for (uint32_t d = 0; d < t.n_dims; ++d) {
                t.ne[d] = int64_t(in_.read<uint64_t>([&] { return "ne[" + std::to_string(d) + "] of " + named(); }));
                if (t.ne[d] <= 0) {
                    throw error(named() + ": ne[" + std::to_string(d) + "]=" + std::to_string(t.ne[d]) +
                                    " is not positive",
                                t.info_offset);
                }
            }

            const uint32_t type_id = in_.read<uint32_t>([&] { return "the type of " + named(); });
            const ggml_type_traits * traits = ggml_get_type_traits(type_id);
            if (!traits) {
                throw error(named() + ": unknown type id " + std::to_string(type_id), t.info_offset);
            }
            if (traits->retired) {
                throw error(named() + ": " + traits->type_name + " (id " + std::to_string(type_id) +
                                ") is a retired type",
                            t.info_offset);
            }
            t.type = ggml_type(type_id);
            if (t.ne[0] % traits->blck_size != 0) {
                throw error(named() + ": ne[0]=" + std::to_string(t.ne[0]) + " is not a multiple of " +
                                traits->type_name + "'s block size " + std::to_string(traits->blck_size),
                            t.info_offset);
            }
            const layout::tensor_size size = layout::compute_tensor_size(*traits, t.ne);
            if (size.error == layout::size_error::elements_overflow) {
                throw error(named() + ": element count of shape " + shape_of(t.ne, t.n_dims) + " overflows int64",
                            t.info_offset);
            }
            if (size.error == layout::size_error::bytes_overflow) {
                throw error(named() + ": byte size of " + traits->type_name + " shape " + shape_of(t.ne, t.n_dims) +
                                " overflows uint64",
                            t.info_offset);
            }
            t.nbytes = size.nbytes;

            t.offset = in_.read<uint64_t>([&] { return "the data offset of " + named(); });
            if (t.offset % out_.alignment != 0) {
                throw error(named() + ": offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                                std::to_string(out_.alignment),
                            t.info_offset);
            }
            out_.tensors.push_back(std::move(t));
        }
    }

    // GGML's rule: tensors are packed in info order, each padded to the alignment, so every
    // offset is the running sum of the aligned sizes before it. This also rules out overlaps.
    void check_tensor_data() {
        out_.data_offset  = layout::align_up(in_.pos(), out_.alignment);
        uint64_t expected = 0;
        for (tensor_info & t : out_.tensors) {
            const std::string named = "tensor " + layout::quoted(t.name) + " (info" + at(t.info_offset) + ")";
            if (t.offset != expected) {
                throw error(named + ": offset " + std::to_string(t.offset) + " differs from " +
                                std::to_string(expected) +
                                ", the running sum of the aligned sizes of the tensors before it",
                            t.info_offset);
            }
            // Ordered so that nothing overflows: data_offset <= size + alignment, offset was
            // bounded by the previous tensor's end.
            const bool fits = out_.data_offset <= size_ && t.offset <= size_ - out_.data_offset &&
                              t.nbytes <= size_ - out_.data_offset - t.offset;
            if (!fits) {
                const unsigned __int128 start = (unsigned __int128) out_.data_offset + t.offset;
                const unsigned __int128 end   = start + t.nbytes;
                throw error(named + ": data [" + u128(start) + ", " + u128(end) +
                                ") extends past the end of the file (" + std::to_string(size_) + " bytes)",
                            t.info_offset);
            }
            t.file_offset = out_.data_offset + t.offset;
            expected      = layout::align_up(t.offset + t.nbytes, out_.alignment);
        }
    }

    static std::string u128(unsigned __int128 v) {
        std::string digits;
        do {
            digits.insert(digits.begin(), char('0' + int(v % 10)));
            v /= 10;
        } while (v != 0);
        return digits;
    }
};

index_map index_by(const std::vector<metadata_entry> & entries) {
    index_map index;
    index.reserve(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
        index.emplace(entries[i].key, i);
    }
    return index;
}

index_map index_by(const std::vector<tensor_info> & tensors) {
    index_map index;
    index.reserve(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
        index.emplace(tensors[i].name, i);
    }
    return index;
}

} // namespace

struct reader::impl {
    const uint8_t * data = nullptr;
    uint64_t        size = 0;
    void *          mapping = nullptr;  // owned when open() mapped the file
    parsed_file     file;
    index_map       keys;     // views into file.metadata
    index_map       tensors;  // views into file.tensors

    impl(const uint8_t * d, uint64_t n, void * m) : data(d), size(n), mapping(m) {}
    impl(const impl &)             = delete;
    impl & operator=(const impl &) = delete;
    ~impl() {
        if (mapping) {
            munmap(mapping, size);
        }
    }
};

reader::reader(std::unique_ptr<impl> p) : p_(std::move(p)) {
    p_->file    = parser(p_->data, p_->size).run();
    p_->keys    = index_by(p_->file.metadata);
    p_->tensors = index_by(p_->file.tensors);
}

reader::reader(reader &&) noexcept             = default;
reader & reader::operator=(reader &&) noexcept = default;
reader::~reader()                              = default;

reader reader::from_memory(const uint8_t * data, size_t size) {
    return reader(std::make_unique<impl>(data, size, nullptr));
}

reader reader::open(const std::string & path) {
    // Regular files only, looked at before they are opened (input_file: a FIFO never blocks).
    const input_file in = [&] {
        try {
            return input_file::open(path);
        } catch (const input_error & e) {
            throw error(e.what(), 0);
        }
    }();
    const uint64_t size    = in.size();
    void *         mapping = nullptr;
    if (size > 0) {  // mmap rejects empty files; the parser reports them as too short
        mapping = mmap(nullptr, size, PROT_READ, MAP_SHARED, in.fd(), 0);
        if (mapping == MAP_FAILED) {
            throw error("cannot map '" + path + "': " + std::strerror(errno), 0);
        }
    }
    // The mapping keeps the file open; `in` closes the descriptor.
    static const uint8_t empty = 0;
    auto p = std::make_unique<impl>(mapping ? static_cast<const uint8_t *>(mapping) : &empty, size, mapping);
    return reader(std::move(p));
}

uint32_t reader::version() const { return p_->file.version; }
uint32_t reader::alignment() const { return p_->file.alignment; }
uint64_t reader::data_offset() const { return p_->file.data_offset; }
uint64_t reader::file_size() const { return p_->size; }

const std::vector<metadata_entry> & reader::metadata() const { return p_->file.metadata; }

const value * reader::find(std::string_view key) const {
    const auto it = p_->keys.find(key);
    return it == p_->keys.end() ? nullptr : &p_->file.metadata[it->second].val;
}

const std::vector<tensor_info> & reader::tensors() const { return p_->file.tensors; }

const tensor_info * reader::find_tensor(std::string_view name) const {
    const auto it = p_->tensors.find(name);
    return it == p_->tensors.end() ? nullptr : &p_->file.tensors[it->second];
}

std::span<const uint8_t> reader::tensor_data(const tensor_info & t) const {
    if (t.file_offset > p_->size || t.nbytes > p_->size - t.file_offset) {
        throw std::out_of_range("gguf::reader::tensor_data: tensor " + layout::quoted(t.name) +
                                " does not lie in this file");
    }
    return {p_->data + t.file_offset, size_t(t.nbytes)};
}

} // namespace hexnpu::gguf
