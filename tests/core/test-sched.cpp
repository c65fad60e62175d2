// The scheduler with small devices defined here: TEST (host memory, ADD and MUL only), REF (host
// memory, every op these graphs use) and NOHOST (memory the host may not read, ADD/MUL/CPY, reads
// only its own buffers). Every backend refuses to run a node whose memory its device cannot
// access, so a missing copy fails loudly; results are compared with plain loops written here.
#include "cpu/cpu-backend.h"
#include "hexnpu/backend.h"
#include "hexnpu/sched.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

using namespace hexnpu;

namespace {

class mem_buffer : public backend_buffer {
  public:
    mem_buffer(backend_buffer_type * buft, size_t size) : backend_buffer(buft, size), mem_(size) {}
    void * base() override { return mem_.data(); }
    void   set_tensor(ggml_tensor * t, const void * data, size_t offset, size_t size) override {
        std::memcpy(static_cast<uint8_t *>(t->data) + offset, data, size);
    }
    void get_tensor(const ggml_tensor * t, void * data, size_t offset, size_t size) override {
        std::memcpy(data, static_cast<const uint8_t *>(t->data) + offset, size);
    }
    void clear(uint8_t value) override { std::memset(mem_.data(), value, mem_.size()); }

  private:
    std::vector<uint8_t> mem_;
};

class mem_buffer_type : public backend_buffer_type {
  public:
    mem_buffer_type(std::string name, bool host, backend_device * dev)
        : name_(std::move(name)), host_(host), device_(dev) {}
    const char *                    name() const override { return name_.c_str(); }
    std::unique_ptr<backend_buffer> alloc_buffer(size_t size) override {
        return std::make_unique<mem_buffer>(this, size);
    }
    size_t           alignment() const override { return 32; }
    bool             is_host() const override { return host_; }
    backend_device * device() const override { return device_; }

  private:
    std::string      name_;
    bool             host_;
    backend_device * device_;
};

const ggml_tensor * root_of(const ggml_tensor * t) { return t->view_src ? t->view_src : t; }

float load(const ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    float v;
    std::memcpy(&v, static_cast<const uint8_t *>(t->data) + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3],
                sizeof v);
    return v;
}

void store(ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, float v) {
    std::memcpy(static_cast<uint8_t *>(t->data) + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3], &v,
                sizeof v);
}

float element(const ggml_tensor * n, const ggml_tensor * a, const ggml_tensor * b, int64_t i0, int64_t i1, int64_t i2,
              int64_t i3) {
    const float x = load(a, i0, i1, i2, i3);
    auto        bcast = [&] { return load(b, i0 % b->ne[0], i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3]); };
    switch (n->op) {
        case GGML_OP_ADD: return x + bcast();
        case GGML_OP_MUL: return x * bcast();
        case GGML_OP_SQR: return x * x;
        case GGML_OP_SCALE: return x * ggml_get_op_param<float>(n, 0) + ggml_get_op_param<float>(n, 1);
        case GGML_OP_CPY: return x;
        default: throw backend_error(std::string("test backend: no kernel for ") + ggml_op_name(n->op));
    }
}

// F32 element-wise ops with src1 broadcast, SUM_ROWS, and same-shape CPY; any strides.
void compute_node(ggml_tensor * n) {
    const ggml_tensor * a = n->src[0];
    const ggml_tensor * b = n->src[1];
    for (int64_t i3 = 0; i3 < n->ne[3]; ++i3) {
        for (int64_t i2 = 0; i2 < n->ne[2]; ++i2) {
            for (int64_t i1 = 0; i1 < n->ne[1]; ++i1) {
                if (n->op == GGML_OP_SUM_ROWS) {
                    float sum = 0.0f;
                    for (int64_t i0 = 0; i0 < a->ne[0]; ++i0) {
                        sum += load(a, i0, i1, i2, i3);
                    }
                    store(n, 0, i1, i2, i3, sum);
                    continue;
                }
                for (int64_t i0 = 0; i0 < n->ne[0]; ++i0) {
                    store(n, i0, i1, i2, i3, element(n, a, b, i0, i1, i2, i3));
                }
            }
        }
    }
}

class test_device : public backend_device {
  public:
    test_device(std::string name, std::set<ggml_op> ops, bool host_memory, bool reads_host_buffers)
        : name_(std::move(name)), ops_(std::move(ops)), buft_(name_ + "_BUF", host_memory, this),
          reads_host_(reads_host_buffers) {}

