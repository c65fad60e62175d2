// GATED_DELTA_NET on HVX (proto/htp-linear-attn.h): one (head, sequence) at a time per thread, its
// state in VTCM as rows per key (vectors over the values; for a few tokens, GGML's rows per value),
// the tokens streamed in blocks through two slots. Each 32 values of the state are independent of
// the others (every step is per value j given the key's scalars), so a token walks the state once
// per vector of values: the decay and k's product in one pass, the update and q's product in the
// next.
#include "htp-tensor.h"
#include "hvx-arith.h"
#include "hvx-exp.h"
#include "hvx-transpose.h"
#include "item-job.h"
#include "ops.h"
#include "stream-pipeline.h"
#include "proto/htp-linear-attn.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::htp_gdn_kparams;
using proto::htp_gdn_slot_layout;
using proto::htp_tensor;

constexpr uint32_t GDN_INPUTS = 5;  // q, k, v, g, beta rows of a block

struct gdn_block {
    uint32_t row;   // its first token (trace info)
    uint32_t nt;    // tokens
    uint32_t keep;  // 1 + the kept state's slot when the block's last token's state is kept, else 0
};

struct gdn_job {
    const htp_op_context * octx;
    htp_gdn_kparams        kp;
    htp_gdn_slot_layout    L;
    const htp_tensor *     src[6];  // q, k, v, g, beta, state
    const htp_tensor *     dst;
    uint32_t               row;     // bytes of a state row in VTCM
    uint8_t *              vtcm;
    item_range             items;  // this member's (run_item_job)
};

inline HVX_Vector * vec(uint8_t * p) { return reinterpret_cast<HVX_Vector *>(p); }

// The block's tokens through the state n (rows `row` bytes apart), their outputs into the slot.
__attribute__((noinline)) void gdn_tokens(const gdn_job & job, uint8_t * n, uint8_t * slot, uint32_t nt) {
    const htp_gdn_kparams &     kp    = job.kp;
    const htp_gdn_slot_layout & L     = job.L;
    const uint32_t              S     = kp.S, row = job.row, rv = row / 128;
    const HVX_Vector            scale = Q6_V_vsplat_R(int32_t(kp.scale));
    for (uint32_t t = 0; t < nt; ++t) {
        const float * qs   = reinterpret_cast<const float *>(slot + L.q + t * row);
        const float * ks   = reinterpret_cast<const float *>(slot + L.k + t * row);
        HVX_Vector *  vs   = vec(slot + L.v + t * row);
        HVX_Vector *  out  = vec(slot + L.out + t * row);
        float *       gs   = reinterpret_cast<float *>(slot + L.g + (kp.kda ? t * row : t * 4));
        const float   beta = reinterpret_cast<const float *>(slot + L.beta)[t];
        HVX_Vector    gamma = Q6_V_vzero();
        if (kp.kda) {
            for (uint32_t v = 0; v < rv; ++v) {
                vec(reinterpret_cast<uint8_t *>(gs))[v] = hvx_sf_exp(vec(reinterpret_cast<uint8_t *>(gs))[v]);
            }
        } else {
            gamma = hvx_sf_exp(hvx_splat_sf(gs[0]));
        }
        for (uint32_t v = 0; v < rv; ++v) {
            HVX_Vector kn = Q6_V_vzero();
            for (uint32_t i = 0; i < S; ++i) {
                HVX_Vector *     ni  = vec(n + i * row) + v;
                const HVX_Vector dec = kp.kda ? hvx_splat_sf(gs[i]) : gamma;
                const HVX_Vector s   = hvx_sf_mul(*ni, dec);
                *ni                  = s;
                kn                   = hvx_sf_add(kn, hvx_sf_mul(hvx_splat_sf(ks[i]), s));
            }
            const HVX_Vector d  = hvx_sf_mul(hvx_sf_sub(vs[v], kn), hvx_splat_sf(beta));
            HVX_Vector       qn = Q6_V_vzero();
            for (uint32_t i = 0; i < S; ++i) {
                HVX_Vector *     ni = vec(n + i * row) + v;
                const HVX_Vector s  = hvx_sf_add(*ni, hvx_sf_mul(hvx_splat_sf(ks[i]), d));
                *ni                 = s;
                qn                  = hvx_sf_add(qn, hvx_sf_mul(hvx_splat_sf(qs[i]), s));
            }
            out[v] = hvx_sf_mul(qn, scale);
        }
    }
}

