// The host backend's options, read once from the environment with upstream's GGML_HEXAGON_* names
// (shared/design/upstream-reference.md §3.10): which sessions become devices, and how every session
// runs (threads, HMX, window budget, batch limits, logging, profiling, op filter).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace hexnpu::hexagon {

inline constexpr uint32_t HTP_MAX_SESSIONS = 16;

// One device: an NPU session. Named "HTP<npu>:<session>" when listed through GGML_HEXAGON_DEVICES,
// "HTP<session>" in the legacy GGML_HEXAGON_NDEV naming.
struct htp_device_spec {
    std::string name;
    uint32_t    npu     = 0;
    uint32_t    session = 0;
};

// A device group (row split) named in GGML_HEXAGON_DEVICES with upstream's brackets: one device to
// the scheduler and to llama.cpp over the sessions it lists (indices into htp_options::devices).
struct htp_group_spec {
    std::string           name;
    std::vector<uint32_t> members;
};

enum class htp_profile_mode : uint32_t { off = 0, basic = 1, pmu = 2, trace = 3 };

struct htp_options {
    std::vector<htp_device_spec> devices;     // every session, group members included, in list order
    std::vector<htp_group_spec>  groups;      // the bracketed items; their members are no device of their own
    std::optional<uint32_t>      arch;        // GGML_HEXAGON_ARCH: forces libhexnpu-htp-vNN.so
    uint32_t                     n_hvx   = 0;  // 0: all the session reports
    uint32_t                     n_hmx   = 1;  // 0 disables the HMX paths
    // GGML_HEXAGON_MM_SELECT: 3 HMX for more than HTP_MM_HMX_MIN_ROWS activation rows, else HVX
    // tiled or flat; 4 HMX wherever it applies, any row count (tests); 2 HVX tiled or flat; 1 HVX
    // flat only (REPACK buffers keep weights flat); 0 no NPU matmul (and no REPACK buffer type).
    uint32_t                     mm_select = 3;
    // GGML_HEXAGON_FA_SELECT (upstream's encoding, plus 3): 2 HMX for prompts (from
    // HTP_FA_HMX_MIN_ROWS query rows, where the session has HMX and the HMX kernel takes the op)
    // else HVX; 3 HMX for every row count it takes (tests); 1 HVX only; 0 flash attention on the CPU.
    uint32_t                     fa_select = 2;
    // GGML_HEXAGON_GDN_SELECT (upstream's encoding): 2 HMX for prompts, else HVX; 1 HVX only; 0
    // GATED_DELTA_NET on the CPU. hexnpu has the HVX kernel only, so 2 runs it as 1 does.
    uint32_t                     gdn_select = 2;
    std::optional<uint64_t>      vmem;         // bytes mapped per batch; unset: the arch's default; 0: the window
    uint64_t                     max_buffer = uint64_t(1024) << 20;  // GGML_HEXAGON_MBUF
    uint32_t                     op_batch   = 1024;                  // ops per batch
    uint32_t                     op_queue   = 16;                    // batches in flight
    uint32_t                     op_trace   = 0;                     // trace records per thread; 0: 256 per op
    // GGML_HEXAGON_OPSTAGE: bit 0 sends the ops to the NPU (else graph_compute returns at once),
    // bit 1 computes them (else the NPU skips each op's compute): for measuring the overheads.
    uint32_t                     op_stage   = 3;
    // GGML_HEXAGON_HOSTBUF: compute buffers are host buffers (the CPU backend reads them in place).
    // Unset: the registering program's default (hexnpu's tools: on; the GGML plugin: off, as
    // upstream, since llama.cpp's tensor split cannot load weights into host buffers it wraps).
    std::optional<bool>          host_buffers;
    bool                         op_poll    = false;  // GGML_HEXAGON_OPPOLL: poll for responses instead of sleeping
    uint32_t                     verbose    = 0;
    // GGML_HEXAGON_OPFUSION: fuse RMS_NORM and the MUL by its weight into one NPU op (RMS_NORM_MUL)
    // where the norm has no other reader.
    bool                         op_fusion  = true;
    // GGML_HEXAGON_FENCE_TIMEOUT (ms): how long a device group's member waits at a barrier for a
    // peer before the op fails with FENCE_TIMEOUT; 0: half the session deadline.
    uint32_t                     fence_timeout_ms = 0;
    // GGML_HEXAGON_AR_SELECT (upstream's encoding): 2 and 1, the tensor split's all-reduce is an
    // ALLREDUCE on the NPU (upstream's 2 also fuses the next ADD, which the plugin cannot see: 2
    // runs as 1); 0, llama.cpp's fallback (copies between the devices and ADD graphs).
    uint32_t                     ar_select  = 2;
    // GGML_HEXAGON_DMA64: 0 keeps every buffer in the session window; 1 (the default where the arch
    // has 64-bit DMA, v81) maps the weights only DMA reads into the extended region beside it. An
    // arch without 64-bit DMA has no extended region whatever this says.
    std::optional<bool>          dma64;
    htp_profile_mode             profile    = htp_profile_mode::off;
    bool                         collect_trace = false;  // record trace events whatever the mode (--trace)
    std::string                  op_filter;    // the regex text, for messages
    std::shared_ptr<const std::regex> op_filter_re;  // case-insensitive, matched against the whole op desc

    // upstream's defaults: 3000 MiB on v73, 3200 MiB on newer arches.
    uint64_t vmem_for_arch(uint32_t arch) const;
    bool     filtered_out(const char * op_desc) const;
};

// Reads every option through `getenv` (std::getenv by default). Throws std::invalid_argument naming
// the variable and the bad value or list item.
htp_options parse_htp_options(const std::function<const char *(const char *)> & getenv);
htp_options htp_options_from_environment();

// GGML_HEXAGON_DEVICES: a count N (HTP0:0..HTP0:N-1), or a list of items "HTP<npu>:<session>" and
// upstream's groups "HTP<n>[<npus>]" / "HTP<n>[<npus>:<session>]" (npus: "0-1", "0,2", session 0
// when not given): HTP0[0-1] is one device over sessions HTP0:0 and HTP1:0.
struct htp_device_list {
    std::vector<htp_device_spec> devices;
    std::vector<htp_group_spec>  groups;
};
htp_device_list parse_device_list(const std::string & text);
// "v79" or "79"; one of the arches the NPU libraries are built for.
uint32_t parse_arch(const std::string & text);

} // namespace hexnpu::hexagon
