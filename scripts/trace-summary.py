#!/usr/bin/env python3
"""Sums a trace's events per device and event kind (`hexnpu bench|bench-ops|test-ops --trace`).

  python3 scripts/trace-summary.py TRACE.json [--per N] [--event FENCE]

For every device (a process of the trace) and event kind (FENCE, L2FLUSH, DMA, HVX_COMP, ... and
the ops), the number of events and their total time in ms; --per N also divides the times by N
(e.g. the tokens a `bench -n N` run generated, for a per-token figure). Events of one kind on
several threads of a device are added, not merged.
"""
import argparse
import collections
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--per", type=float, default=0, help="also show times divided by this count")
    ap.add_argument("--event", help="only this event kind")
    args = ap.parse_args()
    with open(args.trace) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
              if e.get("ph") == "M" and e.get("name") == "thread_name"}
    total = collections.defaultdict(lambda: [0, 0.0])
    for e in events:
        if e.get("ph") != "X":
            continue
        # Ops by their kind: "MUL_MAT 'ffn_up-3'" counts as MUL_MAT.
        kind = "op " + e["name"].split(" '")[0] if tracks.get((e["pid"], e["tid"])) == "ops" else e["name"]
        if args.event and kind != args.event:
            continue
        t = total[(names.get(e["pid"], str(e["pid"])), kind)]
        t[0] += 1
        t[1] += e["dur"] / 1000.0
    if not total:
        sys.exit("no events" + (f" of kind {args.event}" if args.event else ""))
    head = f"{'device':<10} {'event':<28} {'count':>8} {'total ms':>10}" + (f" {'ms per':>9}" if args.per else "")
    print(head)
    for (dev, kind), (count, ms) in sorted(total.items()):
        line = f"{dev:<10} {kind:<28} {count:>8} {ms:>10.2f}"
        if args.per:
            line += f" {ms / args.per:>9.3f}"
        print(line)


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:  # | head
        sys.exit(0)
