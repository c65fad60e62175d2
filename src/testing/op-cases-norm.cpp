// NORM, RMS_NORM, L2_NORM over rows of various lengths, strided rows, rows far from zero mean and
// one-element rows.
#include "op-case.h"

namespace hexnpu::optest {

void add_norm_cases(std::vector<op_case> & cases) {
    using norm_fn = ggml_tensor * (*) (ggml_context *, ggml_tensor *, float);
    struct norm_op {
        norm_fn fn;
        float   eps;
    };
    struct variant {
        shape     ne;
        int64_t   row_pad;
        fill_spec fill;
        const char * what;
    };
    const variant variants[] = {
        {{64, 5, 4, 3}, 0, uniform(-1.0, 1.0), ""},
        {{33, 1, 1, 1}, 0, uniform(-1.0, 1.0), ""},
        {{4096, 2, 1, 1}, 0, uniform(-1.0, 1.0), ""},
        {{65, 3, 2, 1}, 5, uniform(-1.0, 1.0), ""},
        // Mean 10, spread 1: centering must happen before squaring.
        {{128, 4, 1, 1}, 0, uniform(9.0, 11.0), ",values=[9,11]"},
        {{1, 4, 1, 1}, 0, uniform(-1.0, 1.0), ""},
    };
    for (const norm_op op : {norm_op{ggml_norm, 1e-5f}, norm_op{ggml_rms_norm, 1e-6f}, norm_op{ggml_l2_norm, 1e-12f}}) {
        for (const variant & v : variants) {
            cases.push_back({"type=f32,ne=" + shape_str(v.ne) + ",eps=" + num_str(op.eps) +
                                 (v.row_pad ? ",row_pad=" + std::to_string(v.row_pad) : "") + v.what,
                             kSumTol, [=](case_graph & g) {
                                 ggml_tensor * a = v.row_pad ? g.strided_input(GGML_TYPE_F32, v.ne, v.row_pad, v.fill)
                                                             : g.input(GGML_TYPE_F32, v.ne, v.fill);
                                 return op.fn(g.ctx(), a, op.eps);
                             }});
        }
    }
}

} // namespace hexnpu::optest
