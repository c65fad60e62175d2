// Buffers for contexts (alloc_ctx_tensors, tensor_set/get) and the graph allocator: memory reuse
// bounded by liveness, outputs kept, views aliased. Overlaps are checked against a liveness
// simulation written here, and graphs are evaluated on the planned memory and compared with an
// evaluation where every tensor has storage of its own.
#include "hexnpu/backend.h"
#include "hexnpu/graph-alloc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

using namespace hexnpu;

namespace {

class host_buffer : public backend_buffer {
  public:
    host_buffer(backend_buffer_type * buft, size_t size) : backend_buffer(buft, size), mem_(size) {}
    void * base() override { return mem_.data(); }
    void   set_tensor(ggml_tensor * t, const void * data, size_t offset, size_t size) override {
        std::memcpy(static_cast<uint8_t *>(t->data) + offset, data, size);
    }
    void get_tensor(const ggml_tensor * t, void * data, size_t offset, size_t size) override {
        std::memcpy(data, static_cast<const uint8_t *>(t->data) + offset, size);
    }
    void clear(uint8_t value) override { std::fill(mem_.begin(), mem_.end(), value); }

  private:
    std::vector<uint8_t> mem_;
};

// Host memory with a chosen alignment, size limit and per-tensor padding; counts allocations.
class host_buffer_type : public backend_buffer_type {
  public:
    explicit host_buffer_type(size_t alignment = 64, size_t max_size = SIZE_MAX, size_t padding = 0)
        : alignment_(alignment), max_size_(max_size), padding_(padding) {}
    const char * name() const override { return "TEST_HOST"; }
    std::unique_ptr<backend_buffer> alloc_buffer(size_t size) override {
        ++n_allocations;
        return std::make_unique<host_buffer>(this, size);
    }
    size_t           alignment() const override { return alignment_; }
    size_t           max_size() const override { return max_size_; }
    size_t           alloc_size(const ggml_tensor * t) const override { return ggml_nbytes(t) + padding_; }
    bool             is_host() const override { return true; }
    backend_device * device() const override { return nullptr; }

    int n_allocations = 0;

