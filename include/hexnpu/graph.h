// Graph building with GGML's names and shape rules: a context owns tensors; op functions create
// result tensors (shape inferred, op and op_params recorded); a graph lists the nodes to compute
// in dependency order. Nothing is computed here: backends execute graphs.
#pragma once

#include "hexnpu/tensor.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace hexnpu {

struct ggml_init_params {
    size_t mem_size = 0;     // bytes for tensor data when !no_alloc
    bool   no_alloc = true;  // true: tensors get data later from a backend buffer / allocator
};

// Owns tensor structs (and, when !no_alloc, their data). Pointers stay valid for its lifetime.
class ggml_context {
  public:
    explicit ggml_context(const ggml_init_params & params = {});
    ggml_context(const ggml_context &)             = delete;
    ggml_context & operator=(const ggml_context &) = delete;

    ggml_tensor * new_tensor(ggml_type type, int n_dims, const int64_t * ne);
    ggml_tensor * new_view(ggml_tensor * src, int n_dims, const int64_t * ne, const size_t * nb, size_t offset);

    bool   no_alloc() const { return no_alloc_; }
    size_t used() const { return used_; }
    const std::deque<ggml_tensor> & tensors() const { return tensors_; }
    std::deque<ggml_tensor> &       tensors() { return tensors_; }

  private:
    std::deque<ggml_tensor>    tensors_;
    std::unique_ptr<uint8_t[]> mem_;
    size_t                     mem_size_ = 0;
    size_t                     used_     = 0;
    bool                       no_alloc_ = true;
};

// Tensors.
ggml_tensor * ggml_new_tensor(ggml_context * ctx, ggml_type type, int n_dims, const int64_t * ne);
ggml_tensor * ggml_new_tensor_1d(ggml_context * ctx, ggml_type type, int64_t ne0);
ggml_tensor * ggml_new_tensor_2d(ggml_context * ctx, ggml_type type, int64_t ne0, int64_t ne1);
ggml_tensor * ggml_new_tensor_3d(ggml_context * ctx, ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2);
ggml_tensor * ggml_new_tensor_4d(ggml_context * ctx, ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2,
                                 int64_t ne3);
ggml_tensor * ggml_dup_tensor(ggml_context * ctx, const ggml_tensor * t);  // same type and shape, new memory

// Views and layout.
ggml_tensor * ggml_view_1d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, size_t offset);
ggml_tensor * ggml_view_2d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, size_t nb1, size_t offset);
ggml_tensor * ggml_view_3d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2, size_t nb1,
                           size_t nb2, size_t offset);
ggml_tensor * ggml_view_4d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3,
                           size_t nb1, size_t nb2, size_t nb3, size_t offset);
ggml_tensor * ggml_reshape_1d(ggml_context * ctx, ggml_tensor * a, int64_t ne0);
ggml_tensor * ggml_reshape_2d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1);
ggml_tensor * ggml_reshape_3d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2);
ggml_tensor * ggml_reshape_4d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2,
                              int64_t ne3);
ggml_tensor * ggml_permute(ggml_context * ctx, ggml_tensor * a, int axis0, int axis1, int axis2, int axis3);
ggml_tensor * ggml_transpose(ggml_context * ctx, ggml_tensor * a);
ggml_tensor * ggml_cont(ggml_context * ctx, ggml_tensor * a);
ggml_tensor * ggml_dup(ggml_context * ctx, ggml_tensor * a);
ggml_tensor * ggml_cpy(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b);  // a -> b (b's type), returns view of b
ggml_tensor * ggml_cast(ggml_context * ctx, ggml_tensor * a, ggml_type type);

// Element-wise binary (src1 broadcast over src0 by repetition).
ggml_tensor * ggml_add(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b);
ggml_tensor * ggml_sub(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b);
ggml_tensor * ggml_mul(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b);
ggml_tensor * ggml_div(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b);
// a[:, i1, i2] += b[:, ids[i1, i2]]  (mixture-of-experts bias)
ggml_tensor * ggml_add_id(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_tensor * ids);

// Element-wise unary and parametrized.
ggml_tensor * ggml_scale(ggml_context * ctx, ggml_tensor * a, float s);
ggml_tensor * ggml_scale_bias(ggml_context * ctx, ggml_tensor * a, float s, float b);
ggml_tensor * ggml_clamp(ggml_context * ctx, ggml_tensor * a, float min, float max);
ggml_tensor * ggml_sqr(ggml_context * ctx, ggml_tensor * a);
ggml_tensor * ggml_sqrt(ggml_context * ctx, ggml_tensor * a);
ggml_tensor * ggml_log(ggml_context * ctx, ggml_tensor * a);
ggml_tensor * ggml_sin(ggml_context * ctx, ggml_tensor * a);
ggml_tensor * ggml_cos(ggml_context * ctx, ggml_tensor * a);
ggml_tensor * ggml_unary(ggml_context * ctx, ggml_tensor * a, ggml_unary_op op);
ggml_tensor * ggml_fill(ggml_context * ctx, ggml_tensor * a, float value);

