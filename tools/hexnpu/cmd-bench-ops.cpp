// hexnpu bench-ops [-o OP] [-b BACKEND] [-t TYPE] [--large] [--flat] [--json] [--trace FILE]: the perf mode of
// test-ops on model-sized cases (like test-backend-ops perf): per case, µs per run, GFLOP/s and GB/s
// of weights read, with the machine's read bandwidth measured in the same run.
#include "cli-util.h"
#include "commands.h"
#include "device-select.h"
#include "memory-bandwidth.h"

#include "core/parallel.h"

#include "hexnpu/hexagon.h"
#include "hexnpu/output-file.h"
#include "testing/runner.h"
#include "util/json-string.h"

#include <cstdio>
#include <optional>
#include <string>
#include <thread>

namespace hexnpu::cli {
namespace {

const char * kUsage =
    "usage: hexnpu bench-ops [-o OP] [-b BACKEND] [-t TYPE] [--large] [--flat] [--json] [--trace FILE]\n"
    "  Times the benchmark cases (MUL_MAT with a 4096 x 4096 weight of every type and 1, 2, 4, 8\n"
    "  activation rows; RMS_NORM, ROPE, SOFT_MAX, FLASH_ATTN_EXT, GET_ROWS, SET_ROWS, CONT and GLU at\n"
    "  model sizes) on BACKEND (default HTP0): us per run, GFLOP/s, GB/s of weights read.\n"
    "  -o OP, -t TYPE  only the cases of this op / with a tensor of this type\n"
    "  --large         also a 65536 x 8192 weight per type (beyond the last-level cache)\n"
    "  --flat          keep matmul weights flat (default: in the device's REPACK buffer, tiled)\n"
    "  --json          one JSON object per case (op, params, backend, us_per_run, gflops, gbps)\n"
    "  --trace FILE    write the HTP devices' NPU trace (Perfetto UI / Chrome trace JSON) to FILE\n";

using util::json_string;

} // namespace

int cmd_bench_ops(args a) {
    optest::case_filter filter;
    std::string_view    backend_name = "HTP0";
    bool                large = false, flat = false, json = false;
    std::string         trace_path;
    for (size_t i = 0; i < a.size(); ++i) {
        const bool has_value = i + 1 < a.size();
        if (a[i] == "--help" || a[i] == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (a[i] == "--large") {
            large = true;
        } else if (a[i] == "--flat") {
            flat = true;
        } else if (a[i] == "--json") {
            json = true;
        } else if ((a[i] == "-o" || a[i] == "-b" || a[i] == "-t" || a[i] == "--trace") && !has_value) {
            return fail("%.*s needs a value", int(a[i].size()), a[i].data());
        } else if (a[i] == "--trace") {
            trace_path = std::string(a[++i]);
        } else if (a[i] == "-o") {
            filter.op = std::string(a[++i]);
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
    register_htp_devices(!trace_path.empty());
    cpu_device();
    backend_device * target = find_device(backend_name);
    if (!target) {
        return fail("no backend named '%.*s' (available: %s)", int(backend_name.size()), backend_name.data(),
                    device_names().c_str());
    }
    std::vector<optest::op_case> selected;
    for (optest::op_case & c : optest::op_perf_catalog(large)) {
        if (filter.matches(optest::describe(c))) {
            selected.push_back(std::move(c));
        }
    }
    if (selected.empty()) {
        return fail("no benchmark case matches the filter");
    }

    optest::case_runner runner(*target, nullptr);
    table  t({"case", "backend", "runs", "us/run", "GFLOP/s", "weights GB/s"}, {false, false, true, true, true, true});
    size_t timed = 0;
    for (const optest::op_case & c : selected) {
        const std::string name = optest::describe(c).name;
        const auto        p    = runner.perf(c, 0.25, !flat);
        if (!p) {
            if (!json) {
                t.add({name, target->name(), "", "not supported", "", ""});
            }
            continue;
        }
        ++timed;
        const double s      = p->us_per_run * 1e-6;
        const double gflops = p->flops / s * 1e-9;
        const double gbps   = p->weight_bytes / s * 1e-9;
        if (json) {
            const std::string params = name.substr(name.find('(') + 1, name.size() - name.find('(') - 2);
            std::printf("{\"op\": %s, \"params\": %s, \"backend\": %s, \"us_per_run\": %.3f, \"gflops\": %.3f, "
                        "\"gbps\": %.3f}\n",
                        json_string(name.substr(0, name.find('('))).c_str(), json_string(params).c_str(),
                        json_string(target->name()).c_str(), p->us_per_run, gflops, gbps);
        } else {
            t.add({name, target->name(), std::to_string(p->runs), format("%.1f", p->us_per_run), format("%.2f", gflops),
                   p->weight_bytes > 0 ? format("%.2f", gbps) : ""});
        }
        std::fflush(stdout);
    }
    const int    threads = default_thread_count();  // hardware_concurrency() may be 0
    const double bw      = read_bandwidth(threads);
    if (json) {
        std::printf("{\"read_bandwidth_gbs\": %.3f, \"threads\": %d}\n", bw * 1e-9, threads);
    } else {
        t.print(stdout);
        std::printf("%zu timed, %zu not supported; memory read bandwidth %.2f GB/s (%d threads)\n", timed,
                    selected.size() - timed, bw * 1e-9, threads);
    }
    if (timed == 0) {
        return fail("%s supports none of the %zu selected cases", target->name(), selected.size());
    }
    if (trace) {
        write_htp_trace(*trace);
        trace->commit();
    }
    return 0;
}

} // namespace hexnpu::cli
