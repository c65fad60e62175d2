# Sourced by the bench scripts: the models they derive from the shipped one, made once in
# HEXNPU_BENCH_CACHE (default ~/.cache/hexnpu/bench). Each function prints the model's path.
#   bench_llama_1b HEXNPU   a synthesized TinyLlama-1.1B-shaped llama (4 of its 22 layers), Q4_0
#   bench_gemma_q4_0 HEXNPU MODEL   Gemma 3 270M requantized to Q4_0
bench_cache="${HEXNPU_BENCH_CACHE:-$HOME/.cache/hexnpu/bench}"

bench_llama_1b() {
    local out="$bench_cache/llama-1b-q4_0.gguf"
    if [ ! -f "$out" ]; then
        mkdir -p "$bench_cache"
        "$1" synth "$bench_cache/llama-1b-f16.gguf" --preset 1b --type f16 >/dev/null
        "$1" quantize "$bench_cache/llama-1b-f16.gguf" "$out.tmp" q4_0 >/dev/null
        mv "$out.tmp" "$out"
        rm -f "$bench_cache/llama-1b-f16.gguf"
    fi
    echo "$out"
}

bench_gemma_q4_0() {
    local out="$bench_cache/gemma-3-270m-q4_0.gguf"
    if [ ! -f "$out" ]; then
        mkdir -p "$bench_cache"
        "$1" quantize "$2" "$out.tmp" q4_0 --allow-requantize >/dev/null
        mv "$out.tmp" "$out"
    fi
    echo "$out"
}

# pp and tg t/s ("pp tg") from a JSON list of llama-bench-like records on stdin.
bench_rates() {
    python3 -c '
import json, sys
pp = tg = float("nan")
for rec in json.load(sys.stdin):
    if rec["n_prompt"] > 0 and rec["n_gen"] == 0: pp = rec["avg_ts"]
    if rec["n_gen"] > 0 and rec["n_prompt"] == 0: tg = rec["avg_ts"]
print(f"{pp:.1f} {tg:.1f}")'
}
