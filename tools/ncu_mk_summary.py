#!/usr/bin/env python3
"""ncu_mk_summary.py CSV [TOP] - where the megakernel's warps stall, by source file and line.

Reads `ncu -i REP --page source --csv --print-source cuda` (a report with SourceCounters, built
with -lineinfo) and prints every sampling column's total, the sampled stalls summed per source
file (which task's code: mkg_mk_ops.cuh attention, mkg_mk_norm.cuh, the GEMM mainloop and
epilogue, mkg_deps_sm90.cuh waits), and the TOP lines by samples with their largest reasons.
The column set differs between ncu versions, so every numeric column is kept as found.
"""
import csv
import sys
from collections import defaultdict


def num(s):
    try:
        return float(str(s).replace(",", ""))
    except ValueError:
        return None


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    with open(path, newline="") as f:
        lines = [l for l in f if l.strip()]
    start = next((i for i, l in enumerate(lines) if "Source" in l and ("Line" in l or "Address" in l)), None)
    if start is None:
        print("no header row; first lines:")
        print("".join(lines[:8]))
        return
    # Several files may follow each other, each with its own header row ("File", then rows).
    rows, cur_file = [], "?"
    header = None
    for l in lines[start:]:
        rec = next(csv.reader([l]))
        if "Source" in rec and ("Line" in rec or "#" in rec or "Address" in rec):
            header = rec
            continue
        if header is None or len(rec) != len(header):
            if len(rec) == 1 or (rec and rec[0].startswith("File")):
                cur_file = rec[-1]
            continue
        d = dict(zip(header, rec))
        d["_file"] = d.get("File", cur_file)
        rows.append(d)
    if not rows:
        print("no rows; header:", header)
        return
    cols = [c for c in header if c not in ("Source", "File", "Line", "#", "Address")]
    numeric = [c for c in cols if any(num(r[c]) not in (None, 0.0) for r in rows[:2000])]
    print("columns:", ", ".join(header))
    samp = next((c for c in numeric if c.startswith("Warp Stall Sampling (All")), None)
    reasons = [c for c in numeric if c.startswith("stall_") or "Stall" in c and c != samp
               and not c.startswith("Warp Stall Sampling")]
    tot = defaultdict(float)
    for r in rows:
        for c in numeric:
            tot[c] += num(r[c]) or 0.0
    print("\ntotals:")
    for c in numeric:
        print(f"  {c:60s} {tot[c]:14.0f}")
    if samp is None:
        return
    allsamp = tot[samp] or 1.0
    byfile = defaultdict(lambda: defaultdict(float))
    for r in rows:
        f = r["_file"].split("/")[-1]
        for c in [samp] + reasons:
            byfile[f][c] += num(r[c]) or 0.0
    print("\nsampled stalls by source file (share of all samples; its top reasons):")
    for f, v in sorted(byfile.items(), key=lambda kv: -kv[1][samp]):
        if v[samp] / allsamp < 0.002:
            continue
        rs = sorted(((v[c], c) for c in reasons), reverse=True)[:4]
        print(f"  {f:34s} {100 * v[samp] / allsamp:6.2f}%  " +
              "  ".join(f"{c.replace('stall_', '')} {100 * x / allsamp:.2f}%" for x, c in rs if x > 0))
    print(f"\ntop {top} lines by samples:")
    rows.sort(key=lambda r: -(num(r[samp]) or 0.0))
    for r in rows[:top]:
        s = num(r[samp]) or 0.0
        rs = sorted(((num(r[c]) or 0.0, c) for c in reasons), reverse=True)[:3]
        src = r.get("Source", "").strip()[:70]
        print(f"  {100 * s / allsamp:6.2f}% {r['_file'].split('/')[-1]}:{r.get('Line', r.get('#', '?'))} "
              + " ".join(f"[{c.replace('stall_', '')} {100 * x / allsamp:.2f}%]" for x, c in rs if x > 0)
              + f"  {src}")


if __name__ == "__main__":
    main()
