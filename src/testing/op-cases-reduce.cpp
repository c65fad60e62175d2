// Reductions and scans: SUM (every element), SUM_ROWS, MEAN, CUMSUM; ARGMAX (each row's largest).
#include "op-case.h"

namespace hexnpu::optest {

void add_reduce_cases(std::vector<op_case> & cases) {
    enum class layout { dense, strided, permuted };
    struct variant {
        shape  ne;
        layout l;
    };
    const variant variants[] = {
        {{10, 5, 4, 3}, layout::dense},    {{33, 1, 1, 1}, layout::dense},   {{4096, 3, 1, 1}, layout::dense},
        {{1, 4, 2, 1}, layout::dense},     {{17, 4, 3, 1}, layout::strided}, {{10, 5, 4, 3}, layout::permuted},
    };
    using reduce_fn = ggml_tensor * (*) (ggml_context *, ggml_tensor *);
    for (const reduce_fn fn : {ggml_sum_rows, ggml_mean, ggml_cumsum, ggml_sum}) {
        for (const variant & v : variants) {
            const char * layout_name = v.l == layout::strided ? ",row_pad=6" : v.l == layout::permuted ? ",permute=[0,2,1,3]" : "";
            cases.push_back({"type=f32,ne=" + shape_str(v.ne) + layout_name, kSumTol, [=](case_graph & g) {
                                 ggml_tensor * a = v.l == layout::strided    ? g.strided_input(GGML_TYPE_F32, v.ne, 6)
                                                   : v.l == layout::permuted ? g.permuted_input(GGML_TYPE_F32, v.ne, {0, 2, 1, 3})
                                                                             : g.input(GGML_TYPE_F32, v.ne);
                                 return fn(g.ctx(), a);
                             }});
        }
    }
    // SUM: the same layouts (above), Gemma 3's vocabulary, F16.
    cases.push_back({"type=f32,ne=[262144,1,1,1]", kSumTol, [](case_graph & g) {
                         return ggml_sum(g.ctx(), g.input(GGML_TYPE_F32, {262144, 1, 1, 1}));
                     }});
    cases.push_back({"type=f16,ne=[33,7,2,1]", for_result_type(kSumTol, GGML_TYPE_F16), [](case_graph & g) {
                         return ggml_sum(g.ctx(), g.input(GGML_TYPE_F16, {33, 7, 2, 1}));
                     }});

    // ARGMAX: continuous keys, many ties (the last of equal largest values wins), a sampler's
    // logits over Gemma 3's vocabulary, rows 6 elements apart.
    struct argmax_variant {
        shape       ne;
        fill_spec   fill;
        const char * what;
        bool        strided;
    };
    const argmax_variant argmaxes[] = {
        {{33, 7, 1, 1}, uniform(-1.0, 1.0), "uniform", false},   {{1, 4, 1, 1}, uniform(-1.0, 1.0), "uniform", false},
        {{4096, 5, 1, 1}, small_integers(-9, 9), "ties", false}, {{100, 3, 1, 1}, small_integers(-2, 2), "ties", true},
        {{262144, 2, 1, 1}, uniform(-30.0, 30.0), "uniform", false}, {{129, 64, 1, 1}, small_integers(-100, -90), "ties", false},
    };
    for (const argmax_variant & v : argmaxes) {
        cases.push_back({"type=f32,ne=" + shape_str(v.ne) + ",keys=" + v.what + (v.strided ? ",row_pad=6" : ""), kIndexTol,
                         [=](case_graph & g) {
                             ggml_tensor * a = v.strided ? g.strided_input(GGML_TYPE_F32, v.ne, 6, v.fill)
                                                         : g.input(GGML_TYPE_F32, v.ne, v.fill);
                             return ggml_argmax(g.ctx(), a);
                         }});
    }
}

} // namespace hexnpu::optest
