// Packs an op batch the way the host does (proto/htp-msg.h): buffers, tensors, ops, then room for
// the per-op profile and the per-thread trace events. For tests that drive a session directly.
#pragma once

#include "proto/htp-msg.h"
#include "shared-buffer.h"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace hexnpu::vnpu {

struct packed_batch {
    proto::htp_opbatch_req req{};
    std::vector<uint64_t>  storage;  // the block, 8-byte aligned

    uint8_t *               block() { return reinterpret_cast<uint8_t *>(storage.data()); }
    size_t                  block_size() const { return storage.size() * sizeof(uint64_t); }
    proto::htp_batch_layout layout() const;
    proto::htp_buf_desc *   bufs();
    proto::htp_tensor *     tensors();
    proto::htp_op_desc *    ops();
    proto::htp_prof_desc *  prof();
    // The trace events of one thread slot (req.n_traces of room).
    proto::htp_trace_desc * traces(uint32_t slot);
};

class batch_builder {
  public:
    uint16_t add_buffer(const shared_buffer & buffer, bool pinned);
    uint16_t add_tensor(const proto::htp_tensor & t);
    // A packed F32 tensor at offset in buffer buf, in a compute buffer.
    uint16_t add_f32(uint16_t buf, uint64_t offset, std::array<uint32_t, 4> ne);
    uint32_t add_op(const proto::htp_op_desc & op);

    // An op descriptor with the given operands (the rest HTP_NO_TENSOR) and zero parameters.
    static proto::htp_op_desc op(uint32_t opcode, std::initializer_list<uint16_t> src,
                                 std::initializer_list<uint16_t> dst);

    packed_batch pack(uint32_t id, uint32_t profile, uint32_t n_traces) const;

  private:
    std::vector<proto::htp_buf_desc> bufs_;
    std::vector<proto::htp_tensor>   tensors_;
    std::vector<proto::htp_op_desc>  ops_;
};

} // namespace hexnpu::vnpu
