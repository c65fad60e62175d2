// MUL_MAT with F32, F16 or BF16 weights on HVX (proto/htp-matmul.h): the activations stay fp32 —
// staged, padded with zeros to whole vectors, and for 16-bit weights stored with each 64-element
// chunk's even elements before its odd ones, the order in which a weight vector widens. A weight
// block is 32 rows of its columns, one 2-D DMA transfer; per activation row the 32 rows' lane-wise
// products fold into one vector of row sums (hvx-float-dot.h). Any K: the weights' last vector
// past K is zeroed in VTCM before it is used (it holds whatever the slot held).
#include "hvx-float-dot.h"
#include "matmul-job.h"
#include "ops.h"
#include "proto/htp-matmul.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::htp_matmul_kparams;

constexpr uint32_t HTP_TYPE_BF16 = 30;

void prepare_thread(uint32_t n, uint32_t i, void * data) {
    const mm_job & job   = *static_cast<const mm_job *>(data);
    const uint32_t nv    = job.kp.n_k_blocks;
    const bool     pairs = job.kp.wtype != HTP_TYPE_F32;
    for_each_act_row(job, n, i, nv, [&](uint32_t j, const HVX_Vector * x) {
        HVX_Vector * out = reinterpret_cast<HVX_Vector *>(act_row(job, j));
        if (pairs) {
            for (uint32_t v = 0; v < nv; v += 2) {
                const HVX_VectorPair d = Q6_W_vdeal_VVR(x[v + 1], x[v], -4);  // evens, odds
                out[v]                 = Q6_V_lo_W(d);
                out[v + 1]             = Q6_V_hi_W(d);
            }
        } else {
            for (uint32_t v = 0; v < nv; ++v) {
                out[v] = x[v];
            }
        }
        trace_event_stop(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_A_QUANT, trace_info(job.row0 + j));
    });
}

// Bytes per weight element.
uint32_t elem_bytes(const htp_matmul_kparams & kp) { return kp.tile_size / proto::TILE_N_COLS; }

// Weight columns in block b: its activation blocks' 32 each, up to K.
uint32_t block_cols(const htp_matmul_kparams & kp, const mm_block & b) {
    const uint32_t col0 = b.kt0 * proto::TILE_N_COLS, cols = b.ntiles * proto::TILE_N_COLS;
    return kp.k - col0 < cols ? kp.k - col0 : cols;
}

void push_block(const mm_job & job, dma_queue * q, uint8_t * slot, dma_addr_t w_base, const mm_block & b) {
    const htp_matmul_kparams & kp     = job.kp;
    const uint32_t             offset = job.w_offset + b.row * proto::TILE_N_ROWS * job.src0->nb[1] +
                                        b.kt0 * proto::TILE_N_COLS * elem_bytes(kp);
    dma_queue_push_ddr_to_vtcm(q, dma_addr_of(slot), dma_addr_at(w_base, offset), kp.slot_size, job.src0->nb[1],
                               block_cols(kp, b) * elem_bytes(kp), strip_rows(kp, b.row), trace_info(b.row));
}

// A 16-bit block widened to fp32 in VTCM, each row's vectors in the activations' even/odd order:
// rows of b.ntiles vectors.
template <bool Bf16> const HVX_Vector * widen_block(const mm_job & job, const uint8_t * slot, const mm_block & b,
                                                    HVX_Vector * wide) {
    for (uint32_t r = 0; r < strip_rows(job.kp, b.row); ++r) {
        const HVX_Vector * w   = reinterpret_cast<const HVX_Vector *>(slot + r * job.kp.slot_size);
        HVX_Vector *       out = wide + r * b.ntiles;
        for (uint32_t v = 0; v < b.ntiles / 2; ++v) {
            if constexpr (Bf16) {
                hvx_bf16_pairs_to_sf(w[v], &out[2 * v], &out[2 * v + 1]);
            } else {
                hvx_hf_pairs_to_sf(w[v], &out[2 * v], &out[2 * v + 1]);
            }
        }
    }
    return wide;
}

