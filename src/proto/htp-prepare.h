// What the host's op preparation takes and answers. Each op family's header (htp-binary.h,
// htp-matmul.h, ...) has a prepare function of this one shape per op, which the registry
// (htp-op-list.inc) names: it fills the op's kernel_params from the NPU's view of its tensors, or
// refuses the op with the reason of the check that failed, in words a user can act on ("head size
// 80 is not a multiple of 64").
#pragma once

#include "proto/htp-msg.h"

#include <stdint.h>

namespace hexnpu::proto {

struct htp_verdict {
    const char * why = nullptr;  // nullptr: taken

    constexpr explicit operator bool() const { return why == nullptr; }
};

inline constexpr htp_verdict HTP_TAKEN{};

constexpr htp_verdict htp_refuse(const char * why) { return htp_verdict{why}; }

// The reason every VTCM fit check gives (one address: the host recognizes it and names the size).
inline constexpr char HTP_REFUSED_VTCM[] = "the op does not fit the session's VTCM";

// Work items split evenly over at most max_threads threads (none idle): thread i takes items
// [i * per_thread, (i + 1) * per_thread) clipped to n_items. n_items and max_threads >= 1.
struct htp_item_split {
    uint32_t n_threads;
    uint32_t per_thread;
};
constexpr htp_item_split htp_split_items(uint32_t n_items, uint32_t max_threads) {
    const uint32_t n = n_items < max_threads ? n_items : max_threads;
    return {n, (n_items + n - 1) / n};
}

// One op as its prepare function sees it.
struct htp_op_args {
    uint32_t           opcode;
    const htp_tensor * src[HTP_OP_MAX_INPUTS];  // nullptr where absent (an optional source)
    const htp_tensor * dst;
    const int32_t *    params;  // the GGML op_params, HTP_OP_MAX_PARAMS words
    uint32_t           n_threads;
    uint32_t           vtcm_size;
};

using htp_prepare_fn = htp_verdict (*)(const htp_op_args & args, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]);

// A prepare function's last step: the family's kparams into the op's words when taken.
template <class K>
htp_verdict htp_store_kparams(htp_verdict v, const K & kp, int32_t out[HTP_OP_MAX_KERN_PARAMS]) {
    static_assert(sizeof(K) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));
    if (v) {
        __builtin_memcpy(out, &kp, sizeof kp);
    }
    return v;
}

} // namespace hexnpu::proto
