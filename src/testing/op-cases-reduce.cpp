// Row reductions and scans: SUM_ROWS, MEAN, CUMSUM.
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
    for (const reduce_fn fn : {ggml_sum_rows, ggml_mean, ggml_cumsum}) {
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
}

} // namespace hexnpu::optest
