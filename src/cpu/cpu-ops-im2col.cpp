// IM2COL (GGML's): a convolution's input unrolled into rows. dst row (iow, ioh, n) holds, for each
// input channel ic, kernel row kh and column kw, the image element at (iw, ih) = (iow*s0 + kw*d0 -
// p0, ioh*s1 + kh*d1 - p1) of channel ic of image n, or zero outside the image; 1-D: ioh = 0, KH = 1.
// The image F32 or F16 (elements with any strides), the result F32 or F16 (rows apart).
#include "cpu-ops.h"
#include "cpu-tensor.h"


namespace hexnpu::cpu {
namespace {

struct im2col_params {
    int     s0, s1, p0, p1, d0, d1;
    bool    is_2d;
    int64_t KW, KH, IC, IW, IH, N;
};

im2col_params params_of(const ggml_tensor * dst) {
    const ggml_tensor * k   = dst->src[0];
    const ggml_tensor * img = dst->src[1];
    im2col_params       p{};
    p.s0 = ggml_get_op_param<int32_t>(dst, 0), p.s1 = ggml_get_op_param<int32_t>(dst, 1);
    p.p0 = ggml_get_op_param<int32_t>(dst, 2), p.p1 = ggml_get_op_param<int32_t>(dst, 3);
    p.d0 = ggml_get_op_param<int32_t>(dst, 4), p.d1 = ggml_get_op_param<int32_t>(dst, 5);
    p.is_2d = ggml_get_op_param<int32_t>(dst, 6) == 1;
    p.KW    = k->ne[0];
    p.KH    = p.is_2d ? k->ne[1] : 1;
    p.IW    = img->ne[0];
    p.IH    = p.is_2d ? img->ne[1] : 1;
    p.IC    = p.is_2d ? img->ne[2] : img->ne[1];
    p.N     = p.is_2d ? img->ne[3] : img->ne[2];
    return p;
}

} // namespace

bool supports_im2col(const ggml_tensor * op) {
    const ggml_tensor * k   = op->src[0];
    const ggml_tensor * img = op->src[1];
    if (!k || !img || (img->type != GGML_TYPE_F32 && img->type != GGML_TYPE_F16) ||
        (op->type != GGML_TYPE_F32 && op->type != GGML_TYPE_F16) || op->nb[0] != ggml_type_size(op->type)) {
        return false;
    }
    const im2col_params p = params_of(op);
    return p.s0 > 0 && p.d0 > 0 && p.p0 >= 0 && (!p.is_2d || (p.s1 > 0 && p.d1 > 0 && p.p1 >= 0)) &&
           op->ne[0] == p.IC * p.KH * p.KW && (p.is_2d || img->ne[3] == 1);
}

void compute_im2col(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * img = dst->src[1];
    const im2col_params p   = params_of(dst);
    const int64_t       OW = dst->ne[1], OH = p.is_2d ? dst->ne[2] : 1;
    // The image's strides: within a row (nb0), between rows (2-D: nb1), channels, images.
    const size_t nb_ch = p.is_2d ? img->nb[2] : img->nb[1], nb_n = p.is_2d ? img->nb[3] : img->nb[2];
    const size_t esize = ggml_type_size(dst->type);
    // 1-D: ih = -p1 (0 as ggml_conv_1d builds it), so nb[1], the channel stride there, is never taken.
    ctx.parallel_for(OW * OH * p.N, rows_per_chunk(dst->ne[0], 4096), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const int64_t iow = r % OW, ioh = (r / OW) % OH, n = r / (OW * OH);
            // dst row (iow, ioh, n): 1-D results keep n in dim 2.
            uint8_t * out = p.is_2d ? row_ptr(dst, iow, ioh, n) : row_ptr(dst, iow, n, 0);
            for (int64_t ic = 0; ic < p.IC; ++ic) {
                const uint8_t * plane = static_cast<const uint8_t *>(img->data) + ic * nb_ch + n * nb_n;
                for (int64_t kh = 0; kh < p.KH; ++kh) {
                    const int64_t ih = ioh * p.s1 + kh * p.d1 - p.p1;
                    for (int64_t kw = 0; kw < p.KW; ++kw) {
                        const int64_t iw    = iow * p.s0 + kw * p.d0 - p.p0;
                        const bool    in    = ih >= 0 && ih < p.IH && iw >= 0 && iw < p.IW;
                        const float   value = in ? load_float(img->type, plane + ih * img->nb[1] + iw * img->nb[0]) : 0.0f;
                        store_float(dst->type, out + ((ic * p.KH + kh) * p.KW + kw) * esize, value);
                    }
                }
            }
        }
    });
}

} // namespace hexnpu::cpu
