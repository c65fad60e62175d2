// The benchmark cases of `hexnpu bench-ops`: the matmuls (op-cases-matmul.cpp), then the rest of a
// transformer layer at model sizes — llama-7B-like rows (4096 wide, 32 heads of 128, 8 KV heads)
// for a 512-token prompt, and Gemma 3 270M's attention (4 heads of 256, one KV head) for decode
// against 4096 cached positions.
#include "op-case.h"

#include <cmath>

namespace hexnpu::optest {
namespace {

constexpr tolerance kAny{1.0, 1.0};  // benchmarks time, test-ops checks

void add(std::vector<op_case> & cases, std::string params, std::function<ggml_tensor *(case_graph &)> build) {
    cases.push_back({std::move(params), kAny, std::move(build)});
}

void add_flash_attn(std::vector<op_case> & cases, int64_t d, int64_t n_q, int64_t n_kv, int64_t n_head,
                    int64_t n_head_kv, ggml_type kv_type = GGML_TYPE_F16) {
    add(cases, "d=" + std::to_string(d) + ",n_q=" + std::to_string(n_q) + ",n_kv=" + std::to_string(n_kv) +
                   ",n_head=" + std::to_string(n_head) + ",n_head_kv=" + std::to_string(n_head_kv) +
                   ",type_kv=" + type_str(kv_type),
        [=](case_graph & g) {
            ggml_tensor * q    = g.input(GGML_TYPE_F32, {d, n_q, n_head, 1});
            ggml_tensor * k    = g.input(kv_type, {d, n_kv, n_head_kv, 1});
            ggml_tensor * v    = g.input(kv_type, {d, n_kv, n_head_kv, 1});
            ggml_tensor * mask = g.input(GGML_TYPE_F16, {n_kv, n_q, 1, 1}, mask_fill());
            return ggml_flash_attn_ext(g.ctx(), q, k, v, mask, 1.0f / std::sqrt(float(d)), 0.0f, 0.0f);
        });
}

} // namespace

std::vector<op_case> op_perf_catalog(bool large) {
    std::vector<op_case> cases;
    add_matmul_perf_cases(cases, large);
    add(cases, "ne=[4096,512,1,1]", [](case_graph & g) {
        return ggml_rms_norm(g.ctx(), g.input(GGML_TYPE_F32, {4096, 512, 1, 1}), 1e-6f);
    });
    add(cases, "ne=[4096,512,1,1],weighted", [](case_graph & g) {  // fused on HTP0 (RMS_NORM_MUL)
        return ggml_mul(g.ctx(), ggml_rms_norm(g.ctx(), g.input(GGML_TYPE_F32, {4096, 512, 1, 1}), 1e-6f),
                        g.input(GGML_TYPE_F32, {4096, 1, 1, 1}));
    });
    add(cases, "ne=[128,32,512,1],n_dims=128,mode=neox", [](case_graph & g) {
        ggml_tensor * x   = g.input(GGML_TYPE_F32, {128, 32, 512, 1});
        ggml_tensor * pos = g.input(GGML_TYPE_I32, {512, 1, 1, 1}, indices(4096));
        return ggml_rope_ext(g.ctx(), x, pos, nullptr, 128, 2, 4096, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
    });
    add(cases, "ne=[512,512,32,1],mask=f32", [](case_graph & g) {
        ggml_tensor * x    = g.input(GGML_TYPE_F32, {512, 512, 32, 1});
        ggml_tensor * mask = g.input(GGML_TYPE_F32, {512, 512, 1, 1}, mask_fill());
        return ggml_soft_max_ext(g.ctx(), x, mask, 0.088f, 0.0f);
    });
    add_flash_attn(cases, 128, 1, 4096, 32, 8);   // llama decode
    add_flash_attn(cases, 128, 1, 4096, 32, 8, GGML_TYPE_Q8_0);  // ... with llama.cpp's -ctk/-ctv q8_0
    add_flash_attn(cases, 128, 1, 4096, 32, 8, GGML_TYPE_Q4_0);
    add_flash_attn(cases, 256, 1, 4096, 4, 1);    // Gemma 3 decode
    add_flash_attn(cases, 128, 512, 512, 8, 8);   // prefill
    add_flash_attn(cases, 128, 512, 512, 8, 8, GGML_TYPE_Q8_0);  // ... over a q8_0 cache
    add(cases, "type=f32,ne=[4096,512,1,1],n_ids=256", [](case_graph & g) {
        ggml_tensor * src = g.input(GGML_TYPE_F32, {4096, 512, 1, 1});
        return ggml_get_rows(g.ctx(), src, g.input(GGML_TYPE_I32, {256, 1, 1, 1}, indices(512)));
    });
    add(cases, "type=q8_0,ne=[640,65536,1,1],n_ids=512", [](case_graph & g) {  // a prompt's token embeddings
        ggml_tensor * table = g.input(GGML_TYPE_Q8_0, {640, 65536, 1, 1});
        return ggml_get_rows(g.ctx(), table, g.input(GGML_TYPE_I32, {512, 1, 1, 1}, indices(65536)));
    });
    add(cases, "type=q6_K,ne=[2048,32768,1,1],n_ids=512", [](case_graph & g) {  // a K-quant token embedding
        ggml_tensor * table = g.input(GGML_TYPE_Q6_K, {2048, 32768, 1, 1});
        return ggml_get_rows(g.ctx(), table, g.input(GGML_TYPE_I32, {512, 1, 1, 1}, indices(32768)));
    });
    add(cases, "type=f16,ne=[1024,4096,1,1],n_rows=512", [](case_graph & g) {  // a KV-cache write
        ggml_tensor * cache = g.input(GGML_TYPE_F16, {1024, 4096, 1, 1});
        ggml_tensor * src   = g.input(GGML_TYPE_F32, {1024, 512, 1, 1});
        return ggml_set_rows(g.ctx(), cache, src, g.input(GGML_TYPE_I64, {512, 1, 1, 1}, distinct_indices(4096)));
    });
    for (const ggml_type type : {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1}) {
        add(cases, std::string("type=") + ggml_type_name(type) + ",ne=[1024,4096,1,1],n_rows=512",
            [type](case_graph & g) {  // a quantized KV-cache write
                ggml_tensor * cache = g.input(type, {1024, 4096, 1, 1});
                ggml_tensor * src   = g.input(GGML_TYPE_F32, {1024, 512, 1, 1});
                return ggml_set_rows(g.ctx(), cache, src,
                                     g.input(GGML_TYPE_I64, {512, 1, 1, 1}, distinct_indices(4096)));
            });
    }
    add(cases, "ne=[128,512,32,1],permute=[0,2,1,3]", [](case_graph & g) {  // heads merged after attention
        return ggml_cont(g.ctx(), g.permuted_input(GGML_TYPE_F32, {128, 512, 32, 1}, {0, 2, 1, 3}));
    });
    add(cases, "ne=[11008,64,1,1],split", [](case_graph & g) {
        return ggml_glu(g.ctx(), g.input(GGML_TYPE_F32, {11008, 64, 1, 1}), g.input(GGML_TYPE_F32, {11008, 64, 1, 1}),
                        GGML_GLU_OP_SWIGLU, false);
    });
    add(cases, "ne=[262144,1,1,1],k=40", [](case_graph & g) {  // top-k sampling over Gemma 3's vocabulary
        return ggml_top_k(g.ctx(), g.input(GGML_TYPE_F32, {262144, 1, 1, 1}, uniform(-30.0, 30.0)), 40);
    });
    add(cases, "ne=[4096,64,1,1]", [](case_graph & g) {
        return ggml_argsort(g.ctx(), g.input(GGML_TYPE_F32, {4096, 64, 1, 1}), GGML_SORT_ORDER_DESC);
    });
    // A vision encoder's patch embedding (SigLIP in Gemma 3: 14x14 patches of an 896x896 RGB image,
    // F16 rows for its F16 kernel) and a 3x3 convolution layer's input.
    add(cases, "image=[896,896,3,1],kernel=[14,14,3,1152],s=14,out=f16", [](case_graph & g) {
        return ggml_im2col(g.ctx(), g.input(GGML_TYPE_F16, {14, 14, 3, 1152}), g.input(GGML_TYPE_F32, {896, 896, 3, 1}), 14,
                           14, 0, 0, 1, 1, true, GGML_TYPE_F16);
    });
    add(cases, "image=[64,64,64,1],kernel=[3,3,64,64],s=1,p=1,out=f32", [](case_graph & g) {
        return ggml_im2col(g.ctx(), g.input(GGML_TYPE_F16, {3, 3, 64, 64}), g.input(GGML_TYPE_F32, {64, 64, 64, 1}), 1, 1,
                           1, 1, 1, 1, true, GGML_TYPE_F32);
    });
    // A mixture of experts' up projection (Qwen3-30B-A3B: 128 experts of 2048 -> 768, 8 per token),
    // Q4_0, at decode, for a 64-token batch (4 rows per expert on average: some on HVX, some on
    // HMX) and for a 512-token prompt.
    for (const int64_t n_tokens : {int64_t(1), int64_t(64), int64_t(512)}) {
        add(cases, "type=q4_0,k=2048,m=768,n_experts=128,n_used=8,n_tokens=" + std::to_string(n_tokens),
            [=](case_graph & g) {
                ggml_tensor * as  = g.input(GGML_TYPE_Q4_0, {2048, 768, 128, 1});
                ggml_tensor * b   = g.input(GGML_TYPE_F32, {2048, 8, n_tokens, 1});
                ggml_tensor * ids = g.input(GGML_TYPE_I32, {8, n_tokens, 1, 1}, distinct_indices(128));
                return ggml_mul_mat_id(g.ctx(), as, b, ids);
            });
    }
    // Linear attention at Qwen3.5-2B's shapes (16 heads of 128 for q, k and v; the convolution over
    // 2 x 2048 + 2048 channels, 4 taps), decode and a 512-token prompt, and the chunked delta net's
    // per-chunk solve (64-token chunks, 8 chunks x 16 heads). q and k small enough that the state
    // stays bounded, the decay mild.
    for (const int64_t T : {int64_t(1), int64_t(512)}) {
        add(cases, "hs=128,h=16,t=" + std::to_string(T) + ",seqs=1", [=](case_graph & g) {
            const fill_spec qk = uniform(-0.09, 0.09);
            return ggml_gated_delta_net(g.ctx(), g.input(GGML_TYPE_F32, {128, 16, T, 1}, qk),
                                        g.input(GGML_TYPE_F32, {128, 16, T, 1}, qk), g.input(GGML_TYPE_F32, {128, 16, T, 1}),
                                        g.input(GGML_TYPE_F32, {1, 16, T, 1}, uniform(-2.0, -0.01)),
                                        g.input(GGML_TYPE_F32, {1, 16, T, 1}, uniform(0.0, 1.0)),
                                        g.input(GGML_TYPE_F32, {128, 128, 16, 1}), 1);
        });
        add(cases, "d_conv=4,d_inner=6144,n_t=" + std::to_string(T) + ",n_s=1", [=](case_graph & g) {
            return ggml_ssm_conv(g.ctx(), g.input(GGML_TYPE_F32, {3 + T, 6144, 1, 1}), g.input(GGML_TYPE_F32, {4, 6144, 1, 1}));
        });
    }
    add(cases, "ne_a=[64,64,8,16],ne_b=[64,64,8,16],a=unit+tril", [](case_graph & g) {
        return ggml_solve_tri(g.ctx(), g.input(GGML_TYPE_F32, {64, 64, 8, 16}, unit_lower_triangular(-0.1, 0.1)),
                              g.input(GGML_TYPE_F32, {64, 64, 8, 16}), true, true, false);
    });
    return cases;
}

} // namespace hexnpu::optest
