// hexnpu test-ops [-o OP] [-b BACKEND] [-t TYPE] [--perf | --support [--md]] [--trace FILE]: runs the op case
// catalog on a backend and compares every result with the CPU backend's (or, for -b CPU, with a float64
// evaluation); or times it; or says which cases the backend takes.
#include "cli-util.h"
#include "commands.h"
#include "device-select.h"
#include "op-support.h"

#include "hexnpu/hexagon.h"
#include "hexnpu/output-file.h"
#include "testing/runner.h"

#include <cstdio>
#include <optional>
#include <string>

namespace hexnpu::cli {
namespace {

const char * kUsage =
    "usage: hexnpu test-ops [-o OP] [-b BACKEND] [-t TYPE] [--perf | --support [--md]] [--trace FILE]\n"
    "  Runs every op case of the catalog on BACKEND (default CPU) and compares it with the CPU backend;\n"
    "  -b CPU compares the CPU backend with an independent float64 evaluation. One line per case, then\n"
    "  'N passed, M failed' (', K skipped' for cases the backend does not support).\n"
    "  -o OP     only cases of this op (MUL_MAT, SOFT_MAX, UNARY or a unary/GLU name such as SILU)\n"
    "  -t TYPE   only cases with a tensor of this type (q4_0, f16, ...)\n"
    "  --perf    time each supported case on BACKEND instead (us per run, GB/s, GFLOP/s)\n"
    "  --support say which cases BACKEND takes and why not the others, without running any;\n"
    "            --md: as docs/ops.md (with the NPU op registry and the GGML op table)\n"
    "  --trace FILE  write the HTP devices' NPU trace (Perfetto UI / Chrome trace JSON) to FILE\n";


int check_cases(optest::case_runner & runner, const std::vector<const optest::op_case *> & cases) {
    size_t passed = 0, failed = 0, skipped = 0;
    for (const optest::op_case * c : cases) {
        const optest::case_info   info = optest::describe(*c);
        const optest::case_result r    = runner.check(*c, info);
        switch (r.v) {
        case optest::verdict::pass:
            ++passed;
            std::printf("%s: %s OK\n", info.name.c_str(), r.detail.c_str());
            break;
        case optest::verdict::fail:
            ++failed;
            std::printf("%s: %s FAIL\n", info.name.c_str(), r.detail.c_str());
            break;
        case optest::verdict::skipped:
            ++skipped;
            std::printf("%s: %s\n", info.name.c_str(), r.detail.c_str());
            break;
        }
        std::fflush(stdout);
    }
    std::printf("%zu passed, %zu failed", passed, failed);
    if (skipped) {
        std::printf(", %zu skipped", skipped);
    }
    std::printf("\n");
    std::fflush(stdout);
    if (failed) {
        return fail("%zu of %zu cases failed", failed, cases.size());
    }
    if (passed == 0) {
        return fail("none of the %zu selected cases ran (the backend supports none of them)", cases.size());
    }
    return 0;
}

int time_cases(optest::case_runner & runner, const std::vector<const optest::op_case *> & cases) {
    table  t({"case", "runs", "us/run", "GB/s", "GFLOP/s"}, {false, true, true, true, true});
    size_t timed = 0, skipped = 0;
    for (const optest::op_case * c : cases) {
        const std::string name = optest::describe(*c).name;
        const auto        p    = runner.perf(*c, 0.02);
        if (!p) {
            ++skipped;
            continue;
        }
        ++timed;
        const double seconds = p->us_per_run * 1e-6;
        t.add({name, std::to_string(p->runs), format("%.2f", p->us_per_run), format("%.2f", p->bytes / seconds * 1e-9),
               p->flops > 0 ? format("%.2f", p->flops / seconds * 1e-9) : ""});
    }
    t.print(stdout);
    std::printf("%zu timed, %zu not supported\n", timed, skipped);
    std::fflush(stdout);
    if (timed == 0) {
        return fail("none of the %zu selected cases ran (the backend supports none of them)", cases.size());
    }
    return 0;
}

} // namespace

int cmd_test_ops(args a) {
    optest::case_filter filter;
    std::string_view    backend_name = "CPU";
    bool                perf         = false;
    bool                support      = false;
    bool                markdown     = false;
    std::string         trace_path;
    for (size_t i = 0; i < a.size(); ++i) {
        const bool has_value = i + 1 < a.size();
        if (a[i] == "--help" || a[i] == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (a[i] == "--perf") {
            perf = true;
        } else if (a[i] == "--support") {
            support = true;
        } else if (a[i] == "--md") {
            markdown = true;
        } else if ((a[i] == "-o" || a[i] == "-b" || a[i] == "-t" || a[i] == "--trace") && !has_value) {
            return fail("%.*s needs a value", int(a[i].size()), a[i].data());
        } else if (a[i] == "-o") {
            filter.op = std::string(a[++i]);
        } else if (a[i] == "--trace") {
            trace_path = std::string(a[++i]);
        } else if (a[i] == "-b") {
            backend_name = a[++i];
        } else if (a[i] == "-t") {
            filter.type = ggml_type_from_name(a[++i]);
            if (!filter.type) {
                return fail("unknown type '%.*s'", int(a[i].size()), a[i].data());
            }
        } else {
            return fail("unexpected argument '%.*s'\n%s", int(a[i].size()), a[i].data(), kUsage);
        }
    }
    // The trace file is checked (and its temporary made) before the cases run, not after.
    std::optional<output_file> trace;
    if (!trace_path.empty()) {
        trace.emplace(output_file::create(trace_path));
    }
    // Accelerators first: the registry's order is the scheduler's priority order.
    register_htp_devices(!trace_path.empty());
    backend_device & cpu    = cpu_device();
    backend_device * target = find_device(backend_name);
    if (!target) {
        return fail("no backend named '%.*s' (available: %s)", int(backend_name.size()), backend_name.data(),
                    device_names().c_str());
    }
    std::vector<const optest::op_case *> selected;
    for (const optest::op_case & c : optest::op_case_catalog()) {
        if (filter.matches(optest::describe(c))) {
            selected.push_back(&c);
        }
    }
    if (selected.empty()) {
        return fail("no op case matches%s%s%s%s (run 'hexnpu test-ops -b CPU' to list every case)",
                    filter.op.empty() ? "" : " -o ", printable(filter.op).c_str(), filter.type ? " -t " : "",
                    filter.type ? ggml_type_name(*filter.type) : "");
    }
    if (perf && support) {
        return fail("--perf and --support exclude each other");
    }
    if (markdown && !support) {
        return fail("--md goes with --support");
    }
    if (support) {
        return print_support(*target, selected, markdown);
    }
    optest::case_runner runner(*target, target == &cpu ? nullptr : &cpu);
    const int           status = perf ? time_cases(runner, selected) : check_cases(runner, selected);
    if (trace) {
        write_htp_trace(*trace);
        trace->commit();
    }
    return status;
}

} // namespace hexnpu::cli
