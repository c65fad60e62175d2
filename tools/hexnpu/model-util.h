// Shared by run, bench, perplexity and tokenize: finding the default model, choosing devices,
// loading a model onto them.
#pragma once

#include "model/context.h"
#include "model/model.h"

#include "hexnpu/backend.h"

#include <memory>
#include <string>
#include <vector>

namespace hexnpu::cli {

// The real Gemma 3 270M if installed (HEXNPU_MODEL, <bin>/../models/, build/models/), else "".
std::string find_default_model();
// A synthesized tiny llama written to a temporary file (removed at exit); returns its path.
std::string synth_default_model();

// --device HTP0 | CPU | HTP0,CPU: the backends in priority order, the CPU always last.
struct devices {
    std::vector<std::unique_ptr<backend>> owned;
    std::vector<backend *>                backends;
    backend_device *                      cpu = nullptr;
    std::string                           names;  // "HTP0,CPU"
    bool                                  npu = false;
    // Where the KV cache lives: the NPU's compute buffers when an NPU is used and the CPU can read
    // them in place (host-visible), else CPU memory.
    backend_buffer_type * kv_buft = nullptr;
};
devices open_devices(const std::string & spec, int n_threads);

// One stderr line per NPU device in d: its batches and the window's maps and unmaps (the sliding
// window at work when the weights do not fit the session's window).
void print_window_stats(const devices & d);

// The context parameters every model command shares: the devices' backends, the KV cache's
// buffer type, the NPU's refusal reasons for --verbose.
model::context_params context_params_for(const devices & d);

// Loads the model onto the devices: weights read in place from the file's mapping on the CPU;
// with an NPU, matmul weights in its REPACK buffers.
std::unique_ptr<model::model> load_model(const std::string & path, const devices & d);

} // namespace hexnpu::cli
