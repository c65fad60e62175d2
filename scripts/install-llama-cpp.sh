#!/usr/bin/env bash
# Installs the pinned llama.cpp the GGML plugin is tested against: llama-cpp-python 0.3.36, which
# compiles llama.cpp's libraries (libggml*.so, libllama.so) into its package (~9 min on 2 cores,
# once; an installed copy that suits this CPU is kept). Not -march=native: some machines have AMX,
# which Linux grants only on request and this llama.cpp does not request (a native build dies
# with SIGILL); AVX-512 only where the CPU has it (AMD Zen 3 has not).
set -euo pipefail
version=0.3.36
avx512=OFF
grep -qw avx512f /proc/cpuinfo && avx512=ON

# Installed, the pinned version, and built with AVX-512 only if this CPU has it.
if python3 - "$version" "$avx512" <<'PY' 2>/dev/null; then
import importlib.metadata as m, sys
if m.version("llama_cpp_python") != sys.argv[1]:
    sys.exit(1)
import llama_cpp
built_avx512 = "AVX512 = 1" in llama_cpp.llama_print_system_info().decode()
sys.exit(0 if sys.argv[2] == "ON" or not built_avx512 else 1)
PY
    exit 0
fi
echo "install-llama-cpp: building llama-cpp-python $version (llama.cpp, CPU backend, AVX-512 $avx512; ~9 min on 2 cores)"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=$avx512 \
-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF"
# No cached wheel: it may have been built for another CPU.
pip_args=(--quiet --no-cache-dir --force-reinstall --no-deps "llama-cpp-python==$version")
python3 -m pip install "${pip_args[@]}" 2>/dev/null || python3 -m pip install --break-system-packages "${pip_args[@]}"
# Its pure-Python dependencies (numpy, jinja2, diskcache, typing-extensions).
python3 -m pip install --quiet "llama-cpp-python==$version" 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages "llama-cpp-python==$version"