    const char *          name() const override { return name_.c_str(); }
    std::string           description() const override { return "scheduler test device " + name_; }
    backend_device_type   type() const override { return backend_device_type::accel; }
    void                  memory(size_t & free, size_t & total) const override { free = total = 0; }
    backend_buffer_type * buffer_type() override { return &buft_; }
    std::unique_ptr<backend> init_backend() override;

    bool supports_op(const ggml_tensor * op) const override {
        if (!ops_.count(op->op) || op->type != GGML_TYPE_F32) {
            return false;
        }
        for (const ggml_tensor * s : op->src) {
            if (s && s->type != GGML_TYPE_F32) {
                return false;
            }
        }
        return op->op != GGML_OP_CPY || ggml_are_same_shape(op->src[0], op);
    }
    bool supports_buft(const backend_buffer_type * buft) const override {
        return buft == &buft_ || (reads_host_ && buft->is_host());
    }

  private:
    std::string        name_;
    std::set<ggml_op>  ops_;
    mem_buffer_type    buft_;
    bool               reads_host_;
};

class test_backend : public backend {
  public:
    explicit test_backend(test_device * dev) : device_(dev) {}
    const char *     name() const override { return device_->name(); }
    backend_device * device() const override { return device_; }

    void graph_compute(ggml_cgraph & graph) override {
        for (ggml_tensor * n : graph.nodes) {
            if (!device_->supports_op(n)) {
                throw backend_error(std::string(name()) + ": asked to run unsupported " + ggml_op_name(n->op));
            }
            check_access(n, n);
            for (ggml_tensor * s : n->src) {
                if (s) {
                    check_access(n, s);
                }
            }
            compute_node(n);
            computed.push_back(n);
        }
    }

    std::vector<const ggml_tensor *> computed;

  private:
    void check_access(const ggml_tensor * n, const ggml_tensor * t) const {
        const ggml_tensor * root = root_of(t);
        if (!root->buffer || !device_->supports_buft(root->buffer->buft())) {
            throw backend_error(std::string(name()) + ": node '" + n->name + "' touches '" + t->name +
                                "' in memory this device cannot access");
        }
    }
    test_device * device_;
};

std::unique_ptr<backend> test_device::init_backend() { return std::make_unique<test_backend>(this); }

std::vector<float> values_of(const ggml_tensor * t) {
    std::vector<float> v(size_t(ggml_nelements(t)));
    EXPECT_TRUE(ggml_is_contiguous(t));
    tensor_get(t, v.data(), 0, v.size() * sizeof(float));
    return v;
}

void set_values(ggml_tensor * t, const std::vector<float> & v) { tensor_set(t, v.data(), 0, v.size() * sizeof(float)); }

std::vector<float> ramp(size_t n, float start, float step) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) {
        v[i] = start + step * float(i % 17) - 0.25f * float(i % 5);
    }
    return v;
}

std::string plan_text(const backend_sched & sched) {
    char *   text = nullptr;
    size_t   size = 0;
    FILE *   out  = open_memstream(&text, &size);
    sched.print_plan(out);
    std::fclose(out);
    std::string s(text, size);
    std::free(text);
    return s;
}

class Sched : public ::testing::Test {
  protected:
    test_device test_dev{"TEST", {GGML_OP_ADD, GGML_OP_MUL}, true, true};
    test_device ref_dev{"REF", {GGML_OP_ADD, GGML_OP_MUL, GGML_OP_SQR, GGML_OP_SCALE, GGML_OP_SUM_ROWS, GGML_OP_CPY},
                        true, true};
    test_device nohost_dev{"NOHOST", {GGML_OP_ADD, GGML_OP_MUL, GGML_OP_CPY}, false, false};
    std::unique_ptr<backend> test_be   = test_dev.init_backend();
    std::unique_ptr<backend> ref_be    = ref_dev.init_backend();
    std::unique_ptr<backend> nohost_be = nohost_dev.init_backend();

    const std::vector<const ggml_tensor *> & computed_by(const std::unique_ptr<backend> & b) {
        return static_cast<test_backend *>(b.get())->computed;
    }
};

// a = x + y; b = a * y; c = b²; d = c + x; e = d / 2; f = e * e, with x, y of 37 x 3 floats.
struct mixed_graph {
    ggml_context  ctx;
    ggml_tensor * x, *y, *a, *b, *c, *d, *e, *f;
    ggml_cgraph   graph;

