// The registry's host half (htp-op-list.inc): per opcode, its sources and its prepare function,
// and a check that every op's kernel_params fit the op's words. Host only: it includes every op
// family's header.
#pragma once

#include "proto/htp-allreduce.h"
#include "proto/htp-binary.h"
#include "proto/htp-flash-attn-hmx.h"
#include "proto/htp-flash-attn.h"
#include "proto/htp-gdn-hmx.h"
#include "proto/htp-get-rows-q.h"
#include "proto/htp-im2col.h"
#include "proto/htp-layout.h"
#include "proto/htp-linear-attn.h"
#include "proto/htp-matmul-hmx.h"
#include "proto/htp-matmul.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-prepare.h"
#include "proto/htp-reduce.h"
#include "proto/htp-rope.h"
#include "proto/htp-rows.h"
#include "proto/htp-sort.h"
#include "proto/htp-triangular.h"
#include "proto/htp-unary.h"

#include <stdint.h>

namespace hexnpu::proto {

#define HTP_OP(name, kernel, n_required, n_src, kparams, prepare, dma_only, written_by)                     \
    static_assert(sizeof(kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t),                 \
                  #name "'s kparams exceed HTP_OP_MAX_KERN_PARAMS words");                     \
    static_assert(n_required <= n_src && n_src <= HTP_OP_MAX_INPUTS, #name "'s source counts");
#include "proto/htp-op-list.inc"

struct htp_op_info {
    uint32_t       n_required;  // src[0 .. n_required) present
    uint32_t       n_src;       // src[n_required .. n_src) optional, the rest unused
    htp_prepare_fn prepare;     // nullptr: not a production op
};

constexpr htp_op_info htp_op_info_of(uint32_t op) {
    switch (op) {
#define HTP_OP(name, kernel, n_required, n_src, kparams, prepare, dma_only, written_by) \
    case HTP_OP_##name: return {n_required, n_src, prepare};
#include "proto/htp-op-list.inc"
        default: return {};
    }
}

} // namespace hexnpu::proto
