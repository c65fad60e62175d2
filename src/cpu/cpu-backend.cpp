#include "cpu-backend.h"

#include "cpu-ops.h"
#include "thread-pool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <new>
#include <string>
#include <thread>
#include <unistd.h>

namespace hexnpu {
namespace {

constexpr size_t kAlignment = 64;

// aligned_alloc wants a non-zero multiple of the alignment.
size_t allocation_size(size_t size) { return std::max(kAlignment, (size + kAlignment - 1) / kAlignment * kAlignment); }

class cpu_buffer final : public backend_buffer {
  public:
    cpu_buffer(backend_buffer_type * buft, size_t size)
        : backend_buffer(buft, size),
          data_(static_cast<uint8_t *>(std::aligned_alloc(kAlignment, allocation_size(size)))) {
        if (!data_) {
            throw std::bad_alloc();
        }
    }
    ~cpu_buffer() override { std::free(data_); }

    void * base() override { return data_; }
    void   set_tensor(ggml_tensor * t, const void * data, size_t offset, size_t size) override {
        std::memcpy(static_cast<uint8_t *>(t->data) + offset, data, size);
    }
    void get_tensor(const ggml_tensor * t, void * data, size_t offset, size_t size) override {
        std::memcpy(data, static_cast<const uint8_t *>(t->data) + offset, size);
    }
    void clear(uint8_t value) override { std::memset(data_, value, size()); }

  private:
    uint8_t * data_;
};

class cpu_buffer_type final : public backend_buffer_type {
  public:
    explicit cpu_buffer_type(backend_device * device) : device_(device) {}

    const char *                    name() const override { return "CPU"; }
    std::unique_ptr<backend_buffer> alloc_buffer(size_t size) override {
        return std::make_unique<cpu_buffer>(this, size);
    }
    size_t           alignment() const override { return kAlignment; }
    bool             is_host() const override { return true; }
    backend_device * device() const override { return device_; }

  private:
    backend_device * device_;
};

std::string cpu_model_name() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string   line;
    while (std::getline(cpuinfo, line)) {
        if (line.rfind("model name", 0) == 0) {
            const size_t colon = line.find(':');
            if (colon != std::string::npos && colon + 2 <= line.size()) {
                return line.substr(colon + 2);
            }
        }
    }
    return "unknown CPU";
}

// Which kernel family computes an op; nullptr for ops that only describe memory (views) or that
// this backend does not know.
struct op_family {
    bool (*supports)(const ggml_tensor *);
    void (*compute)(const cpu::compute_context &, ggml_tensor *);
};

const op_family * family_of(ggml_op op) {
    static constexpr op_family binary{cpu::supports_binary, cpu::compute_binary};
    static constexpr op_family unary{cpu::supports_unary, cpu::compute_unary};
    static constexpr op_family glu{cpu::supports_glu, cpu::compute_glu};
    static constexpr op_family norm{cpu::supports_norm, cpu::compute_norm};
    static constexpr op_family reduce{cpu::supports_reduce, cpu::compute_reduce};
    static constexpr op_family layout{cpu::supports_layout, cpu::compute_layout};
    static constexpr op_family rows{cpu::supports_rows, cpu::compute_rows};
    static constexpr op_family matmul{cpu::supports_matmul, cpu::compute_matmul};
    static constexpr op_family softmax{cpu::supports_softmax, cpu::compute_softmax};
    static constexpr op_family rope{cpu::supports_rope, cpu::compute_rope};
    static constexpr op_family flash_attn{cpu::supports_flash_attn, cpu::compute_flash_attn};
    static constexpr op_family im2col{cpu::supports_im2col, cpu::compute_im2col};
    static constexpr op_family triangular{cpu::supports_triangular, cpu::compute_triangular};
    static constexpr op_family linear_attn{cpu::supports_linear_attn, cpu::compute_linear_attn};
    switch (op) {
        case GGML_OP_ADD:
        case GGML_OP_SUB:
        case GGML_OP_MUL:
        case GGML_OP_DIV:
        case GGML_OP_ADD_ID:
            return &binary;
        case GGML_OP_UNARY:
        case GGML_OP_SQR:
        case GGML_OP_SQRT:
        case GGML_OP_LOG:
        case GGML_OP_SIN:
        case GGML_OP_COS:
        case GGML_OP_SCALE:
        case GGML_OP_CLAMP:
        case GGML_OP_LEAKY_RELU:
        case GGML_OP_FILL:
            return &unary;
        case GGML_OP_GLU:
            return &glu;
        case GGML_OP_NORM:
        case GGML_OP_RMS_NORM:
        case GGML_OP_L2_NORM:
            return &norm;
        case GGML_OP_SUM:
        case GGML_OP_ARGMAX:
        case GGML_OP_SUM_ROWS:
        case GGML_OP_MEAN:
        case GGML_OP_CUMSUM:
        case GGML_OP_ARGSORT:
        case GGML_OP_TOP_K:
            return &reduce;
        case GGML_OP_CPY:
        case GGML_OP_CONT:
        case GGML_OP_DUP:
        case GGML_OP_CONCAT:
        case GGML_OP_REPEAT:
        case GGML_OP_PAD:
        case GGML_OP_ROLL:
            return &layout;
        case GGML_OP_GET_ROWS:
        case GGML_OP_SET_ROWS:
            return &rows;
        case GGML_OP_MUL_MAT:
        case GGML_OP_MUL_MAT_ID:
            return &matmul;
        case GGML_OP_SOFT_MAX:
            return &softmax;
        case GGML_OP_ROPE:
            return &rope;
        case GGML_OP_FLASH_ATTN_EXT:
            return &flash_attn;
        case GGML_OP_IM2COL:
            return &im2col;
        case GGML_OP_TRI:
        case GGML_OP_DIAG:
        case GGML_OP_SOLVE_TRI:
            return &triangular;
        case GGML_OP_SSM_CONV:
        case GGML_OP_GATED_DELTA_NET:
            return &linear_attn;
        default:
            return nullptr;
    }
}

// Ops that only reinterpret memory: nothing to compute.
bool is_layout_only(ggml_op op) {
    return op == GGML_OP_NONE || op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE ||
           op == GGML_OP_TRANSPOSE;
}

class cpu_device final : public backend_device {
  public:
    cpu_device() : buffer_type_(this) {}

