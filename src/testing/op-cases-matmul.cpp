// MUL_MAT with every type that has to_float as weights and F32/F16 activations: matrix-vector,
// odd sizes, broadcast of the weights over dims 2/3, permuted operands; MUL_MAT_ID (mixture of
// experts) with every weight type.
#include "op-case.h"

namespace hexnpu::optest {
namespace {

// Every type with to_float: the weight types of MUL_MAT.
constexpr ggml_type kWeightTypes[] = {
    GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q4_0,   GGML_TYPE_Q4_1,  GGML_TYPE_Q5_0,
    GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K,   GGML_TYPE_Q4_K,  GGML_TYPE_Q5_K,
    GGML_TYPE_Q6_K, GGML_TYPE_IQ4_NL, GGML_TYPE_MXFP4, GGML_TYPE_Q1_0, GGML_TYPE_Q2_0,
};

// Against float64 the weights enter dequantized and exact, so only the fp32 dot products round:
// kSumTol's 1e-10 for sums of up to 512 products (a wrong block or scale costs 1e-3 and up).
// Another backend may quantize activations to 8 bits (Q8 rounding noise, NMSE ~1e-5) or multiply
// in fp16 (HMX): test-backend-ops' 5e-4.
constexpr tolerance kMatMulTol{kSumTol.vs_f64, 5e-4};

struct mm_shape {
    int64_t m, n, k;                 // weight rows, activation rows, shared length
    int64_t w2, w3, r2, r3;          // weight matrices in dims 2/3, and how often b repeats them
    bool    permuted;                // both operands as permute(0, 2, 1, 3) views
};

std::string mm_params(ggml_type wt, ggml_type bt, const mm_shape & s) {
    return "type_a=" + type_str(wt) + ",type_b=" + type_str(bt) + ",m=" + std::to_string(s.m) + ",n=" +
           std::to_string(s.n) + ",k=" + std::to_string(s.k) + ",bs=[" + std::to_string(s.w2) + "," +
           std::to_string(s.w3) + "],nr=[" + std::to_string(s.r2) + "," + std::to_string(s.r3) + "]" +
           (s.permuted ? ",permute=[0,2,1,3]" : "");
}

void add_mul_mat(std::vector<op_case> & cases, ggml_type wt, ggml_type bt, const mm_shape & s) {
    cases.push_back({mm_params(wt, bt, s), kMatMulTol, [=](case_graph & g) {
                         const shape a_ne = {s.k, s.m, s.w2, s.w3};
                         const shape b_ne = {s.k, s.n, s.w2 * s.r2, s.w3 * s.r3};
                         if (s.permuted) {
                             return ggml_mul_mat(g.ctx(), g.permuted_input(wt, a_ne, {0, 2, 1, 3}),
                                                 g.permuted_input(bt, b_ne, {0, 2, 1, 3}));
                         }
                         return ggml_mul_mat(g.ctx(), g.input(wt, a_ne), g.input(bt, b_ne));
                     }});
}

} // namespace

void add_matmul_perf_cases(std::vector<op_case> & cases, bool large) {
    for (const ggml_type wt : kWeightTypes) {
        for (const int64_t n : {1, 2, 4, 8}) {
            add_mul_mat(cases, wt, GGML_TYPE_F32, {4096, n, 4096, 1, 1, 1, 1, false});
        }
    }
    // Prompt processing: 128 and 512 activation rows (the HMX path on an NPU that has it).
    for (const ggml_type wt : {GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, GGML_TYPE_Q4_K, GGML_TYPE_Q6_K, GGML_TYPE_F16}) {
        for (const int64_t n : {128, 512}) {
            add_mul_mat(cases, wt, GGML_TYPE_F32, {4096, n, 4096, 1, 1, 1, 1, false});
        }
    }
    if (large) {
        // 65536 x 8192: 288 MiB of Q4_0, 544 MiB of Q8_0, 1 GiB of F16.
        for (const ggml_type wt : kWeightTypes) {
            add_mul_mat(cases, wt, GGML_TYPE_F32, {65536, 1, 8192, 1, 1, 1, 1, false});
        }
    }
}

void add_matmul_cases(std::vector<op_case> & cases) {
    for (const ggml_type wt : kWeightTypes) {
        // k: whole blocks of the weight type; 33/17 rows are not multiples of 32.
        const int64_t k = ggml_blck_size(wt) == 256 ? 256 : 128;
        for (const ggml_type bt : {GGML_TYPE_F32, GGML_TYPE_F16}) {
            add_mul_mat(cases, wt, bt, {16, 1, k, 1, 1, 1, 1, false});        // matrix x vector (decode)
            add_mul_mat(cases, wt, bt, {33, 17, 2 * k, 1, 1, 1, 1, false});   // odd sizes (prompt)
            add_mul_mat(cases, wt, bt, {10, 5, k, 2, 3, 2, 1, false});        // weights shared over dims 2/3
        }
        // The activation-row counts a kernel may treat specially (1 and 2 at a time, a group of 32 and
        // one more), with odd N.
        for (const int64_t n : {2, 3, 4, 8, 16, 33}) {
            add_mul_mat(cases, wt, GGML_TYPE_F32, {45, n, k, 1, 1, 1, 1, false});
        }
        // Prompt-sized activations (the HMX kernel's: more than 4 rows, row tiles of 32, chunks of
        // 512), long rows (K runs of more than 32 tiles) and several pipeline steps of strips.
        for (const int64_t n : {5, 32, 64, 128, 512}) {
            add_mul_mat(cases, wt, GGML_TYPE_F32, {45, n, k, 1, 1, 1, 1, false});
        }
        add_mul_mat(cases, wt, GGML_TYPE_F16, {200, 40, 2048, 1, 1, 1, 1, false});
    }
    // Element-type weights: odd k, permuted operands (attention's K·Q), 4-D broadcast both ways,
    // a single weight row.
    for (const ggml_type wt : {GGML_TYPE_F32, GGML_TYPE_F16}) {
        add_mul_mat(cases, wt, GGML_TYPE_F32, {19, 7, 33, 1, 1, 1, 1, false});
        add_mul_mat(cases, wt, GGML_TYPE_F32, {19, 7, 64, 4, 1, 1, 1, true});
        add_mul_mat(cases, wt, GGML_TYPE_F32, {9, 3, 40, 2, 2, 2, 3, false});
        add_mul_mat(cases, wt, GGML_TYPE_F32, {1, 9, 32, 1, 1, 1, 1, false});
    }
    add_mul_mat(cases, GGML_TYPE_Q4_0, GGML_TYPE_F32, {7, 3, 64, 3, 1, 1, 1, true});

    // MUL_MAT_ID: as [k, m, n_experts], ids [n_used, n_tokens] (distinct experts per token),
    // b [k, n_used or 1, n_tokens]: its own activation row per slot, or one row shared.
    struct moe_shape {
        int64_t m, k, n_experts, n_used, n_tokens;
        bool    shared_b;
        bool    hot_expert = false;  // expert 0 routed every token
    };
    auto add_moe = [&](ggml_type wt, ggml_type bt, const moe_shape & s) {
        cases.push_back({"type_a=" + type_str(wt) + ",type_b=" + type_str(bt) + ",m=" + std::to_string(s.m) +
                             ",k=" + std::to_string(s.k) + ",n_experts=" + std::to_string(s.n_experts) + ",n_used=" +
                             std::to_string(s.n_used) + ",n_tokens=" + std::to_string(s.n_tokens) +
                             (s.shared_b ? ",b=shared" : "") + (s.hot_expert ? ",hot_expert" : ""),
                         kMatMulTol, [=](case_graph & g) {
                             ggml_tensor * as  = g.input(wt, {s.k, s.m, s.n_experts, 1});
                             ggml_tensor * b   = g.input(bt, {s.k, s.shared_b ? 1 : s.n_used, s.n_tokens, 1});
                             ggml_tensor * ids = g.input(GGML_TYPE_I32, {s.n_used, s.n_tokens, 1, 1},
                                                         s.hot_expert ? distinct_indices_hot_first(s.n_experts)
                                                                      : distinct_indices(s.n_experts));
                             return ggml_mul_mat_id(g.ctx(), as, b, ids);
                         }});
    };
    for (const ggml_type wt : kWeightTypes) {
        const int64_t k = ggml_blck_size(wt) == 256 ? 256 : 128;
        add_moe(wt, GGML_TYPE_F32, {16, k, 4, 2, 5, false});
    }
    add_moe(GGML_TYPE_F32, GGML_TYPE_F32, {33, 64, 8, 4, 3, true});
    add_moe(GGML_TYPE_F16, GGML_TYPE_F32, {17, 96, 6, 3, 1, false});
    add_moe(GGML_TYPE_Q4_0, GGML_TYPE_F16, {16, 128, 4, 2, 5, false});
    add_moe(GGML_TYPE_Q8_0, GGML_TYPE_F32, {16, 128, 32, 8, 2, true});
    // A Mixtral-like routing: 8 experts, 2 per token, 40 tokens (some experts get more rows than
    // one activation group holds).
    add_moe(GGML_TYPE_Q4_K, GGML_TYPE_F32, {64, 512, 8, 2, 40, false});
    // Skewed routing: expert 0 gets all 24 tokens (the HMX unit's), the 31 others one row or two
    // each (HVX's): the two kernels' shares of one op.
    add_moe(GGML_TYPE_Q4_0, GGML_TYPE_F32, {64, 128, 32, 2, 24, false, true});
    add_moe(GGML_TYPE_MXFP4, GGML_TYPE_F32, {64, 128, 32, 4, 16, true, true});
}

} // namespace hexnpu::optest
