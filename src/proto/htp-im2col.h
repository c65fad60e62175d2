// kernel_params of IM2COL (htp/ops/im2col-ops.cpp) and their host preparation.
//
// GGML's IM2COL: dst row (iow, ioh, n) (1-D: (iow, n)) holds, for each input channel ic, kernel row
// kh and column kw (element (ic KH + kh) KW + kw), the image's element (iow s0 + kw d0 - p0,
// ioh s1 + kh d1 - p1) of channel ic of image n, or zero outside the image (1-D: KH = 1, the image
// row -p1). One dst row per block (stream-dst-rows.h): the row's pieces come by DMA straight from the
// image into slot 0, one 2-D transfer per kernel row over all the channels (d0 = 1: the kernel row's
// columns inside the image, side by side), or per kernel element (d0 > 1); HVX copies (F16 result
// from an F32 image: converts) slot 0 into slot 1 and zeroes the elements outside the image; slot 1
// goes back to the dst row. Image: F32 or F16, its elements in order along a row, rows, channels and
// images anywhere; result: F32 or F16 (F16 image: F16 result, as GGML), rows apart.
#pragma once

#include "fastdiv.h"
#include "proto/htp-eltwise.h"
#include "proto/htp-layout.h"
#include "htp-msg.h"
#include "htp-opcodes.h"

#include <stdint.h>

namespace hexnpu::proto {

// Transfers per dst row at most: n_slots (3) blocks of them stay within a thread's DMA queue.
inline constexpr uint32_t HTP_IM2COL_MAX_INPUTS = 36;

struct htp_im2col_kparams {
    htp_eltwise_pipeline pipe;      // over dst's rows: slots of ne0 source elements, row_size = ne0 * dst elem
    fastdiv_values       div_ne1;   // flat dst row -> (iow, ioh, n) (1-D: (iow, n, 0))
    fastdiv_values       div_ne2;
    int32_t              s0, s1, p0, p1, d0, d1;
    uint32_t             is_2d;
    uint32_t             n_inputs;  // transfers per row: KH (d0 = 1) or KH KW
};
static_assert(sizeof(htp_im2col_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// The kernel's and image's shape as IM2COL reads them: kernel [KW, KH, ..], image [IW, IH, IC, N]
// (1-D: kernel [KW, ..], image [IW, IC, N]).
struct htp_im2col_dims {
    uint32_t KW, KH, IW, IH, IC, N;
};
constexpr htp_im2col_dims htp_im2col_dims_of(const htp_tensor & kernel, const htp_tensor & image, bool is_2d) {
    return is_2d ? htp_im2col_dims{kernel.ne[0], kernel.ne[1], image.ne[0], image.ne[1], image.ne[2], image.ne[3]}
                 : htp_im2col_dims{kernel.ne[0], 1, image.ne[0], 1, image.ne[1], image.ne[2]};
}

// The layout the kernel runs on (compares only: the NPU's guard checks it too). OW and OH come from
// dst; each row of it is IC KH KW elements.
constexpr bool htp_im2col_layout_valid(const htp_tensor & kernel, const htp_tensor & image, const htp_tensor & dst,
                                       bool is_2d) {
    const htp_im2col_dims d   = htp_im2col_dims_of(kernel, image, is_2d);
    const uint32_t        in  = htp_cpy_elem_size(image.type);
    const uint32_t        out = htp_cpy_elem_size(dst.type);
    const bool types = (image.type == HTP_TYPE_F32 || image.type == HTP_TYPE_F16) &&
                       (dst.type == HTP_TYPE_F32 || dst.type == HTP_TYPE_F16) &&
                       (image.type == HTP_TYPE_F32 || dst.type == HTP_TYPE_F16);
    return types && d.KW != 0 && d.KH != 0 && uint64_t(d.IC) * d.KH * d.KW == dst.ne[0] && dst.ne[0] <= (1u << 24) &&
           (is_2d ? dst.ne[3] == d.N : dst.ne[2] == d.N && dst.ne[3] == 1 && image.ne[3] == 1) &&
           image.nb[0] == in && htp_elems_inside(image, in) && htp_rows_apart(dst, out);
}

// params: GGML's op_params (s0, s1, p0, p1, d0, d1, is_2D); src0 the kernel (its shape only),
// src1 the image.
inline htp_verdict prepare_im2col_kparams(const htp_tensor & kernel, const htp_tensor & image, const htp_tensor & dst,
                                          const int32_t params[HTP_OP_MAX_PARAMS], uint32_t n_threads,
                                          uint32_t vtcm_size, htp_im2col_kparams * out) {
    const bool is_2d = params[6] == 1;
    if (!htp_im2col_layout_valid(kernel, image, dst, is_2d)) {
        return htp_refuse("the NPU IM2COL takes F32 or F16 images with their rows' elements in order, an F32 or F16 "
                          "result (F16 from F16) of IC*KH*KW-element rows");
    }
    const int32_t s0 = params[0], s1 = params[1], p0 = params[2], p1 = params[3], d0 = params[4], d1 = params[5];
    auto within = [](int32_t v, int32_t lo) { return v >= lo && v <= 65535; };
    // 1-D: s1 and d1 unused; p1 puts the image row at -p1 (all zeros unless 0), as in GGML.
    if (!within(s0, 1) || !within(d0, 1) || !within(p0, 0) || p1 < -65535 || p1 > 65535 ||
        (is_2d && (!within(s1, 1) || !within(d1, 1) || p1 < 0))) {
        return htp_refuse("a stride or dilation below 1, a negative padding, or one above 65535");
    }
    const htp_im2col_dims d        = htp_im2col_dims_of(kernel, image, is_2d);
    const uint32_t        n_inputs = d0 == 1 ? d.KH : d.KH * d.KW;
    if (d.KH > HTP_IM2COL_MAX_INPUTS || n_inputs > HTP_IM2COL_MAX_INPUTS) {
        return htp_refuse("more kernel rows (d0 = 1) or kernel elements (d0 > 1) than 36 transfers per row");
    }
    htp_im2col_kparams kp{};
    const uint32_t     in = htp_cpy_elem_size(image.type);
    if (const htp_verdict v = htp_dst_row_plan(dst, n_threads, vtcm_size, &kp.pipe, &kp.div_ne1, &kp.div_ne2, in); !v) {
        return v;
    }
    kp.pipe.row_size = dst.ne[0] * htp_cpy_elem_size(dst.type);
    kp.s0 = s0, kp.s1 = s1, kp.p0 = p0, kp.p1 = p1, kp.d0 = d0, kp.d1 = d1;
    kp.is_2d    = is_2d;
    kp.n_inputs = n_inputs;
    *out        = kp;
    return HTP_TAKEN;
}

inline htp_verdict prepare_im2col_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    htp_im2col_kparams kp{};
    return htp_store_kparams(prepare_im2col_kparams(*a.src[0], *a.src[1], *a.dst, a.params, a.n_threads, a.vtcm_size, &kp),
                             kp, kparams);
}

} // namespace hexnpu::proto
