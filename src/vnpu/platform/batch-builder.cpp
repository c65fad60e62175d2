#include "batch-builder.h"

#include <cstring>

namespace hexnpu::vnpu {

proto::htp_batch_layout packed_batch::layout() const {
    return proto::htp_batch_layout_of(req.n_bufs, req.n_tensors, req.n_ops, req.n_traces);
}

proto::htp_buf_desc * packed_batch::bufs() {
    return reinterpret_cast<proto::htp_buf_desc *>(block() + layout().bufs);
}

proto::htp_tensor * packed_batch::tensors() {
    return reinterpret_cast<proto::htp_tensor *>(block() + layout().tensors);
}

proto::htp_op_desc * packed_batch::ops() { return reinterpret_cast<proto::htp_op_desc *>(block() + layout().ops); }

proto::htp_prof_desc * packed_batch::prof() {
    return reinterpret_cast<proto::htp_prof_desc *>(block() + layout().prof);
}

proto::htp_trace_desc * packed_batch::traces(uint32_t slot) {
    return reinterpret_cast<proto::htp_trace_desc *>(block() + layout().traces) + size_t(slot) * req.n_traces;
}

uint16_t batch_builder::add_buffer(const shared_buffer & buffer, bool pinned) {
    bufs_.push_back(proto::htp_buf_desc{uint64_t(uintptr_t(buffer.data())), buffer.size(), buffer.fd(),
                                        pinned ? proto::HTP_BUF_PINNED : 0});
    return uint16_t(bufs_.size() - 1);
}

uint16_t batch_builder::add_tensor(const proto::htp_tensor & t) {
    tensors_.push_back(t);
    tensors_.back().ti = uint16_t(tensors_.size() - 1);
    return tensors_.back().ti;
}

uint16_t batch_builder::add_f32(uint16_t buf, uint64_t offset, std::array<uint32_t, 4> ne) {
    proto::htp_tensor t{};
    t.data  = offset;
    t.type  = 0;  // F32
    t.flags = proto::HTP_TENSOR_COMPUTE;
    t.bi    = buf;
    t.nb[0] = 4;
    for (int d = 0; d < 4; ++d) {
        t.ne[d] = ne[d];
        if (d > 0) {
            t.nb[d] = t.nb[d - 1] * ne[d - 1];
        }
    }
    t.size = uint64_t(t.nb[3]) * ne[3];
    return add_tensor(t);
}

uint32_t batch_builder::add_op(const proto::htp_op_desc & op) {
    ops_.push_back(op);
    return uint32_t(ops_.size() - 1);
}

proto::htp_op_desc batch_builder::op(uint32_t opcode, std::initializer_list<uint16_t> src,
                                     std::initializer_list<uint16_t> dst) {
    proto::htp_op_desc d{};
    d.opcode = opcode;
    std::fill(std::begin(d.src), std::end(d.src), proto::HTP_NO_TENSOR);
    std::fill(std::begin(d.dst), std::end(d.dst), proto::HTP_NO_TENSOR);
    std::copy(src.begin(), src.end(), d.src);
    std::copy(dst.begin(), dst.end(), d.dst);
    return d;
}

packed_batch batch_builder::pack(uint32_t id, uint32_t profile, uint32_t n_traces) const {
    packed_batch b;
    b.req = proto::htp_opbatch_req{id, uint32_t(bufs_.size()), uint32_t(tensors_.size()), uint32_t(ops_.size()),
                                   n_traces, profile};
    const proto::htp_batch_layout l = b.layout();
    b.storage.assign((l.total + 7) / 8, 0);
    std::memcpy(b.bufs(), bufs_.data(), bufs_.size() * sizeof(proto::htp_buf_desc));
    std::memcpy(b.tensors(), tensors_.data(), tensors_.size() * sizeof(proto::htp_tensor));
    std::memcpy(b.ops(), ops_.data(), ops_.size() * sizeof(proto::htp_op_desc));
    return b;
}

} // namespace hexnpu::vnpu
