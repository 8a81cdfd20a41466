#!/usr/bin/env python3
"""Per-function counts in a cuobjdump --dump-sass listing: what says whether a K loop runs on the
uniform datapath (bench/NOTES.md, v65-v67).

    cuobjdump --dump-sass build-gpu/ptxas/mkg_megakernel.cubin | python3 tools/sass_counts.py [FILTER]

For each function whose mangled name contains FILTER (all by default): instructions, wgmma
(HGMMA / QGMMA / IGMMA), R2UR in the six instructions before a wgmma (operand descriptors built
in vector registers and moved over), WARPSYNC, and mbarrier phase waits (SYNCS.PHASECHK) on
uniform ([UR..]) against vector ([R..]) addresses, and how far each wait's retry branch jumps (the
first BRA within four instructions after a SYNCS.PHASECHK: near = within 4 KB, else far; v69).
"""
import re
import sys

GMMA = re.compile(r"\b[HQI]GMMA\b")
INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")
LABEL = re.compile(r"^\s*(\.L_x_\d+):")
TARGET = re.compile(r"BRA\s+(?:`\((\.L_x_\d+)\)|(0x[0-9a-f]+))")


def retry_jumps(insns, labels):
    near = far = 0
    for i, (addr, text) in enumerate(insns):
        if "SYNCS.PHASECHK" not in text:
            continue
        for a2, t2 in insns[i + 1:i + 5]:
            m = TARGET.search(t2)
            if not m:
                continue
            tgt = labels.get(m.group(1)) if m.group(1) else int(m.group(2), 16)
            if tgt is not None:
                if abs(tgt - addr) <= 4096:
                    near += 1
                else:
                    far += 1
            break
    return near, far


def flush(name, insns, labels, filt):
    if name is None or (filt and filt not in name):
        return
    near, far = retry_jumps(insns, labels)
    insns = [t for _, t in insns]
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
          f"WARPSYNC {warpsync}  mbarrier waits on uniform / vector addresses {wait_u} / {wait_v}  "
          f"wait branches near / far {near} / {far}")


def main():
    filt = sys.argv[1] if len(sys.argv) > 1 else ""
    name, insns, labels, pending = None, [], {}, []
    for line in sys.stdin:
        m = re.search(r"Function : (\S+)", line)
        if m:
            flush(name, insns, labels, filt)
            name, insns, labels, pending = m.group(1), [], {}, []
            continue
        m = LABEL.search(line)
        if m:
            pending.append(m.group(1))
            continue
        m = INSN.search(line)
        if m and name is not None:
            addr = int(m.group(1), 16)
            for lab in pending:
                labels[lab] = addr
            pending = []
            insns.append((addr, m.group(2)))
    flush(name, insns, labels, filt)


if __name__ == "__main__":
    main()
