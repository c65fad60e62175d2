// Writes profiled batches as a Chrome trace event JSON file that Perfetto UI (and chrome://tracing)
// opens: one process per device, a track per HVX thread, per thread's DMA waits, for the HMX thread,
// and one for the ops. NPU cycles become microseconds at the rate the batches' own clocks give.
#pragma once

#include "htp-profile.h"

#include <ostream>
#include <string>
#include <vector>

namespace hexnpu::hexagon {

struct htp_trace_source {
    std::string                    device;   // process name: "HTP0"
    std::vector<htp_batch_profile> batches;
};

void write_trace_json(std::ostream & out, const std::vector<htp_trace_source> & sources);

} // namespace hexnpu::hexagon