  private:
    size_t alignment_, max_size_, padding_;
};

void set_indexed_name(ggml_tensor * t, char prefix, int i) {
    char name[16];
    std::snprintf(name, sizeof name, "%c%d", prefix, i);
    ggml_set_name(t, name);
}

ggml_tensor * root_of(ggml_tensor * t) { return t->view_src ? t->view_src : t; }

size_t offset_in(const ggml_tensor * t) {
    return size_t(static_cast<const uint8_t *>(t->data) - static_cast<const uint8_t *>(t->buffer->base()));
}

// Independent liveness: a leaf is live from before the first node, a node from its own step; both
// until their last use (by root: a view's use is a use of the memory it views). Outputs and
// tensors nobody reads stay live to the end. Every pair of roots in `buf` that are live at the
// same step must have disjoint bytes.
void expect_no_live_overlap(const ggml_cgraph & graph, const backend_buffer * buf) {
    struct interval {
        int first = -1, last = -1;
        bool used = false;
    };
    std::map<ggml_tensor *, interval> live;
    std::set<const ggml_tensor *>     read;
    for (ggml_tensor * leaf : graph.leafs) {
        live[root_of(leaf)];
    }
    for (int i = 0; i < int(graph.nodes.size()); ++i) {
        ggml_tensor * n = graph.nodes[i];
        if (!n->view_src && !live.count(n)) {
            live[n].first = i;
        }
        auto use = [&](ggml_tensor * r) {
            interval & iv = live[r];  // a source outside the graph is live from the start
            iv.last       = std::max(iv.last, i);
            iv.used       = true;
        };
        for (ggml_tensor * s : n->src) {
            if (s && s != n) {
                use(root_of(s));
                read.insert(s);
            }
        }
        if (n->view_src) {
            use(n->view_src);
        }
    }
    for (ggml_tensor * n : graph.nodes) {
        if (!read.count(n) || (n->flags & GGML_TENSOR_FLAG_OUTPUT)) {
            live[root_of(n)].last = INT_MAX;
        }
    }
    std::vector<std::pair<ggml_tensor *, interval>> ours;
    for (auto & [t, iv] : live) {
        if (t->buffer == buf) {
            if (!iv.used) {
                iv.last = INT_MAX;
            }
            ours.emplace_back(t, iv);
        }
    }
    for (size_t i = 0; i < ours.size(); ++i) {
        for (size_t j = i + 1; j < ours.size(); ++j) {
            const auto & [a, ia] = ours[i];
            const auto & [b, ib] = ours[j];
            if (ia.first <= ib.last && ib.first <= ia.last) {
                const size_t a0 = offset_in(a), a1 = a0 + ggml_nbytes(a);
                const size_t b0 = offset_in(b), b1 = b0 + ggml_nbytes(b);
                EXPECT_TRUE(a1 <= b0 || b1 <= a0)
                    << "'" << a->name << "' [" << a0 << ", " << a1 << ") and '" << b->name << "' [" << b0 << ", "
                    << b1 << ") are live together (steps " << ia.first << ".." << ia.last << " and " << ib.first
                    << ".." << ib.last << ")";
            }
        }
    }
}

// The few ops these tests build, on contiguous F32 data; views need no work.
void eval_node(const ggml_tensor * n, float * dst, const float * a, const float * b) {
    const int64_t ne = ggml_nelements(n);
    switch (n->op) {
        case GGML_OP_ADD:
            for (int64_t i = 0; i < ne; ++i) dst[i] = a[i] + b[i];
            break;
        case GGML_OP_MUL:
            for (int64_t i = 0; i < ne; ++i) dst[i] = a[i] * b[i];
            break;
        case GGML_OP_SQR:
            for (int64_t i = 0; i < ne; ++i) dst[i] = a[i] * a[i];
            break;
        case GGML_OP_SCALE:
            for (int64_t i = 0; i < ne; ++i) dst[i] = a[i] * ggml_get_op_param<float>(n, 0);
            break;
        case GGML_OP_SUM_ROWS: {
            const int64_t row = n->src[0]->ne[0];
            for (int64_t r = 0; r < ne; ++r) {
                float s = 0.0f;
                for (int64_t i = 0; i < row; ++i) s += a[r * row + i];
                dst[r] = s;
            }
            break;
        }
        case GGML_OP_RESHAPE:
        case GGML_OP_VIEW:
            break;
        default:
            FAIL() << "unexpected op " << ggml_op_name(n->op);
    }
}

float * f32(ggml_tensor * t) { return t ? static_cast<float *>(t->data) : nullptr; }

// Runs the graph on the memory the allocator planned.
void run_in_place(const ggml_cgraph & graph) {
    for (ggml_tensor * n : graph.nodes) {
        eval_node(n, f32(n), f32(n->src[0]), f32(n->src[1]));
    }
}

// Runs the graph with private storage per tensor (views slice their source's storage).
std::map<const ggml_tensor *, std::vector<float>> run_reference(const ggml_cgraph & graph) {
    std::map<const ggml_tensor *, std::vector<float>> values;
    for (ggml_tensor * leaf : graph.leafs) {
        values[leaf].assign(f32(leaf), f32(leaf) + ggml_nelements(leaf));
    }
    auto input = [&](const ggml_tensor * s) -> const float * {
        if (!s) {
            return nullptr;
        }
        if (s->view_src) {
            return values.at(s->view_src).data() + s->view_offs / sizeof(float);
        }
        return values.at(s).data();
    };
    for (ggml_tensor * n : graph.nodes) {
        if (n->view_src) {
            continue;
        }
        std::vector<float> & out = values[n];
        out.resize(size_t(ggml_nelements(n)));
        eval_node(n, out.data(), input(n->src[0]), input(n->src[1]));
    }
    for (ggml_tensor * n : graph.nodes) {
        if (n->view_src) {
            const float * v = input(n);
            values[n].assign(v, v + ggml_nelements(n));
        }
    }
    return values;
}

void fill_inputs(const ggml_cgraph & graph, uint32_t seed) {
    std::mt19937 rng(seed);
    for (ggml_tensor * leaf : graph.leafs) {
        std::vector<float> v(size_t(ggml_nelements(leaf)));
        for (float & x : v) {
            x = float(int(rng() % 2001) - 1000) / 1024.0f;
        }
        tensor_set(leaf, v.data(), 0, v.size() * sizeof(float));
    }
}

// Results (nodes nobody reads) and OUTPUT-flagged tensors must hold what the reference computed.
void expect_outputs_match(const ggml_cgraph & graph, const std::map<const ggml_tensor *, std::vector<float>> & ref) {
    std::set<const ggml_tensor *> read;
    for (ggml_tensor * n : graph.nodes) {
        for (ggml_tensor * s : n->src) {
            read.insert(s);
        }
    }
    for (ggml_tensor * n : graph.nodes) {
        if (read.count(n) && !(n->flags & GGML_TENSOR_FLAG_OUTPUT)) {
            continue;
        }
        const std::vector<float> & want = ref.at(n);
        EXPECT_EQ(std::memcmp(f32(n), want.data(), want.size() * sizeof(float)), 0) << "output '" << n->name << "'";
    }
}

} // namespace

