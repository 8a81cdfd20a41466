#!/usr/bin/env python3
"""ncu_source_summary.py CSV [TOP [LOOP]] - condenses `ncu -i REP --page source --csv --print-source sass`.

Prints the warp-stall samples per SASS opcode and the TOP instructions by samples, so a
profile of one kernel fits in a log (where do the warps wait: full/empty barriers,
epilogue barriers, wgmma waits, TMA store waits). With LOOP (a fraction, e.g. 0.5), also every
instruction executed at least LOOP times as often as the most executed one, in address order: the
kernel's hot loop (what another library's mainloop issues per K tile).
"""
import csv
import re
import sys
from collections import defaultdict


def num(s):
    try:
        return float(str(s).replace(",", ""))
    except ValueError:
        return 0.0


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 45
    loop = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    with open(path, newline="") as f:
        lines = [l for l in f if l.strip()]
    # The CSV may carry a preamble (==PROF== lines, kernel headers); start at the header row.
    start = next(i for i, l in enumerate(lines) if "Source" in l and "Address" in l)
    rows = list(csv.DictReader(lines[start:]))
    cols = list(rows[0].keys()) if rows else []
    samp = next((c for c in cols if c.startswith("Warp Stall Sampling (All")), None)
    nis = next((c for c in cols if c.startswith("Warp Stall Sampling (Not")), None)
    execd = next((c for c in cols if c.startswith("Instructions Executed")), None)
    print("columns:", ", ".join(cols[:14]))
    if samp is None:
        print("no stall-sampling column")
        return
    total = sum(num(r[samp]) for r in rows) or 1.0
    by_op = defaultdict(lambda: [0.0, 0.0, 0])
    for r in rows:
        src = r.get("Source", "").strip()
        op = re.sub(r"^@!?U?P\w+\s+", "", src).split(" ")[0] if src else "?"
        by_op[op][0] += num(r[samp])
        by_op[op][1] += num(r[nis]) if nis else 0.0
        by_op[op][2] += 1
    print(f"\nstall samples by opcode (total {total:.0f})")
    for op, (s, n, c) in sorted(by_op.items(), key=lambda kv: -kv[1][0])[:25]:
        print(f"  {op:28s} {100 * s / total:6.2f}%  not-issued {100 * n / total:6.2f}%  ({c} instr)")
    print(f"\ntop {top} instructions by stall samples")
    for r in sorted(rows, key=lambda r: -num(r[samp]))[:top]:
        ex = r.get(execd, "") if execd else ""
        print(f"  {r.get('Address', ''):>8s} {100 * num(r[samp]) / total:6.2f}%  exec {ex:>10s}  {r.get('Source', '').strip()[:110]}")
    if loop > 0 and execd:
        most = max(num(r[execd]) for r in rows) or 1.0
        hot = [r for r in rows if num(r[execd]) >= loop * most]
        print(f"\nhot loop: {len(hot)} instructions executed >= {loop:g} x the most executed ({most:.0f}), address order")
        for r in hot:
            print(f"  {r.get('Address', ''):>8s} exec {r.get(execd, ''):>10s} {100 * num(r[samp]) / total:6.2f}%  "
                  f"{r.get('Source', '').strip()[:110]}")


if __name__ == "__main__":
    main()
