#!/usr/bin/env bash
# hexnpu bench of the real model on 1, 2 and 4 sessions, layer and row split, in one run (issue:
# several sessions), strict bookkeeping off as every benchmark: the figures in docs/performance.md.
# The last two rows hold the total HVX thread count at 2: one session of 2 threads against a row
# split over 2 sessions of 1 thread each. Then the fence wait per token of a traced row split.
# Then llama.cpp's own splits through the plugin (llama-bench of the pinned llama.cpp): the
# synthesized 1B llama in Q4_0 on 1, 2 and 4 sessions, layer split, a row-split group
# (GGML_HEXAGON_DEVICES='HTP0[0-1]') and tensor split (the all-reduce on the NPU, and left to
# llama.cpp), each session's HVX threads 2 / sessions (at least 1), and the all-reduce's share of
# the NPU's op time (GGML_HEXAGON_PROFILE=1). Gemma 3 270M has one KV head, which llama.cpp cannot
# tensor-split.
#   bash scripts/bench-sessions.sh [MODEL] [-p N] [-n N]
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-build/models/gemma-3-270m-q4_k_m.gguf}
shift || true
args=(-p 128 -n 32 -r 2 "$@")
bench() {  # NAME ENV... -- FLAGS...
    local name=$1; shift
    local envs=()
    while [[ $1 != -- ]]; do envs+=("$1"); shift; done
    shift
    env HEXNPU_STRICT=0 "${envs[@]}" build/bin/hexnpu bench -m "$model" "${args[@]}" "$@" 2>/dev/null |
        awk -v n="$name" -F'|' '/^\|.* (pp|tg)[0-9]+ /{gsub(/ +/, " "); printf "%-34s %-8s %s\n", n, $7, $8}'
}
bench "1 session"                   GGML_HEXAGON_DEVICES=1 -- --device HTP0:0
bench "2 sessions, layer"           GGML_HEXAGON_DEVICES=2 -- --device HTP0:0,HTP0:1 -sm layer
bench "4 sessions, layer"           GGML_HEXAGON_DEVICES=4 -- --device HTP0:0,HTP0:1,HTP0:2,HTP0:3 -sm layer
bench "2 sessions, row"             GGML_HEXAGON_DEVICES=2 -- --device HTP0:0,HTP0:1 -sm row
bench "4 sessions, row"             GGML_HEXAGON_DEVICES=4 -- --device HTP0:0,HTP0:1,HTP0:2,HTP0:3 -sm row
bench "1 session x 2 HVX threads"   GGML_HEXAGON_DEVICES=1 GGML_HEXAGON_NHVX=2 -- --device HTP0:0
bench "2 sessions x 1 HVX thread, row" GGML_HEXAGON_DEVICES=2 GGML_HEXAGON_NHVX=1 -- --device HTP0:0,HTP0:1 -sm row
trace=$(mktemp --suffix .json)
HEXNPU_STRICT=0 GGML_HEXAGON_DEVICES=2 build/bin/hexnpu bench -m "$model" -p 0 -n 16 -r 1 --device HTP0:0,HTP0:1 \
    -sm row --trace "$trace" >/dev/null 2>&1
echo "fence waits of a traced 2-session row split (17 tokens: 16 and the warm-up):"
python3 scripts/trace-summary.py "$trace" --per 17 | grep -E 'device|FENCE|op MUL_MAT '
rm -f "$trace"

llama_bench="${HEXNPU_LLAMA_CACHE:-$HOME/.cache/hexnpu/llama-tests}/api3/ggml/bin/llama-bench"
if [ ! -x "$llama_bench" ]; then
    echo "llama.cpp's splits: no llama-bench (bash scripts/build-test-backend-ops.sh builds it)"
    exit 0
fi
source scripts/bench-models.sh
llama_1b=$(bench_llama_1b build/bin/hexnpu)
for ((i = 0; i + 1 < ${#args[@]}; i++)); do  # the last -p and -n given
    case "${args[i]}" in -p) pp_n=${args[i + 1]} ;; -n) tg_n=${args[i + 1]} ;; esac
done
plugin=$PWD/build/lib/libggml-hexagon.so
llama() {  # NAME ENV... -- FLAGS...
    local name=$1; shift
    local envs=()
    while [[ $1 != -- ]]; do envs+=("$1"); shift; done
    shift
    read -r pp tg < <(env HEXNPU_STRICT=0 GGML_BACKEND_PATH="$plugin" "${envs[@]}" "$llama_bench" -m "$llama_1b" \
        -p "$pp_n" -n "$tg_n" -r 2 -t 2 -fa 1 -o json "$@" 2>/dev/null | bench_rates)
    printf "%-40s pp %-8s tg %s\n" "$name" "$pp" "$tg"
}
echo
echo "llama.cpp (llama-bench) through the plugin, $(basename "$llama_1b"), pp$pp_n / tg$tg_n:"
llama "1 session"                        GGML_HEXAGON_DEVICES=1 GGML_HEXAGON_NHVX=2 --
llama "2 sessions, layer"                GGML_HEXAGON_DEVICES=2 GGML_HEXAGON_NHVX=1 -- -sm layer
llama "4 sessions, layer"                GGML_HEXAGON_DEVICES=4 GGML_HEXAGON_NHVX=1 -- -sm layer
llama "2 sessions, row (HTP0[0-1])"      "GGML_HEXAGON_DEVICES=HTP0[0-1]" GGML_HEXAGON_NHVX=1 --
llama "4 sessions, row (HTP0[0-3])"      "GGML_HEXAGON_DEVICES=HTP0[0-3]" GGML_HEXAGON_NHVX=1 --
llama "2 sessions, tensor"               GGML_HEXAGON_DEVICES=2 GGML_HEXAGON_NHVX=1 -- -sm tensor
llama "4 sessions, tensor"               GGML_HEXAGON_DEVICES=4 GGML_HEXAGON_NHVX=1 -- -sm tensor
llama "2 sessions, tensor, AR_SELECT=0"  GGML_HEXAGON_DEVICES=2 GGML_HEXAGON_NHVX=1 GGML_HEXAGON_AR_SELECT=0 -- -sm tensor
echo "the all-reduce's share of the NPU op time, 2 sessions, tensor split, tg:"
HEXNPU_STRICT=0 GGML_BACKEND_PATH="$plugin" GGML_HEXAGON_DEVICES=2 GGML_HEXAGON_NHVX=1 GGML_HEXAGON_PROFILE=1 \
    "$llama_bench" -m "$llama_1b" -p 0 -n 16 -r 1 -t 2 -fa 1 -sm tensor 2>&1 >/dev/null |
    awk '/profile-op/ { us = $(NF - 2); all += us; if ($3 == "ALLREDUCE:") ar += us }
         END { printf "  ALLREDUCE %.1f ms of %.1f ms (%.1f %%)\n", ar / 1000, all / 1000, 100 * ar / all }'
