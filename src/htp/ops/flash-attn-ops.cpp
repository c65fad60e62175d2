// FLASH_ATTN_EXT on HVX (proto/htp-flash-attn.h): each thread takes a range of work items (query
// row, `heads` heads of one GQA group) and streams every item's keys in blocks of 32 through the
// spec's DMA pipeline: the block's K rows and V rows (once for all the item's heads), the heads'
// mask entries and query rows land in one of n_slots VTCM slots; per head HVX
// computes the block's 32 scores as one vector (fp32 dot products folded by a word-deal tree), then
// an online softmax over vectors (running max and denominator kept as splats; every lane of a
// masked key is -inf and its probability exactly 0), then P·V into fp32 accumulators. The item's
// last block adds the sink logit, normalizes and sends the row to dst by DMA. Numerically: e^(s - m)
// never exceeds 1 and a fully masked block or item changes nothing (0 probabilities, 0 output),
// so long contexts and -inf rows stay finite. K/V of a dequantized cache type (BF16, Q8_0, Q4_0, ...),
// and F16 K/V that several heads of an item share, land in the slot's staging areas and become F32
// rows once per block, for all the heads.
#include "hvx-arith.h"
#include "hvx-exp.h"
#include "hvx-float-dot.h"
#include "hvx-frexp.h"
#include "flash-attn-softmax.h"
#include "htp-tensor.h"
#include "hvx-hf-rows.h"
#include "hvx-kv-dequant.h"
#include "hvx-sigmoid.h"
#include "ops.h"
#include "stream-pipeline.h"
#include "trace.h"
#include "vtcm.h"
#include "proto/htp-flash-attn.h"
#include "proto/htp-status.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::HTP_FA_BLOCK;
using proto::htp_flash_attn_kparams;
using proto::htp_tensor;

// DMA inputs per block: K, V, a mask row (or a token) per head, the heads' query rows.
constexpr uint32_t fa_inputs(uint32_t heads) { return 3 + heads; }

// Mask slices whose last unmasked block a thread keeps for the current query row (by slice
// modulo this; a power of two).
constexpr uint32_t FA_MASK_MEMO = 32;
static_assert((FA_MASK_MEMO & (FA_MASK_MEMO - 1)) == 0);

// An item's heads stay inside one K/V head's group: heads divides the group (no division here).
constexpr bool heads_divide_group(uint32_t heads, uint32_t group) {
    uint32_t h = heads;
    while (h < group) {
        h += heads;
    }
    return h == group;
}


// One head's state in a thread's scratch (proto::htp_fa_head_scratch_bytes, after the slots).
struct fa_memory {
    HVX_Vector * q_eo;   // d / 32 vectors: each 64-element chunk's even elements, then its odd ones
    HVX_Vector * acc;    // d / 32 vectors in the same order
    HVX_Vector * stats;  // [0] running max, [1] denominator, [2] the head's ALiBi slope (splats)
};

fa_memory head_state(uint8_t * scratch, uint32_t d, uint32_t dv, uint32_t g) {
    auto * q_eo = reinterpret_cast<HVX_Vector *>(scratch + g * proto::htp_fa_head_scratch_bytes(d, dv));
    auto * acc  = q_eo + proto::htp_fa_pad(d) / 32;
    return {q_eo, acc, acc + proto::htp_fa_pad(dv) / 32};
}

// A slot (proto::htp_fa_slot_layout): the K block, the V block, then per head its 32 mask entries
// (a vector), query row and output row; for a staged type, the staged K and V blocks last.
struct fa_slot {
    HVX_Vector *       k;
    HVX_Vector *       v;
    const HVX_Vector * mask;     // head g's at mask[g]
    uint8_t *          q;        // head g's at q + g * pad(d) * 4
    uint8_t *          out;      // head g's at out + g * pad(dv) * 4
    uint8_t *          k_stage;  // the staged rows
    uint8_t *          v_stage;
};

fa_slot slot_at(uint8_t * slots, const proto::htp_fa_slot_layout & l, uint32_t k) {
    uint8_t * s = slots + k * l.bytes;
    return {reinterpret_cast<HVX_Vector *>(s), reinterpret_cast<HVX_Vector *>(s + l.v_at),
            reinterpret_cast<const HVX_Vector *>(s + l.mask_at), s + l.q_at, s + l.out_at, s + l.k_stage_at,
            s + l.v_stage_at};
}

