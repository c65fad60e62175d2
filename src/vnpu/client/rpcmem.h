// The rpcmem analog: shared DDR buffers (memfd) the host allocates, fills in place and hands to
// NPU sessions by file descriptor (fastrpc_mmap).
#pragma once

#include <cstddef>

namespace hexnpu::vnpu::rpc {

// A zero-filled shared buffer of size bytes, page aligned; nullptr when it cannot be allocated.
void * rpcmem_alloc(size_t size);
// Frees a buffer from rpcmem_alloc (nullptr is ignored). Sessions that registered its fd keep
// their own reference until fastrpc_munmap.
void rpcmem_free(void * buffer);
// The fd behind a buffer from rpcmem_alloc, -1 for any other pointer.
int rpcmem_to_fd(void * buffer);

} // namespace hexnpu::vnpu::rpc