// ---- alloc_ctx_tensors, tensor_alloc, tensor_set/get ------------------------------------------

TEST(AllocCtxTensors, OneBufferAlignedOffsetsViewsInside) {
    host_buffer_type buft(32);
    ggml_context     ctx;
    ggml_tensor *    a = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 10);   // 40 bytes -> 64
    ggml_tensor *    b = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 3);    // 12 bytes -> 32
    ggml_tensor *    v = ggml_view_1d(&ctx, a, 4, 8);                    // a view: no memory of its own
    ggml_tensor *    q = ggml_new_tensor_1d(&ctx, GGML_TYPE_Q4_0, 32);  // one 18-byte block -> 32

    std::unique_ptr<backend_buffer> buf = alloc_ctx_tensors(ctx, &buft);
    ASSERT_NE(buf, nullptr);
    EXPECT_EQ(buf->size(), 128u);
    EXPECT_EQ(offset_in(a), 0u);
    EXPECT_EQ(offset_in(b), 64u);
    EXPECT_EQ(offset_in(q), 96u);
    EXPECT_EQ(v->buffer, buf.get());
    EXPECT_EQ(v->data, static_cast<uint8_t *>(a->data) + 8);
    EXPECT_EQ(alloc_ctx_tensors(ctx, &buft), nullptr);  // everything has memory now
}

TEST(AllocCtxTensors, HonoursAllocSizeAndMaxSize) {
    host_buffer_type padded(16, SIZE_MAX, 100);
    ggml_context     ctx;
    ggml_tensor *    a   = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 4);  // 16 + 100 -> 128
    ggml_tensor *    b   = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 4);
    auto             buf = alloc_ctx_tensors(ctx, &padded);
    EXPECT_EQ(offset_in(a), 0u);
    EXPECT_EQ(offset_in(b), 128u);
    EXPECT_EQ(buf->size(), 256u);

    host_buffer_type small(16, 100);
    ggml_context     big;
    ggml_new_tensor_1d(&big, GGML_TYPE_F32, 20);
    ggml_new_tensor_1d(&big, GGML_TYPE_F32, 20);  // 80 + 80 bytes > 100
    EXPECT_THROW(alloc_ctx_tensors(big, &small), std::length_error);
    EXPECT_EQ(small.n_allocations, 0);
}

TEST(TensorAlloc, RejectsAddressesOutsideTheBuffer) {
    host_buffer_type buft(16);
    auto             buf  = buft.alloc_buffer(64);
    auto *           base = static_cast<uint8_t *>(buf->base());
    ggml_context     ctx;
    ggml_tensor *    t = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 8);  // 32 bytes
    EXPECT_THROW(tensor_alloc(buf.get(), t, base + 48), std::out_of_range);
    EXPECT_THROW(tensor_alloc(buf.get(), t, base - 16), std::out_of_range);
    tensor_alloc(buf.get(), t, base + 32);  // ends exactly at the buffer's end
    EXPECT_EQ(t->buffer, buf.get());
    EXPECT_THROW(tensor_alloc(buf.get(), t, base), std::logic_error);  // already placed
}

TEST(TensorSetGet, RoundTripAndBoundsChecks) {
    host_buffer_type buft;
    ggml_context     ctx;
    ggml_tensor *    t = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 6);
    ggml_tensor *    v = ggml_view_1d(&ctx, t, 2, 3 * sizeof(float));
    EXPECT_THROW(tensor_set(t, "", 0, 0), std::logic_error);  // no memory yet
    auto buf = alloc_ctx_tensors(ctx, &buft);

    const float in[6] = {1, 2, 3, 4, 5, 6};
    tensor_set(t, in, 0, sizeof in);
    float part[2] = {};
    tensor_get(v, part, 0, sizeof part);  // through the view: elements 3 and 4
    EXPECT_EQ(part[0], 4.0f);
    EXPECT_EQ(part[1], 5.0f);
    const float nine = 9.0f;
    tensor_set(t, &nine, 5 * sizeof(float), sizeof nine);
    float all[6] = {};
    tensor_get(t, all, 0, sizeof all);
    EXPECT_EQ(all[5], 9.0f);
    EXPECT_EQ(all[0], 1.0f);

    EXPECT_THROW(tensor_set(t, in, 4, sizeof in), std::out_of_range);
    EXPECT_THROW(tensor_get(t, all, 25, 0), std::out_of_range);
    EXPECT_THROW(tensor_get(t, all, 8, SIZE_MAX), std::out_of_range);  // offset + size wraps
    EXPECT_THROW(tensor_get(v, all, 0, 12), std::out_of_range);        // past the view's own bytes

    // Memory of an allocating context has no buffer: plain copies.
    ggml_context  host({256, false});
    ggml_tensor * h = ggml_new_tensor_1d(&host, GGML_TYPE_F32, 2);
    tensor_set(h, in, 0, 2 * sizeof(float));
    EXPECT_EQ(static_cast<float *>(h->data)[1], 2.0f);
}

