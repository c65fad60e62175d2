// ARGSORT (ascending, descending) and TOP_K over distinct keys, continuous random keys and keys
// with many ties. Compared exactly (runner: ties may come in any order).
#include "op-case.h"

namespace hexnpu::optest {
namespace {

struct sort_input {
    shape       ne;
    fill_spec   fill;
    const char * what;
};

const sort_input kInputs[] = {
    {{16, 10, 1, 1}, distinct_values(), "distinct"},
    {{33, 3, 2, 1}, distinct_values(), "distinct"},
    {{1000, 2, 1, 1}, distinct_values(), "distinct"},
    {{64, 5, 1, 1}, uniform(-1.0, 1.0), "uniform"},
    {{20, 4, 1, 1}, small_integers(-3, 3), "ties"},
    {{1, 3, 1, 1}, distinct_values(), "distinct"},
    {{4096, 4, 1, 1}, small_integers(-50, 50), "ties"},
    {{262144, 1, 1, 1}, uniform(-30.0, 30.0), "uniform"},  // a sampler's logits over Gemma 3's vocabulary
    {{65536, 2, 1, 1}, small_integers(-2, 2), "ties"},      // TOP_K: too many vectors tie on the threshold
};

} // namespace

void add_sort_cases(std::vector<op_case> & cases) {
    for (const ggml_sort_order order : {GGML_SORT_ORDER_ASC, GGML_SORT_ORDER_DESC}) {
        for (const sort_input & in : kInputs) {
            cases.push_back({"type=f32,ne=" + shape_str(in.ne) + ",keys=" + in.what +
                                 ",order=" + (order == GGML_SORT_ORDER_ASC ? "asc" : "desc"),
                             kExactTol, [=](case_graph & g) {
                                 return ggml_argsort(g.ctx(), g.input(GGML_TYPE_F32, in.ne, in.fill), order);
                             }});
        }
    }
    const int top_k[] = {1, 5, 40, 10, 7, 1, 100, 40, 10};
    static_assert(std::size(top_k) == std::size(kInputs));
    for (size_t i = 0; i < std::size(kInputs); ++i) {
        const sort_input & in = kInputs[i];
        const int          k  = top_k[i];
        cases.push_back({"type=f32,ne=" + shape_str(in.ne) + ",keys=" + in.what + ",k=" + std::to_string(k), kExactTol,
                         [=](case_graph & g) { return ggml_top_k(g.ctx(), g.input(GGML_TYPE_F32, in.ne, in.fill), k); }});
    }
    // k == ne0: every index, in any order of equal keys.
    cases.push_back({"type=f32,ne=[8,2,1,1],keys=distinct,k=8", kExactTol, [](case_graph & g) {
                         return ggml_top_k(g.ctx(), g.input(GGML_TYPE_F32, {8, 2, 1, 1}, distinct_values()), 8);
                     }});
}

} // namespace hexnpu::optest
