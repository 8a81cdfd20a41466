#!/usr/bin/env python3
"""sass_between_marks.py - the SASS a probe mark pair encloses.

    cuobjdump --dump-sass build-gpu/bench/mkg_launch_probe > probe.sass
    python3 tools/sass_between_marks.py probe.sass mkg_probe_dispatch_kernel [--max 400]

For every function whose name holds the given substring (the launch probe's instrumented kernels),
prints the globaltimer reads (each MKG_PROBE mark is one) with their line numbers, then the
instructions between consecutive reads, at most --max lines per gap, so one can see what the
compiler put between two marks (loads hoisted from later code, branches into far code).
"""
import argparse
import re
import sys


def functions(lines, name):
    """(header, body lines) of each function whose header holds name."""
    cur, body = None, []
    for ln in lines:
        if "Function : " in ln:
            if cur is not None:
                yield cur, body
            cur = ln.strip() if name in ln else None
            body = []
        elif cur is not None:
            body.append(ln.rstrip("\n"))
    if cur is not None:
        yield cur, body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sass")
    ap.add_argument("name")
    ap.add_argument("--max", type=int, default=400)
    ap.add_argument("--functions", type=int, default=1, help="how many matching functions to print")
    a = ap.parse_args()
    with open(a.sass) as f:
        lines = f.readlines()
    done = 0
    for header, body in functions(lines, a.name):
        instr = [ln for ln in body if re.search(r"/\*[0-9a-f]{4,}\*/", ln)]
        marks = [i for i, ln in enumerate(instr) if "GLOBALTIMER" in ln]
        print(header)
        print("  %d instructions, globaltimer reads at instructions %s" % (len(instr), marks))
        for g in range(len(marks) - 1):
            lo, hi = marks[g], marks[g + 1]
            print("  ---- between read %d and read %d (%d instructions) ----" % (g, g + 1, hi - lo - 1))
            for ln in instr[lo:hi + 1][: a.max]:
                print("  " + ln.strip())
        done += 1
        if done >= a.functions:
            break
    if done == 0:
        print("no function holds %r" % a.name, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
