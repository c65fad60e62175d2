// VTCM layout: an op carves its scratch areas out of the session's VTCM with a bump allocator.
// Every take() is bounds-checked; a layout that does not fit leaves the arena failed and the op
// returns HTP_STATUS_VTCM_TOO_SMALL before touching anything.
#pragma once

#include <stdint.h>

namespace hexnpu::htp {

inline constexpr uint32_t VTCM_ALIGN = 128;  // one HVX vector

inline constexpr uint64_t vtcm_round_up(uint64_t bytes, uint32_t align) { return (bytes + align - 1) / align * align; }

class vtcm_arena {
  public:
    vtcm_arena(uint8_t * base, uint32_t size) : base_(base), size_(size) {}

    // count areas of bytes each, every one aligned; nullptr (and the arena failed) when they do not fit.
    uint8_t * take(uint64_t bytes, uint32_t count = 1, uint32_t align = VTCM_ALIGN) {
        const uint64_t start = vtcm_round_up(used_, align);
        // Divided rather than multiplied: a nonsense request must fail, not wrap around.
        if (failed_ || start > size_ || bytes > size_ ||
            (count != 0 && vtcm_round_up(bytes, align) > (size_ - start) / count)) {
            failed_ = true;
            return nullptr;
        }
        used_ = start + vtcm_round_up(bytes, align) * count;
        return base_ + start;
    }

    bool     ok() const { return !failed_; }
    uint64_t used() const { return used_; }

  private:
    uint8_t * base_;
    uint64_t  size_;
    uint64_t  used_   = 0;
    bool      failed_ = false;
};

} // namespace hexnpu::htp
