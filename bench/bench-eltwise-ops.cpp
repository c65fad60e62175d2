// Element-wise ops on the virtual NPU (HTP0: DDR -> DMA -> VTCM -> HVX -> DMA -> DDR in a session
// process) next to the CPU reference backend, one op per graph on a [4096 x rows] F32 tensor:
// rows = 256 (4 MiB per tensor, in the last-level cache of most servers) and 8192 (128 MiB per
// tensor, from DRAM). ADD/MUL/DIV read a second input. Bytes processed = inputs + output.
//   build/bin/bench-eltwise-ops --benchmark_min_time=0.5
//   HEXNPU_STRICT=0 build/bin/bench-eltwise-ops ...   (without the strict DMA bookkeeping)
#include "cpu/cpu-backend.h"
#include "hexnpu/backend.h"
#include "hexnpu/graph.h"
#include "hexnpu/hexagon.h"

#include <benchmark/benchmark.h>

#include <functional>
#include <memory>
#include <random>
#include <vector>

using namespace hexnpu;

namespace {

constexpr int64_t kCols = 4096;

backend_device * device(const char * name) {
    static const bool registered = [] {
        register_htp_devices();
        backend_registry::get().add(make_cpu_device());
        return true;
    }();
    (void) registered;
    return backend_registry::get().find(name);
}

using op_builder = std::function<ggml_tensor *(ggml_context &, ggml_tensor *, ggml_tensor *)>;

void bench_op(benchmark::State & state, const char * dev_name, op_builder build, int n_inputs) {
    const int64_t    kRows = state.range(0);
    backend_device * dev = device(dev_name);
    if (!dev) {
        state.SkipWithError("device not available");
        return;
    }
    ggml_context  ctx;
    ggml_tensor * a   = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, kCols, kRows);
    ggml_tensor * b   = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, kCols, kRows);
    ggml_tensor * out = build(ctx, a, b);
    ggml_cgraph   graph;
    ggml_build_forward_expand(graph, out);
    if (!dev->supports_op(out)) {
        state.SkipWithError("op not supported");
        return;
    }
    auto buffer  = alloc_ctx_tensors(ctx, dev->buffer_type());
    auto backend = dev->init_backend();

    std::vector<float>                    v(size_t(kCols * kRows));
    std::mt19937                          rng(1);
    std::uniform_real_distribution<float> dist(0.5f, 2.0f);
    for (ggml_tensor * t : {a, b}) {
        for (float & x : v) {
            x = dist(rng);
        }
        tensor_set(t, v.data(), 0, v.size() * 4);
    }
    backend->graph_compute(graph);  // warm-up: session start, buffer mapping
    for (auto _ : state) {
        backend->graph_compute(graph);
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * kCols * kRows * 4 * (n_inputs + 1));
}

const int kRegistered = [] {
    struct op {
        const char * name;
        op_builder   build;
        int          n_inputs;
    };
    const op ops[] = {
        {"ADD", [](ggml_context & c, ggml_tensor * a, ggml_tensor * b) { return ggml_add(&c, a, b); }, 2},
        {"MUL", [](ggml_context & c, ggml_tensor * a, ggml_tensor * b) { return ggml_mul(&c, a, b); }, 2},
        {"DIV", [](ggml_context & c, ggml_tensor * a, ggml_tensor * b) { return ggml_div(&c, a, b); }, 2},
        {"SCALE", [](ggml_context & c, ggml_tensor * a, ggml_tensor *) { return ggml_scale(&c, a, 0.5f); }, 1},
        {"SQRT", [](ggml_context & c, ggml_tensor * a, ggml_tensor *) { return ggml_sqrt(&c, a); }, 1},
        {"SILU",
         [](ggml_context & c, ggml_tensor * a, ggml_tensor *) { return ggml_unary(&c, a, GGML_UNARY_OP_SILU); }, 1},
    };
    for (const op & o : ops) {
        for (const char * dev : {"HTP0", "CPU"}) {
            benchmark::RegisterBenchmark((std::string(o.name) + "/" + dev).c_str(), bench_op, dev, o.build,
                                         o.n_inputs)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime()
                ->Arg(256)
                ->Arg(8192);
        }
    }
    return 0;
}();

} // namespace

BENCHMARK_MAIN();
