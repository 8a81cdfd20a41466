#!/usr/bin/env python3
"""retarget_table.py - a copy of a schedule table file (mkg_table_save) relabelled for another GPU.

A diagnostic: it lets a table tuned on one GPU (e.g. the H200's autotuned table) be dispatched on
another (an H100) to compare the same schedules in the dispatch kernel and the shipped kernel there.
The picks stay those of the first GPU; only the "gpu" and "sms" lines change, and the FNV-1a 64
checksum is recomputed as mkg_table_save writes it. Do not ship the result as a tuned table.

usage: retarget_table.py IN OUT --gpu "NVIDIA H100 80GB HBM3" [--sms 132]
"""
import argparse
import sys


def fnv1a64(data: bytes) -> int:
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inp")
    ap.add_argument("out")
    ap.add_argument("--gpu", required=True, help="the name the library reads (nvidia-smi's name)")
    ap.add_argument("--sms", type=int, help="SM count (default: keep the file's)")
    a = ap.parse_args()
    text = open(a.inp, "rb").read()
    tag = text.rfind(b"\nchecksum ")
    if tag < 0 or not text.endswith(b"\n") or len(text) - (tag + 1) != 9 + 16 + 1:
        sys.exit(f"{a.inp}: no final checksum line")
    body = text[: tag + 1]
    want = int(text[tag + 10 : tag + 26], 16)
    if fnv1a64(body) != want:
        sys.exit(f"{a.inp}: checksum mismatch (corrupt file)")
    lines = body.decode().split("\n")
    seen = set()
    for i, line in enumerate(lines):
        if line.startswith("gpu ") and "gpu" not in seen:
            lines[i] = "gpu " + a.gpu
            seen.add("gpu")
        elif line.startswith("sms ") and "sms" not in seen:
            if a.sms:
                lines[i] = "sms %d" % a.sms
            seen.add("sms")
    if seen != {"gpu", "sms"}:
        sys.exit(f"{a.inp}: no gpu or sms line")
    out = "\n".join(lines).encode()
    with open(a.out, "wb") as f:
        f.write(out + b"checksum %016x\n" % fnv1a64(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
