// ROPE on F32, F16 or BF16 rows (16-bit rows widened in VTCM; proto/htp-rope.h, htp_rope_kparams): each thread streams its rows DDR -> DMA ->
// VTCM -> HVX -> VTCM -> DMA -> DDR; a block never crosses an (i2, i3) slice, so one position
// (positions[i2], a 4-byte transfer into the block's position slot; the multi-position modes:
// positions[i2 + k ne2], k < 4) and one table of cos/sin serve all its rows.
#include "hvx-arith.h"
#include "hvx-div.h"
#include "hvx-exp.h"
#include "hvx-frexp.h"
#include "hvx-quant-act.h"
#include "hvx-sincos.h"
#include "hvx-tile-dot.h"
#include "ops.h"
#include "stream-rows.h"
#include "proto/htp-rope.h"
#include "proto/htp-status.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::htp_rope_kparams;
using proto::htp_tensor;

constexpr uint32_t ROPE_STREAMS = 3;  // src0, position, dst

// The lane index 0..31 as floats: an inclusive prefix sum of ones (shifts up by 4, 8, .. 64
// bytes), minus one.
HVX_Vector lane_index_sf() {
    HVX_Vector v = hvx_splat_sf(1.0f);
    for (int32_t bytes = 4; bytes <= 64; bytes *= 2) {
        v = hvx_sf_add(v, Q6_V_vlalign_VVR(v, Q6_V_vzero(), bytes));
    }
    return hvx_sf_sub(v, hvx_splat_sf(1.0f));
}

// A block's rows, all at one position p (lane 0 of the position slot). The angles of the pair
// indices j = 32 v + lane (proto/htp-rope.h: p e^(j ln theta_scale), divided by the frequency
// factor, which the DMA put where the angle goes, then freq_scale and YaRN's mix), then their cos
// and sin (times mscale) go to a table in the position slot (n_dims * 4 bytes: within one row's
// stride), then every row rotates its pairs from the table: x0' = x0 cos - x1 sin,
// x1' = x0 sin + x1 cos; elements from n_dims on are copied. Three loops, each with few
// constants, nothing called inside: no vector register spills.
// theta_extrap of pairs 32 v + lane into table[v] (the cos half, free until the last pass). Each
// pass its own function: constants in registers, none live across passes.
__attribute__((noinline)) void rope_extrap(HVX_Vector * table, HVX_Vector p, uint32_t half, const htp_rope_kparams & kp) {
    HVX_Vector j = lane_index_sf();
    for (uint32_t v = 0; v < half; ++v) {
        HVX_Vector       k;
        const HVX_Vector e = hvx_sf_exp_parts(hvx_sf_mul(j, Q6_V_vsplat_R(int32_t(kp.ln_theta_scale))), &k);
        table[v]           = hvx_sf_mul(p, hvx_sf_ldexp(e, k));
        j                  = hvx_sf_add(j, hvx_splat_sf(32.0f));
    }
}

// The multi-position modes' theta_extrap: the powers of theta_scale (rope_extrap at position 1)
// into table[2 half + v], then pair by pair the position the walk picks times its power's entry.
__attribute__((noinline)) void rope_extrap_multi(HVX_Vector * table, uint32_t half, const htp_rope_kparams & kp) {
    const int32_t * slot = reinterpret_cast<const int32_t *>(table);
    const float     p[4] = {float(slot[0]), float(slot[1]), float(slot[2]), float(slot[3])};
    rope_extrap(table + 2 * half, hvx_splat_sf(1.0f), half, kp);
    const float *         powers = reinterpret_cast<const float *>(table + 2 * half);
    float *               extrap = reinterpret_cast<float *>(table);
    proto::htp_rope_walk  walk(kp);
    const uint32_t        pairs = kp.n_dims / 2;
    for (uint32_t j = 0; j < pairs; ++j) {
        uint32_t       power;
        const uint32_t k = walk.next(kp.multi, &power);
        extrap[j]        = p[k] * powers[power];
    }
    for (uint32_t j = pairs; j < 32 * half; ++j) {
        extrap[j] = 0.0f;
    }
}

