#include "op-case.h"

#include "hexnpu/ggml-types.h"

#include <algorithm>
#include <cstdio>

namespace hexnpu::optest {

ggml_tensor * case_graph::input(ggml_type type, shape ne, fill_spec fill) {
    ggml_tensor * t = ggml_new_tensor(&ctx_, type, 4, ne.data());
    t->flags |= GGML_TENSOR_FLAG_INPUT;
    inputs_.emplace_back(t, fill);
    return t;
}

ggml_tensor * case_graph::strided_input(ggml_type type, shape ne, int64_t row_pad, fill_spec fill) {
    ggml_tensor * base = input(type, {ne[0] + row_pad, ne[1], ne[2], ne[3]}, fill);
    // Start inside the padding too, so view offsets are exercised along with the strides.
    const int64_t blck   = ggml_blck_size(type);
    const size_t  offset = ggml_row_size(type, row_pad / 2 / blck * blck);
    return ggml_view_4d(&ctx_, base, ne[0], ne[1], ne[2], ne[3], base->nb[1], base->nb[2], base->nb[3], offset);
}

ggml_tensor * case_graph::permuted_input(ggml_type type, shape ne, std::array<int, 4> axes, fill_spec fill) {
    // ggml_permute moves dimension i to position axes[i], so memory dimension i holds ne[axes[i]].
    shape stored;
    for (int i = 0; i < 4; ++i) {
        stored[size_t(i)] = ne[size_t(axes[size_t(i)])];
    }
    ggml_tensor * base = input(type, stored, fill);
    return ggml_permute(&ctx_, base, axes[0], axes[1], axes[2], axes[3]);
}

std::string shape_str(const shape & ne) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "[%lld,%lld,%lld,%lld]", (long long) ne[0], (long long) ne[1], (long long) ne[2],
                  (long long) ne[3]);
    return buf;
}

std::string type_str(ggml_type type) { return ggml_type_name(type); }

std::string num_str(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

tolerance for_result_type(tolerance tol, ggml_type type) {
    const double ulp_nmse = type == GGML_TYPE_F16 ? 1e-6 : type == GGML_TYPE_BF16 ? 6e-5 : 0.0;
    return {std::max(tol.vs_f64, ulp_nmse), std::max(tol.vs_cpu, ulp_nmse)};
}

const std::vector<op_case> & op_case_catalog() {
    static const std::vector<op_case> catalog = [] {
        std::vector<op_case> cases;
        add_copy_cases(cases);
        add_binary_cases(cases);
        add_unary_cases(cases);
        add_glu_cases(cases);
        add_reduce_cases(cases);
        add_sort_cases(cases);
        add_layout_cases(cases);
        add_im2col_cases(cases);
        add_rows_cases(cases);
        add_norm_cases(cases);
        add_matmul_cases(cases);
        add_softmax_cases(cases);
        add_rope_cases(cases);
        add_flash_attn_cases(cases);
        add_linear_attn_cases(cases);
        return cases;
    }();
    return catalog;
}

} // namespace hexnpu::optest