// Rows r0 .. r0 + 31 of the state m (rv vectors each, `row` bytes apart) decayed by gamma or, per
// key, by decay[] (KDA: not null), their products with k summed per vector into p (in
// hvx_sf_row_sums32's order). Out of line, like the other pieces below: no vector stays live across
// the calls of the loop over the rows.
__attribute__((noinline)) void decay_times_k(uint8_t * m, uint32_t row, const HVX_Vector * kv, const HVX_Vector * decay,
                                             float gamma, HVX_Vector * p) {
    const uint32_t rv = row / 128;
    for (uint32_t r = 0; r < 32; ++r) {
        HVX_Vector * mj  = vec(m + r * row);
        HVX_Vector   acc = Q6_V_vzero();
        for (uint32_t v = 0; v < rv; ++v) {
            const HVX_Vector s = hvx_sf_mul(mj[v], decay ? decay[v] : hvx_splat_sf(gamma));
            mj[v]              = s;
            acc                = hvx_sf_add(acc, hvx_sf_mul(s, kv[v]));
        }
        p[hvx_row_sums_slot(r)] = acc;
    }
}

// p[32] = the 32 rows' deltas beta (v_j - (S^T k)_j), from their products with k in p.
__attribute__((noinline)) void row_deltas(HVX_Vector * p, const HVX_Vector * v, float beta) {
    const HVX_Vector kn = hvx_sf_row_sums32(p);
    p[32]               = hvx_sf_mul(hvx_sf_sub(*v, kn), hvx_splat_sf(beta));
}

// The same 32 rows updated by k times each row's delta, their products with q into p.
__attribute__((noinline)) void update_times_q(uint8_t * m, uint32_t row, const HVX_Vector * kv, const HVX_Vector * qv,
                                              const float * delta, HVX_Vector * p) {
    const uint32_t rv = row / 128;
    for (uint32_t r = 0; r < 32; ++r) {
        HVX_Vector *     mj  = vec(m + r * row);
        const HVX_Vector d   = hvx_splat_sf(delta[r]);
        HVX_Vector       acc = Q6_V_vzero();
        for (uint32_t v = 0; v < rv; ++v) {
            const HVX_Vector s = hvx_sf_add(mj[v], hvx_sf_mul(kv[v], d));
            mj[v]              = s;
            acc                = hvx_sf_add(acc, hvx_sf_mul(s, qv[v]));
        }
        p[hvx_row_sums_slot(r)] = acc;
    }
}

// x[0 .. n) times s.
__attribute__((noinline)) void scale_row(HVX_Vector * x, uint32_t n, float s) {
    for (uint32_t v = 0; v < n; ++v) {
        x[v] = hvx_sf_mul(x[v], hvx_splat_sf(s));
    }
}

// The token's decay: exp(g) of its one g (returned), or, KDA (rv vectors of g), exp over the keys in
// place (returns 0).
__attribute__((noinline)) float token_decay(HVX_Vector * gv, uint32_t rv) {
    if (rv == 0) {
        const HVX_Vector e = hvx_sf_exp(hvx_splat_sf(reinterpret_cast<const float *>(gv)[0]));
        return reinterpret_cast<const float *>(&e)[0];
    }
    for (uint32_t v = 0; v < rv; ++v) {
        gv[v] = hvx_sf_exp(gv[v]);
    }
    return 0.0f;
}

// The block's tokens through the state m in GGML's layout (row j over the keys, `row` bytes apart;
// S a multiple of 32), 32 rows at a time: the rows' products with k (after the decay) and with q
// (after the update) summed across lanes by hvx_sf_row_sums32; the delta of row j is a scalar of
// the first sums' vector. tmp: 33 vectors.
__attribute__((noinline)) void gdn_tokens_by_rows(const gdn_job & job, uint8_t * m, uint8_t * slot, uint32_t nt,
                                                  HVX_Vector * tmp) {
    const htp_gdn_kparams &     kp    = job.kp;
    const htp_gdn_slot_layout & L     = job.L;
    const uint32_t              S     = kp.S, row = job.row, rv = row / 128;
    const float                 scale = __builtin_bit_cast(float, kp.scale);
    for (uint32_t t = 0; t < nt; ++t) {
        const HVX_Vector * qv   = vec(slot + L.q + t * row);
        const HVX_Vector * kv   = vec(slot + L.k + t * row);
        const HVX_Vector * vs   = vec(slot + L.v + t * row);
        HVX_Vector *       out  = vec(slot + L.out + t * row);
        HVX_Vector *       gv   = vec(slot + L.g + (kp.kda ? t * row : t * 4));
        const float        beta = reinterpret_cast<const float *>(slot + L.beta)[t];
        const float        gamma = token_decay(gv, kp.kda ? rv : 0);
        for (uint32_t j0 = 0; j0 < S; j0 += 32) {
            decay_times_k(m + j0 * row, row, kv, kp.kda ? gv : nullptr, gamma, tmp);
            row_deltas(tmp, vs + j0 / 32, beta);
            update_times_q(m + j0 * row, row, kv, qv, reinterpret_cast<const float *>(tmp + 32), tmp);
            out[j0 / 32] = hvx_sf_row_sums32(tmp);
        }
        scale_row(out, rv, scale);
    }
}

