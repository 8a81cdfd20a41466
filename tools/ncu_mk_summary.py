#!/usr/bin/env python3
"""ncu_mk_summary.py - where the megakernel's warps stall (one Nsight Compute report).

  ncu -i REP --page raw --csv | ncu_mk_summary.py --raw
      the kernel's sampled stall reasons (smsp__pcsamp_warps_issue_stalled_*), largest first,
      as shares of all samples: e.g. how much of the time warps wait for instructions
      (no_instructions: instruction-cache misses) against data (long_scoreboard), barriers,
      the dependency spins (sleeping) and the mbarrier waits.
  ncu -i REP --page source --csv --print-source sass > S.csv; ncu_mk_summary.py S.csv [TOP]
      the sampled stalls summed over 2 KB windows of the kernel's code (which code the warps sit
      in), with every per-reason column the CSV has, and the TOP instructions by samples with
      the three instructions before each (a stall at the first instruction after a jump is the
      mark of a cold instruction fetch).
Columns differ between ncu versions: every numeric column is taken as found.
"""
import csv
import sys
from collections import defaultdict


def num(s):
    try:
        return float(str(s).replace(",", ""))
    except ValueError:
        return None


def raw():
    rows = list(csv.reader(sys.stdin))
    start = next((i for i, r in enumerate(rows) if any("pcsamp" in c for c in r)), None)
    if start is None:
        print("no pcsamp metrics in the raw page")
        return
    head, vals = rows[start], rows[start + 2] if len(rows) > start + 2 else []
    st = {h: num(v) for h, v in zip(head, vals) if h.startswith("smsp__pcsamp_warps_issue_stalled_")}
    st = {h: v for h, v in st.items() if v is not None and not h.endswith("_not_issued")}
    tot = sum(st.values()) or 1.0
    print(f"  samples {tot:.0f}")
    for h, v in sorted(st.items(), key=lambda kv: -kv[1]):
        if v > 0:
            print(f"  {h.replace('smsp__pcsamp_warps_issue_stalled_', ''):28s} {100 * v / tot:6.2f}%")


def source(path, top):
    with open(path, newline="") as f:
        lines = [l for l in f if l.strip()]
    start = next((i for i, l in enumerate(lines) if "Source" in l and "Address" in l), None)
    if start is None:
        print("no header row; first lines:")
        print("".join(lines[:8]))
        return
    rows = list(csv.DictReader(lines[start:]))
    cols = list(rows[0].keys())
    print("columns:", ", ".join(cols))
    samp = next((c for c in cols if c.startswith("Warp Stall Sampling (All")), None)
    if samp is None:
        print("no stall-sampling column")
        return
    reasons = [c for c in cols if "stall" in c.lower() and not c.startswith("Warp Stall Sampling")
               and any(num(r[c]) for r in rows[:5000])]
    for r in rows:
        r["_a"] = int(r["Address"], 16) if r["Address"].startswith("0x") else int(num(r["Address"]) or 0)
        r["_s"] = num(r[samp]) or 0.0
    rows.sort(key=lambda r: r["_a"])
    total = sum(r["_s"] for r in rows) or 1.0
    win = defaultdict(lambda: defaultdict(float))
    for r in rows:
        w = r["_a"] // 2048
        win[w]["all"] += r["_s"]
        for c in reasons:
            win[w][c] += num(r[c]) or 0.0
    print(f"\n{len(rows)} instructions, {total:.0f} samples; 2 KB code windows with >= 0.5% of them:")
    for w in sorted(win):
        v = win[w]
        if v["all"] / total < 0.005:
            continue
        rs = sorted(((v[c], c) for c in reasons), reverse=True)[:4]
        print(f"  0x{w * 2048:07x} {100 * v['all'] / total:6.2f}%  " +
              "  ".join(f"{c} {100 * x / total:.2f}%" for x, c in rs if x > 0))
    print(f"\ntop {top} instructions by samples (with the three before):")
    idx = {id(r): i for i, r in enumerate(rows)}
    for r in sorted(rows, key=lambda r: -r["_s"])[:top]:
        i = idx[id(r)]
        rs = sorted(((num(r[c]) or 0.0, c) for c in reasons), reverse=True)[:3]
        print(f"  {100 * r['_s'] / total:6.2f}% 0x{r['_a']:07x} {r['Source'].strip()[:60]} "
              + " ".join(f"[{c} {100 * x / total:.2f}%]" for x, c in rs if x > 0))
        for p in rows[max(0, i - 3):i]:
            print(f"           0x{p['_a']:07x} {p['Source'].strip()[:60]}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--raw":
        raw()
    else:
        source(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40)


if __name__ == "__main__":
    main()
