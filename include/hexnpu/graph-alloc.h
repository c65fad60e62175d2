// Graph allocator (GGML's gallocr idea): plans where every tensor of a graph that has no memory yet
// goes, so that an intermediate reuses the memory of tensors whose last consumer has already run,
// then places the tensors in buffers sized to the plan's peak.
//
// What is placed: every graph tensor with data == nullptr that is not a view. Leaves (and sources
// outside the graph) are live from the start, since callers write them before computing; a node
// is live from its own step. Views take their source's memory and keep it alive while they are
// used. Memory is freed after its last consumer, except for tensors flagged OUTPUT and graph
// results (nodes no other node consumes), which keep theirs. Tensors that already have data
// (weights, or tensors placed by an earlier call) are left where they are, as in GGML: build a
// fresh graph per evaluation, or reserve() the largest graph first so that buffers never grow
// (growing a buffer releases the old one under tensors placed earlier). An output never shares
// memory with its inputs (no in-place reuse).
#pragma once

#include "hexnpu/backend.h"
#include "hexnpu/graph.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace hexnpu {

class graph_allocator {
  public:
    // For a tensor to place: the index of the buffer type (constructor order) that will hold it.
    // An empty picker puts everything in buffer type 0.
    using buffer_picker = std::function<size_t(const ggml_tensor *)>;

    explicit graph_allocator(backend_buffer_type * buft);
    explicit graph_allocator(std::vector<backend_buffer_type *> bufts);
    ~graph_allocator();
    graph_allocator(const graph_allocator &)             = delete;
    graph_allocator & operator=(const graph_allocator &) = delete;

    // Plans the graph and grows the buffers to its peak without placing anything; returns the
    // peak bytes summed over buffer types. Throws std::length_error when a peak exceeds the
    // buffer type's max_size (one buffer per type: graphs are not split across buffers).
    size_t reserve(const ggml_cgraph & graph, const buffer_picker & pick = {});
    // Plans the graph, grows the buffers as needed and sets data/buffer of every tensor to place.
    void   alloc_graph(ggml_cgraph & graph, const buffer_picker & pick = {});

    size_t           n_buffer_types() const { return bufts_.size(); }
    backend_buffer * buffer(size_t i) const { return buffers_[i].get(); }  // nullptr before any allocation
    size_t           buffer_size(size_t i) const { return buffers_[i] ? buffers_[i]->size() : 0; }

  private:
    struct plan;
    plan make_plan(const ggml_cgraph & graph, const buffer_picker & pick) const;
    void grow_buffers(const plan & p);

    std::vector<backend_buffer_type *>           bufts_;
    std::vector<std::unique_ptr<backend_buffer>> buffers_;
};

} // namespace hexnpu
