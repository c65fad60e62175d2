// The batch loop behind htp_iface_process_batch.
#pragma once

#include "htp-ctx.h"

#include <stddef.h>
#include <stdint.h>

namespace hexnpu::htp {

// Validates the request and its block, maps the batch's buffers, rewrites tensor addresses, runs
// the ops up to the first failure, flushes dirty outputs and fills the response.
void run_batch(htp_session * s, const proto::htp_opbatch_req * req, uint8_t * block, size_t block_size,
               proto::htp_opbatch_rsp * rsp, volatile uint32_t * current_op);

} // namespace hexnpu::htp
