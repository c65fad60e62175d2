// CPY (with type conversion, reshaping, into views), CONT and DUP of permuted and strided sources.
#include "op-case.h"

namespace hexnpu::optest {
namespace {

// Every type with a quantizer, as a copy destination.
constexpr ggml_type kStoreTypes[] = {
    GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q4_0,   GGML_TYPE_Q4_1,  GGML_TYPE_Q5_0,
    GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K,   GGML_TYPE_Q4_K,  GGML_TYPE_Q5_K,
    GGML_TYPE_Q6_K, GGML_TYPE_IQ4_NL, GGML_TYPE_MXFP4, GGML_TYPE_Q1_0, GGML_TYPE_Q2_0,
};

void add_cpy(std::vector<op_case> & cases, ggml_type src_type, ggml_type dst_type, shape src_ne, shape dst_ne) {
    cases.push_back({"type_src=" + type_str(src_type) + ",type_dst=" + type_str(dst_type) + ",ne_src=" +
                         shape_str(src_ne) + ",ne_dst=" + shape_str(dst_ne),
                     kExactTol, [=](case_graph & g) {
                         ggml_tensor * src = g.input(src_type, src_ne);
                         ggml_tensor * dst = g.input(dst_type, dst_ne);
                         return ggml_cpy(g.ctx(), src, dst);
                     }});
}

} // namespace

void add_copy_cases(std::vector<op_case> & cases) {
    // Conversion from F32 to every stored type: rows of whole 256-element super-blocks. Block types
    // are written by GGML's reference quantizer on both sides, so even they must match exactly.
    for (const ggml_type t : kStoreTypes) {
        add_cpy(cases, GGML_TYPE_F32, t, {256, 3, 2, 1}, {256, 3, 2, 1});
    }
    // Back to F32 from the half types and from block types (dequantizing copies).
    for (const ggml_type t : {GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, GGML_TYPE_Q4_K}) {
        add_cpy(cases, t, GGML_TYPE_F32, {256, 2, 1, 1}, {256, 2, 1, 1});
    }
    add_cpy(cases, GGML_TYPE_F16, GGML_TYPE_F16, {33, 5, 2, 1}, {33, 5, 2, 1});
    // Beyond fp16's range (65520 and up round past 65504) values become +-inf, in the same places.
    cases.push_back({"type_src=f32,type_dst=f16,ne=[64,4,1,1],range=[-1e5,1e5]", kExactTol, [](case_graph & g) {
                         ggml_tensor * src = g.input(GGML_TYPE_F32, {64, 4, 1, 1}, uniform(-1e5, 1e5));
                         return ggml_cpy(g.ctx(), src, g.input(GGML_TYPE_F16, {64, 4, 1, 1}));
                     }});
    // Same element count, other shape: elements go over in logical order.
    add_cpy(cases, GGML_TYPE_F32, GGML_TYPE_F32, {10, 5, 4, 3}, {20, 15, 2, 1});
    add_cpy(cases, GGML_TYPE_F32, GGML_TYPE_F16, {7, 3, 1, 1}, {21, 1, 1, 1});

    // Permuted and transposed sources.
    for (const ggml_type dst_type : {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_Q8_0}) {
        for (const std::array<int, 4> axes : {std::array<int, 4>{0, 2, 1, 3}, std::array<int, 4>{1, 0, 2, 3}}) {
            const shape ne = {dst_type == GGML_TYPE_Q8_0 ? 64 : 10, 5, 4, 3};  // Q8_0: whole blocks
            cases.push_back({"type_src=f32,type_dst=" + type_str(dst_type) + ",ne=" + shape_str(ne) + ",permute=[" +
                                 std::to_string(axes[0]) + "," + std::to_string(axes[1]) + "," +
                                 std::to_string(axes[2]) + "," + std::to_string(axes[3]) + "]",
                             kExactTol, [=](case_graph & g) {
                                 ggml_tensor * src = g.permuted_input(GGML_TYPE_F32, ne, axes);
                                 ggml_tensor * dst = g.input(dst_type, ne);
                                 return ggml_cpy(g.ctx(), src, dst);
                             }});
        }
    }
    // Into rows 3..6 of a larger F16 tensor (a KV-cache style update): the result is a view.
    cases.push_back({"type_src=f32,type_dst=f16,ne=[64,4,1,1],dst=view of rows 3..6 of [64,10,1,1]", kExactTol,
                     [](case_graph & g) {
                         ggml_tensor * src   = g.input(GGML_TYPE_F32, {64, 4, 1, 1});
                         ggml_tensor * cache = g.input(GGML_TYPE_F16, {64, 10, 1, 1});
                         ggml_tensor * rows  = ggml_view_2d(g.ctx(), cache, 64, 4, cache->nb[1], 3 * cache->nb[1]);
                         return ggml_cpy(g.ctx(), src, rows);
                     }});

    // CONT makes permuted, transposed and strided views dense; DUP copies as they are.
    const std::pair<ggml_type, std::array<int, 4>> cont_cases[] = {
        {GGML_TYPE_F32, {0, 2, 1, 3}}, {GGML_TYPE_F32, {1, 0, 2, 3}}, {GGML_TYPE_F32, {2, 0, 3, 1}},
        {GGML_TYPE_F16, {1, 0, 2, 3}}, {GGML_TYPE_BF16, {0, 2, 1, 3}},
    };
    for (const auto & [type, axes] : cont_cases) {
        const shape ne = {9, 5, 4, 3};
        cases.push_back({"type=" + type_str(type) + ",ne=" + shape_str(ne) + ",permute=[" + std::to_string(axes[0]) +
                             "," + std::to_string(axes[1]) + "," + std::to_string(axes[2]) + "," +
                             std::to_string(axes[3]) + "]",
                         kExactTol, [=](case_graph & g) { return ggml_cont(g.ctx(), g.permuted_input(type, ne, axes)); }});
    }
    cases.push_back({"type=f32,ne=[33,4,3,1],row_pad=7", kExactTol, [](case_graph & g) {
                         return ggml_cont(g.ctx(), g.strided_input(GGML_TYPE_F32, {33, 4, 3, 1}, 7));
                     }});
    cases.push_back({"type=q4_0,ne=[64,4,2,1],row_pad=64", kExactTol, [](case_graph & g) {
                         return ggml_cont(g.ctx(), g.strided_input(GGML_TYPE_Q4_0, {64, 4, 2, 1}, 64));
                     }});
    cases.push_back({"type=f32,ne=[10,5,4,3]", kExactTol,
                     [](case_graph & g) { return ggml_dup(g.ctx(), g.input(GGML_TYPE_F32, {10, 5, 4, 3})); }});
    cases.push_back({"type=f16,ne=[10,5,4,3],permute=[0,2,1,3]", kExactTol, [](case_graph & g) {
                         return ggml_dup(g.ctx(), g.permuted_input(GGML_TYPE_F16, {10, 5, 4, 3}, {0, 2, 1, 3}));
                     }});
}

} // namespace hexnpu::optest
