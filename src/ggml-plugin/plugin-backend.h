// The plugin's ggml backend (stream) of one HTP device: graph_compute translates ggml's graph into
// hexnpu's (tensor-mirror.h) and runs it on the device's session.
#pragma once

#include "ggml-abi.h"

#include "hexnpu/backend.h"

#include <string>

namespace hexnpu::ggml_plugin {

// A new ggml backend for dev (whose context is the device behind it); nullptr, with the reason
// printed, when the hexnpu backend cannot be created.
ggml_abi::backend * make_backend(ggml_abi::device * dev, backend_device * hexnpu);

// The hexnpu device behind one of the plugin's backends; nullptr for another backend's.
backend_device * hexnpu_device_of(ggml_abi::backend * b);

// The backend's next graph_compute fails with why, computing nothing (after an all-reduce that
// failed half-way: ggml's fallback would otherwise add the partial sums again).
void fail_next_compute(ggml_abi::backend * b, const std::string & why);

} // namespace hexnpu::ggml_plugin
