// The recurrent layers of hybrid models (GGML's, all F32):
//   SSM_CONV:        the short causal convolution, sx [d_conv - 1 + n_t, d_inner, n_s] (time
//                    innermost), c [d_conv, d_inner] -> dst [d_inner, n_t, n_s],
//                    dst[ch, t, s] = sum_i sx[t + i, ch, s] * c[i, ch], summed in f32 in ascending i
//   GATED_DELTA_NET: the gated delta rule per (head h, sequence s). The state matrix S[i][j] (key i,
//                    value j) is stored transposed, M[j*S + i], so that a row of M is a column of S.
//                    Per token: M *= exp(g) (a scalar, or exp(g[i]) on key i: KDA);
//                    d = beta (v - S^T k); M += k d^T; o = S^T q / sqrt(S). q and k heads and
//                    sequences are shared by tiling (head h reads h % H_k, sequence s reads
//                    s / (n_seqs / n_seqs_k)). dst holds the outputs [S, H, T, n_seqs], then K states
//                    [S, S, H, n_seqs], the newest first: slot T-1-t holds the state after token t
//                    (slots >= T are left as they are).
// Both run in f32 as GGML's CPU backend does; q, k, v, sx and c are read through their byte strides.
#include "cpu-ops.h"
#include "cpu-tensor.h"
#include "cpu-vec.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace hexnpu::cpu {
namespace {

bool has_shape(const ggml_tensor * t, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    return t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == ne2 && t->ne[3] == ne3;
}

bool supports_ssm_conv(const ggml_tensor * op) {
    const ggml_tensor * sx = op->src[0];
    const ggml_tensor * c  = op->src[1];
    if (!all_dense_f32_rows({op, sx, c})) {
        return false;
    }
    const int64_t d_conv = c->ne[0], d_inner = c->ne[1];
    return d_conv >= 1 && c->ne[2] == 1 && c->ne[3] == 1 && sx->ne[1] == d_inner && sx->ne[3] == 1 &&
           has_shape(op, d_inner, sx->ne[0] - d_conv + 1, sx->ne[2], 1);
}

// Channels are the unit of work: each chunk writes its slice of every output row.
void compute_ssm_conv(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * sx = dst->src[0];
    const ggml_tensor * c  = dst->src[1];
    const int64_t       d_conv = c->ne[0], n_t = dst->ne[1], n_s = dst->ne[2];
    ctx.parallel_for(dst->ne[0], rows_per_chunk(d_conv * n_t * n_s), [&](int64_t ch0, int64_t ch1) {
        for (int64_t s = 0; s < n_s; ++s) {
            for (int64_t t = 0; t < n_t; ++t) {
                float * out = reinterpret_cast<float *>(row_ptr(dst, t, s, 0));
                for (int64_t ch = ch0; ch < ch1; ++ch) {
                    const float * x = reinterpret_cast<const float *>(row_ptr(sx, ch, s, 0)) + t;
                    const float * w = reinterpret_cast<const float *>(row_ptr(c, ch, 0, 0));
                    float         sum = 0.0f;
                    for (int64_t i = 0; i < d_conv; ++i) {
                        sum += x[i] * w[i];
                    }
                    out[ch] = sum;
                }
            }
        }
    });
}

struct gdn_shape {
    int64_t S, H, T, n_seqs, K;
};

gdn_shape shape_of(const ggml_tensor * dst) {
    const ggml_tensor * v = dst->src[2];
    return {v->ne[0], v->ne[1], v->ne[2], v->ne[3], ggml_get_op_param<int32_t>(dst, 0)};
}

bool supports_gated_delta_net(const ggml_tensor * op) {
    const ggml_tensor * q = op->src[0];
    const ggml_tensor * k = op->src[1];
    const ggml_tensor * v = op->src[2];
    const ggml_tensor * g = op->src[3];
    const ggml_tensor * beta  = op->src[4];
    const ggml_tensor * state = op->src[5];
    if (!all_dense_f32_rows({op, q, k, v, g, beta, state}) || !ggml_is_contiguous(op) || !ggml_is_contiguous(g) ||
        !ggml_is_contiguous(beta) || !ggml_is_contiguous(state)) {
        return false;
    }
    const gdn_shape d = shape_of(op);
    for (const ggml_tensor * qk : {q, k}) {
        if (qk->ne[0] != d.S || qk->ne[2] != d.T || qk->ne[1] <= 0 || d.H % qk->ne[1] != 0 || qk->ne[3] <= 0 ||
            d.n_seqs % qk->ne[3] != 0) {
            return false;
        }
    }
    return (g->ne[0] == 1 || g->ne[0] == d.S) && has_shape(g, g->ne[0], d.H, d.T, d.n_seqs) &&
           has_shape(beta, 1, d.H, d.T, d.n_seqs) && has_shape(state, d.S, d.S, d.H, d.n_seqs) && d.K >= 1 &&
           has_shape(op, d.S * d.H, d.T * d.n_seqs + d.K * d.S * d.n_seqs, 1, 1);
}

// The (head, sequence) pairs are the unit of work: each runs all its tokens.
void compute_gated_delta_net(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * q = dst->src[0];
    const ggml_tensor * k = dst->src[1];
    const ggml_tensor * v = dst->src[2];
    const ggml_tensor * g = dst->src[3];
    const ggml_tensor * beta  = dst->src[4];
    const ggml_tensor * state = dst->src[5];
    const gdn_shape     d     = shape_of(dst);
    const int64_t       S = d.S, H = d.H, T = d.T, SS = S * S;
    const bool          kda   = g->ne[0] == S;
    const float         scale = 1.0f / std::sqrt(float(S));
    const int64_t       q_seq_group = d.n_seqs / q->ne[3], k_seq_group = d.n_seqs / k->ne[3];
    float * const       attn  = static_cast<float *>(dst->data);
    float * const       snaps = attn + S * H * T * d.n_seqs;  // K slots of S*S*H*n_seqs floats
    const int64_t       slot_size = SS * H * d.n_seqs;
    ctx.parallel_for(H * d.n_seqs, rows_per_chunk(T * SS), [&](int64_t u0, int64_t u1) {
        std::vector<float> delta(static_cast<size_t>(S)), scratch(d.K > 1 ? size_t(SS) : 0);
        for (int64_t u = u0; u < u1; ++u) {
            const int64_t h = u % H, s = u / H;
            const int64_t hq = h % q->ne[1], hk = h % k->ne[1], sq = s / q_seq_group, sk = s / k_seq_group;
            // With one slot the state is updated in place in it; with more, snapshots are copied out.
            float * M = d.K > 1 ? scratch.data() : snaps + (s * H + h) * SS;
            std::memcpy(M, row_ptr(state, 0, h, s), size_t(SS) * sizeof(float));
            float * out = attn + (s * T * H + h) * S;
            for (int64_t t = 0; t < T; ++t, out += S * H) {
                const float * qt = reinterpret_cast<const float *>(row_ptr(q, hq, t, sq));
                const float * kt = reinterpret_cast<const float *>(row_ptr(k, hk, t, sk));
                const float * vt = reinterpret_cast<const float *>(row_ptr(v, h, t, s));
                const float * gt = reinterpret_cast<const float *>(row_ptr(g, h, t, s));
                const float   bt = *reinterpret_cast<const float *>(row_ptr(beta, h, t, s));
                if (kda) {  // the decay of key i scales element i of every row of M
                    for (int64_t i = 0; i < S; ++i) {
                        delta[size_t(i)] = std::exp(gt[i]);
                    }
                    for (int64_t j = 0; j < S; ++j) {
                        for (int64_t i = 0; i < S; ++i) {
                            M[j * S + i] *= delta[size_t(i)];
                        }
                    }
                } else {
                    scale_f32(M, std::exp(gt[0]), SS);
                }
                for (int64_t j = 0; j < S; ++j) {
                    delta[size_t(j)] = (vt[j] - dot_f32(M + j * S, kt, S)) * bt;
                }
                for (int64_t j = 0; j < S; ++j) {
                    axpy_f32(M + j * S, kt, delta[size_t(j)], S);
                }
                for (int64_t j = 0; j < S; ++j) {
                    out[j] = dot_f32(M + j * S, qt, S) * scale;
                }
                const int64_t slot = T - 1 - t;
                if (d.K > 1 && slot < d.K) {
                    std::memcpy(snaps + slot * slot_size + (s * H + h) * SS, M, size_t(SS) * sizeof(float));
                }
            }
        }
    });
}

} // namespace

bool supports_linear_attn(const ggml_tensor * op) {
    switch (op->op) {
        case GGML_OP_SSM_CONV: return supports_ssm_conv(op);
        case GGML_OP_GATED_DELTA_NET: return supports_gated_delta_net(op);
        default: return false;
    }
}

void compute_linear_attn(const compute_context & ctx, ggml_tensor * dst) {
    if (dst->op == GGML_OP_SSM_CONV) {
        compute_ssm_conv(ctx, dst);
    } else {
        compute_gated_delta_net(ctx, dst);
    }
}

} // namespace hexnpu::cpu
