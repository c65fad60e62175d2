// The Hexagon NPU backend's public entry points: its devices (one per NPU session, configured by the
// GGML_HEXAGON_* environment variables) and the trace they collect.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace hexnpu {

class backend_device;

// Adds one HTP device per configured session, or per bracketed group of sessions (a row-split
// device group), to backend_registry, once per process; register them
// before the CPU so the scheduler prefers them. Sessions start when first used. collect_trace
// records the NPU's trace events as GGML_HEXAGON_PROFILE=3 does (without the per-op lines).
// host_buffers: whether compute buffers are host buffers when GGML_HEXAGON_HOSTBUF is unset.
// Throws std::invalid_argument naming a bad variable or list item.
void register_htp_devices(bool collect_trace = false, bool host_buffers = true);

// A device group of registered HTP devices (-sm row: each op's output rows divided among them, a
// fence between ops). Throws std::invalid_argument when a member is not an HTP device, is listed
// twice, or there are fewer than two or more than 64.
std::unique_ptr<backend_device> make_htp_group_device(const std::vector<backend_device *> & members);

class output_file;

// Writes the batches the registered HTP devices profiled as a Perfetto-loadable JSON trace, through
// output_file (a temporary next to path and an atomic rename). Throws output_error (a
// std::runtime_error) when the file cannot be written.
void write_htp_trace(const std::string & path);
// The same into an output_file the caller created (and checked) before the work; the caller commits.
void write_htp_trace(output_file & out);

} // namespace hexnpu
