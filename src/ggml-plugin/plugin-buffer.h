// The plugin's ggml buffer types and buffers: each wraps a buffer type or buffer of an HTP device
// (HTPn, HTPn-REPACK; src/hexagon/htp-buffer.h), so set_tensor of a weight into an HTPn-REPACK
// buffer stores it tiled exactly as hexnpu's own runner does.
#pragma once

#include "ggml-abi.h"

#include "hexnpu/backend.h"

namespace hexnpu::ggml_plugin {

// Room for one ggml buffer type in the layout of any API version the plugin speaks.
struct buffer_type_storage {
    alignas(ggml_abi::buffer_type_v3) unsigned char bytes[sizeof(ggml_abi::buffer_type_v3)] = {};
    ggml_abi::buffer_type * ggml() { return reinterpret_cast<ggml_abi::buffer_type *>(bytes); }
};

// The API version of the ggml that loads the plugin: its buffer types are laid out for it. Set
// once, before the first init_buffer_type.
void set_api_version(int version);

// Makes `storage` the ggml face of `hexnpu` (a buffer type of the device behind `dev`).
void init_buffer_type(buffer_type_storage & storage, backend_buffer_type * hexnpu, ggml_abi::device * dev);

// The hexnpu buffer type behind buft; nullptr when buft is not one of the plugin's.
backend_buffer_type * hexnpu_buffer_type_of(const ggml_abi::buffer_type * buft);

// The hexnpu buffer behind buf; nullptr for other backends' buffers, for the zero-byte
// placeholders ggml makes for size-0 allocations, and for nullptr.
backend_buffer * hexnpu_buffer_of(const ggml_abi::buffer * buf);

// Prints where and what failed, then aborts as GGML_ABORT does: for ggml callbacks that return
// nothing and so cannot report an error.
[[noreturn]] void fatal(const char * where, const char * what);

} // namespace hexnpu::ggml_plugin
