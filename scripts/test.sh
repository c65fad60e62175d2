#!/usr/bin/env bash
# Sets up and builds (scripts/setup.sh), fuzzes the GGUF reader for a bounded time
# (HEXNPU_FUZZ_SECONDS, default 30; 0 skips), then runs the whole default test suite through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
fuzz_seconds="${HEXNPU_FUZZ_SECONDS:-30}"
if [ "$fuzz_seconds" -gt 0 ]; then
    echo "test: fuzzing the GGUF reader for ${fuzz_seconds}s (scripts/fuzz-gguf.sh)"
    bash scripts/fuzz-gguf.sh "$fuzz_seconds" > build/fuzz-gguf.log 2>&1 || {
        tail -n 60 build/fuzz-gguf.log
        echo "test: the GGUF fuzzer found a problem (log: build/fuzz-gguf.log)"
        exit 1
    }
    grep -E "^(Done|stat::number_of_executed_units)" build/fuzz-gguf.log || true
fi
ctest --test-dir build --output-on-failure -j2 "$@"
