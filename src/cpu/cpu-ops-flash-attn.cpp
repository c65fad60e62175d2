// FLASH_ATTN_EXT: for each query row, head and batch,
//   s_j = scale * q·k_j;  s_j = softcap * tanh(s_j / softcap) when softcap > 0;  s_j += slope * mask_j
//   out = sum_j softmax(s)_j v_j     (sinks: one more logit per head in the softmax, no value)
// with an online softmax in f32 (running max and denominator, accumulator rescaled when the max
// grows). K/V heads are shared by groups of query heads (GQA); the mask broadcasts over dims 2/3.
// The result is [Dv, n_head, n_q, ne3] F32, heads of one query adjacent as in GGML. A query whose
// every key is masked out gets zeros.
#include "cpu-alibi.h"
#include "cpu-ops.h"
#include "cpu-tensor.h"
#include "cpu-vec.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace hexnpu::cpu {
namespace {

// F16 and F32 rows are read in place; the other cache types (BF16, the block types llama.cpp's
// -ctk/-ctv offer) row by row through their to_float, exactly.
bool is_kv_type(const ggml_tensor * t) { return ggml_is_contiguous_rows(t) && can_load_rows(t); }

float key_dot(const ggml_tensor * k, row_index r, const float * q, float * scratch) {
    if (k->type == GGML_TYPE_F16) {
        return dot_f16_f32(reinterpret_cast<const uint16_t *>(row_ptr(k, r)), q, k->ne[0]);
    }
    return dot_f32(row_f32(k, r, scratch), q, k->ne[0]);
}

void add_value(const ggml_tensor * v, row_index r, float weight, float * acc, float * scratch) {
    if (v->type == GGML_TYPE_F16) {
        axpy_f16(acc, reinterpret_cast<const uint16_t *>(row_ptr(v, r)), weight, v->ne[0]);
    } else {
        axpy_f32(acc, row_f32(v, r, scratch), weight, v->ne[0]);
    }
}

} // namespace

bool supports_flash_attn(const ggml_tensor * op) {
    const ggml_tensor * q     = op->src[0];
    const ggml_tensor * k     = op->src[1];
    const ggml_tensor * v     = op->src[2];
    const ggml_tensor * mask  = op->src[3];
    const ggml_tensor * sinks = op->src[4];
    if (!q || !k || !v || !is_float_type(q->type) || !is_kv_type(k) || !is_kv_type(v) || op->type != GGML_TYPE_F32) {
        return false;
    }
    if (q->ne[0] != k->ne[0] || k->ne[1] != v->ne[1] || k->ne[2] != v->ne[2] || k->ne[3] != v->ne[3] ||
        q->ne[2] % k->ne[2] != 0 || q->ne[3] % k->ne[3] != 0) {
        return false;
    }
    if (op->ne[0] != v->ne[0] || op->ne[1] != q->ne[2] || op->ne[2] != q->ne[1] || op->ne[3] != q->ne[3]) {
        return false;
    }
    if (mask && !((mask->type == GGML_TYPE_F16 || mask->type == GGML_TYPE_F32) && mask->ne[0] == k->ne[1] &&
                  mask->ne[1] >= q->ne[1] && q->ne[2] % mask->ne[2] == 0 && q->ne[3] % mask->ne[3] == 0)) {
        return false;
    }
    if (!mask && ggml_get_op_param<float>(op, 1) > 0.0f) {
        return false;
    }
    return !sinks || (sinks->type == GGML_TYPE_F32 && sinks->ne[0] == q->ne[2]);
}

void compute_flash_attn(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * q        = dst->src[0];
    const ggml_tensor * k        = dst->src[1];
    const ggml_tensor * v        = dst->src[2];
    const ggml_tensor * mask     = dst->src[3];
    const ggml_tensor * sinks    = dst->src[4];
    const float         scale    = ggml_get_op_param<float>(dst, 0);
    const float         max_bias = ggml_get_op_param<float>(dst, 1);
    const float         softcap  = ggml_get_op_param<float>(dst, 2);

    const int64_t n_q = q->ne[1], n_head = q->ne[2], n_kv = k->ne[1], dv = v->ne[0];
    const int64_t group2 = q->ne[2] / k->ne[2], group3 = q->ne[3] / k->ne[3];
    const int64_t per_item = std::max<int64_t>(1, n_kv * (k->ne[0] + dv));

    // Work item = (query, head, batch), in dst's row order.
    ctx.parallel_for(n_q * n_head * q->ne[3], std::max<int64_t>(1, 65536 / per_item), [&](int64_t t0, int64_t t1) {
        std::vector<float> q_buf(q->ne[0]), mask_buf(n_kv), acc(dv), k_buf(k->ne[0]), v_buf(dv);
        for (int64_t t = t0; t < t1; ++t) {
            const int64_t iq2 = t % n_head, iq1 = (t / n_head) % n_q, iq3 = t / (n_head * n_q);
            const int64_t ik2 = iq2 / group2, ik3 = iq3 / group3;
            const float * qr  = row_f32(q, {iq1, iq2, iq3}, q_buf.data());
            const float * m   = mask ? row_f32(mask, {iq1, iq2 % mask->ne[2], iq3 % mask->ne[3]}, mask_buf.data())
                                     : nullptr;
            const float   slope = alibi_slope(max_bias, n_head, iq2);

            float running_max = -std::numeric_limits<float>::infinity();
            float denominator = 0.0f;
            std::fill(acc.begin(), acc.end(), 0.0f);
            for (int64_t j = 0; j < n_kv; ++j) {
                const float bias = m ? slope * m[j] : 0.0f;
                if (bias == -std::numeric_limits<float>::infinity()) {
                    continue;
                }
                float s = key_dot(k, {j, ik2, ik3}, qr, k_buf.data()) * scale;
                if (softcap > 0.0f) {
                    s = softcap * std::tanh(s / softcap);
                }
                s += bias;
                float weight = 1.0f;
                if (s > running_max) {
                    const float shrink = std::exp(running_max - s);
                    scale_f32(acc.data(), shrink, dv);
                    denominator *= shrink;
                    running_max = s;
                } else {
                    weight = std::exp(s - running_max);
                }
                add_value(v, {j, ik2, ik3}, weight, acc.data(), v_buf.data());
                denominator += weight;
            }
            if (sinks) {
                const float sink =
                    load_float(GGML_TYPE_F32, static_cast<const uint8_t *>(sinks->data) + iq2 * sinks->nb[0]);
                if (sink > running_max) {
                    const float shrink = std::exp(running_max - sink);
                    scale_f32(acc.data(), shrink, dv);
                    denominator = denominator * shrink + 1.0f;
                } else {
                    denominator += std::exp(sink - running_max);
                }
            }

            const float     inv = denominator == 0.0f ? 0.0f : 1.0f / denominator;
            const row_index out_row = {iq2, iq1, iq3};
            float *         out     = out_row_f32(dst, out_row, acc.data());
            for (int64_t i = 0; i < dv; ++i) {
                out[i] = acc[size_t(i)] * inv;
            }
            commit_row(dst, out_row, out);
        }
    });
}

} // namespace hexnpu::cpu
