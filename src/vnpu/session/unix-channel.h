// Fixed-size messages over a SOCK_SEQPACKET Unix socket, with at most one file descriptor attached
// (SCM_RIGHTS): the control channel between the client library and a session process.
#pragma once

#include <chrono>
#include <cstddef>

namespace hexnpu::vnpu::wire {

using deadline = std::chrono::steady_clock::time_point;

// Returns 0 or an errno value (EPIPE when the peer is gone).
int send_message(int socket, const void * message, size_t size, int fd_to_pass = -1);

// Waits until `until` for one message of exactly `size` bytes. Returns 0, ETIMEDOUT, EPIPE (the
// peer closed its end or died), EPROTO (a message of another size) or another errno value. A
// received fd is stored in *received_fd (else -1); a fd the caller did not ask for is closed.
int receive_message(int socket, void * message, size_t size, deadline until, int * received_fd = nullptr);

} // namespace hexnpu::vnpu::wire
