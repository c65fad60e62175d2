// CPU backend plumbing: device, buffer type and buffers, the thread pool, exact supports_op
// answers, error reporting, and bit-identical results for any thread count.
#include "test-cpu-util.h"

#include "core/parallel.h"
#include "cpu/thread-pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace cpu_test;

TEST(CpuDevice, DescribesTheHost) {
    std::unique_ptr<backend_device> dev = make_cpu_device();
    EXPECT_STREQ(dev->name(), "CPU");
    EXPECT_EQ(dev->type(), backend_device_type::cpu);
    EXPECT_FALSE(dev->description().empty());
    size_t free = 0, total = 0;
    dev->memory(free, total);
    EXPECT_GT(total, size_t(0));
    EXPECT_LE(free, total);

    std::unique_ptr<backend> be = dev->init_backend();
    EXPECT_STREQ(be->name(), "CPU");
    EXPECT_EQ(be->device(), dev.get());
}

TEST(CpuDevice, HostBuffers) {
    std::unique_ptr<backend_device> dev  = make_cpu_device();
    backend_buffer_type *           buft = dev->buffer_type();
    EXPECT_STREQ(buft->name(), "CPU");
    EXPECT_EQ(buft->alignment(), 64u);
    EXPECT_TRUE(buft->is_host());
    EXPECT_EQ(buft->device(), dev.get());
    EXPECT_TRUE(dev->supports_buft(buft));
    EXPECT_TRUE(dev->extra_buffer_types().empty());

    std::unique_ptr<backend_buffer> buf = buft->alloc_buffer(1000);
    EXPECT_EQ(buf->size(), 1000u);
    EXPECT_EQ(buf->buft(), buft);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buf->base()) % 64, 0u);
    buf->clear(0xAB);
    const auto * bytes = static_cast<const uint8_t *>(buf->base());
    for (size_t i = 0; i < 1000; ++i) {
        ASSERT_EQ(bytes[i], 0xAB);
    }

    ggml_context  ctx;
    ggml_tensor * t = ggml_new_tensor_1d(&ctx, GGML_TYPE_F32, 4);
    t->buffer       = buf.get();
    t->data         = static_cast<uint8_t *>(buf->base()) + 64;
    const float in[4] = {1, 2, 3, 4};
    buf->set_tensor(t, in + 1, 4, 8);  // elements 1 and 2
    float out[4] = {};
    buf->get_tensor(t, out, 0, 16);
    EXPECT_EQ(out[1], 2.0f);
    EXPECT_EQ(out[2], 3.0f);
    EXPECT_EQ(std::bit_cast<uint32_t>(out[0]), 0xABABABABu);

    EXPECT_NE(buft->alloc_buffer(0), nullptr);
}

TEST(CpuThreadPool, RunsEveryTaskOnceAndPropagatesErrors) {
    cpu::thread_pool pool(4);
    EXPECT_EQ(pool.size(), 4);
    for (int round = 0; round < 200; ++round) {
        std::atomic<int> mask{0};
        const int        n = 1 + round % 4;
        pool.run(n, [&](int i) { mask.fetch_or(1 << i); });
        ASSERT_EQ(mask.load(), (1 << n) - 1);
    }
    EXPECT_THROW(pool.run(4, [](int i) {
        if (i == 3) {
            throw std::runtime_error("task 3");
        }
    }),
                 std::runtime_error);
    std::atomic<int> count{0};
    pool.run(9, [&](int) { ++count; });  // clamped to the pool size, and still usable after an error
    EXPECT_EQ(count.load(), 4);
}

