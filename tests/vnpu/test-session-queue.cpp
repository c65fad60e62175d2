// The dspqueue region on its own: two mappings of one memfd (as the client and the session have),
// FIFO order across ring wrap-around, buffers carried with messages, deadlines, close.
#include "vnpu/session/shared-queue.h"

#include <gtest/gtest.h>

#include <cstring>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

namespace {

using namespace hexnpu::vnpu::wire;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

struct queue_pair {
    std::unique_ptr<shared_queue> client, session;

    explicit queue_pair(uint32_t n_slots, uint32_t max_message = 64) {
        std::string error;
        client = shared_queue::create(n_slots, max_message, &error);
        EXPECT_TRUE(client) << error;
        session = shared_queue::attach(client->fd(), &error);
        EXPECT_TRUE(session) << error;
    }
};

queue_result send_u32(shared_queue & q, queue_direction dir, uint32_t v, deadline until = deadline::max()) {
    const queue_buffer b{int32_t(v), v ^ 1u, uint64_t(v) * 3, uint64_t(v) + 7};
    return q.write(dir, queue_message_view{&v, sizeof v, &b, 1}, until);
}

queue_result receive_u32(shared_queue & q, queue_direction dir, uint32_t * v, deadline until = deadline::max()) {
    queue_buffer b[QUEUE_MAX_BUFFERS];
    uint32_t     size = 0, n = 0;
    const auto   r    = q.read(dir, v, sizeof *v, &size, b, &n, until);
    if (r == queue_result::ok) {
        EXPECT_EQ(size, sizeof *v);
        EXPECT_EQ(n, 1u);
        EXPECT_EQ(b[0].fd, int32_t(*v));
        EXPECT_EQ(b[0].flags, *v ^ 1u);
        EXPECT_EQ(b[0].offset, uint64_t(*v) * 3);
        EXPECT_EQ(b[0].size, uint64_t(*v) + 7);
    }
    return r;
}

TEST(SessionQueueRing, MessagesArriveInOrderAcrossWrapAround) {
    queue_pair  q(3);
    std::thread producer([&] {
        for (uint32_t i = 0; i < 5000; ++i) {
            ASSERT_EQ(send_u32(*q.client, queue_direction::request, i), queue_result::ok);
        }
    });
    for (uint32_t i = 0; i < 5000; ++i) {
        uint32_t v = ~0u;
        ASSERT_EQ(receive_u32(*q.session, queue_direction::request, &v), queue_result::ok);
        ASSERT_EQ(v, i);
        ASSERT_EQ(send_u32(*q.session, queue_direction::response, v * 2), queue_result::ok);
        uint32_t echo = 0;
        ASSERT_EQ(receive_u32(*q.client, queue_direction::response, &echo), queue_result::ok);
        ASSERT_EQ(echo, i * 2);
    }
    producer.join();
}

TEST(SessionQueueRing, EmptyAndFullWaitsEndAtTheirDeadline) {
    queue_pair q(2);
    uint32_t   v  = 0;
    auto       t0 = clock_type::now();
    EXPECT_EQ(receive_u32(*q.session, queue_direction::request, &v, t0 + 50ms), queue_result::timeout);
    EXPECT_GE(clock_type::now() - t0, 50ms);

    ASSERT_EQ(send_u32(*q.client, queue_direction::request, 1), queue_result::ok);
    ASSERT_EQ(send_u32(*q.client, queue_direction::request, 2), queue_result::ok);
    t0 = clock_type::now();
    EXPECT_EQ(send_u32(*q.client, queue_direction::request, 3, t0 + 50ms), queue_result::timeout);
    EXPECT_GE(clock_type::now() - t0, 50ms);
    // The other direction is independent.
    EXPECT_EQ(send_u32(*q.session, queue_direction::response, 9, t0), queue_result::ok);

    ASSERT_EQ(receive_u32(*q.session, queue_direction::request, &v), queue_result::ok);
    EXPECT_EQ(v, 1u);
    EXPECT_EQ(send_u32(*q.client, queue_direction::request, 3, clock_type::now()), queue_result::ok);
}

TEST(SessionQueueRing, ASleepingWriterIsWokenByARead) {
    queue_pair q(1);
    ASSERT_EQ(send_u32(*q.client, queue_direction::request, 1), queue_result::ok);
    std::thread reader([&] {
        std::this_thread::sleep_for(30ms);
        uint32_t v = 0;
        EXPECT_EQ(receive_u32(*q.session, queue_direction::request, &v), queue_result::ok);
    });
    const auto t0 = clock_type::now();
    EXPECT_EQ(send_u32(*q.client, queue_direction::request, 2, t0 + 5s), queue_result::ok);
    EXPECT_LT(clock_type::now() - t0, 2s);
    reader.join();
}

TEST(SessionQueueRing, CloseWakesSleepersAndLeavesWrittenMessagesReadable) {
    queue_pair  q(4);
    queue_result seen = queue_result::ok;
    std::thread  reader([&] {
        uint32_t v = 0;
        seen       = receive_u32(*q.client, queue_direction::response, &v, clock_type::now() + 5s);
    });
    std::this_thread::sleep_for(30ms);
    ASSERT_EQ(send_u32(*q.client, queue_direction::request, 7), queue_result::ok);
    const auto t0 = clock_type::now();
    q.session->close();
    reader.join();
    EXPECT_EQ(seen, queue_result::closed);
    EXPECT_LT(clock_type::now() - t0, 2s);
    EXPECT_TRUE(q.client->closed());

    uint32_t v = 0;
    EXPECT_EQ(receive_u32(*q.session, queue_direction::request, &v), queue_result::ok);
    EXPECT_EQ(v, 7u);
    EXPECT_EQ(receive_u32(*q.session, queue_direction::request, &v), queue_result::closed);
    EXPECT_EQ(send_u32(*q.client, queue_direction::request, 8), queue_result::closed);
}

TEST(SessionQueueRing, OversizedMessagesAndForeignRegionsAreRefused) {
    queue_pair           q(2, 16);
    const uint8_t        big[17] = {};
    const queue_buffer   five[5] = {};
    EXPECT_EQ(q.client->write(queue_direction::request, {big, 17, nullptr, 0}, deadline::max()),
              queue_result::too_large);
    EXPECT_EQ(q.client->write(queue_direction::request, {big, 16, five, 5}, deadline::max()), queue_result::too_large);
    ASSERT_EQ(q.client->write(queue_direction::request, {big, 16, five, 4}, deadline::max()), queue_result::ok);
    uint8_t      small[8];
    uint32_t     size = 0, n = 0;
    queue_buffer b[QUEUE_MAX_BUFFERS];
    EXPECT_EQ(q.session->read(queue_direction::request, small, sizeof small, &size, b, &n, deadline::max()),
              queue_result::too_large);

    std::string error;
    const int   fd = memfd_create("not-a-queue", MFD_CLOEXEC);
    ASSERT_EQ(ftruncate(fd, 4096), 0);
    EXPECT_FALSE(shared_queue::attach(fd, &error));
    EXPECT_NE(error.find("inconsistent"), std::string::npos) << error;
    close(fd);
    EXPECT_FALSE(shared_queue::create(0, 64, &error));
}

} // namespace
