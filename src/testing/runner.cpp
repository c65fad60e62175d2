#include "runner.h"

#include "compare.h"
#include "core/strings.h"
#include "ref-eval.h"
#include "tensor-values.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <set>
#include <stdexcept>

namespace hexnpu::optest {
namespace {

std::string short_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

// The node whose op a case tests: its result, or what the result is a view of when a case
// compares only part of an op's result (GATED_DELTA_NET's outputs without the states).
ggml_tensor * op_node(ggml_tensor * out) { return out->op == GGML_OP_VIEW ? out->src[0] : out; }

// A case's graph built into its own context; every leaf must be an input with a fill.
struct built_case {
    ggml_context  ctx;
    case_graph    inputs{ctx};
    ggml_tensor * out = nullptr;
    ggml_cgraph   graph;

    explicit built_case(const op_case & c) {
        out = c.build(inputs);
        out->flags |= GGML_TENSOR_FLAG_OUTPUT;
        op_node(out)->flags |= GGML_TENSOR_FLAG_OUTPUT;
        ggml_build_forward_expand(graph, out);
        for (const ggml_tensor * leaf : graph.leafs) {
            const auto & in = inputs.inputs();
            if (std::none_of(in.begin(), in.end(), [&](const auto & p) { return p.first == leaf; })) {
                throw std::logic_error("a graph leaf is not a case input");
            }
        }
    }
};

// The bytes of every input, in the order the case created them.
std::vector<std::vector<uint8_t>> input_bytes(const built_case & b, const std::string & case_name) {
    std::vector<std::vector<uint8_t>> bytes;
    for (const auto & [t, fill] : b.inputs.inputs()) {
        bytes.push_back(make_input_bytes(t, fill, input_seed(case_name, bytes.size())));
    }
    return bytes;
}

} // namespace

std::string support_of(const backend_device & dev, const op_case & c) {
    const built_case b(c);
    for (const ggml_tensor * node : b.graph.nodes) {
        if (!dev.supports_op(node)) {
            const std::string why = dev.refusal_reason(node);
            return std::string(ggml_op_desc(node)) + (why.empty() ? "" : ": " + why);
        }
    }
    return "";
}

namespace {

// The first node the device cannot run, or nullptr.
const ggml_tensor * first_unsupported(const backend_device & dev, const ggml_cgraph & graph) {
    for (const ggml_tensor * node : graph.nodes) {
        if (!dev.supports_op(node)) {
            return node;
        }
    }
    return nullptr;
}

// Whether the case's src0 is a weight a model loader may place in the device's extra buffer type
// (HTPn-REPACK): a matmul's weights, a quantized GET_ROWS table (a token embedding).
bool weight_case(const ggml_tensor * out) {
    return out->op == GGML_OP_MUL_MAT || out->op == GGML_OP_MUL_MAT_ID ||
           (out->op == GGML_OP_GET_ROWS && ggml_is_quantized(out->src[0]->type));
}

// A case placed in a buffer of the device with its inputs set, ready to compute.
struct device_case {
    built_case                      b;
    std::unique_ptr<backend_buffer> weights;  // src0 when it goes to an extra buffer type (weight_case)
    std::unique_ptr<backend_buffer> buffer;

    device_case(const op_case & c, backend_device & dev, const std::vector<std::vector<uint8_t>> & bytes,
                bool weights_in_extra = false)
        : b(c) {
        if (weights_in_extra && weight_case(b.out) && !dev.extra_buffer_types().empty() && !b.out->src[0]->view_src) {
            backend_buffer_type * extra = dev.extra_buffer_types().front();
            weights                     = extra->alloc_buffer(extra->alloc_size(b.out->src[0]));
            tensor_alloc(weights.get(), b.out->src[0], weights->base());
        }
        buffer = alloc_ctx_tensors(b.ctx, dev.buffer_type());
        for (size_t i = 0; i < bytes.size(); ++i) {
            tensor_set(b.inputs.inputs()[i].first, bytes[i].data(), 0, bytes[i].size());
        }
    }

