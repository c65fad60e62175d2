// GATED_DELTA_NET for prompts on the HMX unit (proto/htp-gdn-hmx.h): the chunked delta rule, items
// (head, sequence) in lock step per chunk of 32 tokens. Phases, each one work_queue_run or one HMX
// job for the whole group: load (DMA in, Q/K/Kᵀ/N0 tiles), HMX 1 (K Kᵀ, Q Kᵀ, K N0, Q N0), solve
// (decays, A, R, U by forward substitution, P, U and Kᵀ diag(w) tiles), HMX 2 (P U, the update),
// finish (outputs out by DMA, the state updated; after the last chunk the state out by DMA).
// Every product is made exact to fp32's order by hi/lo operands and a two-pass store (the header).
#include "hmx-queue.h"
#include "hmx.h"
#include "htp-tensor.h"
#include "hvx-arith.h"
#include "hvx-exp.h"
#include "hvx-hf-rows.h"
#include "hvx-hmx-tiles.h"
#include "hvx-transpose.h"
#include "item-job.h"
#include "ops.h"
#include "trace.h"
#include "vtcm.h"
#include "proto/htp-gdn-hmx.h"
#include "proto/htp-status.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::HTP_GDN_HMX_TILE;
using proto::htp_gdn_hmx_kparams;
using proto::htp_tensor;

constexpr uint32_t TILE = HTP_GDN_HMX_TILE;

// The per-token vectors of an item (lane t = token t of the chunk), in L.vecs.
enum gdn_vector : uint32_t {
    V_G,      // g (0 past the chunk's tokens)
    V_BETA,   // beta (0 past them)
    V_CUM,    // G: the running sum of g
    V_GAMMA,  // e^G
    V_W,      // e^(G_31 - G): each token's weight in the update
    V_FQ,     // Q's rows' inverse scale factors
    V_FK,     // K's
    V_FP,     // P's
    V_RK,     // gamma fk e_s: the row factors of K N0's tiles
    V_RQ,     // gamma fq e_s: Q N0's
    V_RP,     // fp e_u: P U's
    V_KW,     // w fk: Kᵀ's columns' factors in the update
    V_ONE,    // 1.0 (the rows' factors where there are none)
    V_SCAL,   // lane 0: e_s (N0's inverse scale), 1: e_u (U's), 2: gamma_31
    V_SPLAT,  // the splat of N0's or U's scale while their tiles are made
};
static_assert(V_SPLAT < proto::HTP_GDN_HMX_VECS);

struct gdn_hmx_item : proto::htp_gdn_item_offsets {
    uint8_t * mem;  // its VTCM
};

struct gdn_hmx_job {
    const htp_op_context *          octx;
    htp_gdn_hmx_kparams             kp;
    proto::htp_gdn_hmx_item_layout  L;
    const htp_tensor *              src[6];  // q, k, v, g, beta, state
    const htp_tensor *              dst;
    hmx_unit *                      unit;
    uint8_t *                       hdr;  // -I (an activation tile), then the scale/bias blocks 1 and 2^11
    gdn_hmx_item                    items[proto::HTP_GDN_HMX_MAX_GROUP];
    uint32_t                        chunk;  // the chunk the phases below work on
    uint32_t                        nt;     // its tokens
};

// Half of a group: the HMX unit works on one half while the HVX threads work on the other.
struct gdn_hmx_part {
    gdn_hmx_job * job;
    item_range    items;    // its items, each HVX thread's share
    uint32_t      threads;  // HVX threads for it
    uint32_t      hmx_status;
};

HVX_Vector *       vec(uint8_t * p) { return reinterpret_cast<HVX_Vector *>(p); }
float *            vfl(uint8_t * p) { return reinterpret_cast<float *>(p); }
uint8_t *          vecs(const gdn_hmx_job & job, const gdn_hmx_item & it, gdn_vector v) { return it.mem + job.L.vecs + v * 128; }
float              lane0(HVX_Vector x) { return __builtin_bit_cast(float, Q6_R_vextract_VR(x, 0)); }

void push_in(dma_queue * q, uint8_t * vtcm, dma_addr_t ddr, uint32_t vtcm_stride, uint32_t ddr_stride, uint32_t row,
             uint32_t nrows, uint16_t info) {
    if (dma_queue_depth(q) == DMA_QUEUE_CAPACITY) {
        dma_queue_pop(q);
    }
    dma_queue_push_ddr_to_vtcm(q, dma_addr_of(vtcm), ddr, vtcm_stride, ddr_stride, row, nrows, info);
}

void push_out(dma_queue * q, dma_addr_t ddr, uint8_t * vtcm, uint32_t ddr_stride, uint32_t vtcm_stride, uint32_t row,
              uint32_t nrows, uint16_t info) {
    if (dma_queue_depth(q) == DMA_QUEUE_CAPACITY) {
        dma_queue_pop(q);
    }
    dma_queue_push_vtcm_to_ddr(q, ddr, dma_addr_of(vtcm), ddr_stride, vtcm_stride, row, nrows, info);
}

