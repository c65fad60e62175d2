"""An independent reference forward pass for the llama, qwen2, qwen3, qwen3moe and gemma3
architectures in numpy (float64), reading a GGUF with the `gguf` package. It shares no code with
src/: it follows the published model definitions (and llama.cpp's conventions where GGUF encodes
them: RoPE pair layout per architecture, Gemma's norm weights stored with the +1 folded in, the
sliding-window rule p_q - p_k < n_swa, every sixth Gemma 3 layer global, the KV cache rounded to
float16; Qwen3-MoE's router: a softmax over the experts, the top expert_used_count renormalized;
gpt-oss: biases, attention sinks, the sliding window on even layers, YaRN, a router that picks by
its logits and weighs by their softmax, biased experts with the clamped SwiGLU of its release;
Qwen3.5: the gated delta rule of its linear-attention layers as Qwen3-Next's reference recurrence
states it, after a causal depthwise convolution, with key heads shared by the value heads tiled (the
order llama.cpp's converter leaves them in), and gated full attention every fourth layer; LFM2: its
short-convolution blocks (B x through a causal depthwise convolution, times C) where a layer has no
KV heads, QK-norm attention in the others).
"""

import numpy as np
from gguf import GGUFReader
from gguf import quants


class Model:
    def __init__(self, path, reader=None):
        r = reader if reader is not None else GGUFReader(str(path))
        self.kv = {k: f.contents() for k, f in r.fields.items() if not k.startswith("tokenizer.")}
        self.arch = self.kv["general.architecture"]
        self.t = {}
        for t in r.tensors:
            a = quants.dequantize(np.asarray(t.data), t.tensor_type).astype(np.float64)
            self.t[t.name] = a.reshape([int(d) for d in reversed(t.shape)])

    def key(self, name, default=None):
        return self.kv.get(f"{self.arch}.{name}", default)


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, pos, n_rot, base, neox, freq_scale=1.0, freq_factors=None, yarn_ctx=None):
    """x: [n_tokens, n_heads, head_dim]; rotates the first n_rot dims. Linear scaling multiplies the
    positions by freq_scale; Llama 3's rope_freqs divide each frequency by its factor. YaRN (its
    paper; yarn_ctx the original context): frequencies below the correction range interpolate (times
    freq_scale), above it keep theirs, a linear ramp between; cos and sin times 1 + 0.1 ln(1/freq_scale)."""
    half = n_rot // 2
    extrap = base ** (-np.arange(half) * 2.0 / n_rot)
    if freq_factors is not None:
        extrap = extrap / freq_factors[:half]
    inv, mscale = extrap * freq_scale, 1.0
    if yarn_ctx is not None:
        def corr_dim(n_rotations):  # the pair whose wavelength fits n_rotations times into yarn_ctx
            return n_rot * np.log(yarn_ctx / (n_rotations * 2 * np.pi)) / (2 * np.log(base))
        low, high = max(0.0, np.floor(corr_dim(32.0))), min(n_rot - 1.0, np.ceil(corr_dim(1.0)))
        keep = 1.0 - np.clip((np.arange(half) - low) / max(0.001, high - low), 0.0, 1.0)
        inv = inv * (1.0 - keep) + extrap * keep
        mscale = 1.0 + 0.1 * np.log(1.0 / freq_scale)
    ang = pos[:, None] * inv[None, :]  # [n_tokens, half]
    cos, sin = mscale * np.cos(ang)[:, None, :], mscale * np.sin(ang)[:, None, :]
    out = x.copy()
    if neox:
        a, b = x[..., :half], x[..., half:n_rot]
        out[..., :half] = a * cos - b * sin
        out[..., half:n_rot] = a * sin + b * cos
    else:
        a, b = x[..., 0:n_rot:2], x[..., 1:n_rot:2]
        out[..., 0:n_rot:2] = a * cos - b * sin
        out[..., 1:n_rot:2] = a * sin + b * cos
    return out


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def softmax(v):
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def swiglu_oai(g, u, alpha=1.702, limit=7.0):
    """gpt-oss's: the gate clamped above at limit, times its sigmoid(alpha g); the up projection
    clamped to [-limit, limit], plus one."""
    g = np.minimum(g, limit)
    return g / (1.0 + np.exp(-alpha * g)) * (np.clip(u, -limit, limit) + 1.0)