__attribute__((noinline)) void zero_vectors(HVX_Vector * v, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
        v[i] = Q6_V_vzero();
    }
}

// A new item: the query row in even/odd order, zero accumulators, max -inf, denominator 0.
// ln_slope: the head's ALiBi slope's logarithm, its power once per item rather than per block.
// d, dv: the padded head sizes (the query row's padding is zero).
__attribute__((noinline)) void fa_begin(const fa_memory & m, const HVX_Vector * q, uint32_t d, uint32_t dv, float ln_slope) {
    for (uint32_t c = 0; c < d / 64; ++c) {
        const HVX_VectorPair e = Q6_W_vdeal_VVR(q[2 * c + 1], q[2 * c], -4);  // lo: evens, hi: odds
        m.q_eo[2 * c]          = Q6_V_lo_W(e);
        m.q_eo[2 * c + 1]      = Q6_V_hi_W(e);
    }
    for (uint32_t v = 0; v < dv / 32; ++v) {
        m.acc[v] = Q6_V_vzero();
    }
    m.stats[0] = hvx_splat_w(int32_t(0xFF800000u));
    m.stats[1] = Q6_V_vzero();
    m.stats[2] = hvx_sf_exp(hvx_splat_sf(ln_slope));
}

// An F32 key row (2 vectors per 64-element chunk) against the query in even/odd order: its own
// elements dealt into even/odd vectors, as the F16 rows' widening gives them.
__attribute__((always_inline)) inline HVX_Vector fa_dot_f32(const HVX_Vector * k, const HVX_Vector * q_eo, uint32_t chunks) {
    HVX_Vector acc = Q6_V_vzero();
    for (uint32_t c = 0; c < chunks; ++c) {
        const HVX_VectorPair e = Q6_W_vdeal_VVR(k[2 * c + 1], k[2 * c], -4);
        acc = hvx_sf_add(acc, hvx_sf_add(hvx_sf_mul(Q6_V_lo_W(e), q_eo[2 * c]), hvx_sf_mul(Q6_V_hi_W(e), q_eo[2 * c + 1])));
    }
    return acc;
}

// Lane j: scale * q·k_j (softcapped: softcap * tanh(.), the host's scale divided by the softcap) +
// slope * mask_j for the block's n keys, -inf past them; slope: the head's ALiBi slope in every lane
// (without ALiBi: unused).
__attribute__((noinline)) HVX_Vector fa_scores(const fa_memory & m, const HVX_Vector * k, const HVX_Vector * mask,
                                               uint32_t n, const htp_flash_attn_kparams & kp,
                                               const proto::htp_fa_slot_layout & l, HVX_Vector slope) {
    const uint32_t   per_row = l.k_stride / 128;
    const uint32_t   chunks  = proto::htp_fa_pad(kp.d) / 64;
    const HVX_Vector * q_eo  = m.q_eo;
    HVX_Vector         sc    = l.k_elem == 4 ? hvx_sf_row_sums<HTP_FA_BLOCK>(
        [&](uint32_t r) { return fa_dot_f32(k + r * per_row, q_eo, chunks); }, 0)
                                                 : hvx_sf_row_sums<HTP_FA_BLOCK>(
        [&](uint32_t r) { return hvx_sf_dot_16<false>(k + r * per_row, q_eo, chunks); }, 0);
    sc = hvx_sf_mul(sc, Q6_V_vsplat_R(int32_t(kp.scale)));
    if (kp.softcap != 0) {
        sc = hvx_sf_mul(Q6_V_vsplat_R(int32_t(kp.softcap)), hvx_sf_tanh(sc));
    }
    if (kp.mask != proto::HTP_FA_MASK_NONE) {
        HVX_Vector mk = kp.mask == proto::HTP_FA_MASK_F16 ? hvx_hf_rows_to_sf(mask[0]) : mask[0];
        if (kp.n_head_log2 != 0) {
            mk = hvx_sf_mul(slope, mk);
        }
        sc = hvx_sf_add(sc, mk);
    }
    if (n < HTP_FA_BLOCK) {
        sc = Q6_V_vmux_QVV(Q6_Q_vsetq_R(int32_t(4 * n)), sc, hvx_splat_w(int32_t(0xFF800000u)));
    }
    return sc;
}