void drain(dma_queue * q) {
    while (!dma_queue_empty(q)) {
        dma_queue_pop(q);
    }
}

// ---- HVX pieces (out of line: no vector lives across the phases' calls)

// n rows (stride bytes apart, nv vectors each) scaled in place, each by the power of two that
// brings its largest magnitude into [0.5, 1); inv[r] = that power's inverse.
__attribute__((noinline)) void scale_rows(uint8_t * rows, uint32_t stride, uint32_t n, uint32_t nv, float * inv) {
    for (uint32_t r = 0; r < n; ++r) {
        HVX_Vector * x = vec(rows + r * stride);
        HVX_Vector   scale, inverse;
        hvx_row_scale(hvx_row_max_bits(x, nv), &scale, &inverse);
        for (uint32_t c = 0; c < nv; ++c) {
            x[c] = hvx_sf_mul(x[c], scale);
        }
        inv[r] = lane0(inverse);
    }
}

// The power of two that brings the largest magnitude of n vectors into [0.5, 1), as a splat in
// V_SPLAT, and its inverse in lane `at` of V_SCAL.
__attribute__((noinline)) void block_scale(const gdn_hmx_job & job, const gdn_hmx_item & it, const uint8_t * x,
                                           uint32_t n, uint32_t at) {
    HVX_Vector inverse;
    hvx_row_scale(hvx_row_max_bits(reinterpret_cast<const HVX_Vector *>(x), n), vec(vecs(job, it, V_SPLAT)), &inverse);
    vfl(vecs(job, it, V_SCAL))[at] = lane0(inverse);
}

// One tile (hi and lo, 16 vectors each) from 32 rows (stride bytes apart) at vector column c, each
// element times m: rows 2p and 2p + 1 interleaved into vector p (an activation tile's row pairs, a
// weight tile's k pairs), hi = fp16(x), lo = fp16(x - hi) (the subtraction exact).
__attribute__((noinline)) void rows_to_tile(const uint8_t * rows, uint32_t stride, uint32_t c, const HVX_Vector * m,
                                            uint8_t * hi, uint8_t * lo) {
    for (uint32_t p = 0; p < 16; ++p) {
        const HVX_Vector a = hvx_sf_mul(reinterpret_cast<const HVX_Vector *>(rows + 2 * p * stride)[c], *m);
        const HVX_Vector b = hvx_sf_mul(reinterpret_cast<const HVX_Vector *>(rows + (2 * p + 1) * stride)[c], *m);
        const HVX_Vector h = hvx_sf_interleave_to_hf(a, b);
        HVX_Vector       ha, hb;
        hvx_hf_pairs_to_sf(h, &ha, &hb);
        vec(hi)[p] = h;
        vec(lo)[p] = hvx_sf_interleave_to_hf(hvx_sf_sub(a, ha), hvx_sf_sub(b, hb));
    }
}

// An output tile pair (hi, lo) as fp32 rows (stride bytes apart) at vector column c: row m =
// (hi + 2^-11 lo) times col and rowf[m] s; with keep (not null) added to the row times *keep.
__attribute__((noinline)) void tile_to_rows(const uint8_t * hi, const uint8_t * lo, uint8_t * rows, uint32_t stride,
                                            uint32_t c, const HVX_Vector * col, const float * rowf, float s,
                                            const float * keep) {
    const HVX_Vector low = hvx_splat_sf(1.0f / 2048.0f);
    for (uint32_t p = 0; p < 16; ++p) {
        HVX_Vector h[2], l[2];
        hvx_hf_pairs_to_sf(reinterpret_cast<const HVX_Vector *>(hi)[p], &h[0], &h[1]);
        hvx_hf_pairs_to_sf(reinterpret_cast<const HVX_Vector *>(lo)[p], &l[0], &l[1]);
        for (uint32_t r = 0; r < 2; ++r) {
            const uint32_t   m = 2 * p + r;
            HVX_Vector *     o = vec(rows + m * stride) + c;
            const HVX_Vector x = hvx_sf_mul(hvx_sf_mul(hvx_sf_add(h[r], hvx_sf_mul(l[r], low)), *col), hvx_splat_sf(rowf[m] * s));
            *o                 = keep ? hvx_sf_add(hvx_sf_mul(*o, hvx_splat_sf(*keep)), x) : x;
        }
    }
}

// x lanes from n on zeroed.
HVX_Vector first_lanes(HVX_Vector x, uint32_t n) {
    return n >= 32 ? x : Q6_V_vmux_QVV(Q6_Q_vsetq_R(int32_t(n * 4)), x, Q6_V_vzero());
}