def moe_ffn(m, p, h):
    """The mixture-of-experts FFN of h [n_tokens, n_embd]. Qwen3-MoE: per token, the experts with the
    largest router probabilities, their SwiGLU outputs weighted by those probabilities summed to
    one. gpt-oss: the largest biased router logits pick, their softmax weighs, the experts' matmuls
    carry biases and the clamped SwiGLU."""
    t = m.t
    oss = m.arch == "gpt-oss"
    k = m.key("expert_used_count")
    logits = h @ t[p + "ffn_gate_inp.weight"].T + t.get(p + "ffn_gate_inp.bias", 0.0)  # [n_tokens, n_expert]
    probs = logits if oss else softmax(logits)
    gate, up, down = t[p + "ffn_gate_exps.weight"], t[p + "ffn_up_exps.weight"], t[p + "ffn_down_exps.weight"]
    zero = np.zeros((gate.shape[0], 1))
    gate_b, up_b = t.get(p + "ffn_gate_exps.bias", zero), t.get(p + "ffn_up_exps.bias", zero)
    down_b = t.get(p + "ffn_down_exps.bias", zero)
    out = np.zeros_like(h)
    for i in range(h.shape[0]):
        chosen = np.argsort(-probs[i])[:k]
        w = softmax(probs[i, chosen]) if oss else probs[i, chosen] / max(probs[i, chosen].sum(), 6.103515625e-5)
        for e, we in zip(chosen, w):
            g, u = gate[e] @ h[i] + gate_b[e], up[e] @ h[i] + up_b[e]
            act = swiglu_oai(g, u) if oss else silu(g) * u
            out[i] += we * (act @ down[e].T + down_b[e])
    return out


def softplus(x):
    return np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def delta_net(m, p, h):
    """Qwen3.5's linear-attention layer over h [n_tokens, n_embd] from a zero state: q, k, v by one
    projection through a causal depthwise convolution (kernel ssm.conv_kernel) and SiLU; q and k
    L2-normalised per head; per token the state S [key, value] of each value head decays by
    exp(g), g = softplus(alpha + dt_bias) * A, takes the delta beta (v - S^T k) along k, and gives
    S^T q / sqrt(d); each head's output RMS-normed, times SiLU of the gate z; the output projection."""
    t = m.t
    n = h.shape[0]
    d, hk, hv = m.key("ssm.state_size"), m.key("ssm.group_count"), m.key("ssm.time_step_rank")
    kern = m.key("ssm.conv_kernel")
    eps = m.key("attention.layer_norm_rms_epsilon")
    mixed = h @ t[p + "attn_qkv.weight"].T  # [n, 2 d hk + d hv]
    padded = np.concatenate([np.zeros((kern - 1, mixed.shape[1])), mixed])
    w = t[p + "ssm_conv1d.weight"]  # [channels, kern]
    conv = silu(sum(padded[i:i + n] * w[:, i] for i in range(kern)))
    q, k, v = conv[:, :d * hk].reshape(n, hk, d), conv[:, d * hk:2 * d * hk].reshape(n, hk, d), conv[:, 2 * d * hk:].reshape(n, hv, d)
    l2 = lambda x: x / np.sqrt((x * x).sum(axis=-1, keepdims=True) + eps)  # noqa: E731
    q, k = l2(q), l2(k)
    beta = sigmoid(h @ t[p + "ssm_beta.weight"].T)  # [n, hv]
    g = softplus(h @ t[p + "ssm_alpha.weight"].T + t[p + "ssm_dt.bias"]) * t[p + "ssm_a"]
    z = (h @ t[p + "attn_gate.weight"].T).reshape(n, hv, d)
    out = np.zeros((n, hv, d))
    for head in range(hv):
        S = np.zeros((d, d))
        kh = head % hk
        for i in range(n):
            S *= np.exp(g[i, head])
            delta = beta[i, head] * (v[i, head] - S.T @ k[i, kh])
            S += np.outer(k[i, kh], delta)
            out[i, head] = S.T @ q[i, kh] / np.sqrt(d)
    out = rms_norm(out, t[p + "ssm_norm.weight"], eps) * silu(z)
    return out.reshape(n, hv * d) @ t[p + "ssm_out.weight"].T


