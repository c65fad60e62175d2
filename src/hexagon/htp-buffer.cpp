#include "htp-buffer.h"

#include "htp-device.h"
#include "repack.h"

#include "core/convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

namespace hexnpu::hexagon {
namespace {

// A weight that set_tensor will try to tile: a whole tileable tensor (not a view) whose rows are
// whole blocks.
bool tiling_candidate(const ggml_tensor * t) {
    return t->view_src == nullptr && is_tileable_type(t->type) && t->ne[0] % ggml_blck_size(t->type) == 0 &&
           ggml_is_contiguous(t);
}

std::string tensor_label(const ggml_tensor * t) {
    return std::string("'") + t->name + "' (" + ggml_type_name(t->type) + ")";
}

// Whether any value of a whole tensor rounds to infinity in fp16 (|v| >= 65520): its rows converted
// to fp32 a chunk at a time. F16 never does; a type without a float path is not an HMX weight.
bool any_beyond_fp16(ggml_type type, const int64_t ne[4], const void * data) {
    if (type == GGML_TYPE_F16 || !can_convert(type, GGML_TYPE_F32)) {
        return false;
    }
    const int64_t      nrows = ne[1] * ne[2] * ne[3];
    const size_t       row   = ggml_row_size(type, ne[0]);
    const int64_t      chunk = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(ne[0], 1));
    std::vector<float> values(size_t(chunk * ne[0]));
    for (int64_t r = 0; r < nrows; r += chunk) {
        const int64_t n = std::min(chunk, nrows - r);
        convert_rows(type, static_cast<const uint8_t *>(data) + size_t(r) * row, GGML_TYPE_F32, values.data(), n,
                     ne[0], 1);
        for (int64_t i = 0; i < n * ne[0]; ++i) {
            if (std::fabs(values[size_t(i)]) >= 65520.0f) {
                return true;
            }
        }
    }
    return false;
}

// A whole weight in parts of about 4 MiB of source that each store on their own: whole 2-D slices
// of a 3-D weight, or groups of 32 rows of a 2-D one (a 32-row group's tiles are contiguous).
struct weight_part {
    size_t  src_off, src_bytes, dst_off;
    int64_t ne[4];
};
std::vector<weight_part> weight_parts(const ggml_tensor * t, bool tiled) {
    constexpr size_t         kPartBytes = size_t(4) << 20;
    const size_t             row        = ggml_row_size(t->type, t->ne[0]);
    const int64_t            slices     = t->ne[2] * t->ne[3];
    const int64_t            group      = slices > 1 ? t->ne[1] : std::max<int64_t>(1, int64_t(kPartBytes / row) / 32) * 32;
    const int64_t            slice_ne[4] = {t->ne[0], t->ne[1], 1, 1};
    const size_t             slice_dst   = tiled ? tiled_nbytes(t->type, slice_ne) : size_t(t->ne[1]) * row;
    std::vector<weight_part> parts;
    for (int64_t s = 0; s < slices; ++s) {
        for (int64_t r0 = 0; r0 < t->ne[1]; r0 += group) {
            weight_part p{};
            const int64_t n      = std::min(group, t->ne[1] - r0);
            const int64_t done[4] = {t->ne[0], r0, 1, 1};
            p.ne[0] = t->ne[0], p.ne[1] = n, p.ne[2] = 1, p.ne[3] = 1;
            p.src_off   = size_t(s * t->ne[1] + r0) * row;
            p.src_bytes = size_t(n) * row;
            p.dst_off   = size_t(s) * slice_dst + (tiled ? tiled_nbytes(t->type, done) : size_t(r0) * row);
            parts.push_back(p);
        }
    }
    return parts;
}

// The source of a weight once it is stored: hexnpu's loader and llama.cpp read weights from their
// mapping of the GGUF, whose pages would otherwise stay resident beside the NPU's copy (tiled
// weights cannot be read in place). MADV_PAGEOUT only reclaims: file pages are read again if
// touched, other memory keeps its data. Whole pages inside the range only.
void release_source_pages(const void * data, size_t size) {
    const auto      page  = uintptr_t(sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
    const uintptr_t end   = (reinterpret_cast<uintptr_t>(data) + size) / page * page;
    if (end > begin) {
        (void) madvise(reinterpret_cast<void *>(begin), end - begin, MADV_PAGEOUT);  // a hint: failure is harmless
    }
}

} // namespace

bool htp_stored_beyond_fp16(const ggml_tensor * t) {
    const auto * buf = dynamic_cast<const htp_buffer *>(t->buffer);
    return buf != nullptr && buf->beyond_fp16(t);
}

bool htp_stored_tiled(const ggml_tensor * t) {
    const auto * buf = dynamic_cast<const htp_buffer *>(t->buffer);
    return buf != nullptr && buf->is_tiled(t);
}

size_t htp_stored_size(const ggml_tensor * t) {
    const auto * buf = dynamic_cast<const htp_buffer *>(t->buffer);
    return buf != nullptr && buf->is_tiled(t) ? tiled_nbytes(t->type, t->ne) : ggml_nbytes(t);
}

htp_buffer_type::htp_buffer_type(htp_device * device, htp_buffer_kind kind, uint64_t max_size, bool tiles, bool host)
    : device_(device), kind_(kind), max_size_(max_size), tiles_(kind == htp_buffer_kind::repack && tiles), host_(host),
      name_(std::string(device->name()) + (kind == htp_buffer_kind::repack ? "-REPACK" : "")) {}

backend_device * htp_buffer_type::device() const { return device_; }

std::unique_ptr<backend_buffer> htp_buffer_type::alloc_buffer(size_t size) {
    // A buffer the window cannot map is an error now, as the model loads, not at the first batch
    // (weights of a v81 session's REPACK buffers map beside the window).
    const htp_window_budget budget = device_->window_budget();
    if (size > budget.bytes && !(kind_ == htp_buffer_kind::repack && device_->has_extended_region())) {
        throw std::invalid_argument(name_ + ": a buffer of " + std::to_string(size) +
                                    " bytes cannot be mapped by the session: one batch may map " +
                                    std::to_string(budget.bytes) + " bytes (" + budget.source + ")" +
                                    (kind_ == htp_buffer_kind::repack ? "; GGML_HEXAGON_MBUF caps weight buffers" : ""));
    }
    return std::make_unique<htp_buffer>(this, size);
}

size_t htp_buffer_type::alloc_size(const ggml_tensor * t) const {
    if (tiles_ && tiling_candidate(t)) {
        return std::max(tiled_nbytes(t->type, t->ne), ggml_nbytes(t));
    }
    return ggml_nbytes(t);
}

// A zero-byte buffer still gets memory: every buffer needs an fd.
htp_buffer::htp_buffer(htp_buffer_type * buft, size_t size)
    : backend_buffer(buft, size), memory_(std::max<size_t>(size, 1)), kind_(buft->kind()) {}

htp_buffer::~htp_buffer() {
    htp_buft()->htp()->forget_buffer(memory_.fd());
    for (htp_device * d : users_) {
        if (d != htp_buft()->htp()) {
            d->forget_buffer(memory_.fd());
        }
    }
}

void htp_buffer::add_user(htp_device * device) {
    std::lock_guard lock(users_mutex_);
    if (std::find(users_.begin(), users_.end(), device) == users_.end()) {
        users_.push_back(device);
    }
}

bool htp_buffer::recorded(const std::unordered_map<const void *, shape_key> & records, const ggml_tensor * t) {
    const auto it = records.find(t->data);
    return it != records.end() && it->second.type == t->type &&
           std::equal(std::begin(t->ne), std::end(t->ne), std::begin(it->second.ne));
}

bool htp_buffer::is_tiled(const ggml_tensor * t) const { return recorded(tiled_, t); }

bool htp_buffer::beyond_fp16(const ggml_tensor * t) const { return recorded(beyond_fp16_, t); }

void htp_buffer::init_tensor(ggml_tensor * t) {
    if (t->view_src == nullptr) {
        tiled_.erase(t->data);
        beyond_fp16_.erase(t->data);
    }
}

void htp_buffer::set_tensor(ggml_tensor * t, const void * data, size_t offset, size_t size) {
    uint8_t *  dst   = static_cast<uint8_t *>(t->data);
    const bool whole = offset == 0 && size == ggml_nbytes(t);
    const bool repack = kind_ == htp_buffer_kind::repack;
    // In a compute buffer holding weights: where the tiles fit the flat tensor's room, and the
    // device tiles its REPACK buffers' weights.
    const bool tile = repack ? htp_buft()->tiles() && tiling_candidate(t)
                             : weights_ && htp_buft()->htp()->options().mm_select >= 2 && tiling_candidate(t) &&
                                   tiled_nbytes(t->type, t->ne) <= ggml_nbytes(t);
    if (!whole && (repack ? tile : is_tiled(t))) {
        throw std::invalid_argument(std::string(buft()->name()) + ": set_tensor of weight " + tensor_label(t) +
                                    " must write the whole tensor (it is stored tiled), not bytes [" +
                                    std::to_string(offset) + ", " + std::to_string(offset + size) + ")");
    }
    if (!(repack || tile) || !whole) {
        if (!repack) {
            tiled_.erase(t->data);  // a whole flat write over what may have been tiles
        }
        std::memcpy(dst + offset, data, size);
        return;
    }
    // A whole weight: stored a part at a time, each part's range checked (weights of ordinary models
    // never go past fp16's) and its source pages released once copied, so a model read from a
    // mapped file is not resident twice (the mapping and the NPU's copy) while it loads.
    const shape_key shape{t->type, {t->ne[0], t->ne[1], t->ne[2], t->ne[3]}};
    const auto *    src       = static_cast<const uint8_t *>(data);
    const int       n_threads = int(std::max(1u, std::min(8u, std::thread::hardware_concurrency())));
    bool            beyond = false, tiled = tile;
    for (const weight_part & part : weight_parts(t, tile)) {
        beyond = beyond || any_beyond_fp16(t->type, part.ne, src + part.src_off);
        if (tiled) {
            tiled = repack_tensor(t->type, part.ne, src + part.src_off, dst + part.dst_off, n_threads).ok();
        }
        if (!tile) {
            std::memcpy(dst + part.src_off, src + part.src_off, part.src_bytes);
        }
        release_source_pages(src + part.src_off, part.src_bytes);
    }
    if (beyond) {
        beyond_fp16_[t->data] = shape;
    } else {
        beyond_fp16_.erase(t->data);
    }
    if (tiled) {
        tiled_[t->data] = shape;
        return;
    }
    tiled_.erase(t->data);
    if (tile) {
        // Not tileable after all (e.g. an fp16 scale product overflows): kept flat, which every
        // supported op also reads.
        std::memcpy(dst, data, size);
    }
}

void htp_buffer::get_tensor(const ggml_tensor * t, void * data, size_t offset, size_t size) {
    const uint8_t * src = static_cast<const uint8_t *>(t->data);
    if (!is_tiled(t)) {
        std::memcpy(data, src + offset, size);
        return;
    }
    if (!is_lossless_tiling(t->type)) {
        throw std::invalid_argument(std::string(buft()->name()) + ": get_tensor of weight " + tensor_label(t) +
                                    " is not possible: its tiles keep fp16 scale products, not the original bytes");
    }
    std::vector<uint8_t> flat(ggml_nbytes(t));
    const auto           result = unpack_tensor(t->type, t->ne, src, flat.data());
    if (!result.ok()) {
        throw std::runtime_error(std::string(buft()->name()) + ": cannot unpack " + tensor_label(t) + ": " +
                                 result.error);
    }
    std::memcpy(data, flat.data() + offset, size);
}

void htp_buffer::clear(uint8_t value) {
    std::memset(memory_.data(), value, size());
    tiled_.clear();
}

} // namespace hexnpu::hexagon
