"""The real model, Gemma 3 270M Q4_K_M (nobody here wrote it), end to end.

- Its logits on a short prompt, and (HEXNPU_SLOW_TESTS=1) on the last positions of 530 tokens (past
  the 512-token sliding window), agree with the independent numpy forward pass (tests/python/model_reference.py, reading
  the GGUF with the `gguf` package).
- hexnpu perplexity on the shipped public-domain text stays below a bound: measured 4.51 with
  -c 256 (the text is famous, so low); a broken layer gives hundreds or thousands, a subtly wrong
  one (RoPE base, a missing norm, no sliding window) lands well above the bound of 8.
- Greedy generation is deterministic and English. --device HTP0 (what the virtual NPU supports on
  it, the rest on the CPU) agrees with the CPU as the issue asks where fp16/Q8 rounding on the NPU
  makes tokens diverge: top-1 agreement >= 95 % and perplexity within 2 % over the positions
  hexnpu perplexity -c 256 scores (measured: 96.9 %, 4.554 vs 4.512 with every Q8_0/Q4_K/Q6_K
  matmul on HTP0).
- Tokenize -> detokenize round-trips a multilingual text; on texts without runs of spaces the ids
  equal Google's sentencepiece (a BPE model proto built from the GGUF's pieces, scores and types).
  Runs of spaces differ on purpose: Gemma's vocabulary has user-defined pieces of 2..31 raw spaces,
  which llama.cpp (and hexnpu) match in the raw text, while sentencepiece matches user-defined
  pieces after escaping spaces to U+2581, so it never produces them.
- A prompt longer than the context is an error, exit 1; so is the NPU session dying.
- A session window smaller than the weights (HEXNPU_WINDOW_SIZE 224 MiB, weights 235 MiB in
  buffers of at most GGML_HEXAGON_MBUF 190 MiB): the window slides (maps and unmaps every token),
  logits and tokens are bit-identical to a full window; a window smaller than one op's buffers and a
  weight larger than MBUF are clear errors.
- A layer split over 2, 3 and 4 sessions (GGML_HEXAGON_DEVICES=N, --device HTP0:0,..): every session
  runs its layers (the plan puts nodes on each, no copies between them), and the logits are
  bit-identical to one session's (the split changes no summation order); --tensor-split shares the
  layers by proportion.
- A row split over 2, 3 and 4 sessions (-sm row: one device group, every op sliced over the members,
  fences between ops): the same bit-identical logits (each output element is computed whole by one
  member), and greedy generation gives the same text.
"""

import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

BIN = os.environ["HEXNPU_BIN"]
MODEL = os.environ["HEXNPU_MODEL"]
TEXT = Path(__file__).resolve().parents[1] / "data" / "english-public-domain.txt"
PROMPT = "The capital of France is"


def hexnpu(*args, check=True, env=None):
    p = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, timeout=300,
                       env=None if env is None else {**os.environ, **env})
    if check and p.returncode != 0:
        raise AssertionError(f"hexnpu {' '.join(map(str, args))} failed ({p.returncode}):\n{p.stderr}")
    return p


def tokenize(text):
    out = hexnpu("tokenize", "-m", MODEL, "-p", text, "--ids").stdout
    return [int(x) for x in out.strip().strip("[]").split(",")]


@pytest.fixture(scope="module")
def reader():
    from gguf import GGUFReader
    return GGUFReader(MODEL)  # ~20 s for the 262144-token vocabulary: read once


def test_logits_match_numpy_reference(reader):
    from model_reference import Model, forward
    tokens = tokenize(PROMPT)
    ref = forward(Model(MODEL, reader), tokens)
    out = hexnpu("run", "-m", MODEL, "--tokens", ",".join(map(str, tokens)), "--logits").stdout
    got = np.array([[float(v) for v in line.split()] for line in out.strip().splitlines()])
    err = np.abs(got - ref).max() / np.abs(ref).max()
    assert err < 1e-3, f"max error {err:.2e} of the logit range"
    assert (got.argmax(axis=1) == ref.argmax(axis=1)).all()


@pytest.mark.skipif(not os.environ.get("HEXNPU_SLOW_TESTS"), reason="~20 s more: set HEXNPU_SLOW_TESTS=1")
def test_sliding_window_on_the_real_model(reader):
    """530 tokens: the local layers see only the last 512 positions. The last positions' logits
    agree with the reference; without the window the reference differs by 20x the tolerance."""
    from model_reference import Model, forward
    tokens = tokenize(TEXT.read_text())[:530]
    m = Model(MODEL, reader)
    ref = forward(m, tokens, last_n=4)
    out = hexnpu("run", "-m", MODEL, "--tokens", ",".join(map(str, tokens)), "--logits-from", "526").stdout
    got = np.array([[float(v) for v in line.split()] for line in out.strip().splitlines()])
    scale = np.abs(ref).max()
    assert np.abs(got - ref).max() / scale < 1e-3
    m.kv["gemma3.attention.sliding_window"] = 10 ** 6
    assert np.abs(forward(m, tokens, last_n=4) - ref).max() / scale > 2e-2


