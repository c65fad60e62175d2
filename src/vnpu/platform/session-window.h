// A session's 32-bit NPU address window: a reserved 4 GiB PROT_NONE region of which the first
// usable_size bytes hold mapped shared buffers. NPU address a lives at base() + a. Buffers are
// mapped (mmap MAP_FIXED of their memfd) at addresses chosen first-fit over the free ranges, and
// unmapped back to PROT_NONE, so a stale or wild access faults as it would on the device. Address
// 0 (the first page) is never handed out.
#pragma once

#include <cstdint>
#include <atomic>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>

namespace hexnpu::vnpu {

class session_window {
  public:
    static constexpr uint64_t RESERVED_SIZE = uint64_t(1) << 32;

    // nullptr (and *error) when usable_size is out of range or the reservation fails.
    static std::unique_ptr<session_window> reserve(uint64_t usable_size, std::string * error);
    ~session_window();

    session_window(const session_window &)             = delete;
    session_window & operator=(const session_window &) = delete;

    uint8_t * base() const { return base_; }
    uint64_t  usable_size() const { return usable_size_; }

    // htp::platform::map_buffer semantics: 0, MAP_NO_ROOM or MAP_BAD_BUFFER.
    int map(int fd, uint64_t size, uint32_t * npu_addr);
    // 0, or -1 when no buffer of that size is mapped at npu_addr.
    int unmap(uint32_t npu_addr, uint64_t size);

    // Whether [p, p + len) lies inside one mapped buffer.
    bool is_mapped(const uint8_t * p, uint64_t len) const;
    // The mapped buffer [*lo, *hi) holding [p, p + len), or false. Stays valid until the next unmap
    // (unmap_count changes): callers may cache it.
    bool mapped_buffer_of(const uint8_t * p, uint64_t len, const uint8_t ** lo, const uint8_t ** hi) const;
    uint64_t unmap_count() const { return unmaps_.load(std::memory_order_acquire); }
    // The NPU address of p when p lies in the reserved region (mapped or not).
    bool npu_address_of(const void * p, uint32_t * npu_addr) const;

    size_t   mapping_count() const;
    uint64_t mapped_bytes() const;

  private:
    session_window(uint8_t * base, uint64_t usable_size);

    uint8_t *                      base_;
    uint64_t                       usable_size_;
    mutable std::shared_mutex      mutex_;
    std::atomic<uint64_t>          unmaps_{0};
    struct mapping {
        uint64_t len;   // whole pages
        uint64_t size;  // the buffer's size
    };
    std::map<uint64_t, uint64_t> free_;    // start -> length, page-aligned, coalesced
    std::map<uint64_t, mapping>  mapped_;  // by start
};

} // namespace hexnpu::vnpu