    const char *        name() const override { return "CPU"; }
    std::string         description() const override { return cpu_model_name(); }
    backend_device_type type() const override { return backend_device_type::cpu; }
    void                memory(size_t & free, size_t & total) const override {
        const size_t page = size_t(sysconf(_SC_PAGESIZE));
        total             = size_t(sysconf(_SC_PHYS_PAGES)) * page;
        free              = size_t(sysconf(_SC_AVPHYS_PAGES)) * page;
    }
    backend_buffer_type *    buffer_type() override { return &buffer_type_; }
    std::unique_ptr<backend> init_backend() override { return std::make_unique<cpu_backend>(this); }

    bool supports_op(const ggml_tensor * op) const override {
        if (is_layout_only(op->op)) {
            return true;
        }
        const op_family * family = family_of(op->op);
        return family && family->supports(op);
    }
    // The CPU reads and writes any host-visible memory in place.
    bool supports_buft(const backend_buffer_type * buft) const override { return buft->is_host(); }

  private:
    cpu_buffer_type buffer_type_;
};

std::string node_label(const ggml_tensor * t) {
    std::string label = ggml_op_desc(t);
    if (t->name[0]) {
        label += " '" + std::string(t->name) + "'";
    }
    return label;
}

} // namespace

std::unique_ptr<backend_device> make_cpu_device() { return std::make_unique<cpu_device>(); }

cpu_backend::cpu_backend(backend_device * device, int n_threads) : device_(device) { set_n_threads(n_threads); }

cpu_backend::~cpu_backend() = default;

void cpu_backend::set_n_threads(int n_threads) {
    if (n_threads <= 0) {
        n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
    }
    pool_.reset();  // join the old workers before starting new ones
    pool_ = std::make_unique<cpu::thread_pool>(n_threads);
}

int cpu_backend::n_threads() const { return pool_->size(); }

void cpu_backend::graph_compute(ggml_cgraph & graph) {
    const cpu::compute_context ctx{*pool_};
    for (ggml_tensor * node : graph.nodes) {
        if (is_layout_only(node->op) || ggml_nelements(node) == 0) {
            continue;
        }
        const op_family * family = family_of(node->op);
        if (!family || !family->supports(node)) {
            throw backend_error("CPU: unsupported node " + node_label(node));
        }
        if (!node->data) {
            throw backend_error("CPU: node " + node_label(node) + " has no data");
        }
        for (const ggml_tensor * src : node->src) {
            if (src && !src->data && ggml_nelements(src) > 0) {
                throw backend_error("CPU: an input of " + node_label(node) + " has no data");
            }
        }
        try {
            family->compute(ctx, node);
        } catch (const std::exception & e) {
            throw backend_error("CPU: " + node_label(node) + ": " + e.what());
        }
    }
}

} // namespace hexnpu
