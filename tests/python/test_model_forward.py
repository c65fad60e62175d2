"""hexnpu's forward pass (CPU backend) against the independent numpy reference in
model_reference.py, on synthesized tiny models of each architecture: the logits of every position
agree for a fixed token sequence, evaluated as one prompt batch, in micro-batches, and one token at a
time through the KV cache (-ub 1, i.e. single-token decode).
"""

import numpy as np
import pytest

from model_reference import Model, forward

TOKENS = [1, 300, 17, 42, 511, 7, 7, 260, 99, 3, 128, 64]


def hexnpu_logits(run, path, tokens, *extra):
    out = run("run", "-m", path, "--tokens", ",".join(map(str, tokens)), "--logits", *extra).stdout
    return np.array([[float(v) for v in line.split()] for line in out.strip().splitlines()])


@pytest.mark.parametrize("preset,wtype", [("tiny", "f32"), ("tiny", "f16"), ("gemma3-tiny", "f32"),
                                          ("qwen2-tiny", "f32"), ("qwen3-tiny", "f32"), ("qwen3moe-tiny", "f32"),
                                          ("gpt-oss-tiny", "f32"), ("qwen35-tiny", "f32"), ("lfm2-tiny", "f32")])
def test_logits_match_reference(run, tmp_path, preset, wtype):
    path = tmp_path / f"{preset}.gguf"
    run("synth", path, "--preset", preset, "--type", wtype)
    ref = forward(Model(path), TOKENS)
    scale = np.abs(ref).max()
    for extra in [(), ("-ub", "5"), ("-ub", "1")]:
        got = hexnpu_logits(run, path, TOKENS, *extra)
        assert got.shape == ref.shape
        err = np.abs(got - ref).max() / scale
        assert err < 2e-4, f"{preset} {wtype} {extra}: max error {err:.2e} of the logit range"
        # and the greedy choice at every position
        assert (got.argmax(axis=1) == ref.argmax(axis=1)).all()


def test_quantized_weights_match_reference(run, tmp_path):
    """Q8_0/Q4_K weights: the reference dequantizes with the gguf package, so results still agree."""
    src = tmp_path / "g.gguf"
    run("synth", src, "--preset", "gemma3-tiny")
    for qtype in ["q8_0", "q4_k"]:
        q = tmp_path / f"g-{qtype}.gguf"
        run("quantize", src, q, qtype)
        ref = forward(Model(q), TOKENS)
        got = hexnpu_logits(run, q, TOKENS, "-ub", "4")
        err = np.abs(got - ref).max() / np.abs(ref).max()
        assert err < 2e-4, f"{qtype}: max error {err:.2e}"


def test_sliding_window_matters(run, tmp_path):
    """The reference without the window disagrees: the test would notice a missing SWA mask."""
    path = tmp_path / "g.gguf"
    run("synth", path, "--preset", "gemma3-tiny")
    m = Model(path)
    got = hexnpu_logits(run, path, TOKENS)
    m.kv["gemma3.attention.sliding_window"] = 10 ** 6
    no_window = forward(m, TOKENS)
    assert np.abs(got - no_window).max() / np.abs(no_window).max() > 1e-2


def test_rope_scaling_and_llama3_freq_factors(run, tmp_path):
    """rope.scaling.type = linear (factor 4) and a rope_freqs.weight tensor, as Llama 3 files carry:
    the synthesized llama rewritten with both, then compared with the reference."""
    from gguf import GGUFReader, GGUFWriter, GGUFValueType
    src = tmp_path / "tiny.gguf"
    run("synth", src, "--preset", "tiny")
    r = GGUFReader(str(src))
    dst = tmp_path / "scaled.gguf"
    w = GGUFWriter(str(dst), "llama")
    for k, f in r.fields.items():
        if k.startswith("GGUF.") or k == "general.architecture":
            continue
        vt = f.types[0]
        if vt == GGUFValueType.ARRAY:
            w.add_key_value(k, f.contents(), vt, sub_type=f.types[-1])
        else:
            w.add_key_value(k, f.contents(), vt)
    w.add_string("llama.rope.scaling.type", "linear")
    w.add_float32("llama.rope.scaling.factor", 4.0)
    for t in r.tensors:
        w.add_tensor(t.name, np.asarray(t.data).reshape([int(d) for d in reversed(t.shape)]))
    n_rot = int(r.fields["llama.rope.dimension_count"].contents())
    w.add_tensor("rope_freqs.weight", np.linspace(1.0, 8.0, n_rot // 2).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    ref = forward(Model(dst), TOKENS)
    plain = forward(Model(src), TOKENS)
    got = hexnpu_logits(run, dst, TOKENS, "-ub", "3")
    scale = np.abs(ref).max()
    assert np.abs(got - ref).max() / scale < 2e-4
    assert np.abs(plain - ref).max() / scale > 1e-3  # the scaling is visible in the logits
