#include "htp-backend.h"

#include "htp-device.h"
#include "htp-group.h"
#include "htp-op-prep.h"
#include "htp-supports-op.h"

#include "proto/htp-opcodes.h"
#include "proto/htp-status.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace hexnpu::hexagon {
namespace {

std::string hex32(uint32_t v) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", v);
    return text;
}

std::string with_log(std::string message, const std::string & log) {
    if (!log.empty()) {
        message += "\nsession log:\n" + log;
        while (!message.empty() && message.back() == '\n') {
            message.pop_back();
        }
    }
    return message;
}

} // namespace

htp_backend::htp_backend(htp_device & device) : device_(device), members_{&device}, name_(device.name()) {}

htp_backend::htp_backend(htp_group_device & group)
    : device_(*group.members()[0]), members_(group.members()), group_(&group), name_(group.name()) {}

const char * htp_backend::name() const { return name_.c_str(); }

backend_device * htp_backend::device() const {
    return group_ != nullptr ? static_cast<backend_device *>(group_) : static_cast<backend_device *>(&device_);
}

namespace {

// The node after i that computes (layout ops skipped), or null.
const ggml_tensor * next_computing(const ggml_cgraph & graph, size_t i) {
    for (size_t j = i + 1; j < graph.nodes.size(); ++j) {
        if (!is_layout_op(graph.nodes[j]->op)) {
            return graph.nodes[j];
        }
    }
    return nullptr;
}

// RMS_NORM followed by the MUL of its result by a weight, the norm read by nothing else anywhere
// (the whole graph when this is a split of it; never in a graph whose whole is unknown).
std::optional<htp_op> fused_rms_norm_mul(const ggml_cgraph & graph, size_t i, const htp_op_target & target) {
    const ggml_tensor * norm = graph.nodes[i];
    const ggml_tensor * mul  = next_computing(graph, i);
    if (graph.partial || norm->op != GGML_OP_RMS_NORM || mul == nullptr || mul->op != GGML_OP_MUL ||
        mul->src[0] != norm) {
        return std::nullopt;
    }
    if (ggml_graph_n_readers(graph.whole != nullptr ? *graph.whole : graph, norm) != 1) {
        return std::nullopt;
    }
    // The fused op reads the norm's source while it writes the MUL's result. The allocator knew
    // neither: the source may have died at the norm, its memory reused for the MUL's result. Only
    // the very same rows (in place) may be shared; a shifted overlap would have rows written before
    // they are read (Qwen3.5's gated norm over the delta net's output gave wrong prompts this way).
    const ggml_tensor * src = norm->src[0];
    const auto *        s0  = static_cast<const uint8_t *>(src->data);
    const auto *        d0  = static_cast<const uint8_t *>(mul->data);
    const bool overlap = s0 != nullptr && d0 != nullptr && s0 < d0 + ggml_nbytes(mul) && d0 < s0 + ggml_nbytes(src);
    if (overlap && !(s0 == d0 && ggml_are_same_stride(src, mul))) {
        return std::nullopt;
    }
    return prepare_htp_rms_norm_mul(norm, mul, target);
}

} // namespace

void htp_backend::graph_compute(ggml_cgraph & graph) {
    std::vector<htp_op> ops;
    htp_op_target       target{};
    const ggml_tensor * fused_into = nullptr;  // the MUL a fused op already computes
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
        const ggml_tensor * node = graph.nodes[i];
        // An empty node (a dimension of 0: llama.cpp's last layer in a ubatch that outputs no
        // logits) has nothing to compute, as in GGML's backends; the NPU rejects empty operands.
        if (is_layout_op(node->op) || node == fused_into || ggml_nelements(node) == 0) {
            continue;
        }
        if (ops.empty()) {
            const htp_session & s = device_.session();
            target                = device_.target_of(s.hw());
        }
        std::vector<htp_op> node_ops;
        if (std::optional<htp_op> fused; device_.options().op_fusion && (fused = fused_rms_norm_mul(graph, i, target))) {
            fused_into = fused->node;
            ++fused_;
            node_ops.push_back(*fused);
        } else {
            node_ops = prepare_htp_ops(node, target);
        }
        if (node_ops.empty()) {
            throw backend_error(std::string(name()) + ": " + ggml_op_desc(node) + " '" + node->name +
                                "' cannot run on the NPU (supports_op is false for it)");
        }
        for (htp_op & op : node_ops) {
            if ((device_.options().op_stage & 2) == 0) {
                op.desc.flags |= proto::HTP_OPFLAGS_SKIP_COMPUTE;
            }
            ops.push_back(op);
        }
    }
    if ((device_.options().op_stage & 1) != 0) {
        compute_ops(ops);
    }
}

