// GLU: SWIGLU, GEGLU, REGLU, GEGLU_ERF, GEGLU_QUICK, SWIGLU_OAI and SWIGLU_CLAMP, fused ([x | g] rows, and swapped [g | x]) and with a separate
// gate tensor.
#include "op-case.h"

namespace hexnpu::optest {
namespace {

enum class gate_layout { fused, swapped, separate };

const char * gate_str(gate_layout l) {
    switch (l) {
    case gate_layout::fused: return "fused";
    case gate_layout::swapped: return "fused_swapped";
    case gate_layout::separate: return "separate";
    }
    return "";
}

} // namespace

void add_glu_cases(std::vector<op_case> & cases) {
    const shape shapes[] = {{64, 4, 2, 1}, {33, 3, 1, 1}};  // result shapes; fused inputs are twice as wide
    const ggml_glu_op plain[] = {GGML_GLU_OP_SWIGLU, GGML_GLU_OP_GEGLU, GGML_GLU_OP_REGLU, GGML_GLU_OP_GEGLU_ERF,
                                 GGML_GLU_OP_GEGLU_QUICK};
    for (const ggml_glu_op op : plain) {
        for (const gate_layout layout : {gate_layout::fused, gate_layout::swapped, gate_layout::separate}) {
            for (const shape & ne : shapes) {
                cases.push_back({"type=f32,ne=" + shape_str(ne) + ",gate=" + gate_str(layout), kMathTol,
                                 [=](case_graph & g) {
                                     if (layout == gate_layout::separate) {
                                         return ggml_glu(g.ctx(), g.input(GGML_TYPE_F32, ne, uniform(-4.0, 4.0)),
                                                         g.input(GGML_TYPE_F32, ne, uniform(-4.0, 4.0)), op, false);
                                     }
                                     const shape fused = {2 * ne[0], ne[1], ne[2], ne[3]};
                                     return ggml_glu(g.ctx(), g.input(GGML_TYPE_F32, fused, uniform(-4.0, 4.0)),
                                                     nullptr, op, layout == gate_layout::swapped);
                                 }});
            }
        }
        cases.push_back({"type=f16,ne=[64,4,2,1],gate=fused", for_result_type(kMathTol, GGML_TYPE_F16),
                         [=](case_graph & g) {
                             return ggml_glu(g.ctx(), g.input(GGML_TYPE_F16, {128, 4, 2, 1}, uniform(-4.0, 4.0)),
                                             nullptr, op, false);
                         }});
    }
    // Wide inputs: the activations' exponentials saturate on both sides.
    for (const ggml_glu_op op : plain) {
        cases.push_back({"type=f32,ne=[96,3,1,1],gate=separate,values=[-40,40]", kMathTol, [=](case_graph & g) {
                             return ggml_glu(g.ctx(), g.input(GGML_TYPE_F32, {96, 3, 1, 1}, uniform(-40.0, 40.0)),
                                             g.input(GGML_TYPE_F32, {96, 3, 1, 1}, uniform(-2.0, 2.0)), op, false);
                         }});
    }
    // GPT-OSS parameters; values in [-10, 10] cross both the cap on x and the clamp of the gate.
    const float alpha = 1.702f, limit = 7.0f;
    for (const bool separate : {false, true}) {
        for (const shape & ne : shapes) {
            cases.push_back({"type=f32,ne=" + shape_str(ne) + ",gate=" + (separate ? "separate" : "fused") +
                                 ",alpha=" + num_str(alpha) + ",limit=" + num_str(limit),
                             kMathTol, [=](case_graph & g) {
                                 const fill_spec fill = uniform(-10.0, 10.0);
                                 if (separate) {
                                     return ggml_swiglu_oai(g.ctx(), g.input(GGML_TYPE_F32, ne, fill),
                                                            g.input(GGML_TYPE_F32, ne, fill), alpha, limit);
                                 }
                                 return ggml_swiglu_oai(g.ctx(), g.input(GGML_TYPE_F32, {2 * ne[0], ne[1], ne[2], ne[3]}, fill),
                                                        nullptr, alpha, limit);
                             }});
            // SWIGLU_CLAMP's limit bites on both sides too.
            cases.push_back({"type=f32,ne=" + shape_str(ne) + ",gate=" + (separate ? "separate" : "fused") +
                                 ",limit=" + num_str(limit),
                             kMathTol, [=](case_graph & g) {
                                 const fill_spec fill = uniform(-10.0, 10.0);
                                 if (separate) {
                                     return ggml_swiglu_clamp(g.ctx(), g.input(GGML_TYPE_F32, ne, fill),
                                                              g.input(GGML_TYPE_F32, ne, fill), limit);
                                 }
                                 return ggml_swiglu_clamp(g.ctx(), g.input(GGML_TYPE_F32, {2 * ne[0], ne[1], ne[2], ne[3]}, fill),
                                                          nullptr, limit);
                             }});
        }
    }
    cases.push_back({"type=f16,ne=[64,4,2,1],gate=fused,limit=7", for_result_type(kMathTol, GGML_TYPE_F16),
                     [](case_graph & g) {
                         return ggml_swiglu_clamp(g.ctx(), g.input(GGML_TYPE_F16, {128, 4, 2, 1}, uniform(-10.0, 10.0)),
                                                  nullptr, 7.0f);
                     }});
}

} // namespace hexnpu::optest
