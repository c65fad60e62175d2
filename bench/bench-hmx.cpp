// Throughput of the virtual HMX unit on one thread (the HMX queue thread), in GFLOP/s counting a
// multiply and an add per MAC: multiplies over runs of K tiles, output stores, and a whole
// 256 x 256 x K fp16 matmul laid out in VTCM as a kernel would.
//   build/bin/bench-hmx
#include "htp/hmx.h"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <random>

using namespace hexnpu::htp;

namespace {

constexpr uint32_t VTCM_SIZE     = 8u << 20;
constexpr double   FLOPS_PER_MAC = 2.0 * HMX_TILE_ROWS * HMX_TILE_COLS * 32;  // one tile pair

// A locked unit on a VTCM filled with fp16 values in [-1, 1) and an identity scale/bias block
// in the last 256 bytes.
class bench_unit {
  public:
    bench_unit() {
        vtcm = static_cast<uint8_t *>(std::aligned_alloc(HMX_VTCM_BANK_BYTES, VTCM_SIZE));
        std::mt19937                            rng(1);
        std::uniform_int_distribution<uint16_t> mantissa(0, 0x3FF);
        uint16_t *                              h = reinterpret_cast<uint16_t *>(vtcm);
        for (uint32_t i = 0; i < VTCM_SIZE / 2; ++i) {
            h[i] = uint16_t((i & 1 ? 0xB800 : 0x3800) | mantissa(rng));  // +-[0.5, 1)
        }
        uint8_t * sb = scale_bias();
        std::memset(sb, 0, HMX_SCALE_BIAS_BYTES);
        for (uint32_t n = 0; n < HMX_TILE_COLS; ++n) {
            const uint32_t word = hmx_scale_bias_word(0x3C00, 0);
            std::memcpy(sb + 4 * n, &word, 4);
        }
        hmx_unit_init(&unit, vtcm, VTCM_SIZE);
        hmx_lock(&unit);
        hmx_set_scale_bias(&unit, sb);
    }
    ~bench_unit() {
        hmx_unlock(&unit);
        std::free(vtcm);
    }
    uint8_t * tile(uint32_t index) { return vtcm + index * HMX_TILE_BYTES; }
    uint8_t * scale_bias() { return vtcm + VTCM_SIZE - HMX_SCALE_BIAS_BYTES; }

    uint8_t * vtcm;
    hmx_unit  unit;
};

void BM_HmxMac(benchmark::State & state) {
    const uint32_t run = uint32_t(state.range(0));
    bench_unit     b;
    for (auto _ : state) {
        hmx_mac_fp16(&b.unit, b.tile(0), b.tile(HMX_MAX_RUN_TILES), run);
        benchmark::ClobberMemory();
    }
    if (hmx_fault(&b.unit)) {
        state.SkipWithError(hmx_fault(&b.unit));
    }
    state.counters["GFLOP/s"] = benchmark::Counter(FLOPS_PER_MAC * run * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_HmxMac)->Arg(1)->Arg(8)->Arg(32);

void BM_HmxStore(benchmark::State & state) {
    bench_unit b;
    for (auto _ : state) {
        hmx_store_fp16(&b.unit, b.tile(64));
        benchmark::ClobberMemory();
    }
    if (hmx_fault(&b.unit)) {
        state.SkipWithError(hmx_fault(&b.unit));
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * HMX_TILE_BYTES);
}
BENCHMARK(BM_HmxStore);

// out[256][256] = act[256][K] x wt[K][256]: 8 x 8 output tiles, each a run of K/32 tile pairs.
void BM_HmxMatmul256(benchmark::State & state) {
    const uint32_t kt = uint32_t(state.range(0)) / 32, mt = 8, nt = 8;
    bench_unit     b;
    const uint32_t wt0 = mt * kt, out0 = wt0 + nt * kt;
    for (auto _ : state) {
        for (uint32_t m = 0; m < mt; ++m) {
            for (uint32_t n = 0; n < nt; ++n) {
                hmx_mac_fp16(&b.unit, b.tile(m * kt), b.tile(wt0 + n * kt), kt);
                hmx_store_fp16(&b.unit, b.tile(out0 + m * nt + n));
            }
        }
        benchmark::ClobberMemory();
    }
    if (hmx_fault(&b.unit)) {
        state.SkipWithError(hmx_fault(&b.unit));
    }
    state.counters["GFLOP/s"] =
        benchmark::Counter(FLOPS_PER_MAC * kt * mt * nt * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_HmxMatmul256)->Arg(256)->Arg(1024);

} // namespace

BENCHMARK_MAIN();
