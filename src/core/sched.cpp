#include "hexnpu/sched.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace hexnpu {
namespace {

// Ops that only reinterpret their source's memory: nothing to compute.
bool is_view_op(ggml_op op) {
    return op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE || op == GGML_OP_TRANSPOSE;
}

ggml_tensor * memory_root(ggml_tensor * t) { return t->view_src ? t->view_src : t; }

const char * display_name(const ggml_tensor * t) { return t->name[0] ? t->name : "(unnamed)"; }

std::string describe(const ggml_tensor * t) {
    return std::string("'") + display_name(t) + "' (" + ggml_op_desc(t) + ")";
}

// Byte copy between buffers (same layout on both sides); staged through host memory when
// neither side is host-visible.
void copy_tensor(const ggml_tensor * src, ggml_tensor * dst) {
    const size_t size = ggml_nbytes(src);
    if (src->buffer->buft()->is_host()) {
        tensor_set(dst, src->data, 0, size);
    } else if (dst->buffer->buft()->is_host()) {
        tensor_get(src, dst->data, 0, size);
    } else {
        std::vector<uint8_t> staging(size);
        tensor_get(src, staging.data(), 0, size);
        tensor_set(dst, staging.data(), 0, size);
    }
}

} // namespace

// Points the planned source slots at their copies for its lifetime. A copy's src[0] is the
// original it was made from, which is what the slot gets back.
class backend_sched::redirect_guard {
  public:
    explicit redirect_guard(const std::vector<redirect> & redirects) : redirects_(redirects) {
        for (const redirect & r : redirects_) {
            r.node->src[r.slot] = r.copy;
        }
    }
    ~redirect_guard() {
        for (const redirect & r : redirects_) {
            r.node->src[r.slot] = r.copy->src[0];
        }
    }
    redirect_guard(const redirect_guard &)             = delete;
    redirect_guard & operator=(const redirect_guard &) = delete;

  private:
    const std::vector<redirect> & redirects_;
};

backend_sched::backend_sched(std::vector<backend *> backends, std::vector<backend_buffer_type *> bufts)
    : backends_(std::move(backends)), bufts_(std::move(bufts)) {
    if (backends_.empty() || std::find(backends_.begin(), backends_.end(), nullptr) != backends_.end()) {
        throw std::invalid_argument("backend_sched: needs one or more backends, none null");
    }
    if (bufts_.empty()) {
        for (backend * b : backends_) {
            bufts_.push_back(b->device()->buffer_type());
        }
    }
    if (bufts_.size() != backends_.size()) {
        throw std::invalid_argument("backend_sched: one buffer type per backend");
    }
    std::vector<backend_buffer_type *> distinct;
    for (size_t i = 0; i < backends_.size(); ++i) {
        if (!backends_[i]->device()->supports_buft(bufts_[i])) {
            throw std::invalid_argument(std::string("backend_sched: backend ") + backends_[i]->name() +
                                        " cannot read its buffer type " + bufts_[i]->name());
        }
        // Backends sharing a buffer type share its buffer, so memory is reused across their splits.
        auto it = std::find(distinct.begin(), distinct.end(), bufts_[i]);
        if (it == distinct.end()) {
            it = distinct.insert(distinct.end(), bufts_[i]);
        }
        buft_index_.push_back(size_t(it - distinct.begin()));
    }
    galloc_ = std::make_unique<graph_allocator>(distinct);
}

backend_sched::~backend_sched() = default;

// Where a tensor's memory is or will be: its buffer, else the buffer type of the backend that
// computes it or first reads it; nullptr while undecided.
const backend_buffer_type * backend_sched::location(const ggml_tensor * root) const {
    if (root->buffer) {
        return root->buffer->buft();
    }
    if (root->data) {
        throw backend_error("sched: tensor " + describe(root) +
                            " has memory outside any backend buffer (allocate it with alloc_ctx_tensors)");
    }
    if (auto it = assignment_.find(root); it != assignment_.end()) {
        return bufts_[it->second];
    }
    if (auto it = home_.find(root); it != home_.end()) {
        return bufts_[it->second];
    }
    return nullptr;
}

