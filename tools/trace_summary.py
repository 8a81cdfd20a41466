#!/usr/bin/env python3
"""trace_summary.py TRACE.json - per-task summary of a megakernel timeline (Chrome trace
from mkg_demo --trace): when each task started and finished, its items and their mean
duration, then per task kind the summed span, and the idle share of all SMs. Traces with
ready stamps (args ready_us) also get the hop table: per task kind, how long after its input
task's last item the first item saw its input complete, and how long after the last item saw
it the task finished."""
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

# ---- hops (traces with ready stamps) ---------------------------------------------------------
ready = collections.defaultdict(list)
reached = collections.defaultdict(list)
dep_of = {}
for e in events:
    a = e["args"]
    if a.get("ready_us", -1.0) >= 0.0:
        ready[a["task"]].append(a["ready_us"])
    if a.get("reached_us", -1.0) >= 0.0 and a.get("ready_us", -1.0) >= 0.0:
        reached[a["task"]].append(a["ready_us"] - a["reached_us"])
    if "dep" in a:
        dep_of[a["task"]] = a["dep"]
if ready:
    print("hops, mean over tasks after the first layer (us): input task's last item end -> first item "
          "ready (signal), first -> last item ready (spread), last ready -> task end (work); producer "
          "reached a unit this long before its input was ready (lead: mean over units, GEMMs)")
    hop = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0])
    for t in sorted(tasks):
        if t < 7 or t not in ready or dep_of.get(t, -1) < 0 or dep_of[t] not in tasks:
            continue
        kind = tasks[t][4].split(" ", 1)[-1]
        r0, r1, dep_end = min(ready[t]), max(ready[t]), tasks[dep_of[t]][1]
        h = hop[kind]
        h[0] += r0 - dep_end
        h[1] += r1 - r0
        h[2] += tasks[t][1] - r1
        h[3] += sum(reached[t]) / len(reached[t]) if reached.get(t) else 0.0
        h[4] += 1
    for k, (sig, spread, work, lead, n) in sorted(hop.items(), key=lambda kv: -(kv[1][0] + kv[1][1] + kv[1][2])):
        print(f"  {k:14s} signal {sig / n:7.2f} spread {spread / n:7.2f} work {work / n:7.2f} lead {lead / n:7.2f}"
              f"  ({n} tasks)")
    # An item's time on its SM split at its ready stamp: waiting for input (start -> ready) and the
    # work after it (ready -> end), mean over the items after the first layer, by task kind.
    split = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for e in events:
        a = e["args"]
        if a["task"] < 7 or a.get("ready_us", -1.0) < 0.0:
            continue
        r = min(max(a["ready_us"], e["ts"]), e["ts"] + e["dur"])
        v = split[e["name"].split(" ", 1)[-1]]
        v[0] += r - e["ts"]
        v[1] += e["ts"] + e["dur"] - r
        v[2] += 1
    print("items after the first layer, mean (us): on the SM before the input was ready -> after it")
    for k, (wait, work, n) in sorted(split.items(), key=lambda kv: -kv[1][1] * kv[1][2]):
        print(f"  {k:14s} wait {wait / n:7.2f} work {work / n:7.2f}  ({n} items; work x items {work:9.1f})")

# ---- GEMM unit phases (megakernel built with MKG_MK_PHASES) -----------------------------------
# From the later of the unit's start on its CTA and its input being ready: first stage landed,
# last stage landed, last wgmma retired, end (epilogue and count). Mean over units after the
# first layer, and over each task's last-ending unit (the one the next task waits for).
# With a fourth stamp (the direct stores issued) the end splits into the stores and the count.
gph = collections.defaultdict(lambda: [[0.0] * 5, 0, [0.0] * 5, 0])
for e in events:
    a = e["args"]
    if "phase_us" not in a or a["task"] < 7 or "attention" in e["name"]:
        continue
    kind = e["name"].split(" ", 1)[-1]
    t0 = max(e["ts"], a.get("ready_us", -1.0))
    p = a["phase_us"]
    end = e["ts"] + e["dur"]
    if len(p) > 3:
        d = [max(0.0, p[0] - t0), p[1] - max(p[0], t0), p[2] - max(p[1], t0), p[3] - max(p[2], t0),
             end - max(p[3], t0)]
    else:
        d = [max(0.0, p[0] - t0), p[1] - max(p[0], t0), p[2] - max(p[1], t0), end - max(p[2], t0), 0.0]
    g = gph[kind]
    g[0] = [x + y for x, y in zip(g[0], d)]
    g[1] += 1
    if abs(e["ts"] + e["dur"] - tasks[a["task"]][1]) < 1e-6:
        g[2] = [x + y for x, y in zip(g[2], d)]
        g[3] += 1