void htp_backend::compute_ops(std::span<const htp_op> ops) {
    last_batches_ = 0;
    if (ops.empty()) {
        return;
    }
    std::vector<htp_session *> sessions;
    for (htp_device * m : members_) {
        sessions.push_back(&m->session());
    }
    htp_session & s0 = *sessions[0];
    // One graph at a time per session: responses come back in the order batches were sent.
    std::vector<std::unique_lock<std::mutex>> locks;
    for (htp_session * s : sessions) {
        locks.emplace_back(s->compute_mutex());
    }
    // A member that dies fails its fence slot at once: the others stop at their next barrier
    // instead of waiting there until the deadline. The hooks end with this call.
    struct exit_hooks {
        std::vector<htp_session *> & sessions;
        ~exit_hooks() {
            for (htp_session * s : sessions) {
                s->set_exit_hook({});
            }
        }
    } hooks{sessions};
    if (group_ != nullptr) {
        group_->reset_failed_fences();
        for (uint32_t m = 0; m < sessions.size(); ++m) {
            sessions[m]->set_exit_hook([group = group_, m] { group->fail_member_fence(m); });
        }
    }
    std::deque<in_flight> pending;
    std::string           first_error;
    // Every batch sent gets its response read, whatever fails, so the queues stay in step.
    auto drain = [&] {
        while (!pending.empty()) {
            in_flight   oldest = std::move(pending.front());
            pending.pop_front();
            std::string error = finish(oldest);
            if (first_error.empty()) {
                first_error = std::move(error);
            }
        }
    };
    const uint32_t n_members = uint32_t(members_.size());
    try {
        size_t next = 0;
        while (next < ops.size() && first_error.empty()) {
            htp_batch batch(s0.limits(), s0.pinned_buffers());
            const uint32_t fence_bi = group_ != nullptr ? batch.add_buffer(group_->fence_buffer()) : proto::HTP_NO_FENCE;
            while (next < ops.size() && batch.add(ops[next], &device_)) {
                ++next;
            }
            if (pending.size() == s0.n_slots()) {
                in_flight oldest = std::move(pending.front());
                pending.pop_front();
                first_error = finish(oldest);
                if (!first_error.empty()) {
                    break;
                }
            }
            in_flight flight;
            flight.ops = batch.ops();
            const uint32_t fence_seq = group_ != nullptr ? group_->reserve_fence_seqs(uint32_t(batch.n_ops()) + 1) : 0;
            for (uint32_t m = 0; m < n_members; ++m) {
                htp_session & s = *sessions[m];
                for (htp_buffer * b : batch.buffers()) {
                    b->add_user(members_[m]);
                    s.ensure_registered(b->fd(), b->size(), b->pinned());
                }
                const uint32_t id   = s.next_batch_id();
                const uint32_t slot = id % s.n_slots();
                if (device_.options().verbose > 0 && m == 0) {
                    std::fputs(batch.describe(name(), id, device_.options().verbose > 1).c_str(), stderr);
                }
                proto::htp_opbatch_req req = batch.pack(s.block(slot), id, s.profile());
                if (group_ != nullptr) {
                    req.mdev_idx         = m;
                    req.mdev_count       = n_members;
                    req.mdev_count_div   = proto::init_fastdiv(n_members);
                    req.fence_bi         = fence_bi;
                    req.fence_seq        = fence_seq;
                    req.fence_timeout_us = group_->fence_timeout_us();
                }
                s.send(slot, req, proto::htp_batch_layout_of(req.n_bufs, req.n_tensors, req.n_ops, req.n_traces).total);
                flight.members.push_back({req, slot});
            }
            pending.push_back(std::move(flight));
            ++last_batches_;
        }
    } catch (const backend_error &) {
        bool any_dead = false;
        for (htp_session * s : sessions) {
            any_dead = any_dead || s->dead();
        }
        if (!any_dead) {
            drain();
        }
        throw;
    }
    drain();
    if (!first_error.empty()) {
        throw backend_error(first_error);
    }
}

