// Matrix products in double, from the dequantized weights.
#include "ref-eval-ops.h"

namespace hexnpu::optest {
namespace {

double dot(const std::vector<double> & x, const std::vector<double> & y) {
    double sum = 0.0;
    for (size_t k = 0; k < x.size(); ++k) {
        sum += x[k] * y[k];
    }
    return sum;
}

// Rows of matrix (i2, i3) of t, each as a vector of ne[0] values.
std::vector<std::vector<double>> matrix_rows(const ref_evaluator & ev, const ggml_tensor * t, int64_t i2, int64_t i3) {
    std::vector<std::vector<double>> rows(size_t(t->ne[1]));
    for (int64_t i1 = 0; i1 < t->ne[1]; ++i1) {
        rows[size_t(i1)] = ev.row(t, i1, i2, i3);
    }
    return rows;
}

} // namespace

void eval_matmul(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * b = node->src[1];
    if (node->op == GGML_OP_MUL_MAT_ID) {
        // Token t's slot e uses expert ids[e, t] on activation row e (or row 0 when b has one row
        // per token, shared by all its experts).
        const ggml_tensor * ids = node->src[2];
        for (int64_t t = 0; t < node->ne[2]; ++t) {
            for (int64_t e = 0; e < node->ne[1]; ++e) {
                const int64_t             expert  = int64_t(ev.get(ids, e, t, 0, 0));
                const std::vector<double> x       = ev.row(b, e % b->ne[1], t, 0);
                for (int64_t i0 = 0; i0 < node->ne[0]; ++i0) {
                    ev.set(node, i0, e, t, 0, dot(ev.row(a, i0, expert, 0), x));
                }
            }
        }
        return;
    }
    // result[i0, i1] = a row i0 . b row i1; a's matrices are shared by ne12/ne02 (ne13/ne03)
    // consecutive matrices of b.
    const int64_t r2 = b->ne[2] / a->ne[2];
    const int64_t r3 = b->ne[3] / a->ne[3];
    for (int64_t i3 = 0; i3 < node->ne[3]; ++i3) {
        for (int64_t i2 = 0; i2 < node->ne[2]; ++i2) {
            const auto a_rows = matrix_rows(ev, a, i2 / r2, i3 / r3);
            const auto b_rows = matrix_rows(ev, b, i2, i3);
            for (int64_t i1 = 0; i1 < node->ne[1]; ++i1) {
                for (int64_t i0 = 0; i0 < node->ne[0]; ++i0) {
                    ev.set(node, i0, i1, i2, i3, dot(a_rows[size_t(i0)], b_rows[size_t(i1)]));
                }
            }
        }
    }
}

} // namespace hexnpu::optest
