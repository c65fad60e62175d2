#!/usr/bin/env bash
# hexnpu bench of the real model on 1, 2 and 4 sessions, layer and row split, in one run (issue:
# several sessions), strict bookkeeping off as every benchmark: the figures in docs/performance.md.
# The last two rows hold the total HVX thread count at 2: one session of 2 threads against a row
# split over 2 sessions of 1 thread each. Then the fence wait per token of a traced row split.
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