def gated_attention(m, p, h, pos):
    """Qwen3.5's full attention: Q and its output gate side by side per head in one projection,
    QK-norm, RoPE (its interleaved multi-section RoPE: for text every section's position is the
    token's, so NEOX pairs over rope.dimension_count), the causal softmax over K/V rounded to float16
    (the cache), times sigmoid(gate), the output projection."""
    t = m.t
    n = h.shape[0]
    n_head = m.key("attention.head_count")
    n_head_kv = m.key("attention.head_count_kv", n_head)
    hd = m.key("attention.key_length")
    eps = m.key("attention.layer_norm_rms_epsilon")
    n_rot, base = m.key("rope.dimension_count", hd), m.key("rope.freq_base", 10000.0)
    qg = (h @ t[p + "attn_q.weight"].T).reshape(n, n_head, 2 * hd)
    q, gate = rms_norm(qg[..., :hd], t[p + "attn_q_norm.weight"], eps), qg[..., hd:]
    k = rms_norm((h @ t[p + "attn_k.weight"].T).reshape(n, n_head_kv, hd), t[p + "attn_k_norm.weight"], eps)
    v = (h @ t[p + "attn_v.weight"].T).reshape(n, n_head_kv, hd)
    q, k = rope(q, pos, n_rot, base, True), rope(k, pos, n_rot, base, True)
    k, v = k.astype(np.float16).astype(np.float64), v.astype(np.float16).astype(np.float64)
    causal = np.tril(np.ones((n, n), dtype=bool))
    out = np.zeros((n, n_head, hd))
    for hh in range(n_head):
        kv = hh // (n_head // n_head_kv)
        s = np.where(causal, (q[:, hh] @ k[:, kv].T) / np.sqrt(hd), -np.inf)
        out[:, hh] = softmax(s) @ v[:, kv]
    return (out * sigmoid(gate)).reshape(n, n_head * hd) @ t[p + "attn_output.weight"].T


def short_conv(m, p, h):
    """LFM2's convolution block over h [n_tokens, n_embd] from a zero state: B, C, x by one projection;
    B x through a causal depthwise convolution (shortconv.l_cache taps); times C; out_proj."""
    t = m.t
    n, e = h.shape
    kern = m.key("shortconv.l_cache")
    bcx = h @ t[p + "shortconv.in_proj.weight"].T
    b, c, x = bcx[:, :e], bcx[:, e:2 * e], bcx[:, 2 * e:]
    padded = np.concatenate([np.zeros((kern - 1, e)), b * x])
    w = t[p + "shortconv.conv.weight"]  # [n_embd, kern]
    conv = sum(padded[i:i + n] * w[:, i] for i in range(kern))
    return (c * conv) @ t[p + "shortconv.out_proj.weight"].T


def forward_qwen35(m, tokens):
    t = m.t
    n_layer, eps = m.key("block_count"), m.key("attention.layer_norm_rms_epsilon")
    interval = m.key("full_attention_interval", 4)
    x = t["token_embd.weight"][tokens]
    pos = np.arange(len(tokens), dtype=np.float64)
    for il in range(n_layer):
        p = f"blk.{il}."
        h = rms_norm(x, t[p + "attn_norm.weight"], eps)
        x = x + (gated_attention(m, p, h, pos) if (il + 1) % interval == 0 else delta_net(m, p, h))
        h = rms_norm(x, t[p + "post_attention_norm.weight"], eps)
        x = x + (silu(h @ t[p + "ffn_gate.weight"].T) * (h @ t[p + "ffn_up.weight"].T)) @ t[p + "ffn_down.weight"].T
    return x


