#!/usr/bin/env python3
"""llama.cpp itself (llama-cpp-python 0.3.36) running a GGUF model, on ggml's CPU backend or with
every layer offloaded to the HTP devices (HTP0 unless GGML_HEXAGON_DEVICES says more) through hexnpu's plugin. Prints one JSON object on stdout;
llama.cpp's own log goes to stderr.

  llama_run.py -m MODEL [--htp PLUGIN] generate -p PROMPT [-n 32]
      greedy tokens, text and llama.cpp's timings
  llama_run.py -m MODEL [--htp PLUGIN] [-c 256] score -f TEXT [--chunks N]
      perplexity as llama-perplexity computes it, with the argmax token and the negative
      log-likelihood at every scored position
  llama_run.py -m MODEL [--htp PLUGIN] bench [-p 128] [-n 64]
      llama-bench's pp and tg figures (tokens per second) from llama.cpp's own timings
  llama_run.py -m MODEL --htp PLUGIN kill-session -p PROMPT [--only-last]
      evaluates the prompt, kills the session processes (or the last started), evaluates again (must fail with an error,
      not end this process), then once more on a fresh context state (must work)
"""

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ggml_lib import Ggml  # noqa: E402


# The KV-cache types llama.cpp offers (ggml type ids).
# llama.cpp's llama_split_mode: how the model spreads over several devices (GGML_HEXAGON_DEVICES).
SPLIT_MODES = {"none": 0, "layer": 1, "row": 2, "tensor": 3}

GGML_CACHE_TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8, "iq4_nl": 20, "bf16": 30}


def load(args, logits_all=False):
    if args.htp:
        Ggml().load_plugin(args.htp)  # registers HTP0 in the ggml instance libllama uses
    from llama_cpp import Llama
    cache = {}
    if args.cache_type:  # a quantized V cache needs flash attention in llama.cpp
        t = GGML_CACHE_TYPES[args.cache_type]
        cache = {"type_k": t, "type_v": t, "flash_attn": True}
    split = {"split_mode": SPLIT_MODES[args.split_mode]} if args.split_mode else {}
    if args.split_mode == "tensor":  # llama.cpp's tensor split needs flash attention
        split["flash_attn"] = True
    return Llama(model_path=args.model, n_gpu_layers=-1 if args.htp else 0, n_ctx=args.ctx, n_batch=args.ctx,
                 logits_all=logits_all, seed=0, verbose=True, **cache, **split)


def timings(llm):
    import llama_cpp
    p = llama_cpp.llama_perf_context(llm._ctx.ctx)
    return {"prompt_ms": p.t_p_eval_ms, "prompt_tokens": p.n_p_eval, "eval_ms": p.t_eval_ms, "eval_tokens": p.n_eval}


def generate(args):
    llm = load(args)
    prompt = llm.tokenize(args.prompt.encode(), add_bos=True)
    tokens = []
    start = time.time()
    for tok in llm.generate(prompt, temp=0.0, top_k=1, reset=True):
        tokens.append(int(tok))
        if len(tokens) == args.n:
            break
    wall = time.time() - start
    text = llm.detokenize(tokens).decode("utf-8", errors="replace")
    return {"prompt_tokens": prompt, "tokens": tokens, "text": text, "wall_s": wall, "timings": timings(llm)}


def bench(args):
    """llama-bench's pp/tg, timed as llama-bench does (wall clock): a prompt of p tokens in one
    batch, then n single-token decodes."""
    llm = load(args)
    rng = np.random.default_rng(0)
    prompt = [llm.token_bos()] + rng.integers(1000, 20000, size=args.p - 1).tolist()
    start = time.perf_counter()
    llm.eval(prompt)
    pp_s = time.perf_counter() - start
    start = time.perf_counter()
    for tok in rng.integers(1000, 20000, size=args.n).tolist():
        llm.eval([tok])
    tg_s = time.perf_counter() - start
    return {"pp": args.p, "tg": args.n, "pp_tps": args.p / pp_s, "tg_tps": args.n / tg_s}


def log_softmax_nll(logits, targets):
    m = logits.max(axis=1, keepdims=True)
    lse = (m[:, 0] + np.log(np.exp(logits - m).sum(axis=1)))
    return lse - logits[np.arange(len(targets)), targets]


def score(args):
    """As llama-perplexity (and hexnpu perplexity): chunks of n_ctx tokens, each from an empty
    cache with its first token replaced by BOS, the second half of each scored."""
    llm = load(args, logits_all=True)
    tokens = llm.tokenize(Path(args.file).read_bytes(), add_bos=True)
    n_ctx = args.ctx
    n_chunks = min(len(tokens) // n_ctx, args.chunks) if args.chunks else len(tokens) // n_ctx
    argmax, nll = [], []
    for c in range(n_chunks):
        chunk = tokens[c * n_ctx:(c + 1) * n_ctx]
        chunk[0] = llm.token_bos()
        llm.reset()
        llm.eval(chunk)
        first = n_ctx // 2  # logits at j predict token j + 1, for j in [first, n_ctx - 1)
        logits = np.array(llm.scores[first:n_ctx - 1], dtype=np.float64)
        argmax += logits.argmax(axis=1).tolist()
        nll += log_softmax_nll(logits, np.array(chunk[first + 1:])).tolist()
    return {"chunks": n_chunks, "argmax": argmax, "nll": nll, "ppl": float(np.exp(np.mean(nll)))}


def session_pids():
    """hexnpu-htpd processes started by this process."""
    pids = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for pid in (task / "children").read_text().split():
            if Path(f"/proc/{pid}/comm").read_text().strip().startswith("hexnpu-htpd"):
                pids.append(int(pid))
    return pids


def kill_session(args):
    llm = load(args, logits_all=True)
    prompt = llm.tokenize(args.prompt.encode(), add_bos=True)
    llm.eval(prompt)
    first = int(np.argmax(llm.scores[len(prompt) - 1]))
    killed = session_pids()[-1:] if args.only_last else session_pids()
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    llm.reset()
    error = None
    try:
        llm.eval(prompt)
    except RuntimeError as e:
        error = str(e)
    llm.reset()
    llm.eval(prompt)
    after = int(np.argmax(llm.scores[len(prompt) - 1]))
    return {"killed": killed, "first": first, "error": error, "after": after, "sessions_now": session_pids()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--htp", help="the plugin: offload every layer to HTP0")
    ap.add_argument("-c", "--ctx", type=int, default=256)
    ap.add_argument("-sm", "--split-mode", choices=sorted(SPLIT_MODES), help="over the HTP devices (default layer)")
    ap.add_argument("--cache-type", choices=sorted(GGML_CACHE_TYPES), help="K and V cache type (default f16)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("-p", "--prompt", required=True)
    g.add_argument("-n", type=int, default=32)
    s = sub.add_parser("score")
    s.add_argument("-f", "--file", required=True)
    s.add_argument("--chunks", type=int, default=0, help="at most this many chunks (0: all)")
    b = sub.add_parser("bench")
    b.add_argument("-p", type=int, default=128)
    b.add_argument("-n", type=int, default=64)
    k = sub.add_parser("kill-session")
    k.add_argument("-p", "--prompt", required=True)
    k.add_argument("--only-last", action="store_true", help="kill the last session started, not all")
    args = ap.parse_args()
    result = {"generate": generate, "score": score, "bench": bench, "kill-session": kill_session}[args.cmd](args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
