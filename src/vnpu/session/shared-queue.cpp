#include "shared-queue.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <linux/futex.h>
#include <new>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace hexnpu::vnpu::wire {

namespace {

constexpr uint32_t QUEUE_MAGIC = 0x44535051;  // "DSPQ"
constexpr size_t   LINE        = 64;

constexpr size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

struct ring {
    alignas(LINE) std::atomic<uint32_t> head;  // messages written
    alignas(LINE) std::atomic<uint32_t> tail;  // messages read
    alignas(LINE) std::atomic<uint32_t> data_bell;  // rung after each write; the reader sleeps on it
    std::atomic<uint32_t> reader_sleeping;
    alignas(LINE) std::atomic<uint32_t> space_bell;  // rung after each read; the writer sleeps on it
    std::atomic<uint32_t> writer_sleeping;
};

struct slot_header {
    uint32_t     size;
    uint32_t     n_buffers;
    queue_buffer buffers[QUEUE_MAX_BUFFERS];
};

uint32_t * futex_word(std::atomic<uint32_t> & a) { return reinterpret_cast<uint32_t *>(&a); }

// Sleeps while *word == expected, until woken or `until`. Shared (not private) futexes: the words
// live in memory mapped by two processes.
void futex_wait_until(std::atomic<uint32_t> & word, uint32_t expected, deadline until) {
    timespec   ts{};
    timespec * timeout = nullptr;
    if (until != deadline::max()) {
        const auto left = until - std::chrono::steady_clock::now();
        if (left <= std::chrono::nanoseconds(0)) {
            return;
        }
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        ts.tv_sec     = time_t(ns / 1000000000);
        ts.tv_nsec    = long(ns % 1000000000);
        timeout       = &ts;
    }
    syscall(SYS_futex, futex_word(word), FUTEX_WAIT, expected, timeout, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t> & word) {
    syscall(SYS_futex, futex_word(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Rings a doorbell: the bump makes a sleeper's futex_wait return even if it has not slept yet.
void ring_bell(std::atomic<uint32_t> & bell, std::atomic<uint32_t> & sleeping) {
    bell.fetch_add(1);
    if (sleeping.load() != 0) {
        futex_wake_all(bell);
    }
}

} // namespace

struct shared_queue::header {
    uint32_t              magic;
    uint32_t              n_slots;
    uint32_t              slot_size;
    uint32_t              max_message;
    std::atomic<uint32_t> closed;
    ring                  rings[2];
};

std::unique_ptr<shared_queue> shared_queue::create(uint32_t n_slots, uint32_t max_message, std::string * error) {
    if (n_slots == 0 || max_message == 0 || max_message > (64u << 20)) {
        *error = "dspqueue: invalid slot count or message size";
        return nullptr;
    }
    const size_t slot_size = round_up(sizeof(slot_header) + max_message, LINE);
    const size_t size      = round_up(sizeof(header), LINE) + 2 * size_t(n_slots) * slot_size;
    const int    fd        = memfd_create("hexnpu-dspqueue", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, off_t(size)) != 0) {
        *error = std::string("dspqueue: cannot create the shared region: ") + std::strerror(errno);
        if (fd >= 0) {
            ::close(fd);
        }
        return nullptr;
    }
    void * region = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (region == MAP_FAILED) {
        *error = std::string("dspqueue: cannot map the shared region: ") + std::strerror(errno);
        ::close(fd);
        return nullptr;
    }
    // A fresh memfd is zero-filled: every counter and flag starts at 0.
    header * h      = new (region) header{};
    h->n_slots      = n_slots;
    h->slot_size    = uint32_t(slot_size);
    h->max_message  = max_message;
    h->magic        = QUEUE_MAGIC;
    return std::unique_ptr<shared_queue>(new shared_queue(fd, region, size));
}

std::unique_ptr<shared_queue> shared_queue::attach(int fd, std::string * error) {
    struct stat st{};
    if (fstat(fd, &st) != 0 || size_t(st.st_size) < sizeof(header)) {
        *error = "dspqueue: the queue fd is not a queue region";
        return nullptr;
    }
    const size_t size   = size_t(st.st_size);
    void *       region = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (region == MAP_FAILED) {
        *error = std::string("dspqueue: cannot map the queue region: ") + std::strerror(errno);
        return nullptr;
    }
    const header * h = static_cast<const header *>(region);
    const size_t   slot_size = round_up(sizeof(slot_header) + size_t(h->max_message), LINE);
    if (h->magic != QUEUE_MAGIC || h->n_slots == 0 || h->slot_size != slot_size ||
        round_up(sizeof(header), LINE) + 2 * size_t(h->n_slots) * slot_size != size) {
        munmap(region, size);
        *error = "dspqueue: the queue region's header is inconsistent";
        return nullptr;
    }
    const int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) {
        munmap(region, size);
        *error = std::string("dspqueue: cannot keep the queue fd: ") + std::strerror(errno);
        return nullptr;
    }
    return std::unique_ptr<shared_queue>(new shared_queue(own, region, size));
}

shared_queue::shared_queue(int fd, void * region, size_t region_size)
    : fd_(fd), region_(region), region_size_(region_size) {}

shared_queue::~shared_queue() {
    munmap(region_, region_size_);
    ::close(fd_);
}

shared_queue::header * shared_queue::head() const { return static_cast<header *>(region_); }

uint32_t shared_queue::max_message() const { return head()->max_message; }

void * shared_queue::slot(queue_direction dir, uint32_t index) const {
    const header * h     = head();
    uint8_t *      slots = static_cast<uint8_t *>(region_) + round_up(sizeof(header), LINE);
    return slots + (size_t(dir) * h->n_slots + index % h->n_slots) * h->slot_size;
}

queue_result shared_queue::write(queue_direction dir, const queue_message_view & message, deadline until) {
    header * h = head();
    if (message.size > h->max_message || message.n_buffers > QUEUE_MAX_BUFFERS) {
        return queue_result::too_large;
    }
    ring & r = h->rings[uint32_t(dir)];
    for (;;) {
        if (h->closed.load() != 0) {
            return queue_result::closed;
        }
        const uint32_t bell = r.space_bell.load();
        if (r.head.load(std::memory_order_relaxed) - r.tail.load() < h->n_slots) {
            break;
        }
        if (std::chrono::steady_clock::now() >= until) {
            return queue_result::timeout;
        }
        r.writer_sleeping.store(1);
        if (r.head.load(std::memory_order_relaxed) - r.tail.load() >= h->n_slots && h->closed.load() == 0) {
            futex_wait_until(r.space_bell, bell, until);
        }
        r.writer_sleeping.store(0);
    }
    const uint32_t index = r.head.load(std::memory_order_relaxed);
    auto *         s     = static_cast<slot_header *>(slot(dir, index));
    s->size              = message.size;
    s->n_buffers         = message.n_buffers;
    std::memcpy(s->buffers, message.buffers, message.n_buffers * sizeof(queue_buffer));
    std::memcpy(s + 1, message.data, message.size);
    r.head.store(index + 1, std::memory_order_release);
    ring_bell(r.data_bell, r.reader_sleeping);
    return queue_result::ok;
}

queue_result shared_queue::read(queue_direction dir, void * data, uint32_t capacity, uint32_t * size,
                                queue_buffer * buffers, uint32_t * n_buffers, deadline until, queue_wait wait) {
    header * h = head();
    ring &   r = h->rings[uint32_t(dir)];
    for (;;) {
        const uint32_t bell = r.data_bell.load();
        if (r.head.load(std::memory_order_acquire) != r.tail.load(std::memory_order_relaxed)) {
            break;
        }
        if (h->closed.load() != 0) {
            return queue_result::closed;
        }
        if (std::chrono::steady_clock::now() >= until) {
            return queue_result::timeout;
        }
        if (wait == queue_wait::poll) {
            sched_yield();  // the writer may need this core
            continue;
        }
        r.reader_sleeping.store(1);
        if (r.head.load() == r.tail.load(std::memory_order_relaxed) && h->closed.load() == 0) {
            futex_wait_until(r.data_bell, bell, until);
        }
        r.reader_sleeping.store(0);
    }
    const uint32_t      index = r.tail.load(std::memory_order_relaxed);
    const auto *        s     = static_cast<const slot_header *>(slot(dir, index));
    // The other process wrote the slot: check it before trusting its sizes.
    const uint32_t msg_size = s->size;
    const uint32_t n_bufs   = s->n_buffers;
    if (msg_size > capacity || msg_size > h->max_message || n_bufs > QUEUE_MAX_BUFFERS) {
        return queue_result::too_large;
    }
    std::memcpy(data, s + 1, msg_size);
    std::memcpy(buffers, s->buffers, n_bufs * sizeof(queue_buffer));
    *size      = msg_size;
    *n_buffers = n_bufs;
    r.tail.store(index + 1, std::memory_order_release);
    ring_bell(r.space_bell, r.writer_sleeping);
    return queue_result::ok;
}

void shared_queue::close() {
    header * h = head();
    h->closed.store(1);
    for (ring & r : h->rings) {
        r.data_bell.fetch_add(1);
        r.space_bell.fetch_add(1);
        futex_wake_all(r.data_bell);
        futex_wake_all(r.space_bell);
    }
}

bool shared_queue::closed() const { return head()->closed.load() != 0; }

} // namespace hexnpu::vnpu::wire