    std::vector<double> result() const {
        const ggml_tensor *  base = b.out->view_src ? b.out->view_src : b.out;
        std::vector<uint8_t> bytes(ggml_nbytes(base));
        tensor_get(base, bytes.data(), 0, bytes.size());
        return gather_values(b.out, decode_slots(base->type, bytes.data(), bytes.size()));
    }
};

std::vector<double> run_on(backend & be, backend_device & dev, const op_case & c,
                           const std::vector<std::vector<uint8_t>> & bytes, bool weights_in_extra = false) {
    device_case dc(c, dev, bytes, weights_in_extra);
    be.graph_compute(dc.b.graph);
    be.synchronize();
    return dc.result();
}

// The float64 evaluation of the case: its result and, for sorts, the keys.
struct oracle_result {
    std::vector<double> out;
    std::vector<double> keys;
};

oracle_result run_oracle(const op_case & c, const std::vector<std::vector<uint8_t>> & bytes) {
    built_case    b(c);
    ref_evaluator ev;
    for (size_t i = 0; i < bytes.size(); ++i) {
        ev.load(b.inputs.inputs()[i].first, bytes[i].data());
    }
    ev.compute(b.graph);
    return {ev.values(b.out), ev.values(b.out->src[0])};
}

double case_flops(const ggml_tensor * out) {
    switch (out->op) {
    case GGML_OP_MUL_MAT:
    case GGML_OP_MUL_MAT_ID:
        return 2.0 * double(ggml_nelements(out)) * double(out->src[0]->ne[0]);
    case GGML_OP_FLASH_ATTN_EXT: {
        const ggml_tensor * q = out->src[0];
        const ggml_tensor * k = out->src[1];
        const ggml_tensor * v = out->src[2];
        return 2.0 * double(q->ne[1] * q->ne[2] * q->ne[3]) * double(k->ne[1]) * double(k->ne[0] + v->ne[0]);
    }
    default:
        return 0.0;
    }
}

double case_bytes(const ggml_tensor * out) {
    double bytes = double(ggml_nbytes(out));
    for (const ggml_tensor * s : out->src) {
        if (s) {
            bytes += double(ggml_nbytes(s));
        }
    }
    return bytes;
}

} // namespace

case_info describe(const op_case & c) {
    const built_case b(c);
    case_info        info;
    info.op_name = ggml_op_name(op_node(b.out)->op);
    info.op_desc = ggml_op_desc(op_node(b.out));
    info.name    = info.op_desc + "(" + c.params + ")";
    std::set<ggml_type> types;
    for (const ggml_tensor & t : b.ctx.tensors()) {
        types.insert(t.type);
    }
    info.types.assign(types.begin(), types.end());
    return info;
}

bool case_filter::matches(const case_info & info) const {
    if (!op.empty() && !equal_ignore_case(op, info.op_name) && !equal_ignore_case(op, info.op_desc)) {
        return false;
    }
    return !type || std::find(info.types.begin(), info.types.end(), *type) != info.types.end();
}

case_runner::case_runner(backend_device & target, backend_device * reference)
    : target_dev_(target), reference_dev_(reference), target_(target.init_backend()),
      reference_(reference ? reference->init_backend() : nullptr) {}

case_runner::~case_runner() = default;

case_result case_runner::check(const op_case & c, const case_info & info) {
    try {
        const built_case probe(c);
        for (backend_device * dev : {&target_dev_, reference_dev_}) {
            if (dev && first_unsupported(*dev, probe.graph)) {
                return {verdict::skipped, std::string("not supported by ") + dev->name()};
            }
        }
        const auto bytes    = input_bytes(probe, info.name);
        const bool index_op = probe.out->op == GGML_OP_ARGSORT || probe.out->op == GGML_OP_TOP_K;
        // Sorts are judged by their keys, which only the evaluator exposes; it is cheap for them.
        oracle_result oracle;
        if (!reference_dev_ || index_op) {
            oracle = run_oracle(c, bytes);
        }
        const std::vector<double> want = reference_dev_ ? run_on(*reference_, *reference_dev_, c, bytes) : oracle.out;
        const std::vector<double> got  = run_on(*target_, target_dev_, c, bytes);
        if (index_op) {
            const int64_t    n   = probe.out->src[0]->ne[0];
            const comparison cmp = probe.out->op == GGML_OP_ARGSORT
                                       ? compare_argsort(got, want, oracle.keys, n)
                                       : compare_top_k(got, want, oracle.keys, probe.out->ne[0], n);
            return {cmp.ok ? verdict::pass : verdict::fail, cmp.ok ? "exact" : cmp.detail};
        }
        const double max_nmse = reference_dev_ ? c.tol.vs_cpu : c.tol.vs_f64;
        // A matmul or a quantized GET_ROWS runs with its weights in the target's buffer type (flat)
        // and, where the target has an extra buffer type, again in it (HTPn-REPACK: tiled), as a
        // model loader places them.
        const bool  twice  = weight_case(probe.out) && !target_dev_.extra_buffer_types().empty() && !probe.out->src[0]->view_src;
        std::string detail;
        bool        ok = true;
        for (const bool extra : {false, true}) {
            if (extra && !twice) {
                break;
            }
            const double     bound = extra && reference_dev_ && c.tol.vs_cpu_tiled > 0 ? c.tol.vs_cpu_tiled : max_nmse;
            const comparison cmp   = compare_nmse(extra ? run_on(*target_, target_dev_, c, bytes, true) : got, want, bound);
            const std::string layout =
                !twice ? ""
                       : std::string(" (") +
                             (extra ? target_dev_.extra_buffer_types().front() : target_dev_.buffer_type())->name() + ")";
            if (!cmp.detail.empty()) {
                return {verdict::fail, cmp.detail + layout};
            }
            detail += (detail.empty() ? "" : ", ") + ("NMSE=" + short_number(cmp.nmse)) + layout +
                      (cmp.ok ? "" : " > " + short_number(bound));
            ok = ok && cmp.ok;
        }
        return {ok ? verdict::pass : verdict::fail, detail};
    } catch (const std::exception & e) {
        return {verdict::fail, e.what()};
    }
}

std::optional<perf_result> case_runner::perf(const op_case & c, double min_seconds, bool weights_in_extra) {
    const built_case probe(c);
    if (first_unsupported(target_dev_, probe.graph)) {
        return std::nullopt;
    }
    device_case dc(c, target_dev_, input_bytes(probe, describe(c).name), weights_in_extra);
    using clock = std::chrono::steady_clock;
    target_->graph_compute(dc.b.graph);  // warm-up: first-touch of buffers, caches
    target_->synchronize();
    int                 runs  = 0;
    const auto          start = clock::now();
    std::chrono::duration<double> elapsed{};
    do {
        target_->graph_compute(dc.b.graph);
        target_->synchronize();
        ++runs;
        elapsed = clock::now() - start;
    } while (runs < 3 || elapsed.count() < min_seconds);
    const bool   matmul  = dc.b.out->op == GGML_OP_MUL_MAT || dc.b.out->op == GGML_OP_MUL_MAT_ID;
    const double weights = matmul ? double(ggml_nbytes(dc.b.out->src[0])) : 0.0;
    return perf_result{elapsed.count() * 1e6 / runs, case_bytes(dc.b.out), weights, case_flops(dc.b.out), runs};
}

} // namespace hexnpu::optest
