#include "plugin-backend.h"

#include "tensor-mirror.h"

#include <cstdio>
#include <exception>
#include <memory>
#include <string>

namespace hexnpu::ggml_plugin {
namespace {

struct backend_context {
    std::unique_ptr<backend> hexnpu;
    graph_cache              translations;
    std::string              failed;  // fail_next_compute's reason, reported by the next graph_compute
};

backend_context & context_of(ggml_abi::backend * b) { return *static_cast<backend_context *>(b->context); }

const char * backend_get_name(ggml_abi::backend * b) { return context_of(b).hexnpu->name(); }

void backend_free(ggml_abi::backend * b) {
    delete &context_of(b);
    delete b;
}

void backend_synchronize(ggml_abi::backend * b) { context_of(b).hexnpu->synchronize(); }

// The async calls complete before they return (graph_compute waits for the NPU's answer): the
// tensor's own buffer does the copy, as ggml_backend_tensor_set / _get would.
void backend_set_tensor_async(ggml_abi::backend *, ggml_abi::tensor * t, const void * data, size_t offset, size_t size) {
    t->buf->iface.set_tensor(t->buf, t, data, offset, size);
}
void backend_get_tensor_async(ggml_abi::backend *, const ggml_abi::tensor * t, void * data, size_t offset, size_t size) {
    t->buf->iface.get_tensor(t->buf, t, data, offset, size);
}
// Events: all work recorded before one is done by then.
void backend_event_record(ggml_abi::backend *, ggml_abi::event *) {}
void backend_event_wait(ggml_abi::backend *, ggml_abi::event *) {}

// A failure is reported as a status, never by ending the host process: a session that died is
// started anew by the device on the next graph.
ggml_abi::status backend_graph_compute(ggml_abi::backend * b, ggml_abi::cgraph * g) {
    backend_context & ctx = context_of(b);
    if (!ctx.failed.empty()) {
        std::fprintf(stderr, "hexnpu-ggml: %s: graph_compute failed: %s\n", ctx.hexnpu->name(), ctx.failed.c_str());
        ctx.failed.clear();
        return ggml_abi::STATUS_FAILED;
    }
    try {
        ctx.hexnpu->graph_compute(ctx.translations.translate(*g));
        return ggml_abi::STATUS_SUCCESS;
    } catch (const std::exception & e) {
        std::fprintf(stderr, "hexnpu-ggml: %s: graph_compute failed: %s\n", ctx.hexnpu->name(), e.what());
        return ggml_abi::STATUS_FAILED;
    }
}

constexpr ggml_abi::backend_i kBackendInterface = {
    /* get_name            */ backend_get_name,
    /* free                */ backend_free,
    /* set_tensor_async    */ backend_set_tensor_async,
    /* get_tensor_async    */ backend_get_tensor_async,
    /* set_tensor_2d_async */ nullptr,
    /* get_tensor_2d_async */ nullptr,
    /* cpy_tensor_async    */ nullptr,
    /* synchronize         */ backend_synchronize,
    /* graph_plan_create   */ nullptr,
    /* graph_plan_free     */ nullptr,
    /* graph_plan_update   */ nullptr,
    /* graph_plan_compute  */ nullptr,
    /* graph_compute       */ backend_graph_compute,
    /* event_record        */ backend_event_record,
    /* event_wait          */ backend_event_wait,
    /* graph_optimize      */ nullptr,
};

// ggml identifies a backend kind by this GUID ("hexnpu-htp-virt\0").
uint8_t kGuid[16] = {'h', 'e', 'x', 'n', 'p', 'u', '-', 'h', 't', 'p', '-', 'v', 'i', 'r', 't', 0};

} // namespace

backend_device * hexnpu_device_of(ggml_abi::backend * b) {
    return b != nullptr && b->guid == &kGuid ? context_of(b).hexnpu->device() : nullptr;
}

void fail_next_compute(ggml_abi::backend * b, const std::string & why) { context_of(b).failed = why; }

ggml_abi::backend * make_backend(ggml_abi::device * dev, backend_device * hexnpu) {
    try {
        auto ctx    = std::make_unique<backend_context>();
        ctx->hexnpu = hexnpu->init_backend();
        return new ggml_abi::backend{&kGuid, kBackendInterface, dev, ctx.release()};
    } catch (const std::exception & e) {
        std::fprintf(stderr, "hexnpu-ggml: %s: cannot create a backend: %s\n", hexnpu->name(), e.what());
        return nullptr;
    }
}

} // namespace hexnpu::ggml_plugin
