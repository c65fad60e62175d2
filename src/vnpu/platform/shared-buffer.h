// A shared DDR buffer (the rpcmem analog): a memfd region mapped into this process, passed to
// sessions by file descriptor.
#pragma once

#include <cstdint>

namespace hexnpu::vnpu {

class shared_buffer {
  public:
    // Throws std::system_error when the memfd cannot be created, sized or mapped.
    explicit shared_buffer(uint64_t size);
    ~shared_buffer();

    shared_buffer(shared_buffer && other) noexcept;
    shared_buffer & operator=(shared_buffer && other) noexcept;
    shared_buffer(const shared_buffer &)             = delete;
    shared_buffer & operator=(const shared_buffer &) = delete;

    int       fd() const { return fd_; }
    uint8_t * data() const { return data_; }
    uint64_t  size() const { return size_; }

  private:
    void release();

    int       fd_   = -1;
    uint8_t * data_ = nullptr;
    uint64_t  size_ = 0;
};

} // namespace hexnpu::vnpu
