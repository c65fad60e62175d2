// A session's 32-bit NPU address window: a reserved 4 GiB PROT_NONE region of which the first
// usable_size bytes hold mapped shared buffers. NPU address a lives at base() + a. Buffers are
// mapped (mmap MAP_FIXED of their memfd) at addresses chosen first-fit over the free ranges, and
// unmapped back to PROT_NONE, so a stale or wild access faults as it would on the device. Address
// 0 (the first page) is never handed out.
//
// The extended region (v81's FASTRPC_MAP_FD_DELAYED_EXTENDED, 64-bit DMA): NPU addresses from
// 4 GiB on, right after the window, where buffers are mapped for DMA only. The extended address
// itself stays inaccessible (PROT_NONE over the buffer), so an HVX or scalar access faults as it
// would on the device; DMA reaches the buffer through a private view of it (dma_view).
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
    // extended_size: bytes of the extended region (0: none).
    static std::unique_ptr<session_window> reserve(uint64_t usable_size, uint64_t extended_size, std::string * error);
    ~session_window();

    session_window(const session_window &)             = delete;
    session_window & operator=(const session_window &) = delete;

    uint8_t * base() const { return base_; }
    uint64_t  usable_size() const { return usable_size_; }

    // htp::platform::map_buffer semantics: 0, MAP_NO_ROOM or MAP_BAD_BUFFER.
    int map(int fd, uint64_t size, uint32_t * npu_addr);
    // 0, or -1 when no buffer of that size is mapped at npu_addr.
    int unmap(uint32_t npu_addr, uint64_t size);

    // The extended region: map/unmap as above, NPU addresses >= 4 GiB.
    uint64_t extended_size() const { return ext_size_; }
    int      map_extended(int fd, uint64_t size, uint64_t * npu_addr);
    int      unmap_extended(uint64_t npu_addr, uint64_t size);
    // When [p, p + len) lies inside one buffer mapped in the extended region: its extent there
    // [*lo, *hi) and the offset that turns an address there into the buffer's DMA view.
    bool     extended_buffer_of(const uint8_t * p, uint64_t len, const uint8_t ** lo, const uint8_t ** hi,
                                ptrdiff_t * to_view) const;

    // Whether [p, p + len) lies inside one mapped buffer.
    bool is_mapped(const uint8_t * p, uint64_t len) const;
    // The mapped buffer [*lo, *hi) holding [p, p + len), or false. Stays valid until the next unmap
    // (unmap_count changes): callers may cache it.
    bool mapped_buffer_of(const uint8_t * p, uint64_t len, const uint8_t ** lo, const uint8_t ** hi) const;
    uint64_t unmap_count() const { return unmaps_.load(std::memory_order_acquire); }
    // The NPU address of p when p lies in the reserved window or the extended region (mapped or not).
    bool npu_address_of(const void * p, uint64_t * npu_addr) const;

    size_t   mapping_count() const;
    uint64_t mapped_bytes() const;

  private:
    session_window(uint8_t * base, uint64_t usable_size, uint8_t * ext_view, uint64_t ext_size);

    struct mapping {
        uint64_t len;   // whole pages
        uint64_t size;  // the buffer's size
    };
    // Free ranges (start -> length, page-aligned, coalesced) and mappings (by start) of one region.
    struct region {
        std::map<uint64_t, uint64_t> free;
        std::map<uint64_t, mapping>  mapped;
        bool take(uint64_t len, uint64_t * start);  // first fit
        void give_back(uint64_t start, uint64_t len);
        bool find(uint64_t a, uint64_t len, uint64_t * start, uint64_t * size) const;
    };

    int map_in(region & r, uint8_t * at, int fd, uint64_t size, uint64_t * start);
    int unmap_in(region & r, uint8_t * at, uint64_t start, uint64_t size);

    uint8_t *                      base_;
    uint64_t                       usable_size_;
    uint8_t *                      ext_view_;  // the extended buffers' DMA views, at the same offsets
    uint64_t                       ext_size_;
    mutable std::shared_mutex      mutex_;
    std::atomic<uint64_t>          unmaps_{0};
    region                         window_;
    region                         extended_;  // offsets from 4 GiB
};

} // namespace hexnpu::vnpu