// The online softmax step for a block's scores sc: new max, probabilities p = e^(s - max),
// accumulators and denominator rescaled by e^(old max - new max), then acc += sum_j p_j v_j over the
// block's n value rows. A max of -inf (nothing seen yet) is replaced by 0 in the exponents, so
// -inf - -inf never occurs.
__attribute__((noinline)) void fa_accumulate(const fa_memory & m, const HVX_Vector * v, HVX_Vector sc, uint32_t n,
                                             const htp_flash_attn_kparams & kp, const proto::htp_fa_slot_layout & l) {
    const HVX_Vector neg_inf = hvx_splat_w(int32_t(0xFF800000u));
    HVX_Vector       key     = hvx_sf_order_key(sc);
    for (int32_t bytes = 64; bytes >= 4; bytes /= 2) {
        key = Q6_Vw_vmax_VwVw(key, Q6_V_vror_VR(key, bytes));
    }
    const HVX_Vector old_max = m.stats[0];
    const HVX_Vector new_max = hvx_sf_order_key(Q6_Vw_vmax_VwVw(key, hvx_sf_order_key(old_max)));
    const HVX_Vector safe    = Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VwVw(new_max, neg_inf), Q6_V_vzero(), new_max);
    const HVX_Vector p       = hvx_sf_exp(hvx_sf_sub(sc, safe));
    const HVX_Vector shrink  = hvx_sf_exp(hvx_sf_sub(old_max, safe));
    m.stats[0]               = new_max;
    m.stats[1]               = hvx_sf_add(hvx_sf_mul(m.stats[1], shrink), hvx_sf_allsum(p));

    // The probabilities as scalars (a stack copy, not VTCM), broadcast one key at a time.
    union {
        HVX_Vector v;
        int32_t    w[32];
    } lanes;
    lanes.v                  = p;
    const uint32_t per_row = l.v_stride / 128;
    for (uint32_t c = 0; c < proto::htp_fa_pad(kp.dv) / 64; ++c) {
        HVX_Vector even = hvx_sf_mul(m.acc[2 * c], shrink);
        HVX_Vector odd  = hvx_sf_mul(m.acc[2 * c + 1], shrink);
        for (uint32_t j = 0; j < n; ++j) {
            HVX_Vector ve, vo;
            if (l.v_elem == 4) {  // F32 values: dealt into even/odd
                const HVX_VectorPair e = Q6_W_vdeal_VVR(v[j * per_row + 2 * c + 1], v[j * per_row + 2 * c], -4);
                ve = Q6_V_lo_W(e), vo = Q6_V_hi_W(e);
            } else {
                hvx_hf_pairs_to_sf(v[j * per_row + c], &ve, &vo);
            }
            const HVX_Vector pj = Q6_V_vsplat_R(lanes.w[j]);
            even                = hvx_sf_add(even, hvx_sf_mul(ve, pj));
            odd                 = hvx_sf_add(odd, hvx_sf_mul(vo, pj));
        }
        m.acc[2 * c]     = even;
        m.acc[2 * c + 1] = odd;
    }
}

// The item's output row (dv: the padded size): the sink logit (when there is one) joins the
// denominator, then acc / l in element order (0 when every key was masked).
__attribute__((noinline)) void fa_finish(const fa_memory & m, HVX_Vector * out, bool has_sink, float sink,
                                         uint32_t dv) {
    const HVX_Vector inv = fa_output_factor(m.stats[0], m.stats[1], has_sink, sink);
    for (uint32_t c = 0; c < dv / 64; ++c) {
        const HVX_VectorPair o = Q6_W_vshuff_VVR(hvx_sf_mul(m.acc[2 * c + 1], inv), hvx_sf_mul(m.acc[2 * c], inv), -4);
        out[2 * c]             = Q6_V_lo_W(o);
        out[2 * c + 1]         = Q6_V_hi_W(o);
    }
}

