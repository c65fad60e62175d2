// The test variant's ops (libhexnpu-htp-vNN-test.so and the in-process test library only).
// TEST_STREAM is dst = src * scale through the very pipeline the real streaming ops use
// (ops/stream-pipeline.h, ops/eltwise-rows.h), at any depth up to HTP_TEST_STREAM_MAX_SLOTS, with
// the deliberate misuses the strict virtual NPU must catch; the others fault, hang or crash on
// purpose.
#include "dma-queue.h"
#include "hmx-queue.h"
#include "hmx.h"
#include "htp-ctx.h"
#include "htp-tensor.h"
#include "ops/eltwise-rows.h"
#include "ops/ops.h"
#include "ops/row-walk.h"
#include "ops/stream-pipeline.h"
#include "proto/htp-test-stream.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-status.h"
#include "vnpu/hvx/hvx.h"

namespace hexnpu::htp {

namespace {

using proto::htp_tensor;
using proto::htp_test_stream_kparams;

constexpr uint32_t STREAM_STREAMS = 2;  // src, dst

struct rules_read_before_pop {
    static constexpr bool read_before_pop = true;
    static constexpr bool skip_drain      = false;
};
struct rules_skip_drain {
    static constexpr bool read_before_pop = false;
    static constexpr bool skip_drain      = true;
};

// One DMA block: nrows rows from row on, all in one (i2, i3) slice.
struct stream_block {
    uint32_t row;
    uint32_t nrows;
    uint32_t src_offset;
    uint32_t dst_offset;
};

struct stream_job {
    const htp_op_context *  octx;
    htp_test_stream_kparams kp;
    const htp_tensor *      src;
    const htp_tensor *      dst;
    eltwise_rows            rows_plan;
};

// The splat happens here, not in the caller: HVX registers do not survive the DMA calls around
// each block, so a vector kept across them would be spilled and reloaded every block.
void scale_vectors(uint8_t * dst, const uint8_t * src, uint32_t n_vectors, uint32_t scale_bits) {
    const HVX_Vector   vscale = Q6_V_vsplat_R(int32_t(scale_bits));
    const HVX_Vector * s      = reinterpret_cast<const HVX_Vector *>(src);
    HVX_Vector *       d      = reinterpret_cast<HVX_Vector *>(dst);
    for (uint32_t j = 0; j < n_vectors; ++j) {
        d[j] = Q6_Vsf_equals_Vqf32(Q6_Vqf32_vmpy_VsfVsf(s[j], vscale));
    }
}

template <typename Rules> void stream_rows(const stream_job & job, uint32_t i, uint32_t ir0, uint32_t ir1) {
    const htp_test_stream_kparams & kp       = job.kp;
    const eltwise_rows &            plan     = job.rows_plan;
    dma_queue *                     q        = &job.octx->dma[i];
    const dma_addr_t                src_base = htp_tensor_dma_addr(job.octx->plat, job.src);
    const dma_addr_t                dst_base = htp_tensor_dma_addr(job.octx->plat, job.dst);
    const uint32_t                  stride   = kp.pipe.vtcm_row_stride;

    row_cursor next = row_cursor_at(ir0, kp.div_ne1, kp.div_ne2);
    stream_blocks<proto::HTP_TEST_STREAM_MAX_SLOTS, stream_block, Rules>(
        q, &job.octx->trace[i], kp.pipe.n_slots, 1,
        [&](stream_block & b) {
            if (next.row >= ir1) {
                return false;
            }
            const uint32_t n = block_rows_at(next, kp.pipe.block_rows, ir1, kp.div_ne1.d);
            b = stream_block{next.row, n, row_offset(job.src, next.i1, next.i2, next.i3),
                             row_offset(job.dst, next.i1, next.i2, next.i3)};
            row_cursor_advance(next, n, kp.div_ne1.d, kp.div_ne2.d);
            return true;
        },
        [&](uint32_t k, const stream_block & b) { dma_queue_push_token(q, plan.slot(i, 1, k), trace_info(b.row)); },
        [&](uint32_t k, const stream_block & b) {
            dma_queue_push_ddr_to_vtcm(q, dma_addr_of(plan.slot(i, 0, k)), dma_addr_at(src_base, b.src_offset), stride,
                                       job.src->nb[1], kp.pipe.row_size, b.nrows, trace_info(b.row));
        },
        [&](uint32_t k, const stream_block & b) {
            scale_vectors(plan.slot(i, 1, k), plan.slot(i, 0, k), b.nrows * (stride / 128), kp.scale);
        },
        [&](uint32_t k, const stream_block & b) {
            uint8_t * d = plan.slot(i, 1, k);
            dma_queue_push_vtcm_to_ddr(q, dma_addr_at(dst_base, b.dst_offset), dma_addr_of(d), job.dst->nb[1], stride,
                                       kp.pipe.row_size, b.nrows, trace_info(b.row));
            if (kp.misuse == proto::HTP_TEST_STREAM_WRITE_AFTER_PUSH) {
                HVX_Vector * first = reinterpret_cast<HVX_Vector *>(d);
                *first             = Q6_V_vnot_V(*first);  // surely changed, while the writeback still reads d
            }
        });
}

void stream_thread(uint32_t, uint32_t i, void * data) {
    const stream_job & job = *static_cast<const stream_job *>(data);
    uint32_t           ir0, ir1;
    if (!job.rows_plan.thread_range(i, &ir0, &ir1)) {
        return;
    }
    switch (job.kp.misuse) {
        case proto::HTP_TEST_STREAM_READ_BEFORE_POP: return stream_rows<rules_read_before_pop>(job, i, ir0, ir1);
        case proto::HTP_TEST_STREAM_SKIP_DRAIN: return stream_rows<rules_skip_drain>(job, i, ir0, ir1);
        default: return stream_rows<pipeline_rules_kept>(job, i, ir0, ir1);
    }
}

bool guard_test_stream(const htp_op_context * octx) {
    htp_test_stream_kparams kp;
    __builtin_memcpy(&kp, octx->op->kparams, sizeof(kp));
    const htp_tensor * dst = octx->dst[0];
    return eltwise_pipeline_fits(octx, kp.pipe, STREAM_STREAMS, proto::HTP_TEST_STREAM_MAX_SLOTS) &&
           same_dims(octx->src[0], dst) && eltwise_walk_fits(dst, kp.div_ne1, kp.div_ne2) &&
           eltwise_rows_fit(octx->src[0], kp.pipe.row_size) && eltwise_rows_fit(dst, kp.pipe.row_size) &&
           kp.misuse <= proto::HTP_TEST_STREAM_SKIP_DRAIN;
}

uint32_t op_test_stream(htp_op_context * octx) {
    stream_job job{};
    __builtin_memcpy(&job.kp, octx->op->kparams, sizeof(job.kp));
    job.octx = octx;
    job.src  = octx->src[0];
    job.dst  = octx->dst[0];
    return run_eltwise_job(octx, job, STREAM_STREAMS, stream_thread);
}

bool no_guard(const htp_op_context *) { return true; }

uint32_t op_test_fault(htp_op_context * octx) {
    const volatile uint8_t * p = octx->plat->window_base + uint32_t(octx->op->params[0]);
    (void) *p;
    return proto::HTP_STATUS_OK;
}

uint32_t op_test_hang(htp_op_context * octx) {
    // Sleeps rather than spins: the session's deadline, not a busy core, is what is under test.
    const uint32_t never = 0;
    for (;;) {
        octx->plat->wait_on(octx->plat->ctx, &never, 0);
    }
}

uint32_t op_test_crash(htp_op_context *) { __builtin_trap(); }

// TEST_HMX_MISUSE: one broken HMX rule, on the HMX queue thread but for NOT_OWNER; the op itself
// returns OK, and the unit's fault must fail it (the batch loop's op_done: STRICT).
struct hmx_misuse_job {
    const htp_op_context * octx;
    int32_t                kind;
};

void hmx_misuse(void * data) {
    const hmx_misuse_job & job  = *static_cast<const hmx_misuse_job *>(data);
    hmx_unit *             unit = static_cast<hmx_unit *>(job.octx->plat->hmx_unit);
    uint8_t *              vtcm = job.octx->vtcm_base;
    alignas(2048) static uint16_t ddr_tiles[2][HMX_TILE_ELEMS];
    switch (job.kind) {
        case proto::HTP_TEST_HMX_MISALIGNED: hmx_mac_fp16(unit, vtcm + 128, vtcm + 4096, 1); break;
        case proto::HTP_TEST_HMX_NOT_VTCM: hmx_mac_fp16(unit, ddr_tiles[0], ddr_tiles[1], 1); break;
        case proto::HTP_TEST_HMX_BANK_CROSSING:
            hmx_mac_fp16(unit, vtcm + HMX_VTCM_BANK_BYTES - HMX_TILE_BYTES, vtcm, 2);
            break;
        default: hmx_store_fp16(unit, vtcm); break;
    }
}

bool guard_test_hmx_misuse(const htp_op_context * octx) {
    return octx->hmx != nullptr && octx->op->params[0] >= proto::HTP_TEST_HMX_NOT_OWNER &&
           octx->op->params[0] <= proto::HTP_TEST_HMX_NO_SCALE_BIAS && octx->vtcm_size > HMX_VTCM_BANK_BYTES;
}

uint32_t op_test_hmx_misuse(htp_op_context * octx) {
    hmx_misuse_job job{octx, octx->op->params[0]};
    if (job.kind == proto::HTP_TEST_HMX_NOT_OWNER) {
        uint8_t * vtcm = octx->vtcm_base;
        hmx_mac_fp16(static_cast<hmx_unit *>(octx->plat->hmx_unit), vtcm, vtcm + HMX_TILE_BYTES, 1);
        return proto::HTP_STATUS_OK;
    }
    hmx_queue_push(octx->hmx, hmx_misuse, &job);
    hmx_queue_pop(octx->hmx);
    return proto::HTP_STATUS_OK;
}

// TEST_MDEV_FAULT: only the victim member misbehaves; the others' part of the op is to reach the
// barrier.
bool guard_test_mdev_fault(const htp_op_context * octx) {
    return octx->op->params[1] >= proto::HTP_TEST_MDEV_ERROR && octx->op->params[1] <= proto::HTP_TEST_MDEV_DELAY;
}

uint32_t op_test_mdev_fault(htp_op_context * octx) {
    if (uint32_t(octx->op->params[0]) != octx->mdev->idx && octx->op->params[1] != proto::HTP_TEST_MDEV_HVX_STORE) {
        return proto::HTP_STATUS_OK;
    }
    switch (octx->op->params[1]) {
        case proto::HTP_TEST_MDEV_ERROR: return proto::HTP_STATUS_INTERNAL_ERR;
        case proto::HTP_TEST_MDEV_STALL: {
            const uint32_t never = 0;
            for (;;) {
                octx->plat->wait_on(octx->plat->ctx, &never, 0);
            }
        }
        case proto::HTP_TEST_MDEV_CRASH: __builtin_trap();
        case proto::HTP_TEST_MDEV_DELAY: {
            const uint32_t never = 0;
            const uint64_t end   = octx->plat->usecs(octx->plat->ctx) + uint64_t(uint32_t(octx->op->params[2])) * 1000u;
            for (uint64_t now; (now = octx->plat->usecs(octx->plat->ctx)) < end;) {
                octx->plat->fence_wait(octx->plat->ctx, &never, 0, uint32_t(end - now));
            }
            return proto::HTP_STATUS_OK;
        }
        default: {
            // Every member listed in the params' bit mask (params[2]) stores one vector at dst's start.
            if (octx->dst[0] != nullptr && (uint32_t(octx->op->params[2]) >> octx->mdev->idx & 1u) != 0) {
                *reinterpret_cast<HVX_Vector *>(htp_tensor_ptr(octx->plat, octx->dst[0])) = Q6_V_vsplat_R(int32_t(octx->mdev->idx));
            }
            return proto::HTP_STATUS_OK;
        }
    }
}

// TEST_DMA_ONLY_BREACH: an HVX load from a source the op promised to read by DMA alone; dst[0]
// gets the vector. Fine in the window; in the extended region (v81) the load faults.
uint32_t op_test_dma_only_breach(htp_op_context * octx) {
    const HVX_Vector v = *reinterpret_cast<const HVX_Vector *>(htp_tensor_ptr(octx->plat, octx->src[0]));
    *reinterpret_cast<HVX_Vector *>(htp_tensor_ptr(octx->plat, octx->dst[0])) = v;
    return proto::HTP_STATUS_OK;
}

bool guard_test_dma_only_breach(const htp_op_context * octx) {
    return octx->src[0]->size >= 128 && octx->dst[0]->size >= 128 && (octx->dst[0]->flags & proto::HTP_TENSOR_COMPUTE) != 0;
}

// The guards the registry names for the test ops that take no operands.
constexpr bool (*guard_test_fault)(const htp_op_context *) = no_guard;
constexpr bool (*guard_test_hang)(const htp_op_context *)  = no_guard;
constexpr bool (*guard_test_crash)(const htp_op_context *) = no_guard;

} // namespace

const op_entry * find_test_op(uint32_t opcode) {
    switch (opcode) {
#define HTP_TEST_OP(name, kernel, n_src, n_dst, dma_only, written_by)                  \
    case proto::HTP_OP_TEST_##name: {                                                  \
        static constexpr op_entry entry = {op_##kernel, guard_##kernel, n_src, n_dst}; \
        return &entry;                                                                 \
    }
#include "proto/htp-op-list.inc"
        default: return nullptr;
    }
}

} // namespace hexnpu::htp