std::string htp_backend::finish(in_flight & batch) {
    // The first error, the first that is not a peer's report of another, and the first missed
    // deadline: a deadline is the cause where the members only report one another.
    std::string first, own, deadline;
    std::string died;        // a member whose session died or hung
    for (size_t m = 0; m < batch.members.size(); ++m) {
        uint32_t    status = proto::HTP_STATUS_OK;
        std::string error;
        try {
            error = finish_member(*members_[m], batch.members[m], batch.ops, &status);
        } catch (const backend_error & e) {
            // Keep reading the other members' answers (their barriers end at their deadline).
            if (died.empty()) {
                died = e.what();
            }
            continue;
        }
        if (!error.empty()) {
            if (first.empty()) {
                first = error;
            }
            if (own.empty() && status != proto::HTP_STATUS_PEER_FAILED && status != proto::HTP_STATUS_FENCE_TIMEOUT) {
                own = error;
            }
            if (deadline.empty() && status == proto::HTP_STATUS_FENCE_TIMEOUT) {
                deadline = error;
            }
        }
    }
    if (!died.empty()) {
        throw backend_error(first.empty() ? died : died + "\n" + first);
    }
    return !own.empty() ? own : !deadline.empty() ? deadline : first;
}

std::string htp_backend::finish_member(htp_device & dev, const sent & batch, const std::vector<const htp_op *> & ops,
                                       uint32_t * status_out) {
    htp_session &          s = dev.session();
    std::string            log;
    proto::htp_opbatch_rsp rsp{};
    try {
        rsp = s.receive(&log);
    } catch (const backend_error & e) {
        // The session died or hung: say which op it was running.
        std::string message = e.what();
        const auto  info    = s.exit_info();
        if (info && info->in_batch && info->batch_id == batch.req.id && info->op < ops.size()) {
            message += " (running " + htp_op_label(*ops[info->op]) + ")";
        }
        throw backend_error(message);
    }
    const std::string name = dev.name();
    if (rsp.id != batch.req.id) {
        return name + ": the NPU answered batch " + std::to_string(rsp.id) + " where batch " +
               std::to_string(batch.req.id) + " was due";
    }
    dev.count_window(rsp);
    if (dev.options().verbose > 0 && (rsp.n_maps != 0 || rsp.n_unmaps != 0)) {
        std::fprintf(stderr,
                     "%s: batch %u: window: %u mapped (%" PRIu64 " bytes, %u of them extended), %u unmapped (%" PRIu64
                     " bytes)\n",
                     name.c_str(), rsp.id, rsp.n_maps, rsp.map_bytes, rsp.n_ext_maps, rsp.n_unmaps, rsp.unmap_bytes);
    }
    *status_out = rsp.status;
    if (rsp.status != proto::HTP_STATUS_OK) {
        const std::string status = proto::htp_status_name(rsp.status);
        if (rsp.failed_op >= ops.size()) {
            std::string names;
            for (const htp_op * op : ops) {
                names += (names.empty() ? "" : ", ") + htp_op_label(*op);
            }
            return with_log(name + ": batch " + std::to_string(batch.req.id) + " (" + names +
                                ") was rejected by the NPU: " + status,
                            log);
        }
        std::string message = name + ": " + htp_op_label(*ops[rsp.failed_op]) + " (op " +
                              std::to_string(rsp.failed_op) + " of batch " + std::to_string(batch.req.id) +
                              ") failed on the NPU: " + status;
        if (rsp.status == proto::HTP_STATUS_FAULT) {
            message += " at NPU address " + hex32(rsp.fault_addr);
        }
        return with_log(message, log);
    }
    if (s.profile() != 0) {
        collect_profile(dev, batch, ops, rsp);
    }
    return {};
}