struct fa_block {
    uint32_t row;  // the work item (trace info)
    uint32_t blk;
    uint32_t n;    // keys in this block
    uint32_t iq1, iq2;  // the query row, the item's first head
    uint32_t iq3, im3;  // its sequence (dim 3, Q's, K/V's and the result's), the mask's slice for it
    bool     last;      // the item's last block: it finishes the rows
};

struct fa_job {
    const htp_op_context * octx;
    htp_flash_attn_kparams kp;
    const htp_tensor *     q;
    const htp_tensor *     k;
    const htp_tensor *     v;
    const htp_tensor *     mask;
    const htp_tensor *     sinks;
    const htp_tensor *     dst;
    uint8_t *              vtcm;
    proto::htp_fa_slot_layout layout;
    uint32_t               thread_bytes;
    uint32_t               item0, item_end;   // this device's items
    uint32_t               items_per_thread;
};

void fa_thread(uint32_t, uint32_t i, void * data) {
    const fa_job &                 job = *static_cast<const fa_job *>(data);
    const htp_flash_attn_kparams & kp  = job.kp;
    const uint32_t it0 = job.item0 + i * job.items_per_thread;
    const uint32_t it1 = it0 + job.items_per_thread < job.item_end ? it0 + job.items_per_thread : job.item_end;
    if (it0 >= it1) {
        return;
    }
    const proto::htp_fa_slot_layout & l = job.layout;
    uint8_t * slots   = job.vtcm + i * job.thread_bytes;
    uint8_t * scratch = slots + kp.n_slots * l.bytes;
    // Head sizes that are no multiple of 64: zero slots, so the rows' padding up to whole chunks
    // stays zero (DMA and the dequantizer write the rows' own elements only) and padded lanes add
    // 0 to the dots. Whole chunks leave no padding: nothing to clear.
    if (kp.d % 64 != 0 || kp.dv % 64 != 0) {
        zero_vectors(reinterpret_cast<HVX_Vector *>(slots), kp.n_slots * l.bytes / 128);
    }

    dma_queue *      q      = &job.octx->dma[i];
    const platform * plat   = job.octx->plat;
    const dma_addr_t q_base = htp_tensor_dma_addr(plat, job.q);
    const dma_addr_t k_base = htp_tensor_dma_addr(plat, job.k);
    const dma_addr_t v_base = htp_tensor_dma_addr(plat, job.v);
    const dma_addr_t o_base = htp_tensor_dma_addr(plat, job.dst);
    const dma_addr_t m_base = job.mask ? htp_tensor_dma_addr(plat, job.mask) : dma_addr_t(0);
    const uint8_t *  sinks  = kp.has_sinks ? htp_tensor_ptr(plat, job.sinks) : nullptr;
    const uint32_t   m_elem = kp.mask == proto::HTP_FA_MASK_F16 ? 2 : 4;

    // The item's blocks end at the last one with a key its mask lets through: a causal prompt's
    // rows skip the keys after them (half the work), and the result is the same bits (a fully masked
    // block leaves max, denominator and accumulators exactly as they were). The mask row is read
    // from DDR by scalar loads (a small table, as the sinks), never from VTCM: each (query row, mask
    // slice) once per thread, however many heads and items share it (a mask broadcast over the
    // heads, mask ne[2] == 1, is scanned once per row), its answer kept in a small table by slice.
    const uint8_t * m_ddr = job.mask ? htp_tensor_ptr(plat, job.mask) : nullptr;
    auto last_of_slice    = [&](uint32_t iq1, uint32_t slice, uint32_t im3) {
        const uint8_t * row = m_ddr + iq1 * job.mask->nb[1] + slice * job.mask->nb[2] + im3 * job.mask->nb[3];
        for (uint32_t blk = kp.n_blocks - 1; blk > 0; --blk) {
            const uint32_t j1 = blk + 1 < kp.n_blocks ? (blk + 1) * HTP_FA_BLOCK : kp.n_kv;
            for (uint32_t j = blk * HTP_FA_BLOCK; j < j1; ++j) {
                uint32_t bits = 0;
                __builtin_memcpy(&bits, row + j * m_elem, m_elem);
                if (bits != (m_elem == 2 ? 0xFC00u : 0xFF800000u)) {
                    return blk;
                }
            }
        }
        return 0u;
    };
    uint32_t memo_row[FA_MASK_MEMO], memo_slice[FA_MASK_MEMO], memo_im3[FA_MASK_MEMO], memo_last[FA_MASK_MEMO];
    for (uint32_t e = 0; e < FA_MASK_MEMO; ++e) {
        memo_row[e] = UINT32_MAX;
    }
    auto last_of = [&](uint32_t iq1, uint32_t iq2, uint32_t im3) {
        if (m_ddr == nullptr) {
            return kp.n_blocks - 1;
        }
        // The item's heads read slices (iq2 + g) % ne2: its first min(heads, ne2) heads cover them.
        const uint32_t slices = kp.heads < kp.div_mask2.d ? kp.heads : kp.div_mask2.d;
        uint32_t       last   = 0;  // the latest over the item's heads
        for (uint32_t g = 0; g < slices; ++g) {
            const uint32_t slice = proto::fastmodulo(iq2 + g, kp.div_mask2);
            const uint32_t e     = slice % FA_MASK_MEMO;
            if (memo_row[e] != iq1 || memo_slice[e] != slice || memo_im3[e] != im3) {
                memo_row[e]   = iq1;
                memo_slice[e] = slice;
                memo_im3[e]   = im3;
                memo_last[e]  = last_of_slice(iq1, slice, im3);
            }
            last = memo_last[e] > last ? memo_last[e] : last;
        }
        return last;
    };
    // Dims 3 (several sequences): a thread's items run in order, so each one's sequence iq3 and
    // the mask slice iq3 % mask.ne3 follow by counting (no division).
    const uint32_t n_q   = job.q->ne[1];
    const uint32_t m_ne3 = job.mask ? job.mask->ne[3] : 1;
    uint32_t       iq3 = 0, row_base = 0, im3 = 0;
    auto           query_row = [&](uint32_t r) {  // r = iq3 * n_q + iq1, never decreasing: iq1
        while (r - row_base >= n_q) {
            row_base += n_q;
            ++iq3;
            im3 = im3 + 1 == m_ne3 ? 0 : im3 + 1;
        }
        return r - row_base;
    };
    uint32_t item = it0, blk = 0, last = 0;
    stream_blocks<proto::HTP_FA_MAX_SLOTS, fa_block>(
        q, &job.octx->trace[i], kp.n_slots, fa_inputs(kp.heads),
        [&](fa_block & b) {
            if (item >= it1) {
                return false;
            }
            const uint32_t r   = proto::fastdiv(item, kp.div_head);
            const uint32_t iq1 = query_row(r);
            const uint32_t iq2 = (item - r * kp.div_head.d) * kp.heads;
            if (blk == 0) {
                last = last_of(iq1, iq2, im3);
            }
            b   = fa_block{item, blk, 0, iq1, iq2, iq3, im3, blk == last};
            b.n = blk + 1 < kp.n_blocks ? HTP_FA_BLOCK : kp.n_kv - blk * HTP_FA_BLOCK;
            if (++blk > last) {
                blk = 0;
                ++item;
            }
            return true;
        },
        [&](uint32_t k, const fa_block & b) { dma_queue_push_token(q, slot_at(slots, l, k).out, trace_info(b.row)); },
        [&](uint32_t k, const fa_block & b) {
            const fa_slot  s   = slot_at(slots, l, k);
            const uint32_t ik2 = proto::fastdiv(b.iq2, kp.div_group);
            const uint32_t j0  = b.blk * HTP_FA_BLOCK;
            const uint16_t tag = trace_info(b.row);
            const uint32_t k_row = j0 * job.k->nb[1] + ik2 * job.k->nb[2] + b.iq3 * job.k->nb[3];
            const uint32_t v_row = j0 * job.v->nb[1] + ik2 * job.v->nb[2] + b.iq3 * job.v->nb[3];
            // Rows in place into the K/V areas, or staged (proto::htp_fa_slot_layout).
            auto push_rows = [&](uint8_t * stage, HVX_Vector * rows, dma_addr_t from, const htp_tensor * t, uint32_t type,
                                 uint32_t d, uint32_t stage_stride, uint32_t stride, uint32_t elem) {
                dma_queue_push_ddr_to_vtcm(q, dma_addr_of(stage_stride != 0 ? stage : reinterpret_cast<uint8_t *>(rows)), from,
                                           stage_stride != 0 ? stage_stride : stride, t->nb[1],
                                           stage_stride != 0 ? proto::htp_fa_staged_row_bytes(type, d) : d * elem, b.n, tag);
            };
            push_rows(s.k_stage, s.k, dma_addr_at(k_base, k_row), job.k, kp.k_type, kp.d, l.k_stage_stride, l.k_stride, l.k_elem);
            push_rows(s.v_stage, s.v, dma_addr_at(v_base, v_row), job.v, kp.v_type, kp.dv, l.v_stage_stride, l.v_stride, l.v_elem);
            for (uint32_t g = 0; g < kp.heads; ++g) {
                if (job.mask) {
                    const uint32_t off = b.iq1 * job.mask->nb[1] +
                                         proto::fastmodulo(b.iq2 + g, kp.div_mask2) * job.mask->nb[2] +
                                         b.im3 * job.mask->nb[3] + j0 * m_elem;
                    dma_queue_push_ddr_to_vtcm(q, dma_addr_of(s.mask + g), dma_addr_at(m_base, off), 128, 128,
                                               b.n * m_elem, 1, tag);
                } else {
                    dma_queue_push_token(q, s.mask + g, tag);
                }
            }
            dma_queue_push_ddr_to_vtcm(q, dma_addr_of(s.q),
                                       dma_addr_at(q_base, b.iq1 * job.q->nb[1] + b.iq2 * job.q->nb[2] + b.iq3 * job.q->nb[3]),
                                       proto::htp_fa_pad(kp.d) * 4, job.q->nb[2], kp.d * 4, kp.heads, tag);
        },
        [&](uint32_t k, const fa_block & b) {
            const fa_slot  s  = slot_at(slots, l, k);
            const uint32_t dp = proto::htp_fa_pad(kp.d), dvp = proto::htp_fa_pad(kp.dv);
            if (l.k_stage_stride != 0) {  // once for all the item's heads
                hvx_kv_dequant_rows(kp.k_type, s.k_stage, l.k_stage_stride, reinterpret_cast<uint8_t *>(s.k), l.k_stride,
                                    b.n, kp.d);
            }
            if (l.v_stage_stride != 0) {
                hvx_kv_dequant_rows(kp.v_type, s.v_stage, l.v_stage_stride, reinterpret_cast<uint8_t *>(s.v), l.v_stride,
                                    b.n, kp.dv);
            }
            for (uint32_t g = 0; g < kp.heads; ++g) {
                const fa_memory mem = head_state(scratch, kp.d, kp.dv, g);
                const uint32_t  iq2 = b.iq2 + g;
                if (b.blk == 0) {
                    float ln_slope = 0.0f;  // ALiBi: GGML's per-head powers of m0 and m1, as e^(ln 2 * c * power)
                    if (kp.n_head_log2 != 0) {
                        const bool  low = iq2 < kp.n_head_log2;
                        const float c   = __builtin_bit_cast(float, low ? kp.alibi_c0 : kp.alibi_c1);
                        ln_slope        = c * float(low ? iq2 + 1 : 2 * (iq2 - kp.n_head_log2) + 1) * 0.693147181f;
                    }
                    fa_begin(mem, reinterpret_cast<const HVX_Vector *>(s.q + g * dp * 4), dp, dvp, ln_slope);
                }
                fa_accumulate(mem, s.v, fa_scores(mem, s.k, s.mask + g, b.n, kp, l, mem.stats[2]), b.n, kp, l);
                if (b.last) {
                    float sink = 0.0f;
                    if (kp.has_sinks) {
                        __builtin_memcpy(&sink, sinks + iq2 * 4, 4);  // a small DDR table: a scalar read
                    }
                    fa_finish(mem, reinterpret_cast<HVX_Vector *>(s.out + g * dvp * 4), kp.has_sinks != 0, sink, dvp);
                }
            }
        },
        [&](uint32_t k, const fa_block & b) -> uint32_t {
            if (!b.last) {
                return 0;
            }
            dma_queue_push_vtcm_to_ddr(q, dma_addr_at(o_base, b.iq2 * job.dst->nb[1] + b.iq1 * job.dst->nb[2] + b.iq3 * job.dst->nb[3]),
                                       dma_addr_of(slot_at(slots, l, k).out), job.dst->nb[1], proto::htp_fa_pad(kp.dv) * 4,
                                       kp.dv * 4, kp.heads, trace_info(b.row));
            return 1;
        });
}

} // namespace

