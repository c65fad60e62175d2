// ALiBi: the per-head factor on the mask (attention position bias), shared by SOFT_MAX and
// FLASH_ATTN_EXT. GGML's schedule: the largest power of two <= n_head gets slopes m0^1, m0^2, ...;
// the remaining heads interleave odd powers of m1.
#pragma once

#include <cmath>
#include <cstdint>

namespace hexnpu::cpu {

inline float alibi_slope(float max_bias, int64_t n_head, int64_t head) {
    if (max_bias <= 0.0f) {
        return 1.0f;
    }
    const int64_t n_head_log2 = int64_t(1) << int64_t(std::floor(std::log2(double(n_head))));
    const float   m0          = std::pow(2.0f, -max_bias / float(n_head_log2));
    const float   m1          = std::pow(2.0f, -max_bias / 2.0f / float(n_head_log2));
    return head < n_head_log2 ? std::pow(m0, float(head + 1)) : std::pow(m1, float(2 * (head - n_head_log2) + 1));
}

} // namespace hexnpu::cpu
