#include "htp-batch.h"

#include "htp-device.h"
#include "repack.h"

#include "proto/htp-opcodes.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace hexnpu::hexagon {
namespace {

std::string quoted(const ggml_tensor * t) { return std::string("'") + t->name + "'"; }

} // namespace

std::string htp_op_label(const htp_op & op) {
    if (op.node == nullptr) {
        return proto::htp_op_name(op.desc.opcode);
    }
    const std::string desc = ggml_op_desc(op.node);
    return op.node->name[0] == '\0' ? desc : desc + " " + quoted(op.node);
}

size_t htp_batch::tensor_key_hash::operator()(const tensor_key & k) const {
    uint64_t h = uint64_t(uint32_t(k.fd)) * 0x9e3779b97f4a7c15ull ^ k.offset;
    for (int i = 0; i < 4; ++i) {
        h = (h ^ k.ne[i]) * 0x100000001b3ull;
        h = (h ^ k.nb[i]) * 0x100000001b3ull;
    }
    return size_t(h ^ (uint64_t(k.type) << 40) ^ k.flags);
}

htp_batch::htp_batch(const htp_batch_limits & limits, std::unordered_map<int, uint64_t> resident_pinned)
    : limits_(limits), resident_(std::move(resident_pinned)) {
    for (const auto & [fd, size] : resident_) {
        resident_bytes_ += size;
    }
    mapped_ = resident_bytes_;
}