// theta_extrap divided by the frequency factors, which the DMA put in table[half + v], there.
__attribute__((noinline)) void rope_divide(HVX_Vector * table, uint32_t half) {
    for (uint32_t v = 0; v < half; ++v) {
        table[half + v] = hvx_sf_div(table[v], table[half + v]);
    }
}

// theta from theta_extrap in place: interp = freq_scale extrap, mixed with extrap by YaRN: mix =
// ext_factor (1 - clamp(y, 0, 1)), y = (j - low) / range (non-negative floats order like their
// bits: the clamp is an integer min/max).
__attribute__((noinline)) void rope_theta(HVX_Vector * table, uint32_t half, const htp_rope_kparams & kp) {
    HVX_Vector j = lane_index_sf();
    for (uint32_t v = 0; v < half; ++v) {
        const HVX_Vector extrap = table[half + v];
        HVX_Vector       theta  = hvx_sf_mul(extrap, Q6_V_vsplat_R(int32_t(kp.freq_scale)));
        if (kp.ext_factor != 0) {
            const HVX_Vector y = hvx_sf_mul(hvx_sf_sub(j, Q6_V_vsplat_R(int32_t(kp.corr_low))),
                                            Q6_V_vsplat_R(int32_t(kp.inv_range)));
            const HVX_Vector c = Q6_Vw_vmin_VwVw(Q6_Vw_vmax_VwVw(y, Q6_V_vzero()), hvx_splat_sf(1.0f));
            const HVX_Vector mix =
                hvx_sf_mul(hvx_sf_sub(hvx_splat_sf(1.0f), c), Q6_V_vsplat_R(int32_t(kp.ext_factor)));
            theta = hvx_sf_add(hvx_sf_mul(theta, hvx_sf_sub(hvx_splat_sf(1.0f), mix)), hvx_sf_mul(extrap, mix));
        }
        table[half + v] = theta;
        j               = hvx_sf_add(j, hvx_splat_sf(32.0f));
    }
}

// 32 floats of a row (per_row vectors) from element e on, by aligned loads (nothing past the row
// is read: lanes there are zero).
inline HVX_Vector row_elems_at(const HVX_Vector * row, uint32_t per_row, uint32_t e) {
    const uint32_t   q  = e / 32;
    const HVX_Vector hi = q + 1 < per_row ? row[q + 1] : Q6_V_vzero();
    return Q6_V_valign_VVR(hi, row[q], int32_t((e % 32) * 4));
}

// n_dims not a multiple of 64, or a rotation offset: the row copied, then its pairs rotated 32 at a
// time, read at any element offset and written back with byte-predicated stores of just the
// rotated elements.
__attribute__((noinline)) void rope_rows_any(HVX_Vector * d, const HVX_Vector * s, const HVX_Vector * table,
                                             uint32_t nrows, uint32_t per_row, const htp_rope_kparams & kp) {
    const uint32_t pairs = kp.n_dims / 2;
    const uint32_t half  = (kp.n_dims + 63) / 64;
    const uint32_t off   = kp.n_offs;
    for (uint32_t r = 0; r < nrows; ++r, d += per_row, s += per_row) {
        for (uint32_t v = 0; v < per_row; ++v) {
            d[v] = s[v];
        }
        float * out = reinterpret_cast<float *>(d) + off;
        for (uint32_t v = 0; v < half; ++v) {
            const uint32_t   m = pairs - 32 * v < 32 ? pairs - 32 * v : 32;  // pairs in this chunk
            const HVX_Vector c = table[v], sn = table[half + v];
            HVX_Vector       x0, x1;
            if (kp.neox) {
                x0 = row_elems_at(s, per_row, off + 32 * v);
                x1 = row_elems_at(s, per_row, off + pairs + 32 * v);
            } else {
                const HVX_VectorPair e =
                    Q6_W_vdeal_VVR(row_elems_at(s, per_row, off + 64 * v + 32), row_elems_at(s, per_row, off + 64 * v), -4);
                x0 = Q6_V_lo_W(e), x1 = Q6_V_hi_W(e);
            }
            const HVX_Vector y0 = hvx_sf_sub(hvx_sf_mul(x0, c), hvx_sf_mul(x1, sn));
            const HVX_Vector y1 = hvx_sf_add(hvx_sf_mul(x0, sn), hvx_sf_mul(x1, c));
            if (kp.neox) {
                hvx::store_first_bytes(out + 32 * v, y0, 4 * m);
                hvx::store_first_bytes(out + pairs + 32 * v, y1, 4 * m);
            } else {
                const HVX_VectorPair o = Q6_W_vshuff_VVR(y1, y0, -4);  // interleaved again
                hvx::store_first_bytes(out + 64 * v, Q6_V_lo_W(o), m < 16 ? 8 * m : 128);
                if (m > 16) {
                    hvx::store_first_bytes(out + 64 * v + 32, Q6_V_hi_W(o), 8 * m - 128);
                }
            }
        }
    }
}

