// GGUF v3 writer (shared/design/formats.md §2): header, metadata in insertion order, tensor infos,
// zero padding to the alignment, then the tensors packed in order, each padded to the alignment.
#include "gguf-layout.h"

#include "hexnpu/output-file.h"

#include <algorithm>

namespace hexnpu::gguf {
namespace {

class byte_buffer {
  public:
    std::vector<uint8_t> bytes;

    template <typename T>
    void put(T v) {
        const auto * p = reinterpret_cast<const uint8_t *>(&v);
        bytes.insert(bytes.end(), p, p + sizeof(T));
    }

    void put_string(std::string_view s) {
        put<uint64_t>(s.size());
        bytes.insert(bytes.end(), s.begin(), s.end());
    }

    void put_value(const value & v) {
        put<uint32_t>(uint32_t(v.type()));
        if (v.type() == value_type::STRING) {
            put_string(*v.as_string());
            return;
        }
        if (v.type() != value_type::ARRAY) {
            const std::span<const uint8_t> data = v.scalar_bytes();
            bytes.insert(bytes.end(), data.begin(), data.end());
            return;
        }
        put<uint32_t>(uint32_t(v.elem_type()));
        put<uint64_t>(v.array_size());
        if (const std::vector<std::string> * strings = v.as_strings()) {
            for (const std::string & s : *strings) {
                put_string(s);
            }
        } else {
            const std::span<const uint8_t> data = v.array_bytes();
            bytes.insert(bytes.end(), data.begin(), data.end());
        }
    }
};

void check_key(const std::string & key) {
    if (key.empty() || key.size() > layout::MAX_KEY_LENGTH) {
        throw std::invalid_argument("gguf::writer: key " + layout::quoted(key) + " is " + std::to_string(key.size()) +
                                    " bytes; keys must be 1 to 65535 bytes");
    }
}

uint32_t alignment_from(const value & v) {
    const std::optional<uint64_t> a = v.as_uint();
    if (v.type() != value_type::UINT32 || !layout::is_power_of_two(*a)) {
        throw std::invalid_argument("gguf::writer: general.alignment must be a uint32 power of two, got " +
                                    std::string(value_type_name(v.type())) + " " + v.to_display());
    }
    return uint32_t(*a);
}

} // namespace

void writer::set(const std::string & key, value v) {
    check_key(key);
    if (key == layout::ALIGNMENT_KEY) {
        alignment_ = alignment_from(v);
    }
    for (metadata_entry & e : metadata_) {
        if (e.key == key) {
            e.val = std::move(v);
            return;
        }
    }
    metadata_.push_back({key, std::move(v)});
}

bool writer::remove(const std::string & key) {
    const auto it = std::find_if(metadata_.begin(), metadata_.end(), [&](const metadata_entry & e) { return e.key == key; });
    if (it == metadata_.end()) {
        return false;
    }
    metadata_.erase(it);
    if (key == layout::ALIGNMENT_KEY) {
        alignment_ = GGUF_DEFAULT_ALIGNMENT;
    }
    return true;
}

void writer::set_alignment(uint32_t alignment) {
    if (!layout::is_power_of_two(alignment)) {
        throw std::invalid_argument("gguf::writer: alignment " + std::to_string(alignment) +
                                    " is not a non-zero power of two");
    }
    const std::string key(layout::ALIGNMENT_KEY);
    if (alignment == GGUF_DEFAULT_ALIGNMENT) {
        remove(key);
    } else {
        set(key, value::from_u32(alignment));
    }
    alignment_ = alignment;
}

void writer::add_tensor(const std::string & name, ggml_type type, std::span<const int64_t> ne, fill_fn fill) {
    if (!fill) {
        throw std::invalid_argument("gguf::writer: tensor " + layout::quoted(name) + " has no fill function");
    }
    pending_tensor t;
    t.fill = std::move(fill);
    add_pending(name, type, ne, std::move(t));
}

void writer::add_tensor(const std::string & name, ggml_type type, std::span<const int64_t> ne, const void * data) {
    if (!data) {
        throw std::invalid_argument("gguf::writer: tensor " + layout::quoted(name) + " has no data");
    }
    pending_tensor t;
    t.data = data;
    add_pending(name, type, ne, std::move(t));
}

void writer::add_pending(const std::string & name, ggml_type type, std::span<const int64_t> ne, pending_tensor t) {
    const auto fail = [&](const std::string & problem) {
        throw std::invalid_argument("gguf::writer: tensor " + layout::quoted(name) + ": " + problem);
    };
    if (name.empty() || name.size() >= GGUF_MAX_NAME) {
        fail("name is " + std::to_string(name.size()) + " bytes; names must be 1 to " +
             std::to_string(GGUF_MAX_NAME - 1) + " bytes");
    }
    for (const pending_tensor & other : tensors_) {
        if (other.info.name == name) {
            fail("duplicate name");
        }
    }
    if (!ggml_type_is_valid(type)) {
        fail("type id " + std::to_string(int(type)) + " has no layout");
    }
    if (ne.empty() || ne.size() > layout::MAX_DIMS) {
        fail(std::to_string(ne.size()) + " dimensions; tensors have 1 to 4");
    }
    const ggml_type_traits & traits = *ggml_get_type_traits(type);
    for (size_t d = 0; d < ne.size(); ++d) {
        if (ne[d] <= 0) {
            fail("ne[" + std::to_string(d) + "]=" + std::to_string(ne[d]) + " is not positive");
        }
    }
    if (ne[0] % traits.blck_size != 0) {
        fail("ne[0]=" + std::to_string(ne[0]) + " is not a multiple of " + traits.type_name + "'s block size " +
             std::to_string(traits.blck_size));
    }

    tensor_info & info = t.info;
    info.name          = name;
    info.type          = type;
    std::copy(ne.begin(), ne.end(), info.ne.begin());
    info.n_dims = uint32_t(ne.size());
    while (info.n_dims > 1 && info.ne[info.n_dims - 1] == 1) {
        --info.n_dims;
    }
    const layout::tensor_size size = layout::compute_tensor_size(traits, info.ne);
    if (size.error != layout::size_error::none) {
        fail("size overflows");
    }
    info.nbytes = size.nbytes;
    tensors_.push_back(std::move(t));
}

std::vector<uint8_t> writer::encode_header(std::vector<tensor_info> & laid_out) const {
    byte_buffer out;
    out.put<uint32_t>(layout::MAGIC);
    out.put<uint32_t>(GGUF_VERSION);
    out.put<uint64_t>(tensors_.size());
    out.put<uint64_t>(metadata_.size());
    for (const metadata_entry & e : metadata_) {
        out.put_string(e.key);
        out.put_value(e.val);
    }

    laid_out.clear();
    laid_out.reserve(tensors_.size());
    uint64_t offset = 0;
    for (const pending_tensor & t : tensors_) {
        tensor_info info = t.info;
        info.info_offset = out.bytes.size();
        info.offset      = offset;
        offset           = layout::align_up(offset + info.nbytes, alignment_);
        out.put_string(info.name);
        out.put<uint32_t>(info.n_dims);
        for (uint32_t d = 0; d < info.n_dims; ++d) {
            out.put<uint64_t>(uint64_t(info.ne[d]));
        }
        out.put<uint32_t>(uint32_t(info.type));
        out.put<uint64_t>(info.offset);
        laid_out.push_back(std::move(info));
    }

    const uint64_t data_offset = layout::align_up(out.bytes.size(), alignment_);
    out.bytes.resize(data_offset, 0);
    for (tensor_info & info : laid_out) {
        info.file_offset = data_offset + info.offset;
    }
    return std::move(out.bytes);
}

void writer::emit_tensors(const std::vector<tensor_info> & laid_out, const sink_fn & sink,
                          const progress_fn & progress) const {
    uint64_t largest_filled = 0;
    for (const pending_tensor & t : tensors_) {
        if (t.fill) {
            largest_filled = std::max(largest_filled, t.info.nbytes);
        }
    }
    // One buffer for every filled tensor, left uninitialized: fill writes all of it.
    const auto scratch = std::make_unique_for_overwrite<uint8_t[]>(size_t(largest_filled));
    const std::vector<uint8_t> zeros(alignment_, 0);

    for (size_t i = 0; i < tensors_.size(); ++i) {
        const pending_tensor & t    = tensors_[i];
        const tensor_info &    info = laid_out[i];
        const uint8_t *        src  = static_cast<const uint8_t *>(t.data);
        if (t.fill) {
            t.fill(scratch.get());
            src = scratch.get();
        }
        sink(src, size_t(info.nbytes));
        sink(zeros.data(), size_t(layout::align_up(info.nbytes, alignment_) - info.nbytes));
        if (progress) {
            progress(i, tensors_.size(), info);
        }
    }
}

std::vector<uint8_t> writer::write_to_memory() const {
    std::vector<tensor_info> laid_out;
    std::vector<uint8_t>     out = encode_header(laid_out);
    emit_tensors(laid_out, [&](const uint8_t * p, size_t n) { out.insert(out.end(), p, p + n); }, {});
    return out;
}

void writer::write(output_file & out, const progress_fn & progress) const {
    std::vector<tensor_info>   laid_out;
    const std::vector<uint8_t> header = encode_header(laid_out);
    out.write(header.data(), header.size());
    emit_tensors(laid_out, [&](const uint8_t * p, size_t n) { out.write(p, n); }, progress);
}

void writer::write(const std::string & path, const progress_fn & progress) const {
    output_file out = output_file::create(path);
    write(out, progress);
    out.commit();
}

} // namespace hexnpu::gguf