bool htp_batch::add(const htp_op & op, const backend_device * device) {
    const std::string label = htp_op_label(op);
    auto              fail  = [&](const std::string & why) {
        return backend_error(std::string(device->name()) + ": " + label + " cannot run on the NPU: " + why);
    };

    // Operands as descriptors, and the buffers they bring in. A weight buffer (REPACK) that only
    // DMA reads in this batch goes to the extended region where the session has one: no window room.
    std::vector<htp_buffer *>      new_buffers;
    std::vector<bool>              new_extended;
    std::vector<size_t>            to_window;  // known extended buffers this op reads otherwise
    uint64_t                       new_bytes = 0;
    std::vector<proto::htp_tensor> described;
    auto                           describe = [&](const ggml_tensor * t, bool dma_only) {
        auto * buf = dynamic_cast<htp_buffer *>(t->buffer);
        if (buf == nullptr || (buf->htp_buft()->device() != device && buf->kind() != htp_buffer_kind::compute)) {
            throw fail("tensor " + quoted(t) + " lives in " +
                       (t->buffer != nullptr ? std::string("a ") + t->buffer->buft()->name() + " buffer"
                                             : std::string("no buffer")) +
                       ", which this session cannot read");
        }
        const bool extended = limits_.extended && dma_only && buf->kind() == htp_buffer_kind::repack;
        const auto known    = std::find(buffers_.begin(), buffers_.end(), buf);
        const auto fresh    = std::find(new_buffers.begin(), new_buffers.end(), buf);
        if (known != buffers_.end()) {
            const size_t k = size_t(known - buffers_.begin());
            if (extended_[k] && !extended && std::find(to_window.begin(), to_window.end(), k) == to_window.end()) {
                to_window.push_back(k);
                new_bytes += resident_.count(buf->fd()) == 0 ? buf->size() : 0;
            }
        } else if (fresh != new_buffers.end()) {
            const size_t k = size_t(fresh - new_buffers.begin());
            if (new_extended[k] && !extended) {
                new_extended[k] = false;
                new_bytes += resident_.count(buf->fd()) == 0 ? buf->size() : 0;
            }
        } else {
            new_buffers.push_back(buf);
            new_extended.push_back(extended);
            if (!extended && resident_.count(buf->fd()) == 0) {
                new_bytes += buf->size();
            }
        }
        proto::htp_tensor d{};
        d.data  = uint64_t(static_cast<const uint8_t *>(t->data) - static_cast<const uint8_t *>(buf->base()));
        d.size  = htp_stored_size(t);
        d.type  = uint32_t(t->type);
        d.flags = (buf->kind() == htp_buffer_kind::compute ? proto::HTP_TENSOR_COMPUTE : 0) |
                  (buf->is_tiled(t) ? proto::HTP_TENSOR_TILED : 0);
        for (int i = 0; i < 4; ++i) {
            if (t->ne[i] > INT64_C(0xffffffff) || t->nb[i] > 0xffffffffu) {
                throw fail("tensor " + quoted(t) + " has a dimension or stride beyond 32 bits");
            }
            d.ne[i] = uint32_t(t->ne[i]);
            d.nb[i] = uint32_t(t->nb[i]);
        }
        described.push_back(d);
    };
    for (size_t i = 0; i < op.src.size(); ++i) {
        if (op.src[i] != nullptr) {
            describe(op.src[i], proto::htp_reads_by_dma_only(op.desc.opcode, uint32_t(i)));
        }
    }
    for (const ggml_tensor * t : op.dst) {
        if (t != nullptr) {
            describe(t, false);
        }
    }

    const bool too_many_bufs = buffers_.size() + new_buffers.size() > limits_.max_bufs;
    const bool too_big       = mapped_ + new_bytes > limits_.vmem;
    const bool too_many_ops  = ops_.size() + 1 > limits_.max_ops;
    // Upper bound before deduplication; exact counting follows once the op is known to fit.
    const bool too_many_tensors = tensors_.size() + described.size() > limits_.max_tensors;
    if (too_many_bufs || too_big || too_many_ops || too_many_tensors) {
        if (!ops_.empty()) {
            return false;
        }
        if (too_big) {
            throw fail("its buffers need " + std::to_string(new_bytes) + " bytes mapped at once next to " +
                       std::to_string(resident_bytes_) + " pinned bytes, more than the window budget of " +
                       std::to_string(limits_.vmem) + " bytes (" + limits_.vmem_source + ")");
        }
        throw fail("it has more operands or buffers than one batch holds");
    }

    for (size_t k : to_window) {
        extended_[k] = false;
    }
    for (size_t k = 0; k < new_buffers.size(); ++k) {
        buffers_.push_back(new_buffers[k]);
        extended_.push_back(new_extended[k]);
    }
    mapped_ += new_bytes;
    proto::htp_op_desc desc = op.desc;
    std::fill(std::begin(desc.src), std::end(desc.src), proto::HTP_NO_TENSOR);
    std::fill(std::begin(desc.dst), std::end(desc.dst), proto::HTP_NO_TENSOR);
    size_t next = 0;
    auto   place = [&](const ggml_tensor * t) {
        proto::htp_tensor d = described[next++];
        auto *            buf = static_cast<htp_buffer *>(t->buffer);
        d.bi = uint16_t(std::find(buffers_.begin(), buffers_.end(), buf) - buffers_.begin());
        tensor_key k{buf->fd(), d.data, d.type, d.flags, {}, {}};
        std::memcpy(k.ne, d.ne, sizeof k.ne);
        std::memcpy(k.nb, d.nb, sizeof k.nb);
        const auto [it, inserted] = index_.try_emplace(k, uint16_t(tensors_.size()));
        if (inserted) {
            d.ti = uint16_t(tensors_.size());
            tensors_.push_back(d);
        }
        return it->second;
    };
    for (size_t i = 0; i < op.src.size(); ++i) {
        if (op.src[i] != nullptr) {
            desc.src[i] = place(op.src[i]);
        }
    }
    for (size_t i = 0; i < op.dst.size(); ++i) {
        if (op.dst[i] != nullptr) {
            desc.dst[i] = place(op.dst[i]);
        }
    }
    descs_.push_back(desc);
    ops_.push_back(&op);
    return true;
}

uint32_t htp_batch::add_buffer(htp_buffer * buf) {
    buffers_.push_back(buf);
    extended_.push_back(false);
    if (resident_.count(buf->fd()) == 0) {
        mapped_ += buf->size();
    }
    return uint32_t(buffers_.size() - 1);
}