def generate(*extra):
    return hexnpu("run", "-m", MODEL, "-p", PROMPT, "-n", "24", *extra).stdout


def test_greedy_is_deterministic_and_english():
    a, b = generate(), generate("-t", "1")
    assert a == b
    words = re.findall(r"[A-Za-z']+", a[len(PROMPT):])
    assert len(words) >= 12, a
    common = {"the", "of", "and", "is", "in", "a", "to", "it", "city", "capital", "france"}
    assert sum(w.lower() in common for w in words) >= 5, a


def test_perplexity_is_plausible_and_htp0_agrees_with_cpu():
    """hexnpu perplexity -c 256 over the whole text (4 chunks, 508 scored positions, each after >= 128
    tokens of context) on the CPU and on HTP0."""
    runs = {}
    for dev in ["CPU", "HTP0"]:
        out = hexnpu("perplexity", "-m", MODEL, "-f", TEXT, "-c", "256", "--top1", "--device", dev).stdout
        ppl = float(re.search(r"Final estimate: PPL = ([0-9.]+)", out).group(1))
        runs[dev] = (ppl, out.split("top1:")[1].split())
    (cpu_ppl, cpu_top), (npu_ppl, npu_top) = runs["CPU"], runs["HTP0"]
    assert 1.5 < cpu_ppl < 8.0, cpu_ppl
    assert len(cpu_top) == len(npu_top) > 500
    agree = sum(a == b for a, b in zip(cpu_top, npu_top)) / len(cpu_top)
    assert agree >= 0.95, f"top-1 agreement {agree:.3f}"
    assert abs(npu_ppl / cpu_ppl - 1) < 0.02, (npu_ppl, cpu_ppl)


def window_env(window_mib, mbuf_mib=190):
    return {"HEXNPU_WINDOW_SIZE": str(window_mib << 20), "GGML_HEXAGON_MBUF": str(mbuf_mib)}


def window_stats(stderr):
    m = re.search(r"HTP0 window: (\d+) batches, (\d+) maps \(.*\), (\d+) unmaps \(.*\), (\d+) extended maps", stderr)
    assert m, stderr
    return tuple(map(int, m.groups()))


def test_weights_larger_than_the_window_slide_through_it():
    tokens = ",".join(map(str, tokenize(PROMPT + " Paris, and the capital of Italy is")))
    runs = {}
    for window in [4096, 224]:
        env = window_env(window)
        logits = hexnpu("run", "-m", MODEL, "--tokens", tokens, "--logits", "-c", "512", "--device", "HTP0", env=env)
        text = hexnpu("run", "-m", MODEL, "-p", PROMPT, "-n", "12", "-c", "512", "--device", "HTP0", env=env)
        runs[window] = (logits.stdout, text.stdout, window_stats(logits.stderr), window_stats(text.stderr))
    full, small = runs[4096], runs[224]
    assert full[2][2] == 0 and full[3][2] == 0, "a full window unmaps nothing"
    batches, maps, unmaps, _ = small[3]
    assert unmaps >= 2 * 11 and maps > unmaps, small[3]  # each decoded token maps both weight buffers
    assert small[2][2] > 0
    assert small[0] == full[0], "logits differ with a sliding window"
    assert small[1] == full[1]


def test_v81_maps_the_weights_outside_the_window():
    tokens = ",".join(map(str, tokenize(PROMPT + " Paris, and the capital of Italy is")))
    runs = {}
    for window in [4096, 224]:
        env = {**window_env(window), "HEXNPU_ARCH": "v81"}
        p = hexnpu("run", "-m", MODEL, "--tokens", tokens, "--logits", "-c", "512", "--device", "HTP0", env=env)
        runs[window] = (p.stdout, window_stats(p.stderr))
    assert runs[224][0] == runs[4096][0]
    batches, maps, unmaps, extended = runs[224][1]
    assert unmaps == 0 and extended >= 2, runs[224][1]  # both weight buffers, once


