// The recurrent layers of hybrid models, graph-building only: qwen35's gated delta net (llama.cpp's
// build_layer_attn_linear) and lfm2's short convolution (its build_shortconv_block). Each carries a
// per-sequence state in the context's caches and adds its writes to gf.
#pragma once

#include "model/model.h"

namespace hexnpu::model {

// cur [n_embd, n_tokens] (one sequence) through the layer: q, k, v projected together and run
// through the short convolution after the layer's last d_conv - 1 inputs (conv_state, which gets
// this batch's last d_conv - 1), SiLU, q and k L2-normalised, GATED_DELTA_NET from ssm_state (which
// gets the new state), RMS-normed per head times SiLU(z), the output projection. The state writes
// are added to gf.
ggml_tensor * delta_net_layer(ggml_context & ctx, ggml_cgraph & gf, const hparams & h, const layer_weights & L,
                              ggml_tensor * cur, ggml_tensor * conv_state, ggml_tensor * ssm_state);

// lfm2: cur [n_embd, n_tokens] projected to b, c, x; b x through the short convolution after the
// layer's last l_cache - 1 inputs (conv_state, which gets this batch's last l_cache - 1); times c;
// the output projection.
ggml_tensor * short_conv_layer(ggml_context & ctx, ggml_cgraph & gf, const hparams & h, const layer_weights & L,
                               ggml_tensor * cur, ggml_tensor * conv_state);

} // namespace hexnpu::model
