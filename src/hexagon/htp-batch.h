// Packing ops into one batch block (proto/htp-msg.h): tensors deduplicated by buffer, offset, type,
// shape and strides; buffers by fd. A batch is bounded by the op, tensor and buffer counts of the
// session's blocks and by the window budget: its buffers, with the pinned ones the NPU keeps
// mapped, must fit in the bytes the session may map at once.
#pragma once

#include "htp-buffer.h"
#include "htp-session.h"

#include "hexnpu/tensor.h"
#include "proto/htp-msg.h"

#include <array>
#include <memory>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace hexnpu::hexagon {

// An op ready for the NPU: its descriptor (opcode, flags, params, kernel_params; the packer fills the
// tensor indices) and its operands.
struct htp_op {
    proto::htp_op_desc                                           desc{};
    std::array<const ggml_tensor *, proto::HTP_OP_MAX_INPUTS>  src{};
    std::array<const ggml_tensor *, proto::HTP_OP_MAX_OUTPUTS> dst{};
    const ggml_tensor *                                          node = nullptr;  // for messages
    // When the NPU writes the node through another shape (a CPY into a contiguous destination of
    // another shape: the destination seen with the source's shape), that view; dst[0] points at it.
    std::shared_ptr<const ggml_tensor> dst_view;
    // When the NPU reads a source through views of it (a fused GLU's [x | gate] rows as two half
    // rows), those views; src[0] and src[1] point at them.
    std::array<std::shared_ptr<const ggml_tensor>, 2> src_views;
};

// "ADD 'ffn_out-3'" (the GGML op description and node name, if it has one), or the NPU op name
// without a node.
std::string htp_op_label(const htp_op & op);

class htp_batch {
  public:
    // resident_pinned: fd -> size of the pinned buffers the NPU already keeps mapped.
    htp_batch(const htp_batch_limits & limits, std::unordered_map<int, uint64_t> resident_pinned);

    // Adds the op unless that would break a limit (false: the batch is unchanged). Throws
    // backend_error when the op cannot run in any batch (an operand outside this device's buffers, a
    // shape the descriptors cannot hold, buffers larger than the window budget).
    bool add(const htp_op & op, const backend_device * device);
    // A buffer every batch carries whatever its ops use (a device group's fence buffer): call on
    // an empty batch. Returns its index among the batch's buffers.
    uint32_t add_buffer(htp_buffer * buf);

    bool                              empty() const { return ops_.empty(); }
    size_t                            n_ops() const { return ops_.size(); }
    const std::vector<const htp_op *> & ops() const { return ops_; }
    const std::vector<htp_buffer *> & buffers() const { return buffers_; }
    uint64_t                          mapped_bytes() const { return mapped_; }

    // GGML_HEXAGON_VERBOSE: a line per op, and with tables the buffers and tensors of the batch.
    std::string describe(const char * device_name, uint32_t id, bool tables) const;

    // Writes the block and returns the request that goes with it.
    proto::htp_opbatch_req pack(uint8_t * block, uint32_t id, uint32_t profile) const;

  private:
    struct tensor_key {
        int      fd;
        uint64_t offset;
        uint32_t type, flags;
        uint32_t ne[4], nb[4];
        bool     operator==(const tensor_key &) const = default;
    };
    struct tensor_key_hash {
        size_t operator()(const tensor_key & k) const;
    };

    htp_batch_limits                  limits_;
    std::unordered_map<int, uint64_t> resident_;
    uint64_t                          resident_bytes_ = 0;
    uint64_t                          mapped_         = 0;  // resident pinned + this batch's others
    std::vector<htp_buffer *>         buffers_;
    std::vector<bool>                 extended_;  // [buffer]: only DMA reads it in this batch (HTP_BUF_EXTENDED)
    std::vector<proto::htp_tensor>    tensors_;
    std::unordered_map<tensor_key, uint16_t, tensor_key_hash> index_;
    std::vector<proto::htp_op_desc>   descs_;
    std::vector<const htp_op *>       ops_;
};

} // namespace hexnpu::hexagon
