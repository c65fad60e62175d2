// IM2COL: 2-D and 1-D, F32 and F16 results from F32 and F16 images, strides, paddings and
// dilations, a vision encoder's patch embedding (14x14 patches of a 224x224 RGB image) and a
// speech encoder's 1-D convolution (Whisper's 3-wide kernel over 80 mel channels).
#include "op-case.h"

namespace hexnpu::optest {

void add_im2col_cases(std::vector<op_case> & cases) {
    struct im2col_variant {
        ggml_type in_type, out_type;
        shape     image, kernel;  // [IW, IH, IC, N] / [KW, KH, IC, OC]; 1-D: [IW, IC, N, 1] / [KW, IC, OC, 1]
        int       s0, s1, p0, p1, d0, d1;
        bool      is_2d;
    };
    const im2col_variant variants[] = {
        {GGML_TYPE_F32, GGML_TYPE_F32, {10, 10, 3, 1}, {3, 3, 3, 1}, 1, 1, 1, 1, 1, 1, true},
        {GGML_TYPE_F32, GGML_TYPE_F16, {10, 10, 3, 1}, {3, 3, 3, 1}, 1, 1, 1, 1, 1, 1, true},
        {GGML_TYPE_F16, GGML_TYPE_F16, {10, 10, 3, 1}, {3, 3, 3, 1}, 1, 1, 1, 1, 1, 1, true},
        {GGML_TYPE_F32, GGML_TYPE_F32, {20, 20, 2, 2}, {3, 3, 2, 2}, 3, 1, 3, 0, 3, 1, true},
        {GGML_TYPE_F32, GGML_TYPE_F32, {20, 20, 2, 2}, {3, 3, 2, 2}, 1, 3, 0, 3, 1, 3, true},
        {GGML_TYPE_F32, GGML_TYPE_F16, {5, 5, 1, 32}, {3, 4, 1, 32}, 1, 1, 0, 0, 1, 1, true},     // KH != KW
        {GGML_TYPE_F32, GGML_TYPE_F32, {2, 2, 96, 9}, {2, 2, 96, 16}, 1, 1, 0, 0, 1, 1, true},    // many channels
        {GGML_TYPE_F32, GGML_TYPE_F16, {224, 224, 3, 1}, {14, 14, 3, 64}, 14, 14, 0, 0, 1, 1, true},  // patch embedding
        {GGML_TYPE_F32, GGML_TYPE_F32, {300, 80, 1, 1}, {3, 80, 64, 1}, 1, 0, 1, 0, 1, 0, false},  // Whisper's conv1
        {GGML_TYPE_F32, GGML_TYPE_F16, {150, 64, 2, 1}, {3, 64, 64, 1}, 2, 0, 1, 0, 1, 0, false},  // its conv2, 2 batches
        {GGML_TYPE_F32, GGML_TYPE_F32, {20, 2, 2, 1}, {3, 2, 2, 1}, 3, 0, 3, 0, 3, 0, false},
        {GGML_TYPE_F16, GGML_TYPE_F16, {33, 5, 1, 1}, {4, 5, 7, 1}, 1, 0, 2, 0, 2, 0, false},
    };
    for (const im2col_variant & v : variants) {
        cases.push_back({"in=" + type_str(v.in_type) + ",out=" + type_str(v.out_type) + ",image=" + shape_str(v.image) +
                             ",kernel=" + shape_str(v.kernel) + ",s=" + std::to_string(v.s0) + "/" + std::to_string(v.s1) +
                             ",p=" + std::to_string(v.p0) + "/" + std::to_string(v.p1) + ",d=" + std::to_string(v.d0) +
                             "/" + std::to_string(v.d1) + (v.is_2d ? ",2d" : ",1d"),
                         for_result_type(kExactTol, v.out_type), [=](case_graph & g) {
                             ggml_tensor * kernel = g.input(GGML_TYPE_F16, v.kernel);
                             ggml_tensor * image  = g.input(v.in_type, v.image);
                             return ggml_im2col(g.ctx(), kernel, image, v.s0, v.s1, v.p0, v.p1, v.d0, v.d1, v.is_2d,
                                                v.out_type);
                         }});
    }
}

} // namespace hexnpu::optest