// The chunk's tokens past nt zeroed (rows of q, k, v; g and beta lanes); V_ONE set.
__attribute__((noinline)) void pad_chunk(const gdn_hmx_job & job, const gdn_hmx_item & it) {
    const uint32_t nv = job.kp.S / 32;
    const uint32_t areas[3] = {job.L.qr, job.L.kr, job.L.vr};
    for (uint32_t area : areas) {
        for (uint32_t r = job.nt; r < 32; ++r) {
            for (uint32_t c = 0; c < nv; ++c) {
                vec(it.mem + area + r * job.kp.S * 4)[c] = Q6_V_vzero();
            }
        }
    }
    *vec(vecs(job, it, V_G))    = first_lanes(*vec(vecs(job, it, V_G)), job.nt);
    *vec(vecs(job, it, V_BETA)) = first_lanes(*vec(vecs(job, it, V_BETA)), job.nt);
    *vec(vecs(job, it, V_ONE))  = hvx_splat_sf(1.0f);
}

// G (the running sum of g, in token order as GGML's decays apply), e^G, e^(G_31 - G).
__attribute__((noinline)) void chunk_decays(const gdn_hmx_job & job, const gdn_hmx_item & it) {
    const float * g   = vfl(vecs(job, it, V_G));
    float *       cum = vfl(vecs(job, it, V_CUM));
    float         acc = 0.0f;
    for (uint32_t t = 0; t < 32; ++t) {
        acc += g[t];
        cum[t] = acc;
    }
    const HVX_Vector G = *vec(vecs(job, it, V_CUM));
    *vec(vecs(job, it, V_GAMMA)) = hvx_sf_exp(G);
    *vec(vecs(job, it, V_W))     = hvx_sf_exp(hvx_sf_sub(hvx_splat_sf(acc), G));
}

// Lane-wise products of the per-token vectors: out = a b, times s.
__attribute__((noinline)) void vector_product(const gdn_hmx_job & job, const gdn_hmx_item & it, gdn_vector out,
                                              gdn_vector a, gdn_vector b, float s) {
    *vec(vecs(job, it, out)) =
        hvx_sf_mul(hvx_sf_mul(*vec(vecs(job, it, a)), *vec(vecs(job, it, b))), hvx_splat_sf(s));
}

// A = beta_t D[t][j] (K Kᵀ)[t][j] below the diagonal (kkr), P = D[t][j] (Q Kᵀ)[t][j] on and below
// it (qkr), D[t][j] = e^(G_t - G_j).
__attribute__((noinline)) void decay_masks(const gdn_hmx_job & job, const gdn_hmx_item & it) {
    const HVX_Vector * G    = vec(vecs(job, it, V_CUM));
    const float *      cum  = vfl(vecs(job, it, V_CUM));
    const float *      beta = vfl(vecs(job, it, V_BETA));
    for (uint32_t t = 0; t < 32; ++t) {
        const HVX_Vector d  = hvx_sf_exp(hvx_sf_sub(hvx_splat_sf(cum[t]), *G));
        HVX_Vector *     a  = vec(it.mem + job.L.kkr + t * 128);
        HVX_Vector *     pr = vec(it.mem + job.L.qkr + t * 128);
        *a                  = first_lanes(hvx_sf_mul(hvx_sf_mul(*a, d), hvx_splat_sf(beta[t])), t);
        *pr                 = first_lanes(hvx_sf_mul(*pr, d), t + 1);
    }
}

// R = beta_t (v_t - gamma_t (K N0)[t]) in vr, from vr and the unpacked products in qr.
__attribute__((noinline)) void residual_rows(const gdn_hmx_job & job, const gdn_hmx_item & it) {
    const uint32_t nv   = job.kp.S / 32;
    const float *  beta = vfl(vecs(job, it, V_BETA));
    for (uint32_t t = 0; t < 32; ++t) {
        HVX_Vector *       v  = vec(it.mem + job.L.vr + t * job.kp.S * 4);
        const HVX_Vector * kn = vec(it.mem + job.L.qr + t * job.kp.S * 4);
        for (uint32_t c = 0; c < nv; ++c) {
            v[c] = hvx_sf_mul(hvx_sf_sub(v[c], kn[c]), hvx_splat_sf(beta[t]));
        }
    }
}

// (I + A) U = R by forward substitution, U over R in vr: U_t = R_t - sum_{j<t} A[t][j] U_j.
__attribute__((noinline)) void forward_substitute(const gdn_hmx_job & job, const gdn_hmx_item & it) {
    const uint32_t nv  = job.kp.S / 32;
    const uint32_t row = job.kp.S * 4;
    for (uint32_t t = 1; t < 32; ++t) {
        const float * a  = vfl(it.mem + job.L.kkr + t * 128);
        HVX_Vector *  ut = vec(it.mem + job.L.vr + t * row);
        for (uint32_t j = 0; j < t; ++j) {
            const HVX_Vector * uj = vec(it.mem + job.L.vr + j * row);
            const HVX_Vector   aj = hvx_splat_sf(a[j]);
            for (uint32_t c = 0; c < nv; ++c) {
                ut[c] = hvx_sf_sub(ut[c], hvx_sf_mul(aj, uj[c]));
            }
        }
    }
}

