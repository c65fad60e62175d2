// ALLREDUCE (proto/htp-allreduce.h): the member's chunks, each thread's in turn through two slots.
// A chunk of every source lands by DMA; the sum (fp32, sources in order) is written after them in
// the slot; it leaves by DMA into every source.
#include "htp-tensor.h"
#include "hvx-arith.h"
#include "hvx-hf-rows.h"
#include "item-job.h"
#include "ops.h"
#include "stream-pipeline.h"
#include "proto/htp-allreduce.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::HTP_ALLREDUCE_CHUNK_ELEMS;
using proto::htp_allreduce_kparams;

struct chunk {
    uint32_t row;     // the chunk's index (trace info)
    uint32_t offset;  // bytes into every source
    uint32_t bytes;
};

struct allreduce_job {
    const htp_op_context * octx;
    htp_allreduce_kparams  kp;
    uint8_t *              vtcm;
    item_range             items;
};

inline HVX_Vector * vec(uint8_t * p) { return reinterpret_cast<HVX_Vector *>(p); }

// The chunk's n_vec vectors of every source (chunk_bytes apart from the slot) summed after them.
__attribute__((noinline)) void sum_f32(uint8_t * slot, uint32_t chunk_bytes, uint32_t n_ranks, uint32_t n_vec) {
    HVX_Vector *       acc = vec(slot + n_ranks * chunk_bytes);
    const HVX_Vector * s0  = vec(slot);
    for (uint32_t v = 0; v < n_vec; ++v) {
        acc[v] = s0[v];
    }
    for (uint32_t r = 1; r < n_ranks; ++r) {
        const HVX_Vector * src = vec(slot + r * chunk_bytes);
        for (uint32_t v = 0; v < n_vec; ++v) {
            acc[v] = hvx_sf_add(acc[v], src[v]);
        }
    }
}

// fp16 sources: each vector's 64 halves widened (even and odd lanes), summed in fp32, narrowed once.
__attribute__((noinline)) void sum_f16(uint8_t * slot, uint32_t chunk_bytes, uint32_t n_ranks, uint32_t n_vec) {
    HVX_Vector * acc = vec(slot + n_ranks * chunk_bytes);
    for (uint32_t v = 0; v < n_vec; ++v) {
        HVX_Vector even, odd;
        hvx_hf_pairs_to_sf(vec(slot)[v], &even, &odd);
        for (uint32_t r = 1; r < n_ranks; ++r) {
            HVX_Vector e, o;
            hvx_hf_pairs_to_sf(vec(slot + r * chunk_bytes)[v], &e, &o);
            even = hvx_sf_add(even, e);
            odd  = hvx_sf_add(odd, o);
        }
        acc[v] = hvx_sf_interleave_to_hf(even, odd);
    }
}

void allreduce_thread(uint32_t, uint32_t i, void * data) {
    const allreduce_job &         job = *static_cast<const allreduce_job *>(data);
    const htp_allreduce_kparams & kp  = job.kp;
    const uint32_t chunk_bytes = HTP_ALLREDUCE_CHUNK_ELEMS * kp.elem_bytes;
    const uint32_t last_bytes  = kp.n_elems * kp.elem_bytes - (kp.n_items - 1) * chunk_bytes;
    uint32_t       it, end;
    thread_items(job.items, i, &it, &end);
    dma_queue * q    = &job.octx->dma[i];
    uint8_t *   area = job.vtcm + size_t(i) * proto::htp_allreduce_thread_bytes(kp.elem_bytes, kp.n_ranks);
    dma_addr_t  base[proto::HTP_ALLREDUCE_MAX_RANKS];
    for (uint32_t r = 0; r < kp.n_ranks; ++r) {
        base[r] = htp_tensor_dma_addr(job.octx->plat, job.octx->src[r]);
    }
    auto slot_of = [&](uint32_t s) { return area + s * (kp.n_ranks + 1) * chunk_bytes; };
    stream_blocks<2, chunk>(
        q, &job.octx->trace[i], 2, kp.n_ranks,
        [&](chunk & b) {
            if (it >= end) {
                return false;
            }
            b = chunk{it, it * chunk_bytes, it + 1 == kp.n_items ? last_bytes : chunk_bytes};
            ++it;
            return true;
        },
        [&](uint32_t s, const chunk & b) { dma_queue_push_token(q, slot_of(s), trace_info(b.row)); },
        [&](uint32_t s, const chunk & b) {
            for (uint32_t r = 0; r < kp.n_ranks; ++r) {
                dma_queue_push_ddr_to_vtcm(q, dma_addr_of(slot_of(s) + r * chunk_bytes), dma_addr_at(base[r], b.offset),
                                           b.bytes, b.bytes, b.bytes, 1, trace_info(b.row));
            }
        },
        [&](uint32_t s, const chunk & b) {
            const uint32_t n_vec = (b.bytes + 127) / 128;
            if (kp.elem_bytes == 4) {
                sum_f32(slot_of(s), chunk_bytes, kp.n_ranks, n_vec);
            } else {
                sum_f16(slot_of(s), chunk_bytes, kp.n_ranks, n_vec);
            }
        },
        [&](uint32_t s, const chunk & b) {
            for (uint32_t r = 0; r < kp.n_ranks; ++r) {
                dma_queue_push_vtcm_to_ddr(q, dma_addr_at(base[r], b.offset),
                                           dma_addr_of(slot_of(s) + kp.n_ranks * chunk_bytes), b.bytes, b.bytes,
                                           b.bytes, 1, trace_info(b.row));
            }
            return kp.n_ranks;
        });
}

} // namespace

bool guard_allreduce(const htp_op_context * octx) {
    htp_allreduce_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    if (kp.n_ranks < 2 || kp.n_ranks > proto::HTP_ALLREDUCE_MAX_RANKS || (kp.elem_bytes != 4 && kp.elem_bytes != 2)) {
        return false;
    }
    const proto::htp_tensor * src0 = octx->src[0];
    for (uint32_t r = 0; r < proto::HTP_ALLREDUCE_MAX_RANKS; ++r) {
        const proto::htp_tensor * s = octx->src[r];
        // Exactly n_ranks sources, each its own destination (the same tensor of the batch).
        if ((r < kp.n_ranks) != (s != nullptr) || octx->dst[r] != s ||
            (s != nullptr && !proto::htp_allreduce_source_valid(*s, *src0))) {
            return false;
        }
    }
    const uint64_t n = uint64_t(src0->ne[0]) * src0->ne[1] * src0->ne[2] * src0->ne[3];
    return kp.elem_bytes == (src0->type == proto::HTP_TYPE_F32 ? 4u : 2u) && n == kp.n_elems && n != 0 &&
           kp.n_items >= 1 && uint64_t(kp.n_items) * HTP_ALLREDUCE_CHUNK_ELEMS >= n &&
           uint64_t(kp.n_items - 1) * HTP_ALLREDUCE_CHUNK_ELEMS < n && kp.n_threads >= 1 &&
           kp.n_threads <= octx->n_threads &&
           uint64_t(kp.vtcm_size) == uint64_t(kp.n_threads) * proto::htp_allreduce_thread_bytes(kp.elem_bytes, kp.n_ranks);
}

uint32_t op_allreduce(htp_op_context * octx) {
    allreduce_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx = octx;
    return run_item_job(octx, job, job.kp.n_items, job.kp.vtcm_size, job.kp.n_threads, allreduce_thread);
}

} // namespace hexnpu::htp
