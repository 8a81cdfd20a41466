#!/usr/bin/env python3
"""plot_megakernel.py [megakernel.json] [out.png] - the sample megakernel against its
CUDA-graph-replayed reference path and the weight-bytes / copy-bandwidth floor, one group
of bars per (phase, tokens), from the JSON that mkg_demo --out writes."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

src = sys.argv[1] if len(sys.argv) > 1 else "bench/results/megakernel.json"
dst = sys.argv[2] if len(sys.argv) > 2 else "bench/results/megakernel.png"
doc = json.load(open(src))
rows = doc["rows"]
labels = [f'{r["phase"]}\n{r["tokens"]} tok' for r in rows]
x = range(len(rows))
w = 0.27
fig, ax = plt.subplots(figsize=(9, 4.5))
ax.bar([i - w for i in x], [r["mkg_us"] for r in rows], w, label="megakernel (one launch)")
ax.bar(list(x), [r["ref_graph_us"] for r in rows], w, label="reference (cuBLAS + kernels, CUDA graph)")
ax.bar([i + w for i in x], [r["floor_us"] for r in rows], w, label="floor (bytes / copy bandwidth)")
ax.set_yscale("log")
ax.set_ylabel("microseconds per step")
ax.set_xticks(list(x))
ax.set_xticklabels(labels)
ax.set_title(f'{rows[0]["model"]} on {doc["gpu"]} (commit {doc["commit"]})')
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(dst, dpi=120)
print("wrote", dst)