if gph:
    print("GEMM unit phases after the first layer (us, from max(start, ready)): -> first stage landed, -> last "
          "stage landed, -> last wgmma retired, -> direct stores issued (or end), -> end (count; 0 without "
          "the stores' stamp); all units | each task's last unit")
    for k, (s_all, n, s_last, nl) in sorted(gph.items()):
        f = lambda v, c: " ".join(f"{x / max(1, c):6.2f}" for x in v)
        print(f"  {k:14s} {f(s_all, n)}  ({n} units) | {f(s_last, nl)}  ({nl})")

# ---- decode attention phases (traces with phase_us) ------------------------------------------
attn = [e for e in events if "phase_us" in e["args"] and e["args"]["task"] >= 7 and "attention" in e["name"]]
# The phases build (MKG_MK_PHASES) stamps decode attention items before their wait instead: pos loaded,
# prefetch issued, RoPE cos / sin done, then ready (the counter read returned) and the item barrier.
split = collections.defaultdict(list)
for e in attn:
    split[len(e["args"]["phase_us"]) == 4 and e["args"]["phase_us"][2] <= e["args"]["ready_us"]].append(e)
pre, attn = split[True], split[False]
ph = [dict(e["args"], end_us=e["ts"] + e["dur"]) for e in attn]
if pre:
    runs = collections.defaultdict(list)
    for e in pre:
        runs[(e["args"]["task"], e["tid"])].append(e)
    for label, sel in (("first of the task on its CTA", 0), ("after their CTA's first", 1)):
        es = [e for v in runs.values() for i, e in enumerate(sorted(v, key=lambda x: x["ts"])) if min(i, 1) == sel]
        if not es:
            continue
        marks = [[e["ts"], *e["args"]["phase_us"][:3], e["args"]["ready_us"], e["args"]["phase_us"][3],
                  e["ts"] + e["dur"]] for e in es]
        d = [sum(m[i + 1] - m[i] for m in marks) / len(marks) for i in range(6)]
        print(f"decode attention items, {label} ({len(es)}), pre-wait stamps (us): started -> pos loaded "
              f"{d[0]:.2f}, -> prefetch issued {d[1]:.2f}, -> RoPE cos / sin {d[2]:.2f}, -> counter read "
              f"returned {d[3]:.2f}, -> item barrier {d[4]:.2f}, -> end {d[5]:.2f}")
if ph:
    n = len(ph)
    tail = sum(a["end_us"] - a["phase_us"][2] for a in ph) / n
    rope = sum(a["phase_us"][0] - a["ready_us"] for a in ph) / n
    loop = sum(a["phase_us"][1] - a["phase_us"][0] for a in ph) / n
    merge = sum(a["phase_us"][2] - a["phase_us"][1] for a in ph) / n
    print(f"decode attention items after the first layer ({n}): ready -> RoPE and cache append {rope:.2f} us, "
          f"-> block loop and partials {loop:.2f}, -> merge and store {merge:.2f}, -> signalled {tail:.2f}")

# Decode attention items that are not their CTA's first of the task: their input was complete before
# they started, so started -> ready is the item's own work before its wait returned (prefetch, RoPE
# cos / sin, the wait's counter read).
later = collections.defaultdict(list)
for e in attn:
    later[(e["args"]["task"], e["tid"])].append(e)
starts = [e["args"]["ready_us"] - e["ts"] for v in later.values() for e in sorted(v, key=lambda x: x["ts"])[1:]]
if starts:
    starts.sort()
    print(f"decode attention items after their CTA's first of the task ({len(starts)}): started -> ready "
          f"mean {sum(starts) / len(starts):.2f} us, median {starts[len(starts) // 2]:.2f}")
