#!/usr/bin/env python3
"""trace_summary.py TRACE.json - per-task summary of a megakernel timeline (Chrome trace
from mkg_demo --trace): when each task started and finished, its items and their mean
duration, then per task kind the summed span, and the idle share of all SMs."""
import collections
import json
import sys

events = json.load(open(sys.argv[1]))["traceEvents"]
tasks = collections.OrderedDict()
busy = collections.defaultdict(float)
for e in events:
    t = e["args"]["task"]
    s, f = e["ts"], e["ts"] + e["dur"]
    cur = tasks.setdefault(t, [s, f, 0.0, 0, e["name"]])
    cur[0], cur[1] = min(cur[0], s), max(cur[1], f)
    cur[2] += e["dur"]
    cur[3] += 1
    busy[e["tid"]] += e["dur"]
end = max(v[1] for v in tasks.values())
print(f"step {end:.1f} us, {len(busy)} SMs with items, mean SM busy {sum(busy.values()) / max(1, len(busy)):.1f} us")
kinds = collections.defaultdict(lambda: [0.0, 0])
prev_end = 0.0
for t in sorted(tasks):
    s, f, b, n, name = tasks[t]
    kind = name.split(" ", 1)[-1]
    kinds[kind][0] += f - prev_end if f > prev_end else 0.0   # time this task added to the running end
    kinds[kind][1] += 1
    prev_end = max(prev_end, f)
    if t < 14 or t >= len(tasks) - 4:
        print(f"{t:4d} {name:18s} start {s:9.1f} end {f:9.1f} span {f - s:8.1f} items {n:5d} mean {b / n:8.1f}")
print("time added to the step's running end, by task kind:")
for k, (v, n) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
    print(f"  {k:14s} {v:9.1f} us over {n} tasks ({v / n:.1f} per task)")
