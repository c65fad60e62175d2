#include "fault-report.h"

#include <csignal>
#include <cstdint>

namespace hexnpu::vnpu::htpd {

namespace {

const session_platform * g_platform = nullptr;
wire::status_page *      g_page     = nullptr;

// Async-signal-safe: plain stores into the shared page and the window arithmetic of npu_address_of.
void on_fault(int signal, siginfo_t * info, void *) {
    if (info->si_code <= 0) {
        // Sent by a process (kill, tgkill, sigqueue: SI_USER, SI_TKILL, SI_QUEUE ...), not raised by
        // an access of this one: si_addr means nothing. Record the sender instead of a fault and end
        // the process with the signal at once; returning would just resume (the signal would be
        // swallowed, and a second one would be reported with the first one's bogus address).
        g_page->external_sender = uint32_t(info->si_pid);
        g_page->external_signal.store(uint32_t(signal), std::memory_order_release);
        raise(signal);  // the default action again (SA_RESETHAND); blocked here, delivered on return
        return;
    }
    uint64_t   npu_addr  = 0;
    const bool in_window = g_platform->npu_address_of(info->si_addr, &npu_addr);
    g_page->fault_in_window = in_window ? 1 : 0;
    g_page->fault_npu_addr  = npu_addr;
    g_page->fault_host_addr = uint64_t(reinterpret_cast<uintptr_t>(info->si_addr));
    g_page->fault_op        = g_page->current_op;
    g_page->fault_batch     = g_page->batch_id.load(std::memory_order_relaxed);
    g_page->fault_signal.store(uint32_t(signal), std::memory_order_release);
    // SA_RESETHAND restored the default action: returning re-runs the access, which now kills the
    // process with this signal.
}

} // namespace

void install_fault_report(const session_platform * platform, wire::status_page * page) {
    g_platform = platform;
    g_page     = page;
    struct sigaction sa{};
    sa.sa_sigaction = on_fault;
    sa.sa_flags     = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
}

} // namespace hexnpu::vnpu::htpd
