// ADD, SUB, MUL, DIV with src1 repeated over src0 in every way GGML allows, and ADD_ID.
#include "op-case.h"

namespace hexnpu::optest {
namespace {

using binary_fn = ggml_tensor * (*) (ggml_context *, ggml_tensor *, ggml_tensor *);

enum class layout { dense, permuted, strided };

struct binary_shape {
    shape  a, b;
    layout a_layout;
};

const char * layout_str(layout l) {
    switch (l) {
    case layout::dense: return "";
    case layout::permuted: return ",a=permuted[0,2,1,3]";
    case layout::strided: return ",a=strided";
    }
    return "";
}

} // namespace

void add_binary_cases(std::vector<op_case> & cases) {
    // b's shape divides a's: equal, repeated rows, repeated over dims 2/3 (heads, sequences),
    // repeated along the row (ne0 = 1), a single value; odd and single-row sizes; non-contiguous a.
    const binary_shape all_shapes[] = {
        {{10, 5, 4, 3}, {10, 5, 4, 3}, layout::dense},  {{10, 5, 4, 3}, {10, 1, 1, 1}, layout::dense},
        {{10, 5, 4, 3}, {10, 5, 1, 3}, layout::dense},  {{10, 5, 4, 3}, {10, 5, 4, 1}, layout::dense},
        {{10, 5, 4, 3}, {1, 5, 4, 3}, layout::dense},   {{10, 5, 4, 3}, {1, 1, 1, 1}, layout::dense},
        {{33, 7, 1, 1}, {33, 1, 1, 1}, layout::dense},  {{129, 1, 1, 1}, {129, 1, 1, 1}, layout::dense},
        {{10, 5, 4, 3}, {10, 1, 4, 1}, layout::permuted}, {{17, 6, 2, 1}, {17, 6, 1, 1}, layout::strided},
    };
    const binary_shape half_shapes[] = {
        {{10, 5, 4, 3}, {10, 5, 4, 3}, layout::dense},
        {{10, 5, 4, 3}, {10, 1, 1, 1}, layout::dense},
        {{33, 7, 2, 3}, {33, 7, 1, 3}, layout::dense},
    };
    // (src0, src1) types; the result has src0's type.
    const std::pair<ggml_type, ggml_type> half_types[] = {
        {GGML_TYPE_F16, GGML_TYPE_F16}, {GGML_TYPE_F16, GGML_TYPE_F32}, {GGML_TYPE_BF16, GGML_TYPE_BF16}};
    for (const binary_fn fn : {ggml_add, ggml_sub, ggml_mul, ggml_div}) {
        // Divisors stay away from zero, where the quotient is ill-conditioned.
        const fill_spec b_fill = fn == ggml_div ? away_from_zero(0.5, 2.0) : uniform(-1.0, 1.0);
        auto add = [&, fn](ggml_type ta, ggml_type tb, const binary_shape & s) {
            cases.push_back({"type_a=" + type_str(ta) + ",type_b=" + type_str(tb) + ",ne_a=" + shape_str(s.a) +
                                 ",ne_b=" + shape_str(s.b) + layout_str(s.a_layout),
                             for_result_type(kExactTol, ta), [=](case_graph & g) {
                                 ggml_tensor * a = s.a_layout == layout::permuted ? g.permuted_input(ta, s.a, {0, 2, 1, 3})
                                                   : s.a_layout == layout::strided ? g.strided_input(ta, s.a, 5)
                                                                                   : g.input(ta, s.a);
                                 return fn(g.ctx(), a, g.input(tb, s.b, b_fill));
                             }});
        };
        for (const binary_shape & s : all_shapes) {
            add(GGML_TYPE_F32, GGML_TYPE_F32, s);
        }
        for (const auto & [ta, tb] : half_types) {
            for (const binary_shape & s : half_shapes) {
                add(ta, tb, s);
            }
        }
    }

    // ADD_ID: a [ne0, n_used, n_tokens] plus the bias row of each token's selected expert.
    struct add_id_shape {
        int64_t ne0, n_used, n_tokens, n_experts;
    };
    for (const add_id_shape s : {add_id_shape{16, 2, 3, 4}, add_id_shape{129, 4, 7, 8}, add_id_shape{64, 1, 1, 2}}) {
        cases.push_back({"type=f32,ne0=" + std::to_string(s.ne0) + ",n_used=" + std::to_string(s.n_used) +
                             ",n_tokens=" + std::to_string(s.n_tokens) + ",n_experts=" + std::to_string(s.n_experts),
                         kExactTol, [=](case_graph & g) {
                             ggml_tensor * a   = g.input(GGML_TYPE_F32, {s.ne0, s.n_used, s.n_tokens, 1});
                             ggml_tensor * b   = g.input(GGML_TYPE_F32, {s.ne0, s.n_experts, 1, 1});
                             ggml_tensor * ids = g.input(GGML_TYPE_I32, {s.n_used, s.n_tokens, 1, 1}, indices(s.n_experts));
                             return ggml_add_id(g.ctx(), a, b, ids);
                         }});
    }
}

} // namespace hexnpu::optest
