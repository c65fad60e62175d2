#include "tensor-mirror.h"

#include "plugin-buffer.h"

#include "hexnpu/backend.h"

#include <algorithm>
#include <cstring>
#include <optional>

namespace hexnpu::ggml_plugin {
namespace {

namespace ids = ggml_abi::op_ids;

struct op_pair {
    int32_t ggml_id;
    ggml_op op;
};

constexpr op_pair kOps[] = {
    {ids::NONE, GGML_OP_NONE},
    {ids::DUP, GGML_OP_DUP},
    {ids::ADD, GGML_OP_ADD},
    {ids::ADD_ID, GGML_OP_ADD_ID},
    {ids::SUB, GGML_OP_SUB},
    {ids::MUL, GGML_OP_MUL},
    {ids::DIV, GGML_OP_DIV},
    {ids::SQR, GGML_OP_SQR},
    {ids::SQRT, GGML_OP_SQRT},
    {ids::LOG, GGML_OP_LOG},
    {ids::SIN, GGML_OP_SIN},
    {ids::COS, GGML_OP_COS},
    {ids::SUM, GGML_OP_SUM},
    {ids::SUM_ROWS, GGML_OP_SUM_ROWS},
    {ids::CUMSUM, GGML_OP_CUMSUM},
    {ids::MEAN, GGML_OP_MEAN},
    {ids::ARGMAX, GGML_OP_ARGMAX},
    {ids::REPEAT, GGML_OP_REPEAT},
    {ids::CONCAT, GGML_OP_CONCAT},
    {ids::NORM, GGML_OP_NORM},
    {ids::RMS_NORM, GGML_OP_RMS_NORM},
    {ids::L2_NORM, GGML_OP_L2_NORM},
    {ids::MUL_MAT, GGML_OP_MUL_MAT},
    {ids::MUL_MAT_ID, GGML_OP_MUL_MAT_ID},
    {ids::SCALE, GGML_OP_SCALE},
    {ids::CPY, GGML_OP_CPY},
    {ids::CONT, GGML_OP_CONT},
    {ids::RESHAPE, GGML_OP_RESHAPE},
    {ids::VIEW, GGML_OP_VIEW},
    {ids::PERMUTE, GGML_OP_PERMUTE},
    {ids::TRANSPOSE, GGML_OP_TRANSPOSE},
    {ids::GET_ROWS, GGML_OP_GET_ROWS},
    {ids::SET_ROWS, GGML_OP_SET_ROWS},
    {ids::SOFT_MAX, GGML_OP_SOFT_MAX},
    {ids::ROPE, GGML_OP_ROPE},
    {ids::CLAMP, GGML_OP_CLAMP},
    {ids::PAD, GGML_OP_PAD},
    {ids::ROLL, GGML_OP_ROLL},
    {ids::IM2COL, GGML_OP_IM2COL},
    {ids::DIAG, GGML_OP_DIAG},
    {ids::TRI, GGML_OP_TRI},
    {ids::SSM_CONV, GGML_OP_SSM_CONV},
    {ids::SOLVE_TRI, GGML_OP_SOLVE_TRI},
    {ids::GATED_DELTA_NET, GGML_OP_GATED_DELTA_NET},
    {ids::ARGSORT, GGML_OP_ARGSORT},
    {ids::TOP_K, GGML_OP_TOP_K},
    {ids::LEAKY_RELU, GGML_OP_LEAKY_RELU},
    {ids::FILL, GGML_OP_FILL},
    {ids::FLASH_ATTN_EXT, GGML_OP_FLASH_ATTN_EXT},
    {ids::UNARY, GGML_OP_UNARY},
    {ids::GLU, GGML_OP_GLU},
};

struct unary_pair {
    int32_t       ggml_id;
    ggml_unary_op op;
};

constexpr unary_pair kUnary[] = {
    {ggml_abi::unary_ids::ABS, GGML_UNARY_OP_ABS},         {ggml_abi::unary_ids::NEG, GGML_UNARY_OP_NEG},
    {ggml_abi::unary_ids::TANH, GGML_UNARY_OP_TANH},       {ggml_abi::unary_ids::RELU, GGML_UNARY_OP_RELU},
    {ggml_abi::unary_ids::SIGMOID, GGML_UNARY_OP_SIGMOID}, {ggml_abi::unary_ids::GELU, GGML_UNARY_OP_GELU},
    {ggml_abi::unary_ids::GELU_QUICK, GGML_UNARY_OP_GELU_QUICK}, {ggml_abi::unary_ids::SILU, GGML_UNARY_OP_SILU},
    {ggml_abi::unary_ids::EXP, GGML_UNARY_OP_EXP},         {ggml_abi::unary_ids::SOFTPLUS, GGML_UNARY_OP_SOFTPLUS},
    {ggml_abi::unary_ids::GELU_ERF, GGML_UNARY_OP_GELU_ERF},   {ggml_abi::unary_ids::STEP, GGML_UNARY_OP_STEP},
};

struct glu_pair {
    int32_t     ggml_id;
    ggml_glu_op op;
};

constexpr glu_pair kGlu[] = {
    {ggml_abi::glu_ids::GEGLU, GGML_GLU_OP_GEGLU},
    {ggml_abi::glu_ids::SWIGLU, GGML_GLU_OP_SWIGLU},
    {ggml_abi::glu_ids::SWIGLU_OAI, GGML_GLU_OP_SWIGLU_OAI},
    {ggml_abi::glu_ids::REGLU, GGML_GLU_OP_REGLU},
    {ggml_abi::glu_ids::GEGLU_ERF, GGML_GLU_OP_GEGLU_ERF},
    {ggml_abi::glu_ids::GEGLU_QUICK, GGML_GLU_OP_GEGLU_QUICK},
    {ggml_abi::glu_ids::SWIGLU_CLAMP, GGML_GLU_OP_SWIGLU_CLAMP},
};

template <class Pair, size_t N> auto find_op(const Pair (&table)[N], int32_t id) -> std::optional<decltype(table[0].op)> {
    for (const Pair & p : table) {
        if (p.ggml_id == id) {
            return p.op;
        }
    }
    return std::nullopt;
}

std::optional<ggml_unary_op> unary_of(int32_t id) { return find_op(kUnary, id); }
std::optional<ggml_glu_op>   glu_of(int32_t id) { return find_op(kGlu, id); }

std::string describe(const ggml_abi::tensor * t) { return std::string("'") + t->name + "'"; }

} // namespace

ggml_op hexnpu_op_of(int32_t ggml_op_id) { return find_op(kOps, ggml_op_id).value_or(GGML_OP_COUNT); }

std::string mismatched_op_id(const ggml_names & names) {
    auto check = [](const char * kind, int32_t id, const char * theirs, const char * ours) {
        return theirs != nullptr && std::strcmp(theirs, ours) == 0
                   ? std::string()
                   : std::string(kind) + " " + std::to_string(id) + " is " + (theirs ? theirs : "(null)") +
                         " in the loading ggml, " + ours + " in the plugin";
    };
    for (const op_pair & p : kOps) {
        if (std::string e = check("op", p.ggml_id, names.op(p.ggml_id), ggml_op_name(p.op)); !e.empty()) {
            return e;
        }
    }
    for (const unary_pair & p : kUnary) {
        if (std::string e = check("unary op", p.ggml_id, names.unary(p.ggml_id), ggml_unary_op_name(p.op)); !e.empty()) {
            return e;
        }
    }
    for (const glu_pair & p : kGlu) {
        if (std::string e = check("GLU op", p.ggml_id, names.glu(p.ggml_id), ggml_glu_op_name(p.op)); !e.empty()) {
            return e;
        }
    }
    return "";
}

void mirror_set::clear() {
    store_.clear();
    index_.clear();
    error_.clear();
}

mirror_set::entry & mirror_set::entry_of(const ggml_abi::tensor * t) {
    entry & e = index_[t];
    if (e.mirror == nullptr) {
        e.mirror = &store_.emplace_back();
    }
    return e;
}

ggml_tensor * mirror_set::mirror(const ggml_abi::tensor * t, bool shallow) {
    if (t == nullptr) {
        return nullptr;
    }
    entry & root = entry_of(t);
    if (root.generation == generation_) {
        return root.mirror;
    }
    if (shallow) {
        return fill(t, root.mirror, true) ? root.mirror : nullptr;
    }
    // Depth-first over sources and view sources with a work list, not recursion: a graph may be
    // thousands of nodes deep. A mirror's source pointers are set before the sources are filled
    // (mirrors never move); each tensor is filled once per generation, marked before its fill.
    std::vector<const ggml_abi::tensor *> pending{t};
    while (!pending.empty()) {
        const ggml_abi::tensor * cur = pending.back();
        pending.pop_back();
        entry & e = entry_of(cur);
        if (e.generation == generation_) {
            continue;
        }
        e.generation = generation_;
        if (!fill(cur, e.mirror, false)) {
            e.generation = 0;  // a failed fill is never taken for a fresh one
            return nullptr;
        }
        for (const ggml_abi::tensor * s : cur->src) {
            if (s != nullptr) {
                pending.push_back(s);
            }
        }
        if (cur->view_src != nullptr) {
            pending.push_back(cur->view_src);
        }
    }
    return root.mirror;
}

bool mirror_set::fill(const ggml_abi::tensor * t, ggml_tensor * m, bool shallow) {
    if (!ggml_type_is_valid(t->type)) {
        error_ = describe(t) + " has ggml type " + std::to_string(t->type) + ", which hexnpu does not know";
        return false;
    }
    m->type = ggml_type(t->type);
    std::copy(std::begin(t->ne), std::end(t->ne), m->ne);
    std::copy(std::begin(t->nb), std::end(t->nb), m->nb);
    std::memcpy(m->op_params, t->op_params, sizeof(m->op_params));
    m->flags  = t->flags;
    m->data   = t->data;
    m->buffer = hexnpu_buffer_of(t->buf);
    std::memcpy(m->name, t->name, sizeof(m->name));
    m->name[sizeof(m->name) - 1] = '\0';
    m->view_offs                 = t->view_offs;

    m->op = hexnpu_op_of(t->op);
    if (m->op == GGML_OP_COUNT) {
        error_ = describe(t) + ": ggml op " + std::to_string(t->op) + " has no hexnpu counterpart";
        return false;
    }
    if (m->op == GGML_OP_UNARY) {
        const auto u = unary_of(t->op_params[0]);
        if (!u) {
            error_ = describe(t) + ": unary op " + std::to_string(t->op_params[0]) + " has no hexnpu counterpart";
            return false;
        }
        m->op_params[0] = *u;
    } else if (m->op == GGML_OP_GLU) {
        const auto g = glu_of(t->op_params[0]);
        if (!g) {
            error_ = describe(t) + ": GLU op " + std::to_string(t->op_params[0]) + " has no hexnpu counterpart";
            return false;
        }
        m->op_params[0] = *g;
    }
    if (shallow) {
        // Buffer calls ask only whether this is a view; the mirror of the source stands for it.
        std::fill(std::begin(m->src), std::end(m->src), nullptr);
        m->view_src = t->view_src != nullptr ? m : nullptr;
        return true;
    }
    for (int i = 0; i < ggml_abi::kMaxSrc; ++i) {
        m->src[i] = t->src[i] != nullptr ? entry_of(t->src[i]).mirror : nullptr;
    }
    m->view_src = t->view_src != nullptr ? entry_of(t->view_src).mirror : nullptr;
    return true;
}

ggml_cgraph & graph_translation::translate(const ggml_abi::cgraph & g) {
    const bool same = key_.size() == size_t(g.n_nodes) && std::equal(key_.begin(), key_.end(), g.nodes);
    mirrors_.refresh();
    if (!same) {
        // Another graph shape: mirrors of tensors no longer in any graph are dropped with it.
        key_.assign(g.nodes, g.nodes + g.n_nodes);
        mirrors_.clear();
        ++rebuilds_;
    }
    graph_.nodes.clear();
    graph_.leafs.clear();
    graph_.partial = true;  // one split of llama.cpp's graph: its other readers are unknown here
    for (const ggml_abi::tensor * node : key_) {
        if ((node->flags & ggml_abi::FLAG_COMPUTE) == 0) {
            continue;  // a branch ggml does not select: not computed, as by ggml's own backends
        }
        ggml_tensor * m = mirrors_.mirror(node);
        if (m == nullptr) {
            key_.clear();
            throw backend_error("graph node " + mirrors_.error());
        }
        graph_.nodes.push_back(m);
    }
    return graph_;
}

ggml_cgraph & graph_cache::translate(const ggml_abi::cgraph & g) {
    const ggml_abi::tensor * first = g.n_nodes > 0 ? g.nodes[0] : nullptr;
    auto &                   same_first = by_first_node_[first];
    auto                     it         = same_first.find(g.n_nodes);
    if (it == same_first.end()) {
        if (size_ >= kMaxGraphs) {
            by_first_node_.clear();
            size_ = 0;
            return translate(g);
        }
        it = same_first.emplace(g.n_nodes, graph_translation{}).first;
        ++size_;
    }
    return it->second.translate(g);
}

} // namespace hexnpu::ggml_plugin