    mixed_graph() {
        x = named(ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 37, 3), "x");
        y = named(ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 37, 3), "y");
        a = named(ggml_add(&ctx, x, y), "a");
        b = named(ggml_mul(&ctx, a, y), "b");
        c = named(ggml_sqr(&ctx, b), "c");
        d = named(ggml_add(&ctx, c, x), "d");
        e = named(ggml_scale(&ctx, d, 0.5f), "e");
        f = named(ggml_mul(&ctx, e, e), "f");
        c->flags |= GGML_TENSOR_FLAG_OUTPUT;
        ggml_build_forward_expand(graph, f);
    }
    static ggml_tensor * named(ggml_tensor * t, const char * name) {
        ggml_set_name(t, name);
        return t;
    }
    // Returns {c, f} computed with plain loops.
    static std::pair<std::vector<float>, std::vector<float>> expected(const std::vector<float> & xv,
                                                                      const std::vector<float> & yv) {
        std::vector<float> cv(xv.size()), fv(xv.size());
        for (size_t i = 0; i < xv.size(); ++i) {
            const float av = xv[i] + yv[i];
            const float bv = av * yv[i];
            cv[i]          = bv * bv;
            const float ev = (cv[i] + xv[i]) * 0.5f + 0.0f;
            fv[i]          = ev * ev;
        }
        return {cv, fv};
    }
};

} // namespace

TEST(BackendRegistry, AddFindAndOrder) {
    backend_registry & reg    = backend_registry::get();
    const size_t       before = reg.devices().size();
    auto               first  = std::make_unique<test_device>("REGISTRY_A", std::set<ggml_op>{}, true, true);
    backend_device *   a      = first.get();
    reg.add(std::move(first));
    reg.add(std::make_unique<test_device>("REGISTRY_B", std::set<ggml_op>{}, true, true));
    ASSERT_EQ(reg.devices().size(), before + 2);
    EXPECT_EQ(reg.devices()[before], a);
    EXPECT_EQ(reg.find("REGISTRY_A"), a);
    EXPECT_STREQ(reg.find("REGISTRY_B")->name(), "REGISTRY_B");
    EXPECT_EQ(reg.find("REGISTRY_C"), nullptr);
    EXPECT_THROW(reg.add(std::make_unique<test_device>("REGISTRY_A", std::set<ggml_op>{}, true, true)),
                 std::invalid_argument);
    EXPECT_THROW(reg.add(nullptr), std::invalid_argument);
    EXPECT_EQ(reg.devices().size(), before + 2);
    EXPECT_EQ(&backend_registry::get(), &reg);
}

TEST_F(Sched, HostBackendsSplitWithoutCopies) {
    mixed_graph   g;
    backend_sched sched({test_be.get(), ref_be.get()});
    sched.alloc_graph(g.graph);
    EXPECT_EQ(sched.backend_of(g.a), test_be.get());
    EXPECT_EQ(sched.backend_of(g.b), test_be.get());
    EXPECT_EQ(sched.backend_of(g.c), ref_be.get());
    EXPECT_EQ(sched.backend_of(g.d), test_be.get());
    EXPECT_EQ(sched.backend_of(g.e), ref_be.get());
    EXPECT_EQ(sched.backend_of(g.f), test_be.get());
    EXPECT_EQ(sched.backend_of(g.x), nullptr);  // a leaf is not computed
    EXPECT_EQ(sched.n_splits(), 5);
    EXPECT_EQ(sched.n_copies(), 0);  // host buffers are read in place by both

    const auto xv = ramp(111, -1.0f, 0.125f), yv = ramp(111, 0.5f, -0.0625f);
    set_values(g.x, xv);
    set_values(g.y, yv);
    sched.graph_compute(g.graph);
    const auto [cv, fv] = mixed_graph::expected(xv, yv);
    EXPECT_EQ(values_of(g.c), cv);
    EXPECT_EQ(values_of(g.f), fv);
    EXPECT_EQ(computed_by(test_be), (std::vector<const ggml_tensor *>{g.a, g.b, g.d, g.f}));
    EXPECT_EQ(computed_by(ref_be), (std::vector<const ggml_tensor *>{g.c, g.e}));

    const std::string plan = plan_text(sched);
    EXPECT_NE(plan.find("sched: 6 nodes, 5 splits, 0 copies\n"), std::string::npos) << plan;
    EXPECT_NE(plan.find("split 0 on TEST: nodes 0..1\n"), std::string::npos) << plan;
    EXPECT_NE(plan.find("split 1 on REF: nodes 2..2\n"), std::string::npos) << plan;
    EXPECT_NE(plan.find("nodes per backend: TEST 4 REF 2\n"), std::string::npos) << plan;
}

