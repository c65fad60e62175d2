// Reductions (SUM, ARGMAX, SUM_ROWS, MEAN), scans and sorts in double.
#include "ref-eval-ops.h"

#include <algorithm>
#include <numeric>

namespace hexnpu::optest {

void eval_reduce(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (node->op == GGML_OP_SUM) {
        double sum = 0.0;
        for_each_element(a, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) { sum += ev.get(a, i0, i1, i2, i3); });
        ev.set(node, 0, 0, 0, 0, sum);
        return;
    }
    if (node->op == GGML_OP_ARGMAX) {
        // The largest value's index; of equal largest values, the last (GGML's scan keeps updating).
        for_each_row(a, [&](int64_t i1, int64_t, int64_t) {
            const std::vector<double> x   = ev.row(a, i1, 0, 0);
            const double              max = *std::max_element(x.begin(), x.end());
            int64_t                   idx = int64_t(x.size()) - 1;
            while (x[size_t(idx)] != max) {
                --idx;
            }
            ev.set(node, i1, 0, 0, 0, double(idx));
        });
        return;
    }
    for_each_row(a, [&](int64_t i1, int64_t i2, int64_t i3) {
        const std::vector<double> x = ev.row(a, i1, i2, i3);
        if (node->op == GGML_OP_CUMSUM) {
            double sum = 0.0;
            for (int64_t i0 = 0; i0 < a->ne[0]; ++i0) {
                sum += x[size_t(i0)];
                ev.set(node, i0, i1, i2, i3, sum);
            }
            return;
        }
        const double sum = std::accumulate(x.begin(), x.end(), 0.0);
        ev.set(node, 0, i1, i2, i3, node->op == GGML_OP_MEAN ? sum / double(a->ne[0]) : sum);
    });
}

void eval_sort(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    // TOP_K is the head of a descending sort; among equal keys the lower index comes first.
    const bool descending =
        node->op == GGML_OP_TOP_K || ggml_sort_order(ggml_get_op_param<int32_t>(node, 0)) == GGML_SORT_ORDER_DESC;
    for_each_row(a, [&](int64_t i1, int64_t i2, int64_t i3) {
        const std::vector<double> key = ev.row(a, i1, i2, i3);
        std::vector<int64_t>      order(key.size());
        std::iota(order.begin(), order.end(), int64_t(0));
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
            return descending ? key[size_t(x)] > key[size_t(y)] : key[size_t(x)] < key[size_t(y)];
        });
        for (int64_t i0 = 0; i0 < node->ne[0]; ++i0) {
            ev.set(node, i0, i1, i2, i3, double(order[size_t(i0)]));
        }
    });
}

} // namespace hexnpu::optest