bool guard_flash_attn(const htp_op_context * octx) {
    htp_flash_attn_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * q    = octx->src[0];
    const htp_tensor * k    = octx->src[1];
    const htp_tensor * mask = octx->src[3];
    const uint32_t     mask_kind = proto::htp_fa_mask_kind(mask);
    return proto::htp_fa_layout_valid(*q, *k, *octx->src[2], mask, octx->src[4], *octx->dst[0], true) &&
           kp.k_type == k->type && kp.v_type == octx->src[2]->type && kp.n_threads >= 1 && kp.n_threads <= octx->n_threads && kp.n_slots >= 2 &&
           kp.n_slots <= proto::HTP_FA_MAX_SLOTS && kp.d == q->ne[0] && kp.dv == octx->src[2]->ne[0] &&
           kp.n_kv == k->ne[1] && kp.n_blocks >= 1 &&
           (kp.n_blocks - 1) * HTP_FA_BLOCK < kp.n_kv && kp.n_blocks * HTP_FA_BLOCK >= kp.n_kv &&
           kp.heads >= 1 && kp.heads <= proto::HTP_FA_MAX_HEADS &&
           kp.vtcm_size == proto::htp_fa_vtcm_size(kp.n_threads, kp.n_slots, kp.k_type, kp.v_type, kp.d, kp.dv, kp.heads) &&
           kp.mask == mask_kind &&
           kp.has_sinks == (octx->src[4] != nullptr) && uint64_t(kp.div_head.d) * kp.heads == q->ne[2] &&
           kp.div_group.d >= 1 && heads_divide_group(kp.heads, kp.div_group.d) &&
           kp.div_group.d * k->ne[2] == q->ne[2] && (mask == nullptr || kp.div_mask2.d == mask->ne[2]) &&
           uint64_t(kp.items_per_thread) * kp.n_threads >= uint64_t(q->ne[1]) * q->ne[3] * kp.div_head.d;
}

