// NORM, RMS_NORM, L2_NORM over rows of various lengths, strided rows, rows far from zero mean and
// one-element rows; RMS_NORM times a weight (a MUL the HTP backend fuses with the norm).
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
    // The norm's weight as models have it (one row) and repeated over some dims.
    struct weighted {
        shape   ne, weight;
        int64_t row_pad;
    };
    for (const weighted & v : {weighted{{64, 5, 4, 3}, {64, 1, 1, 1}, 0}, weighted{{4096, 2, 1, 1}, {4096, 1, 1, 1}, 0},
                               weighted{{65, 3, 2, 1}, {65, 1, 2, 1}, 5}, weighted{{640, 6, 1, 1}, {640, 6, 1, 1}, 0}}) {
        cases.push_back({"type=f32,ne=" + shape_str(v.ne) + ",weight=" + shape_str(v.weight) + ",eps=1e-06" +
                             (v.row_pad ? ",row_pad=" + std::to_string(v.row_pad) : "") + ",of=rms_norm",
                         kSumTol, [=](case_graph & g) {
                             ggml_tensor * a = v.row_pad ? g.strided_input(GGML_TYPE_F32, v.ne, v.row_pad, uniform(-1.0, 1.0))
                                                         : g.input(GGML_TYPE_F32, v.ne, uniform(-1.0, 1.0));
                             ggml_tensor * w = g.input(GGML_TYPE_F32, v.weight, uniform(-2.0, 2.0));
                             return ggml_mul(g.ctx(), ggml_rms_norm(g.ctx(), a, 1e-6f), w);
                         }});
    }
    // Qwen3.5's gated attention: Q's heads a view of the projection that interleaves them with
    // their gates (each head's row 2 hd apart), normed and weighted; prompts of 64 and 66 tokens.
    for (const int64_t T : {int64_t(64), int64_t(66)}) {
        cases.push_back({"type=f32,q=view[64,4," + std::to_string(T) + "] of [512," + std::to_string(T) +
                             "],weight=[64],eps=1e-06,of=rms_norm",
                         kSumTol, [=](case_graph & g) {
                             ggml_tensor * qg = g.input(GGML_TYPE_F32, {512, T, 1, 1}, uniform(-1.0, 1.0));
                             ggml_tensor * q  = ggml_view_3d(g.ctx(), qg, 64, 4, T, 512, 2048, 0);
                             ggml_tensor * w  = g.input(GGML_TYPE_F32, {64, 1, 1, 1}, uniform(-2.0, 2.0));
                             return ggml_mul(g.ctx(), ggml_rms_norm(g.ctx(), q, 1e-6f), w);
                         }});
    }
}

} // namespace hexnpu::optest