std::string htp_batch::describe(const char * device_name, uint32_t id, bool tables) const {
    const std::string dev = device_name;
    std::string       out = dev + ": batch " + std::to_string(id) + ": " + std::to_string(ops_.size()) + " ops, " +
                      std::to_string(tensors_.size()) + " tensors, " + std::to_string(buffers_.size()) +
                      " buffers, " + std::to_string(mapped_) + " bytes mapped\n";
    auto indices = [](const uint16_t * idx, size_t n) {
        std::string text;
        for (size_t i = 0; i < n; ++i) {
            if (idx[i] != proto::HTP_NO_TENSOR) {
                if (!text.empty()) {
                    text += ',';
                }
                text += std::to_string(idx[i]);
            }
        }
        return text;
    };
    for (size_t i = 0; i < ops_.size(); ++i) {
        const proto::htp_op_desc & d = descs_[i];
        out.append(dev).append(":   op ").append(std::to_string(i)).append(" ").append(htp_op_label(*ops_[i]));
        // The kernel, where the node's op name does not say it (MUL_MAT_HMX, FLASH_ATTN_EXT_HMX ...).
        const std::string kernel = proto::htp_op_name(d.opcode);
        if (ops_[i]->node != nullptr && kernel != ggml_op_desc(ops_[i]->node)) {
            out.append(" [").append(kernel).append("]");
        }
        out.append(" src [").append(indices(d.src, proto::HTP_OP_MAX_INPUTS)).append("] dst [");
        out.append(indices(d.dst, proto::HTP_OP_MAX_OUTPUTS)).append("]\n");
    }
    if (!tables) {
        return out;
    }
    for (size_t i = 0; i < buffers_.size(); ++i) {
        out += dev + ":   buffer " + std::to_string(i) + " fd " + std::to_string(buffers_[i]->fd()) + " size " +
               std::to_string(buffers_[i]->size()) + (buffers_[i]->pinned() ? " pinned" : " delayed") +
               (extended_[i] ? " extended" : "") + "\n";
    }
    for (const proto::htp_tensor & t : tensors_) {
        char line[256];
        std::snprintf(line, sizeof line,
                      ":   tensor %u buffer %u offset %llu size %llu type %s flags %u"
                      " ne [%u,%u,%u,%u] nb [%u,%u,%u,%u]\n",
                      unsigned(t.ti), unsigned(t.bi), (unsigned long long) t.data, (unsigned long long) t.size,
                      ggml_type_name(ggml_type(t.type)), t.flags, t.ne[0], t.ne[1], t.ne[2], t.ne[3], t.nb[0], t.nb[1],
                      t.nb[2], t.nb[3]);
        out += dev + line;
    }
    return out;
}

proto::htp_opbatch_req htp_batch::pack(uint8_t * block, uint32_t id, uint32_t profile) const {
    proto::htp_opbatch_req req{};
    req.id        = id;
    req.n_bufs    = uint32_t(buffers_.size());
    req.n_tensors = uint32_t(tensors_.size());
    req.n_ops     = uint32_t(descs_.size());
    req.n_traces  = profile == 3 ? limits_.n_traces : 0;
    req.profile   = profile;
    const proto::htp_batch_layout l = proto::htp_batch_layout_of(req.n_bufs, req.n_tensors, req.n_ops, req.n_traces);

    auto * bufs = reinterpret_cast<proto::htp_buf_desc *>(block + l.bufs);
    for (size_t i = 0; i < buffers_.size(); ++i) {
        htp_buffer * b = buffers_[i];
        bufs[i]        = proto::htp_buf_desc{uint64_t(reinterpret_cast<uintptr_t>(b->base())), uint64_t(b->size()),
                                             b->fd(), (b->pinned() ? proto::HTP_BUF_PINNED : 0u) |
                                                          (extended_[i] ? proto::HTP_BUF_EXTENDED : 0u)};
    }
    std::memcpy(block + l.tensors, tensors_.data(), tensors_.size() * sizeof(proto::htp_tensor));
    std::memcpy(block + l.ops, descs_.data(), descs_.size() * sizeof(proto::htp_op_desc));
    std::memset(block + l.prof, 0, l.total - l.prof);
    return req;
}

} // namespace hexnpu::hexagon