__attribute__((noinline)) void rope_rows(HVX_Vector * d, const HVX_Vector * s, HVX_Vector * table, uint32_t nrows,
                                         uint32_t per_row, const htp_rope_kparams & kp) {
    const uint32_t half = (kp.n_dims + 63) / 64;  // vectors of pairs
    if (kp.multi != proto::HTP_ROPE_SINGLE) {
        rope_extrap_multi(table, half, kp);
    } else {
        // The position in every lane: lane 0 kept, the others zeroed, then summed.
        const HVX_Vector p = hvx_w_small_to_sf(hvx_w_allsum(Q6_V_vmux_QVV(Q6_Q_vsetq_R(4), table[0], Q6_V_vzero())));
        rope_extrap(table, p, half, kp);
    }
    if (kp.freq_factors) {
        rope_divide(table, half);
    } else {
        for (uint32_t v = 0; v < half; ++v) {
            table[half + v] = table[v];
        }
    }
    rope_theta(table, half, kp);
    for (uint32_t v = 0; v < half; ++v) {
        HVX_Vector sn, c;
        hvx_sf_sincos(table[half + v], &sn, &c);
        const HVX_Vector m = Q6_V_vsplat_R(int32_t(kp.attn_factor));
        table[v]           = hvx_sf_mul(c, m);
        table[half + v]    = hvx_sf_mul(sn, m);
    }
    if (kp.n_dims % 64 != 0 || kp.n_offs != 0) {
        rope_rows_any(d, s, table, nrows, per_row, kp);
        return;
    }
    for (uint32_t r = 0; r < nrows; ++r, d += per_row, s += per_row) {
        for (uint32_t v = 0; v < half; ++v) {
            const HVX_Vector c = table[v], sn = table[half + v];
            HVX_Vector       x0, x1;
            if (kp.neox) {
                x0 = s[v], x1 = s[v + half];
            } else {
                const HVX_VectorPair e = Q6_W_vdeal_VVR(s[2 * v + 1], s[2 * v], -4);  // evens, odds
                x0 = Q6_V_lo_W(e), x1 = Q6_V_hi_W(e);
            }
            const HVX_Vector y0 = hvx_sf_sub(hvx_sf_mul(x0, c), hvx_sf_mul(x1, sn));
            const HVX_Vector y1 = hvx_sf_add(hvx_sf_mul(x0, sn), hvx_sf_mul(x1, c));
            if (kp.neox) {
                d[v] = y0, d[v + half] = y1;
            } else {
                const HVX_VectorPair o = Q6_W_vshuff_VVR(y1, y0, -4);  // interleaved again
                d[2 * v] = Q6_V_lo_W(o), d[2 * v + 1] = Q6_V_hi_W(o);
            }
        }
        for (uint32_t v = 2 * half; v < per_row; ++v) {
            d[v] = s[v];
        }
    }
}

struct rope_job {
    const htp_op_context * octx;
    htp_rope_kparams       kp;
    const htp_tensor *     src;
    const htp_tensor *     pos;
    const htp_tensor *     ff;  // the frequency factors, or null
    const htp_tensor *     dst;
    eltwise_rows           rows_plan;
};

