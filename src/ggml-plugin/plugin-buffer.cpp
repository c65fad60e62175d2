#include "plugin-buffer.h"

#include "tensor-mirror.h"

#include "hexagon/htp-buffer.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <vector>

namespace hexnpu::ggml_plugin {
namespace {

using ggml_abi::buffer;
using ggml_abi::buffer_type;
using ggml_abi::tensor;

int g_api_version = ggml_abi::kMinApiVersion;  // the loading ggml's, set before any buffer type exists

// A buffer type's context, where the loading ggml's layout puts it.
void * context_of(const buffer_type * buft) {
    return g_api_version >= 3 ? reinterpret_cast<const ggml_abi::buffer_type_v3 *>(buft)->context
                              : reinterpret_cast<const ggml_abi::buffer_type_v2 *>(buft)->context;
}

backend_buffer_type * hexnpu_of(buffer_type * buft) { return static_cast<backend_buffer_type *>(context_of(buft)); }
backend_buffer *      hexnpu_of(buffer * buf) { return static_cast<backend_buffer *>(buf->context); }

// The hexnpu view of one tensor for a buffer call: its own fields and whether it is a view.
struct single_mirror {
    mirror_set    set;
    ggml_tensor * t;
    explicit single_mirror(const tensor * src) : t(set.mirror(src, /*shallow=*/true)) {}
};

ggml_tensor * mirror_or_die(single_mirror & m, const char * where) {
    if (m.t == nullptr) {
        fatal(where, m.set.error().c_str());
    }
    return m.t;
}

// Runs f, turning an exception into fatal(where): ggml's buffer callbacks return no status.
template <typename F> void guarded(const char * where, F && f) {
    try {
        f();
    } catch (const std::exception & e) {
        fatal(where, e.what());
    }
}

void buffer_free(buffer * buf) { delete hexnpu_of(buf); }

void * buffer_get_base(buffer * buf) { return hexnpu_of(buf)->base(); }

ggml_abi::status buffer_init_tensor(buffer * buf, tensor * t) {
    single_mirror m(t);
    if (m.t == nullptr) {
        std::fprintf(stderr, "hexnpu-ggml: init_tensor: %s\n", m.set.error().c_str());
        return ggml_abi::STATUS_FAILED;
    }
    hexnpu_of(buf)->init_tensor(m.t);
    return ggml_abi::STATUS_SUCCESS;
}

void buffer_memset_tensor(buffer * buf, tensor * t, uint8_t value, size_t offset, size_t size) {
    single_mirror m(t);
    // New bytes at the tensor's address: whatever was stored tiled there is gone.
    hexnpu_of(buf)->init_tensor(mirror_or_die(m, "memset_tensor"));
    std::memset(static_cast<uint8_t *>(t->data) + offset, value, size);
}

void buffer_set_tensor(buffer * buf, tensor * t, const void * data, size_t offset, size_t size) {
    single_mirror m(t);
    ggml_tensor * mt = mirror_or_die(m, "set_tensor");
    // ggml flags the buffers of a model's weights (llama.cpp's tensor split puts them in compute
    // buffers): stored tiled there too, as the REPACK type would.
    if (buf->usage == ggml_abi::USAGE_WEIGHTS) {
        if (auto * htp = dynamic_cast<hexagon::htp_buffer *>(hexnpu_of(buf))) {
            htp->hold_weights();
        }
    }
    guarded("set_tensor", [&] { hexnpu_of(buf)->set_tensor(mt, data, offset, size); });
}

// n_copies pieces of size bytes, stride_data apart in data, stride_tensor apart in the tensor
// (llama.cpp's tensor split writes each session's column slice of a weight so). A whole tensor
// written so is gathered and written whole, so a weight is stored tiled; anything else piece by piece,
// as ggml would without this call.
void buffer_set_tensor_2d(buffer * buf, tensor * t, const void * data, size_t offset, size_t size, size_t n_copies,
                          size_t stride_tensor, size_t stride_data) {
    const auto * src = static_cast<const uint8_t *>(data);
    single_mirror m(t);
    if (offset == 0 && stride_tensor == size && size * n_copies == ggml_nbytes(mirror_or_die(m, "set_tensor_2d"))) {
        std::vector<uint8_t> whole(size * n_copies);
        for (size_t i = 0; i < n_copies; ++i) {
            std::memcpy(whole.data() + i * size, src + i * stride_data, size);
        }
        buffer_set_tensor(buf, t, whole.data(), 0, whole.size());
        return;
    }
    for (size_t i = 0; i < n_copies; ++i) {
        buffer_set_tensor(buf, t, src + i * stride_data, offset + i * stride_tensor, size);
    }
}

void buffer_get_tensor(buffer * buf, const tensor * t, void * data, size_t offset, size_t size) {
    single_mirror m(t);
    ggml_tensor * mt = mirror_or_die(m, "get_tensor");
    guarded("get_tensor", [&] { hexnpu_of(buf)->get_tensor(mt, data, offset, size); });
}

void buffer_clear(buffer * buf, uint8_t value) { hexnpu_of(buf)->clear(value); }

constexpr ggml_abi::buffer_i kBufferInterface = {
    /* free_buffer   */ buffer_free,
    /* get_base      */ buffer_get_base,
    /* init_tensor   */ buffer_init_tensor,
    /* memset_tensor */ buffer_memset_tensor,
    /* set_tensor    */ buffer_set_tensor,
    /* get_tensor    */ buffer_get_tensor,
    /* set_tensor_2d */ buffer_set_tensor_2d,
    /* get_tensor_2d */ nullptr,
    /* cpy_tensor    */ nullptr,  // ggml copies through get_tensor / set_tensor
    /* clear         */ buffer_clear,
    /* reset         */ nullptr,
};

const char * buft_get_name(buffer_type * buft) { return hexnpu_of(buft)->name(); }

buffer * buft_alloc_buffer(buffer_type * buft, size_t size) {
    try {
        std::unique_ptr<backend_buffer> b = hexnpu_of(buft)->alloc_buffer(size);
        auto * out = new buffer{kBufferInterface, buft, b.get(), size, ggml_abi::USAGE_ANY};
        b.release();
        return out;
    } catch (const std::exception & e) {
        std::fprintf(stderr, "hexnpu-ggml: %s: cannot allocate %zu bytes: %s\n", hexnpu_of(buft)->name(), size,
                     e.what());
        return nullptr;  // ggml reports the failed allocation
    }
}

size_t buft_get_alignment(buffer_type * buft) { return hexnpu_of(buft)->alignment(); }
size_t buft_get_max_size(buffer_type * buft) { return hexnpu_of(buft)->max_size(); }

size_t buft_get_alloc_size(buffer_type * buft, const tensor * t) {
    single_mirror m(t);
    return hexnpu_of(buft)->alloc_size(mirror_or_die(m, "get_alloc_size"));
}

bool buft_is_host(buffer_type * buft) { return hexnpu_of(buft)->is_host(); }

} // namespace

void set_api_version(int version) { g_api_version = version; }

void init_buffer_type(buffer_type_storage & storage, backend_buffer_type * hexnpu, ggml_abi::device * dev) {
    // alloc_buffer_n and get_alloc_size_n (v3) are left to ggml: it allocates a context's tensors in
    // chunks through alloc_buffer and get_alloc_size (the tiled sizes), as version 2 does.
    if (g_api_version >= 3) {
        new (storage.bytes) ggml_abi::buffer_type_v3{
            {buft_get_name, buft_alloc_buffer, nullptr, buft_get_alignment, buft_get_max_size, buft_get_alloc_size,
             nullptr, buft_is_host},
            dev, hexnpu};
    } else {
        new (storage.bytes) ggml_abi::buffer_type_v2{
            {buft_get_name, buft_alloc_buffer, buft_get_alignment, buft_get_max_size, buft_get_alloc_size,
             buft_is_host},
            dev, hexnpu};
    }
}

backend_buffer_type * hexnpu_buffer_type_of(const buffer_type * buft) {
    // get_name is the first member in every version: a foreign buffer type is told apart by it.
    if (buft == nullptr || reinterpret_cast<const ggml_abi::buffer_type_v2 *>(buft)->iface.get_name != buft_get_name) {
        return nullptr;
    }
    return static_cast<backend_buffer_type *>(context_of(buft));
}

backend_buffer * hexnpu_buffer_of(const buffer * buf) {
    if (buf == nullptr || hexnpu_buffer_type_of(buf->buft) == nullptr || buf->iface.get_base != buffer_get_base) {
        return nullptr;
    }
    return static_cast<backend_buffer *>(buf->context);
}

void fatal(const char * where, const char * what) {
    std::fprintf(stderr, "hexnpu-ggml: %s: %s\n", where, what);
    std::fflush(stderr);
    std::abort();
}

} // namespace hexnpu::ggml_plugin