// n's S rows copied to `to` (a kept state leaving while n goes on).
__attribute__((noinline)) void copy_state(const uint8_t * n, uint8_t * to, uint32_t S, uint32_t row) {
    const HVX_Vector * s = reinterpret_cast<const HVX_Vector *>(n);
    HVX_Vector *       d = vec(to);
    for (uint32_t v = 0; v < S * (row / 128); ++v) {
        d[v] = s[v];
    }
}

void gdn_item_run(const gdn_job & job, uint32_t i, uint32_t item, uint8_t * area) {
    const htp_gdn_kparams &     kp = job.kp;
    const htp_gdn_slot_layout & L  = job.L;
    const htp_tensor *          q = job.src[0], *k = job.src[1], *v = job.src[2], *g = job.src[3];
    const uint32_t              S = kp.S, H = v->ne[1], T = v->ne[2], NS = v->ne[3];
    const uint32_t              row = job.row;
    const uint32_t              ge  = kp.kda ? S : 1;  // g's elements per head and token
    const proto::htp_gdn_item_offsets it = proto::htp_gdn_item_at(kp.heads, *q, *k, *v, item, ge);
    dma_queue *      q_dma = &job.octx->dma[i];
    const platform * plat  = job.octx->plat;
    uint8_t *        n     = area;
    HVX_Vector *     tmp   = vec(area + row / 4 * row);
    uint8_t *        slots = area + row / 4 * row + proto::HTP_GDN_SCRATCH_BYTES;
    auto             slot_of = [&](uint32_t k2) { return slots + k2 * kp.slot_bytes; };
    const dma_addr_t out_base = htp_tensor_dma_addr(plat, job.dst);

    // The state lands in n (by_rows) or in slot 0's staging, and turns into n.
    dma_queue_push_ddr_to_vtcm(q_dma, dma_addr_of(kp.by_rows ? n : slot_of(0) + L.stage),
                               dma_addr_at(htp_tensor_dma_addr(plat, job.src[5]), it.state), row, S * 4, S * 4, S,
                               trace_info(item));
    dma_queue_pop(q_dma);
    if (!kp.by_rows) {
        hvx_transpose_square(slot_of(0) + L.stage, n, row, tmp);
    }

    uint32_t       next_t = 0;
    const uint32_t first_kept = T > kp.K ? T - kp.K : 0;
    stream_blocks<2, gdn_block>(
        q_dma, &job.octx->trace[i], 2, GDN_INPUTS,
        [&](gdn_block & b) {
            if (next_t >= T) {
                return false;
            }
            uint32_t end = next_t + kp.tb < T ? next_t + kp.tb : T;
            // A kept state ends its block: the first kept token at or after next_t.
            const uint32_t kept = next_t > first_kept ? next_t : first_kept;
            end                 = end < kept + 1 ? end : kept + 1;
            b                   = gdn_block{next_t, end - next_t, end - 1 >= first_kept ? T - end + 1 : 0};
            next_t              = end;
            return true;
        },
        [&](uint32_t k2, const gdn_block & b) { dma_queue_push_token(q_dma, slot_of(k2), trace_info(b.row)); },
        [&](uint32_t k2, const gdn_block & b) {
            uint8_t *      slot = slot_of(k2);
            const uint32_t t    = b.row;
            dma_queue_push_ddr_to_vtcm(q_dma, dma_addr_of(slot + L.q), dma_addr_at(htp_tensor_dma_addr(plat, q), it.q + t * q->nb[2]),
                                       row, q->nb[2], S * 4, b.nt, trace_info(t));
            dma_queue_push_ddr_to_vtcm(q_dma, dma_addr_of(slot + L.k), dma_addr_at(htp_tensor_dma_addr(plat, k), it.k + t * k->nb[2]),
                                       row, k->nb[2], S * 4, b.nt, trace_info(t));
            dma_queue_push_ddr_to_vtcm(q_dma, dma_addr_of(slot + L.v), dma_addr_at(htp_tensor_dma_addr(plat, v), it.v + t * v->nb[2]),
                                       row, v->nb[2], S * 4, b.nt, trace_info(t));
            dma_queue_push_ddr_to_vtcm(q_dma, dma_addr_of(slot + L.g),
                                       dma_addr_at(htp_tensor_dma_addr(plat, g), it.g + t * H * ge * 4),
                                       kp.kda ? row : 4, H * ge * 4, ge * 4, b.nt, trace_info(t));
            dma_queue_push_ddr_to_vtcm(q_dma, dma_addr_of(slot + L.beta),
                                       dma_addr_at(htp_tensor_dma_addr(plat, job.src[4]), it.beta + t * H * 4), 4, H * 4, 4,
                                       b.nt, trace_info(t));
        },
        [&](uint32_t k2, const gdn_block & b) {
            if (kp.by_rows) {
                gdn_tokens_by_rows(job, n, slot_of(k2), b.nt, tmp);
                if (b.keep != 0) {
                    copy_state(n, slot_of(k2) + L.stage, S, row);
                }
            } else {
                gdn_tokens(job, n, slot_of(k2), b.nt);
                if (b.keep != 0) {
                    hvx_transpose_square(n, slot_of(k2) + L.stage, row, tmp);
                }
            }
        },
        [&](uint32_t k2, const gdn_block & b) -> uint32_t {
            uint8_t * slot = slot_of(k2);
            dma_queue_push_vtcm_to_ddr(q_dma, dma_addr_at(out_base, it.out + b.row * H * S * 4), dma_addr_of(slot + L.out),
                                       H * S * 4, row, S * 4, b.nt, trace_info(b.row));
            if (b.keep == 0) {
                return 1;
            }
            const uint32_t at = kp.state_off + (b.keep - 1) * S * S * H * NS * 4 + it.state;
            dma_queue_push_vtcm_to_ddr(q_dma, dma_addr_at(out_base, at), dma_addr_of(slot + L.stage), S * 4, row, S * 4, S,
                                       trace_info(b.row));
            return 2;
        });
}

