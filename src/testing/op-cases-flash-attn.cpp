// FLASH_ATTN_EXT: F16, F32 and quantized (llama.cpp's -ctk/-ctv cache types) K/V, head sizes that are and are not multiples of 32, K and V of
// different head sizes, GQA/MQA, masks (broadcast, per head, padded, with fully masked queries),
// ALiBi, logit softcap, sinks, 4-D batches, K/V as permuted views of a [D, heads, kv] cache, and as
// views of a longer cache as llama.cpp's test-backend-ops makes them (head sizes 64 to 576, GQA).
#include "op-case.h"

#include <array>
#include <cmath>

namespace hexnpu::optest {
namespace {

// Against float64: fp32 dot products of length D and fp32 accumulation over the keys (online
// softmax), a few ulp per term: kSumTol's 1e-10. Another backend may hold scores or probabilities
// in fp16 (HMX, fp16 V accumulation): test-backend-ops' 5e-4.
constexpr tolerance kFlashAttnTol{kSumTol.vs_f64, 5e-4};

struct fa_variant {
    int64_t   d, dv, n_q, n_kv, n_head, n_head_kv, ne3;
    ggml_type kv_type;
    int       mask;  // 0: none, 1: [n_kv, n_q] for all heads, 2: one per head, 3: rows padded past n_q,
                     // 4: every 3rd query fully masked, 5: causal (a prompt after n_kv - n_q cached keys)
    float     max_bias, softcap;
    bool      sinks, kv_permuted;
    double    q_range = 1.0;  // queries uniform in [-q_range, q_range]: 100 gives logits in the thousands
    bool      kv_view = false;  // K/V the first half of a cache twice as long (in memory dim 1)
    ggml_type v_type  = GGML_TYPE_COUNT;  // V's type where it differs from K's (llama.cpp's -ctv)
};

std::string fa_params(const fa_variant & v) {
    static const char * masks[] = {"none", "shared", "per_head", "padded", "with_empty_rows", "causal"};
    return "d=" + std::to_string(v.d) + ",dv=" + std::to_string(v.dv) + ",n_q=" + std::to_string(v.n_q) +
           ",n_kv=" + std::to_string(v.n_kv) + ",n_head=" + std::to_string(v.n_head) + ",n_head_kv=" +
           std::to_string(v.n_head_kv) + ",ne3=" + std::to_string(v.ne3) + ",type_kv=" + type_str(v.kv_type) +
           ",mask=" + masks[v.mask] + ",max_bias=" + num_str(v.max_bias) + ",softcap=" + num_str(v.softcap) +
           (v.sinks ? ",sinks" : "") + (v.kv_permuted ? ",kv=permuted" : "") +
           (v.q_range != 1.0 ? ",q_range=" + num_str(float(v.q_range)) : "") + (v.kv_view ? ",kv_view" : "") +
           (v.v_type != GGML_TYPE_COUNT ? ",type_v=" + type_str(v.v_type) : "");
}

// K or V of head size d: [d, n_kv, n_head_kv, ne3], laid out [d, heads, kv] and permuted back when
// kv_permuted, and a view of the first half of a tensor twice as long in its second memory
// dimension when kv_view (test-backend-ops' kv_view: strides of the whole cache, not of the view).
ggml_tensor * kv_input(case_graph & g, const fa_variant & v, int64_t d, ggml_type type) {
    const shape              ne{d, v.n_kv, v.n_head_kv, v.ne3};
    const std::array<int, 4> axes = v.kv_permuted ? std::array<int, 4>{0, 2, 1, 3} : std::array<int, 4>{0, 1, 2, 3};
    if (!v.kv_view) {
        return v.kv_permuted ? g.permuted_input(type, ne, axes) : g.input(type, ne);
    }
    shape stored;
    for (int i = 0; i < 4; ++i) {
        stored[size_t(i)] = ne[size_t(axes[size_t(i)])];
    }
    ggml_tensor * cache = g.input(type, {stored[0], 2 * stored[1], stored[2], stored[3]});
    ggml_tensor * t     = ggml_view_4d(g.ctx(), cache, stored[0], stored[1], stored[2], stored[3], cache->nb[1],
                                       cache->nb[2], cache->nb[3], 0);
    return v.kv_permuted ? ggml_permute(g.ctx(), t, axes[0], axes[1], axes[2], axes[3]) : t;
}

ggml_tensor * build_fa(case_graph & g, const fa_variant & v) {
    ggml_tensor * q   = g.input(GGML_TYPE_F32, {v.d, v.n_q, v.n_head, v.ne3}, uniform(-v.q_range, v.q_range));
    ggml_tensor * k   = kv_input(g, v, v.d, v.kv_type);
    ggml_tensor * val = kv_input(g, v, v.dv, v.v_type != GGML_TYPE_COUNT ? v.v_type : v.kv_type);
    ggml_tensor * mask = nullptr;
    if (v.mask) {
        const int64_t rows  = v.mask == 3 ? v.n_q + 5 : v.n_q;
        const int64_t heads = v.mask == 2 ? v.n_head : 1;
        mask = g.input(GGML_TYPE_F16, {v.n_kv, rows, heads, 1},
                       v.mask == 5 ? causal_mask_fill(v.n_kv - v.n_q) : mask_fill(v.mask == 4 ? 3 : 0));
    }
    // Softcap cases use a large scale so that the cap bends the logits noticeably.
    const float   scale = v.softcap != 0.0f ? 1.0f : 1.0f / std::sqrt(float(v.d));
    ggml_tensor * r     = ggml_flash_attn_ext(g.ctx(), q, k, val, mask, scale, v.max_bias, v.softcap);
    if (v.sinks) {
        ggml_flash_attn_ext_add_sinks(r, g.input(GGML_TYPE_F32, {v.n_head, 1, 1, 1}, uniform(-2.0, 2.0)));
    }
    return r;
}

} // namespace

void add_flash_attn_cases(std::vector<op_case> & cases) {
    constexpr ggml_type f16 = GGML_TYPE_F16, f32 = GGML_TYPE_F32, q8_0 = GGML_TYPE_Q8_0;
    const fa_variant variants[] = {
        {64, 64, 1, 32, 4, 4, 1, f16, 1, 0.0f, 0.0f, false, false},    // decode
        {64, 64, 7, 113, 8, 2, 1, f16, 1, 0.0f, 0.0f, false, false},   // GQA 4:1, odd n_kv
        {128, 128, 3, 256, 4, 1, 1, f16, 1, 0.0f, 0.0f, false, false}, // MQA
        {40, 40, 5, 50, 2, 2, 1, f16, 0, 0.0f, 0.0f, false, false},    // head size not a multiple of 32
        {96, 64, 4, 40, 4, 2, 1, f16, 1, 0.0f, 0.0f, false, false},    // V heads smaller than K heads
        {64, 64, 1, 32, 4, 4, 1, f32, 1, 0.0f, 0.0f, false, false},
        {64, 64, 7, 113, 8, 2, 1, f32, 1, 0.0f, 0.0f, false, false},
        {256, 256, 2, 300, 4, 1, 1, f32, 1, 0.0f, 0.0f, true, false},  // F32 K/V at Gemma 3's head size
        {64, 64, 6, 64, 4, 4, 1, f16, 2, 0.0f, 0.0f, false, false},
        {64, 64, 6, 100, 8, 2, 1, f16, 2, 8.0f, 0.0f, true, false},   // GQA heads sharing K/V, each its mask
        {64, 64, 6, 64, 4, 4, 1, f16, 3, 0.0f, 0.0f, false, false},
        {64, 64, 6, 64, 4, 4, 1, f16, 4, 0.0f, 0.0f, false, false},
        {64, 64, 5, 48, 8, 8, 1, f16, 1, 8.0f, 0.0f, false, false},    // ALiBi, 8 heads
        {64, 64, 5, 48, 6, 2, 1, f16, 1, 8.0f, 0.0f, false, false},    // ALiBi, 6 heads
        {64, 64, 5, 48, 4, 4, 1, f16, 1, 0.0f, 30.0f, false, false},   // softcap
        {64, 64, 5, 48, 4, 2, 1, f16, 1, 0.0f, 0.0f, true, false},     // sinks with a mask
        {64, 64, 5, 48, 4, 4, 1, f32, 0, 0.0f, 0.0f, true, false},     // sinks alone
        {64, 64, 3, 24, 4, 2, 2, f16, 1, 0.0f, 0.0f, false, false},    // 4-D
        {64, 64, 2, 40, 4, 2, 3, f16, 2, 0.0f, 0.0f, true, false},     // 3 sequences, a mask per head
        {128, 128, 1, 70, 8, 2, 4, q8_0, 1, 0.0f, 0.0f, false, false}, // 4 sequences' decode, quantized
        {64, 64, 4, 40, 4, 2, 1, f16, 1, 0.0f, 0.0f, false, true},     // K/V viewed from a cache
        {64, 64, 4, 40, 4, 4, 1, f32, 4, 8.0f, 20.0f, true, true},     // everything at once
        {256, 256, 1, 1000, 4, 1, 1, f16, 1, 0.0f, 0.0f, false, false},  // Gemma 3 decode, a long context
        {64, 64, 70, 150, 4, 2, 1, f16, 5, 0.0f, 0.0f, false, false},    // a causal prompt: rows end early
        {64, 64, 40, 40, 4, 4, 1, f16, 5, 0.0f, 0.0f, true, false},      // the same from position 0, sinks
        {256, 256, 12, 77, 4, 1, 1, f16, 4, 0.0f, 0.0f, true, false},    // Gemma 3 prefill, empty rows, sinks
        {128, 128, 3, 200, 4, 2, 1, f16, 4, 0.0f, 0.0f, false, false, 100.0},  // logits in the thousands
        // Prompts (the HMX path from 8 query rows): query blocks of 32 with a partial last one,
        // keys not a multiple of 32, K/V shared by a group's items of one K/V head.
        {128, 128, 100, 300, 8, 2, 1, f16, 5, 0.0f, 0.0f, false, false},     // causal, GQA
        {256, 256, 96, 96, 4, 1, 1, f16, 5, 0.0f, 0.0f, true, false},        // Gemma 3's prompt, sinks
        {64, 64, 33, 70, 4, 4, 1, f16, 4, 0.0f, 0.0f, false, true},          // empty rows, K/V from a cache
        {128, 128, 64, 64, 4, 4, 1, f16, 5, 0.0f, 0.0f, false, false, 100.0},  // large logits on fp16 tiles
        // test-backend-ops' shapes: K/V views of a longer cache, 512 keys, GQA groups of 4 to 16
        // (head sizes 192 and 576/512 are DeepSeek's and its MLA's), decode and prompts, permuted.
        {192, 192, 1, 512, 64, 4, 1, f16, 1, 0.0f, 0.0f, false, false, 1.0, true},
        {192, 192, 3, 512, 32, 4, 1, f16, 1, 0.0f, 0.0f, true, false, 1.0, true},
        {192, 192, 32, 512, 64, 4, 1, f16, 1, 0.0f, 0.0f, false, true, 1.0, true},
        {192, 192, 75, 512, 32, 4, 1, f16, 0, 0.0f, 0.0f, true, false, 1.0, true},
        {192, 128, 32, 512, 16, 4, 1, f16, 1, 0.0f, 0.0f, false, false, 1.0, true},
        {64, 64, 32, 512, 16, 4, 1, f16, 1, 0.0f, 0.0f, false, true, 1.0, true},
        {128, 128, 75, 512, 48, 4, 1, f16, 1, 0.0f, 0.0f, true, false, 1.0, true},
        {256, 256, 32, 512, 16, 4, 1, f16, 1, 0.0f, 0.0f, false, true, 1.0, true},
        {512, 512, 3, 512, 16, 4, 1, f16, 1, 0.0f, 0.0f, true, false, 1.0, true},
        {576, 512, 32, 512, 20, 1, 1, f16, 1, 0.0f, 0.0f, false, false, 1.0, true},
    };
    for (const fa_variant & v : variants) {
        cases.push_back({fa_params(v), kFlashAttnTol, [=](case_graph & g) { return build_fa(g, v); }});
    }
    // Quantized caches (llama.cpp's -ctk/-ctv): decode over a long context at Gemma 3's head size,
    // a causal prompt with GQA (7 query rows: HVX; 40: the HMX unit's), K/V viewed from a longer cache.
    for (const ggml_type t : {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,
                              GGML_TYPE_IQ4_NL, GGML_TYPE_BF16}) {
        const fa_variant quantized[] = {
            {256, 256, 1, 1000, 4, 1, 1, t, 1, 0.0f, 0.0f, false, false},
            {128, 128, 7, 300, 8, 2, 1, t, 5, 0.0f, 0.0f, true, false},
            {128, 128, 40, 300, 8, 2, 1, t, 5, 0.0f, 0.0f, true, false},
            {64, 64, 4, 40, 4, 2, 1, t, 1, 0.0f, 0.0f, false, true, 1.0, true},
        };
        for (const fa_variant & v : quantized) {
            cases.push_back({fa_params(v), kFlashAttnTol, [=](case_graph & g) { return build_fa(g, v); }});
        }
    }
    // K and V of different types (-ctk q8_0 -ctv q4_0, an F16 K with a quantized V, and back).
    const std::pair<ggml_type, ggml_type> mixed[] = {{GGML_TYPE_Q8_0, GGML_TYPE_Q4_0},
                                                     {GGML_TYPE_F16, GGML_TYPE_Q8_0},
                                                     {GGML_TYPE_Q4_0, GGML_TYPE_F16}};
    for (const auto & [kt, vt] : mixed) {
        fa_variant v{128, 128, 3, 200, 8, 2, 1, kt, 1, 0.0f, 0.0f, true, false};
        v.v_type = vt;
        cases.push_back({fa_params(v), kFlashAttnTol, [=](case_graph & g) { return build_fa(g, v); }});
        v.n_head = v.n_head_kv = 2;  // one head an item: F16 read in place beside a staged side
        cases.push_back({fa_params(v), kFlashAttnTol, [=](case_graph & g) { return build_fa(g, v); }});
        v.n_q = 40;  // a prompt: the HMX unit's, one side dequantized ahead of its tiles
        cases.push_back({fa_params(v), kFlashAttnTol, [=](case_graph & g) { return build_fa(g, v); }});
    }
}

} // namespace hexnpu::optest