TEST_F(Sched, DeviceMemoryIsCopiedBothWays) {
    mixed_graph   g;
    backend_sched sched({nohost_be.get(), ref_be.get()});
    sched.alloc_graph(g.graph);
    EXPECT_EQ(sched.backend_of(g.a), nohost_be.get());
    EXPECT_EQ(sched.backend_of(g.c), ref_be.get());
    EXPECT_EQ(sched.backend_of(g.d), nohost_be.get());
    EXPECT_EQ(sched.n_splits(), 5);
    // b, d go to REF and c, e come back: NOHOST memory is private, and NOHOST reads no host buffer.
    EXPECT_EQ(sched.n_copies(), 4);
    EXPECT_EQ(g.x->buffer->buft(), nohost_dev.buffer_type());  // inputs live where they are first read
    EXPECT_EQ(g.c->buffer->buft(), ref_dev.buffer_type());

    const auto xv = ramp(111, 0.75f, -0.125f), yv = ramp(111, -0.5f, 0.25f);
    set_values(g.x, xv);
    set_values(g.y, yv);
    sched.graph_compute(g.graph);
    const auto [cv, fv] = mixed_graph::expected(xv, yv);
    EXPECT_EQ(values_of(g.c), cv);
    EXPECT_EQ(values_of(g.f), fv);
    EXPECT_EQ(g.c->src[0], g.b);  // sources point at the originals again after computing

    const std::string plan = plan_text(sched);
    EXPECT_NE(plan.find("split 1 on REF: nodes 2..2, copies in: b (NOHOST_BUF -> REF_BUF)\n"), std::string::npos)
        << plan;
    EXPECT_NE(plan.find("split 2 on NOHOST: nodes 3..3, copies in: c (REF_BUF -> NOHOST_BUF)\n"), std::string::npos)
        << plan;
}

TEST_F(Sched, ComputesAgainWithNewInputsOnTheSamePlan) {
    mixed_graph   g;
    backend_sched sched({nohost_be.get(), ref_be.get()});
    for (int run = 0; run < 3; ++run) {
        const auto xv = ramp(111, float(run), 0.5f), yv = ramp(111, -float(run), 0.25f);
        if (run == 0) {
            sched.alloc_graph(g.graph);
        }
        void * f_data = g.f->data;
        set_values(g.x, xv);
        set_values(g.y, yv);
        sched.graph_compute(g.graph);  // plans only when the graph has none yet
        EXPECT_EQ(g.f->data, f_data);
        EXPECT_EQ(values_of(g.f), mixed_graph::expected(xv, yv).second) << "run " << run;
    }
    EXPECT_EQ(computed_by(nohost_be).size(), 12u);
}

TEST_F(Sched, PinnedWeightsDecideTheBackend) {
    // w lives in a host buffer that NOHOST cannot read: the ADD that reads it goes to REF even though
    // NOHOST comes first and supports ADD.
    ggml_context  weights;
    ggml_tensor * w   = ggml_new_tensor_1d(&weights, GGML_TYPE_F32, 40);
    auto          wbuf = alloc_ctx_tensors(weights, ref_dev.buffer_type());
    ggml_context  ctx;
    ggml_tensor * x = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 40, 2);
    ggml_tensor * h = ggml_add(&ctx, x, w);
    ggml_tensor * k = ggml_mul(&ctx, h, h);
    ggml_set_name(h, "h");
    ggml_cgraph graph;
    ggml_build_forward_expand(graph, k);

    backend_sched sched({nohost_be.get(), ref_be.get()});
    sched.alloc_graph(graph);
    EXPECT_EQ(sched.backend_of(h), ref_be.get());
    EXPECT_EQ(sched.backend_of(k), nohost_be.get());
    EXPECT_EQ(sched.n_copies(), 1);  // h, into NOHOST memory; w is never copied
    EXPECT_EQ(x->buffer->buft(), ref_dev.buffer_type());

    const auto xv = ramp(80, 1.0f, -0.125f), wv = ramp(40, 0.25f, 0.5f);
    set_values(x, xv);
    set_values(w, wv);
    sched.graph_compute(graph);
    const auto got = values_of(k);
    for (size_t i = 0; i < got.size(); ++i) {
        const float hv = xv[i] + wv[i % 40];
        ASSERT_EQ(got[i], hv * hv) << i;
    }
}