// GLU: with b == nullptr, a's rows hold [x | gate] halves (swapped = gate first); else separate.
ggml_tensor * ggml_glu(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_glu_op op, bool swapped);
// SWIGLU_OAI parameters (alpha, limit) as in GPT-OSS.
ggml_tensor * ggml_swiglu_oai(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, float alpha, float limit);
// SWIGLU_CLAMP: silu(min(x, limit)) * clamp(gate, -limit, limit) (op_params 3: limit).
ggml_tensor * ggml_swiglu_clamp(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, float limit);
// x > 0 ? x : 0, plus negative_slope * (x < 0 ? x : 0).
ggml_tensor * ggml_leaky_relu(ggml_context * ctx, ggml_tensor * a, float negative_slope);

// Reductions, scans, sorting, shape ops.
ggml_tensor * ggml_sum_rows(ggml_context * ctx, ggml_tensor * a);
ggml_tensor * ggml_mean(ggml_context * ctx, ggml_tensor * a);
ggml_tensor * ggml_cumsum(ggml_context * ctx, ggml_tensor * a);
ggml_tensor * ggml_sum(ggml_context * ctx, ggml_tensor * a);     // every element's sum: [1, 1, 1, 1]
ggml_tensor * ggml_argmax(ggml_context * ctx, ggml_tensor * a);  // I32 [ne1]: each row's largest, the last of ties
// dst[i] = src[(i - shift) mod ne] in every dimension.
ggml_tensor * ggml_roll(ggml_context * ctx, ggml_tensor * a, int shift0, int shift1, int shift2, int shift3);
// A convolution's input unrolled (GGML's im2col): a is the kernel [KW, KH, IC, OC] (only its shape
// is read), b the image [IW, IH, IC, N] (2-D) or [IW, IC, N] (1-D); the result [IC*KH*KW, OW, OH, N]
// (1-D: [IC*KW, OW, N]) of dst_type (F32 or F16): row (iow, ioh, n) holds b's elements
// (iow*s0 + kw*d0 - p0, ioh*s1 + kh*d1 - p1) for each (ic, kh, kw), zero outside the image.
ggml_tensor * ggml_im2col(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int s0, int s1, int p0, int p1, int d0,
                          int d1, bool is_2D, ggml_type dst_type);
ggml_tensor * ggml_argsort(ggml_context * ctx, ggml_tensor * a, ggml_sort_order order);
ggml_tensor * ggml_top_k(ggml_context * ctx, ggml_tensor * a, int k);  // indices of the k largest, I32
ggml_tensor * ggml_concat(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int dim);
ggml_tensor * ggml_repeat(ggml_context * ctx, ggml_tensor * a, ggml_tensor * shape_of);
ggml_tensor * ggml_pad(ggml_context * ctx, ggml_tensor * a, int p0, int p1, int p2, int p3);  // zeros at the end

// Triangular matrices and linear attention (GGML's semantics; ggml.h's comments in the pinned llama.cpp).
// a [n, 1, ne2, ne3] -> [n, n, ne2, ne3]: a's row on the diagonal, 0 elsewhere (F32).
ggml_tensor * ggml_diag(ggml_context * ctx, ggml_tensor * a);
// a contiguous, square in (ne0, ne1), F32: the triangle `type` keeps, the rest 0.
ggml_tensor * ggml_tri(ggml_context * ctx, ggml_tensor * a, ggml_tri_type type);
// The short causal convolution of Mamba and LFM2: sx [d_conv - 1 + n_t, d_inner, n_s] (history then
// new columns, time innermost), c [d_conv, d_inner] -> [d_inner, n_t, n_s],
// dst[ch, t, s] = sum_i sx[t + i, ch, s] * c[i, ch] (no flip, no bias).
ggml_tensor * ggml_ssm_conv(ggml_context * ctx, ggml_tensor * sx, ggml_tensor * c);
// X with A X = B, A [n, n, ...] lower triangular with a non-zero diagonal, B [k, n, ...] (k right-hand
// sides); GGML takes only left, lower, not unit (the flags are checked, not stored).
ggml_tensor * ggml_solve_tri(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, bool left, bool lower, bool uni);
// The gated delta rule over n_tokens steps of n_seqs sequences, all F32: q, k [S, H_k, T, n_seqs'] (heads
// and sequences broadcast by tiling: head h reads h % H_k, sequence s reads s / (n_seqs / n_seqs')),
// v [S, H, T, n_seqs], g [1 or S, H, T, n_seqs] (log decay; S: per key element), beta [1, H, T, n_seqs],
// state [S, S, H, n_seqs] (element (i, j) = state[j][i]: key i, value j). Per token: S *= exp(g);
// d = beta (v - S^T k); S += k d^T; o = S^T q / sqrt(S). Result F32 [S*H, T*n_seqs + K*S*n_seqs]: the
// outputs [S, H, T, n_seqs], then K states, the newest first (slot s = the state s tokens before the
// last; slots past T are not written). op_params[0] = K.
ggml_tensor * ggml_gated_delta_net(ggml_context * ctx, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v,
                                   ggml_tensor * g, ggml_tensor * beta, ggml_tensor * state, int64_t K);

