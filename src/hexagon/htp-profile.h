// What GGML_HEXAGON_PROFILE collects: per-op time and cycles of every batch (modes 1 and 2) and the
// NPU's trace events (mode 3), kept per device until written out as a Perfetto trace
// (htp-trace-json.h).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace hexnpu::hexagon {

struct htp_op_profile {
    std::string label;  // "ADD 'node'"
    uint32_t    opcode = 0;
    uint32_t    usecs  = 0;
    uint64_t    cycles_start = 0;
    uint64_t    cycles_stop  = 0;
    // The op's DMA (proto::htp_prof_desc): hardware descriptors, bytes into / out of VTCM, DDR to DDR.
    uint32_t    dma_descs     = 0;
    uint64_t    dma_to_vtcm   = 0;
    uint64_t    dma_from_vtcm = 0;
    uint64_t    dma_ddr       = 0;
};

// One trace event with its cycle stamp widened to the batch's 64-bit clock.
struct htp_trace_event {
    uint64_t cycles = 0;
    uint32_t slot   = 0;  // thread slot: HVX threads 0.., then the HMX thread
    uint16_t id     = 0;
    uint16_t info   = 0;  // progress index (stop bit cleared)
    bool     stop   = false;
};

struct htp_batch_profile {
    uint32_t                     id = 0;
    uint64_t                     usecs = 0;
    uint64_t                     cycles_start = 0;
    uint64_t                     cycles_stop  = 0;
    std::vector<htp_op_profile>  ops;
    std::vector<htp_trace_event> events;
};

// The batches one device ran while profiling; filled by its backends, read by the trace writer.
class htp_profile_log {
  public:
    void                           add(htp_batch_profile batch);
    std::vector<htp_batch_profile> batches() const;
    void                           clear();

  private:
    mutable std::mutex             mutex_;
    std::vector<htp_batch_profile> batches_;
};

// What a session's window did (the sliding window over buffers larger than it): counted for every
// batch, profiling or not.
struct htp_window_stats {
    uint64_t batches     = 0;
    uint64_t maps        = 0;
    uint64_t unmaps      = 0;
    uint64_t map_bytes   = 0;
    uint64_t unmap_bytes = 0;
    uint64_t ext_maps      = 0;  // of the maps, those in the extended region (v81, DMA only)
    uint64_t ext_map_bytes = 0;
};

// Widens a 32-bit trace stamp to 64 bits, given a 64-bit clock value taken shortly before it.
constexpr uint64_t widen_cycles(uint32_t stamp, uint64_t before) {
    return before + uint32_t(stamp - uint32_t(before));
}

} // namespace hexnpu::hexagon
