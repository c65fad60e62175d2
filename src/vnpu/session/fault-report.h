// The session process's last words on a fault: SIGSEGV/SIGBUS handlers that record the faulting
// NPU address (or the host address when it is outside the window), the op and the batch in the
// shared status page, then let the signal kill the process so the client sees which signal it was.
// A SIGSEGV/SIGBUS that another process sent (kill) is no fault: the handler records its sender and
// the signal ends the process at once, reported as the signal it is.
#pragma once

#include "control-protocol.h"
#include "vnpu/platform/session-platform.h"

namespace hexnpu::vnpu::htpd {

// Installs the handlers for this process; platform and page must outlive it.
void install_fault_report(const session_platform * platform, wire::status_page * page);

} // namespace hexnpu::vnpu::htpd
