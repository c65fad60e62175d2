// kernel_params of HTP_OP_TEST_STREAM (htp/testing/test-ops.cpp; the test variant of the NPU
// library only), which tests fill by hand.
#pragma once

#include "proto/htp-eltwise.h"

#include <stdint.h>

namespace hexnpu::proto {

// HTP_OP_TEST_STREAM (test variant of the NPU library only): dst = src0 * scale, F32 of one shape,
// through the element-wise pipeline with any depth up to HTP_TEST_STREAM_MAX_SLOTS and, on request,
// a deliberate misuse of it that the strict virtual NPU must catch. Tests fill it by hand.
inline constexpr uint32_t HTP_TEST_STREAM_MAX_SLOTS = 16;

enum htp_test_stream_misuse : uint32_t {
    HTP_TEST_STREAM_CORRECT          = 0,
    HTP_TEST_STREAM_READ_BEFORE_POP  = 1,  // computes on a source slot before popping its prefetch
    HTP_TEST_STREAM_WRITE_AFTER_PUSH = 2,  // scribbles on a destination slot while its writeback flies
    HTP_TEST_STREAM_SKIP_DRAIN       = 3,  // returns without popping the last writebacks
};

struct htp_test_stream_kparams {
    htp_eltwise_pipeline pipe;     // two streams: src0, dst
    uint32_t             scale;    // float bits
    uint32_t             misuse;   // htp_test_stream_misuse
    fastdiv_values       div_ne1;  // flat row -> (i1, i2, i3)
    fastdiv_values       div_ne2;
};

static_assert(sizeof(htp_test_stream_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// TEST_STREAM over rows of ne0 F32 elements in an [ne0, ne1, ne2, ne3] tensor with a pipeline the
// test chooses (deeper or thinner than htp_eltwise_plan would pick).
inline htp_test_stream_kparams make_test_stream_kparams(const uint32_t ne[4], uint32_t scale_bits, uint32_t n_threads,
                                                        uint32_t block_rows, uint32_t n_slots, uint32_t misuse) {
    htp_test_stream_kparams kp{};
    const uint64_t          rows = uint64_t(ne[1]) * ne[2] * ne[3];
    kp.pipe.n_threads            = n_threads;
    kp.pipe.rows_per_thread      = uint32_t((rows + n_threads - 1) / n_threads);
    kp.pipe.block_rows           = block_rows;
    kp.pipe.n_slots              = n_slots;
    kp.pipe.row_size             = ne[0] * 4;
    kp.pipe.vtcm_row_stride      = htp_vtcm_row_stride(kp.pipe.row_size);
    kp.pipe.vtcm_size            = uint32_t(htp_eltwise_vtcm_size(kp.pipe, 2));
    kp.scale                     = scale_bits;
    kp.misuse                    = misuse;
    kp.div_ne1                   = init_fastdiv(ne[1]);
    kp.div_ne2                   = init_fastdiv(ne[2]);
    return kp;
}

} // namespace hexnpu::proto
