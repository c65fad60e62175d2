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

bool buffer_fits(int fd, uint64_t size) {
    struct stat st;
    return size != 0 && fstat(fd, &st) == 0 && uint64_t(st.st_size) >= size;
}

} // namespace

bool session_window::region::take(uint64_t len, uint64_t * start) {
    auto hole = free.begin();
    while (hole != free.end() && hole->second < len) {
        ++hole;
    }
    if (hole == free.end()) {
        return false;
    }
    *start              = hole->first;
    const uint64_t rest = hole->second - len;
    free.erase(hole);
    if (rest != 0) {
        free.emplace(*start + len, rest);
    }
    return true;
}

// Gives the range back, merged with its free neighbours.
void session_window::region::give_back(uint64_t start, uint64_t len) {
    auto next = free.lower_bound(start);
    if (next != free.end() && next->first == start + len) {
        len += next->second;
        next = free.erase(next);
    }
    if (next != free.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == start) {
            start = prev->first;
            len += prev->second;
            free.erase(prev);
        }
    }
    free.emplace(start, len);
}

bool session_window::region::find(uint64_t a, uint64_t len, uint64_t * start, uint64_t * size) const {
    auto it = mapped.upper_bound(a);
    if (it == mapped.begin()) {
        return false;
    }
    --it;
    if (a - it->first > it->second.size || len > it->second.size - (a - it->first)) {
        return false;
    }
    *start = it->first;
    *size  = it->second.size;
    return true;
}

std::unique_ptr<session_window> session_window::reserve(uint64_t usable_size, uint64_t extended_size,
                                                        std::string * error) {
    const uint64_t page = page_size();
    if (usable_size < 2 * page || usable_size > RESERVED_SIZE || usable_size % page != 0) {
        *error = "session window: usable size must be a multiple of the page size in [2 pages, 4 GiB]";
        return nullptr;
    }
    if (extended_size % page != 0) {
        *error = "session window: the extended region must be whole pages";
        return nullptr;
    }
    void * p = mmap(nullptr, RESERVED_SIZE + extended_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        *error = "session window: cannot reserve 4 GiB of address space (and the extended region)";
        return nullptr;
    }
    void * view = nullptr;
    if (extended_size != 0) {
        view = mmap(nullptr, extended_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (view == MAP_FAILED) {
            munmap(p, RESERVED_SIZE + extended_size);
            *error = "session window: cannot reserve the extended region's DMA view";
            return nullptr;
        }
    }
    return std::unique_ptr<session_window>(
        new session_window(static_cast<uint8_t *>(p), usable_size, static_cast<uint8_t *>(view), extended_size));
}

session_window::session_window(uint8_t * base, uint64_t usable_size, uint8_t * ext_view, uint64_t ext_size)
    : base_(base), usable_size_(usable_size), ext_view_(ext_view), ext_size_(ext_size) {
    const uint64_t page = page_size();
    window_.free.emplace(page, usable_size - page);
    if (ext_size != 0) {
        extended_.free.emplace(0, ext_size);
    }
}

session_window::~session_window() {
    munmap(base_, RESERVED_SIZE + ext_size_);
    if (ext_view_ != nullptr) {
        munmap(ext_view_, ext_size_);
    }
}

// Maps the buffer into region r, whose offsets are addresses from `at` (the window itself, or the
// extended region's view: its NPU addresses stay PROT_NONE, as the reservation left them).
int session_window::map_in(region & r, uint8_t * at, int fd, uint64_t size, uint64_t * start) {
    if (!buffer_fits(fd, size)) {
        return htp::MAP_BAD_BUFFER;
    }
    const uint64_t len = round_up(size, page_size());
    std::unique_lock lock(mutex_);
    if (!r.take(len, start)) {
        return htp::MAP_NO_ROOM;
    }
    if (mmap(at + *start, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
        make_inaccessible(at + *start, len);
        r.give_back(*start, len);
        return htp::MAP_BAD_BUFFER;
    }
    r.mapped.emplace(*start, mapping{len, size});
    return 0;
}

int session_window::unmap_in(region & r, uint8_t * at, uint64_t start, uint64_t size) {
    std::unique_lock lock(mutex_);
    const auto       it = r.mapped.find(start);
    if (it == r.mapped.end() || it->second.size != size) {
        return -1;
    }
    const uint64_t len = it->second.len;
    make_inaccessible(at + start, len);
    r.mapped.erase(it);
    unmaps_.fetch_add(1, std::memory_order_release);
    r.give_back(start, len);
    return 0;
}

int session_window::map(int fd, uint64_t size, uint32_t * npu_addr) {
    uint64_t  start = 0;
    const int rc    = map_in(window_, base_, fd, size, &start);
    *npu_addr       = rc == 0 ? uint32_t(start) : 0;
    return rc;
}

int session_window::unmap(uint32_t npu_addr, uint64_t size) { return unmap_in(window_, base_, npu_addr, size); }

int session_window::map_extended(int fd, uint64_t size, uint64_t * npu_addr) {
    uint64_t  start = 0;
    const int rc    = ext_size_ != 0 ? map_in(extended_, ext_view_, fd, size, &start) : htp::MAP_NO_ROOM;
    *npu_addr       = rc == 0 ? RESERVED_SIZE + start : 0;
    return rc;
}

int session_window::unmap_extended(uint64_t npu_addr, uint64_t size) {
    return npu_addr < RESERVED_SIZE ? -1 : unmap_in(extended_, ext_view_, npu_addr - RESERVED_SIZE, size);
}

bool session_window::is_mapped(const uint8_t * p, uint64_t len) const {
    const uint8_t *lo, *hi;
    return mapped_buffer_of(p, len, &lo, &hi);
}

bool session_window::mapped_buffer_of(const uint8_t * p, uint64_t len, const uint8_t ** lo, const uint8_t ** hi) const {
    if (p < base_ || p >= base_ + usable_size_) {
        return false;
    }
    std::shared_lock lock(mutex_);
    uint64_t         start = 0, size = 0;
    if (!window_.find(uint64_t(p - base_), len, &start, &size)) {
        return false;
    }
    *lo = base_ + start;
    *hi = base_ + start + size;
    return true;
}

bool session_window::extended_buffer_of(const uint8_t * p, uint64_t len, const uint8_t ** lo, const uint8_t ** hi,
                                        ptrdiff_t * to_view) const {
    const uint8_t * ext = base_ + RESERVED_SIZE;
    if (ext_size_ == 0 || p < ext || p >= ext + ext_size_) {
        return false;
    }
    std::shared_lock lock(mutex_);
    uint64_t         start = 0, size = 0;
    if (!extended_.find(uint64_t(p - ext), len, &start, &size)) {
        return false;
    }
    *lo      = ext + start;
    *hi      = ext + start + size;
    *to_view = ext_view_ - ext;
    return true;
}

bool session_window::npu_address_of(const void * p, uint64_t * npu_addr) const {
    const uint8_t * b = static_cast<const uint8_t *>(p);
    if (b < base_ || b >= base_ + RESERVED_SIZE + ext_size_) {
        return false;
    }
    *npu_addr = uint64_t(b - base_);
    return true;
}

size_t session_window::mapping_count() const {
    std::shared_lock lock(mutex_);
    return window_.mapped.size() + extended_.mapped.size();
}

uint64_t session_window::mapped_bytes() const {
    std::shared_lock lock(mutex_);
    uint64_t         total = 0;
    for (const region * r : {&window_, &extended_}) {
        for (const auto & [start, m] : r->mapped) {
            total += m.size;
        }
    }
    return total;
}

} // namespace hexnpu::vnpu