template <uint32_t Type>
void compute_block(const mm_job & job, uint32_t i, uint8_t * slot, const mm_block & b, HVX_Vector * acc) {
    const htp_matmul_kparams & kp    = job.kp;
    const uint32_t             bytes = block_cols(kp, b) * elem_bytes(kp);
    if (bytes % 128 != 0) {
        // The rows' last vector past K: zero.
        const HVX_VectorPred keep = Q6_Q_vsetq_R(int32_t(bytes % 128));
        for (uint32_t r = 0; r < strip_rows(kp, b.row); ++r) {
            HVX_Vector * last = reinterpret_cast<HVX_Vector *>(slot + r * kp.slot_size + bytes / 128 * 128);
            *last             = Q6_V_vmux_QVV(keep, *last, Q6_V_vzero());
        }
    }
    // Several activation rows: a 16-bit block is widened once, then read as fp32.
    const HVX_Vector * wide = nullptr;
    if (Type != HTP_TYPE_F32 && job.nrows > 1) {
        wide = widen_block<Type == HTP_TYPE_BF16>(job, slot, b, wide_area(job, i));
    }
    for (uint32_t j = 0; j < job.nrows; ++j) {
        const HVX_Vector * a   = reinterpret_cast<const HVX_Vector *>(act_row(job, j)) + b.kt0;
        auto               row = [&](uint32_t r) __attribute__((always_inline)) {
            const HVX_Vector * w = reinterpret_cast<const HVX_Vector *>(slot + r * kp.slot_size);
            if constexpr (Type == HTP_TYPE_F32) {
                return hvx_sf_dot_f32(w, a, b.ntiles);
            } else {
                return wide ? hvx_sf_dot_f32(wide + r * b.ntiles, a, b.ntiles)
                            : hvx_sf_dot_16<Type == HTP_TYPE_BF16>(w, a, b.ntiles / 2);
            }
        };
        acc[j] = hvx_sf_add(acc[j], hvx_sf_row_sums<proto::TILE_N_ROWS>(row, 0));
    }
}

using block_fn = void (*)(const mm_job &, uint32_t, uint8_t *, const mm_block &, HVX_Vector *);

void dot_thread(uint32_t, uint32_t i, void * data) {
    const mm_job &   job    = *static_cast<const mm_job *>(data);
    dma_queue *      q      = &job.octx->dma[i];
    const dma_addr_t w_base = htp_tensor_dma_addr(job.octx->plat, job.src0);
    const block_fn   kernel = job.kp.wtype == HTP_TYPE_F32   ? compute_block<HTP_TYPE_F32>
                              : job.kp.wtype == HTP_TYPE_F16 ? compute_block<HTP_TYPE_F16>
                                                             : compute_block<HTP_TYPE_BF16>;
    stream_strips(
        job, i, job.kp.tiles_per_block, 1,
        [&](uint32_t k, const mm_block & b) { push_block(job, q, weight_slot(job, i, k), w_base, b); },
        [&](uint32_t k, const mm_block & b, HVX_Vector * acc) { kernel(job, i, weight_slot(job, i, k), b, acc); });
}

} // namespace

bool guard_matmul_float(const htp_op_context * octx, bool by_id) {
    htp_matmul_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const proto::htp_tensor * src0  = octx->src[0];
    const uint32_t            esize = kp.wtype == HTP_TYPE_F32 ? 4 : 2;
    const uint32_t            pairs = kp.wtype == HTP_TYPE_F32 ? 1 : 2;  // activation vectors per weight vector
    const bool plan = proto::htp_matmul_float_weight(kp.wtype) && (src0->flags & proto::HTP_TENSOR_TILED) == 0 &&
                      src0->nb[0] == esize && kp.k >= 1 && kp.tile_shift == 0 &&
                      kp.n_k_blocks == (kp.k + 32 * pairs - 1) / (32 * pairs) * pairs &&
                      kp.tile_size == proto::TILE_N_COLS * esize && kp.tiles_per_block % pairs == 0 &&
                      kp.slot_size == kp.tiles_per_block * kp.tile_size && kp.slot_size % 128 == 0 &&
                      kp.slot_stride >= uint64_t(proto::TILE_N_ROWS) * kp.slot_size &&
                      kp.act_row_bytes == kp.n_k_blocks * 128 &&
                      kp.thread_bytes >= kp.slots_bytes + uint64_t(kp.act_rows) * 128 * (1 + kp.n_slots) +
                                             proto::htp_matmul_wide_bytes(kp);
    const uint64_t w_bytes = uint64_t(src0->ne[2] - 1) * src0->nb[2] + uint64_t(src0->ne[3] - 1) * src0->nb[3] +
                             uint64_t(kp.n - 1) * src0->nb[1] + uint64_t(kp.k) * esize;
    return plan && (by_id ? guard_matmul_id_plan(octx, kp, w_bytes) : guard_matmul_plan(octx, kp, w_bytes));
}

uint32_t op_matmul_float(htp_op_context * octx, bool by_id) {
    return by_id ? run_matmul_id_job(octx, prepare_thread, dot_thread) : run_matmul_job(octx, prepare_thread, dot_thread);
}

} // namespace hexnpu::htp
