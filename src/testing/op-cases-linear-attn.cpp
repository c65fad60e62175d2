// The ops of hybrid models' recurrent layers (Qwen3.5's gated delta net, LFM2's short convolution)
// and the triangular helpers of the chunked delta rule: TRI (the four triangles), DIAG, SOLVE_TRI
// (test-backend-ops' lower-triangular systems and the chunked delta net's unit-diagonal 64 x 64
// ones), SSM_CONV at Qwen3.5-0.8B and LFM2-1.2B sizes, GATED_DELTA_NET for decode and prompts with
// shared (tiled) q/k heads and sequences, per-key decay (KDA), permuted and fused-projection views
// and state snapshots (K > 1).
#include "op-case.h"

namespace hexnpu::optest {
namespace {

// The delta rule in fp32: per token, length-S dot products and a rank-1 update of the state, whose
// rounding the decay and (I - beta k k^T) (unit k: eigenvalues in [0, 1]) damp rather than amplify:
// NMSE against float64 measured <= 1.2e-14 from decode to 256 tokens, so kSumTol's 1e-10 (the decay
// applied after the delta instead of before, or q/k heads shared interleaved instead of tiled, costs
// 1e-3 and up). Another backend may approximate exp in the decay (HVX, ~1e-4 relative, compounded
// over the ~100-token memory of g ~ -0.01) or run the chunked form with fp16 products (HMX, ~5e-4
// per operand through a handful of products): NMSE ~1e-6, so 1e-5.
constexpr tolerance kDeltaNetTol{kSumTol.vs_f64, 1e-5};

const char * tri_name(ggml_tri_type type) {
    switch (type) {
        case GGML_TRI_TYPE_UPPER_DIAG: return "upper_diag";
        case GGML_TRI_TYPE_UPPER: return "upper";
        case GGML_TRI_TYPE_LOWER_DIAG: return "lower_diag";
        default: return "lower";
    }
}

void add_triangular_cases(std::vector<op_case> & cases) {
    // Values are copied or zeroed: exact.
    struct tri_variant {
        ggml_tri_type type;
        shape         ne;
    };
    const tri_variant tris[] = {
        {GGML_TRI_TYPE_UPPER_DIAG, {10, 10, 4, 3}}, {GGML_TRI_TYPE_UPPER, {10, 10, 4, 3}},
        {GGML_TRI_TYPE_LOWER_DIAG, {10, 10, 4, 3}}, {GGML_TRI_TYPE_LOWER, {10, 10, 4, 3}},
        {GGML_TRI_TYPE_LOWER_DIAG, {64, 64, 2, 1}},  // the chunked delta net's 64-token chunks
        {GGML_TRI_TYPE_UPPER, {128, 128, 1, 1}},
    };
    for (const tri_variant & v : tris) {
        cases.push_back({"type=f32,ne=" + shape_str(v.ne) + ",tri=" + tri_name(v.type), kExactTol, [=](case_graph & g) {
                             return ggml_tri(g.ctx(), g.input(GGML_TYPE_F32, v.ne), v.type);
                         }});
    }
    for (const shape & ne : {shape{10, 1, 4, 3}, shape{79, 1, 19, 13}, shape{256, 1, 8, 1}}) {
        cases.push_back({"type=f32,ne=" + shape_str(ne), kExactTol,
                         [=](case_graph & g) { return ggml_diag(g.ctx(), g.input(GGML_TYPE_F32, ne)); }});
    }

    // SOLVE_TRI. A: test-backend-ops' lower triangle (diagonal included) in [0.1, 1) with zeros
    // above; the chunked delta net's I + strictly lower beta k_i.k_j (small, either sign); or
    // U(0.1, 1) in full, whose upper part the op must ignore. B in [-1, 1).
    // Forward substitution in fp32 carries the rounding of the earlier x into the later ones,
    // amplified by the system's condition, which test-backend-ops' A (diagonal down to 0.1, positive
    // entries below) makes poor: NMSE against float64 measured up to 6e-13 (n = 79 and 128; 2e-15
    // with the unit diagonal), kSumTol's 1e-10 leaves 100x (a dropped term costs 1e-3 and up).
    // Another backend may solve in blocks or through inverted diagonal blocks, rounding differently
    // on the same conditioning: kSumTol's 1e-6.
    enum class a_form { tril, unit, full };
    struct solve_variant {
        shape  a, b;
        a_form form;
    };
    const solve_variant solves[] = {
        {{10, 10, 4, 3}, {3, 10, 4, 3}, a_form::tril},
        {{17, 17, 2, 4}, {9, 17, 2, 4}, a_form::tril},
        {{17, 17, 2, 4}, {9, 17, 2, 4}, a_form::full},
        {{64, 64, 2, 2}, {64, 64, 2, 2}, a_form::tril},
        {{64, 64, 2, 2}, {64, 64, 2, 2}, a_form::unit},
        {{79, 79, 5, 3}, {417, 79, 5, 3}, a_form::tril},
        {{128, 128, 4, 2}, {32, 128, 4, 2}, a_form::tril},
        {{64, 64, 8, 4}, {64, 64, 8, 4}, a_form::tril},
        {{64, 64, 8, 4}, {64, 64, 8, 4}, a_form::unit},
    };
    for (const solve_variant & v : solves) {
        const char * form = v.form == a_form::tril ? "tril[0.1,1]" : v.form == a_form::unit ? "unit+tril[-0.1,0.1]"
                                                                                            : "full[0.1,1]";
        cases.push_back({"ne_a=" + shape_str(v.a) + ",ne_b=" + shape_str(v.b) + ",a=" + form, kSumTol,
                         [=](case_graph & g) {
                             const fill_spec a_fill = v.form == a_form::tril   ? lower_triangular(0.1, 1.0)
                                                      : v.form == a_form::unit ? unit_lower_triangular(-0.1, 0.1)
                                                                               : uniform(0.1, 1.0);
                             return ggml_solve_tri(g.ctx(), g.input(GGML_TYPE_F32, v.a, a_fill),
                                                   g.input(GGML_TYPE_F32, v.b), true, true, false);
                         }});
    }
}

void add_ssm_conv_cases(std::vector<op_case> & cases) {
    struct conv_variant {
        int64_t d_conv, d_inner, n_t, n_s;
    };
    const conv_variant variants[] = {
        // Qwen3.5-0.8B: conv_dim = 2 * key_dim + value_dim = 2 * 2048 + 2048, kernel 4; decode, four
        // sequences, prompts.
        {4, 6144, 1, 1}, {4, 6144, 1, 4}, {4, 6144, 64, 1}, {4, 6144, 512, 1},
        {3, 2048, 1, 1}, {3, 2048, 64, 1},  // LFM2-1.2B: n_embd 2048, L_cache 3
        {9, 1024, 5, 1},
        {4, 1000, 7, 3},  // channels not a multiple of a vector
        {4, 1000, 3, 2},  // a few times: the NPU's row sums, each time's columns rotated into place
        {9, 96, 4, 1},
    };
    // Sums of d_conv (<= 9) fp32 products, a few ulp each: NMSE against float64 measured <= 4e-15,
    // kSumTol.
    for (const conv_variant & v : variants) {
        cases.push_back({"d_conv=" + std::to_string(v.d_conv) + ",d_inner=" + std::to_string(v.d_inner) +
                             ",n_t=" + std::to_string(v.n_t) + ",n_s=" + std::to_string(v.n_s),
                         kSumTol, [=](case_graph & g) {
                             ggml_tensor * sx = g.input(GGML_TYPE_F32, {v.d_conv - 1 + v.n_t, v.d_inner, v.n_s, 1});
                             ggml_tensor * c  = g.input(GGML_TYPE_F32, {v.d_conv, v.d_inner, 1, 1});
                             return ggml_ssm_conv(g.ctx(), sx, c);
                         }});
    }
}

struct gdn_variant {
    int64_t head_count, head_size, n_tokens, n_seqs;  // q/k heads; v has head_count * v_repeat
    int64_t v_repeat = 1;
    bool    permuted = false;  // q, k and v laid out [S, T, heads, n_seqs] and permuted back
    bool    kda      = false;  // g per key element
    int64_t K        = 1;      // state slots
    bool    mild_g   = false;  // g in [-2, -0.01) instead of test-backend-ops' [-20, -1e-4)
    int64_t qk_seqs  = 0;      // q's and k's sequences when shared (fewer than n_seqs); 0: n_seqs
    bool    fused    = false;  // q, k, v views of one [2 S H_k + S H_v, T, n_seqs] projection (Qwen3.5)
};

std::string gdn_params(const gdn_variant & v) {
    return "hs=" + std::to_string(v.head_size) + ",h=" + std::to_string(v.head_count) + ",t=" +
           std::to_string(v.n_tokens) + ",seqs=" + std::to_string(v.n_seqs) +
           (v.v_repeat != 1 ? ",v_repeat=" + std::to_string(v.v_repeat) : "") +
           (v.qk_seqs ? ",qk_seqs=" + std::to_string(v.qk_seqs) : "") + (v.permuted ? ",permuted" : "") +
           (v.fused ? ",qkv=fused" : "") + (v.kda ? ",kda" : "") + (v.K != 1 ? ",K=" + std::to_string(v.K) : "") +
           (v.mild_g ? ",g=[-2,-0.01]" : "");
}

// q and k L2-normalized along the head (as the model and test-backend-ops do, so the state stays
// bounded); in permuted cases the normalized tensors are permuted views, so the op reads q, k and v
// through strides.
ggml_tensor * build_gdn(case_graph & g, const gdn_variant & v) {
    const int64_t S = v.head_size, H_k = v.head_count, H = H_k * v.v_repeat, T = v.n_tokens, NS = v.n_seqs;
    const int64_t qk_seqs = v.qk_seqs ? v.qk_seqs : NS;
    const float   eps     = 1e-6f;
    ggml_tensor * q = nullptr;
    ggml_tensor * k = nullptr;
    ggml_tensor * val = nullptr;
    if (v.fused) {
        const int64_t conv_dim = 2 * S * H_k + S * H;
        ggml_tensor * proj     = g.input(GGML_TYPE_F32, {conv_dim, T, NS, 1});
        const auto    view     = [&](int64_t heads, int64_t at) {
            return ggml_view_4d(g.ctx(), proj, S, heads, T, NS, S * sizeof(float), proj->nb[1], proj->nb[2],
                                size_t(at) * sizeof(float));
        };
        q   = ggml_l2_norm(g.ctx(), view(H_k, 0), eps);
        k   = ggml_l2_norm(g.ctx(), view(H_k, S * H_k), eps);
        val = view(H, 2 * S * H_k);
    } else if (v.permuted) {
        const auto qk = [&] {
            ggml_tensor * n = ggml_l2_norm(g.ctx(), g.input(GGML_TYPE_F32, {S, T, H_k, qk_seqs}), eps);
            return ggml_permute(g.ctx(), n, 0, 2, 1, 3);
        };
        q   = qk();
        k   = qk();
        val = g.permuted_input(GGML_TYPE_F32, {S, H, T, NS}, {0, 2, 1, 3}, uniform(-0.3, 5.0));
    } else {
        q   = ggml_l2_norm(g.ctx(), g.input(GGML_TYPE_F32, {S, H_k, T, qk_seqs}), eps);
        k   = ggml_l2_norm(g.ctx(), g.input(GGML_TYPE_F32, {S, H_k, T, qk_seqs}), eps);
        val = g.input(GGML_TYPE_F32, {S, H, T, NS}, uniform(-0.3, 5.0));
    }
    ggml_tensor * gate  = g.input(GGML_TYPE_F32, {v.kda ? S : 1, H, T, NS}, v.mild_g ? uniform(-2.0, -0.01)
                                                                                    : uniform(-20.0, -1e-4));
    ggml_tensor * beta  = g.input(GGML_TYPE_F32, {1, H, T, NS}, uniform(0.0, 1.0));
    ggml_tensor * state = g.input(GGML_TYPE_F32, {S, S, H, NS});
    return ggml_gated_delta_net(g.ctx(), q, k, val, gate, beta, state, v.K);
}

void add_gated_delta_net_cases(std::vector<op_case> & cases) {
    // (head_count, head_size, n_tokens, n_seqs, v_repeat, permuted, kda, K, mild_g, qk_seqs, fused)
    // as test-backend-ops' tuples, plus the decay range, shared sequences and fused views. Every
    // case has T >= K, so all the state slots are written.
    const gdn_variant variants[] = {
        {32, 128, 1, 1},                             // Qwen3.5 decode, S = 128
        {16, 128, 1, 1, 2},                          // H_k 16 -> H_v 32: tiled head sharing
        {16, 128, 1, 4},                             // four sequences decode
        {32, 16, 1, 1, 1, false, true},              // KDA
        {4, 64, 4, 2, 1, true},                      // permuted views
        {8, 32, 4, 2, 2},
        {4, 64, 4, 2, 1, false, false, 1, true, 1},  // q and k shared by both sequences
        {4, 32, 4, 4, 1, false, false, 1, true, 2},  // ... by sequences 0-1 and 2-3 (in blocks, not tiled)
        {4, 64, 4, 2, 2, false, false, 1, true, 0, true},  // Qwen3.5's views of the conv output
        {16, 128, 64, 1, 1, false, false, 1, true},  // Qwen3.5-0.8B prompts
        {16, 128, 256, 1, 1, false, false, 1, true},
        {4, 64, 127, 2, 1, false, false, 1, true},   // 64 + 63: a partial second chunk of the chunked form
        {4, 32, 4, 1, 1, false, false, 4},           // snapshots, T == K
        {4, 32, 8, 1, 1, false, false, 3, true},     // T > K
        {8, 32, 4, 2, 2, false, true, 4},
    };
    // Each twice: the whole result (outputs and states, as test-backend-ops compares it) and the
    // outputs alone. The states have S times the outputs' elements, each ~sqrt(S) times larger, so in
    // the whole result an output error is diluted ~S^2 times (S = 128: an output scale 0.4% off, NMSE
    // 1.5e-5 alone, is 1e-9 there).
    for (const gdn_variant & v : variants) {
        cases.push_back({gdn_params(v), kDeltaNetTol, [=](case_graph & g) { return build_gdn(g, v); }});
        cases.push_back({gdn_params(v) + ",out=attn", kDeltaNetTol, [=](case_graph & g) {
                             ggml_tensor * r = build_gdn(g, v);
                             return ggml_view_2d(g.ctx(), r, r->ne[0], v.n_tokens * v.n_seqs, r->nb[1], 0);
                         }});
    }
}

} // namespace

void add_linear_attn_cases(std::vector<op_case> & cases) {
    add_triangular_cases(cases);
    add_ssm_conv_cases(cases);
    add_gated_delta_net_cases(cases);
}

} // namespace hexnpu::optest