def test_window_smaller_than_one_op_is_an_error():
    # A weight buffer larger than the window: refused as the model loads, before any output, naming
    # the setting that made the window small.
    p = hexnpu("run", "-m", MODEL, "-p", PROMPT, "-n", "2", "-c", "512", "--device", "HTP0",
               env=window_env(160), check=False)
    assert p.returncode == 1 and p.stdout == ""
    assert "HTP0-REPACK: a buffer of" in p.stderr and "(HEXNPU_WINDOW_SIZE)" in p.stderr, p.stderr
    # One that fits alone but not beside the pinned buffers (KV cache, compute): the op that needs it.
    p = hexnpu("run", "-m", MODEL, "-p", PROMPT, "-n", "2", "-c", "512", "--device", "HTP0",
               env=window_env(195), check=False)
    assert p.returncode == 1
    assert "cannot run on the NPU" in p.stderr and "more than the window budget" in p.stderr, p.stderr
    assert "(HEXNPU_WINDOW_SIZE)" in p.stderr, p.stderr
    p = hexnpu("run", "-m", MODEL, "-p", PROMPT, "-n", "2", "--device", "HTP0", env=window_env(4096, 100), check=False)
    assert p.returncode == 1
    assert "token_embd.weight" in p.stderr and "more than its largest buffer" in p.stderr, p.stderr


def sessions(n):
    return ",".join(f"HTP0:{i}" for i in range(n))


def plan_nodes(stderr):
    """Nodes per backend of the first graph's plan (--verbose)."""
    line = re.search(r"plan \(\d+-token graph\): .*", stderr).group(0)
    return {name: int(count) for name, count in re.findall(r" (HTP0:\d|CPU) (\d+)", line)}


def test_layer_split_over_sessions_gives_the_same_logits():
    tokens = ",".join(map(str, tokenize(PROMPT)))
    logits = {}
    for n in [1, 2, 3, 4]:
        p = hexnpu("run", "-m", MODEL, "--tokens", tokens, "--logits", "-c", "256", "--device", sessions(n),
                   "--verbose", env={"GGML_HEXAGON_DEVICES": str(n)})
        logits[n] = p.stdout
        nodes = plan_nodes(p.stderr)
        assert all(nodes.get(f"HTP0:{i}", 0) > 100 for i in range(n)), nodes
        assert nodes.get("CPU", 0) == 0, nodes  # the tied token rows too: from the output head's tiles
        m = re.search(r"plan \(\d+-token graph\): \d+ nodes, (\d+) splits, (\d+) copies", p.stderr)
        # With several sessions the token rows run where the output head lives (the last one),
        # then the layers from the first: one split more.
        assert int(m.group(1)) == (1 if n == 1 else n + 1) and int(m.group(2)) == 0, m.group(0)
        for i in range(n):
            assert window_stats(p.stderr.replace(f"HTP0:{i} window", "HTP0 window"))[0] > 0
    for n in [2, 3, 4]:
        assert logits[n] == logits[1], f"{n} sessions: logits differ from one session's"
    p = hexnpu("run", "-m", MODEL, "--tokens", tokens, "--logits", "-c", "256", "--device", sessions(2),
               "-ts", "1,2", "--verbose", env={"GGML_HEXAGON_DEVICES": "2"})
    nodes = plan_nodes(p.stderr)
    assert p.stdout == logits[1]
    assert 1.6 < nodes["HTP0:1"] / nodes["HTP0:0"] < 2.4, nodes  # 6 and 12 of the 18 layers


def test_row_split_over_a_device_group_gives_the_same_logits_and_text():
    tokens = ",".join(map(str, tokenize(PROMPT)))
    one = hexnpu("run", "-m", MODEL, "--tokens", tokens, "--logits", "-c", "256", "--device", "HTP0").stdout
    text = hexnpu("run", "-m", MODEL, "-p", PROMPT, "-n", "12", "-c", "256", "--device", "HTP0").stdout
    for n in [2, 3, 4]:
        env = {"GGML_HEXAGON_DEVICES": str(n)}
        p = hexnpu("run", "-m", MODEL, "--tokens", tokens, "--logits", "-c", "256", "--device", sessions(n),
                   "-sm", "row", "--verbose", env=env)
        assert p.stdout == one, f"{n} sessions: logits differ"
        group = "+".join(f"HTP0:{i}" for i in range(n))
        assert re.search(rf"plan \(\d+-token graph\): \d+ nodes, 1 splits, 0 copies; {re.escape(group)} \d+",
                         p.stderr), p.stderr[-2000:]
        for i in range(n):  # every member ran every batch
            assert window_stats(p.stderr.replace(f"HTP0:{i} window", "HTP0 window"))[0] == \
                window_stats(p.stderr.replace("HTP0:0 window", "HTP0 window"))[0]
        g = hexnpu("run", "-m", MODEL, "-p", PROMPT, "-n", "12", "-c", "256", "--device", sessions(n), "-sm", "row",
                   env=env)
        assert g.stdout == text


