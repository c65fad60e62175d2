// The integer cores of src/htp that need no DMA or platform — fastdiv, the multi-device row
// partition, rows per mdev chunk, tensor extents, the VTCM bump layout, the matmul's weight
// unpacking and integer dot products (hvx-tile-unpack.h), the sorts' keys and bitonic network
// (hvx-sort.h) — run over fixed boundary
// and seeded random cases, every result handed to a sink. Built for Hexagon (run under
// qemu-hexagon; the sink writes the bytes to stdout) and for x86 (the sink compares with qemu's
// bytes), so the 32-bit device build must compute what the 64-bit host build does.
// Freestanding: nothing beyond the htp headers.
#pragma once

#include <stdint.h>

#include "htp/htp-tensor.h"
#include "htp/hvx-sort.h"
#include "htp/hvx-tile-unpack.h"
#include "htp/vtcm.h"
#include "proto/fastdiv.h"

namespace htp_core_diff {

using hexnpu::proto::fastdiv_values;
using hexnpu::proto::htp_tensor;

inline constexpr uint32_t kSectionMarker = 0x5A000000u;  // | section index, before its results

#define HTP_CORE_DIFF_SECTIONS(X) \
    X(fastdiv) X(mdev_partition) X(mdev_rows_per_chunk) X(tensor_extent) X(vtcm_arena) X(tile_isum) X(bitonic_sort)

enum section : uint32_t {
#define HTP_CORE_DIFF_ENUM(NAME) NAME,
    HTP_CORE_DIFF_SECTIONS(HTP_CORE_DIFF_ENUM)
#undef HTP_CORE_DIFF_ENUM
};

// splitmix64: the same stream on both targets.
struct rng {
    uint64_t state;
    uint32_t next() {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return uint32_t((z ^ (z >> 31)) >> 16);
    }
};

// Divisors at the edges of init_fastdiv's shift and magic ranges. The magic numbers are computed
// at compile time, as the host does, so the Hexagon program runs only what the NPU runs.
inline constexpr uint32_t kDivisors[] = {
    1, 2, 3, 5, 7, 10, 12, 25, 127, 128, 129, 641, 1000, 4095, 4096, 65535, 65536, 65537, 1000000,
    0x7FFFFFFFu, 0x80000000u, 0x80000001u, 0xFFFFFFFEu, 0xFFFFFFFFu,
};
inline constexpr int kDivisorCount = sizeof kDivisors / sizeof *kDivisors;
inline constexpr int kMaxDevices   = 8;

struct magic_table {
    fastdiv_values divisors[kDivisorCount];
    fastdiv_values devices[kMaxDevices + 1];  // index = device count
};

constexpr magic_table make_magic_table() {
    magic_table t{};
    for (int i = 0; i < kDivisorCount; ++i) t.divisors[i] = hexnpu::proto::init_fastdiv(kDivisors[i]);
    for (int n = 1; n <= kMaxDevices; ++n) t.devices[n] = hexnpu::proto::init_fastdiv(uint32_t(n));
    return t;
}
inline constexpr magic_table kMagic = make_magic_table();

template <class Sink> void put_u64(Sink & sink, uint64_t v) {
    sink.put_word(uint32_t(v));
    sink.put_word(uint32_t(v >> 32));
}

template <class Sink> void run_fastdiv(Sink & sink, rng & r) {
    for (int i = 0; i < kDivisorCount; ++i) {
        const uint32_t d       = kDivisors[i];
        const uint32_t edges[] = {0, 1, 2, d - 1, d, d + 1, 2 * d - 1, 2 * d, 0x7FFFFFFFu, 0x80000000u,
                                  0xFFFFFFFEu, 0xFFFFFFFFu};
        for (uint32_t n : edges) {
            sink.put_word(hexnpu::proto::fastdiv(n, kMagic.divisors[i]));
            sink.put_word(hexnpu::proto::fastmodulo(n, kMagic.divisors[i]));
        }
        for (int k = 0; k < 48; ++k) {
            const uint32_t n = r.next();
            sink.put_word(hexnpu::proto::fastdiv(n, kMagic.divisors[i]));
            sink.put_word(hexnpu::proto::fastmodulo(n, kMagic.divisors[i]));
        }
    }
}

template <class Sink> void run_mdev_partition(Sink & sink) {
    const uint32_t totals[] = {0, 1, 5, 127, 128, 1000, 4096, 65537, 0x80000000u, 0xFFFFFFFFu};
    const uint32_t chunks[] = {0, 1, 3, 4, 32, 100, 128, 0x10000u, 0xFFFFFFFFu};
    for (uint32_t total : totals) {
        for (uint32_t per_chunk : chunks) {
            for (uint32_t count = 1; count <= kMaxDevices; ++count) {
                for (uint32_t idx = 0; idx < count; ++idx) {
                    const auto range = hexnpu::htp::htp_tensor_mdev_partition(total, per_chunk, idx, count,
                                                                              &kMagic.devices[count]);
                    sink.put_word(range.start);
                    sink.put_word(range.count);
                }
            }
        }
    }
}

// A tensor of elem_size elements, ne0 per row, rows row_pitch bytes apart and slices padded by
// slice_pad bytes.
inline htp_tensor make_tensor(uint64_t data, uint32_t elem_size, const uint32_t (&ne)[4], uint32_t row_pitch,
                              uint32_t slice_pad) {
    htp_tensor t{};
    t.data  = data;
    t.ne[0] = ne[0];
    t.ne[1] = ne[1];
    t.ne[2] = ne[2];
    t.ne[3] = ne[3];
    t.nb[0] = elem_size;
    t.nb[1] = row_pitch;
    t.nb[2] = ne[1] * row_pitch + slice_pad;
    t.nb[3] = ne[2] * t.nb[2] + slice_pad;
    return t;
}

template <class Sink> void put_tensor_cores(Sink & sink, const htp_tensor & t, uint32_t elem_size) {
    uint32_t rows_per_chunk = 0;
    const bool ok = hexnpu::htp::htp_tensor_mdev_rows_per_chunk(&t, elem_size, t.ne[0] * elem_size, &rows_per_chunk);
    sink.put_word(ok);
    sink.put_word(rows_per_chunk);
}

// Packed, line-aligned and misaligned layouts, then random views (a kernel may be handed any).
template <class Sink> void run_mdev_rows_per_chunk(Sink & sink, rng & r) {
    const uint64_t bases[]      = {0, 64, 128, 0x80000000u};
    const uint32_t elem_sizes[] = {2, 4};
    const uint32_t ne0s[]       = {1, 3, 32, 48, 64, 96};
    const uint32_t shapes[][3]  = {{1, 1, 1}, {3, 1, 1}, {8, 2, 1}, {16, 5, 2}, {7, 3, 3}};  // ne1..ne3
    const uint32_t pads[]       = {0, 64, 128};
    for (uint64_t data : bases) {
        for (uint32_t elem_size : elem_sizes) {
            for (uint32_t ne0 : ne0s) {
                for (const auto & s : shapes) {
                    const uint32_t ne[4]   = {ne0, s[0], s[1], s[2]};
                    const uint32_t packed  = ne0 * elem_size;
                    const uint32_t aligned = (packed + 127) / 128 * 128;
                    const uint32_t pitches[] = {packed, aligned, packed + elem_size};
                    for (uint32_t pitch : pitches) {
                        for (uint32_t pad : pads) put_tensor_cores(sink, make_tensor(data, elem_size, ne, pitch, pad), elem_size);
                    }
                }
            }
        }
    }
    for (int k = 0; k < 256; ++k) {
        htp_tensor t{};
        t.data = uint64_t(r.next() & 0x3) * 64;
        for (int d = 0; d < 4; ++d) {
            t.ne[d] = 1 + (r.next() & 0x1F);
            t.nb[d] = r.next() & 0x3FFF;
        }
        put_tensor_cores(sink, t, 1 + (r.next() & 0x7));
    }
}

template <class Sink> void run_tensor_extent(Sink & sink, rng & r) {
    for (int k = 0; k < 256; ++k) {
        htp_tensor t{};
        for (int d = 0; d < 4; ++d) {
            // Half the cases near the 32-bit limits, where a 32-bit product would wrap.
            t.ne[d] = k & 1 ? r.next() : 1 + (r.next() & 0xFF);
            t.nb[d] = k & 1 ? r.next() : r.next() & 0xFFFF;
        }
        const uint32_t elem_size = 1 + (r.next() & 0x7);
        put_u64(sink, hexnpu::htp::htp_tensor_extent(&t, elem_size));
        sink.put_word(hexnpu::htp::htp_tensor_slices_packed(&t));
        sink.put_word(hexnpu::htp::htp_tensor_is_contiguous(&t, elem_size));
        put_u64(sink, hexnpu::htp::htp_tensor_nrows(&t));
    }
}

inline constexpr uint32_t kArenaSize = 1 << 16;

template <class Sink> void run_vtcm_arena(Sink & sink, rng & r) {
    alignas(128) static uint8_t vtcm[kArenaSize];
    struct request {
        uint64_t bytes;
        uint32_t count, align;
    };
    const request fixed[] = {{100, 1, 128},        {1, 3, 128},         {0, 5, 128},          {4096, 4, 256},
                             {1, 0, 128},          {1, 1, 4096},        {uint64_t(1) << 40, 1, 128},
                             {1, 0xFFFFFFFFu, 128}, {0xFFFFFFFFu, 2, 128}, {30000, 1, 128},     {1, 1, 128}};
    for (int round = 0; round < 32; ++round) {
        hexnpu::htp::vtcm_arena arena(vtcm, kArenaSize);
        for (int k = 0; k < 11; ++k) {
            // Round 0 takes the fixed requests in order; the others random ones, mostly fitting.
            const request q = round == 0 ? fixed[k]
                                         : request{r.next() & 0x3FFF, r.next() & 0x7, uint32_t(1) << (r.next() % 9)};
            const uint8_t * p = arena.take(q.bytes, q.count, q.align);
            sink.put_word(p ? uint32_t(p - vtcm) : 0xFFFFFFFFu);
            sink.put_word(arena.ok());
            put_u64(sink, arena.used());
        }
    }
}

// Random weight tiles / staged flat blocks (every byte pattern), each unpacked and dotted with random
// activation words: the 32 row sums of every unpacking the matmul has, plus Q6_K's half sums.
template <class Sink> void run_tile_isum(Sink & sink, rng & r) {
    alignas(128) static HVX_Vector tile[53];
    alignas(128) static HVX_Vector act[8];
    auto fill = [&](HVX_Vector * v, int n) {
        for (int i = 0; i < n; ++i) {
            for (int lane = 0; lane < 32; ++lane) {
                v[i][lane] = int32_t(r.next() << 16 ^ r.next());
            }
        }
    };
    auto put = [&](HVX_Vector v) {
        for (int lane = 0; lane < 32; ++lane) {
            sink.put_word(uint32_t(v[lane]));
        }
    };
    for (int round = 0; round < 24; ++round) {
        fill(tile, 53);
        fill(act, 8);
        HVX_Vector w[8];
        hexnpu::htp::hvx_tile_unpack_q8_0(tile, w);
        put(hexnpu::htp::hvx_tile_isum(w, act));
        hexnpu::htp::hvx_tile_unpack_q4_0(tile, w);
        put(hexnpu::htp::hvx_tile_isum(w, act));
        hexnpu::htp::hvx_tile_unpack_q4_k(tile, w);
        put(hexnpu::htp::hvx_tile_isum(w, act));
        hexnpu::htp::hvx_tile_unpack_iq4_nl(tile, w);
        put(hexnpu::htp::hvx_tile_isum(w, act));
        hexnpu::htp::hvx_tile_unpack_mxfp4(tile, w);
        put(hexnpu::htp::hvx_tile_isum(w, act));
        hexnpu::htp::hvx_tile_unpack_q5_k(tile, w);
        put(hexnpu::htp::hvx_tile_isum(w, act));
        hexnpu::htp::hvx_tile_unpack_q3_k(tile, w);
        put(hexnpu::htp::hvx_tile_isum_groups(w, act, 0, 4));
        put(hexnpu::htp::hvx_tile_isum_groups(w, act, 4, 4));
        hexnpu::htp::hvx_tile_unpack_q6_k(tile, w);
        put(hexnpu::htp::hvx_tile_isum_groups(w, act, 0, 4));
        put(hexnpu::htp::hvx_tile_isum_groups(w, act, 4, 4));
        hexnpu::htp::hvx_tile_unpack_q2_k(tile, w);
        put(hexnpu::htp::hvx_tile_isum_groups(w, act, 0, 4));
        put(hexnpu::htp::hvx_tile_isum_groups(w, act, 4, 4));
        for (uint32_t sub = 0; sub < 4; ++sub) {
            hexnpu::htp::hvx_unpack_q1_0(tile[sub], w);
            put(hexnpu::htp::hvx_tile_isum(w, act));
        }
        for (uint32_t sub = 0; sub < 2; ++sub) {
            hexnpu::htp::hvx_unpack_q2_0(tile + 2 * sub, w);
            put(hexnpu::htp::hvx_tile_isum(w, act));
        }
        for (uint32_t t = 0; t < 8; ++t) {
            hexnpu::htp::hvx_flat_unpack_q4_k(tile, t, w);
            put(hexnpu::htp::hvx_tile_isum(w, act));
            hexnpu::htp::hvx_flat_unpack_q5_k(tile, t, w);
            put(hexnpu::htp::hvx_tile_isum(w, act));
            hexnpu::htp::hvx_flat_unpack_q3_k(tile, t, w);
            put(hexnpu::htp::hvx_tile_isum(w, act));
            hexnpu::htp::hvx_flat_unpack_q5(tile + (t % 4) * 5, w, t < 4 ? 16 : 0);
            put(hexnpu::htp::hvx_tile_isum(w, act));
            hexnpu::htp::hvx_flat_unpack_q2_k(tile, t, w);
            put(hexnpu::htp::hvx_tile_isum_groups(w, act, 0, 4));
            put(hexnpu::htp::hvx_tile_isum_groups(w, act, 4, 4));
            hexnpu::htp::hvx_flat_unpack_q6_k(tile, t, w);
            put(hexnpu::htp::hvx_tile_isum_groups(w, act, 0, 4));
            put(hexnpu::htp::hvx_tile_isum_groups(w, act, 4, 4));
        }
        put(hexnpu::htp::hvx_byte_of_words(tile[round % 53], round % 4));
    }
}

// Rows of random fp32 bits (NaN, infinities and zeros among them, and repeated values), as ARGSORT
// and TOP_K key them, sorted by the bitonic network at every length from one vector to 1024 keys:
// the sorted keys and their indices.
template <class Sink> void run_bitonic_sort(Sink & sink, rng & r) {
    alignas(128) static HVX_Vector keys[32];
    alignas(128) static HVX_Vector idx[32];
    static const uint32_t specials[] = {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x00000000u, 0x80000000u};
    for (uint32_t log2_n = 5; log2_n <= 10; ++log2_n) {
        for (int descending = 0; descending < 2; ++descending) {
            const uint32_t n_vec = uint32_t(1) << (log2_n - 5);
            for (uint32_t v = 0; v < n_vec; ++v) {
                HVX_Vector x;
                for (int lane = 0; lane < 32; ++lane) {
                    const uint32_t w = r.next() << 16 ^ r.next();
                    x[lane]  = int32_t(w % 7 == 0 ? specials[w % 6] : w % 5 == 0 ? (w & 0xC0000000u) : w);
                    idx[v][lane] = int32_t(v * 32 + uint32_t(lane));
                }
                keys[v] = hexnpu::htp::hvx_sort_key(x, descending != 0);
            }
            hexnpu::htp::hvx_bitonic_sort(keys, idx, log2_n);
            for (uint32_t v = 0; v < n_vec; ++v) {
                for (int lane = 0; lane < 32; ++lane) {
                    sink.put_word(uint32_t(keys[v][lane]));
                    sink.put_word(uint32_t(idx[v][lane]));
                }
            }
        }
    }
}

template <class Sink> void run_all(Sink & sink) {
    rng r{0x1234ABCDull};
    sink.begin(kSectionMarker | fastdiv);
    run_fastdiv(sink, r);
    sink.begin(kSectionMarker | mdev_partition);
    run_mdev_partition(sink);
    sink.begin(kSectionMarker | mdev_rows_per_chunk);
    run_mdev_rows_per_chunk(sink, r);
    sink.begin(kSectionMarker | tensor_extent);
    run_tensor_extent(sink, r);
    sink.begin(kSectionMarker | vtcm_arena);
    run_vtcm_arena(sink, r);
    sink.begin(kSectionMarker | tile_isum);
    run_tile_isum(sink, r);
    sink.begin(kSectionMarker | bitonic_sort);
    run_bitonic_sort(sink, r);
}

}  // namespace htp_core_diff
