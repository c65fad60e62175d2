// Data movement in double: copies and type conversions, concatenation, repetition, padding, im2col,
// and row gathers and scatters.
#include "ref-eval-ops.h"

#include <span>

namespace hexnpu::optest {

void eval_copy(ref_evaluator & ev, const ggml_tensor * node) {
    // The k-th element of the source in logical order becomes the k-th element of the result,
    // whatever the two shapes (CPY only requires equal element counts). A same-type copy moves
    // bytes: its values are not rounded (or re-quantized) again.
    const std::vector<double> src       = ev.values(node->src[0]);
    const bool                same_type = node->src[0]->type == node->type;
    size_t                    k         = 0;
    for_each_row(node, [&](int64_t i1, int64_t i2, int64_t i3) {
        const auto row = std::span<const double>(src).subspan(k, size_t(node->ne[0]));
        same_type ? ev.copy_row(node, i1, i2, i3, row) : ev.set_row(node, i1, i2, i3, row);
        k += size_t(node->ne[0]);
    });
}

// IM2COL: result element (i0, i1, i2, i3) with i0 = (ic KH + kh) KW + kw is the image's element
// (i1 s0 + kw d0 - p0, i2 s1 + kh d1 - p1) of channel ic, image i3 (1-D: row -p1 of channel ic of
// image i2), zero outside the image.
void eval_im2col(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * img = node->src[1];
    int32_t             p[7];
    for (int k = 0; k < 7; ++k) {
        p[k] = ggml_get_op_param<int32_t>(node, k);
    }
    const bool    is_2d = p[6] == 1;
    const int64_t KW = node->src[0]->ne[0], KH = is_2d ? node->src[0]->ne[1] : 1;
    const int64_t IW = img->ne[0], IH = is_2d ? img->ne[1] : 1;
    for_each_element(node, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const int64_t kw = i0 % KW, kh = i0 / KW % KH, ic = i0 / (KW * KH);
        const int64_t ioh = is_2d ? i2 : 0, n = is_2d ? i3 : i2;
        const int64_t iw = i1 * p[0] + kw * p[4] - p[2], ih = ioh * p[1] + kh * p[5] - p[3];
        const bool    inside = iw >= 0 && iw < IW && ih >= 0 && ih < IH;
        double        value  = 0.0;
        if (inside) {
            value = is_2d ? ev.get(img, iw, ih, ic, n) : ev.get(img, iw, ic, n, 0);
        }
        ev.set(node, i0, i1, i2, i3, value);
    });
}

void eval_layout(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    switch (node->op) {
    case GGML_OP_CONCAT: {
        const ggml_tensor * b   = node->src[1];
        const int           dim = ggml_get_op_param<int32_t>(node, 0);
        for_each_element(node, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            int64_t i[4] = {i0, i1, i2, i3};
            if (i[dim] < a->ne[dim]) {
                ev.set(node, i0, i1, i2, i3, ev.get(a, i0, i1, i2, i3));
                return;
            }
            i[dim] -= a->ne[dim];
            ev.set(node, i0, i1, i2, i3, ev.get(b, i[0], i[1], i[2], i[3]));
        });
        return;
    }
    case GGML_OP_REPEAT:
        for_each_element(node, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            ev.set(node, i0, i1, i2, i3, ev.get(a, i0 % a->ne[0], i1 % a->ne[1], i2 % a->ne[2], i3 % a->ne[3]));
        });
        return;
    case GGML_OP_PAD:
        // op_params hold (left, right) padding per dimension; the source sits after the left pad.
        for_each_element(node, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            const int64_t i[4] = {i0, i1, i2, i3};
            int64_t       j[4];
            bool          inside = true;
            for (int d = 0; d < 4; ++d) {
                j[d]   = i[d] - ggml_get_op_param<int32_t>(node, 2 * d);
                inside = inside && j[d] >= 0 && j[d] < a->ne[d];
            }
            ev.set(node, i0, i1, i2, i3, inside ? ev.get(a, j[0], j[1], j[2], j[3]) : 0.0);
        });
        return;
    case GGML_OP_ROLL:
        // Element i of the result is element i - shift of the source, wrapped, in every dimension.
        for_each_element(node, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            const int64_t i[4] = {i0, i1, i2, i3};
            int64_t       j[4];
            for (int d = 0; d < 4; ++d) {
                const int64_t n = a->ne[d];
                j[d]            = ((i[d] - ggml_get_op_param<int32_t>(node, d)) % n + n) % n;
            }
            ev.set(node, i0, i1, i2, i3, ev.get(a, j[0], j[1], j[2], j[3]));
        });
        return;
    default:
        throw std::logic_error("not a layout op");
    }
}

void eval_rows(ref_evaluator & ev, const ggml_tensor * node) {
    const ggml_tensor * src  = node->src[0];
    const ggml_tensor * rows = node->src[1];
    if (node->op == GGML_OP_GET_ROWS) {
        // Result row (i1, i2, i3) is source row rows[i1, i2, i3] of matrix (i2, i3).
        for_each_row(node, [&](int64_t i1, int64_t i2, int64_t i3) {
            const int64_t r = int64_t(ev.get(rows, i1, i2, i3, 0));
            ev.set_row(node, i1, i2, i3, ev.row(src, r, i2, i3));
        });
        return;
    }
    // SET_ROWS: source row (i1, i2, i3) goes to destination row rows[i1, i2 % .., i3 % ..] of the
    // same matrix; the row ids broadcast over the source's outer dimensions.
    for_each_row(src, [&](int64_t i1, int64_t i2, int64_t i3) {
        const int64_t r = int64_t(ev.get(rows, i1, i2 % rows->ne[1], i3 % rows->ne[2], 0));
        ev.set_row(node, r, i2, i3, ev.row(src, i1, i2, i3));
    });
}

} // namespace hexnpu::optest
