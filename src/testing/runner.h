// Running catalog cases on backends: selecting cases, checking a backend against its reference
// (the CPU backend, or for the CPU backend the float64 evaluator), and timing.
#pragma once

#include "op-case.h"

#include "hexnpu/backend.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hexnpu::optest {

// What a case is, read off its graph.
struct case_info {
    std::string            name;     // "MUL_MAT(type_a=q4_0,...)": the op description and the params
    std::string            op_name;  // ggml_op_name: "MUL_MAT", "UNARY"
    std::string            op_desc;  // ggml_op_desc: "MUL_MAT", "SILU"
    std::vector<ggml_type> types;    // every tensor type in the graph, without repeats
};

case_info describe(const op_case & c);

// -o and -t of `hexnpu test-ops`.
struct case_filter {
    std::string              op;    // op name or description, any case; empty for all
    std::optional<ggml_type> type;  // a type the case must use

    bool matches(const case_info & info) const;
};

enum class verdict { pass, fail, skipped };

struct case_result {
    verdict     v;
    std::string detail;  // "NMSE=1.2e-09", "exact", "not supported by HTP0", or what went wrong
};

struct perf_result {
    double us_per_run;
    double bytes;         // sources and result, once each
    double weight_bytes;  // of which src0 of MUL_MAT / MUL_MAT_ID (as stored), else 0
    double flops;         // 0 for ops that are about moving data
    int    runs;
};

// Whether dev runs every op of the case's graph: "" when it does, else the first op it refuses
// and the device's reason ("MUL_MAT: the weight type has no NPU matmul kernel ...").
std::string support_of(const backend_device & dev, const op_case & c);

class case_runner {
  public:
    // Judges `target` against `reference`, or against the float64 evaluator when it is null.
    case_runner(backend_device & target, backend_device * reference);
    ~case_runner();

    case_result check(const op_case & c, const case_info & info);

    // Runs the case on the target until min_seconds have passed (at least 3 runs); nullopt when the
    // target does not support it. weights_in_extra: a matmul's weights go into the target's first
    // extra buffer type (HTPn-REPACK: tiled), as a model loader places them.
    std::optional<perf_result> perf(const op_case & c, double min_seconds, bool weights_in_extra = false);

  private:
    backend_device &         target_dev_;
    backend_device *         reference_dev_;
    std::unique_ptr<backend> target_;
    std::unique_ptr<backend> reference_;
};

} // namespace hexnpu::optest
