#include "hexnpu/backend.h"

#include "hexnpu/graph-alloc.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace hexnpu {
namespace {

size_t align_up(size_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

std::string quoted_name(const ggml_tensor * t) { return std::string("'") + t->name + "'"; }

// Throws unless [offset, offset + size) lies inside the tensor's bytes (overflow-safe).
void check_range(const ggml_tensor * t, size_t offset, size_t size, const char * what) {
    const size_t nbytes = ggml_nbytes(t);
    if (offset > nbytes || size > nbytes - offset) {
        throw std::out_of_range(std::string(what) + ": bytes [" + std::to_string(offset) + ", " +
                                std::to_string(offset) + "+" + std::to_string(size) + ") are outside tensor " +
                                quoted_name(t) + " of " + std::to_string(nbytes) + " bytes");
    }
    if (t->data == nullptr) {
        throw std::logic_error(std::string(what) + ": tensor " + quoted_name(t) + " has no memory");
    }
}

} // namespace

backend_registry & backend_registry::get() {
    static backend_registry registry;
    return registry;
}

void backend_registry::add(std::unique_ptr<backend_device> dev) {
    if (!dev) {
        throw std::invalid_argument("backend_registry: null device");
    }
    if (find(dev->name())) {
        throw std::invalid_argument(std::string("backend_registry: a device named '") + dev->name() +
                                    "' is already registered");
    }
    view_.push_back(dev.get());
    owned_.push_back(std::move(dev));
}

backend_device * backend_registry::find(const std::string & name) const {
    for (backend_device * dev : view_) {
        if (name == dev->name()) {
            return dev;
        }
    }
    return nullptr;
}

// One buffer, tensors in context order at aligned offsets. A context larger than the buffer
// type's max_size is an error (no splitting into several buffers): the message says by how much.
std::unique_ptr<backend_buffer> alloc_ctx_tensors(ggml_context & ctx, backend_buffer_type * buft) {
    const size_t alignment = buft->alignment();
    std::vector<std::pair<ggml_tensor *, size_t>> placements;
    size_t                                        total = 0;
    for (ggml_tensor & tensor : ctx.tensors()) {
        ggml_tensor * t = &tensor;
        if (t->data == nullptr && t->view_src == nullptr) {
            placements.emplace_back(t, total);
            total += align_up(buft->alloc_size(t), alignment);
        }
    }
    if (placements.empty()) {
        return nullptr;
    }
    if (total > buft->max_size()) {
        throw std::length_error(std::string("alloc_ctx_tensors: the context needs ") + std::to_string(total) +
                                " bytes, more than the max_size " + std::to_string(buft->max_size()) + " of " +
                                buft->name());
    }
    std::unique_ptr<backend_buffer> buf  = buft->alloc_buffer(total);
    auto *                          base = static_cast<uint8_t *>(buf->base());
    for (auto [t, offset] : placements) {
        tensor_alloc(buf.get(), t, base + offset);
    }
    for (ggml_tensor & tensor : ctx.tensors()) {
        ggml_tensor * t = &tensor;
        if (t->view_src && t->data == nullptr && t->view_src->data) {
            tensor_view_init(t);
        }
    }
    return buf;
}

void tensor_alloc(backend_buffer * buf, ggml_tensor * t, void * addr) {
    if (t->data != nullptr || t->view_src != nullptr) {
        throw std::logic_error("tensor_alloc: tensor " + quoted_name(t) + " already has memory or is a view");
    }
    const auto * base   = static_cast<const uint8_t *>(buf->base());
    const auto * where  = static_cast<const uint8_t *>(addr);
    const size_t needed = buf->buft()->alloc_size(t);
    if (where < base || size_t(where - base) > buf->size() || needed > buf->size() - size_t(where - base)) {
        throw std::out_of_range("tensor_alloc: tensor " + quoted_name(t) + " (" + std::to_string(needed) +
                                " bytes) does not fit at that address of a " + std::to_string(buf->size()) +
                                "-byte " + buf->buft()->name() + " buffer");
    }
    t->buffer = buf;
    t->data   = addr;
    buf->init_tensor(t);
}

void tensor_set(ggml_tensor * t, const void * data, size_t offset, size_t size) {
    check_range(t, offset, size, "tensor_set");
    if (size == 0) {
        return;
    }
    if (t->buffer) {
        t->buffer->set_tensor(t, data, offset, size);
    } else {
        std::memcpy(static_cast<uint8_t *>(t->data) + offset, data, size);
    }
}

void tensor_get(const ggml_tensor * t, void * data, size_t offset, size_t size) {
    check_range(t, offset, size, "tensor_get");
    if (size == 0) {
        return;
    }
    if (t->buffer) {
        t->buffer->get_tensor(t, data, offset, size);
    } else {
        std::memcpy(data, static_cast<const uint8_t *>(t->data) + offset, size);
    }
}

} // namespace hexnpu