// n vectors x times f (a vector).
__attribute__((noinline)) void scale_vectors(uint8_t * x, uint32_t n, const HVX_Vector * f) {
    for (uint32_t v = 0; v < n; ++v) {
        vec(x)[v] = hvx_sf_mul(vec(x)[v], *f);
    }
}

// o_t = scale (qr_t + vr_t) for the chunk's rows, into qr.
__attribute__((noinline)) void output_rows(const gdn_hmx_job & job, const gdn_hmx_item & it) {
    const HVX_Vector scale = Q6_V_vsplat_R(int32_t(job.kp.scale));
    HVX_Vector *     o     = vec(it.mem + job.L.qr);
    const HVX_Vector * pu  = vec(it.mem + job.L.vr);
    for (uint32_t v = 0; v < job.nt * job.kp.S / 32; ++v) {
        o[v] = hvx_sf_mul(hvx_sf_add(o[v], pu[v]), scale);
    }
}

// ---- HMX: one exact product (the header's two-pass store)

// Pass 1 stores C_hi = fp16(hi.hi); pass 2 accumulates hi.hi + lo.hi + hi.lo - C_hi (the -I tile
// times C_hi: exact) and stores it times 2^11 as C_lo.
uint32_t hmx_exact(const gdn_hmx_job & job, const uint8_t * act_hi, const uint8_t * act_lo, const uint8_t * wt_hi,
                   const uint8_t * wt_lo, uint32_t n, uint8_t * out_hi, uint8_t * out_lo) {
    hmx_unit * u  = job.unit;
    uint32_t   st = hmx_mac_fp16(u, act_hi, wt_hi, n);
    st = st == HMX_OK ? hmx_set_scale_bias(u, job.hdr + TILE) : st;
    st = st == HMX_OK ? hmx_store_fp16(u, out_hi) : st;
    st = st == HMX_OK ? hmx_mac_fp16(u, act_hi, wt_hi, n) : st;
    st = st == HMX_OK ? hmx_mac_fp16(u, act_lo, wt_hi, n) : st;
    st = st == HMX_OK ? hmx_mac_fp16(u, act_hi, wt_lo, n) : st;
    st = st == HMX_OK ? hmx_mac_fp16(u, job.hdr, out_hi, 1) : st;
    st = st == HMX_OK ? hmx_set_scale_bias(u, job.hdr + TILE + 256) : st;
    return st == HMX_OK ? hmx_store_fp16(u, out_lo) : st;
}

// K Kᵀ, Q Kᵀ, K N0, Q N0 of the item at m.
uint32_t item_products(const gdn_hmx_job & job, uint8_t * m) {
    const proto::htp_gdn_hmx_item_layout & L  = job.L;
    const uint32_t                         nv = job.kp.S / 32, lo = nv * TILE, slo = nv * nv * TILE;
    uint32_t st = hmx_exact(job, m + L.k, m + L.k + lo, m + L.kt, m + L.kt + lo, nv, m + L.kk, m + L.kk + TILE);
    st = st == HMX_OK ? hmx_exact(job, m + L.q, m + L.q + lo, m + L.kt, m + L.kt + lo, nv, m + L.qk, m + L.qk + TILE) : st;
    for (uint32_t jb = 0; jb < nv && st == HMX_OK; ++jb) {
        const uint8_t * w = m + L.st + jb * nv * TILE;
        st = hmx_exact(job, m + L.k, m + L.k + lo, w, w + slo, nv, m + L.ks + jb * TILE, m + L.ks + lo + jb * TILE);
        st = st == HMX_OK ? hmx_exact(job, m + L.q, m + L.q + lo, w, w + slo, nv, m + L.qs + jb * TILE,
                                      m + L.qs + lo + jb * TILE)
                          : st;
    }
    return st;
}

// P U (into ks) and Kᵀ diag(w) U (into st, tile ib * nv + jb) of the item at m.
uint32_t item_updates(const gdn_hmx_job & job, uint8_t * m) {
    const proto::htp_gdn_hmx_item_layout & L  = job.L;
    const uint32_t                         nv = job.kp.S / 32, lo = nv * TILE, slo = nv * nv * TILE;
    uint32_t                               st = HMX_OK;
    for (uint32_t jb = 0; jb < nv && st == HMX_OK; ++jb) {
        const uint8_t * u = m + L.u + jb * TILE;
        st = hmx_exact(job, m + L.p, m + L.p + TILE, u, u + lo, 1, m + L.ks + jb * TILE, m + L.ks + lo + jb * TILE);
        for (uint32_t ib = 0; ib < nv && st == HMX_OK; ++ib) {
            uint8_t * o = m + L.st + (ib * nv + jb) * TILE;
            st = hmx_exact(job, m + L.kw + ib * TILE, m + L.kw + lo + ib * TILE, u, u + lo, 1, o, o + slo);
        }
    }
    return st;
}

