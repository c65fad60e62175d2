// The two buffer types of an HTP device. Both hold rpcmem (shared memfd) memory mapped in the host
// process, so the CPU reads and writes it in place, and hand it to the device's session by fd.
//   HTPn         compute buffers and the KV cache: host-visible, pinned (mapped once, stays mapped).
//   HTPn-REPACK  weights: set_tensor of a whole tileable tensor stores it in the tiled format
//                (repack.h; not with GGML_HEXAGON_MM_SELECT=1, the flat kernels only), anything
//                else stays flat; mapped on demand (delayed), so a session's window slides over
//                models larger than it.
// get_tensor of a tiled tensor unpacks it for the lossless types; for Q3_K..Q6_K the tiles keep only
// fp16 scale products, not the original bytes, and get_tensor refuses with an error that says so.
#pragma once

#include "hexnpu/backend.h"
#include "vnpu/platform/shared-buffer.h"

#include <cstdint>
#include <mutex>
#include <vector>
#include <string>
#include <unordered_map>

namespace hexnpu::hexagon {

class htp_device;

enum class htp_buffer_kind { compute, repack };

class htp_buffer_type final : public backend_buffer_type {
  public:
    // host: whether a compute buffer says it is host memory (GGML_HEXAGON_HOSTBUF): the CPU backend
    // then reads and writes it in place; otherwise the scheduler copies what crosses to the CPU.
    htp_buffer_type(htp_device * device, htp_buffer_kind kind, uint64_t max_size, bool tiles = false, bool host = true);

    const char *                    name() const override { return name_.c_str(); }
    std::unique_ptr<backend_buffer> alloc_buffer(size_t size) override;
    size_t                          alignment() const override { return 128; }
    size_t                          max_size() const override { return max_size_; }
    // Tileable weights take their tiled size in a REPACK buffer (padding rows, scale planes).
    size_t                          alloc_size(const ggml_tensor * t) const override;
    bool                            is_host() const override { return kind_ == htp_buffer_kind::compute && host_; }
    backend_device *                device() const override;

    htp_buffer_kind kind() const { return kind_; }
    htp_device *    htp() const { return device_; }
    // Whether tileable weights are stored tiled here (REPACK buffers, unless the flat kernels are forced).
    bool            tiles() const { return tiles_; }

  private:
    htp_device *    device_;
    htp_buffer_kind kind_;
    uint64_t        max_size_;
    bool            tiles_;
    bool            host_;
    std::string     name_;
};

class htp_buffer final : public backend_buffer {
  public:
    htp_buffer(htp_buffer_type * buft, size_t size);
    ~htp_buffer() override;

    void * base() override { return memory_.data(); }
    // A new tensor at an address forgets whatever tiled data was there before.
    void   init_tensor(ggml_tensor * t) override;
    void   set_tensor(ggml_tensor * t, const void * data, size_t offset, size_t size) override;
    void   get_tensor(const ggml_tensor * t, void * data, size_t offset, size_t size) override;
    void   clear(uint8_t value) override;

    int                     fd() const { return memory_.fd(); }
    bool                    pinned() const { return kind_ == htp_buffer_kind::compute; }
    htp_buffer_kind         kind() const { return kind_; }
    const htp_buffer_type * htp_buft() const { return static_cast<const htp_buffer_type *>(buft()); }
    // Whether the tensor's bytes here are in the tiled format.
    bool                    is_tiled(const ggml_tensor * t) const;
    // Whether a weight written whole into this REPACK buffer holds a value fp16 cannot represent
    // (|v| >= 65520 rounds to infinity): the HMX unit's fp16 weight tiles cannot take it.
    bool                    beyond_fp16(const ggml_tensor * t) const;
    // Marks a compute buffer as holding weights (llama.cpp's tensor split: its meta device knows no
    // extra buffer types, so the weights land in the devices' compute buffers, flagged as weights):
    // a whole weight written into it is stored tiled, as in a REPACK buffer, where its tiles take no
    // more room than its flat rows.
    void                    hold_weights() { weights_ = true; }
    // A device whose session registers this buffer (its own, or another reading it in place):
    // each is told when the buffer is freed, so no session keeps a stale mapping of its fd.
    void                    add_user(htp_device * device);

  private:
    vnpu::shared_buffer               memory_;
    htp_buffer_kind                   kind_;
    bool                              weights_ = false;  // hold_weights()
    // The tensors stored tiled, by data address, with the shape they were tiled with (a view of
    // the same address with another shape is not tiled data).
    struct shape_key {
        ggml_type type;
        int64_t   ne[4];
    };
    std::unordered_map<const void *, shape_key> tiled_;
    std::unordered_map<const void *, shape_key> beyond_fp16_;  // weights with values past fp16's range
    // Whether `records` holds t's address with t's type and shape (a view of the same address with
    // another shape is not the recorded tensor).
    static bool recorded(const std::unordered_map<const void *, shape_key> & records, const ggml_tensor * t);
    std::mutex                                    users_mutex_;
    std::vector<htp_device *>                     users_;
};

// Bytes a tensor occupies in an HTP buffer as stored (its tiled size when tiled).
size_t htp_stored_size(const ggml_tensor * t);
// Whether t is stored tiled (a whole weight written into a REPACK buffer).
bool htp_stored_tiled(const ggml_tensor * t);
// Whether t is a weight stored in a REPACK buffer with a value beyond fp16's range (buffer state:
// for choosing a kernel when a batch is built, never for supports_op).
bool htp_stored_beyond_fp16(const ggml_tensor * t);

} // namespace hexnpu::hexagon
