// Issue 11, class 7: a SIGSEGV or SIGBUS that another process sends to a session (kill(1)) is not an
// NPU fault. The session process ends at the first one, and the client reports it as what it is:
// killed by the signal, sent by that process — not swallowed, and not a made-up fault address.
#include "vnpu/client/remote-session.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <unistd.h>

namespace {

using namespace hexnpu;
using namespace std::chrono_literals;

vnpu::rpc::session_options options() {
    vnpu::rpc::session_options o;
    o.arch         = 79;
    o.window_size  = uint64_t(64) << 20;
    o.host_threads = 2;
    o.timeout      = 10s;
    return o;
}

// Waits (up to `limit`) for the session process to end; its exit record, or nullopt.
std::optional<vnpu::rpc::session_exit> wait_for_exit(const vnpu::rpc::remote_session & s,
                                                     std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
        if (auto e = s.exit_info()) {
            return e;
        }
        std::this_thread::sleep_for(5ms);
    }
    return std::nullopt;
}

class SessionExternalSignal : public testing::TestWithParam<int> {};

TEST_P(SessionExternalSignal, OneSentSignalEndsTheSessionAndIsReportedAsSent) {
    const int                                  sig = GetParam();
    std::unique_ptr<vnpu::rpc::remote_session> s;
    const vnpu::rpc::rpc_status                opened = vnpu::rpc::remote_session::open(options(), &s);
    ASSERT_TRUE(opened.ok()) << opened.message;
    vnpu::rpc::hw_info info;
    ASSERT_TRUE(s->hwinfo(&info).ok()) << "the session runs (its fault handlers are installed)";

    ASSERT_EQ(kill(s->pid(), sig), 0);
    const auto e = wait_for_exit(*s, 3s);
    ASSERT_TRUE(e.has_value()) << "a single " << sigabbrev_np(sig) << " from outside was swallowed";
    EXPECT_EQ(e->signal, sig);
    EXPECT_FALSE(e->fault) << "reported as an NPU fault: " << e->message;
    const std::string expected = std::string("was killed by SIG") + sigabbrev_np(sig) + " (sent by process " +
                                 std::to_string(getpid()) + ", not an NPU fault)";
    EXPECT_NE(e->message.find(expected), std::string::npos) << e->message;
    EXPECT_EQ(e->message.find("address"), std::string::npos) << e->message;

    // Calls on the dead session say how it died.
    const vnpu::rpc::rpc_status after = s->hwinfo(&info);
    EXPECT_FALSE(after.ok());
    EXPECT_NE(after.message.find(expected), std::string::npos) << after.message;
}

INSTANTIATE_TEST_SUITE_P(SegvAndBus, SessionExternalSignal, testing::Values(SIGSEGV, SIGBUS),
                         [](const testing::TestParamInfo<int> & p) { return std::string(sigabbrev_np(p.param)); });

} // namespace
