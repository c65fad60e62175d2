#include "plugin-comm.h"

#include "plugin-backend.h"
#include "tensor-mirror.h"

#include "hexagon/htp-allreduce.h"

#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace hexnpu::ggml_plugin {

namespace {

struct comm_context {
    std::vector<ggml_abi::backend *>         backends;
    std::unique_ptr<hexagon::htp_allreduce>  allreduce;
    mirror_set                               mirrors;
};

} // namespace

void * comm_init(ggml_abi::backend ** backends, size_t n_backends) {
    std::vector<hexagon::htp_device *> devices;
    for (size_t k = 0; k < n_backends; ++k) {
        auto * dev = dynamic_cast<hexagon::htp_device *>(hexnpu_device_of(backends[k]));
        if (dev == nullptr) {
            return nullptr;  // another backend's, or a device group: ggml's fallback
        }
        devices.push_back(dev);
    }
    try {
        if (devices.empty() || devices[0]->options().ar_select == 0) {
            return nullptr;
        }
        auto ctx       = std::make_unique<comm_context>();
        ctx->backends  = std::vector<ggml_abi::backend *>(backends, backends + n_backends);
        ctx->allreduce = std::make_unique<hexagon::htp_allreduce>(std::move(devices));
        return ctx.release();
    } catch (const std::exception & e) {
        std::fprintf(stderr, "hexnpu-ggml: the tensor split's all-reduce stays on the host: %s\n", e.what());
        return nullptr;
    }
}

void comm_free(void * comm) { delete static_cast<comm_context *>(comm); }

bool comm_allreduce_tensor(void * comm, ggml_abi::tensor ** tensors) {
    auto & ctx = *static_cast<comm_context *>(comm);
    ctx.mirrors.refresh();
    std::vector<const ggml_tensor *> results;
    for (size_t k = 0; k < ctx.backends.size(); ++k) {
        const ggml_tensor * m = ctx.mirrors.mirror(tensors[k], true);
        if (m == nullptr || m->buffer == nullptr) {
            return false;
        }
        results.push_back(m);
    }
    try {
        const std::string why = ctx.allreduce->run(results);
        if (!why.empty() && ctx.allreduce->group().members()[0]->options().verbose > 0) {
            std::fprintf(stderr, "hexnpu-ggml: all-reduce of '%s' on the host: %s\n", tensors[0]->name, why.c_str());
        }
        return why.empty();
    } catch (const std::exception & e) {
        const std::string why = std::string("the all-reduce of '") + tensors[0]->name + "' failed: " + e.what();
        std::fprintf(stderr, "hexnpu-ggml: %s\n", why.c_str());
        for (ggml_abi::backend * b : ctx.backends) {
            fail_next_compute(b, why);
        }
        return false;
    }
}

} // namespace hexnpu::ggml_plugin
