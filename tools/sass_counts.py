#!/usr/bin/env python3
"""Per-function counts in a cuobjdump --dump-sass listing: what says whether a K loop runs on the
uniform datapath (bench/NOTES.md, v65-v67).

    cuobjdump --dump-sass build-gpu/ptxas/mkg_megakernel.cubin | python3 tools/sass_counts.py [FILTER]

For each function whose mangled name contains FILTER (all by default): instructions, wgmma
(HGMMA / QGMMA / IGMMA), R2UR in the six instructions before a wgmma (operand descriptors built
in vector registers and moved over), WARPSYNC, and mbarrier phase waits (SYNCS.PHASECHK) on
uniform ([UR..]) against vector ([R..]) addresses.
"""
import re
import sys

GMMA = re.compile(r"\b[HQI]GMMA\b")
INSN = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.*?);")


def flush(name, insns, filt):
    if name is None or (filt and filt not in name):
        return
    gmma = r2ur_before = warpsync = wait_u = wait_v = 0
    for i, text in enumerate(insns):
        if GMMA.search(text):
            gmma += 1
            r2ur_before += sum(1 for t in insns[max(0, i - 6):i] if "R2UR" in t)
        if "WARPSYNC" in text:
            warpsync += 1
        if "SYNCS.PHASECHK" in text:
            addr = re.search(r"\[(U?R)", text)
            if addr and addr.group(1) == "UR":
                wait_u += 1
            else:
                wait_v += 1
    print(name)
    print(f"  instructions {len(insns)}  wgmma {gmma}  R2UR in the 6 before a wgmma {r2ur_before}  "
          f"WARPSYNC {warpsync}  mbarrier waits on uniform / vector addresses {wait_u} / {wait_v}")


def main():
    filt = sys.argv[1] if len(sys.argv) > 1 else ""
    name, insns = None, []
    for line in sys.stdin:
        m = re.search(r"Function : (\S+)", line)
        if m:
            flush(name, insns, filt)
            name, insns = m.group(1), []
            continue
        m = INSN.search(line)
        if m and name is not None:
            insns.append(m.group(1))
    flush(name, insns, filt)


if __name__ == "__main__":
    main()
