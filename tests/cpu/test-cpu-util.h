// Shared set-up for the CPU backend tests: a context whose tensors own host memory, a CPU backend
// with a chosen thread count, and f32 fill/read helpers that go through the type traits.
#pragma once

#include "cpu/cpu-backend.h"

#include "hexnpu/backend.h"
#include "hexnpu/graph.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace cpu_test {

using namespace hexnpu;

struct fixture {
    explicit fixture(int n_threads = 2, size_t mem_bytes = size_t(64) << 20)
        : ctx({mem_bytes, false}), device(make_cpu_device()), backend(device.get(), n_threads) {}

    // Computes out and everything it depends on.
    void compute(ggml_tensor * out) {
        ggml_cgraph graph;
        ggml_build_forward_expand(graph, out);
        backend.graph_compute(graph);
    }

    ggml_context                    ctx;
    std::unique_ptr<backend_device> device;
    cpu_backend                     backend;
};

// Writes values (GGML flat order) into a contiguous tensor of any type with a from_float path.
inline void set_values(ggml_tensor * t, const std::vector<float> & values) {
    const int64_t ne0 = t->ne[0];
    for (int64_t r = 0; r < ggml_nrows(t); ++r) {
        ggml_get_type_traits(t->type)->from_float_ref(values.data() + r * ne0,
                                                      static_cast<uint8_t *>(t->data) + r * t->nb[1], ne0);
    }
}

// Reads a contiguous tensor as f32 in flat order.
inline std::vector<float> get_values(const ggml_tensor * t) {
    const int64_t      ne0 = t->ne[0];
    std::vector<float> out(size_t(ggml_nelements(t)));
    for (int64_t r = 0; r < ggml_nrows(t); ++r) {
        ggml_get_type_traits(t->type)->to_float_ref(static_cast<const uint8_t *>(t->data) + r * t->nb[1],
                                                    out.data() + r * ne0, ne0);
    }
    return out;
}

inline void set_i32(ggml_tensor * t, const std::vector<int32_t> & values) {
    std::memcpy(t->data, values.data(), values.size() * sizeof(int32_t));
}

inline std::vector<int32_t> get_i32(const ggml_tensor * t) {
    std::vector<int32_t> out(size_t(ggml_nelements(t)));
    std::memcpy(out.data(), t->data, out.size() * sizeof(int32_t));
    return out;
}

inline std::vector<float> random_values(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937                          gen(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float>                    v(n);
    for (float & x : v) {
        x = dist(gen);
    }
    return v;
}

inline ggml_tensor * new_filled(ggml_context & ctx, ggml_type type, std::initializer_list<int64_t> shape,
                                uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    const std::vector<int64_t> ne(shape);
    ggml_tensor *              t = ggml_new_tensor(&ctx, type, int(ne.size()), ne.data());
    set_values(t, random_values(size_t(ggml_nelements(t)), seed, lo, hi));
    return t;
}

} // namespace cpu_test
