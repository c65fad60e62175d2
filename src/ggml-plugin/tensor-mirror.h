// ggml tensors seen as hexnpu tensors: a mirror copies a ggml tensor's fields (type, shape,
// strides, op and op_params with the sub-op ids renumbered, data, name) into a hexnpu::ggml_tensor
// whose buffer is the hexnpu buffer behind the plugin's ggml buffer. Mirrors of a graph's nodes
// point at mirrors of their sources, so hexnpu's supports_op and graph_compute see the same graph.
#pragma once

#include "ggml-abi.h"

#include "hexnpu/graph.h"
#include "hexnpu/tensor.h"

#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace hexnpu::ggml_plugin {

// The hexnpu op for a ggml op id of API versions 2 and 3 (GGML_OP_COUNT when hexnpu has none).
ggml_op hexnpu_op_of(int32_t ggml_op_id);

// The loading ggml's exported ggml_op_name, ggml_unary_op_name and ggml_glu_op_name.
struct ggml_names {
    const char * (*op)(int32_t);
    const char * (*unary)(int32_t);
    const char * (*glu)(int32_t);
};
// "" when the loading ggml names every op, unary and GLU id the plugin maps as the plugin does
// (the ids move between ggml versions); otherwise the first that differs.
std::string mismatched_op_id(const ggml_names & names);

class mirror_set {
  public:
    // The mirror of t: created on first use, its fields refreshed from t on every call within one
    // refresh generation. Sources and the view source are mirrored too, unless `shallow` (buffer
    // calls need only the tensor itself and whether it is a view). Returns nullptr and sets
    // error() when t cannot be expressed in hexnpu terms (an op, sub-op or type hexnpu lacks).
    ggml_tensor * mirror(const ggml_abi::tensor * t, bool shallow = false);
    // Starts a new generation: the next mirror() call of each tensor re-reads its fields.
    void          refresh() { ++generation_; }
    void          clear();
    const std::string & error() const { return error_; }

  private:
    struct entry {
        ggml_tensor * mirror     = nullptr;
        uint64_t      generation = 0;
    };
    entry & entry_of(const ggml_abi::tensor * t);  // created unfilled on first use
    bool    fill(const ggml_abi::tensor * t, ggml_tensor * m, bool shallow);

    std::deque<ggml_tensor>                                store_;
    std::unordered_map<const ggml_abi::tensor *, entry>    index_;
    uint64_t                                               generation_ = 1;
    std::string                                            error_;
};

// A ggml graph translated once per graph shape (the same node sequence) and refreshed on every
// compute, since ggml may move tensor data between evaluations.
class graph_translation {
  public:
    // The hexnpu graph for g; throws backend_error naming a node hexnpu cannot express.
    ggml_cgraph & translate(const ggml_abi::cgraph & g);
    // How often the node list had to be built anew (a changed graph shape) since creation.
    uint64_t      rebuilds() const { return rebuilds_; }

  private:
    std::vector<const ggml_abi::tensor *> key_;
    mirror_set                            mirrors_;
    ggml_cgraph                           graph_;
    uint64_t                              rebuilds_ = 0;
};

// The translations of the graphs one backend computes. ggml's scheduler hands a backend one graph
// per split, dozens per model evaluation, and the same splits again at the next token: one
// translation per split, found by its first node and node count.
class graph_cache {
  public:
    ggml_cgraph & translate(const ggml_abi::cgraph & g);

  private:
    static constexpr size_t kMaxGraphs = 4096;  // beyond: a workload of ever new graphs; start over
    std::unordered_map<const ggml_abi::tensor *, std::unordered_map<int, graph_translation>> by_first_node_;
    size_t                                                                                 size_ = 0;
};

} // namespace hexnpu::ggml_plugin
