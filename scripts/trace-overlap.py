#!/usr/bin/env python3
"""How the NPU's threads overlapped during one op of a trace (`hexnpu test-ops|bench-ops --trace`).

  python3 scripts/trace-overlap.py TRACE.json [--op MUL_MAT] [--index -1]

Picks the op's instance (default: the last one) from the "ops" track, then per event kind (HMX_COMP,
HVX_W_DEQUANT, HVX_A_PREP, HVX_O_PROC, DMA ...) prints its busy time inside the op (the union of
its intervals over all threads) as a share of the op, and how much of it ran while the HMX unit was
busy: the figure that shows whether the pipeline keeps the unit fed.
"""
import argparse
import json
import sys


def union(intervals):
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def length(intervals):
    return sum(end - start for start, end in intervals)


def intersect(a, b):
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append([start, end])
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--op", default="MUL_MAT")
    p.add_argument("--index", type=int, default=-1, help="which instance of the op (default: the last)")
    args = p.parse_args()
    data = json.load(open(args.trace))
    events = data["traceEvents"] if isinstance(data, dict) else data
    tracks = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    ops_tid = next((t for t, n in tracks.items() if n == "ops"), None)
    ops = [e for e in events if e.get("ph") == "X" and e.get("tid") == ops_tid and e.get("name") == args.op]
    if not ops:
        sys.exit(f"no {args.op} op in {args.trace}")
    op = ops[args.index]
    t0, t1 = op["ts"], op["ts"] + op["dur"]
    kinds = {}
    for e in events:
        if e.get("ph") != "X" or e.get("tid") == ops_tid or e["ts"] >= t1 or e["ts"] + e["dur"] <= t0:
            continue
        kinds.setdefault(e["name"], []).append([max(e["ts"], t0), min(e["ts"] + e["dur"], t1)])
    busy = {k: union(v) for k, v in kinds.items()}
    hmx = busy.get("HMX_COMP", [])
    print(f"{args.op} (batch {op['args'].get('batch')}): {op['dur'] / 1e3:.2f} ms")
    print(f"{'event':<16}{'busy ms':>10}{'of op':>8}{'with HMX busy':>15}")
    for name in sorted(busy, key=lambda k: -length(busy[k])):
        b = length(busy[name])
        shared = length(intersect(busy[name], hmx)) if name != "HMX_COMP" else b
        print(f"{name:<16}{b / 1e3:>10.2f}{b / op['dur']:>8.0%}{(shared / b if b else 0):>15.0%}")


if __name__ == "__main__":
    main()
