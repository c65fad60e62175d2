// CONCAT along each dimension, REPEAT by integer factors, PAD with zeros, ROLL in every dimension.
#include "op-case.h"

namespace hexnpu::optest {

void add_layout_cases(std::vector<op_case> & cases) {
    // CONCAT: b is a's shape with 3 in the concatenated dimension.
    struct concat_variant {
        ggml_type type;
        int       dim;
        bool      b_permuted;
    };
    const concat_variant concats[] = {
        {GGML_TYPE_F32, 0, false}, {GGML_TYPE_F32, 1, false}, {GGML_TYPE_F32, 2, false}, {GGML_TYPE_F32, 3, false},
        {GGML_TYPE_F16, 1, false}, {GGML_TYPE_I32, 0, false}, {GGML_TYPE_F32, 2, true},
    };
    for (const concat_variant & c : concats) {
        const shape a_ne = {10, 5, 4, 3};
        shape       b_ne = a_ne;
        b_ne[size_t(c.dim)] = 3;
        const fill_spec fill = c.type == GGML_TYPE_I32 ? small_integers(-1000, 1000) : uniform(-1.0, 1.0);
        cases.push_back({"type=" + type_str(c.type) + ",ne_a=" + shape_str(a_ne) + ",ne_b=" + shape_str(b_ne) +
                             ",dim=" + std::to_string(c.dim) + (c.b_permuted ? ",b=permuted[0,2,1,3]" : ""),
                         kExactTol, [=](case_graph & g) {
                             ggml_tensor * a = g.input(c.type, a_ne, fill);
                             ggml_tensor * b = c.b_permuted ? g.permuted_input(c.type, b_ne, {0, 2, 1, 3}, fill)
                                                            : g.input(c.type, b_ne, fill);
                             return ggml_concat(g.ctx(), a, b, c.dim);
                         }});
    }
    // The gated delta net's convolution input: the kept columns of each channel, then this batch's,
    // the batch a transposed view (its elements conv_dim apart); prompt and decode.
    for (const int64_t T : {int64_t(7), int64_t(1)}) {
        cases.push_back({"type=f32,ne_a=[3,96,1],b=transposed[96," + std::to_string(T) + "],dim=0", kExactTol,
                         [=](case_graph & g) {
                             ggml_tensor * kept = g.input(GGML_TYPE_F32, {3, 96, 1, 1});
                             ggml_tensor * x    = g.input(GGML_TYPE_F32, {96, T, 1, 1});
                             return ggml_concat(g.ctx(), kept, ggml_transpose(g.ctx(), x), 0);
                         }});
    }

    // REPEAT: a tiled to a multiple of its shape.
    struct repeat_variant {
        ggml_type type;
        shape     ne, nr;
        bool      transposed;
    };
    const repeat_variant repeats[] = {
        {GGML_TYPE_F32, {10, 5, 4, 3}, {2, 1, 1, 1}, false}, {GGML_TYPE_F32, {10, 5, 4, 3}, {1, 1, 1, 2}, false},
        {GGML_TYPE_F32, {10, 5, 4, 3}, {2, 3, 1, 2}, false}, {GGML_TYPE_F32, {1, 1, 1, 1}, {33, 2, 3, 1}, false},
        {GGML_TYPE_F16, {10, 5, 4, 3}, {1, 2, 1, 1}, false}, {GGML_TYPE_F32, {7, 5, 1, 1}, {2, 2, 2, 1}, true},
    };
    for (const repeat_variant & r : repeats) {
        cases.push_back({"type=" + type_str(r.type) + ",ne=" + shape_str(r.ne) + ",nr=" + shape_str(r.nr) +
                             (r.transposed ? ",a=transposed" : ""),
                         kExactTol, [=](case_graph & g) {
                             ggml_tensor * a      = r.transposed ? g.permuted_input(r.type, r.ne, {1, 0, 2, 3}) : g.input(r.type, r.ne);
                             ggml_tensor * target = ggml_new_tensor_4d(g.ctx(), r.type, r.ne[0] * r.nr[0], r.ne[1] * r.nr[1],
                                                                       r.ne[2] * r.nr[2], r.ne[3] * r.nr[3]);
                             return ggml_repeat(g.ctx(), a, target);
                         }});
    }

    // PAD: zeros after the end of each dimension.
    struct pad_variant {
        shape                ne;
        std::array<int, 4>   pad;
        bool                 strided;
    };
    const pad_variant pads[] = {
        {{10, 5, 4, 3}, {3, 0, 0, 0}, false},
        {{10, 5, 4, 3}, {1, 2, 3, 4}, false},
        {{33, 1, 1, 1}, {31, 1, 0, 0}, false},
        {{17, 4, 2, 1}, {2, 1, 1, 1}, true},
    };
    for (const pad_variant & p : pads) {
        cases.push_back({"type=f32,ne=" + shape_str(p.ne) + ",pad=" + shape_str({p.pad[0], p.pad[1], p.pad[2], p.pad[3]}) +
                             (p.strided ? ",row_pad=4" : ""),
                         kExactTol, [=](case_graph & g) {
                             ggml_tensor * a = p.strided ? g.strided_input(GGML_TYPE_F32, p.ne, 4) : g.input(GGML_TYPE_F32, p.ne);
                             return ggml_pad(g.ctx(), a, p.pad[0], p.pad[1], p.pad[2], p.pad[3]);
                         }});
    }

    // ROLL: shifts forward and back in each dimension, none, and every dimension at once.
    struct roll_variant {
        shape ne;
        int   s0, s1, s2, s3;
    };
    const roll_variant rolls[] = {
        {{10, 5, 4, 3}, 3, 0, 0, 0},   {{10, 5, 4, 3}, -7, 0, 0, 0}, {{10, 5, 4, 3}, 0, 2, -1, 1},
        {{10, 5, 4, 3}, 4, -3, 2, -2}, {{10, 5, 4, 3}, 0, 0, 0, 0},  {{1000, 3, 1, 1}, 999, -1, 0, 0},
        {{33, 1, 1, 1}, -32, 0, 0, 0}, {{64, 9, 2, 1}, 32, 4, 1, 0},
    };
    for (const roll_variant & r : rolls) {
        cases.push_back({"type=f32,ne=" + shape_str(r.ne) + ",shifts=[" + std::to_string(r.s0) + "," +
                             std::to_string(r.s1) + "," + std::to_string(r.s2) + "," + std::to_string(r.s3) + "]",
                         kExactTol, [=](case_graph & g) {
                             return ggml_roll(g.ctx(), g.input(GGML_TYPE_F32, r.ne), r.s0, r.s1, r.s2, r.s3);
                         }});
    }
}

} // namespace hexnpu::optest
