// Shared by run, bench, perplexity and tokenize: finding the default model, choosing devices,
// loading a model onto them.
#pragma once

#include "model/context.h"
#include "model/model.h"

#include "hexnpu/backend.h"

#include <memory>
#include <span>
#include <string_view>
#include <string>
#include <vector>

namespace hexnpu::cli {

// The real Gemma 3 270M if installed (HEXNPU_MODEL, <bin>/../models/, build/models/), else "".
std::string find_default_model();
// A synthesized tiny llama written to a temporary file (removed at exit); returns its path.
std::string synth_default_model();

// How a model is spread over several NPU devices (llama.cpp's -sm): none (the first device holds
// every weight), layer (consecutive layers per device, by --tensor-split proportions or evenly),
// row (one device group: every op computed by all the devices together, each its slice of the
// output rows, with fences between ops).
enum class split_mode { none, layer, row };

// --device LIST, -sm/--split-mode none|layer, -ts/--tensor-split P0,P1,...
struct device_choice {
    std::string         list = "CPU";
    split_mode          mode = split_mode::layer;
    std::vector<double> tensor_split;  // empty: even
};
// Consumes a[i] (and its value) when it is one of the flags above; throws std::runtime_error on a
// bad value.
bool parse_device_flag(std::span<const std::string_view> a, size_t & i, device_choice & c);
extern const char * const kDeviceFlagsUsage;

// --device HTP0 | CPU | HTP0,CPU: the backends in priority order, the CPU always last.
struct devices {
    std::unique_ptr<backend_device>       group;  // row split: the device group (outlives the backends)
    std::vector<std::unique_ptr<backend>> owned;
    std::vector<backend *>                backends;
    backend_device *                      cpu = nullptr;
    std::string                           names;  // "HTP0,CPU"
    bool                                  npu = false;
    // Where the KV cache lives: the NPU's compute buffers when an NPU is used and the CPU can read
    // them in place (host-visible), else CPU memory.
    backend_buffer_type * kv_buft = nullptr;
    split_mode            mode = split_mode::layer;
    std::vector<double>   tensor_split;
    std::vector<backend *> npus;  // the NPU backends, in --device order
    // The NPU backend of each layer (layer split; set by load_model); empty: the first NPU's.
    std::vector<backend *> layer_npu;
};
// collect_trace: the HTP devices record their NPU trace events (write_htp_trace).
devices open_devices(const device_choice & choice, int n_threads, bool collect_trace = false);

// Layer il of n_layer on device index k of n_devices: consecutive runs sized by the proportions
// (cumulative shares rounded, as llama.cpp's --tensor-split), evenly when there are none.
std::vector<size_t> assign_layers(int64_t n_layer, size_t n_devices, const std::vector<double> & proportions);

// Each device's run report on stderr as `hexnpu_perf:` lines (an NPU device: its batches and the
// window's maps and unmaps, the sliding window at work when the weights do not fit it).
void print_run_reports(const devices & d);

// The context parameters every model command shares: the devices' backends, the KV cache's
// buffer type, the NPU's refusal reasons for --verbose.
model::context_params context_params_for(const devices & d);

// Loads the model onto the devices: weights read in place from the file's mapping on the CPU;
// with an NPU, matmul weights in its REPACK buffers, each layer's on its device (d.layer_npu).
std::unique_ptr<model::model> load_model(const std::string & path, devices & d);

} // namespace hexnpu::cli