// The HMX job of a part: Body for each of its items until one fails; the trace event spans the
// stores' work.
template <uint32_t (*Body)(const gdn_hmx_job &, uint8_t *)> void hmx_items(void * data) {
    gdn_hmx_part &      part = *static_cast<gdn_hmx_part *>(data);
    const gdn_hmx_job & job  = *part.job;
    trace_event_start(&job.octx->trace[HMX_TRACE_SLOT], proto::HTP_TRACE_EVT_HMX_COMP, trace_info(job.chunk));
    uint32_t st = HMX_OK;
    for (uint32_t n = part.items.first; n < part.items.end && st == HMX_OK; ++n) {
        st = Body(job, job.items[n].mem);
    }
    part.hmx_status = st;
    hmx_drain(job.unit);
    trace_event_stop(&job.octx->trace[HMX_TRACE_SLOT], proto::HTP_TRACE_EVT_HMX_COMP, trace_info(job.chunk));
}

// ---- The HVX phases

// The state in (first chunk), the chunk's rows in; Q, K, Kᵀ and N0 as tiles.
void load_thread(uint32_t, uint32_t i, void * data) {
    const gdn_hmx_part &                   part = *static_cast<const gdn_hmx_part *>(data);
    gdn_hmx_job &                          job  = *part.job;
    const proto::htp_gdn_hmx_item_layout & L   = job.L;
    const uint32_t                         S = job.kp.S, nv = S / 32, row = S * 4, H = job.src[2]->ne[1];
    const uint32_t                         t0 = job.chunk * proto::HTP_GDN_HMX_CHUNK;
    const platform *                       plat = job.octx->plat;
    dma_queue *                            q    = &job.octx->dma[i];
    uint32_t                               first, end;
    thread_items(part.items, i, &first, &end);
    for (uint32_t n = first; n < end; ++n) {
        const gdn_hmx_item & it = job.items[n];
        if (job.chunk == 0) {
            push_in(q, it.mem + L.st, dma_addr_at(htp_tensor_dma_addr(plat, job.src[5]), it.state), row, row, row, S,
                    trace_info(n));
        }
        const htp_tensor * const * s = job.src;
        push_in(q, it.mem + L.qr, dma_addr_at(htp_tensor_dma_addr(plat, s[0]), it.q + t0 * s[0]->nb[2]), row,
                s[0]->nb[2], row, job.nt, trace_info(n));
        push_in(q, it.mem + L.kr, dma_addr_at(htp_tensor_dma_addr(plat, s[1]), it.k + t0 * s[1]->nb[2]), row,
                s[1]->nb[2], row, job.nt, trace_info(n));
        push_in(q, it.mem + L.vr, dma_addr_at(htp_tensor_dma_addr(plat, s[2]), it.v + t0 * s[2]->nb[2]), row,
                s[2]->nb[2], row, job.nt, trace_info(n));
        push_in(q, vecs(job, it, V_G), dma_addr_at(htp_tensor_dma_addr(plat, s[3]), it.g + t0 * H * 4), 4, H * 4, 4,
                job.nt, trace_info(n));
        push_in(q, vecs(job, it, V_BETA), dma_addr_at(htp_tensor_dma_addr(plat, s[4]), it.beta + t0 * H * 4), 4, H * 4,
                4, job.nt, trace_info(n));
    }
    drain(q);
    trace_event_start(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_A_PREP, trace_info(first));
    for (uint32_t n = first; n < end; ++n) {
        const gdn_hmx_item & it      = job.items[n];
        HVX_Vector *         scratch = vec(it.mem + L.scratch);
        if (job.chunk == 0) {
            hvx_transpose_square(it.mem + L.st, it.mem + L.n, row, scratch);
        }
        pad_chunk(job, it);
        const HVX_Vector * one = vec(vecs(job, it, V_ONE));
        scale_rows(it.mem + L.qr, row, 32, nv, vfl(vecs(job, it, V_FQ)));
        scale_rows(it.mem + L.kr, row, 32, nv, vfl(vecs(job, it, V_FK)));
        for (uint32_t c = 0; c < nv; ++c) {
            rows_to_tile(it.mem + L.qr, row, c, one, it.mem + L.q + c * TILE, it.mem + L.q + (nv + c) * TILE);
            rows_to_tile(it.mem + L.kr, row, c, one, it.mem + L.k + c * TILE, it.mem + L.k + (nv + c) * TILE);
            hvx_transpose_32x32(vec(it.mem + L.kr) + c, nv, vec(it.mem + L.ktr) + c * 32, 1, scratch);
            rows_to_tile(it.mem + L.ktr + c * 32 * 128, 128, 0, one, it.mem + L.kt + c * TILE,
                         it.mem + L.kt + (nv + c) * TILE);
        }
        // N0 scaled as a whole; e_s undoes it.
        block_scale(job, it, it.mem + L.n, S * nv, 0);
        for (uint32_t jb = 0; jb < nv; ++jb) {
            for (uint32_t ib = 0; ib < nv; ++ib) {
                uint8_t * t = it.mem + L.st + (jb * nv + ib) * TILE;
                rows_to_tile(it.mem + L.n + ib * 32 * row, row, jb, vec(vecs(job, it, V_SPLAT)), t,
                             t + nv * nv * TILE);
            }
        }
    }
    trace_event_stop(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_A_PREP, trace_info(first));
}

