#include "batch.h"

#include "htp-tensor.h"
#include "ops/ops.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-status.h"

namespace hexnpu::htp {

using proto::htp_buf_desc;
using proto::htp_op_desc;
using proto::htp_opbatch_req;
using proto::htp_opbatch_rsp;
using proto::htp_prof_desc;
using proto::htp_tensor;
using proto::htp_trace_desc;

namespace {

inline constexpr uint32_t PROFILE_OFF    = 0;
inline constexpr uint32_t PROFILE_TIMING = 1;
inline constexpr uint32_t PROFILE_TRACE  = 3;

struct batch_view {
    htp_buf_desc *   bufs;
    htp_tensor *     tensors;
    htp_op_desc *    ops;
    htp_prof_desc *  prof;
    htp_trace_desc * traces;
};

bool valid_request(const htp_opbatch_req * req, const uint8_t * block, size_t block_size) {
    if (req->n_bufs > proto::HTP_OP_MAX_BUFS || req->n_tensors > proto::HTP_OP_MAX_TENSORS ||
        uintptr_t(block) % 8 != 0) {
        return false;
    }
    if (req->profile != PROFILE_OFF && req->profile != PROFILE_TIMING && req->profile != PROFILE_TRACE) {
        return false;
    }
    // Counts are 32-bit and the section sizes are formed in 64 bits: no overflow.
    return proto::htp_batch_layout_of(req->n_bufs, req->n_tensors, req->n_ops, req->n_traces).total <= block_size;
}

bool valid_tensor(const htp_tensor & t, const htp_opbatch_req * req, const htp_buf_desc * bufs) {
    if (t.bi >= req->n_bufs || t.type >= HTP_TYPE_COUNT) {
        return false;
    }
    for (uint32_t d = 0; d < 4; ++d) {
        if (t.ne[d] == 0) {
            return false;
        }
    }
    const uint64_t buf_size = bufs[t.bi].size;
    return t.data <= buf_size && t.size <= buf_size - t.data;
}

bool valid_op(const htp_op_desc & op, uint32_t n_tensors) {
    for (uint16_t ti : op.src) {
        if (ti != proto::HTP_NO_TENSOR && ti >= n_tensors) {
            return false;
        }
    }
    for (uint16_t ti : op.dst) {
        if (ti != proto::HTP_NO_TENSOR && ti >= n_tensors) {
            return false;
        }
    }
    return true;
}

// Maps every buffer of the batch (their NPU addresses into npu_addr) and rewrites each tensor's
// data offset to its NPU address.
uint32_t map_batch(htp_session * s, const htp_opbatch_req * req, const batch_view & v, uint64_t * npu_addr) {
    buffer_map_begin_batch(&s->buffers);
    for (uint32_t i = 0; i < req->n_bufs; ++i) {
        const htp_buf_desc & b = v.bufs[i];
        if (b.fd < 0) {
            return proto::HTP_STATUS_INVAL_PARAMS;
        }
        const uint32_t status =
            buffer_map_acquire(&s->buffers, b.fd, b.size, (b.flags & proto::HTP_BUF_PINNED) != 0,
                               (b.flags & proto::HTP_BUF_EXTENDED) != 0, &npu_addr[i]);
        if (status != proto::HTP_STATUS_OK) {
            return status;
        }
    }
    for (uint32_t i = 0; i < req->n_tensors; ++i) {
        v.tensors[i].data += npu_addr[v.tensors[i].bi];
    }
    return proto::HTP_STATUS_OK;
}

void setup_traces(htp_session * s, const htp_opbatch_req * req, const batch_view & v) {
    const bool on = req->profile == PROFILE_TRACE && req->n_traces != 0;
    for (uint32_t t = 0; t < proto::HTP_TRACE_SLOTS; ++t) {
        trace_reset(&s->trace[t], s->plat, on ? v.traces + size_t(t) * req->n_traces : nullptr,
                    on ? req->n_traces : 0);
    }
}

void stop_traces(htp_session * s) {
    for (uint32_t t = 0; t < proto::HTP_TRACE_SLOTS; ++t) {
        trace_reset(&s->trace[t], s->plat, nullptr, 0);
    }
}

void report_dropped_events(htp_session * s) {
    for (uint32_t t = 0; t < proto::HTP_TRACE_SLOTS; ++t) {
        if (s->trace[t].dropped != 0) {
            s->plat->log(s->plat->ctx, 1, "htp: trace buffer full, events dropped (raise n_traces)");
            return;
        }
    }
}

// The batch's group: the request's when it names one (its fence buffer must hold every member's
// slot), else the platform's placement without fences.
uint32_t join_group(htp_session * s, const htp_opbatch_req * req, const batch_view & v, const uint64_t * npu_addr) {
    s->mdev       = s->plat->mdev;
    s->fence      = htp_fence_group{s->plat, nullptr, 0, 1, 0, 0};
    if (req->mdev_count <= 1) {
        return proto::HTP_STATUS_OK;
    }
    // The host's fastdiv magic is checked where it matters: count / count = 1, (count - 1) / count = 0.
    const proto::fastdiv_values & div = req->mdev_count_div;
    if (req->mdev_idx >= req->mdev_count || req->fence_bi >= req->n_bufs || div.d != req->mdev_count ||
        proto::fastdiv(req->mdev_count, div) != 1 || proto::fastdiv(req->mdev_count - 1, div) != 0 ||
        v.bufs[req->fence_bi].size < proto::htp_fence_buffer_bytes(req->mdev_count)) {
        return proto::HTP_STATUS_INVAL_PARAMS;
    }
    s->mdev  = htp_mdev{req->mdev_idx, req->mdev_count, req->mdev_count_div};
    s->fence = htp_fence_group{s->plat, s->plat->window_base + npu_addr[req->fence_bi], req->mdev_idx,
                               req->mdev_count, req->fence_seq, req->fence_timeout_us};
    return proto::HTP_STATUS_OK;
}

// GGML_HEXAGON_PROFILE=2's counters: what the op's DMA queues issued, taken from the queues (each
// left at zero for the next op).
void take_dma_counts(htp_session * s, htp_prof_desc * prof) {
    dma_counts sum{};
    for (uint32_t t = 0; t < s->n_threads; ++t) {
        const dma_counts & c = s->dma[t].counts;
        sum.descs += c.descs;
        sum.to_vtcm += c.to_vtcm;
        sum.from_vtcm += c.from_vtcm;
        sum.ddr += c.ddr;
        s->dma[t].counts = dma_counts{};
    }
    prof->dma_descs     = sum.descs;
    prof->pad           = 0;
    prof->dma_to_vtcm   = sum.to_vtcm;
    prof->dma_from_vtcm = sum.from_vtcm;
    prof->dma_ddr       = sum.ddr;
}

// The op's entry, its required operands present, its structural guard passed: only then may it run.
uint32_t admit_op(const htp_op_context & octx, const op_entry ** entry) {
    *entry = find_op(octx.op->opcode);
    if (*entry == nullptr) {
        return proto::HTP_STATUS_NO_SUPPORT;
    }
    for (uint32_t i = 0; i < (*entry)->n_src; ++i) {
        if (octx.src[i] == nullptr) {
            return proto::HTP_STATUS_INVAL_PARAMS;
        }
    }
    for (uint32_t i = 0; i < (*entry)->n_dst; ++i) {
        if (octx.dst[i] == nullptr) {
            return proto::HTP_STATUS_INVAL_PARAMS;
        }
    }
    return (*entry)->guard(&octx) ? proto::HTP_STATUS_OK : proto::HTP_STATUS_INVAL_PARAMS;
}

uint32_t run_op(htp_session * s, const batch_view & v, uint32_t index, trace_buf * main_trace) {
    const htp_op_desc & op = v.ops[index];
    htp_op_context      octx{};
    octx.plat      = s->plat;
    octx.op        = &op;
    octx.op_index  = index;
    octx.n_threads = s->n_threads;
    octx.work      = &s->work;
    octx.hmx       = s->n_hmx != 0 ? &s->hmx : nullptr;
    octx.dma       = s->dma;
    octx.trace     = s->trace;
    octx.vtcm_base = s->plat->vtcm_base;
    octx.vtcm_size = s->plat->vtcm_size;
    octx.mdev      = &s->mdev;
    for (uint32_t i = 0; i < proto::HTP_OP_MAX_INPUTS; ++i) {
        octx.src[i] = op.src[i] == proto::HTP_NO_TENSOR ? nullptr : &v.tensors[op.src[i]];
        if (octx.src[i] != nullptr) {
            dcache_flush_input(&s->dirty, octx.src[i], main_trace);
        }
    }
    for (uint32_t i = 0; i < proto::HTP_OP_MAX_OUTPUTS; ++i) {
        octx.dst[i] = op.dst[i] == proto::HTP_NO_TENSOR ? nullptr : &v.tensors[op.dst[i]];
    }

    if (op.flags & proto::HTP_OPFLAGS_SKIP_COMPUTE) {
        return proto::HTP_STATUS_OK;
    }
    const op_entry * entry  = nullptr;
    uint32_t         status = admit_op(octx, &entry);
    if (status != proto::HTP_STATUS_OK) {
        return status;
    }
    status = entry->run(&octx);
    // The DMA rules are checked whatever the op returned: its queues must be drained. A queue that
    // was not is drained here, waiting for each transfer, before the next op reuses its VTCM and
    // outputs: on a device the DMA engine is still running them (the virtual NPU's op_done has
    // abandoned them, and the waits return at once).
    uint32_t strict = s->plat->op_done(s->plat->ctx);
    for (uint32_t t = 0; t < s->n_threads; ++t) {
        if (!dma_queue_empty(&s->dma[t])) {
            s->plat->log(s->plat->ctx, 0, "htp: an op returned with pushes it never popped");
            strict = proto::HTP_STATUS_STRICT;
            dma_queue_flush(&s->dma[t]);
        }
        if (s->dma[t].overflows != 0) {
            strict = proto::HTP_STATUS_STRICT;  // logged at the push
        }
        dma_queue_reset(&s->dma[t]);
    }
    if (strict != proto::HTP_STATUS_OK && status == proto::HTP_STATUS_OK) {
        status = strict;
    }
    // Results the DMA wrote are in DDR already; those HVX or scalar stores wrote may sit in L2.
    for (uint32_t i = 0; i < proto::HTP_OP_MAX_OUTPUTS && proto::htp_writes_through_l2(octx.op->opcode); ++i) {
        if (octx.dst[i] != nullptr) {
            dcache_mark_dirty(&s->dirty, octx.dst[i]->data, octx.dst[i]->size, main_trace);
        }
    }
    return status;
}

// One op of a device group: the op, then the barrier after it (the next op may read any member's
// slice; each member's outputs are in DDR, queues drained and dirty lines flushed, before its fence
// says so). Around it, where the platform has one, its strict check of the members' HVX writes.
uint32_t run_group_op(htp_session * s, const batch_view & v, uint32_t index, const uint64_t * npu_addr,
                      trace_buf * main_trace) {
    const platform * plat = s->plat;
    mdev_write_check c{};
    if (plat->mdev_check != nullptr) {
        c = mdev_write_check{s->fence.base, s->fence.idx, s->fence.count, s->fence.seq + 1, s->fence.timeout_us, 0, {}};
        for (uint16_t ti : v.ops[index].dst) {
            if (ti != proto::HTP_NO_TENSOR) {
                const htp_tensor & t = v.tensors[ti];
                c.dst[c.n_dst++]     = {plat->window_base + t.data, t.size, t.bi, t.data - npu_addr[t.bi]};
            }
        }
    }
    uint32_t status = c.fence_base != nullptr ? plat->mdev_check(plat->ctx, MDEV_CHECK_BEGIN, &c) : proto::HTP_STATUS_OK;
    if (status == proto::HTP_STATUS_OK) {
        status = run_op(s, v, index, main_trace);
    }
    if (c.fence_base != nullptr) {
        const uint32_t end = plat->mdev_check(plat->ctx, MDEV_CHECK_END, &c);
        status             = status == proto::HTP_STATUS_OK ? end : status;
    }
    dcache_flush_dirty(&s->dirty, main_trace);
    status = htp_mdev_group_barrier(&s->fence, status, main_trace);
    if (status == proto::HTP_STATUS_OK && c.fence_base != nullptr) {
        status = plat->mdev_check(plat->ctx, MDEV_CHECK_PEERS, &c);
        if (status != proto::HTP_STATUS_OK) {
            // Published at the next barrier at once, so members the overlap did not involve stop
            // there instead of waiting out the deadline.
            htp_mdev_group_barrier(&s->fence, status, main_trace);
        }
    }
    return status;
}

} // namespace

void run_batch(htp_session * s, const htp_opbatch_req * req, uint8_t * block, size_t block_size,
               htp_opbatch_rsp * rsp, volatile uint32_t * current_op) {
    const platform * plat = s->plat;
    *rsp                  = htp_opbatch_rsp{};
    rsp->id               = req->id;
    rsp->failed_op        = proto::HTP_FAILED_BATCH;
    rsp->cycles_start     = plat->cycles(plat->ctx);
    const uint64_t usecs_start = plat->usecs(plat->ctx);

    uint32_t status = proto::HTP_STATUS_INVAL_PARAMS;
    if (s->started && valid_request(req, block, block_size)) {
        const proto::htp_batch_layout l = proto::htp_batch_layout_of(req->n_bufs, req->n_tensors, req->n_ops,
                                                                     req->n_traces);
        const batch_view v{reinterpret_cast<htp_buf_desc *>(block + l.bufs),
                           reinterpret_cast<htp_tensor *>(block + l.tensors),
                           reinterpret_cast<htp_op_desc *>(block + l.ops),
                           reinterpret_cast<htp_prof_desc *>(block + l.prof),
                           reinterpret_cast<htp_trace_desc *>(block + l.traces)};
        status = proto::HTP_STATUS_OK;
        for (uint32_t i = 0; i < req->n_tensors && status == proto::HTP_STATUS_OK; ++i) {
            if (!valid_tensor(v.tensors[i], req, v.bufs)) {
                status = proto::HTP_STATUS_INVAL_PARAMS;
            }
        }
        for (uint32_t i = 0; i < req->n_ops && status == proto::HTP_STATUS_OK; ++i) {
            if (!valid_op(v.ops[i], req->n_tensors)) {
                status         = proto::HTP_STATUS_INVAL_PARAMS;
                rsp->failed_op = i;
            }
        }
        uint64_t npu_addr[proto::HTP_OP_MAX_BUFS];
        if (status == proto::HTP_STATUS_OK) {
            const buffer_map_stats before = s->buffers.stats;
            status                        = map_batch(s, req, v, npu_addr);
            rsp->n_maps                   = s->buffers.stats.maps - before.maps;
            rsp->n_unmaps                 = s->buffers.stats.unmaps - before.unmaps;
            rsp->map_bytes                = s->buffers.stats.map_bytes - before.map_bytes;
            rsp->unmap_bytes              = s->buffers.stats.unmap_bytes - before.unmap_bytes;
            rsp->n_ext_maps               = s->buffers.stats.ext_maps - before.ext_maps;
            rsp->ext_map_bytes            = s->buffers.stats.ext_map_bytes - before.ext_map_bytes;
        }
        if (status == proto::HTP_STATUS_OK) {
            status = join_group(s, req, v, npu_addr);
        }
        if (status == proto::HTP_STATUS_OK) {
            setup_traces(s, req, v);
            trace_buf * main_trace = &s->trace[0];
            for (uint32_t i = 0; i < req->n_ops; ++i) {
                *current_op            = i;
                htp_prof_desc & prof   = v.prof[i];
                const uint64_t t0      = plat->usecs(plat->ctx);
                prof.opcode            = v.ops[i].opcode;
                prof.cycles_start      = plat->cycles(plat->ctx);
                uint32_t op_status = s->fence.base != nullptr ? run_group_op(s, v, i, npu_addr, main_trace)
                                                              : run_op(s, v, i, main_trace);
                prof.cycles_stop       = plat->cycles(plat->ctx);
                prof.usecs             = uint32_t(plat->usecs(plat->ctx) - t0);
                take_dma_counts(s, &prof);
                if (op_status != proto::HTP_STATUS_OK) {
                    status         = op_status;
                    rsp->failed_op = i;
                    break;
                }
                ++rsp->n_ops_done;
            }
            // Never complete before every dirty output is back in DDR.
            dcache_flush_dirty(&s->dirty, main_trace);
            for (uint32_t t = 0; t < proto::HTP_TRACE_SLOTS; ++t) {
                rsp->n_traces[t] = s->trace[t].count;
            }
            report_dropped_events(s);
            stop_traces(s);
        }
    }
    rsp->status      = status;
    rsp->cycles_stop = plat->cycles(plat->ctx);
    rsp->usecs       = plat->usecs(plat->ctx) - usecs_start;
}

} // namespace hexnpu::htp
