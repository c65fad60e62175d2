"""hexnpu against an independent implementation: the `gguf` Python package.

- Our quantized bytes must equal its numpy reference quantizers where those are GGML's reference
  algorithm (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4, BF16, F16).
- Our dequantization must equal its dequantization bit for bit for every type it supports.
- Files written by its GGUFWriter are read by `hexnpu gguf info`/`quantize`, and its GGUFReader
  reads what hexnpu writes, metadata intact.
"""

import numpy as np
import pytest
from gguf import GGMLQuantizationType as QT
from gguf import GGUFReader, GGUFValueType, GGUFWriter
from gguf import quants

QUANTIZE_TYPES = [QT.Q4_0, QT.Q4_1, QT.Q5_0, QT.Q5_1, QT.Q8_0, QT.MXFP4, QT.BF16, QT.F16]
DEQUANTIZE_TYPES = [QT.Q4_0, QT.Q4_1, QT.Q5_0, QT.Q5_1, QT.Q8_0, QT.IQ4_NL, QT.MXFP4,
                    QT.Q2_K, QT.Q3_K, QT.Q4_K, QT.Q5_K, QT.Q6_K, QT.BF16, QT.F16]


def awkward_rows(rng: np.random.Generator, ncols: int) -> np.ndarray:
    """Rows that exercise the quantizers' edges: zeros, constants, ties, sign of the extreme, wide ranges."""
    rows = [
        np.zeros(ncols),
        np.full(ncols, 0.75),
        np.full(ncols, -3.0),
        np.tile([1.0, -1.0, 0.5, -0.5, 0.25, 0.0, -0.0, 2.0], ncols // 8),
        rng.normal(0, 1, ncols) * 1e-3,
        rng.normal(0, 1, ncols) * 1e3,
        rng.normal(0, 1, ncols) * 3e4,           # scales near the fp16 range
        rng.uniform(-1, 1, ncols) ** 9,          # heavy concentration at zero
        np.round(rng.normal(0, 4, ncols)) / 2,   # many exact halves: rounding ties
        np.where(rng.uniform(size=ncols) < 0.05, rng.normal(0, 50, ncols), rng.normal(0, 0.1, ncols)),
    ]
    return np.stack(rows).astype(np.float32)


def write_gguf(path, tensors: dict, extra_kv=None):
    w = GGUFWriter(str(path), "llama")
    for k, v in (extra_kv or {}).items():
        w.add_key_value(k, *v)
    for name, (arr, qtype) in tensors.items():
        if qtype is None:
            w.add_tensor(name, arr)
        else:
            w.add_tensor(name, arr, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def tensor_by_name(reader: GGUFReader, name: str):
    for t in reader.tensors:
        if t.name == name:
            return t
    raise KeyError(name)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")  # the 3e4-scale row overflows fp16 on purpose
@pytest.mark.parametrize("qtype", QUANTIZE_TYPES, ids=lambda t: t.name)
def test_quantized_bytes_equal_reference(tmp_path, run, qtype):
    rng = np.random.default_rng(1234 + int(qtype))
    ncols = 256
    data = np.concatenate([rng.normal(0, 1, (54, ncols)).astype(np.float32), awkward_rows(rng, ncols)])
    src = tmp_path / "in.gguf"
    dst = tmp_path / "out.gguf"
    write_gguf(src, {"w": (data, None)})
    run("quantize", src, dst, qtype.name.lower())

    got = tensor_by_name(GGUFReader(str(dst)), "w")
    assert got.tensor_type == qtype
    expected = quants.quantize(data, qtype)
    assert np.array_equal(np.asarray(got.data).view(np.uint8).reshape(-1), expected.view(np.uint8).reshape(-1))


def random_blocks(rng: np.random.Generator, qtype: QT, nblocks: int) -> np.ndarray:
    """Random raw blocks with finite fp16 scales of sane magnitude (all other bytes random)."""
    block_size, type_size = quants.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(nblocks, type_size), dtype=np.uint8)

    def put_f16(offset):
        raw[:, offset:offset + 2] = (rng.normal(0, 1, (nblocks, 1)) * 0.05).astype(np.float16).view(np.uint8)

    if qtype in (QT.BF16, QT.F16):
        values = rng.normal(0, 10, nblocks).astype(np.float32)
        return (values.astype(np.float16) if qtype == QT.F16 else quants.quantize(values, QT.BF16)).view(np.uint8).reshape(nblocks, type_size)
    if qtype in (QT.Q4_0, QT.Q5_0, QT.Q8_0, QT.IQ4_NL):
        put_f16(0)
    elif qtype in (QT.Q4_1, QT.Q5_1):
        put_f16(0); put_f16(2)
    elif qtype == QT.MXFP4:
        raw[:, 0] = rng.integers(100, 150, nblocks, dtype=np.uint8)
    elif qtype == QT.Q2_K:
        put_f16(80); put_f16(82)
    elif qtype == QT.Q3_K:
        put_f16(108)
    elif qtype in (QT.Q4_K, QT.Q5_K):
        put_f16(0); put_f16(2)
    elif qtype == QT.Q6_K:
        put_f16(208)
    return raw


@pytest.mark.parametrize("qtype", DEQUANTIZE_TYPES, ids=lambda t: t.name)
def test_dequantization_equals_reference(tmp_path, run, qtype):
    rng = np.random.default_rng(99 + int(qtype))
    block_size, type_size = quants.GGML_QUANT_SIZES[qtype]
    ncols = 512 if block_size > 1 else 64
    nrows = 48
    blocks = random_blocks(rng, qtype, nrows * ncols // block_size)
    raw = blocks.reshape(nrows, ncols // block_size * type_size)
    src = tmp_path / "in.gguf"
    dst = tmp_path / "out.gguf"
    write_gguf(src, {"w": (raw, qtype)})
    run("quantize", src, dst, "f32")

    got = np.asarray(tensor_by_name(GGUFReader(str(dst)), "w").data, dtype=np.float32).reshape(nrows, ncols)
    expected = quants.dequantize(raw, qtype).astype(np.float32).reshape(nrows, ncols)
    mismatch = got.view(np.uint32) != expected.view(np.uint32)
    assert not mismatch.any(), f"{mismatch.sum()} values differ, first at {np.argwhere(mismatch)[0]}"


def test_info_reads_python_written_file(tmp_path, run):
    path = tmp_path / "m.gguf"
    kv = {
        "test.u8": (7, GGUFValueType.UINT8),
        "test.i64": (-(2**40), GGUFValueType.INT64),
        "test.f64": (0.125, GGUFValueType.FLOAT64),
        "test.flag": (True, GGUFValueType.BOOL),
        "test.words": (["alpha", "beta", "gamma"], GGUFValueType.ARRAY),
        "test.unicode": ("héllo ▁wörld", GGUFValueType.STRING),
    }
    data = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    write_gguf(path, {"blk.0.w": (data, None), "norm": (np.ones(32, np.float32), None)}, kv)
    out = run("gguf", "info", path).stdout
    for needle in ["test.u8", "test.i64", "-1099511627776", "0.125", "true", "alpha", "héllo ▁wörld",
                   "blk.0.w", "32 x 64", "f32", "norm", "general.architecture", "llama"]:
        assert needle in out, needle


def test_python_reads_what_hexnpu_writes(tmp_path, run):
    f32 = tmp_path / "tiny-f32.gguf"
    q = tmp_path / "tiny-q4_k.gguf"
    run("synth", f32, "--preset", "tiny")
    run("quantize", f32, q, "Q4_K")

    src, out = GGUFReader(str(f32)), GGUFReader(str(q))
    assert len(src.tensors) == len(out.tensors) > 10
    src_fields = {k: f for k, f in src.fields.items() if not k.startswith("GGUF.")}
    out_fields = {k: f for k, f in out.fields.items() if not k.startswith("GGUF.")}
    for key, field in src_fields.items():
        if key == "general.file_type":
            continue
        assert key in out_fields, key
        assert field.contents() == out_fields[key].contents(), key
    assert out_fields["general.quantization_version"].contents() == 2
    for t_in, t_out in zip(src.tensors, out.tensors):
        assert t_in.name == t_out.name
        assert list(t_in.shape) == list(t_out.shape)
        if len(t_in.shape) >= 2 and t_in.shape[0] % 256 == 0:
            assert t_out.tensor_type == QT.Q4_K, t_in.name
            # Dequantized by the oracle: close to the original weights.
            x = np.asarray(t_in.data, dtype=np.float32).reshape(-1)
            y = quants.dequantize(np.asarray(t_out.data), QT.Q4_K).reshape(-1)
            rel = np.sqrt(np.mean((x - y) ** 2) / np.mean(x ** 2))
            assert rel < 0.12, (t_in.name, rel)
        else:
            assert t_out.tensor_type == t_in.tensor_type, t_in.name
            assert np.array_equal(np.asarray(t_in.data), np.asarray(t_out.data)), t_in.name


def test_cli_errors_are_clean(tmp_path, run):
    missing = run("gguf", "info", tmp_path / "nope.gguf", check=False)
    assert missing.returncode == 1 and missing.stderr.startswith("error: ") and "nope.gguf" in missing.stderr

    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 8)
    proc = run("gguf", "info", bad, check=False)
    assert proc.returncode == 1 and proc.stderr.startswith("error: ")

    good = tmp_path / "g.gguf"
    run("synth", good)
    proc = run("quantize", good, tmp_path / "o.gguf", "q9_9", check=False)
    assert proc.returncode == 1 and "unknown type" in proc.stderr
    proc = run("quantize", good, tmp_path / "o.gguf", "iq2_xxs", check=False)
    assert proc.returncode == 1 and "iq2_xxs" in proc.stderr
    assert not (tmp_path / "o.gguf").exists()

    q = tmp_path / "q.gguf"
    run("quantize", good, q, "q8_0")
    proc = run("quantize", q, tmp_path / "r.gguf", "q4_0", check=False)
    assert proc.returncode == 1 and "--allow-requantize" in proc.stderr
    run("quantize", q, tmp_path / "r.gguf", "q4_0", "--allow-requantize")


def quantized_types(path) -> dict:
    return {t.name: t.tensor_type for t in GGUFReader(str(path)).tensors}


def test_quantize_per_tensor_types_follow_llama_quantize(tmp_path, run):
    """--tensor-type overrides first, then --output-tensor-type (output.weight), then
    --token-embedding-type, then TYPE; 1-D tensors stay float; --pure is accepted."""
    rng = np.random.default_rng(7)
    m = lambda: rng.normal(0, 1, (8, 256)).astype(np.float32)
    src = tmp_path / "in.gguf"
    write_gguf(src, {"token_embd.weight": (m(), None), "output.weight": (m(), None),
                     "blk.0.attn_q.weight": (m(), None), "blk.0.attn_v.weight": (m(), None),
                     "blk.0.ffn_up.weight": (m(), None),
                     "blk.0.attn_norm.weight": (np.ones(256, np.float32), None)})
    dst = tmp_path / "out.gguf"
    run("quantize", src, dst, "q4_0", "--pure", "--output-tensor-type", "q8_0", "--token-embedding-type", "q6_K",
        "--tensor-type", "attn_v=q5_0", "--tensor-type", "attn_[qv]=q4_k")
    assert quantized_types(dst) == {"token_embd.weight": QT.Q6_K, "output.weight": QT.Q8_0,
                                    "blk.0.attn_q.weight": QT.Q4_K, "blk.0.attn_v.weight": QT.Q5_0,
                                    "blk.0.ffn_up.weight": QT.Q4_0, "blk.0.attn_norm.weight": QT.F32}
    # A tied model (no output.weight): the output type applies to the embedding.
    tied = tmp_path / "tied.gguf"
    write_gguf(tied, {"token_embd.weight": (m(), None), "blk.0.ffn_up.weight": (m(), None)})
    run("quantize", tied, tmp_path / "tied-q.gguf", "q4_0", "--output-tensor-type", "q8_0",
        "--token-embedding-type", "q6_K")
    assert quantized_types(tmp_path / "tied-q.gguf") == {"token_embd.weight": QT.Q8_0, "blk.0.ffn_up.weight": QT.Q4_0}


def test_quantize_refuses_bad_per_tensor_options(tmp_path, hexnpu_bin):
    import subprocess
    src = tmp_path / "in.gguf"
    write_gguf(src, {"w": (np.ones((2, 64), np.float32), None)})
    for args, message in [(["--tensor-type", "attn_v"], "expected PATTERN=TYPE"),
                          (["--tensor-type", "attn_v=q9_9"], "unknown type 'q9_9'"),
                          (["--tensor-type", "attn_[=q8_0"], "bad pattern"),
                          (["--output-tensor-type"], "needs a value")]:
        r = subprocess.run([str(hexnpu_bin), "quantize", str(src), str(tmp_path / "o.gguf"), "q4_0", *args],
                           capture_output=True, text=True)
        assert r.returncode == 1 and message in r.stderr, (args, r.stderr)
        assert not (tmp_path / "o.gguf").exists()