// Normalization.
ggml_tensor * ggml_norm(ggml_context * ctx, ggml_tensor * a, float eps);
ggml_tensor * ggml_rms_norm(ggml_context * ctx, ggml_tensor * a, float eps);
ggml_tensor * ggml_l2_norm(ggml_context * ctx, ggml_tensor * a, float eps);

// Rows.
ggml_tensor * ggml_get_rows(ggml_context * ctx, ggml_tensor * a, ggml_tensor * rows);  // rows: I32/I64
ggml_tensor * ggml_set_rows(ggml_context * ctx, ggml_tensor * dst, ggml_tensor * src, ggml_tensor * rows);

// Matrix products: result[i, j] = sum_k a[k, i] * b[k, j]  (b · aᵀ), broadcast over dims 2/3.
ggml_tensor * ggml_mul_mat(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b);
// as: [K, N, n_expert]; b: [K, n_expert_used or 1, n_tokens]; ids: I32 [n_expert_used, n_tokens].
ggml_tensor * ggml_mul_mat_id(ggml_context * ctx, ggml_tensor * as, ggml_tensor * b, ggml_tensor * ids);

// Attention building blocks.
ggml_tensor * ggml_soft_max_ext(ggml_context * ctx, ggml_tensor * a, ggml_tensor * mask, float scale,
                                float max_bias);
void          ggml_soft_max_add_sinks(ggml_tensor * soft_max, ggml_tensor * sinks);
ggml_tensor * ggml_rope_ext(ggml_context * ctx, ggml_tensor * a, ggml_tensor * pos, ggml_tensor * freq_factors,
                            int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale,
                            float ext_factor, float attn_factor, float beta_fast, float beta_slow);
// MROPE / IMROPE / VISION (Qwen2-VL, Qwen3-VL and their vision encoders): pos holds 4 * ne[2]
// positions (t for every token, then h, w, e); sections[k] pairs turn by position k.
ggml_tensor * ggml_rope_multi(ggml_context * ctx, ggml_tensor * a, ggml_tensor * pos, ggml_tensor * freq_factors,
                              int n_dims, const int sections[GGML_MROPE_SECTIONS], int mode, int n_ctx_orig,
                              float freq_base, float freq_scale, float ext_factor, float attn_factor, float beta_fast,
                              float beta_slow);
// The rotated dims start at element n_offs (op_params 15; not VISION): [n_offs, n_offs + n_dims).
ggml_tensor * ggml_rope_set_offset(ggml_tensor * rope, int n_offs);
ggml_tensor * ggml_flash_attn_ext(ggml_context * ctx, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v,
                                  ggml_tensor * mask, float scale, float max_bias, float logit_softcap);
void          ggml_flash_attn_ext_add_sinks(ggml_tensor * fa, ggml_tensor * sinks);

// A computation graph: nodes in an order where every node comes after its sources.
struct ggml_cgraph {
    std::vector<ggml_tensor *> nodes;  // results of ops
    std::vector<ggml_tensor *> leafs;  // inputs and weights (op == NONE)
    // A backend may fuse nodes only when it knows every reader of the nodes it drops. A scheduler's
    // split points `whole` at the graph it is part of; `partial` marks a part whose whole is not
    // known (a graph handed over by another scheduler): no fusion. Neither: this graph is all.
    const ggml_cgraph * whole   = nullptr;
    bool                partial = false;
};

// How many times t is read across the graph: as a source of a node, or as the memory a view node
// sees. A tensor flagged GGML_TENSOR_FLAG_OUTPUT is read after the graph too.
int ggml_graph_n_readers(const ggml_cgraph & graph, const ggml_tensor * t);

// Adds t and every not-yet-visited tensor it depends on.
void ggml_build_forward_expand(ggml_cgraph & graph, ggml_tensor * t);

} // namespace hexnpu
