#include "hexnpu/graph-alloc.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace hexnpu {
namespace {

size_t align_up(size_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

ggml_tensor * memory_root(ggml_tensor * t) { return t->view_src ? t->view_src : t; }

bool needs_placement(const ggml_tensor * t) { return t->data == nullptr && t->view_src == nullptr; }

std::string describe(const ggml_tensor * t) {
    return std::string("'") + t->name + "' (" + ggml_op_desc(t) + ")";
}

// The memory node n touches while it runs: its sources' and, for a view, the memory it writes.
// Each root appears once, so a node reading a tensor twice counts as one use.
std::vector<ggml_tensor *> roots_used_by(ggml_tensor * n) {
    std::vector<ggml_tensor *> roots;
    auto add = [&](ggml_tensor * r) {
        if (std::find(roots.begin(), roots.end(), r) == roots.end()) {
            roots.push_back(r);
        }
    };
    for (ggml_tensor * s : n->src) {
        if (s && s != n) {  // ggml_cast lists its result as its own destination
            add(memory_root(s));
        }
    }
    if (n->view_src) {
        add(n->view_src);
    }
    return roots;
}

// Offsets inside one buffer: best-fit over the free ranges, growing the end when nothing fits.
// Sizes are multiples of the alignment, so every offset stays aligned.
class address_space {
  public:
    size_t allocate(size_t size) {
        auto best = free_.end();
        for (auto it = free_.begin(); it != free_.end(); ++it) {
            if (it->size >= size && (best == free_.end() || it->size < best->size)) {
                best = it;
            }
        }
        if (best == free_.end()) {
            const size_t offset = end_;
            end_ += size;
            peak_ = std::max(peak_, end_);
            return offset;
        }
        const size_t offset = best->offset;
        best->offset += size;
        best->size -= size;
        if (best->size == 0) {
            free_.erase(best);
        }
        return offset;
    }

    void release(size_t offset, size_t size) {
        auto next = std::lower_bound(free_.begin(), free_.end(), offset,
                                     [](const range & r, size_t o) { return r.offset < o; });
        auto it   = free_.insert(next, range{offset, size});
        if (auto after = it + 1; after != free_.end() && it->offset + it->size == after->offset) {
            it->size += after->size;
            free_.erase(after);
        }
        if (it != free_.begin()) {
            if (auto before = it - 1; before->offset + before->size == it->offset) {
                before->size += it->size;
                it = free_.erase(it) - 1;
            }
        }
        // A free range at the top lowers the end: later allocations may then grow past it.
        if (it->offset + it->size == end_) {
            end_ = it->offset;
            free_.erase(it);
        }
    }

    size_t peak() const { return peak_; }

  private:
    struct range {
        size_t offset;
        size_t size;
    };
    std::vector<range> free_;  // sorted by offset; neighbours are never adjacent (merged)
    size_t             end_  = 0;
    size_t             peak_ = 0;
};

} // namespace

void tensor_view_init(ggml_tensor * view) {
    ggml_tensor * src = view->view_src;
    if (src->data == nullptr) {
        throw std::logic_error("view " + describe(view) + ": its source " + describe(src) + " has no memory yet");
    }
    view->buffer = src->buffer;
    view->data   = static_cast<uint8_t *>(src->data) + view->view_offs;
    if (view->buffer) {
        view->buffer->init_tensor(view);
    }
}

struct graph_allocator::plan {
    struct placement {
        ggml_tensor * tensor;
        size_t        buffer;
        size_t        offset;
    };
    std::vector<placement> placements;
    std::vector<size_t>    peaks;  // per buffer type
};

graph_allocator::graph_allocator(backend_buffer_type * buft) : graph_allocator(std::vector{buft}) {}

graph_allocator::graph_allocator(std::vector<backend_buffer_type *> bufts)
    : bufts_(std::move(bufts)), buffers_(bufts_.size()) {
    if (bufts_.empty() || std::find(bufts_.begin(), bufts_.end(), nullptr) != bufts_.end()) {
        throw std::invalid_argument("graph_allocator: needs one or more buffer types, none null");
    }
}

graph_allocator::~graph_allocator() = default;

graph_allocator::plan graph_allocator::make_plan(const ggml_cgraph & graph, const buffer_picker & pick) const {
    const std::unordered_set<const ggml_tensor *> in_nodes(graph.nodes.begin(), graph.nodes.end());

    std::unordered_map<const ggml_tensor *, int> uses_left;   // per memory root
    std::unordered_set<const ggml_tensor *>      consumed;    // tensors some node reads
    std::unordered_set<const ggml_tensor *>      keep;        // roots never freed
    std::vector<ggml_tensor *>                   inputs;      // placed before the first node
    std::unordered_set<const ggml_tensor *>      seen_inputs;
    auto note_input = [&](ggml_tensor * root) {
        if (!in_nodes.count(root) && needs_placement(root) && seen_inputs.insert(root).second) {
            inputs.push_back(root);
        }
    };
    auto note_output_flag = [&](ggml_tensor * t) {
        if (t->flags & GGML_TENSOR_FLAG_OUTPUT) {
            keep.insert(memory_root(t));
        }
    };
    for (ggml_tensor * leaf : graph.leafs) {
        note_input(memory_root(leaf));
        note_output_flag(leaf);
    }
    for (ggml_tensor * n : graph.nodes) {
        for (ggml_tensor * root : roots_used_by(n)) {
            ++uses_left[root];
            note_input(root);
        }
        for (ggml_tensor * s : n->src) {
            if (s && s != n) {
                consumed.insert(s);
                note_output_flag(s);
            }
        }
        note_output_flag(n);
    }
    for (ggml_tensor * n : graph.nodes) {
        if (!consumed.count(n)) {
            keep.insert(memory_root(n));
        }
    }

    plan                         p;
    std::vector<address_space>   spaces(bufts_.size());
    struct block {
        size_t buffer, offset, size;
    };
    std::unordered_map<const ggml_tensor *, block> placed;
    auto place = [&](ggml_tensor * t) {
        const size_t b = pick ? pick(t) : 0;
        if (b >= bufts_.size()) {
            throw std::out_of_range("graph_allocator: buffer type index out of range for " + describe(t));
        }
        const size_t alignment = bufts_[b]->alignment();
        // Never zero bytes: every placed tensor gets an address of its own.
        const size_t size   = std::max(align_up(bufts_[b]->alloc_size(t), alignment), alignment);
        const size_t offset = spaces[b].allocate(size);
        placed.emplace(t, block{b, offset, size});
        p.placements.push_back({t, b, offset});
    };

    for (ggml_tensor * t : inputs) {
        place(t);
    }
    std::unordered_set<const ggml_tensor *> done;
    for (ggml_tensor * n : graph.nodes) {
        if (n->view_src && in_nodes.count(n->view_src) && !done.count(n->view_src)) {
            throw std::logic_error("graph_allocator: view " + describe(n) + " comes before its source " +
                                   describe(n->view_src));
        }
        if (needs_placement(n)) {
            place(n);
        }
        done.insert(n);
        // Sources are freed only after the node is placed: an output never overlaps its inputs.
        for (ggml_tensor * root : roots_used_by(n)) {
            if (--uses_left[root] == 0 && !keep.count(root)) {
                if (auto it = placed.find(root); it != placed.end()) {
                    spaces[it->second.buffer].release(it->second.offset, it->second.size);
                }
            }
        }
    }

    for (size_t b = 0; b < bufts_.size(); ++b) {
        p.peaks.push_back(spaces[b].peak());
        if (p.peaks[b] > bufts_[b]->max_size()) {
            throw std::length_error(std::string("graph_allocator: the graph needs ") + std::to_string(p.peaks[b]) +
                                    " bytes of " + bufts_[b]->name() + ", more than its max_size " +
                                    std::to_string(bufts_[b]->max_size()));
        }
    }
    return p;
}

void graph_allocator::grow_buffers(const plan & p) {
    for (size_t b = 0; b < bufts_.size(); ++b) {
        if (p.peaks[b] > buffer_size(b)) {
            buffers_[b].reset();  // release first: old and new need not fit in memory together
            buffers_[b] = bufts_[b]->alloc_buffer(p.peaks[b]);
            buffers_[b]->set_usage(buffer_usage::compute);
        }
    }
}

size_t graph_allocator::reserve(const ggml_cgraph & graph, const buffer_picker & pick) {
    const plan p = make_plan(graph, pick);
    grow_buffers(p);
    size_t total = 0;
    for (size_t peak : p.peaks) {
        total += peak;
    }
    return total;
}

void graph_allocator::alloc_graph(ggml_cgraph & graph, const buffer_picker & pick) {
    const plan p = make_plan(graph, pick);
    grow_buffers(p);
    for (const plan::placement & pl : p.placements) {
        backend_buffer * buf = buffers_[pl.buffer].get();
        tensor_alloc(buf, pl.tensor, static_cast<uint8_t *>(buf->base()) + pl.offset);
    }
    // Views last: their sources all have memory now.
    auto init_view = [](ggml_tensor * t) {
        if (t->view_src && t->data == nullptr) {
            tensor_view_init(t);
        }
    };
    for (ggml_tensor * leaf : graph.leafs) {
        init_view(leaf);
    }
    for (ggml_tensor * n : graph.nodes) {
        init_view(n);
    }
}

} // namespace hexnpu