TEST_F(Sched, UnreadableWeightsAreCopiedWhenNoBackendReadsThem) {
    // v lives in NOHOST memory, but only TEST and REF are scheduled: each op still goes to the first
    // backend that supports it, with a copy of v made for its split.
    ggml_context  weights;
    ggml_tensor * v    = ggml_new_tensor_1d(&weights, GGML_TYPE_F32, 24);
    ggml_set_name(v, "v");
    auto          vbuf = alloc_ctx_tensors(weights, nohost_dev.buffer_type());
    ggml_context  ctx;
    ggml_tensor * x = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 24);
    ggml_tensor * s = ggml_sqr(&ctx, v);
    ggml_tensor * m = ggml_mul(&ctx, x, v);
    ggml_tensor * r = ggml_add(&ctx, s, m);
    ggml_cgraph   graph;
    ggml_build_forward_expand(graph, r);

    backend_sched sched({test_be.get(), ref_be.get()});
    sched.alloc_graph(graph);
    EXPECT_EQ(sched.backend_of(s), ref_be.get());
    EXPECT_EQ(sched.backend_of(m), test_be.get());
    EXPECT_EQ(sched.backend_of(r), test_be.get());
    EXPECT_EQ(sched.n_splits(), 2);
    EXPECT_EQ(sched.n_copies(), 2);

    const auto xv = ramp(24, -2.0f, 0.25f), vv = ramp(24, 0.5f, 0.125f);
    set_values(x, xv);
    set_values(v, vv);
    sched.graph_compute(graph);
    const auto got = values_of(r);
    for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i], vv[i] * vv[i] + xv[i] * vv[i]) << i;
    }
    EXPECT_NE(plan_text(sched).find("copies in: v (NOHOST_BUF -> REF_BUF)"), std::string::npos);
}

TEST_F(Sched, WritesGoWhereTheDestinationIs) {
    // A cache in NOHOST memory: only NOHOST may write into it, so the CPY runs there (REF supports
    // CPY and comes first, but cannot access that memory); a is copied over for it.
    ggml_context  caches;
    ggml_tensor * cache = ggml_new_tensor_1d(&caches, GGML_TYPE_F32, 16);
    auto          cbuf  = alloc_ctx_tensors(caches, nohost_dev.buffer_type());
    ggml_context  ctx;
    ggml_tensor * x  = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 16);
    ggml_tensor * a  = ggml_sqr(&ctx, x);
    ggml_tensor * cp = ggml_cpy(&ctx, a, cache);
    ggml_cgraph   graph;
    ggml_build_forward_expand(graph, cp);

    backend_sched sched({ref_be.get(), nohost_be.get()});
    sched.alloc_graph(graph);
    EXPECT_EQ(sched.backend_of(a), ref_be.get());
    EXPECT_EQ(sched.backend_of(cp), nohost_be.get());
    EXPECT_EQ(sched.n_copies(), 1);
    EXPECT_EQ(cp->data, cache->data);

    const auto xv = ramp(16, -1.5f, 0.25f);
    set_values(x, xv);
    sched.graph_compute(graph);
    const auto got = values_of(cache);
    for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i], xv[i] * xv[i]) << i;
    }

    // A result the caller already placed in NOHOST memory: TEST reads x and y but cannot write it.
    ggml_context  results;
    ggml_tensor * o    = ggml_add(&results, x, x);
    auto          obuf = alloc_ctx_tensors(results, nohost_dev.buffer_type());
    ggml_cgraph   g2;
    ggml_build_forward_expand(g2, o);
    backend_sched sched2({test_be.get(), nohost_be.get()});
    sched2.alloc_graph(g2);
    EXPECT_EQ(sched2.backend_of(o), nohost_be.get());
    sched2.graph_compute(g2);
    const auto sums = values_of(o);
    for (size_t i = 0; i < sums.size(); ++i) {
        ASSERT_EQ(sums[i], xv[i] + xv[i]) << i;
    }
}

