// Backend interface, GGML-style: a device offers buffer types and creates backends; a buffer
// type allocates buffers that hold tensor data; a backend computes graphs whose tensors live in
// buffers it can read. The CPU reference backend and the Hexagon NPU backend implement it; the
// scheduler (sched.h) splits graphs between backends.
#pragma once

#include "hexnpu/graph.h"
#include "hexnpu/tensor.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace hexnpu {

class backend_device;
class backend_buffer;

enum class backend_device_type { cpu, gpu, accel };

enum class buffer_usage { any, weights, compute };

// A failed graph computation: which node, which backend, what the backend reported.
class backend_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class backend_buffer_type {
  public:
    virtual ~backend_buffer_type() = default;

    virtual const char *                    name() const = 0;
    virtual std::unique_ptr<backend_buffer> alloc_buffer(size_t size) = 0;
    virtual size_t                          alignment() const = 0;
    virtual size_t                          max_size() const { return SIZE_MAX; }
    // Bytes the tensor needs in a buffer of this type (e.g. tiled layouts need more than ggml_nbytes).
    virtual size_t                          alloc_size(const ggml_tensor * t) const { return ggml_nbytes(t); }
    // Host-visible: the CPU may read and write tensor->data directly.
    virtual bool                            is_host() const = 0;
    virtual backend_device *                device() const = 0;
};

class backend_buffer {
  public:
    backend_buffer(backend_buffer_type * buft, size_t size) : buft_(buft), size_(size) {}
    virtual ~backend_buffer() = default;
    backend_buffer(const backend_buffer &)             = delete;
    backend_buffer & operator=(const backend_buffer &) = delete;

    backend_buffer_type * buft() const { return buft_; }
    size_t                size() const { return size_; }
    buffer_usage          usage() const { return usage_; }
    void                  set_usage(buffer_usage u) { usage_ = u; }

    // Start of the buffer's memory as tensor->data values are formed (may be a host pointer or an
    // opaque base for device memory).
    virtual void * base() = 0;
    // Called once a tensor's data pointer points into this buffer.
    virtual void   init_tensor(ggml_tensor * t) { (void) t; }
    // Copy bytes [offset, offset+size) of the tensor's flat GGML layout in or out.
    virtual void   set_tensor(ggml_tensor * t, const void * data, size_t offset, size_t size) = 0;
    virtual void   get_tensor(const ggml_tensor * t, void * data, size_t offset, size_t size) = 0;
    virtual void   clear(uint8_t value) = 0;

  private:
    backend_buffer_type * buft_;
    size_t                size_;
    buffer_usage          usage_ = buffer_usage::any;
};

class backend {
  public:
    virtual ~backend() = default;
    virtual const char *     name() const = 0;
    virtual backend_device * device() const = 0;
    // Computes every node of the graph in order; throws backend_error on failure.
    virtual void             graph_compute(ggml_cgraph & graph) = 0;
    virtual void             synchronize() {}
};

// One named fact a device reports about itself.
struct device_property {
    std::string name;
    std::string value;
};

class backend_device {
  public:
    virtual ~backend_device() = default;
    virtual const char *          name() const = 0;
    virtual std::string           description() const = 0;
    virtual backend_device_type   type() const = 0;
    virtual void                  memory(size_t & free, size_t & total) const = 0;
    virtual backend_buffer_type * buffer_type() = 0;
    // Further buffer types (e.g. HTP0-REPACK for weights).
    virtual std::vector<backend_buffer_type *> extra_buffer_types() { return {}; }
    virtual std::unique_ptr<backend>           init_backend() = 0;
    // Decided from static tensor properties only (types, shapes, strides, op params): the spec's
    // supports_op rule. Buffers are not yet allocated when the scheduler asks.
    virtual bool                               supports_op(const ggml_tensor * op) const = 0;
    // Why supports_op says no to op, in words a user can act on; "" when it says yes (or the
    // device gives no reasons).
    virtual std::string                        refusal_reason(const ggml_tensor *) const { return {}; }
    // Whether backends of this device can read tensors stored in buffers of this type.
    virtual bool                               supports_buft(const backend_buffer_type * buft) const = 0;
    // What a device listing shows of it, in display order, e.g. {"arch", "v79"}; may start the
    // device's runtime to ask it (throws backend_error when that cannot start).
    virtual std::vector<device_property>       properties() { return {}; }
    // Lines worth printing when a run that used the device ends (e.g. its map traffic).
    virtual std::vector<std::string>           run_report() const { return {}; }
};

// The process-wide list of devices, in registration order (accelerators register before the CPU).
class backend_registry {
  public:
    static backend_registry & get();
    void                          add(std::unique_ptr<backend_device> dev);
    const std::vector<backend_device *> & devices() const { return view_; }
    backend_device *              find(const std::string & name) const;  // nullptr when absent

  private:
    std::vector<std::unique_ptr<backend_device>> owned_;
    std::vector<backend_device *>                view_;
};

// Allocates one buffer of `buft` holding every tensor of ctx that has no data yet (views get
// their data from their source). Returns nullptr when there is nothing to allocate.
std::unique_ptr<backend_buffer> alloc_ctx_tensors(ggml_context & ctx, backend_buffer_type * buft);

// Places tensor t at `addr` inside buffer `buf` and lets the buffer initialise it.
void tensor_alloc(backend_buffer * buf, ggml_tensor * t, void * addr);
// Points a view at its source's memory (the source must already have data) and lets the buffer
// initialise it.
void tensor_view_init(ggml_tensor * view);

// Convenience: whole-tensor copies through the tensor's buffer (or plain memcpy for host data).
void tensor_set(ggml_tensor * t, const void * data, size_t offset, size_t size);
void tensor_get(const ggml_tensor * t, void * data, size_t offset, size_t size);

} // namespace hexnpu
