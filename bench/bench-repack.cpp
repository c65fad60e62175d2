// Repack (flat -> tiled) throughput per type, on one thread and on all cores. Bytes processed = the
// flat input, so GB/s compares with the memory bandwidth of bench-memory.
//   build/bin/bench-repack --benchmark_filter=q4_K
#include "core/parallel.h"
#include "hexagon/repack.h"

#include <benchmark/benchmark.h>

#include <map>
#include <random>
#include <vector>

using namespace hexnpu;

namespace {

// A 4096 x 2048 weight matrix: megabytes of flat data, well beyond L2.
constexpr int64_t kShape[4] = {4096, 2048, 1, 1};

const std::vector<uint8_t> & flat_weights(ggml_type type) {
    static std::map<ggml_type, std::vector<uint8_t>> cache;
    std::vector<uint8_t> & flat = cache[type];
    if (flat.empty()) {
        const int64_t                   n = kShape[0] * kShape[1];
        std::vector<float>              x(static_cast<size_t>(n));
        std::mt19937                    gen(5);
        std::normal_distribution<float> dist(0.0f, 0.02f);
        for (float & v : x) {
            v = dist(gen);
        }
        flat.resize(ggml_row_size(type, kShape[0]) * size_t(kShape[1]));
        ggml_get_type_traits(type)->from_float(x.data(), flat.data(), n);
    }
    return flat;
}

void bench_repack(benchmark::State & state, ggml_type type) {
    const int                    n_threads = int(state.range(0));
    const std::vector<uint8_t> & flat      = flat_weights(type);
    std::vector<uint8_t>         tiled(hexagon::tiled_nbytes(type, kShape));
    for (auto _ : state) {
        const hexagon::repack_result result = hexagon::repack_tensor(type, kShape, flat.data(), tiled.data(), n_threads);
        if (!result.ok()) {
            state.SkipWithError(result.error.c_str());
            break;
        }
        benchmark::DoNotOptimize(tiled.data());
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(flat.size()));
}

const int kRegistered = [] {
    const int all_cores = default_thread_count();
    for (int id = 0; id < GGML_TYPE_COUNT; ++id) {
        if (!ggml_type_is_valid(id) || !hexagon::is_tileable_type(ggml_type(id))) {
            continue;
        }
        const std::string name = std::string("repack/") + ggml_type_name(ggml_type(id));
        auto *            b    = benchmark::RegisterBenchmark(name.c_str(), bench_repack, ggml_type(id));
        b->ArgName("threads")->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
        if (all_cores > 1) {
            b->Arg(all_cores);
        }
    }
    return 0;
}();

} // namespace

BENCHMARK_MAIN();