// Runs body() in a child allowed `limit` processes and threads of its user (RLIMIT_NPROC; root,
// which the limit does not bind, runs it as nobody). Returns its exit code, 128 + the signal that
// ended it (SIGALRM: still running after 10 s, a hang).
template <typename F> int with_process_limit(rlim_t limit, F && body) {
    const pid_t pid = fork();
    if (pid == 0) {
        alarm(10);
        const rlimit l{limit, limit};
        if (setrlimit(RLIMIT_NPROC, &l) != 0 || (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))) {
            _exit(126);
        }
        _exit(body());
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(CpuThreadPool, AThreadThatCannotStartIsAnErrorNotAHang) {
    // Issue 29: the started workers, waiting for work, were left behind and the unwinding hung.
    const int code = with_process_limit(2, [] {
        try {
            cpu::thread_pool pool(8);
            return 1;
        } catch (const std::runtime_error & e) {
            std::fprintf(stderr, "%s\n", e.what());
            const std::string what = e.what();
            return what.starts_with("cannot start CPU thread ") && what.find(" of 8: ") != std::string::npos ? 0 : 2;
        }
    });
    EXPECT_EQ(code, 0) << "1: no error, 2: another message, 134: aborted, 142: hung";
}

TEST(ParallelFor, AThreadThatCannotStartIsAnErrorAfterTheStartedChunksFinish) {
    // Issue 29: a joinable std::thread destroyed while unwinding ended the process.
    const int code = with_process_limit(2, [] {
        std::atomic<int> begun{0}, finished{0};
        try {
            parallel_for(8, 8, 1, [&](int64_t, int64_t) {
                ++begun;
                std::this_thread::sleep_for(std::chrono::milliseconds(200));  // still running when the next starts
                ++finished;
            });
            return 1;
        } catch (const std::runtime_error & e) {
            std::fprintf(stderr, "%s (%d chunks begun, %d finished)\n", e.what(), begun.load(), finished.load());
            return std::string(e.what()).starts_with("cannot start thread ") && begun == finished ? 0 : 2;
        }
    });
    EXPECT_EQ(code, 0) << "1: no error, 2: another message or a chunk still running, 134: aborted, 142: hung";
}

TEST(CpuSupportsOp, RejectsExactlyWhatIsNotImplemented) {
    std::unique_ptr<backend_device> dev = make_cpu_device();
    ggml_context                    ctx;
    ggml_tensor *                   f32  = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 256, 4);
    ggml_tensor *                   q4   = ggml_new_tensor_2d(&ctx, GGML_TYPE_Q4_0, 256, 4);
    ggml_tensor *                   q81  = ggml_new_tensor_2d(&ctx, GGML_TYPE_Q8_1, 256, 4);  // no to_float
    ggml_tensor *                   iq2  = ggml_new_tensor_2d(&ctx, GGML_TYPE_IQ2_XXS, 256, 4);
    ggml_tensor *                   i32  = ggml_new_tensor_2d(&ctx, GGML_TYPE_I32, 256, 4);
    ggml_tensor *                   ids  = ggml_new_tensor_1d(&ctx, GGML_TYPE_I32, 2);
    ggml_tensor *                   pos  = ggml_new_tensor_1d(&ctx, GGML_TYPE_I32, 4);

    EXPECT_TRUE(dev->supports_op(ggml_mul_mat(&ctx, q4, f32)));
    EXPECT_FALSE(dev->supports_op(ggml_mul_mat(&ctx, f32, q4)));   // quantized activations
    EXPECT_FALSE(dev->supports_op(ggml_mul_mat(&ctx, q81, f32)));  // no float path for the weights
    EXPECT_TRUE(dev->supports_op(ggml_get_rows(&ctx, q4, ids)));
    EXPECT_FALSE(dev->supports_op(ggml_get_rows(&ctx, q81, ids)));
    EXPECT_TRUE(dev->supports_op(ggml_get_rows(&ctx, i32, ids)));
    EXPECT_TRUE(dev->supports_op(ggml_cast(&ctx, f32, GGML_TYPE_Q4_K)));
    EXPECT_FALSE(dev->supports_op(ggml_cast(&ctx, f32, GGML_TYPE_IQ2_XXS)));  // no from_float
    EXPECT_TRUE(dev->supports_op(ggml_cont(&ctx, iq2)));                       // same type: bytes
    EXPECT_FALSE(dev->supports_op(ggml_cast(&ctx, i32, GGML_TYPE_F32)));
    EXPECT_FALSE(dev->supports_op(ggml_unary(&ctx, i32, GGML_UNARY_OP_NEG)));
    EXPECT_FALSE(dev->supports_op(ggml_add(&ctx, q4, q4)));
    EXPECT_FALSE(dev->supports_op(ggml_concat(&ctx, q4, q4, 1)));
    EXPECT_TRUE(dev->supports_op(ggml_concat(&ctx, i32, i32, 1)));

    ggml_tensor * x    = ggml_new_tensor_3d(&ctx, GGML_TYPE_F32, 8, 2, 4);
    ggml_tensor * rope = ggml_rope_ext(&ctx, x, pos, nullptr, 8, GGML_ROPE_TYPE_NEOX, 0, 1e4f, 1, 0, 1, 0, 0);
    EXPECT_TRUE(dev->supports_op(rope));
    ggml_set_op_param<int32_t>(rope, 2, 8);  // a mode this backend does not implement (MROPE)
    EXPECT_FALSE(dev->supports_op(rope));

    ggml_tensor * q  = ggml_new_tensor_3d(&ctx, GGML_TYPE_F32, 64, 1, 4);
    ggml_tensor * kh = ggml_new_tensor_3d(&ctx, GGML_TYPE_F16, 64, 8, 2);
    ggml_tensor * kq = ggml_new_tensor_3d(&ctx, GGML_TYPE_Q8_0, 64, 8, 2);
    EXPECT_TRUE(dev->supports_op(ggml_flash_attn_ext(&ctx, q, kh, kh, nullptr, 1, 0, 0)));
    EXPECT_TRUE(dev->supports_op(ggml_flash_attn_ext(&ctx, q, kq, kq, nullptr, 1, 0, 0)));  // a quantized cache
    ggml_tensor * ki = ggml_new_tensor_3d(&ctx, GGML_TYPE_I32, 64, 8, 2);
    EXPECT_FALSE(dev->supports_op(ggml_flash_attn_ext(&ctx, q, ki, ki, nullptr, 1, 0, 0)));  // no to_float

    for (ggml_tensor * view : {ggml_view_1d(&ctx, f32, 8, 0), ggml_reshape_1d(&ctx, f32, 1024),
                               ggml_transpose(&ctx, f32), ggml_permute(&ctx, x, 1, 0, 2, 3), f32}) {
        EXPECT_TRUE(dev->supports_op(view)) << ggml_op_name(view->op);
    }
}

