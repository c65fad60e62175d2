// The virtual NPU's strict check of a device group's writes (spec, "128-Byte Cache Line
// Alignment"): two members never write the same 128-byte DDR line through HVX/L2 during one op;
// DMA writes are exempt. Members share DDR, so a member cannot tell its own stores from a peer's by
// looking at memory while they run together: in strict mode the members take turns within each op
// (member k starts once member k-1 has finished it; the fence slot's `turn` word). A member
// snapshots the op's outputs before it runs, and after it the lines that changed, less those its
// DMA wrote, are its HVX/L2 lines; it logs them (as buffer index and line, the same for every
// member) in its part of the fence buffer. After the op's barrier every member compares its lines
// with every peer's: a line both wrote fails the op with STRICT and a message naming it.
#pragma once

#include "dma-engine.h"

#include "htp/platform.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hexnpu::vnpu {

class group_write_check {
  public:
    explicit group_write_check(dma_engine & dma) : dma_(dma) {}

    // htp::platform::mdev_check; *message gets the violation or the timeout.
    uint32_t run(const htp::platform & plat, uint32_t phase, const htp::mdev_write_check & c, std::string * message);

  private:
    struct line_run {
        uint32_t bi;
        uint32_t first;  // buffer offset / 128
        uint32_t count;
        uint32_t pad;
    };
    uint32_t begin(const htp::platform & plat, const htp::mdev_write_check & c, std::string * message);
    uint32_t end(const htp::platform & plat, const htp::mdev_write_check & c);
    uint32_t peers(const htp::mdev_write_check & c, std::string * message) const;

    dma_engine &                      dma_;
    std::vector<std::vector<uint8_t>> snapshots_;  // per output, its bytes before the op
    std::vector<line_run>             mine_;
    uint32_t                          began_seq_ = 0;  // the op the snapshots belong to
    bool                              began_     = false;
};

} // namespace hexnpu::vnpu
