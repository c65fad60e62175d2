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
        // bytes and start are at most 2^32, so the product fits 64 bits: a nonsense request fails
        // rather than wraps around (and there is no 64-bit division, a library call on Hexagon).
        const uint64_t total = bytes > size_ ? 0 : vtcm_round_up(bytes, align) * count;
        if (failed_ || start > size_ || bytes > size_ || total > size_ - start) {
            failed_ = true;
            return nullptr;
        }
        used_ = start + total;
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
