// Row normalizations in double.
#include "ref-eval-ops.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace hexnpu::optest {

void eval_norm(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * a   = node->src[0];
    const double        eps = ggml_get_op_param<float>(node, 0);
    const double        n   = double(a->ne[0]);
    for_each_row(a, [&](int64_t i1, int64_t i2, int64_t i3) {
        std::vector<double> x = ev.row(a, i1, i2, i3);
        double              shift = 0.0, scale = 1.0, sum_sq = 0.0;
        switch (node->op) {
        case GGML_OP_NORM: {  // zero mean, unit variance
            shift = std::accumulate(x.begin(), x.end(), 0.0) / n;
            for (double v : x) {
                sum_sq += (v - shift) * (v - shift);
            }
            scale = 1.0 / std::sqrt(sum_sq / n + eps);
            break;
        }
        case GGML_OP_RMS_NORM:  // unit root mean square, no centering
            for (double v : x) {
                sum_sq += v * v;
            }
            scale = 1.0 / std::sqrt(sum_sq / n + eps);
            break;
        case GGML_OP_L2_NORM:  // unit Euclidean length; eps bounds the divisor, not the square
            for (double v : x) {
                sum_sq += v * v;
            }
            scale = 1.0 / std::max(std::sqrt(sum_sq), eps);
            break;
        default:
            throw std::logic_error("not a norm op");
        }
        for (double & v : x) {
            v = (v - shift) * scale;
        }
        ev.set_row(node, i1, i2, i3, x);
    });
}

} // namespace hexnpu::optest
