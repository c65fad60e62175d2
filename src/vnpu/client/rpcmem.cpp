#include "rpcmem.h"

#include "vnpu/platform/shared-buffer.h"

#include <map>
#include <mutex>
#include <system_error>

namespace hexnpu::vnpu::rpc {

namespace {

struct registry {
    std::mutex                     mutex;
    std::map<void *, shared_buffer> buffers;
};

// Never destroyed: buffers may be freed from other static destructors at exit.
registry & buffers() {
    static registry * r = new registry;
    return *r;
}

} // namespace

void * rpcmem_alloc(size_t size) {
    if (size == 0) {
        return nullptr;
    }
    try {
        shared_buffer   buffer(size);
        void *          data = buffer.data();
        registry &      r    = buffers();
        std::lock_guard lock(r.mutex);
        r.buffers.emplace(data, std::move(buffer));
        return data;
    } catch (const std::system_error &) {
        return nullptr;
    }
}

void rpcmem_free(void * buffer) {
    registry &      r = buffers();
    std::lock_guard lock(r.mutex);
    r.buffers.erase(buffer);
}

int rpcmem_to_fd(void * buffer) {
    registry &      r = buffers();
    std::lock_guard lock(r.mutex);
    const auto      it = r.buffers.find(buffer);
    return it == r.buffers.end() ? -1 : it->second.fd();
}

} // namespace hexnpu::vnpu::rpc