void rope_thread(uint32_t, uint32_t i, void * data) {
    const rope_job &     job      = *static_cast<const rope_job *>(data);
    const eltwise_rows & plan     = job.rows_plan;
    const dma_addr_t     pos_base = htp_tensor_dma_addr(job.octx->plat, job.pos);
    const dma_addr_t     ff_base  = job.ff ? htp_tensor_dma_addr(job.octx->plat, job.ff) : dma_addr_t(0);
    const uint32_t row_bytes = job.dst->ne[0] * proto::htp_cpy_elem_size(job.kp.row_type);
    const uint32_t ff_bytes  = job.kp.n_dims * 2;  // n_dims / 2 factors, where the angles go
    const uint32_t ff_offset = (job.kp.n_dims + 63) / 64 * 128;
    stream_rows(job.octx, i, job.kp.pipe, job.kp.div_ne1, job.kp.div_ne2, plan, job.src, job.dst, row_bytes, row_bytes,
                job.ff ? 2 : 1,
                [&](dma_queue * q, uint32_t k, const row_block & b) {
                    // One position, or four, ne2 apart.
                    dma_queue_push_ddr_to_vtcm(q, dma_addr_of(plan.slot(i, 1, k)), dma_addr_at(pos_base, b.i2 * 4), 4,
                                               job.dst->ne[2] * 4, 4, job.kp.multi != proto::HTP_ROPE_SINGLE ? 4 : 1,
                                               trace_info(b.row));
                    if (job.ff) {
                        dma_queue_push_ddr_to_vtcm(q, dma_addr_of(plan.slot(i, 1, k) + ff_offset), ff_base, ff_bytes,
                                                   ff_bytes, ff_bytes, 1, trace_info(b.row));
                    }
                },
                [&](uint32_t k, const row_block & b) {
                    HVX_Vector *   d       = reinterpret_cast<HVX_Vector *>(plan.slot(i, 2, k));
                    HVX_Vector *   s       = reinterpret_cast<HVX_Vector *>(plan.slot(i, 0, k));
                    const uint32_t per_row = job.kp.pipe.vtcm_row_stride / 128;
                    rows_to_sf(s, s, b.nrows, per_row, job.kp.row_type);  // 16-bit rows: fp32 in VTCM
                    rope_rows(d, s, reinterpret_cast<HVX_Vector *>(plan.slot(i, 1, k)), b.nrows, per_row, job.kp);
                    rows_from_sf(d, d, b.nrows, per_row, job.kp.row_type);
                });
}

} // namespace

bool guard_rope(const htp_op_context * octx) {
    htp_rope_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * src = octx->src[0];
    const htp_tensor * pos = octx->src[1];
    const htp_tensor * dst = octx->dst[0];
    const uint32_t     elem = proto::htp_cpy_elem_size(kp.row_type);
    return eltwise_pipeline_fits(octx, kp.pipe, ROPE_STREAMS, proto::HTP_ELTWISE_MAX_SLOTS) && same_dims(src, dst) &&
           eltwise_walk_fits(dst, kp.div_ne1, kp.div_ne2) && elem != 0 && src->type == kp.row_type &&
           dst->type == kp.row_type && proto::htp_rows_inside(*src, elem) && proto::htp_rows_apart(*dst, elem) &&
           kp.pipe.row_size == dst->ne[0] * 4 && kp.n_dims % 2 == 0 && kp.n_dims != 0 && kp.n_dims <= dst->ne[0] &&
           kp.n_offs % 2 == 0 && kp.n_offs + kp.n_dims <= dst->ne[0] && kp.multi <= proto::HTP_ROPE_VISION &&
           proto::htp_rope_table_bytes(kp.n_dims, kp.multi) <= proto::htp_eltwise_slot_bytes(kp.pipe) &&
           pos->type == HTP_TYPE_I32 && pos->ne[0] == (kp.multi != proto::HTP_ROPE_SINGLE ? 4 : 1) * dst->ne[2] &&
           pos->ne[0] <= pos->size / 4 &&
           kp.freq_factors == (octx->src[2] != nullptr) &&
           (octx->src[2] == nullptr || (octx->src[2]->type == HTP_TYPE_F32 && octx->src[2]->size >= kp.n_dims * 2));
}

uint32_t op_rope(htp_op_context * octx) {
    rope_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx = octx;
    job.src  = octx->src[0];
    job.pos  = octx->src[1];
    job.ff   = octx->src[2];
    job.dst  = octx->dst[0];
    return run_eltwise_job(octx, job, ROPE_STREAMS, rope_thread);
}

} // namespace hexnpu::htp
