// The virtual NPU's DMA engine, strict (architecture.md §3): one in-order hardware queue per HVX
// thread. A descriptor is validated when it is submitted: the arch's field widths, exactly one side
// in VTCM and inside it, the other side inside one mapped window buffer. At submit the destination is
// poisoned (0xA5) and the source copied; the copy lands at wait(), so a kernel that reads a buffer
// before popping it sees poison. A VTCM source that changed between submit and wait, and a queue
// not drained when its op returns, are violations too. Violations are collected with a message that
// names the rule, the queue and the addresses. With strict bookkeeping off (HEXNPU_STRICT=0, for
// benchmarks) descriptors are still validated, but a transfer is copied at submit: no poison, no
// snapshot, no source check, no in-flight list.
#pragma once

#include "htp/platform.h"
#include "proto/htp-msg.h"
#include "proto/hw-model.h"
#include "session-window.h"

#include <array>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace hexnpu::vnpu {

inline constexpr uint8_t DMA_POISON = 0xA5;

class dma_engine {
  public:
    dma_engine(const proto::hw_model & hw, uint8_t * vtcm, uint32_t vtcm_size, const session_window & window,
               bool strict);

    // htp::platform::dma_submit / dma_wait: 0, or HTP_STATUS_STRICT after recording a violation.
    int submit(uint32_t queue, const htp::dma_desc & d, uint64_t * ticket);
    int wait(uint32_t queue, uint64_t ticket);

    // After an op: flags queues still holding transfers and abandons them. Returns HTP_STATUS_OK,
    // or HTP_STATUS_STRICT with the violations since the last call in *message (and forgets them).
    uint32_t op_done(std::string * message);

    // While on, every transfer's DDR destination rows are recorded (the group write check exempts
    // what DMA wrote). take_ddr_writes hands over and clears what each queue recorded.
    struct ddr_rows {
        const uint8_t * dst;
        uint32_t        row_size, nrows, stride;
    };
    void track_ddr_writes(bool on) { track_ddr_ = on; }
    void take_ddr_writes(std::vector<ddr_rows> * out);

    // A short description of an address: "vtcm+0x..", "npu 0x.." or "host 0x..".
    std::string describe(const void * p) const;

  private:
    struct transfer {
        uint64_t             ticket;
        htp::dma_desc        d;
        bool                 src_in_vtcm;
        std::vector<uint8_t> snapshot;  // the source rows, packed
    };
    struct hw_queue {
        uint64_t                          next_ticket = 1;
        std::deque<transfer>              in_flight;
        std::vector<std::vector<uint8_t>> spare;  // snapshot storage to reuse
        // The mapped buffer the last DDR side lay in, valid while the window's unmap count is
        // buffer_unmaps (the queue's thread alone uses it).
        const uint8_t * buffer_lo     = nullptr;
        const uint8_t * buffer_hi     = nullptr;
        uint64_t        buffer_unmaps = ~uint64_t(0);
        ptrdiff_t       buffer_to_view = 0;  // nonzero: an extended buffer, reached through its view
        std::vector<ddr_rows> ddr_writes;  // while track_ddr_ (this queue's thread alone appends)
    };

    // The rule a descriptor breaks; checked for every descriptor, so no strings on the valid path.
    enum class fault { none, size_1d, fields_2d, vtcm_bounds, both_vtcm, neither_vtcm, unmapped };
    // *to_view: what to add to the DDR side's address to reach its bytes (an extended buffer's view).
    fault       check(hw_queue & q, const htp::dma_desc & d, ptrdiff_t * to_view) const;
    std::string fault_text(fault f) const;
    void        record(std::string message);
    bool        complete(uint32_t queue, transfer & t);  // false: the VTCM source changed
    bool        overlaps_vtcm(const uint8_t * p, uint64_t len) const;
    bool        in_vtcm(const uint8_t * p, uint64_t len) const;
    std::string describe_desc(uint32_t queue, const htp::dma_desc & d) const;

    proto::hw_model                                  hw_;
    uint8_t *                                        vtcm_;
    uint32_t                                         vtcm_size_;
    const session_window &                           window_;
    bool                                             strict_;
    bool                                             track_ddr_ = false;
    std::array<hw_queue, proto::HTP_MAX_NTHREADS>    queues_;
    std::mutex                                       violations_mutex_;
    std::string                                      violations_;
};

} // namespace hexnpu::vnpu
