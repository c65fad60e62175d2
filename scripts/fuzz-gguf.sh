#!/usr/bin/env bash
# Builds the GGUF reader fuzzer (clang, libFuzzer, ASan, UBSan) and runs it for a bounded time,
# starting from valid files written by hexnpu's writer and from the malformed-file corpus.
# Exits non-zero when the fuzzer finds a crash, undefined behaviour, a leak, a timeout or an
# allocation over the limit; the input is saved under the build directory's artifacts/.
#
# Usage: scripts/fuzz-gguf.sh [SECONDS]   (default 60; HEXNPU_FUZZ_BUILD_DIR overrides build-fuzz/)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
build="${HEXNPU_FUZZ_BUILD_DIR:-$root/build-fuzz}"
work="$build/fuzz-gguf"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DHEXNPU_FUZZ=ON -DHEXNPU_BUILD_TESTS=OFF -DHEXNPU_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j2 --target fuzz-gguf-reader fuzz-gguf-seeds

mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"
"$build/bin/fuzz-gguf-seeds" "$work/seeds"

# The first directory collects new inputs across runs; the others are read-only seeds.
# -malloc_limit_mb turns any single allocation above it into a failure: the reader must never
# size an allocation from a count or length it has not checked against the input.
"$build/bin/fuzz-gguf-reader" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=256 -max_len=8192 \
    -dict="$root/fuzz/gguf.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
    "$work/corpus" "$work/seeds" "$root/tests/data/gguf-malformed"
