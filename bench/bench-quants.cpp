// Quantize / dequantize throughput per type, one thread, fast path and scalar reference.
// Bytes processed = the fp32 side (4 bytes per element), so GB/s compares across types.
//   build/bin/bench-quants --benchmark_filter=dequant
#include "hexnpu/ggml-types.h"

#include <benchmark/benchmark.h>

#include <random>
#include <vector>

using namespace hexnpu;

namespace {

constexpr int64_t kElements = 1 << 20;  // 4 MiB of fp32: beyond L2, like a weight row panel

const std::vector<float> & input() {
    static const std::vector<float> data = [] {
        std::vector<float>              v(kElements);
        std::mt19937                    gen(7);
        std::normal_distribution<float> dist(0.0f, 1.0f);
        for (float & x : v) {
            x = dist(gen);
        }
        return v;
    }();
    return data;
}

void bench_quantize(benchmark::State & state, ggml_type type, bool ref) {
    const ggml_type_traits * t = ggml_get_type_traits(type);
    std::vector<uint8_t>     q(ggml_row_size(type, kElements));
    const auto               fn = ref ? t->from_float_ref : t->from_float;
    for (auto _ : state) {
        fn(input().data(), q.data(), kElements);
        benchmark::DoNotOptimize(q.data());
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * kElements * 4);
}

void bench_dequantize(benchmark::State & state, ggml_type type, bool ref) {
    const ggml_type_traits * t = ggml_get_type_traits(type);
    std::vector<uint8_t>     q(ggml_row_size(type, kElements));
    std::vector<float>       out(kElements);
    t->from_float_ref(input().data(), q.data(), kElements);
    const auto fn = ref ? t->to_float_ref : t->to_float;
    for (auto _ : state) {
        fn(q.data(), out.data(), kElements);
        benchmark::DoNotOptimize(out.data());
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * kElements * 4);
}

const int kRegistered = [] {
    for (int id = 0; id < GGML_TYPE_COUNT; ++id) {
        const ggml_type_traits * t = ggml_get_type_traits(id);
        if (!t->to_float || id == GGML_TYPE_F32) {
            continue;
        }
        const std::string name = t->type_name;
        for (bool ref : {false, true}) {
            const std::string suffix = ref ? "/ref" : "/fast";
            benchmark::RegisterBenchmark(("quantize/" + name + suffix).c_str(), bench_quantize, ggml_type(id), ref)
                ->Unit(benchmark::kMillisecond);
            benchmark::RegisterBenchmark(("dequantize/" + name + suffix).c_str(), bench_dequantize, ggml_type(id), ref)
                ->Unit(benchmark::kMillisecond);
        }
    }
    return 0;
}();

} // namespace

BENCHMARK_MAIN();
