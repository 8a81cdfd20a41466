#!/usr/bin/env python3
"""pick_vs_oracle.py - the cost model's picks against measured bench JSON, without a GPU.

Every row of a bench/results/gemm_*.json file holds the time of every eligible schedule at its
(shape, M, dtype, kc). This asks the planner (mkg_plan_explain --picks, built from this tree) which
schedule it would pick for each row's layer and prints, per file, the geomean of oracle_us / the
pick's measured us (1.0: the model always picks the fastest measured row), the worst rows, and
with --rows every row. A pick the file did not time (a schedule added since) is counted apart.

  tools/pick_vs_oracle.py --explain build/bench/mkg_plan_explain bench/results/gemm_bf16.json ...
"""
import argparse
import json
import math
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--explain", default="build/bench/mkg_plan_explain", help="the mkg_plan_explain binary")
    ap.add_argument("--sms", type=int, default=0, help="SM count (default: each file's)")
    ap.add_argument("--rows", action="store_true", help="print every row")
    ap.add_argument("--worst", type=int, default=3, help="worst rows to print per file")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    for path in a.files:
        with open(path) as f:
            d = json.load(f)
        block = 1 if d.get("block_scales") else 0
        rows = d["rows"]
        # the JSON names fp32 operands (tf32 math) "fp32"; mkg_plan_explain takes "tf32"
        lines = "".join(f"{r['N']} {r['K']} {r['M']} {'tf32' if r['dtype'] == 'fp32' else r['dtype']} {r['kc']} "
                        f"{block}\n" for r in rows)
        sms = a.sms or d.get("sms", 132)
        out = subprocess.run([a.explain, "--picks", "--sms", str(sms)], input=lines, capture_output=True,
                             text=True, check=True).stdout.split()
        if len(out) != len(rows):
            sys.exit(f"{path}: {len(rows)} rows but {len(out)} picks")
        got, unmeasured = [], 0
        for r, pick in zip(rows, out):
            us = r["schedules"].get(pick)
            if not us:
                unmeasured += 1
                continue
            got.append((r["oracle_us"] / us, r, pick, us))
        if not got:
            print(f"{path}: no row's pick was measured")
            continue
        g = math.exp(sum(math.log(x[0]) for x in got) / len(got))
        print(f"{path}: {len(got)} rows, pick vs oracle {g:.4f}" +
              (f" ({unmeasured} rows' picks not timed in this file)" if unmeasured else ""))
        shown = sorted(got, key=lambda x: x[0]) if not a.rows else got
        for ratio, r, pick, us in shown[: len(got) if a.rows else a.worst]:
            print(f"  {r['shape']:24s} M={r['M']:<5d} {r['dtype']:5s} kc={r['kc']:<5d} pick {pick:32s} {us:9.2f} us"
                  f"  oracle {r['oracle_schedule']:32s} {r['oracle_us']:9.2f} us  {ratio:.3f}")


if __name__ == "__main__":
    main()