void gdn_thread(uint32_t, uint32_t i, void * data) {
    const gdn_job & job   = *static_cast<const gdn_job *>(data);
    uint32_t        first, end;
    thread_items(job.items, i, &first, &end);
    uint8_t *       area  = job.vtcm + size_t(i) * proto::htp_gdn_thread_bytes(job.kp.S, job.kp.slot_bytes);
    for (uint32_t item = first; item < end; ++item) {
        gdn_item_run(job, i, item, area);
    }
}

} // namespace

bool guard_gdn(const htp_op_context * octx) {
    htp_gdn_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * const * s = octx->src;
    const htp_tensor *         v = s[2];
    if (!proto::htp_gdn_layout_valid(*s[0], *s[1], *v, *s[3], *s[4], *s[5], *octx->dst[0], kp.K)) {
        return false;
    }
    const uint32_t S = v->ne[0], H = v->ne[1], T = v->ne[2], NS = v->ne[3];
    const uint64_t items = uint64_t(H) * NS;
    return S == kp.S && S <= proto::HTP_GDN_MAX_S && (kp.by_rows == 0 || (kp.by_rows == 1 && S % 32 == 0)) && kp.tb >= 1 && kp.tb <= proto::HTP_GDN_MAX_TOKENS &&
           kp.n_threads >= 1 && kp.n_threads <= octx->n_threads && uint64_t(kp.items_per_thread) * kp.n_threads >= items &&
           proto::htp_gdn_heads_valid(kp.heads, *s[0], *s[1], *v) &&
           kp.kda == (s[3]->ne[0] == S && S != 1) &&
           uint64_t(kp.state_off) == uint64_t(S) * H * T * NS * 4 && octx->dst[0]->size <= UINT32_MAX &&
           kp.slot_bytes == proto::htp_gdn_slot(S, kp.tb, kp.kda != 0).bytes &&
           kp.vtcm_size == uint64_t(kp.n_threads) * proto::htp_gdn_thread_bytes(S, kp.slot_bytes);
}

uint32_t op_gdn(htp_op_context * octx) {
    gdn_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx = octx;
    for (uint32_t s = 0; s < 6; ++s) {
        job.src[s] = octx->src[s];
    }
    job.dst = octx->dst[0];
    job.row = proto::htp_gdn_row_bytes(job.kp.S);
    job.L   = proto::htp_gdn_slot(job.kp.S, job.kp.tb, job.kp.kda != 0);
    return run_item_job(octx, job, job.src[2]->ne[1] * job.src[2]->ne[3], job.kp.vtcm_size, job.kp.n_threads,
                        gdn_thread);
}

} // namespace hexnpu::htp
