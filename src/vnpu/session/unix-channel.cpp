#include "unix-channel.h"

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace hexnpu::vnpu::wire {

int send_message(int socket, const void * message, size_t size, int fd_to_pass) {
    iovec  iov{const_cast<void *>(message), size};
    msghdr msg{};
    msg.msg_iov    = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (fd_to_pass >= 0) {
        msg.msg_control    = control;
        msg.msg_controllen = sizeof control;
        cmsghdr * c        = CMSG_FIRSTHDR(&msg);
        c->cmsg_level      = SOL_SOCKET;
        c->cmsg_type       = SCM_RIGHTS;
        c->cmsg_len        = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &fd_to_pass, sizeof(int));
    }
    for (;;) {
        const ssize_t n = sendmsg(socket, &msg, MSG_NOSIGNAL);
        if (n == ssize_t(size)) {
            return 0;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        return n < 0 ? (errno == ECONNRESET ? EPIPE : errno) : EPROTO;
    }
}

int receive_message(int socket, void * message, size_t size, deadline until, int * received_fd) {
    if (received_fd != nullptr) {
        *received_fd = -1;
    }
    for (;;) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        const int  timeout_ms =
            until == deadline::max() ? -1 : int(std::min<long long>(std::max<long long>(left.count(), 0), 1 << 30));
        pollfd p{socket, POLLIN, 0};
        const int r = poll(&p, 1, timeout_ms);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            return errno;
        }
        if (r == 0) {
            return ETIMEDOUT;
        }
        break;
    }
    iovec  iov{message, size};
    msghdr msg{};
    msg.msg_iov    = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msg.msg_control    = control;
    msg.msg_controllen = sizeof control;
    ssize_t n;
    do {
        n = recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    int fd = -1;
    for (cmsghdr * c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
        }
    }
    if (fd >= 0 && received_fd == nullptr) {
        close(fd);
        fd = -1;
    }
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
        return EPIPE;
    }
    if (n < 0) {
        return errno;
    }
    if (size_t(n) != size || (msg.msg_flags & MSG_TRUNC) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return EPROTO;
    }
    if (received_fd != nullptr) {
        *received_fd = fd;
    }
    return 0;
}

} // namespace hexnpu::vnpu::wire
