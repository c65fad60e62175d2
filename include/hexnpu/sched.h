// Scheduler: runs one graph on several backends. Each node goes to the first backend (priority
// order) whose device supports the op and can read the buffers that already hold its inputs
// (weights pin ops to devices that can read them); consecutive nodes on one backend form a split.
// A node that the last non-fallback backend used can run stays there, so with several devices
// (layer split) a layer's ops follow its weights rather than the priority order.
// Where a backend cannot read a tensor produced elsewhere, the scheduler copies it into that
// backend's buffer type before the split runs; a host-visible buffer is read in place by any
// device that accepts it (unified memory, no copy). Intermediates of all splits are planned
// together by one graph_allocator, so memory is reused across splits too.
//
// Views that only reinterpret memory (VIEW, RESHAPE, PERMUTE, TRANSPOSE) never start a split and
// are not sent to backends: their data pointers are set when the graph is allocated.
// If no backend can read a pinned input, the first backend that supports the op gets it, with a
// copy of that input. A node that writes into existing memory (CPY, SET_ROWS, a tensor that already
// has a buffer) only runs on a backend that can access that memory.
#pragma once

#include "hexnpu/backend.h"
#include "hexnpu/graph-alloc.h"
#include "hexnpu/graph.h"

#include <cstdio>
#include <memory>
#include <unordered_map>
#include <vector>

namespace hexnpu {

class backend_sched {
  public:
    // backends: priority order, the last one the fallback. bufts[i]: where backend i's
    // intermediates live (empty: each device's default buffer type).
    explicit backend_sched(std::vector<backend *> backends, std::vector<backend_buffer_type *> bufts = {});
    ~backend_sched();
    backend_sched(const backend_sched &)             = delete;
    backend_sched & operator=(const backend_sched &) = delete;

    // Assigns and splits the graph, plans copies and gives memory to every tensor that has none.
    // Callers then write the inputs and call graph_compute. Throws backend_error when no backend
    // can compute a node.
    void alloc_graph(ggml_cgraph & graph);
    // Computes the splits in order, copying inputs across as planned. Plans and allocates first
    // unless alloc_graph was last called for this same graph.
    void graph_compute(ggml_cgraph & graph);

    // The plan of the last allocated graph.
    backend * backend_of(const ggml_tensor * node) const;  // nullptr for leaves and tensors outside it
    int       n_splits() const { return int(splits_.size()); }
    int       n_copies() const;
    // One line per split (backend, nodes, copied inputs), one per node, then nodes per backend.
    void      print_plan(FILE * out) const;

  private:
    struct input_copy {
        ggml_tensor * original;
        ggml_tensor * copy;
    };
    struct split {
        size_t                  backend_index;
        size_t                  first_node, end_node;  // [first, end) in the graph's nodes
        std::vector<input_copy> copies;
        ggml_cgraph             compute;               // the nodes a backend runs (views left out)
    };
    // A source slot pointed at a copy while the graph is allocated or computed.
    struct redirect {
        ggml_tensor * node;
        int           slot;
        ggml_tensor * copy;
    };
    class redirect_guard;

    void                        plan(ggml_cgraph & graph);
    size_t                      choose_backend(ggml_tensor * node, size_t preferred) const;
    const backend_buffer_type * location(const ggml_tensor * root) const;
    bool                        can_write(const backend_device * dev, const ggml_tensor * node) const;
    bool                        can_read_pinned(const backend_device * dev, const ggml_tensor * node) const;
    void                        plan_copies(split & s);

    std::vector<backend *>                         backends_;
    std::vector<backend_buffer_type *>             bufts_;
    std::vector<size_t>                            buft_index_;  // backend -> allocator buffer type
    std::unique_ptr<graph_allocator>               galloc_;

    std::vector<ggml_tensor *>                     planned_nodes_;
    std::unordered_map<const ggml_tensor *, size_t> assignment_;  // node or copy -> backend index
    std::unordered_map<const ggml_tensor *, size_t> home_;        // memory-less input -> backend index
    std::vector<split>                             splits_;
    std::vector<redirect>                          redirects_;
    std::unique_ptr<ggml_context>                  copies_ctx_;
};

} // namespace hexnpu