TEST_F(Sched, ViewsJoinTheRunTheySitIn) {
    for (bool device_memory : {false, true}) {
        backend * first = device_memory ? nohost_be.get() : test_be.get();
        ggml_context  ctx;
        ggml_tensor * x  = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 12, 4);
        ggml_tensor * y  = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 12, 4);
        ggml_tensor * a  = ggml_add(&ctx, x, y);
        ggml_tensor * r  = ggml_reshape_2d(&ctx, a, 8, 6);
        ggml_tensor * q  = ggml_mul(&ctx, r, r);
        ggml_tensor * t  = ggml_transpose(&ctx, q);  // [6, 8], read with strides
        ggml_tensor * s  = ggml_sum_rows(&ctx, t);   // [1, 8]: column sums of q
        ggml_tensor * v  = ggml_view_2d(&ctx, q, 1, 8, q->nb[0], 2 * sizeof(float));  // q[2 + i]
        ggml_tensor * s1 = ggml_reshape_2d(&ctx, s, 1, 8);
        ggml_tensor * m  = ggml_mul(&ctx, v, s1);
        ggml_set_name(t, "t");
        ggml_set_name(s1, "s1");
        ggml_cgraph graph;
        ggml_build_forward_expand(graph, m);
        ASSERT_EQ(graph.nodes.size(), 8u);

        backend_sched sched({first, ref_be.get()});
        sched.alloc_graph(graph);
        // Order: a r q v t | s s1 | m
        EXPECT_EQ(sched.backend_of(r), first);
        EXPECT_EQ(sched.backend_of(v), first);
        EXPECT_EQ(sched.backend_of(t), first);
        EXPECT_EQ(sched.backend_of(s), ref_be.get());
        EXPECT_EQ(sched.backend_of(s1), ref_be.get());
        EXPECT_EQ(sched.backend_of(m), first);
        EXPECT_EQ(sched.n_splits(), 3);
        // With private memory: the transposed view goes to REF, s1 comes back.
        EXPECT_EQ(sched.n_copies(), device_memory ? 2 : 0);
        EXPECT_EQ(r->data, a->data);
        EXPECT_EQ(v->data, static_cast<uint8_t *>(q->data) + 8);

        const auto xv = ramp(48, 0.5f, 0.25f), yv = ramp(48, -1.0f, 0.125f);
        set_values(x, xv);
        set_values(y, yv);
        sched.graph_compute(graph);
        std::vector<float> qv(48), want(8);
        for (size_t i = 0; i < 48; ++i) {
            qv[i] = (xv[i] + yv[i]) * (xv[i] + yv[i]);
        }
        for (size_t col = 0; col < 8; ++col) {
            float sum = 0.0f;
            for (size_t row = 0; row < 6; ++row) {
                sum += qv[row * 8 + col];
            }
            want[col] = qv[2 + col] * sum;
        }
        std::vector<float> got(8);
        tensor_get(m, got.data(), 0, sizeof(float) * 8);
        EXPECT_EQ(got, want) << (device_memory ? "NOHOST" : "TEST");
    }
}

TEST_F(Sched, RejectsImpossiblePlans) {
    ggml_context  ctx;
    ggml_tensor * x = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 8);
    ggml_cgraph   graph;
    ggml_build_forward_expand(graph, ggml_sqr(&ctx, x));
    backend_sched only_test({test_be.get()});
    EXPECT_THROW(only_test.alloc_graph(graph), backend_error);  // nobody computes SQR

    ggml_context  host({1024, false});  // memory outside any backend buffer
    ggml_tensor * h = ggml_new_tensor_1d(&host, GGML_TYPE_F32, 8);
    ggml_cgraph   g2;
    ggml_build_forward_expand(g2, ggml_add(&ctx, h, h));
    backend_sched sched({test_be.get(), ref_be.get()});
    EXPECT_THROW(sched.alloc_graph(g2), backend_error);

    EXPECT_THROW(backend_sched(std::vector<backend *>{}), std::invalid_argument);
    EXPECT_THROW(backend_sched({nohost_be.get()}, {ref_dev.buffer_type()}), std::invalid_argument);
    EXPECT_THROW(backend_sched({test_be.get(), ref_be.get()}, {test_dev.buffer_type()}), std::invalid_argument);
}

