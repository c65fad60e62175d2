#include "model/recurrent-layers.h"

#include <cmath>

namespace hexnpu::model {
namespace {

// The convolution's input [d_conv - 1 + T, channels, 1]: the kept d_conv - 1 inputs of each
// channel, then this batch's (xt: [T, channels], a transposed view); its last d_conv - 1 columns go
// back to conv_state.
ggml_tensor * conv_input(ggml_context & ctx, ggml_cgraph & gf, ggml_tensor * xt, ggml_tensor * conv_state, int64_t d_conv) {
    const int64_t channels = xt->ne[1], T = xt->ne[0];
    ggml_tensor * kept     = ggml_reshape_3d(&ctx, conv_state, d_conv - 1, channels, 1);
    ggml_tensor * input    = ggml_concat(&ctx, kept, xt, 0);
    ggml_tensor * last     = ggml_view_3d(&ctx, input, d_conv - 1, channels, 1, input->nb[1], input->nb[2],
                                          size_t(T) * input->nb[0]);
    ggml_build_forward_expand(gf, ggml_cpy(&ctx, last, conv_state));
    return input;
}

} // namespace

ggml_tensor * delta_net_layer(ggml_context & ctx, ggml_cgraph & gf, const hparams & h, const layer_weights & L,
                              ggml_tensor * cur, ggml_tensor * conv_state, ggml_tensor * ssm_state) {
    const int64_t T = cur->ne[1], S = h.ssm_d_state, Hk = h.ssm_n_group, Hv = h.ssm_dt_rank;
    const int64_t d_conv = h.ssm_d_conv;

    ggml_tensor * qkv = ggml_mul_mat(&ctx, L.wqkv, cur);       // [conv_dim, T]
    ggml_tensor * z   = ggml_mul_mat(&ctx, L.wqkv_gate, cur);  // [d_inner, T]
    ggml_tensor * beta = ggml_unary(&ctx, ggml_reshape_4d(&ctx, ggml_mul_mat(&ctx, L.ssm_beta, cur), 1, Hv, T, 1),
                                    GGML_UNARY_OP_SIGMOID);
    // The log decay: softplus(alpha + dt_bias) * -exp(A_log) (<= 0; the op takes exp of it).
    ggml_tensor * alpha = ggml_add(&ctx, ggml_mul_mat(&ctx, L.ssm_alpha, cur), L.ssm_dt);  // [Hv, T]
    ggml_tensor * g     = ggml_mul(&ctx, ggml_unary(&ctx, alpha, GGML_UNARY_OP_SOFTPLUS), L.ssm_a);
    g                   = ggml_reshape_4d(&ctx, g, 1, Hv, T, 1);

    ggml_tensor * input = conv_input(ctx, gf, ggml_transpose(&ctx, qkv), conv_state, d_conv);
    ggml_tensor * conv  = ggml_unary(&ctx, ggml_ssm_conv(&ctx, input, L.ssm_conv1d), GGML_UNARY_OP_SILU);  // [conv_dim, T, 1]

    const size_t  e    = conv->nb[0];
    auto          part = [&](int64_t heads, int64_t at) {
        return ggml_view_4d(&ctx, conv, S, heads, T, 1, size_t(S) * e, conv->nb[1], conv->nb[2], size_t(at) * e);
    };
    // L2 norms as llama.cpp builds them: rms_norm with eps / S, times 1 / sqrt(S).
    auto l2 = [&](ggml_tensor * x) {
        return ggml_scale(&ctx, ggml_rms_norm(&ctx, x, h.rms_eps / float(S)), 1.0f / std::sqrt(float(S)));
    };
    ggml_tensor * q = l2(part(Hk, 0));
    ggml_tensor * k = l2(part(Hk, S * Hk));
    ggml_tensor * v = part(Hv, 2 * S * Hk);

    ggml_tensor * state = ggml_reshape_4d(&ctx, ssm_state, S, S, Hv, 1);
    ggml_tensor * out   = ggml_gated_delta_net(&ctx, q, k, v, g, beta, state, 1);
    const size_t  o     = out->nb[0];
    ggml_tensor * attn  = ggml_view_4d(&ctx, out, S, Hv, T, 1, size_t(S) * o, size_t(S * Hv) * o, size_t(S * Hv * T) * o, 0);
    ggml_tensor * next  = ggml_view_2d(&ctx, out, h.n_embd_s(), 1, size_t(h.n_embd_s()) * o, size_t(S * Hv * T) * o);
    ggml_build_forward_expand(gf, ggml_cpy(&ctx, next, ssm_state));

    // Gated RMS norm per head: norm(attn) * ssm_norm * silu(z).
    ggml_tensor * normed = ggml_mul(&ctx, ggml_rms_norm(&ctx, attn, h.rms_eps), L.ssm_norm);
    ggml_tensor * gated  = ggml_mul(&ctx, normed, ggml_unary(&ctx, ggml_reshape_4d(&ctx, z, S, Hv, T, 1), GGML_UNARY_OP_SILU));
    return ggml_mul_mat(&ctx, L.ssm_out, ggml_reshape_2d(&ctx, gated, S * Hv, T));
}

ggml_tensor * short_conv_layer(ggml_context & ctx, ggml_cgraph & gf, const hparams & h, const layer_weights & L,
                               ggml_tensor * cur, ggml_tensor * conv_state) {
    const int64_t E = h.n_embd, T = cur->ne[1];
    ggml_tensor * bcx  = ggml_mul_mat(&ctx, L.wqkv, cur);  // [3 E, T]: b, c, x
    auto          part = [&](int64_t i) { return ggml_view_2d(&ctx, bcx, E, T, bcx->nb[1], size_t(i * E) * bcx->nb[0]); };
    ggml_tensor * bx    = ggml_mul(&ctx, part(0), part(2));
    ggml_tensor * input = conv_input(ctx, gf, ggml_transpose(&ctx, bx), conv_state, h.ssm_d_conv);
    ggml_tensor * y     = ggml_mul(&ctx, part(1), ggml_ssm_conv(&ctx, input, L.ssm_conv1d));
    return ggml_mul_mat(&ctx, L.ssm_out, ggml_reshape_2d(&ctx, y, E, T));
}

} // namespace hexnpu::model
