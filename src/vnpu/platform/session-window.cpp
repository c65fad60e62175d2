#include "session-window.h"

#include "htp/platform.h"

#include <iterator>
#include <mutex>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hexnpu::vnpu {

namespace {

uint64_t page_size() { return uint64_t(sysconf(_SC_PAGESIZE)); }

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool make_inaccessible(uint8_t * p, uint64_t len) {
    return mmap(p, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) != MAP_FAILED;
}

} // namespace

std::unique_ptr<session_window> session_window::reserve(uint64_t usable_size, std::string * error) {
    const uint64_t page = page_size();
    if (usable_size < 2 * page || usable_size > RESERVED_SIZE || usable_size % page != 0) {
        *error = "session window: usable size must be a multiple of the page size in [2 pages, 4 GiB]";
        return nullptr;
    }
    void * p = mmap(nullptr, RESERVED_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        *error = "session window: cannot reserve 4 GiB of address space";
        return nullptr;
    }
    return std::unique_ptr<session_window>(new session_window(static_cast<uint8_t *>(p), usable_size));
}

session_window::session_window(uint8_t * base, uint64_t usable_size) : base_(base), usable_size_(usable_size) {
    const uint64_t page = page_size();
    free_.emplace(page, usable_size - page);
}

session_window::~session_window() { munmap(base_, RESERVED_SIZE); }

int session_window::map(int fd, uint64_t size, uint32_t * npu_addr) {
    struct stat st;
    if (size == 0 || fstat(fd, &st) != 0 || uint64_t(st.st_size) < size) {
        return htp::MAP_BAD_BUFFER;
    }
    const uint64_t len = round_up(size, page_size());
    std::unique_lock lock(mutex_);
    auto             hole = free_.begin();
    while (hole != free_.end() && hole->second < len) {
        ++hole;
    }
    if (hole == free_.end()) {
        return htp::MAP_NO_ROOM;
    }
    const uint64_t start = hole->first;
    if (mmap(base_ + start, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
        make_inaccessible(base_ + start, len);
        return htp::MAP_BAD_BUFFER;
    }
    const uint64_t rest = hole->second - len;
    free_.erase(hole);
    if (rest != 0) {
        free_.emplace(start + len, rest);
    }
    mapped_.emplace(start, mapping{len, size});
    *npu_addr = uint32_t(start);
    return 0;
}

int session_window::unmap(uint32_t npu_addr, uint64_t size) {
    std::unique_lock lock(mutex_);
    const auto       it = mapped_.find(npu_addr);
    if (it == mapped_.end() || it->second.size != size) {
        return -1;
    }
    uint64_t start = it->first;
    uint64_t len   = it->second.len;
    make_inaccessible(base_ + start, len);
    mapped_.erase(it);
    unmaps_.fetch_add(1, std::memory_order_release);
    // Give the range back, merged with its free neighbours.
    auto next = free_.lower_bound(start);
    if (next != free_.end() && next->first == start + len) {
        len += next->second;
        next = free_.erase(next);
    }
    if (next != free_.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == start) {
            start = prev->first;
            len += prev->second;
            free_.erase(prev);
        }
    }
    free_.emplace(start, len);
    return 0;
}

bool session_window::is_mapped(const uint8_t * p, uint64_t len) const {
    const uint8_t *lo, *hi;
    return mapped_buffer_of(p, len, &lo, &hi);
}

bool session_window::mapped_buffer_of(const uint8_t * p, uint64_t len, const uint8_t ** lo, const uint8_t ** hi) const {
    if (p < base_ || p >= base_ + usable_size_) {
        return false;
    }
    const uint64_t   a = uint64_t(p - base_);
    std::shared_lock lock(mutex_);
    auto             it = mapped_.upper_bound(a);
    if (it == mapped_.begin()) {
        return false;
    }
    --it;
    const uint64_t size = it->second.size;
    if (a - it->first > size || len > size - (a - it->first)) {
        return false;
    }
    *lo = base_ + it->first;
    *hi = base_ + it->first + size;
    return true;
}

bool session_window::npu_address_of(const void * p, uint32_t * npu_addr) const {
    const uint8_t * b = static_cast<const uint8_t *>(p);
    if (b < base_ || b >= base_ + RESERVED_SIZE) {
        return false;
    }
    *npu_addr = uint32_t(b - base_);
    return true;
}

size_t session_window::mapping_count() const {
    std::shared_lock lock(mutex_);
    return mapped_.size();
}

uint64_t session_window::mapped_bytes() const {
    std::shared_lock lock(mutex_);
    uint64_t         total = 0;
    for (const auto & [start, m] : mapped_) {
        total += m.size;
    }
    return total;
}

} // namespace hexnpu::vnpu
