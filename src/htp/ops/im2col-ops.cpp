// IM2COL (proto/htp-im2col.h): each thread streams its dst rows, one per block. A row's pieces come
// by DMA from the image into slot 0: per kernel row kh inside the image, one 2-D transfer over the
// IC channels (d0 = 1: the columns kw inside the image, side by side; d0 > 1: one per kernel
// element), a token where nothing lands, so every row pushes n_inputs. HVX copies (or narrows to
// F16) slot 0 into slot 1, then the elements outside the image are zeroed there, never in slot 0,
// which only the DMA writes.
#include "eltwise-rows.h"
#include "htp-tensor.h"
#include "hvx-hf-rows.h"
#include "ops.h"
#include "row-walk.h"
#include "stream-dst-rows.h"
#include "proto/htp-im2col.h"
#include "proto/htp-opcodes.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::htp_im2col_kparams;
using proto::htp_tensor;

constexpr uint32_t IM2COL_STREAMS = 2;  // the row's pieces, the row to write back

struct im2col_job {
    const htp_op_context *  octx;
    htp_im2col_kparams      kp;
    proto::htp_im2col_dims  d;
    const htp_tensor *      image;
    const htp_tensor *      dst;
    eltwise_rows            rows_plan;
    uint32_t                in_elem;   // bytes of an image element
    uint32_t                out_elem;  // of a dst element
    uint32_t                nb_ch;     // the image's channel and image strides
    uint32_t                nb_n;
};

// Where dst row b reads: the image n, its first column iw0 = iow s0 - p0 and the kernel row's image
// row ih(kh) = ioh s1 + kh d1 - p1.
struct row_origin {
    uint32_t n;
    int32_t  iw0, ih0;  // ih0: the image row of kh = 0
};

row_origin origin_of(const im2col_job & job, const row_cursor & b) {
    const htp_im2col_kparams & kp  = job.kp;
    const uint32_t             ioh = kp.is_2d ? b.i2 : 0;
    return {kp.is_2d ? b.i3 : b.i2, int32_t(b.i1) * kp.s0 - kp.p0, int32_t(ioh) * kp.s1 - kp.p1};
}

// The kernel columns [lo, hi) of a d0 = 1 row whose image columns lie inside the image.
inline void inside_columns(const im2col_job & job, int32_t iw0, uint32_t * lo, uint32_t * hi) {
    const int32_t kw = int32_t(job.d.KW), iw = int32_t(job.d.IW);
    const int32_t a = iw0 < 0 ? -iw0 : 0, b = iw - iw0 < kw ? iw - iw0 : kw;
    *lo = uint32_t(a < kw ? a : kw);
    *hi = uint32_t(b > a ? b : a);
}

inline bool image_row_inside(const im2col_job & job, int32_t ih) { return ih >= 0 && ih < int32_t(job.d.IH); }

void push_pieces(const im2col_job & job, dma_queue * q, uint8_t * slot, const row_cursor & b) {
    const htp_im2col_kparams & kp   = job.kp;
    const row_origin           o    = origin_of(job, b);
    const uint32_t             e    = job.in_elem;
    const uint32_t             span = job.d.KH * job.d.KW * e;  // one channel's elements in the row
    const dma_addr_t           base = dma_addr_at(htp_tensor_dma_addr(job.octx->plat, job.image), o.n * job.nb_n);
    uint32_t                   lo, hi;  // d0 = 1: the same columns for every kernel row
    inside_columns(job, o.iw0, &lo, &hi);
    for (uint32_t kh = 0; kh < job.d.KH; ++kh) {
        const int32_t ih     = o.ih0 + int32_t(kh) * kp.d1;
        const bool    row_in = image_row_inside(job, ih);
        if (kp.d0 == 1) {
            if (!row_in || lo == hi) {
                dma_queue_push_token(q, slot, trace_info(b.row));
                continue;
            }
            const uint32_t at = uint32_t(ih) * job.image->nb[1] + uint32_t(o.iw0 + int32_t(lo)) * e;
            dma_queue_push_ddr_to_vtcm(q, dma_addr_at(dma_addr_of(slot), (kh * job.d.KW + lo) * e), dma_addr_at(base, at),
                                       span, job.nb_ch, (hi - lo) * e, job.d.IC, trace_info(b.row));
            continue;
        }
        for (uint32_t kw = 0; kw < job.d.KW; ++kw) {
            const int32_t iw = o.iw0 + int32_t(kw) * kp.d0;
            if (!row_in || iw < 0 || iw >= int32_t(job.d.IW)) {
                dma_queue_push_token(q, slot, trace_info(b.row));
                continue;
            }
            const uint32_t at = uint32_t(ih) * job.image->nb[1] + uint32_t(iw) * e;
            dma_queue_push_ddr_to_vtcm(q, dma_addr_at(dma_addr_of(slot), (kh * job.d.KW + kw) * e), dma_addr_at(base, at),
                                       span, job.nb_ch, e, job.d.IC, trace_info(b.row));
        }
    }
}