// The products unpacked; the decays, A, R, U; P, U and Kᵀ diag(w) as tiles.
void solve_thread(uint32_t, uint32_t i, void * data) {
    const gdn_hmx_part &                   part = *static_cast<const gdn_hmx_part *>(data);
    gdn_hmx_job &                          job  = *part.job;
    const proto::htp_gdn_hmx_item_layout & L   = job.L;
    const uint32_t                         S = job.kp.S, nv = S / 32, row = S * 4, lo = nv * TILE;
    uint32_t                               first, end;
    thread_items(part.items, i, &first, &end);
    trace_event_start(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_COMP, trace_info(first));
    for (uint32_t n = first; n < end; ++n) {
        const gdn_hmx_item & it  = job.items[n];
        uint8_t *            m   = it.mem;
        const HVX_Vector *   one = vec(vecs(job, it, V_ONE));
        const float          es  = vfl(vecs(job, it, V_SCAL))[0];
        chunk_decays(job, it);
        vector_product(job, it, V_RK, V_GAMMA, V_FK, es);
        vector_product(job, it, V_RQ, V_GAMMA, V_FQ, es);
        tile_to_rows(m + L.kk, m + L.kk + TILE, m + L.kkr, 128, 0, vec(vecs(job, it, V_FK)), vfl(vecs(job, it, V_FK)),
                     1.0f, nullptr);
        tile_to_rows(m + L.qk, m + L.qk + TILE, m + L.qkr, 128, 0, vec(vecs(job, it, V_FK)), vfl(vecs(job, it, V_FQ)),
                     1.0f, nullptr);
        for (uint32_t jb = 0; jb < nv; ++jb) {
            tile_to_rows(m + L.ks + jb * TILE, m + L.ks + lo + jb * TILE, m + L.qr, row, jb, one,
                         vfl(vecs(job, it, V_RK)), 1.0f, nullptr);
        }
        residual_rows(job, it);
        for (uint32_t jb = 0; jb < nv; ++jb) {  // gamma_t (Q N0)[t], the outputs' first part
            tile_to_rows(m + L.qs + jb * TILE, m + L.qs + lo + jb * TILE, m + L.qr, row, jb, one,
                         vfl(vecs(job, it, V_RQ)), 1.0f, nullptr);
        }
        decay_masks(job, it);
        forward_substitute(job, it);
        scale_rows(m + L.qkr, 128, 32, 1, vfl(vecs(job, it, V_FP)));
        rows_to_tile(m + L.qkr, 128, 0, one, m + L.p, m + L.p + TILE);
        block_scale(job, it, m + L.vr, 32 * nv, 1);
        for (uint32_t jb = 0; jb < nv; ++jb) {
            rows_to_tile(m + L.vr, row, jb, vec(vecs(job, it, V_SPLAT)), m + L.u + jb * TILE,
                         m + L.u + lo + jb * TILE);
        }
        // Kᵀ's columns were K's scaled rows: times fk w, then each key's row scaled for its tile.
        vector_product(job, it, V_KW, V_W, V_FK, 1.0f);
        scale_vectors(m + L.ktr, S, vec(vecs(job, it, V_KW)));
        scale_rows(m + L.ktr, 128, S, 1, vfl(m + L.rowf));
        for (uint32_t ib = 0; ib < nv; ++ib) {
            rows_to_tile(m + L.ktr + ib * 32 * 128, 128, 0, one, m + L.kw + ib * TILE, m + L.kw + lo + ib * TILE);
        }
        vector_product(job, it, V_RP, V_FP, V_ONE, vfl(vecs(job, it, V_SCAL))[1]);
        vfl(vecs(job, it, V_SCAL))[2] = vfl(vecs(job, it, V_GAMMA))[31];
    }
    trace_event_stop(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_COMP, trace_info(first));
}

