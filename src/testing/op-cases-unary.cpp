// Element-wise unary ops: the UNARY activations, SQR/SQRT/LOG/SIN/COS, SCALE, CLAMP, LEAKY_RELU, FILL.
#include "op-case.h"

#include <functional>

namespace hexnpu::optest {
namespace {

using unary_build = std::function<ggml_tensor *(ggml_context *, ggml_tensor *)>;

struct unary_op {
    unary_build build;
    fill_spec   fill;    // the domain where the op is well-conditioned
    tolerance   tol;
    bool        wide;    // also run on [-80, 80]: saturation, overflow and underflow of exp
};

// Shapes: a power-of-two row, odd sizes in 4-D, rows 5 elements apart (a strided view), F16.
void add_shapes(std::vector<op_case> & cases, const unary_op & op, const std::string & params = "") {
    struct variant {
        ggml_type type;
        shape     ne;
        int64_t   row_pad;
    };
    const variant variants[] = {
        {GGML_TYPE_F32, {128, 2, 2, 2}, 0},
        {GGML_TYPE_F32, {7, 3, 5, 2}, 0},
        {GGML_TYPE_F32, {33, 4, 1, 1}, 5},
        {GGML_TYPE_F16, {16, 3, 2, 1}, 0},
    };
    for (const variant & v : variants) {
        cases.push_back({"type=" + type_str(v.type) + ",ne=" + shape_str(v.ne) +
                             (v.row_pad ? ",row_pad=" + std::to_string(v.row_pad) : "") + params,
                         for_result_type(op.tol, v.type), [=](case_graph & g) {
                             ggml_tensor * a = v.row_pad ? g.strided_input(v.type, v.ne, v.row_pad, op.fill)
                                                         : g.input(v.type, v.ne, op.fill);
                             return op.build(g.ctx(), a);
                         }});
    }
    if (op.wide) {
        cases.push_back({"type=f32,ne=[64,4,1,1],range=[-80,80]", op.tol, [=](case_graph & g) {
                             return op.build(g.ctx(), g.input(GGML_TYPE_F32, {64, 4, 1, 1}, uniform(-80.0, 80.0)));
                         }});
    }
}

unary_build unary(ggml_unary_op op) {
    return [op](ggml_context * ctx, ggml_tensor * a) { return ggml_unary(ctx, a, op); };
}

} // namespace

void add_unary_cases(std::vector<op_case> & cases) {
    const fill_spec around_zero = uniform(-4.0, 4.0);
    const fill_spec positive    = uniform(0.05, 4.0);  // sqrt and log need x > 0
    // Results that are one rounding of an exact operation: NEG, ABS, RELU, SQR, SQRT.
    const std::pair<ggml_unary_op, unary_op> activations[] = {
        {GGML_UNARY_OP_ABS, {{}, around_zero, kExactTol, false}},
        {GGML_UNARY_OP_NEG, {{}, around_zero, kExactTol, false}},
        {GGML_UNARY_OP_RELU, {{}, around_zero, kExactTol, false}},
        {GGML_UNARY_OP_STEP, {{}, around_zero, kExactTol, false}},
        {GGML_UNARY_OP_TANH, {{}, around_zero, kMathTol, true}},
        {GGML_UNARY_OP_SIGMOID, {{}, around_zero, kMathTol, true}},
        {GGML_UNARY_OP_GELU, {{}, around_zero, kMathTol, true}},
        {GGML_UNARY_OP_GELU_QUICK, {{}, around_zero, kMathTol, true}},
        {GGML_UNARY_OP_GELU_ERF, {{}, around_zero, kMathTol, true}},
        {GGML_UNARY_OP_SILU, {{}, around_zero, kMathTol, true}},
        {GGML_UNARY_OP_EXP, {{}, around_zero, kMathTol, true}},
        // [-30, 30] crosses x = 20, where GGML switches from log(1 + e^x) to x.
        {GGML_UNARY_OP_SOFTPLUS, {{}, uniform(-30.0, 30.0), kMathTol, true}},
    };
    for (auto [op, u] : activations) {
        u.build = unary(op);
        add_shapes(cases, u);
    }
    add_shapes(cases, {ggml_sqr, around_zero, kExactTol, false});
    add_shapes(cases, {ggml_sqrt, positive, kExactTol, false});
    add_shapes(cases, {ggml_log, positive, kMathTol, false});
    // log(0) = -inf: the infinities must come out in the same places.
    cases.push_back({"type=f32,ne=[16,4,1,1],values=integers[0,3]", kMathTol, [](case_graph & g) {
                         return ggml_log(g.ctx(), g.input(GGML_TYPE_F32, {16, 4, 1, 1}, small_integers(0, 3)));
                     }});
    add_shapes(cases, {ggml_sin, uniform(-10.0, 10.0), kMathTol, false});
    add_shapes(cases, {ggml_cos, uniform(-10.0, 10.0), kMathTol, false});

    // SCALE: x * s + b, two roundings.
    for (const auto & [s, b] : {std::pair{2.5f, 0.0f}, std::pair{-0.75f, 1.25f}}) {
        for (const bool strided : {false, true}) {
            const shape ne = strided ? shape{33, 3, 2, 1} : shape{10, 5, 4, 3};
            cases.push_back({"type=f32,ne=" + shape_str(ne) + ",scale=" + num_str(s) + ",bias=" + num_str(b) +
                                 (strided ? ",row_pad=3" : ""),
                             kExactTol, [=](case_graph & g) {
                                 ggml_tensor * a = strided ? g.strided_input(GGML_TYPE_F32, ne, 3) : g.input(GGML_TYPE_F32, ne);
                                 return ggml_scale_bias(g.ctx(), a, s, b);
                             }});
        }
    }
    // CLAMP to [-0.5, 0.75] of values in [-1, 1]: both bounds bite.
    for (const ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16}) {
        cases.push_back({"type=" + type_str(type) + ",ne=[10,5,4,3],min=-0.5,max=0.75", kExactTol, [=](case_graph & g) {
                             return ggml_clamp(g.ctx(), g.input(type, {10, 5, 4, 3}), -0.5f, 0.75f);
                         }});
    }
    cases.push_back({"type=f32,ne=[33,4,2,1],row_pad=3,min=-0.5,max=0.75", kExactTol, [](case_graph & g) {
                         return ggml_clamp(g.ctx(), g.strided_input(GGML_TYPE_F32, {33, 4, 2, 1}, 3), -0.5f, 0.75f);
                     }});
    // LEAKY_RELU: two roundings at most (x * slope, then + 0); a negative slope and zero too.
    for (const float slope : {0.1f, -0.5f, 0.0f}) {
        add_shapes(cases, {[=](ggml_context * ctx, ggml_tensor * a) { return ggml_leaky_relu(ctx, a, slope); },
                           around_zero, kExactTol, false},
                   ",slope=" + num_str(slope));
    }
    // FILL: every element takes the value (exact in F16 too).
    for (const auto & [type, value] : {std::pair{GGML_TYPE_F32, 1.5f}, std::pair{GGML_TYPE_F16, -2.25f},
                                       std::pair{GGML_TYPE_F32, 0.0f}}) {
        cases.push_back({"type=" + type_str(type) + ",ne=[33,5,2,1],value=" + num_str(value), kExactTol,
                         [=](case_graph & g) { return ggml_fill(g.ctx(), g.input(type, {33, 5, 2, 1}), value); }});
    }
}

} // namespace hexnpu::optest