uint32_t op_flash_attn(htp_op_context * octx) {
    fa_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx  = octx;
    job.q     = octx->src[0];
    job.k     = octx->src[1];
    job.v     = octx->src[2];
    job.mask  = octx->src[3];
    job.sinks = octx->src[4];
    job.dst   = octx->dst[0];
    vtcm_arena vtcm(octx->vtcm_base, octx->vtcm_size);
    job.vtcm = vtcm.take(job.kp.vtcm_size);
    if (!vtcm.ok()) {
        return proto::HTP_STATUS_VTCM_TOO_SMALL;
    }
    // Each thread's share, from the same sizes the host planned with (no division here).
    job.layout           = proto::htp_fa_slot_layout_of(job.kp.k_type, job.kp.v_type, job.kp.d, job.kp.dv, job.kp.heads);
    job.thread_bytes     = job.kp.n_slots * job.layout.bytes + job.kp.heads * proto::htp_fa_head_scratch_bytes(job.kp.d, job.kp.dv);
    job.item0            = 0;
    job.item_end         = job.q->ne[1] * job.q->ne[3] * job.kp.div_head.d;
    job.items_per_thread = job.kp.items_per_thread;
    if (octx->mdev->count > 1) {
        // Items split over the group in any units: every output row leaves VTCM by DMA, which the
        // 128-byte line rule exempts.
        const htp_tensor_mdev_range part =
            htp_tensor_mdev_partition(job.item_end, 1, octx->mdev->idx, octx->mdev->count, &octx->mdev->count_div);
        job.item0            = part.start;
        job.item_end         = part.start + part.count;
        job.items_per_thread = ceil_div_small(part.count, job.kp.n_threads);
        if (part.count == 0) {
            return proto::HTP_STATUS_OK;
        }
    }
    work_queue_run(octx->work, fa_thread, &job, job.kp.n_threads);
    return proto::HTP_STATUS_OK;
}

} // namespace hexnpu::htp
