// The dspqueue analog: two single-producer single-consumer rings of fixed-size message slots in one
// memfd region that the client and the session both map. Requests flow client -> session,
// responses session -> client. Each message carries up to QUEUE_MAX_BUFFERS buffer references
// (host fd id, offset, size) next to its bytes. A reader with nothing to read and a writer with no
// room sleep on a futex "doorbell" the other side rings, so an idle queue costs no CPU; close()
// rings both doorbells so no one sleeps on a queue whose peer is gone.
#pragma once

#include "unix-channel.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace hexnpu::vnpu::wire {

struct queue_buffer {
    int32_t  fd;  // the client's fd number, as registered with fastrpc_mmap
    uint32_t flags;
    uint64_t offset;
    uint64_t size;
};
inline constexpr uint32_t QUEUE_MAX_BUFFERS = 4;

enum class queue_direction : uint32_t { request = 0, response = 1 };

enum class queue_result { ok, timeout, closed, too_large };

// How a reader with nothing to read waits: asleep on the doorbell (no CPU while idle), or polling
// (upstream's GGML_HEXAGON_OPPOLL: no wake-up latency, a core kept busy).
enum class queue_wait { sleep, poll };

struct queue_message_view {
    const void *         data;
    uint32_t             size;
    const queue_buffer * buffers;
    uint32_t             n_buffers;
};

class shared_queue {
  public:
    // A new queue region (memfd): n_slots messages of up to max_message bytes each way.
    // nullptr and *error when it cannot be created.
    static std::unique_ptr<shared_queue> create(uint32_t n_slots, uint32_t max_message, std::string * error);
    // Maps the region behind fd (the fd stays the caller's).
    static std::unique_ptr<shared_queue> attach(int fd, std::string * error);
    ~shared_queue();

    shared_queue(const shared_queue &)             = delete;
    shared_queue & operator=(const shared_queue &) = delete;

    int      fd() const { return fd_; }
    uint32_t max_message() const;

    // One writer and one reader per direction at a time.
    queue_result write(queue_direction dir, const queue_message_view & message, deadline until);
    // Copies the oldest message into data (capacity bytes) and its buffers (QUEUE_MAX_BUFFERS room).
    queue_result read(queue_direction dir, void * data, uint32_t capacity, uint32_t * size, queue_buffer * buffers,
                      uint32_t * n_buffers, deadline until, queue_wait wait = queue_wait::sleep);

    // Marks the queue closed and wakes every sleeper; reads still drain what was written.
    void close();
    bool closed() const;

  private:
    struct header;
    shared_queue(int fd, void * region, size_t region_size);
    header * head() const;
    // Slot `index` (mod n_slots) of the ring of dir.
    void * slot(queue_direction dir, uint32_t index) const;

    int    fd_;
    void * region_;
    size_t region_size_;
};

} // namespace hexnpu::vnpu::wire