// Zeroes elements [from, to) of each channel's kernel row kh in the dst row.
template <typename T> void zero_columns(T * row, const im2col_job & job, uint32_t kh, uint32_t from, uint32_t to) {
    for (uint32_t ic = 0; ic < job.d.IC; ++ic) {
        T * run = row + (ic * job.d.KH + kh) * job.d.KW;
        for (uint32_t kw = from; kw < to; ++kw) {
            run[kw] = 0;
        }
    }
}

// The elements of dst row b whose image element lies outside the image: zero.
template <typename T> void zero_outside(T * row, const im2col_job & job, const row_cursor & b) {
    const htp_im2col_kparams & kp = job.kp;
    const row_origin           o  = origin_of(job, b);
    uint32_t                   lo, hi;
    inside_columns(job, o.iw0, &lo, &hi);
    for (uint32_t kh = 0; kh < job.d.KH; ++kh) {
        if (!image_row_inside(job, o.ih0 + int32_t(kh) * kp.d1)) {
            zero_columns(row, job, kh, 0, job.d.KW);
            continue;
        }
        if (kp.d0 == 1) {
            zero_columns(row, job, kh, 0, lo);
            zero_columns(row, job, kh, hi, job.d.KW);
            continue;
        }
        for (uint32_t kw = 0; kw < job.d.KW; ++kw) {
            const int32_t iw = o.iw0 + int32_t(kw) * kp.d0;
            if (iw < 0 || iw >= int32_t(job.d.IW)) {
                zero_columns(row, job, kh, kw, kw + 1);
            }
        }
    }
}

void im2col_thread(uint32_t, uint32_t i, void * data) {
    const im2col_job & job    = *static_cast<const im2col_job *>(data);
    const bool         narrow = job.in_elem == 4 && job.out_elem == 2;  // F32 image, F16 result
    stream_dst_rows(
        job, i, job.kp.n_inputs, [&](dma_queue * q, uint8_t * slot, const row_cursor & b) { push_pieces(job, q, slot, b); },
        [&](HVX_Vector * d, const HVX_Vector * s, uint32_t n_vectors, const row_cursor & b) {
            if (narrow) {
                hvx_sf_row_to_16(d, s, n_vectors, false);
            } else {
                for (uint32_t v = 0; v < n_vectors; ++v) {
                    d[v] = s[v];
                }
            }
            if (job.out_elem == 2) {
                zero_outside(reinterpret_cast<uint16_t *>(d), job, b);
            } else {
                zero_outside(reinterpret_cast<uint32_t *>(d), job, b);
            }
        });
}

} // namespace

bool guard_im2col(const htp_op_context * octx) {
    htp_im2col_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * kernel = octx->src[0];
    const htp_tensor * image  = octx->src[1];
    const htp_tensor * dst    = octx->dst[0];
    if (!proto::htp_im2col_layout_valid(*kernel, *image, *dst, kp.is_2d != 0)) {
        return false;
    }
    const proto::htp_im2col_dims d = proto::htp_im2col_dims_of(*kernel, *image, kp.is_2d != 0);
    // Every transfer inside the image: offsets from the dims and strides the layout check bounded.
    return kp.s0 >= 1 && kp.d0 >= 1 && kp.p0 >= 0 && (kp.is_2d == 0 || (kp.s1 >= 1 && kp.d1 >= 1 && kp.p1 >= 0)) &&
           kp.n_inputs == (kp.d0 == 1 ? d.KH : d.KH * d.KW) && kp.n_inputs <= proto::HTP_IM2COL_MAX_INPUTS &&
           eltwise_pipeline_fits(octx, kp.pipe, IM2COL_STREAMS, proto::HTP_ELTWISE_MAX_SLOTS) && kp.pipe.block_rows == 1 &&
           eltwise_walk_fits(dst, kp.div_ne1, kp.div_ne2) &&
           kp.pipe.row_size == dst->ne[0] * proto::htp_cpy_elem_size(dst->type) &&
           kp.pipe.vtcm_row_stride >= dst->ne[0] * proto::htp_cpy_elem_size(image->type);
}

uint32_t op_im2col(htp_op_context * octx) {
    im2col_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx     = octx;
    job.image    = octx->src[1];
    job.dst      = octx->dst[0];
    job.d        = proto::htp_im2col_dims_of(*octx->src[0], *job.image, job.kp.is_2d != 0);
    job.in_elem  = proto::htp_cpy_elem_size(job.image->type);
    job.out_elem = proto::htp_cpy_elem_size(job.dst->type);
    job.nb_ch    = job.kp.is_2d ? job.image->nb[2] : job.image->nb[1];
    job.nb_n     = job.kp.is_2d ? job.image->nb[3] : job.image->nb[2];
    return run_eltwise_job(octx, job, IM2COL_STREAMS, im2col_thread);
}

} // namespace hexnpu::htp
