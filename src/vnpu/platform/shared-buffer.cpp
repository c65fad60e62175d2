#include "shared-buffer.h"

#include <cerrno>
#include <sys/mman.h>
#include <system_error>
#include <unistd.h>
#include <utility>

namespace hexnpu::vnpu {

shared_buffer::shared_buffer(uint64_t size) : size_(size) {
    fd_ = memfd_create("hexnpu-ddr", MFD_CLOEXEC);
    if (fd_ < 0) {
        throw std::system_error(errno, std::generic_category(), "memfd_create");
    }
    if (ftruncate(fd_, off_t(size)) != 0) {
        const int err = errno;
        release();
        throw std::system_error(err, std::generic_category(), "ftruncate");
    }
    void * p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) {
        const int err = errno;
        release();
        throw std::system_error(err, std::generic_category(), "mmap");
    }
    data_ = static_cast<uint8_t *>(p);
}

shared_buffer::~shared_buffer() { release(); }

shared_buffer::shared_buffer(shared_buffer && other) noexcept
    : fd_(std::exchange(other.fd_, -1)), data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

shared_buffer & shared_buffer::operator=(shared_buffer && other) noexcept {
    if (this != &other) {
        release();
        fd_   = std::exchange(other.fd_, -1);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

void shared_buffer::release() {
    if (data_ != nullptr) {
        munmap(data_, size_);
        data_ = nullptr;
    }
    if (fd_ >= 0) {
        close(fd_);
        fd_ = -1;
    }
}

} // namespace hexnpu::vnpu