TEST(CpuBackend, ReportsUnsupportedNodesAndSkipsViews) {
    fixture       f;
    ggml_tensor * a = ggml_new_tensor_2d(&f.ctx, GGML_TYPE_F32, 4, 2);
    set_values(a, {1, 2, 3, 4, 5, 6, 7, 8});
    ggml_tensor * v = ggml_view_1d(&f.ctx, a, 2, 4 * sizeof(float));  // elements 4, 5
    ggml_tensor * s = ggml_scale(&f.ctx, ggml_reshape_2d(&f.ctx, v, 1, 2), 10.0f);
    f.compute(s);
    EXPECT_EQ(get_values(s), (std::vector<float>{50, 60}));

    ggml_tensor * wide = ggml_new_tensor_1d(&f.ctx, GGML_TYPE_F32, 256);
    ggml_tensor * bad  = ggml_cast(&f.ctx, wide, GGML_TYPE_IQ2_XXS);
    ggml_set_name(bad, "to_iq2");
    try {
        f.compute(ggml_cast(&f.ctx, wide, GGML_TYPE_IQ2_XXS));
        FAIL() << "no error";
    } catch (const backend_error & e) {
        EXPECT_NE(std::string(e.what()).find("CPY"), std::string::npos) << e.what();
    }
    try {
        f.compute(bad);
        FAIL() << "no error";
    } catch (const backend_error & e) {
        EXPECT_NE(std::string(e.what()).find("to_iq2"), std::string::npos) << e.what();
    }
}

