#!/usr/bin/env bash
# Sets up and builds (scripts/setup.sh), then shows the main job: a small llama GGUF is written,
# inspected, quantized to Q4_K and inspected again; its weights are repacked into the NPU's tiled
# format and checked; the virtual NPU's device is listed and element-wise ops run on it (a real
# session process) against the CPU reference.
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
