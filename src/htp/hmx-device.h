// The HMX calls of htp/hmx.h in the device build. The public toolchain has no HMX instructions, so
// the device port supplies them: the platform's hmx_unit handle (htp/platform.h) is the port's
// table of the four calls kernels make, which they reach through it. Locking, faults and reset
// are the platform's side (hmx_acquire / hmx_release / op_done), not the NPU library's.
#pragma once

#include <stdint.h>

namespace hexnpu::htp {

struct hmx_unit {
    void * ctx;
    hmx_status (*set_scale_bias)(void * ctx, const void * block);
    hmx_status (*mac_fp16)(void * ctx, const void * act_tiles, const void * wt_tiles, uint32_t n_tiles);
    hmx_status (*store_fp16)(void * ctx, void * out_tile);
    hmx_status (*clear_acc)(void * ctx);
};

inline hmx_status hmx_set_scale_bias(hmx_unit * u, const void * block) { return u->set_scale_bias(u->ctx, block); }
inline hmx_status hmx_mac_fp16(hmx_unit * u, const void * act_tiles, const void * wt_tiles, uint32_t n_tiles) {
    return u->mac_fp16(u->ctx, act_tiles, wt_tiles, n_tiles);
}
inline hmx_status hmx_store_fp16(hmx_unit * u, void * out_tile) { return u->store_fp16(u->ctx, out_tile); }
inline hmx_status hmx_clear_acc(hmx_unit * u) { return u->clear_acc(u->ctx); }
inline void       hmx_drain(hmx_unit *) {}

} // namespace hexnpu::htp