namespace {

// A profile-op line: usec and cycles (GGML_HEXAGON_PROFILE=1, upstream's); level 2 (and a PMU event
// list, which the virtual NPU has no PMU to count) adds the counters the NPU keeps itself.
void print_op_profile(const htp_device & dev, const htp_op_profile & p) {
    const htp_profile_mode mode = dev.options().profile;
    if (mode == htp_profile_mode::off) {
        return;
    }
    std::string line = std::string(dev.name()) + ": profile-op " + p.label + ": usec " + std::to_string(p.usecs) +
                       " cycles " + std::to_string(p.cycles_stop - p.cycles_start);
    if (mode == htp_profile_mode::pmu) {
        line += " dma-descs " + std::to_string(p.dma_descs) + " dma-to-vtcm " + std::to_string(p.dma_to_vtcm) +
                " dma-from-vtcm " + std::to_string(p.dma_from_vtcm) + " dma-ddr " + std::to_string(p.dma_ddr);
    }
    std::fprintf(stderr, "%s\n", line.c_str());
}

} // namespace

void htp_backend::collect_profile(htp_device & dev, const sent & batch, const std::vector<const htp_op *> & ops,
                                  const proto::htp_opbatch_rsp & rsp) {
    htp_session &                  s      = dev.session();
    const proto::htp_opbatch_req & req    = batch.req;
    const uint8_t *               block  = s.block(batch.slot);
    const proto::htp_batch_layout layout =
        proto::htp_batch_layout_of(req.n_bufs, req.n_tensors, req.n_ops, req.n_traces);
    const auto * prof = reinterpret_cast<const proto::htp_prof_desc *>(block + layout.prof);

    htp_batch_profile record;
    record.id           = req.id;
    record.usecs        = rsp.usecs;
    record.cycles_start = rsp.cycles_start;
    record.cycles_stop  = rsp.cycles_stop;
    for (size_t k = 0; k < ops.size(); ++k) {
        htp_op_profile p;
        p.label        = htp_op_label(*ops[k]);
        p.opcode       = prof[k].opcode;
        p.usecs        = prof[k].usecs;
        p.cycles_start = prof[k].cycles_start;
        p.cycles_stop  = prof[k].cycles_stop;
        p.dma_descs     = prof[k].dma_descs;
        p.dma_to_vtcm   = prof[k].dma_to_vtcm;
        p.dma_from_vtcm = prof[k].dma_from_vtcm;
        p.dma_ddr       = prof[k].dma_ddr;
        print_op_profile(dev, p);
        record.ops.push_back(std::move(p));
    }
    if (req.n_traces == 0) {
        return;
    }
    const auto * traces = reinterpret_cast<const proto::htp_trace_desc *>(block + layout.traces);
    for (uint32_t slot = 0; slot < proto::HTP_TRACE_SLOTS; ++slot) {
        const uint32_t n = std::min(rsp.n_traces[slot], req.n_traces);
        for (uint32_t i = 0; i < n; ++i) {
            const proto::htp_trace_desc & e = traces[size_t(slot) * req.n_traces + i];
            htp_trace_event               ev;
            ev.cycles = widen_cycles(e.cycles, rsp.cycles_start);
            ev.slot   = slot;
            ev.id     = uint16_t(e.id & ~proto::HTP_TRACE_STOP);
            ev.info   = e.info;
            ev.stop   = (e.id & proto::HTP_TRACE_STOP) != 0;
            record.events.push_back(ev);
        }
    }
    dev.profile_log().add(std::move(record));
}

} // namespace hexnpu::hexagon