TEST_F(Sched, BackendsSharingABufferTypeShareMemory) {
    mixed_graph   g;
    backend_sched sched({test_be.get(), ref_be.get()}, {ref_dev.buffer_type(), ref_dev.buffer_type()});
    sched.alloc_graph(g.graph);
    EXPECT_EQ(g.a->buffer, g.c->buffer);  // TEST's and REF's intermediates in one buffer
    const auto xv = ramp(111, 0.25f, 0.5f), yv = ramp(111, 1.0f, -0.25f);
    set_values(g.x, xv);
    set_values(g.y, yv);
    sched.graph_compute(g.graph);
    EXPECT_EQ(values_of(g.f), mixed_graph::expected(xv, yv).second);
}

TEST_F(Sched, CpuBackendAsTheFallback) {
    // TEST (or NOHOST) takes the element-wise ops, the CPU backend RMS_NORM, MUL_MAT and SILU.
    std::unique_ptr<backend_device> cpu_dev = make_cpu_device();
    std::unique_ptr<backend>        cpu     = cpu_dev->init_backend();
    constexpr int64_t K = 40, N = 24, T = 5;
    ggml_context      weights;
    ggml_tensor *     gamma = ggml_new_tensor_1d(&weights, GGML_TYPE_F32, K);
    ggml_tensor *     w     = ggml_new_tensor_2d(&weights, GGML_TYPE_F32, K, N);
    auto              wbuf  = alloc_ctx_tensors(weights, cpu_dev->buffer_type());
    const auto        gv = ramp(K, 0.5f, 0.0625f), wv = ramp(K * N, -0.5f, 0.0625f);
    set_values(gamma, gv);
    set_values(w, wv);

    for (bool device_memory : {false, true}) {
        backend *     first = device_memory ? nohost_be.get() : test_be.get();
        ggml_context  ctx;
        ggml_tensor * x = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, K, T);
        ggml_tensor * y = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, K, T);
        ggml_tensor * a = ggml_add(&ctx, x, y);
        ggml_tensor * n = ggml_rms_norm(&ctx, a, 1e-6f);
        ggml_tensor * g = ggml_mul(&ctx, n, gamma);
        ggml_tensor * h = ggml_mul_mat(&ctx, w, g);  // [N, T]
        ggml_tensor * s = ggml_unary(&ctx, h, GGML_UNARY_OP_SILU);
        ggml_tensor * o = ggml_add(&ctx, s, h);
        ggml_cgraph   graph;
        ggml_build_forward_expand(graph, o);

        backend_sched sched({first, cpu.get()});
        sched.alloc_graph(graph);
        EXPECT_EQ(sched.backend_of(a), first);
        EXPECT_EQ(sched.backend_of(n), cpu.get());
        // gamma lives in a host buffer: TEST reads it in place; NOHOST cannot, so the CPU takes g.
        EXPECT_EQ(sched.backend_of(g), device_memory ? cpu.get() : first);
        EXPECT_EQ(sched.backend_of(h), cpu.get());
        EXPECT_EQ(sched.backend_of(o), first);
        EXPECT_EQ(sched.n_splits(), device_memory ? 3 : 5);
        // NOHOST: a to the CPU; s and h back.
        EXPECT_EQ(sched.n_copies(), device_memory ? 3 : 0);

        const auto xv = ramp(K * T, -1.0f, 0.125f), yv = ramp(K * T, 0.25f, 0.0625f);
        set_values(x, xv);
        set_values(y, yv);
        sched.graph_compute(graph);
        const auto got = values_of(o);
        for (int64_t t = 0; t < T; ++t) {
            double sum_sq = 0;
            for (int64_t k = 0; k < K; ++k) {
                const double av = double(xv[t * K + k] + yv[t * K + k]);
                sum_sq += av * av;
            }
            const double inv_rms = 1.0 / std::sqrt(sum_sq / K + 1e-6);
            for (int64_t i = 0; i < N; ++i) {
                double hv = 0;
                for (int64_t k = 0; k < K; ++k) {
                    hv += double(wv[i * K + k]) * double(xv[t * K + k] + yv[t * K + k]) * inv_rms * gv[k];
                }
                const double want = hv / (1.0 + std::exp(-hv)) + hv;
                EXPECT_NEAR(got[t * N + i], want, 1e-5 * (1.0 + std::fabs(want))) << "t " << t << " i " << i;
            }
        }
    }
}
