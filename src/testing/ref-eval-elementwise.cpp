// Element-wise ops in double: binary ops with src1 repeated over src0, ADD_ID, unary functions and
// the gated linear units.
#include "ref-eval-ops.h"

#include <algorithm>
#include <stdexcept>

namespace hexnpu::optest {
namespace {

double apply_binary(ggml_op op, double a, double b) {
    switch (op) {
    case GGML_OP_ADD: return a + b;
    case GGML_OP_SUB: return a - b;
    case GGML_OP_MUL: return a * b;
    case GGML_OP_DIV: return a / b;
    default: throw std::logic_error("not a binary op");
    }
}

double apply_unary(ggml_unary_op op, double x) {
    switch (op) {
    case GGML_UNARY_OP_ABS: return std::fabs(x);
    case GGML_UNARY_OP_NEG: return -x;
    case GGML_UNARY_OP_TANH: return std::tanh(x);
    case GGML_UNARY_OP_RELU: return x > 0.0 ? x : 0.0;
    case GGML_UNARY_OP_SIGMOID: return sigmoid(x);
    case GGML_UNARY_OP_GELU: return gelu_tanh(x);
    case GGML_UNARY_OP_GELU_QUICK: return x * sigmoid(1.702 * x);
    case GGML_UNARY_OP_SILU: return silu(x);
    case GGML_UNARY_OP_EXP: return std::exp(x);
    case GGML_UNARY_OP_GELU_ERF: return gelu_erf(x);
    // log(1 + e^x), written so that e^x cannot overflow for large x.
    case GGML_UNARY_OP_SOFTPLUS: return x > 0.0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    case GGML_UNARY_OP_STEP: return x > 0.0 ? 1.0 : 0.0;
    default: throw std::invalid_argument("float64 evaluator: unknown unary op");
    }
}

double apply_elementwise(const ggml_tensor * node, double x) {
    switch (node->op) {
    case GGML_OP_SQR: return x * x;
    case GGML_OP_SQRT: return std::sqrt(x);
    case GGML_OP_LOG: return std::log(x);
    case GGML_OP_SIN: return std::sin(x);
    case GGML_OP_COS: return std::cos(x);
    case GGML_OP_SCALE:
        return x * double(ggml_get_op_param<float>(node, 0)) + double(ggml_get_op_param<float>(node, 1));
    case GGML_OP_CLAMP:  // GGML applies max after min: with min > max every value becomes min
        return std::max(std::min(x, double(ggml_get_op_param<float>(node, 1))), double(ggml_get_op_param<float>(node, 0)));
    case GGML_OP_FILL: return double(ggml_get_op_param<float>(node, 0));
    case GGML_OP_LEAKY_RELU: return x > 0.0 ? x : x * double(ggml_get_op_param<float>(node, 0));
    case GGML_OP_UNARY: return apply_unary(ggml_unary_op(ggml_get_op_param<int32_t>(node, 0)), x);
    default: throw std::logic_error("not an element-wise op");
    }
}

} // namespace

void eval_binary(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * b = node->src[1];
    if (node->op == GGML_OP_ADD_ID) {
        // a[:, i1, i2] + b[:, ids[i1, i2]]: one bias row per selected expert.
        const ggml_tensor * ids = node->src[2];
        for_each_element(node, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            const int64_t expert = int64_t(ev.get(ids, i1, i2, 0, 0));
            ev.set(node, i0, i1, i2, i3, ev.get(a, i0, i1, i2, i3) + ev.get(b, i0, expert, 0, 0));
        });
        return;
    }
    for_each_element(node, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const double y = ev.get(b, i0 % b->ne[0], i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3]);
        ev.set(node, i0, i1, i2, i3, apply_binary(node->op, ev.get(a, i0, i1, i2, i3), y));
    });
}

void eval_unary(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    for_each_element(node, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        ev.set(node, i0, i1, i2, i3, apply_elementwise(node, ev.get(a, i0, i1, i2, i3)));
    });
}

void eval_glu(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * a       = node->src[0];
    const ggml_tensor * gate    = node->src[1];
    const auto          op      = ggml_glu_op(ggml_get_op_param<int32_t>(node, 0));
    const bool          swapped = ggml_get_op_param<int32_t>(node, 1) != 0;
    const int64_t       nc      = node->ne[0];
    // Fused rows hold [x | g]; swapped rows hold [g | x]. A separate gate tensor is never swapped.
    const int64_t x_offset = gate || !swapped ? 0 : nc;
    const int64_t g_offset = gate ? 0 : (swapped ? 0 : nc);
    const ggml_tensor * g_src = gate ? gate : a;
    for_each_element(node, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const double x = ev.get(a, x_offset + i0, i1, i2, i3);
        const double g = ev.get(g_src, g_offset + i0, i1, i2, i3);
        double       y = 0.0;
        switch (op) {
        case GGML_GLU_OP_SWIGLU: y = silu(x) * g; break;
        case GGML_GLU_OP_GEGLU: y = gelu_tanh(x) * g; break;
        case GGML_GLU_OP_REGLU: y = (x > 0.0 ? x : 0.0) * g; break;
        case GGML_GLU_OP_GEGLU_ERF: y = gelu_erf(x) * g; break;
        case GGML_GLU_OP_GEGLU_QUICK: y = x * sigmoid(1.702 * x) * g; break;
        case GGML_GLU_OP_SWIGLU_CLAMP: {
            const double limit = ggml_get_op_param<float>(node, 3);
            y                  = silu(std::min(x, limit)) * std::clamp(g, -limit, limit);
            break;
        }
        case GGML_GLU_OP_SWIGLU_OAI: {
            // GPT-OSS: x capped above at limit, the gate clamped to [-limit, limit] and offset by one.
            const double alpha = ggml_get_op_param<float>(node, 2);
            const double limit = ggml_get_op_param<float>(node, 3);
            const double xc    = std::min(x, limit);
            const double gc    = std::clamp(g, -limit, limit);
            y                  = xc * sigmoid(alpha * xc) * (gc + 1.0);
            break;
        }
        default: throw std::invalid_argument("float64 evaluator: unknown GLU op");
        }
        ev.set(node, i0, i1, i2, i3, y);
    });
}

} // namespace hexnpu::optest
