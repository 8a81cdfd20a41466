#!/usr/bin/env python3
"""plot_trace.py TRACE.json OUT.png [t_max_us] - draws a megakernel timeline (the Chrome
trace mkg_demo --trace writes) as one row per SM, one bar per work item, coloured by task
kind, so the bubbles between dependent tasks show without opening Perfetto."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

events = json.load(open(sys.argv[1]))["traceEvents"]
t_max = float(sys.argv[3]) if len(sys.argv) > 3 else max(e["ts"] + e["dur"] for e in events)
kinds = {}
palette = plt.get_cmap("tab10")
fig, ax = plt.subplots(figsize=(12, 6))
for e in events:
    if e["ts"] > t_max:
        continue
    kind = e["name"].split(" ", 1)[-1]
    color = kinds.setdefault(kind, palette(len(kinds) % 10))
    ax.barh(e["tid"], min(e["dur"], t_max - e["ts"]), left=e["ts"], height=0.9, color=color, linewidth=0)
for kind, color in kinds.items():
    ax.barh(-10, 0, color=color, label=kind)
ax.set_ylim(-1, max(e["tid"] for e in events) + 1)
ax.set_xlim(0, t_max)
ax.set_xlabel("microseconds from the first item")
ax.set_ylabel("SM (CTA)")
ax.set_title("megakernel timeline: one bar per work item (start includes its dependency wait)")
ax.legend(fontsize=8, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.1))
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
print("wrote", sys.argv[2])
