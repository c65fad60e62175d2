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
                                          ("qwen2-tiny", "f32"), ("qwen3-tiny", "f32")])
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