def test_tokenize_round_trip_multilingual():
    text = ("Grüße aus München! Ça va? 東京は日本の首都です。 Привет, мир. 🙂 <b>bold</b>\n\n"
            "\ttabs  and   spaces")
    ids = tokenize(text)
    assert ids[0] == 2  # <bos>
    out = hexnpu("run", "-m", MODEL, "--tokens", ",".join(map(str, ids)), "-n", "0").stdout
    assert out == text + "\n\n"


def test_tokenizer_matches_sentencepiece(reader):
    try:
        import sentencepiece as spm
        from sentencepiece import sentencepiece_model_pb2 as pb
    except ImportError as e:
        pytest.skip(f"sentencepiece/protobuf not installed ({e}); scripts/fetch-model.sh installs them")
    f = reader.fields
    toks = [bytes(f["tokenizer.ggml.tokens"].parts[i]).decode() for i in f["tokenizer.ggml.tokens"].data]
    scores = [float(f["tokenizer.ggml.scores"].parts[i][0]) for i in f["tokenizer.ggml.scores"].data]
    types = [int(f["tokenizer.ggml.token_type"].parts[i][0]) for i in f["tokenizer.ggml.token_type"].data]
    P = pb.ModelProto.SentencePiece
    kind = {1: P.NORMAL, 2: P.UNKNOWN, 3: P.CONTROL, 4: P.USER_DEFINED, 5: P.UNUSED, 6: P.BYTE}
    m = pb.ModelProto()
    m.trainer_spec.model_type = pb.TrainerSpec.BPE
    m.trainer_spec.byte_fallback = True
    m.trainer_spec.vocab_size = len(toks)
    m.trainer_spec.pad_id, m.trainer_spec.eos_id, m.trainer_spec.bos_id, m.trainer_spec.unk_id = 0, 1, 2, 3
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.add_dummy_prefix = False  # tokenizer.ggml.add_space_prefix
    m.normalizer_spec.escape_whitespaces = True
    m.normalizer_spec.remove_extra_whitespaces = False
    for t, sc, ty in zip(toks, scores, types):
        p = m.pieces.add()
        p.piece, p.score, p.type = t, sc, kind[ty]
    m.pieces[3].type = P.UNKNOWN  # <unk> is stored as a control token; sentencepiece wants it UNKNOWN
    sp = spm.SentencePieceProcessor(model_proto=m.SerializeToString())
    texts = [TEXT.read_text()[:3000].replace("  ", " "), PROMPT + " Paris.",
             "Grüße aus München! Ça va? 東京は日本の首都です。 Привет, мир. 🙂 <b>bold</b>\n\n\ttab",
             "def f(x):\n\treturn x**2 # square\n\n\n", "नमस्ते दुनिया ﬁ ligature ① circled \u00a0nbsp \u200bzw",
             "<start_of_turn>user\nhi<end_of_turn>", "a\x01b\x7f c \U0001F9EC x"]
    for t in texts:
        got = [int(x) for x in hexnpu("tokenize", "-m", MODEL, "-p", t, "--ids", "--no-bos",
                                      "--no-parse-special").stdout.strip().strip("[]").split(",")]
        assert got == sp.encode(t), t[:80]


def test_prompt_longer_than_context_is_an_error():
    p = hexnpu("run", "-m", MODEL, "-f", TEXT, "-c", "64", "-n", "4", check=False)
    assert p.returncode == 1
    assert "\nerror: " in "\n" + p.stderr and "context size" in p.stderr, p.stderr


def test_npu_session_dying_mid_generation_is_an_error():
    """Kill the hexnpu-htpd that our hexnpu run started: a clear error, exit 1, no hang."""
    import time
    p = subprocess.Popen([BIN, "run", "-m", MODEL, "-p", PROMPT, "-n", "400", "--device", "HTP0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        children = []
        deadline = time.time() + 60
        while not children and time.time() < deadline and p.poll() is None:
            time.sleep(0.5)
            with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
                children = [int(x) for x in f.read().split()]
        assert children, "no hexnpu-htpd child appeared"
        time.sleep(1.0)  # let generation start
        for c in children:
            with open(f"/proc/{c}/cmdline") as f:
                if "hexnpu-htpd" in f.read():
                    os.kill(c, 9)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 1, err
    assert "error: " in err and "session" in err, err
