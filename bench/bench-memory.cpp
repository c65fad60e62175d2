// The machine's memory bandwidth, the yardstick for every streaming kernel: read (sum), write
// (fill) and copy of a 256 MiB buffer, single thread. Bytes processed counts bytes touched.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

namespace {

constexpr size_t kBytes = size_t(256) << 20;

std::vector<uint64_t> & buffer(int which) {
    static std::vector<uint64_t> a(kBytes / 8, 1), b(kBytes / 8, 2);
    return which ? b : a;
}

void read_bw(benchmark::State & state) {
    const auto & a = buffer(0);
    for (auto _ : state) {
        benchmark::DoNotOptimize(std::accumulate(a.begin(), a.end(), uint64_t(0)));
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kBytes));
}

void write_bw(benchmark::State & state) {
    auto & a = buffer(0);
    for (auto _ : state) {
        std::memset(a.data(), int(state.iterations() & 0xff), kBytes);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kBytes));
}

void copy_bw(benchmark::State & state) {
    auto & a = buffer(0);
    auto & b = buffer(1);
    for (auto _ : state) {
        std::memcpy(b.data(), a.data(), kBytes);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(2 * kBytes));  // read + write
}

} // namespace

BENCHMARK(read_bw)->Unit(benchmark::kMillisecond);
BENCHMARK(write_bw)->Unit(benchmark::kMillisecond);
BENCHMARK(copy_bw)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
