// What the two HVX matmul kernels share (proto/htp-matmul.h): the quantized one (matmul-ops.cpp)
// and the float-weight one (matmul-float-ops.cpp), for MUL_MAT and MUL_MAT_ID. All walk dst the
// same way — per group of activation rows that multiply one weight matrix (MUL_MAT: rows of one
// (i12, i13) slice; MUL_MAT_ID: the (slot, token) rows routed to one expert), the threads first
// prepare the group's rows in the VTCM act area, then each streams the weight blocks of its 32-row
// strips through the DMA pipeline (stream-pipeline.h), accumulates the strip's 32 x act_rows
// results in VTCM and writes a finished strip back by DMA (MUL_MAT_ID: scattered, a transfer per
// row). The kernels differ in the act-area layout, the weight blocks and the compute.
#pragma once

#include "dma-queue.h"
#include "htp-ctx.h"
#include "htp-tensor.h"
#include "hvx-hf-rows.h"
#include "stream-pipeline.h"
#include "trace.h"
#include "proto/htp-matmul.h"
#include "proto/htp-status.h"
#include "proto/htp-trace.h"
#include "vnpu/hvx/hvx.h"

#include <stdint.h>

namespace hexnpu::htp {

struct mm_job {
    const htp_op_context *     octx;
    proto::htp_matmul_kparams  kp;
    const proto::htp_tensor *  src0;
    const proto::htp_tensor *  src1;
    const proto::htp_tensor *  dst;
    bool                       tiled;
    uint8_t *                  act;      // act area: act_rows rows of act_row_bytes
    uint8_t *                  threads;  // thread i's area at i * thread_bytes
    // The strips [strip0, strip_end) this device computes (all of them unless it is one of a
    // multi-device group), strips_per_thread of them per thread.
    uint32_t strip0, strip_end, strips_per_thread;
    // The group in progress: nrows activation rows (row j at byte a_off[j] of src1, its output
    // row at d_off[j] of dst; without scatter the output rows are dst->nb[1] apart), the byte offset
    // of the weight matrix they multiply, and row0 for the trace's info word.
    uint32_t nrows, row0;
    uint32_t w_offset;
    bool     scatter;
    uint32_t a_off[proto::HTP_MM_MAX_ACT_ROWS];
    uint32_t d_off[proto::HTP_MM_MAX_ACT_ROWS];
};

// One weight DMA block: activation blocks [kt0, kt0 + ntiles) of strip `row` (the trace info).
struct mm_block {
    uint32_t row;
    uint32_t kt0;
    uint32_t ntiles;
};

// Weight rows in strip s: 32, or what is left of n in the last strip.
inline uint32_t strip_rows(const proto::htp_matmul_kparams & kp, uint32_t s) {
    const uint32_t left = kp.n - s * proto::TILE_N_ROWS;
    return left < proto::TILE_N_ROWS ? left : proto::TILE_N_ROWS;
}

inline uint8_t * thread_area(const mm_job & job, uint32_t i) { return job.threads + size_t(i) * job.kp.thread_bytes; }
inline HVX_Vector * acc_area(const mm_job & job, uint32_t i) {
    return reinterpret_cast<HVX_Vector *>(thread_area(job, i) + job.kp.slots_bytes);
}
inline HVX_Vector * out_slot(const mm_job & job, uint32_t i, uint32_t k) {
    return acc_area(job, i) + job.kp.act_rows * (1 + k);
}
inline HVX_Vector * wide_area(const mm_job & job, uint32_t i) {
    return acc_area(job, i) + job.kp.act_rows * (1 + job.kp.n_slots);
}
inline uint8_t * weight_slot(const mm_job & job, uint32_t i, uint32_t k) {
    return thread_area(job, i) + size_t(k) * job.kp.slot_stride;
}
inline uint8_t * act_row(const mm_job & job, uint32_t j) { return job.act + size_t(j) * job.kp.act_row_bytes; }

// An activation row of k elements (src1 F32 or F16, at byte offset `offset` of base) by DMA into
// staging (n_vectors + 1 vectors): F32 rows from its start, F16 rows on the first vector boundary
// past its half, to be widened into its start once landed (landed_act_row).
inline void push_act_row(dma_queue * q, uint8_t * staging, const proto::htp_tensor * src1, dma_addr_t base,
                         uint32_t offset, uint32_t k, uint32_t n_vectors, uint16_t info) {
    const bool     f16     = src1->type == HTP_TYPE_F16;
    const uint32_t bytes   = k * (f16 ? 2 : 4);
    uint8_t *      landing = f16 ? staging + (n_vectors + 1) / 2 * 128 : staging;
    dma_queue_push_ddr_to_vtcm(q, dma_addr_of(landing), dma_addr_at(base, offset), bytes, bytes, bytes, 1, info);
}

// The row push_act_row sent to staging, after its transfer was popped, as fp32 in order from the
// staging's start. The vectors past k are the caller's.
inline HVX_Vector * landed_act_row(uint8_t * staging, const proto::htp_tensor * src1, uint32_t n_vectors) {
    HVX_Vector * x = reinterpret_cast<HVX_Vector *>(staging);
    if (src1->type == HTP_TYPE_F16) {
        hvx_hf_row_to_sf(reinterpret_cast<const HVX_Vector *>(staging + (n_vectors + 1) / 2 * 128), x, n_vectors);
    }
    return x;
}

// Thread i's staging of parity `parity` (two: one lands while the other is prepared).
inline uint8_t * act_staging(const mm_job & job, uint32_t i, uint32_t parity) {
    return thread_area(job, i) + size_t(parity) * proto::htp_matmul_staging_bytes(job.kp);
}

inline void push_group_row(const mm_job & job, uint32_t i, uint32_t j, uint32_t n_vectors, uint32_t parity) {
    push_act_row(&job.octx->dma[i], act_staging(job, i, parity), job.src1, htp_tensor_dma_addr(job.octx->plat, job.src1),
                 job.a_off[j], job.kp.k, n_vectors, trace_info(job.row0 + j));
}

// A staged row's elements from k on zeroed: what the DMA did not write (or widened from stale
// halves). Not inlined: a hoisted zero vector would live across the row loop's calls (a spill).
__attribute__((noinline)) inline void zero_row_tail(HVX_Vector * x, uint32_t k, uint32_t n_vectors) {
    const uint32_t full = k / 32, tail = k % 32;
    if (tail != 0) {
        x[full] = Q6_V_vmux_QVV(Q6_Q_vsetq_R(int32_t(tail * 4)), x[full], Q6_V_vzero());
    }
    for (uint32_t v = full + (tail != 0); v < n_vectors; ++v) {
        x[v] = Q6_V_vzero();
    }
}

// Activation row j of the group (pushed into the staging of its parity) as n_vectors fp32 vectors
// (32 elements each, in order), elements from k on zero: popped, F16 widened, HVX_A_QUANT traced.
inline const HVX_Vector * stage_act_row(const mm_job & job, uint32_t i, uint32_t j, uint32_t n_vectors, uint32_t parity) {
    dma_queue_pop(&job.octx->dma[i]);
    HVX_Vector * x = landed_act_row(act_staging(job, i, parity), job.src1, n_vectors);
    trace_event_start(&job.octx->trace[i], proto::HTP_TRACE_EVT_HVX_A_QUANT, trace_info(job.row0 + j));
    zero_row_tail(x, job.kp.k, n_vectors);
    return x;
}

// Thread i's rows of the group (j = i, i + n, ...), each landing while the one before is prepared:
// prepare(j, x) with x the row as stage_act_row gives it.
template <class Prepare>
void for_each_act_row(const mm_job & job, uint32_t n, uint32_t i, uint32_t n_vectors, Prepare prepare) {
    if (i < job.nrows) {
        push_group_row(job, i, i, n_vectors, 0);
    }
    for (uint32_t j = i, parity = 0; j < job.nrows; j += n, parity ^= 1) {
        if (j + n < job.nrows) {
            push_group_row(job, i, j + n, n_vectors, parity ^ 1);
        }
        prepare(j, stage_act_row(job, i, j, n_vectors, parity));
    }
}

// Not inlined: a hoisted zero vector would have to survive the kernel's calls on the stack.
__attribute__((noinline)) inline void zero_vectors(HVX_Vector * v, uint32_t n) {
    for (uint32_t j = 0; j < n; ++j) {
        v[j] = Q6_V_vzero();
    }
}

// Thread i's strips: blocks of per_block activation blocks, n_inputs DMA transfers each, pushed by
// push(slot, block) and computed by compute(slot, block, acc) into the strip's sums acc (zeroed at
// the strip's first block); a strip's last block moves the sums to the slot's output rows, which
// its writeback sends to dst.
template <class Push, class Compute>
void stream_strips(const mm_job & job, uint32_t i, uint32_t per_block, uint32_t n_inputs, Push push, Compute compute) {
    const proto::htp_matmul_kparams & kp = job.kp;
    const uint32_t                    s0 = job.strip0 + i * job.strips_per_thread;
    const uint32_t s1 = s0 + job.strips_per_thread < job.strip_end ? s0 + job.strips_per_thread : job.strip_end;
    if (s0 >= s1) {
        return;
    }
    dma_queue *      q        = &job.octx->dma[i];
    const dma_addr_t dst_base = htp_tensor_dma_addr(job.octx->plat, job.dst);
    HVX_Vector *     acc      = acc_area(job, i);

    mm_block next{s0, 0, 0};
    auto     take = [&](mm_block & b) {
        if (next.row >= s1) {
            return false;
        }
        const uint32_t left = kp.n_k_blocks - next.kt0;
        b                   = mm_block{next.row, next.kt0, left < per_block ? left : per_block};
        next.kt0 += b.ntiles;
        if (next.kt0 == kp.n_k_blocks) {
            next = mm_block{next.row + 1, 0, 0};
        }
        return true;
    };
    auto token = [&](uint32_t k, const mm_block & b) { dma_queue_push_token(q, out_slot(job, i, k), trace_info(b.row)); };
    auto run   = [&](uint32_t k, const mm_block & b) {
        if (b.kt0 == 0) {
            zero_vectors(acc, job.nrows);
        }
        compute(k, b, acc);
        if (b.kt0 + b.ntiles == kp.n_k_blocks) {
            HVX_Vector * out = out_slot(job, i, k);
            for (uint32_t j = 0; j < job.nrows; ++j) {
                out[j] = acc[j];
            }
        }
    };
    auto writeback = [&](uint32_t k, const mm_block & b) -> uint32_t {
        HVX_Vector * out = out_slot(job, i, k);
        if (b.kt0 + b.ntiles != kp.n_k_blocks) {
            dma_queue_push_token(q, out, trace_info(b.row));  // the strip goes on
            return 1;
        }
        const uint32_t cols  = strip_rows(kp, b.row) * 4;
        const uint32_t strip = b.row * proto::TILE_N_ROWS * 4;
        if (!job.scatter) {
            dma_queue_push_vtcm_to_ddr(q, dma_addr_at(dst_base, job.d_off[0] + strip), dma_addr_of(out),
                                       job.dst->nb[1], 128, cols, job.nrows, trace_info(b.row));
            return 1;
        }
        for (uint32_t j = 0; j < job.nrows; ++j) {
            dma_queue_push_vtcm_to_ddr(q, dma_addr_at(dst_base, job.d_off[j] + strip), dma_addr_of(out + j), cols,
                                       128, cols, 1, trace_info(b.row));
        }
        return job.nrows;
    };
    stream_blocks<proto::HTP_MM_MAX_SLOTS, mm_block>(q, &job.octx->trace[i], kp.n_slots, n_inputs, take, token, push,
                                                     run, writeback);
}

// The guard's checks both kernels share: the plan's loop bounds, fixed arrays and VTCM layout,
// the operands' types and shapes, and every row inside its tensor (the weights' last byte at
// w_bytes, which each kernel computes for its layout), for MUL_MAT and for MUL_MAT_ID.
bool guard_matmul_plan(const htp_op_context * octx, const proto::htp_matmul_kparams & kp, uint64_t w_bytes);
bool guard_matmul_id_plan(const htp_op_context * octx, const proto::htp_matmul_kparams & kp, uint64_t w_bytes);

using mm_thread_fn = void (*)(uint32_t n, uint32_t i, void * job);

// MUL_MAT: the VTCM areas, then per slice and group of activation rows, prepare_rows on up to
// n_threads threads (one row each in turn) and dot on n_threads. Weight matrix (i02, i03) = (i12 / r2,
// i13 / r3), counted rather than divided; flat weights are addressed by their strides, tiled ones
// by w_slice_bytes.
uint32_t run_matmul_job(htp_op_context * octx, mm_thread_fn prepare_rows, mm_thread_fn dot);

// The strips of N (32 output columns: one 128-byte line of every output row) this device
// computes: all of them alone, its share of whole lines in a multi-device group.
inline htp_tensor_mdev_range device_strips(const htp_op_context * octx, const proto::htp_tensor * dst, uint32_t n_strips) {
    if (octx->mdev->count > 1) {
        return htp_tensor_mdev_line_columns(dst, n_strips, *octx->mdev);
    }
    return {0, n_strips};
}

// MUL_MAT_ID's expert ids (I32 [n_used, n_tokens], a small DDR table the NPU reads by scalar
// loads), for both matmul kernels.
struct expert_ids {
    const uint8_t * bytes;
    uint32_t        nb1, n_used, n_tokens;
    int32_t at(uint32_t s, uint32_t t) const {
        int32_t id;
        __builtin_memcpy(&id, bytes + t * nb1 + s * 4, 4);
        return id;
    }
};
inline expert_ids expert_ids_of(const htp_op_context * octx) {
    const proto::htp_tensor * ids = octx->src[2];
    return {htp_tensor_ptr(octx->plat, ids), ids->nb[1], ids->ne[0], ids->ne[1]};
}

// Experts counted per walk of the id table, and routed rows bucketed per walk (by expert, in a
// table on the caller's stack: 2.5 KiB with the counts).
inline constexpr uint32_t MMID_EXPERTS = 128;
inline constexpr uint32_t MMID_TABLE   = 512;

// MUL_MAT_ID's routed rows expert by expert: row(e, s, t) for every (slot s, token t) whose id is
// e, tokens in order and a token's slots in order, then done(e) after e's last row; experts without
// rows, and those routed fewer than min_rows or (max_rows != 0) more than max_rows rows (another
// kernel's share: the host queues HVX for the few and HMX for the many), are skipped. Either
// returns false to stop the walk. The id table is walked a few times, not once per expert: per block of MMID_EXPERTS experts one walk counts their rows (the first also
// checks every id: one outside [0, n_expert) is HTP_STATUS_INVAL_PARAMS before any row), then one
// walk per run of experts whose rows fit MMID_TABLE buckets them. An expert with more rows than
// the table (or ids too many to pack: n_used > 256 or n_tokens > 2^24) is walked alone; its
// rows are the work that walk pays for.
template <class Row, class Done>
uint32_t walk_routed_rows(const expert_ids & ids, uint32_t n_expert, uint32_t min_rows, uint32_t max_rows, Row row,
                          Done done) {
    const uint32_t n_used = ids.n_used, n_tokens = ids.n_tokens;
    const bool     packable = n_used <= 256 && n_tokens <= (1u << 24);
    uint16_t       count[MMID_EXPERTS];  // rows per expert of the block, saturating at MMID_TABLE + 1
    uint16_t       fill[MMID_EXPERTS];   // an expert's next bucket entry, then its bucket's end
    uint32_t       table[MMID_TABLE];    // token << 8 | slot
    for (uint32_t e0 = 0; e0 < n_expert; e0 += MMID_EXPERTS) {
        const uint32_t e1 = n_expert - e0 < MMID_EXPERTS ? n_expert : e0 + MMID_EXPERTS;
        for (uint32_t e = e0; e < e1; ++e) {
            count[e - e0] = 0;
        }
        for (uint32_t t = 0; t < n_tokens; ++t) {
            for (uint32_t s = 0; s < n_used; ++s) {
                const int32_t id = ids.at(s, t);
                if (id < 0 || uint32_t(id) >= n_expert) {
                    return proto::HTP_STATUS_INVAL_PARAMS;
                }
                if (uint32_t(id) >= e0 && uint32_t(id) < e1 && count[id - e0] <= MMID_TABLE) {
                    ++count[id - e0];
                }
            }
        }
        for (uint32_t e = e0; e < e1; ++e) {  // counts saturate above MMID_TABLE: max_rows below it
            if (count[e - e0] < min_rows || (max_rows != 0 && count[e - e0] > max_rows)) {
                count[e - e0] = 0;
            }
        }
        for (uint32_t e = e0; e < e1;) {
            if (count[e - e0] == 0) {
                ++e;
                continue;
            }
            if (!packable || count[e - e0] > MMID_TABLE) {
                for (uint32_t t = 0; t < n_tokens; ++t) {
                    for (uint32_t s = 0; s < n_used; ++s) {
                        if (uint32_t(ids.at(s, t)) == e && !row(e, s, t)) {
                            return proto::HTP_STATUS_OK;
                        }
                    }
                }
                if (!done(e)) {
                    return proto::HTP_STATUS_OK;
                }
                ++e;
                continue;
            }
            // The run [e, e_end) of experts whose rows fit the table, bucketed in one walk.
            uint32_t used = 0, e_end = e;
            while (e_end < e1 && count[e_end - e0] <= MMID_TABLE - used) {
                fill[e_end - e0] = uint16_t(used);
                used += count[e_end - e0];
                ++e_end;
            }
            for (uint32_t t = 0; t < n_tokens; ++t) {
                for (uint32_t s = 0; s < n_used; ++s) {
                    const uint32_t id = uint32_t(ids.at(s, t));
                    if (id >= e && id < e_end && count[id - e0] != 0) {  // not a skipped expert
                        table[fill[id - e0]++] = t << 8 | s;
                    }
                }
            }
            for (; e < e_end; ++e) {
                const uint32_t end = fill[e - e0], n = count[e - e0];
                if (n == 0) {
                    continue;
                }
                for (uint32_t k = end - n; k < end; ++k) {
                    if (!row(e, table[k] & 255, table[k] >> 8)) {
                        return proto::HTP_STATUS_OK;
                    }
                }
                if (!done(e)) {
                    return proto::HTP_STATUS_OK;
                }
            }
        }
    }
    return proto::HTP_STATUS_OK;
}

// MUL_MAT_ID (proto/htp-matmul.h): per expert, the (slot, token) rows whose id names it, in groups
// of act_rows, as above. An id outside [0, n_expert) is HTP_STATUS_INVAL_PARAMS, before any work.
uint32_t run_matmul_id_job(htp_op_context * octx, mm_thread_fn prepare_rows, mm_thread_fn dot);

} // namespace hexnpu::htp
