// Softmax and flash attention in double: scale, mask (with ALiBi slopes), logit softcap and
// attention sinks as GGML defines them.
#include "ref-eval-ops.h"

#include <algorithm>
#include <limits>

namespace hexnpu::optest {
namespace {

// Softmax of `logits` in place, with an optional sink logit that joins the normalization but
// gets no output of its own.
void softmax_in_place(std::vector<double> & logits, const double * sink) {
    double max = sink ? *sink : -std::numeric_limits<double>::infinity();
    for (double v : logits) {
        max = std::max(max, v);
    }
    double sum = sink ? std::exp(*sink - max) : 0.0;
    for (double & v : logits) {
        v = std::exp(v - max);
        sum += v;
    }
    for (double & v : logits) {
        v /= sum;
    }
}

} // namespace

void eval_softmax(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * a        = node->src[0];
    const ggml_tensor * mask     = node->src[1];
    const ggml_tensor * sinks    = node->src[2];
    const double        scale    = ggml_get_op_param<float>(node, 0);
    const double        max_bias = ggml_get_op_param<float>(node, 1);
    // Row i1 of head i2 uses mask row i1 of mask matrix (i2 % ne12, i3 % ne13); heads are dim 2.
    for_each_row(a, [&](int64_t i1, int64_t i2, int64_t i3) {
        std::vector<double> w     = ev.row(a, i1, i2, i3);
        const double        slope = alibi_slope(max_bias, i2, a->ne[2]);
        for (int64_t i0 = 0; i0 < a->ne[0]; ++i0) {
            w[size_t(i0)] *= scale;
            if (mask) {
                w[size_t(i0)] += slope * ev.get(mask, i0, i1, i2 % mask->ne[2], i3 % mask->ne[3]);
            }
        }
        const double sink = sinks ? ev.get(sinks, i2, 0, 0, 0) : 0.0;
        softmax_in_place(w, sinks ? &sink : nullptr);
        ev.set_row(node, i1, i2, i3, w);
    });
}

void eval_flash_attn(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * q        = node->src[0];
    const ggml_tensor * k        = node->src[1];
    const ggml_tensor * v        = node->src[2];
    const ggml_tensor * mask     = node->src[3];
    const ggml_tensor * sinks    = node->src[4];
    const double        scale    = ggml_get_op_param<float>(node, 0);
    const double        max_bias = ggml_get_op_param<float>(node, 1);
    const double        softcap  = ggml_get_op_param<float>(node, 2);
    const int64_t       n_head   = q->ne[2];
    const int64_t       n_kv     = k->ne[1];
    const int64_t       gqa      = n_head / k->ne[2];  // query heads per K/V head
    for (int64_t i3 = 0; i3 < q->ne[3]; ++i3) {
        for (int64_t h = 0; h < n_head; ++h) {
            std::vector<std::vector<double>> keys(static_cast<size_t>(n_kv)), vals(static_cast<size_t>(n_kv));
            for (int64_t j = 0; j < n_kv; ++j) {
                keys[size_t(j)] = ev.row(k, j, h / gqa, i3);
                vals[size_t(j)] = ev.row(v, j, h / gqa, i3);
            }
            const double slope = alibi_slope(max_bias, h, n_head);
            for (int64_t iq = 0; iq < q->ne[1]; ++iq) {
                const std::vector<double> query = ev.row(q, iq, h, i3);
                std::vector<double>       p(static_cast<size_t>(n_kv));
                for (int64_t j = 0; j < n_kv; ++j) {
                    double s = 0.0;
                    for (size_t d = 0; d < query.size(); ++d) {
                        s += query[d] * keys[size_t(j)][d];
                    }
                    s *= scale;
                    if (softcap != 0.0) {  // softcap * tanh(s / softcap) bounds the logits
                        s = softcap * std::tanh(s / softcap);
                    }
                    if (mask) {
                        s += slope * ev.get(mask, j, iq, h % mask->ne[2], i3 % mask->ne[3]);
                    }
                    p[size_t(j)] = s;
                }
                const double sink = sinks ? ev.get(sinks, h, 0, 0, 0) : 0.0;
                // A query that sees no key at all (every logit -inf, no sink) gets zeros in GGML,
                // where softmax alone would divide 0 by 0.
                const bool no_key = !sinks && std::all_of(p.begin(), p.end(), [](double s) { return std::isinf(s) && s < 0; });
                if (no_key) {
                    std::fill(p.begin(), p.end(), 0.0);
                } else {
                    softmax_in_place(p, sinks ? &sink : nullptr);
                }
                // The result keeps the heads of one query together: [Dv, n_head, n_q, ne3].
                for (int64_t d = 0; d < v->ne[0]; ++d) {
                    double o = 0.0;
                    for (int64_t j = 0; j < n_kv; ++j) {
                        o += p[size_t(j)] * vals[size_t(j)][size_t(d)];
                    }
                    ev.set(node, d, h, iq, i3, o);
                }
            }
        }
    }
}

} // namespace hexnpu::optest
