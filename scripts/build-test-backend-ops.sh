#!/usr/bin/env bash
# Builds llama.cpp's own test-backend-ops from the pinned llama-cpp-python's sources, linked against
# the ggml that package installed (scripts/install-llama-cpp.sh), so the plugin is judged by the
# same ggml llama-cpp-python users load it into. Once: the result is kept in BUILD_DIR/llama-tests
# with the version it was built for. Usage: build-test-backend-ops.sh [BUILD_DIR] (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.3.36
out_dir="${1:-build}/llama-tests"
exe="$out_dir/test-backend-ops"
stamp="$out_dir/test-backend-ops.version"

lib_dir=$(python3 -c "import llama_cpp, os; print(os.path.join(os.path.dirname(llama_cpp.__file__), 'lib'))" 2>/dev/null) || {
    echo "build-test-backend-ops: llama-cpp-python is not installed (bash scripts/install-llama-cpp.sh)" >&2
    exit 1
}
[ -f "$lib_dir/libggml.so" ] || { echo "build-test-backend-ops: no libggml.so in $lib_dir" >&2; exit 1; }
if [ -x "$exe" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version $lib_dir" ]; then
    exit 0
fi

mkdir -p "$out_dir"
src="$out_dir/src-$version"
if [ ! -f "$src/tests/test-backend-ops.cpp" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    echo "build-test-backend-ops: fetching the llama-cpp-python $version sources"
    python3 -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$tmp" >/dev/null
    tar -xzf "$tmp/llama_cpp_python-$version.tar.gz" -C "$tmp" \
        "llama_cpp_python-$version/vendor/llama.cpp/ggml/include" \
        "llama_cpp_python-$version/vendor/llama.cpp/tests/test-backend-ops.cpp"
    rm -rf "$src"
    mv "$tmp/llama_cpp_python-$version/vendor/llama.cpp" "$src"
fi
echo "build-test-backend-ops: compiling test-backend-ops ($version) against $lib_dir"
# The test needs ggml alone (its CMake links libllama only out of habit).
g++ -std=c++17 -O2 -pthread -I"$src/ggml/include" "$src/tests/test-backend-ops.cpp" -o "$exe.tmp" \
    -L"$lib_dir" -lggml -lggml-base -Wl,-rpath,"$lib_dir"
mv "$exe.tmp" "$exe"
echo "$version $lib_dir" > "$stamp"