// A node's result must land in memory the device can access: a view writes into its source, and
// a tensor may already have a buffer. Other results are placed where the node runs.
bool backend_sched::can_write(const backend_device * dev, const ggml_tensor * node) const {
    if (!node->view_src && !node->buffer && !node->data) {
        return true;
    }
    const backend_buffer_type * loc = location(node->view_src ? node->view_src : node);
    return !loc || dev->supports_buft(loc);
}

// Inputs already in a buffer (weights, caches) can only be read in place by devices accepting it.
bool backend_sched::can_read_pinned(const backend_device * dev, const ggml_tensor * node) const {
    for (ggml_tensor * s : node->src) {
        if (!s || s == node) {
            continue;
        }
        const ggml_tensor * root = memory_root(s);
        if ((root->buffer || root->data) && !dev->supports_buft(location(root))) {
            return false;
        }
    }
    return true;
}

size_t backend_sched::choose_backend(ggml_tensor * node, size_t preferred) const {
    auto fits = [&](size_t i) {
        const backend_device * dev = backends_[i]->device();
        return dev->supports_op(node) && can_write(dev, node) && can_read_pinned(dev, node);
    };
    if (preferred < backends_.size() && fits(preferred)) {
        return preferred;
    }
    for (size_t i = 0; i < backends_.size(); ++i) {
        if (fits(i)) {
            return i;
        }
    }
    // Nobody reads every pinned input in place: the first capable backend gets copies of them.
    for (size_t i = 0; i < backends_.size(); ++i) {
        const backend_device * dev = backends_[i]->device();
        if (dev->supports_op(node) && can_write(dev, node)) {
            return i;
        }
    }
    throw backend_error("sched: no backend can compute node " + describe(node));
}

void backend_sched::plan_copies(split & s) {
    backend *              b   = backends_[s.backend_index];
    const backend_device * dev = b->device();
    for (ggml_tensor * n : s.compute.nodes) {
        for (int slot = 0; slot < GGML_MAX_SRC; ++slot) {
            ggml_tensor * src = n->src[slot];
            // The node's own destination (CPY, SET_ROWS) was checked by can_write: never copied.
            if (!src || src == n || memory_root(src) == memory_root(n)) {
                continue;
            }
            if (dev->supports_buft(location(memory_root(src)))) {
                continue;
            }
            auto it = std::find_if(s.copies.begin(), s.copies.end(),
                                   [&](const input_copy & c) { return c.original == src; });
            if (it == s.copies.end()) {
                ggml_tensor * c = copies_ctx_->new_tensor(src->type, GGML_MAX_DIMS, src->ne);
                std::copy(src->nb, src->nb + GGML_MAX_DIMS, c->nb);  // same layout: a byte copy
                c->src[0] = src;  // keeps the original live until the copy is made
                ggml_set_name(c, (std::string(src->name) + "@" + b->name()).c_str());
                assignment_[c] = s.backend_index;
                it = s.copies.insert(s.copies.end(), input_copy{src, c});
            }
            redirects_.push_back({n, slot, it->copy});
        }
    }
}

void backend_sched::plan(ggml_cgraph & graph) {
    assignment_.clear();
    home_.clear();
    splits_.clear();
    redirects_.clear();
    planned_nodes_.clear();
    copies_ctx_ = std::make_unique<ggml_context>();

    // Nodes that compute, in order. Memory-less inputs live where their first reader runs. A node
    // stays on the last non-fallback backend used when that one can run it (a layer whose weights
    // pinned it to one of several devices keeps its other ops there too).
    size_t preferred = backends_.size();
    for (ggml_tensor * n : graph.nodes) {
        if (is_view_op(n->op)) {
            continue;
        }
        const size_t b    = choose_backend(n, preferred);
        assignment_[n]    = b;
        if (b + 1 < backends_.size()) {
            preferred = b;
        }
        auto settle_input = [&](ggml_tensor * root) {
            if (!root->data && !assignment_.count(root)) {
                home_.emplace(root, b);
            }
        };
        for (ggml_tensor * s : n->src) {
            if (s && s != n) {
                settle_input(memory_root(s));
            }
        }
        if (n->view_src) {
            settle_input(n->view_src);
        }
    }

    // Views join the run they sit in; leading views join the first one.
    size_t current = backends_.size() - 1;
    for (ggml_tensor * n : graph.nodes) {
        if (!is_view_op(n->op)) {
            current = assignment_.at(n);
            break;
        }
    }
    for (ggml_tensor * n : graph.nodes) {
        if (is_view_op(n->op)) {
            assignment_[n] = current;
        } else {
            current = assignment_.at(n);
        }
    }

    for (size_t i = 0; i < graph.nodes.size(); ++i) {
        ggml_tensor * n = graph.nodes[i];
        const size_t  b = assignment_.at(n);
        if (splits_.empty() || splits_.back().backend_index != b) {
            splits_.push_back(split{b, i, i, {}, {}});
        }
        splits_.back().end_node = i + 1;
        if (!is_view_op(n->op)) {
            splits_.back().compute.nodes.push_back(n);
        }
    }
    for (split & s : splits_) {
        plan_copies(s);
    }
}