// ---- graph allocator --------------------------------------------------------------------------

TEST(GraphAllocator, ChainPeakDoesNotGrowWithLength) {
    host_buffer_type buft(64);
    const size_t     tensor_bytes = 4032;  // 1000 floats rounded up to 64
    for (int length : {1, 4, 16, 256}) {
        ggml_context  ctx;
        ggml_tensor * x = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 1000);
        ggml_tensor * t = x;
        for (int i = 0; i < length; ++i) {
            t = i % 2 ? ggml_sqr(&ctx, t) : ggml_scale(&ctx, t, 0.5f);
        }
        ggml_cgraph graph;
        ggml_build_forward_expand(graph, t);
        graph_allocator galloc(&buft);
        // The input and one node, or two consecutive nodes, are live at once.
        EXPECT_EQ(galloc.reserve(graph), 2 * tensor_bytes) << "chain of " << length;

        // A chain that also adds x at every step keeps x live: three tensors.
        ggml_context  ctx2;
        ggml_tensor * y = ggml_new_tensor_1d(&ctx2, GGML_TYPE_F32, 1000);
        ggml_tensor * u = y;
        for (int i = 0; i < length; ++i) {
            u = ggml_add(&ctx2, ggml_sqr(&ctx2, u), y);
        }
        ggml_cgraph graph2;
        ggml_build_forward_expand(graph2, u);
        graph_allocator galloc2(&buft);
        EXPECT_EQ(galloc2.reserve(graph2), 3 * tensor_bytes) << "chain of " << length;
    }
}

TEST(GraphAllocator, OutputsAndResultsKeepTheirMemory) {
    host_buffer_type buft(32);
    ggml_context     ctx;
    ggml_tensor *    x = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 64);
    ggml_set_name(x, "x");
    ggml_tensor * t = x;
    std::vector<ggml_tensor *> outputs;
    for (int i = 0; i < 24; ++i) {
        t = i % 3 ? ggml_scale(&ctx, t, 1.5f) : ggml_add(&ctx, t, x);
        set_indexed_name(t, 't', i);
        if (i % 5 == 2) {
            t->flags |= GGML_TENSOR_FLAG_OUTPUT;
            outputs.push_back(t);
        }
    }
    ggml_tensor * side = ggml_sqr(&ctx, outputs[0]);  // a second result, computed early
    ggml_set_name(side, "side");
    ggml_cgraph graph;
    ggml_build_forward_expand(graph, side);
    ggml_build_forward_expand(graph, t);

    graph_allocator galloc(&buft);
    galloc.alloc_graph(graph);
    expect_no_live_overlap(graph, galloc.buffer(0));
    fill_inputs(graph, 1);
    const auto reference = run_reference(graph);  // before the inputs' memory is reused
    run_in_place(graph);
    expect_outputs_match(graph, reference);

    // Reuse does happen: without it every tensor would need its own 256 bytes.
    EXPECT_LT(galloc.buffer_size(0), (graph.nodes.size() + 1) * 256);
    EXPECT_GE(galloc.buffer_size(0), (outputs.size() + 3) * 256);
}