// The chunk's outputs out; the state updated; after the last chunk, the state out.
void finish_thread(uint32_t, uint32_t i, void * data) {
    const gdn_hmx_part &                   part = *static_cast<const gdn_hmx_part *>(data);
    gdn_hmx_job &                          job  = *part.job;
    const proto::htp_gdn_hmx_item_layout & L   = job.L;
    const uint32_t                         S = job.kp.S, nv = S / 32, row = S * 4, lo = nv * TILE, H = job.src[2]->ne[1];
    const uint32_t                         t0   = job.chunk * proto::HTP_GDN_HMX_CHUNK;
    const bool                             last = job.chunk + 1 == job.kp.n_chunks;
    dma_queue *                            q    = &job.octx->dma[i];
    const dma_addr_t                       out  = htp_tensor_dma_addr(job.octx->plat, job.dst);
    uint32_t                               first, end;
    thread_items(part.items, i, &first, &end);
    trace_event_start(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_O_PROC, trace_info(first));
    for (uint32_t n = first; n < end; ++n) {
        const gdn_hmx_item & it  = job.items[n];
        uint8_t *            m   = it.mem;
        const HVX_Vector *   one = vec(vecs(job, it, V_ONE));
        for (uint32_t jb = 0; jb < nv; ++jb) {
            tile_to_rows(m + L.ks + jb * TILE, m + L.ks + lo + jb * TILE, m + L.vr, row, jb, one,
                         vfl(vecs(job, it, V_RP)), 1.0f, nullptr);
        }
        output_rows(job, it);
        push_out(q, dma_addr_at(out, it.out + t0 * H * row), m + L.qr, H * row, row, row, job.nt, trace_info(n));
        const float eu = vfl(vecs(job, it, V_SCAL))[1];
        for (uint32_t ib = 0; ib < nv; ++ib) {
            for (uint32_t jb = 0; jb < nv; ++jb) {
                const uint8_t * t = m + L.st + (ib * nv + jb) * TILE;
                tile_to_rows(t, t + nv * nv * TILE, m + L.n + ib * 32 * row, row, jb, one, vfl(m + L.rowf) + ib * 32, eu,
                             vfl(vecs(job, it, V_SCAL)) + 2);
            }
        }
        if (last) {
            hvx_transpose_square(m + L.n, m + L.st, row, vec(m + L.scratch));
            push_out(q, dma_addr_at(out, job.kp.state_off + it.state), m + L.st, row, row, row, S, trace_info(n));
        }
    }
    trace_event_stop(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_O_PROC, trace_info(first));
    drain(q);
}

// -I as an activation tile, the scale/bias blocks 1 and 2^11.
__attribute__((noinline)) void write_header(uint8_t * hdr) {
    for (uint32_t p = 0; p < 16; ++p) {
        vec(hdr)[p] = Q6_V_vzero();
    }
    // Vector p holds rows 2p and 2p + 1 (element (m, k) at halfword 2k + (m & 1)): -1 (fp16 0xBC00)
    // at (2p, 2p), halfword 4p (word 2p's low half), and at (2p + 1, 2p + 1), halfword 4p + 3.
    uint32_t * w = reinterpret_cast<uint32_t *>(hdr);
    for (uint32_t p = 0; p < 16; ++p) {
        w[32 * p + 2 * p]     = 0x0000BC00u;
        w[32 * p + 2 * p + 1] = 0xBC000000u;
    }
    vec(hdr + TILE)[0]       = hvx_splat_w(0x00003C00);  // fp16 1.0, bias 0
    vec(hdr + TILE)[1]       = Q6_V_vzero();
    vec(hdr + TILE + 256)[0] = hvx_splat_w(0x00006800);  // fp16 2^11
    vec(hdr + TILE + 256)[1] = Q6_V_vzero();
}

} // namespace

bool guard_gdn_hmx(const htp_op_context * octx) {
    htp_gdn_hmx_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * const * s = octx->src;
    const htp_tensor *         v = s[2];
    if (octx->hmx == nullptr || !proto::htp_gdn_layout_valid(*s[0], *s[1], *v, *s[3], *s[4], *s[5], *octx->dst[0], 1)) {
        return false;
    }
    const uint32_t S = v->ne[0], H = v->ne[1], T = v->ne[2], NS = v->ne[3];
    return S == kp.S && S % 32 == 0 && S <= proto::HTP_GDN_MAX_S && s[3]->ne[0] == 1 &&
           kp.n_chunks == (T + proto::HTP_GDN_HMX_CHUNK - 1) / proto::HTP_GDN_HMX_CHUNK && kp.n_chunks >= 1 &&
           uint64_t(kp.n_items) == uint64_t(H) * NS && kp.group_items >= 1 &&
           kp.group_items <= proto::HTP_GDN_HMX_MAX_GROUP && kp.n_threads >= 1 && kp.n_threads <= octx->n_threads &&
           kp.n_threads <= kp.group_items && kp.item_bytes == proto::htp_gdn_hmx_item(S).bytes &&
           kp.vtcm_size == proto::htp_gdn_hmx_vtcm_size(kp.group_items, S) &&
           proto::htp_gdn_heads_valid(kp.heads, *s[0], *s[1], *v) &&
           uint64_t(kp.state_off) == uint64_t(S) * H * T * NS * 4 && octx->dst[0]->size <= UINT32_MAX;
}

