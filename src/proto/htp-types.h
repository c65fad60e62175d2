// The GGML type ids the NPU side reads in htp_tensor::type and in kernel_params (GGML's own
// numbers: the host passes ggml_type through unchanged; src/hexagon checks they agree).
#pragma once

#include <stdint.h>

namespace hexnpu::proto {

enum htp_type : uint32_t {
    HTP_TYPE_F32    = 0,
    HTP_TYPE_F16    = 1,
    HTP_TYPE_Q4_0   = 2,
    HTP_TYPE_Q4_1   = 3,
    HTP_TYPE_Q5_0   = 6,
    HTP_TYPE_Q5_1   = 7,
    HTP_TYPE_Q8_0   = 8,
    HTP_TYPE_Q2_K   = 10,
    HTP_TYPE_Q3_K   = 11,
    HTP_TYPE_Q4_K   = 12,
    HTP_TYPE_Q5_K   = 13,
    HTP_TYPE_Q6_K   = 14,
    HTP_TYPE_IQ4_NL = 20,
    HTP_TYPE_I32    = 26,
    HTP_TYPE_I64    = 27,
    HTP_TYPE_BF16   = 30,
    HTP_TYPE_MXFP4  = 39,
    HTP_TYPE_Q1_0   = 41,
    HTP_TYPE_Q2_0   = 42,
};

} // namespace hexnpu::proto