TEST(CpuBackend, ResultsDoNotDependOnTheThreadCount) {
    fixture       f(1);
    const int64_t d = 64, n_head = 4, n_head_kv = 2, n_tok = 7, n_embd = d * n_head, n_vocab = 50, n_ctx = 16;
    ggml_tensor * tok_embd = new_filled(f.ctx, GGML_TYPE_Q4_K, {n_embd, n_vocab}, 1);
    ggml_tensor * wq       = new_filled(f.ctx, GGML_TYPE_Q4_0, {n_embd, n_embd}, 2);
    ggml_tensor * wk       = new_filled(f.ctx, GGML_TYPE_Q8_0, {n_embd, d * n_head_kv}, 3);
    ggml_tensor * w_up     = new_filled(f.ctx, GGML_TYPE_F16, {n_embd, 2 * 96}, 4);
    ggml_tensor * norm_w   = new_filled(f.ctx, GGML_TYPE_F32, {n_embd}, 5);
    ggml_tensor * k_cache  = ggml_new_tensor_3d(&f.ctx, GGML_TYPE_F16, d, n_ctx, n_head_kv);
    set_values(k_cache, std::vector<float>(size_t(d * n_ctx * n_head_kv), 0.0f));
    ggml_tensor * tokens = ggml_new_tensor_1d(&f.ctx, GGML_TYPE_I32, n_tok);
    set_i32(tokens, {3, 14, 15, 9, 26, 5, 35});
    ggml_tensor * pos = ggml_new_tensor_1d(&f.ctx, GGML_TYPE_I32, n_tok);
    set_i32(pos, {0, 1, 2, 3, 4, 5, 6});
    ggml_tensor * mask = ggml_new_tensor_2d(&f.ctx, GGML_TYPE_F16, n_ctx, n_tok);
    std::vector<float> mv(size_t(n_ctx * n_tok));
    for (int64_t i = 0; i < n_tok; ++i) {
        for (int64_t j = 0; j < n_ctx; ++j) {
            mv[size_t(i * n_ctx + j)] = j <= i ? 0.0f : -INFINITY;
        }
    }
    set_values(mask, mv);

    ggml_tensor * x   = ggml_get_rows(&f.ctx, tok_embd, tokens);
    ggml_tensor * h   = ggml_mul(&f.ctx, ggml_rms_norm(&f.ctx, x, 1e-5f), norm_w);
    ggml_tensor * q   = ggml_rope_ext(&f.ctx, ggml_reshape_3d(&f.ctx, ggml_mul_mat(&f.ctx, wq, h), d, n_head, n_tok),
                                      pos, nullptr, int(d), GGML_ROPE_TYPE_NEOX, 4096, 1e4f, 1, 0, 1, 32, 1);
    ggml_tensor * k   = ggml_reshape_3d(&f.ctx, ggml_mul_mat(&f.ctx, wk, h), d, n_head_kv, n_tok);
    ggml_tensor * kv  = ggml_cpy(&f.ctx, ggml_permute(&f.ctx, k, 0, 2, 1, 3),
                                 ggml_view_3d(&f.ctx, k_cache, d, n_tok, n_head_kv, k_cache->nb[1], k_cache->nb[2], 0));
    ggml_tensor * qp  = ggml_permute(&f.ctx, q, 0, 2, 1, 3);
    ggml_tensor * fa  = ggml_flash_attn_ext(&f.ctx, qp, k_cache, k_cache, mask, 0.125f, 0.0f, 0.0f);
    ggml_tensor * kq  = ggml_soft_max_ext(&f.ctx, ggml_mul_mat(&f.ctx, k_cache, qp), mask, 0.125f, 0.0f);
    ggml_tensor * ffn = ggml_glu(&f.ctx, ggml_mul_mat(&f.ctx, w_up, h), nullptr, GGML_GLU_OP_SWIGLU, false);
    ggml_tensor * top = ggml_top_k(&f.ctx, ffn, 5);
    ggml_tensor * sum = ggml_cumsum(&f.ctx, ggml_reshape_2d(&f.ctx, fa, n_embd, n_tok));

    ggml_cgraph graph;
    ggml_build_forward_expand(graph, kv);  // the cache write comes before its readers
    for (ggml_tensor * t : {fa, kq, top, sum}) {
        ggml_build_forward_expand(graph, t);
    }
    const auto snapshot = [&] {
        std::vector<std::vector<uint8_t>> out;
        for (const ggml_tensor * n : graph.nodes) {
            const auto * p = static_cast<const uint8_t *>(n->data);
            out.emplace_back(p, p + ggml_nbytes(n));
        }
        return out;
    };
    f.backend.graph_compute(graph);
    const auto single = snapshot();
    size_t     nonzero = 0;
    for (float v : get_values(fa)) {
        ASSERT_TRUE(std::isfinite(v));
        nonzero += v != 0.0f;
    }
    EXPECT_GT(nonzero, size_t(n_embd * n_tok / 2));
    for (int threads : {2, 3, 8}) {
        f.backend.set_n_threads(threads);
        EXPECT_EQ(f.backend.n_threads(), threads);
        f.backend.graph_compute(graph);
        const auto multi = snapshot();
        for (size_t i = 0; i < single.size(); ++i) {
            EXPECT_TRUE(single[i] == multi[i]) << threads << " threads, node " << i << " "
                                               << ggml_op_desc(graph.nodes[i]);
        }
    }
}