void backend_sched::alloc_graph(ggml_cgraph & graph) {
    plan(graph);

    // One plan for all splits: each split's copies are made (and so become live) right before it.
    ggml_cgraph combined;
    combined.leafs = graph.leafs;
    for (const split & s : splits_) {
        for (const input_copy & c : s.copies) {
            combined.nodes.push_back(c.copy);
        }
        combined.nodes.insert(combined.nodes.end(), graph.nodes.begin() + std::ptrdiff_t(s.first_node),
                              graph.nodes.begin() + std::ptrdiff_t(s.end_node));
    }
    redirect_guard redirected(redirects_);
    galloc_->alloc_graph(combined, [this](const ggml_tensor * t) {
        if (auto it = assignment_.find(t); it != assignment_.end()) {
            return buft_index_[it->second];
        }
        if (auto it = home_.find(t); it != home_.end()) {
            return buft_index_[it->second];
        }
        return buft_index_.back();  // an input no computing node reads
    });
    planned_nodes_ = graph.nodes;
}

void backend_sched::graph_compute(ggml_cgraph & graph) {
    if (planned_nodes_ != graph.nodes) {
        alloc_graph(graph);
    }
    redirect_guard redirected(redirects_);
    for (split & s : splits_) {
        for (const input_copy & c : s.copies) {
            copy_tensor(c.original, c.copy);
        }
        if (!s.compute.nodes.empty()) {
            backend * b     = backends_[s.backend_index];
            s.compute.whole = &graph;  // whose readers a fusing backend counts
            b->graph_compute(s.compute);
            b->synchronize();  // the next split may copy or read what this one wrote
        }
    }
}

backend * backend_sched::backend_of(const ggml_tensor * node) const {
    auto it = assignment_.find(node);
    return it == assignment_.end() ? nullptr : backends_[it->second];
}

int backend_sched::n_copies() const {
    int n = 0;
    for (const split & s : splits_) {
        n += int(s.copies.size());
    }
    return n;
}

void backend_sched::print_plan(FILE * out) const {
    std::fprintf(out, "sched: %zu nodes, %d splits, %d copies\n", planned_nodes_.size(), n_splits(), n_copies());
    for (size_t k = 0; k < splits_.size(); ++k) {
        const split & s = splits_[k];
        std::fprintf(out, "split %zu on %s: nodes %zu..%zu", k, backends_[s.backend_index]->name(), s.first_node,
                     s.end_node - 1);
        for (size_t i = 0; i < s.copies.size(); ++i) {
            const input_copy & c = s.copies[i];
            std::fprintf(out, "%s%s (%s -> %s)", i == 0 ? ", copies in: " : ", ", display_name(c.original),
                         c.original->buffer->buft()->name(), c.copy->buffer->buft()->name());
        }
        std::fprintf(out, "\n");
        for (size_t i = s.first_node; i < s.end_node; ++i) {
            const ggml_tensor * n = planned_nodes_[i];
            std::fprintf(out, "  %4zu %-14s %-24s <-", i, ggml_op_desc(n), display_name(n));
            for (const ggml_tensor * src : n->src) {
                if (src && src != n) {
                    std::fprintf(out, " %s", display_name(src));
                }
            }
            std::fprintf(out, "\n");
        }
    }
    std::fprintf(out, "nodes per backend:");
    for (size_t b = 0; b < backends_.size(); ++b) {
        size_t count = 0;
        for (const ggml_tensor * n : planned_nodes_) {
            count += assignment_.at(n) == b ? 1 : 0;
        }
        std::fprintf(out, " %s %zu", backends_[b]->name(), count);
    }
    std::fprintf(out, "\n");
}

} // namespace hexnpu
