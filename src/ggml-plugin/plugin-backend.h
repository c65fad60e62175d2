// The plugin's ggml backend (stream) of one HTP device: graph_compute translates ggml's graph into
// hexnpu's (tensor-mirror.h) and runs it on the device's session.
#pragma once

#include "ggml-abi.h"

#include "hexnpu/backend.h"

namespace hexnpu::ggml_plugin {

// A new ggml backend for dev (whose context is the device behind it); nullptr, with the reason
// printed, when the hexnpu backend cannot be created.
ggml_abi::backend * make_backend(ggml_abi::device * dev, backend_device * hexnpu);

} // namespace hexnpu::ggml_plugin