uint32_t op_gdn_hmx(htp_op_context * octx) {
    gdn_hmx_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    const htp_gdn_hmx_kparams & kp = job.kp;
    job.octx = octx;
    job.L    = proto::htp_gdn_hmx_item(kp.S);
    for (uint32_t s = 0; s < 6; ++s) {
        job.src[s] = octx->src[s];
    }
    job.dst  = octx->dst[0];
    job.unit = static_cast<hmx_unit *>(octx->plat->hmx_unit);
    vtcm_arena vtcm(octx->vtcm_base, octx->vtcm_size);
    uint8_t *  base = vtcm.take(kp.vtcm_size, 1, TILE);
    if (!vtcm.ok()) {
        return proto::HTP_STATUS_VTCM_TOO_SMALL;
    }
    job.hdr = base;
    write_header(job.hdr);
    const htp_tensor * q = job.src[0], *k = job.src[1], *v = job.src[2];
    const uint32_t     T = v->ne[2];
    // A device group's members split the items (every output and state leaves by DMA).
    const item_range mine = member_items(octx, kp.n_items, 1);
    for (uint32_t g0 = mine.first; g0 < mine.end; g0 += kp.group_items) {
        const uint32_t n_group = mine.end - g0 < kp.group_items ? mine.end - g0 : kp.group_items;
        uint32_t       off     = proto::HTP_GDN_HMX_HEADER;
        for (uint32_t n = 0; n < n_group; ++n, off += kp.item_bytes) {
            const uint32_t item = g0 + n;
            off                 = proto::htp_gdn_hmx_place(off, job.L);
            job.items[n]        = gdn_hmx_item{proto::htp_gdn_item_at(kp.heads, *q, *k, *v, item, 1), base + off};
        }
        // Two halves (the second empty for one item), each phase of one overlapping the other's
        // HMX job: the HMX unit and the HVX threads work at once.
        gdn_hmx_part   parts[2];
        const uint32_t half = (n_group + 1) >> 1;
        for (uint32_t p = 0; p < 2; ++p) {
            gdn_hmx_part & pt = parts[p];
            const uint32_t first = p == 0 ? 0 : half, end = p == 0 ? half : n_group, n = end - first;
            pt.job               = &job;
            pt.threads           = n < kp.n_threads ? n : kp.n_threads;
            pt.items             = item_range{first, end, n == 0 ? 0 : ceil_div_small(n, pt.threads)};
            pt.hmx_status        = HMX_OK;
        }
        auto hvx = [&](gdn_hmx_part & pt, work_fn fn) {
            if (pt.items.end > pt.items.first) {
                work_queue_run(octx->work, fn, &pt, pt.threads);
            }
        };
        auto hmx_push = [&](gdn_hmx_part & pt, hmx_job_fn fn) {
            if (pt.items.end > pt.items.first) {
                hmx_queue_push(octx->hmx, fn, &pt);
            }
        };
        auto hmx_pop = [&](gdn_hmx_part & pt) {
            if (pt.items.end > pt.items.first) {
                hmx_queue_pop(octx->hmx);
            }
            return pt.hmx_status == HMX_OK;
        };
        gdn_hmx_part & a = parts[0];
        gdn_hmx_part & b = parts[1];
        for (job.chunk = 0; job.chunk < kp.n_chunks; ++job.chunk) {
            const uint32_t t0 = job.chunk * proto::HTP_GDN_HMX_CHUNK;
            job.nt            = T - t0 < proto::HTP_GDN_HMX_CHUNK ? T - t0 : proto::HTP_GDN_HMX_CHUNK;
            hvx(a, load_thread);
            hmx_push(a, hmx_items<item_products>);
            hvx(b, load_thread);
            bool ok = hmx_pop(a);
            hmx_push(b, hmx_items<item_products>);
            if (ok) {
                hvx(a, solve_thread);
            }
            ok = hmx_pop(b) && ok;
            if (!ok) {
                return proto::HTP_STATUS_STRICT;
            }
            hmx_push(a, hmx_items<item_updates>);
            hvx(b, solve_thread);
            ok = hmx_pop(a);
            hmx_push(b, hmx_items<item_updates>);
            if (ok) {
                hvx(a, finish_thread);
            }
            ok = hmx_pop(b) && ok;
            if (!ok) {
                return proto::HTP_STATUS_STRICT;
            }
            hvx(b, finish_thread);
        }
    }
    return proto::HTP_STATUS_OK;
}

} // namespace hexnpu::htp
