// The HVX matmul's per-tile work on one thread of the x86 emulation: unpack a weight tile, convert
// its scales, accumulate one activation row (mat-vec) — ns per 32x32 tile, by weight type. Where
// the virtual NPU's mat-vec time goes before DMA and the pipeline (hexnpu bench-ops).
//   build/bin/bench-matmul-tiles
#include "htp/hvx-tile-dot.h"
#include "proto/htp-matmul.h"

#include <benchmark/benchmark.h>

#include <random>
#include <vector>

using namespace hexnpu::htp;

namespace {

constexpr int kTiles = 256;  // 256 tiles of up to 1152 bytes: the working set stays in L2

template <class Tile> void bm_tile(benchmark::State & state) {
    std::mt19937            rng(1);
    std::vector<HVX_Vector> tiles(size_t(kTiles) * 9), act(size_t(kTiles) * hexnpu::proto::HTP_MM_ACT_VECTORS);
    for (auto * v : {&tiles, &act}) {
        for (HVX_Vector & x : *v) {
            for (int lane = 0; lane < 32; ++lane) {
                x[lane] = int32_t(rng() & 0x3C7F3C7F);  // finite fp16 scales, small quants
            }
        }
    }
    HVX_Vector acc = Q6_V_vzero();
    for (auto _ : state) {
        for (int t = 0; t < kTiles; ++t) {
            HVX_Vector w[8], sc[4];
            Tile::unpack(&tiles[size_t(t) * 9], w);
            Tile::scales(&tiles[size_t(t) * 9], sc);
            acc = Tile::accumulate(acc, w, sc, &act[size_t(t) * hexnpu::proto::HTP_MM_ACT_VECTORS]);
        }
        benchmark::DoNotOptimize(acc);
    }
    state.SetItemsProcessed(int64_t(state.iterations()) * kTiles);
}

BENCHMARK_TEMPLATE(bm_tile, tile_q8_0);
BENCHMARK_TEMPLATE(bm_tile, tile_q4_0);
BENCHMARK_TEMPLATE(bm_tile, tile_q4_1);
BENCHMARK_TEMPLATE(bm_tile, tile_q4_k);
BENCHMARK_TEMPLATE(bm_tile, tile_q6_k);

} // namespace

BENCHMARK_MAIN();
