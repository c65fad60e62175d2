// SOFT_MAX: scale, F16/F32 masks with -inf entries broadcast over heads and sequences, masks with
// extra rows, ALiBi (power-of-two and other head counts), attention sinks, long rows, large logits.
#include "op-case.h"

namespace hexnpu::optest {
namespace {

struct softmax_variant {
    shape     ne;
    ggml_type mask_type;  // GGML_TYPE_COUNT: no mask
    shape     mask_ne;
    float     scale, max_bias;
    bool      sinks;
    fill_spec fill;
    const char * note = "";
};

} // namespace

void add_softmax_cases(std::vector<op_case> & cases) {
    constexpr ggml_type none = GGML_TYPE_COUNT;
    const fill_spec     logits = uniform(-4.0, 4.0);
    const softmax_variant variants[] = {
        {{16, 3, 4, 2}, none, {}, 1.0f, 0.0f, false, logits},
        {{33, 5, 4, 1}, GGML_TYPE_F32, {33, 5, 1, 1}, 0.125f, 0.0f, false, logits},
        {{33, 5, 4, 1}, GGML_TYPE_F16, {33, 5, 1, 1}, 0.125f, 0.0f, false, logits},
        {{33, 5, 4, 1}, GGML_TYPE_F16, {33, 8, 1, 1}, 1.0f, 0.0f, false, logits},  // mask rows beyond ne1
        {{33, 5, 4, 1}, GGML_TYPE_F32, {33, 8, 1, 1}, 1.0f, 0.0f, false, logits},
        {{33, 5, 4, 1}, GGML_TYPE_F32, {33, 5, 4, 1}, 1.0f, 0.0f, false, logits},  // one mask per head
        {{16, 3, 4, 2}, GGML_TYPE_F16, {16, 3, 4, 1}, 1.0f, 0.0f, false, logits},  // broadcast over dim 3
        {{16, 3, 4, 2}, GGML_TYPE_F32, {16, 3, 1, 2}, 1.0f, 0.0f, false, logits},  // broadcast over dim 2
        {{32, 4, 8, 1}, GGML_TYPE_F16, {32, 4, 1, 1}, 0.5f, 8.0f, false, logits},  // ALiBi, 8 heads
        {{32, 4, 6, 1}, GGML_TYPE_F32, {32, 4, 1, 1}, 0.5f, 8.0f, false, logits},  // ALiBi, 6 heads: m1 slopes
        {{16, 3, 4, 2}, none, {}, 1.0f, 0.0f, true, logits},                       // sinks
        {{33, 5, 4, 1}, GGML_TYPE_F16, {33, 5, 1, 1}, 0.125f, 8.0f, true, logits}, // sinks, mask, ALiBi
        {{4096, 2, 1, 1}, none, {}, 1.0f, 0.0f, false, logits},
        {{64, 3, 1, 1}, GGML_TYPE_F32, {64, 3, 1, 1}, 1.0f, 0.0f, false, uniform(-80.0, 80.0), ",range=[-80,80]"},
        {{1, 4, 1, 1}, none, {}, 1.0f, 0.0f, false, logits},
    };
    for (const softmax_variant & v : variants) {
        std::string params = "type=f32,ne=" + shape_str(v.ne);
        if (v.mask_type != none) {
            params += ",mask=" + type_str(v.mask_type) + ",ne_mask=" + shape_str(v.mask_ne);
        }
        params += ",scale=" + num_str(v.scale) + ",max_bias=" + num_str(v.max_bias) + (v.sinks ? ",sinks" : "") + v.note;
        cases.push_back({params, kSumTol, [=](case_graph & g) {
                             ggml_tensor * a    = g.input(GGML_TYPE_F32, v.ne, v.fill);
                             ggml_tensor * mask = v.mask_type == none ? nullptr : g.input(v.mask_type, v.mask_ne, mask_fill());
                             ggml_tensor * r    = ggml_soft_max_ext(g.ctx(), a, mask, v.scale, v.max_bias);
                             if (v.sinks) {
                                 ggml_soft_max_add_sinks(r, g.input(GGML_TYPE_F32, {v.ne[2], 1, 1, 1}, uniform(-2.0, 2.0)));
                             }
                             return r;
                         }});
    }
}

} // namespace hexnpu::optest