TEST(GraphAllocator, ViewsAliasAndKeepTheirSourceAlive) {
    host_buffer_type buft(32);
    ggml_context     ctx;
    ggml_context     weights_ctx;
    ggml_tensor *    w = ggml_new_tensor_1d(&weights_ctx, GGML_TYPE_F32, 64);
    auto             weights = alloc_ctx_tensors(weights_ctx, &buft);
    void *           w_data  = w->data;

    ggml_tensor * x  = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 64);
    ggml_tensor * a  = ggml_mul(&ctx, x, w);
    ggml_tensor * r  = ggml_reshape_2d(&ctx, a, 8, 8);
    ggml_tensor * v  = ggml_view_1d(&ctx, a, 16, 16 * sizeof(float));
    ggml_tensor * b  = ggml_scale(&ctx, ggml_sum_rows(&ctx, r), 2.0f);  // a is read through r ...
    ggml_tensor * c  = ggml_sqr(&ctx, v);                               // ... and later through v
    ggml_tensor * wv = ggml_view_1d(&ctx, w, 16, 0);
    ggml_tensor * d  = ggml_add(&ctx, c, wv);
    ggml_cgraph   graph;
    ggml_build_forward_expand(graph, b);
    ggml_build_forward_expand(graph, d);

    graph_allocator galloc(&buft);
    galloc.alloc_graph(graph);
    EXPECT_EQ(w->data, w_data);  // weights stay where they are
    EXPECT_EQ(r->data, a->data);
    EXPECT_EQ(r->buffer, galloc.buffer(0));
    EXPECT_EQ(v->data, static_cast<uint8_t *>(a->data) + 64);
    EXPECT_EQ(wv->data, w_data);
    EXPECT_EQ(wv->buffer, weights.get());
    expect_no_live_overlap(graph, galloc.buffer(0));

    fill_inputs(graph, 2);
    const auto reference = run_reference(graph);  // before the inputs' memory is reused
    run_in_place(graph);
    expect_outputs_match(graph, reference);
}

TEST(GraphAllocator, RandomGraphsNeverOverlapLiveTensors) {
    std::mt19937     rng(12345);
    const int64_t    sizes[] = {16, 100, 257, 1024};
    host_buffer_type buft(64);
    graph_allocator  galloc(&buft);  // one allocator for all: buffers grow as graphs get bigger
    size_t           reused = 0;
    for (int round = 0; round < 150; ++round) {
        ggml_context               ctx;
        std::vector<ggml_tensor *> pool;
        const int                  n_inputs = 1 + int(rng() % 3);
        for (int i = 0; i < n_inputs; ++i) {
            pool.push_back(ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, sizes[rng() % 4]));
        }
        const int n_ops = 5 + int(rng() % 40);
        for (int i = 0; i < n_ops; ++i) {
            ggml_tensor * a = pool[rng() % pool.size()];
            ggml_tensor * t = nullptr;
            switch (rng() % 7) {
                case 0: t = ggml_sqr(&ctx, a); break;
                case 1: t = ggml_scale(&ctx, a, 0.75f); break;
                case 2:
                case 3: {
                    std::vector<ggml_tensor *> same;
                    for (ggml_tensor * p : pool) {
                        if (ggml_are_same_shape(p, a)) same.push_back(p);
                    }
                    ggml_tensor * b = same[rng() % same.size()];
                    t = rng() % 2 ? ggml_add(&ctx, a, b) : ggml_mul(&ctx, a, b);
                    break;
                }
                case 4: {
                    const int64_t n   = ggml_nelements(a);
                    const int64_t row = n % 4 == 0 ? 4 : n % 5 == 0 ? 5 : 1;
                    t = ggml_sum_rows(&ctx, ggml_reshape_2d(&ctx, a, row, n / row));
                    break;
                }
                case 5: t = ggml_view_1d(&ctx, a, (ggml_nelements(a) + 1) / 2, 0); break;
                default: t = ggml_reshape_1d(&ctx, a, ggml_nelements(a)); break;
            }
            set_indexed_name(t, 'n', i);
            if (rng() % 10 == 0) {
                t->flags |= GGML_TENSOR_FLAG_OUTPUT;
            }
            pool.push_back(t);
        }
        ggml_cgraph graph;
        for (int k = 0; k < 3; ++k) {
            ggml_tensor * target = pool[pool.size() - 1 - rng() % std::min<size_t>(pool.size() - n_inputs, 6)];
            ggml_build_forward_expand(graph, target);
        }

        size_t own_bytes = 0;  // without reuse: every tensor its own aligned block
        for (ggml_tensor * t : graph.leafs) {
            own_bytes += (ggml_nbytes(t) + 63) / 64 * 64;
        }
        for (ggml_tensor * t : graph.nodes) {
            own_bytes += t->view_src ? 0 : (ggml_nbytes(t) + 63) / 64 * 64;
        }
        graph_allocator probe(&buft);
        reused += probe.reserve(graph) < own_bytes ? 1 : 0;

        galloc.alloc_graph(graph);
        const backend_buffer * buf = galloc.buffer(0);
        for (ggml_tensor * n : graph.nodes) {
            if (n->view_src) {
                EXPECT_EQ(n->data, static_cast<uint8_t *>(n->view_src->data) + n->view_offs);
                continue;
            }
            ASSERT_EQ(n->buffer, buf);
            EXPECT_EQ(offset_in(n) % 64, 0u);
            EXPECT_LE(offset_in(n) + ggml_nbytes(n), buf->size());
        }
        expect_no_live_overlap(graph, buf);
        fill_inputs(graph, uint32_t(round));
        const auto reference = run_reference(graph);
        run_in_place(graph);
        expect_outputs_match(graph, reference);
    }
    EXPECT_GT(reused, 50u);  // memory reuse is the point: most graphs need less than the sum
}

