// Triangular matrices and the recurrent layers of hybrid models, in double, from GGML's definitions
// (a matrix is dims 0 and 1: element (i0, i1) is column i0 of row i1).
#include "ref-eval-ops.h"

#include <cmath>
#include <vector>

namespace hexnpu::optest {

void eval_tri(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * a    = node->src[0];
    const int32_t       type = ggml_get_op_param<int32_t>(node, 0);
    for_each_element(node, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const bool keep = type == GGML_TRI_TYPE_UPPER_DIAG ? i0 >= i1
                          : type == GGML_TRI_TYPE_UPPER    ? i0 > i1
                          : type == GGML_TRI_TYPE_LOWER_DIAG ? i0 <= i1
                                                             : i0 < i1;
        ev.set(node, i0, i1, i2, i3, keep ? ev.get(a, i0, i1, i2, i3) : 0.0);
    });
}

void eval_diag(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    for_each_element(node, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        ev.set(node, i0, i1, i2, i3, i0 == i1 ? ev.get(a, i0, 0, i2, i3) : 0.0);
    });
}

// A X = B for each matrix of the batch, column-oriented: once x_t is known, its multiples leave
// the right-hand sides of the rows below (the other order of the same forward substitution).
void eval_solve_tri(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * b = node->src[1];
    const int64_t       n = a->ne[0], k = b->ne[0];
    for (int64_t i3 = 0; i3 < b->ne[3]; ++i3) {
        for (int64_t i2 = 0; i2 < b->ne[2]; ++i2) {
            std::vector<std::vector<double>> x(static_cast<size_t>(n));  // rows of B, becoming rows of X
            for (int64_t r = 0; r < n; ++r) {
                x[size_t(r)] = ev.row(b, r, i2, i3);
            }
            for (int64_t t = 0; t < n; ++t) {
                std::vector<double> & xt    = x[size_t(t)];
                const double          pivot = ev.get(a, t, t, i2, i3);
                for (double & e : xt) {
                    e /= pivot;
                }
                for (int64_t r = t + 1; r < n; ++r) {
                    const double a_rt = ev.get(a, t, r, i2, i3);
                    for (int64_t j = 0; j < k; ++j) {
                        x[size_t(r)][size_t(j)] -= a_rt * xt[size_t(j)];
                    }
                }
            }
            for (int64_t r = 0; r < n; ++r) {
                ev.set_row(node, r, i2, i3, x[size_t(r)]);
            }
        }
    }
}

void eval_ssm_conv(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * sx = node->src[0];
    const ggml_tensor * c  = node->src[1];
    const int64_t       d_conv = c->ne[0];
    for (int64_t s = 0; s < node->ne[2]; ++s) {
        for (int64_t ch = 0; ch < node->ne[0]; ++ch) {
            const std::vector<double> x = ev.row(sx, ch, s, 0);
            const std::vector<double> w = ev.row(c, ch, 0, 0);
            for (int64_t t = 0; t < node->ne[1]; ++t) {
                double sum = 0.0;
                for (int64_t i = 0; i < d_conv; ++i) {
                    sum += x[size_t(t + i)] * w[size_t(i)];
                }
                ev.set(node, ch, t, s, 0, sum);
            }
        }
    }
}

// Per head h and sequence s, the state as a key-major matrix St[i][j] (key i, value j; GGML's state
// tensor holds it transposed, element (i, j) of [S, S, H, n_seqs] being St[i][j]). Per token, with
// gamma = exp(g) (one per key for KDA):
//   St <- gamma St;  delta = beta (v - St^T k);  St <- St + k delta^T;  o = St^T q / sqrt(S)
// q and k come from head h % H_k and sequence s / (n_seqs / n_seqs_k) (tiled sharing).
void eval_gated_delta_net(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * q = node->src[0];
    const ggml_tensor * k = node->src[1];
    const ggml_tensor * v = node->src[2];
    const ggml_tensor * g = node->src[3];
    const ggml_tensor * beta  = node->src[4];
    const ggml_tensor * state = node->src[5];
    const int64_t       S = v->ne[0], H = v->ne[1], T = v->ne[2], n_seqs = v->ne[3];
    const int64_t       K = ggml_get_op_param<int32_t>(node, 0);
    const double        inv_sqrt_s = 1.0 / std::sqrt(double(S));
    // Float f of the flat result: outputs first ([S, H, T, n_seqs]), then the K state slots.
    const int64_t row_len = node->ne[0];
    const auto    store   = [&](int64_t f, double value) { ev.set(node, f % row_len, f / row_len, 0, 0, value); };
    const int64_t states_at = S * H * T * n_seqs;
    for (int64_t s = 0; s < n_seqs; ++s) {
        for (int64_t h = 0; h < H; ++h) {
            std::vector<double> st(size_t(S * S));  // st[i * S + j] = St[i][j]
            for (int64_t j = 0; j < S; ++j) {
                for (int64_t i = 0; i < S; ++i) {
                    st[size_t(i * S + j)] = ev.get(state, i, j, h, s);
                }
            }
            const int64_t sq = s / (n_seqs / q->ne[3]), sk = s / (n_seqs / k->ne[3]);
            for (int64_t t = 0; t < T; ++t) {
                const std::vector<double> qt = ev.row(q, h % q->ne[1], t, sq);
                const std::vector<double> kt = ev.row(k, h % k->ne[1], t, sk);
                const std::vector<double> vt = ev.row(v, h, t, s);
                const std::vector<double> gt = ev.row(g, h, t, s);
                const double              bt = ev.get(beta, 0, h, t, s);
                for (int64_t i = 0; i < S; ++i) {
                    const double gamma = std::exp(gt[size_t(gt.size() == 1 ? 0 : i)]);
                    for (int64_t j = 0; j < S; ++j) {
                        st[size_t(i * S + j)] *= gamma;
                    }
                }
                std::vector<double> delta(vt);  // v - St^T k, then times beta
                for (int64_t i = 0; i < S; ++i) {
                    for (int64_t j = 0; j < S; ++j) {
                        delta[size_t(j)] -= st[size_t(i * S + j)] * kt[size_t(i)];
                    }
                }
                std::vector<double> o(size_t(S), 0.0);
                for (int64_t i = 0; i < S; ++i) {
                    for (int64_t j = 0; j < S; ++j) {
                        st[size_t(i * S + j)] += kt[size_t(i)] * delta[size_t(j)] * bt;
                        o[size_t(j)] += st[size_t(i * S + j)] * qt[size_t(i)];
                    }
                }
                for (int64_t j = 0; j < S; ++j) {
                    store(((s * T + t) * H + h) * S + j, o[size_t(j)] * inv_sqrt_s);
                }
                // Slot 0 is the state after the last token, slot m the state m tokens earlier.
                const int64_t slot = T - 1 - t;
                if (slot < K) {
                    const int64_t at = states_at + ((slot * n_seqs + s) * H + h) * S * S;
                    for (int64_t j = 0; j < S; ++j) {
                        for (int64_t i = 0; i < S; ++i) {
                            store(at + j * S + i, st[size_t(i * S + j)]);
                        }
                    }
                }
            }
        }
    }
}

} // namespace hexnpu::optest
