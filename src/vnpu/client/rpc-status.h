// What every client-library call returns: success, or which kind of failure and a message a user
// can act on (the session's own words and log lines included).
#pragma once

#include <cstdint>
#include <string>

namespace hexnpu::vnpu::rpc {

enum class rpc_errc {
    ok,
    invalid_argument,  // the call itself was wrong (unknown fd, bad size, wrong state on this side)
    spawn_failed,      // the session process could not be started or its NPU library not opened
    remote_error,      // the session answered with an error (remote_status says which)
    session_died,      // the session process exited or was killed (message: signal, fault, op)
    timeout,           // the session missed its deadline and was killed
    queue_closed,      // the queue was closed (the session stopped)
    system,            // a system call on this side failed
};

struct rpc_status {
    rpc_errc    code          = rpc_errc::ok;
    int32_t     remote_status = 0;  // the session's status code for remote_error
    std::string message;

    bool ok() const { return code == rpc_errc::ok; }
    explicit operator bool() const { return ok(); }
};

inline rpc_status rpc_error(rpc_errc code, std::string message, int32_t remote_status = 0) {
    return rpc_status{code, remote_status, std::move(message)};
}

const char * rpc_errc_name(rpc_errc code);

} // namespace hexnpu::vnpu::rpc