TEST(GraphAllocator, ReserveSizesTheBufferOnce) {
    host_buffer_type buft(64);
    auto chain = [](ggml_context & ctx, int64_t n, int length) {
        ggml_tensor * t = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, n);
        for (int i = 0; i < length; ++i) {
            t = ggml_sqr(&ctx, t);
        }
        ggml_cgraph g;
        ggml_build_forward_expand(g, t);
        return g;
    };
    graph_allocator galloc(&buft);
    ggml_context    big_ctx;
    EXPECT_EQ(galloc.reserve(chain(big_ctx, 4096, 8)), 2 * 16384u);
    EXPECT_EQ(buft.n_allocations, 1);
    EXPECT_EQ(big_ctx.tensors().back().data, nullptr);  // reserve places nothing
    const backend_buffer * reserved = galloc.buffer(0);

    for (int64_t n : {100, 4096, 1000}) {
        ggml_context ctx;
        ggml_cgraph  g = chain(ctx, n, 5);
        galloc.alloc_graph(g);
        EXPECT_EQ(galloc.buffer(0), reserved);
        EXPECT_EQ(g.nodes.back()->buffer, reserved);
    }
    EXPECT_EQ(buft.n_allocations, 1);
    EXPECT_EQ(galloc.buffer(0)->usage(), buffer_usage::compute);

    ggml_context bigger;
    galloc.reserve(chain(bigger, 8192, 2));
    EXPECT_EQ(buft.n_allocations, 2);
    EXPECT_EQ(galloc.buffer_size(0), 2 * 32768u);

    host_buffer_type limited(64, 20000);
    graph_allocator  too_small(&limited);
    ggml_context     ctx;
    EXPECT_THROW(too_small.reserve(chain(ctx, 4096, 3)), std::length_error);
}

TEST(GraphAllocator, PickerSpreadsTensorsOverBufferTypes) {
    host_buffer_type first(32), second(128, SIZE_MAX, 4);
    graph_allocator  galloc({&first, &second});
    ggml_context     ctx;
    ggml_tensor *    x = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 50);
    ggml_tensor *    t = x;
    for (int i = 0; i < 12; ++i) {
        t = i % 4 == 3 ? ggml_add(&ctx, t, x) : ggml_sqr(&ctx, t);
        ggml_set_name(t, i % 3 ? "A" : "B");
    }
    ggml_set_name(x, "A");
    ggml_cgraph graph;
    ggml_build_forward_expand(graph, t);
    auto pick = [](const ggml_tensor * tensor) -> size_t { return tensor->name[0] == 'B' ? 1 : 0; };
    galloc.alloc_graph(graph, pick);
    for (ggml_tensor * n : graph.nodes) {
        EXPECT_EQ(n->buffer, galloc.buffer(pick(n)));
    }
    EXPECT_EQ(x->buffer, galloc.buffer(0));
    expect_no_live_overlap(graph, galloc.buffer(0));
    expect_no_live_overlap(graph, galloc.buffer(1));
    for (ggml_tensor * n : graph.nodes) {
        EXPECT_EQ(offset_in(n) % (pick(n) ? 128 : 32), 0u);
    }
    fill_inputs(graph, 3);
    const auto reference = run_reference(graph);  // before the inputs' memory is reused
    run_in_place(graph);
    expect_outputs_match(graph, reference);

    graph_allocator wrong(&first);
    ggml_context    ctx2;
    ggml_cgraph     g2;
    ggml_build_forward_expand(g2, ggml_sqr(&ctx2, ggml_new_tensor_1d(&ctx2, GGML_TYPE_F32, 4)));
    EXPECT_THROW(wrong.alloc_graph(g2, [](const ggml_tensor *) -> size_t { return 1; }), std::out_of_range);
}