def forward(m, tokens, last_n=None):
    """Logits [n_tokens, n_vocab] for the token sequence from position 0 (causal); with last_n,
    only the last last_n positions' logits."""
    arch = m.arch
    gemma = arch == "gemma3"
    oss = arch == "gpt-oss"
    n_embd = m.key("embedding_length")
    n_layer = m.key("block_count")
    n_head = m.key("attention.head_count")
    n_head_kv = m.key("attention.head_count_kv", n_head)
    hd = m.key("attention.key_length", n_embd // n_head)
    n_rot = m.key("rope.dimension_count", hd)
    eps = m.key("attention.layer_norm_rms_epsilon")
    base = m.key("rope.freq_base", 10000.0)
    n_swa = m.key("attention.sliding_window", 0) if gemma or oss else 0
    scaling = m.key("rope.scaling.type", "none")
    assert scaling in ("none", "linear", "yarn"), scaling
    freq_scale = 1.0 / m.key("rope.scaling.factor", 1.0) if scaling != "none" else 1.0
    yarn_ctx = m.key("rope.scaling.original_context_length", m.key("context_length")) if scaling == "yarn" else None
    neox = arch != "llama"
    t = m.t
    if arch == "qwen35":
        x = forward_qwen35(m, tokens)
        x = rms_norm(x if last_n is None else x[-last_n:], t["output_norm.weight"], eps)
        return x @ t.get("output.weight", t["token_embd.weight"]).T
    n = len(tokens)
    pos = np.arange(n, dtype=np.float64)
    lfm2 = arch == "lfm2"
    if lfm2:  # KV heads per layer: 0 marks a convolution layer
        kv_per_layer = list(n_head_kv)
        n_head_kv = max(kv_per_layer)

    x = t["token_embd.weight"][tokens]
    if gemma:
        x = x * np.sqrt(n_embd)
    causal = np.tril(np.ones((n, n), dtype=bool))
    for il in range(n_layer):
        p = f"blk.{il}."
        local = (gemma and il % 6 < 5) or (oss and il % 2 == 0)
        h = rms_norm(x, t[p + "attn_norm.weight"], eps)
        if lfm2 and kv_per_layer[il] == 0:
            x = x + short_conv(m, p, h)
            h = rms_norm(x, t[p + "ffn_norm.weight"], eps)
            x = x + (silu(h @ t[p + "ffn_gate.weight"].T) * (h @ t[p + "ffn_up.weight"].T)) @ t[p + "ffn_down.weight"].T
            continue
        q = h @ t[p + "attn_q.weight"].T
        k = h @ t[p + "attn_k.weight"].T
        v = h @ t[p + "attn_v.weight"].T
        if p + "attn_q.bias" in t:
            q, k, v = q + t[p + "attn_q.bias"], k + t[p + "attn_k.bias"], v + t[p + "attn_v.bias"]
        q = q.reshape(n, n_head, hd)
        k = k.reshape(n, n_head_kv, hd)
        v = v.reshape(n, n_head_kv, hd)
        if p + "attn_q_norm.weight" in t:
            q = rms_norm(q, t[p + "attn_q_norm.weight"], eps)
            k = rms_norm(k, t[p + "attn_k_norm.weight"], eps)
        # Gemma's local layers: base 10000, unscaled; gpt-oss's: the global RoPE.
        b = 10000.0 if local and gemma else base
        fs = 1.0 if local and gemma else freq_scale
        yc = None if local and gemma else yarn_ctx
        ff = t.get("rope_freqs.weight")
        q = rope(q, pos, n_rot, b, neox, fs, ff, yc)
        k = rope(k, pos, n_rot, b, neox, fs, ff, yc)
        # The cache holds K and V as float16.
        k = k.astype(np.float16).astype(np.float64)
        v = v.astype(np.float16).astype(np.float64)
        scale = 1.0 / np.sqrt(hd)
        allowed = causal.copy()
        if local:
            allowed &= (np.arange(n)[:, None] - np.arange(n)[None, :]) < n_swa
        group = n_head // n_head_kv
        out = np.zeros((n, n_head, hd))
        for hh in range(n_head):
            kh, vh = k[:, hh // group, :], v[:, hh // group, :]
            s = (q[:, hh, :] @ kh.T) * scale
            s = np.where(allowed, s, -np.inf)
            # gpt-oss's sink: one more logit per head in the softmax's sum, with no value.
            sink = t[p + "attn_sinks.weight"][hh] if oss else -np.inf
            top = np.maximum(s.max(axis=1, keepdims=True), sink)
            s = np.exp(s - top)
            s /= s.sum(axis=1, keepdims=True) + np.exp(sink - top)
            out[:, hh, :] = s @ vh
        a = out.reshape(n, n_head * hd) @ t[p + "attn_output.weight"].T + t.get(p + "attn_output.bias", 0.0)
        if gemma:
            a = rms_norm(a, t[p + "post_attention_norm.weight"], eps)
        x = x + a
        h = rms_norm(x, t[p + ("post_attention_norm.weight" if oss else "ffn_norm.weight")], eps)
        if p + "ffn_gate_inp.weight" in t:
            f = moe_ffn(m, p, h)
        else:
            g = h @ t[p + "ffn_gate.weight"].T
            u = h @ t[p + "ffn_up.weight"].T
            f = ((gelu_tanh(g) if gemma else silu(g)) * u) @ t[p + "ffn_down.weight"].T
        if gemma:
            f = rms_norm(f, t[p + "post_ffw_norm.weight"], eps)
        x = x + f
    if last_n is not None:
        x = x[-last_n:]
    x = rms_norm(x, t["token_embd_norm.weight" if lfm2 else "output_norm.weight"], eps)
    w_out = t.get("output.weight", t["token_embd.weight"])
    return x @ w_out.T
