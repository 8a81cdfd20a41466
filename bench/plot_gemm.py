#!/usr/bin/env python3
"""plot_gemm.py - PNGs from mkg_bench_gemm result JSONs.

    python3 bench/plot_gemm.py bench/results/gemm_bf16.json [more.json ...] --out bench/results/

Draws gemm_ratio.png (cublas_best_us / mkg_us per row, bars grouped by shape, one
panel per dtype, a line at 1.0: above it mkgemm is faster), gemm_tflops.png (TFLOP/s
vs M for the shapes with more than one M: mkgemm dispatched solid, its oracle dotted,
the autotuned table dash-dot when run with --table, cuBLASLt best dashed) and, for
results that have a dispatched column, gemm_pick.png (oracle_us / mkg_us per row: 1.0
means the cost model picked the oracle). mkg_us is the device-dispatched kernel on the
cost-model table (results from before dispatch hold the oracle there). Rows of later
files replace rows of earlier ones with the same (shape, dtype, M).
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# ---- input ---------------------------------------------------------------------------------


def load_rows(paths):
    """Rows of every file keyed by (shape, dtype, M), later files winning, plus the GPU names."""
    rows, gpus = {}, []
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        gpus.append(doc.get("gpu", "unknown GPU"))
        for row in doc["rows"]:
            rows[(row["shape"], row["dtype"], row["M"])] = row
    return list(rows.values()), sorted(set(gpus))


def shape_order(rows):
    """Shapes in first-seen order."""
    seen = []
    for row in rows:
        if row["shape"] not in seen:
            seen.append(row["shape"])
    return seen


def ratio(row):
    if not row.get("mkg_us") or row.get("cublas_best_us") is None:
        return None
    return row["cublas_best_us"] / row["mkg_us"]


def pick(row):
    if not row.get("mkg_us") or row.get("oracle_us") is None:
        return None
    return row["oracle_us"] / row["mkg_us"]


def tflops(row, key):
    us = row.get(key)
    return 2.0 * row["M"] * row["N"] * row["K"] / (us * 1e6) if us else None


# ---- ratio bars ----------------------------------------------------------------------------


def plot_ratio(rows, dtypes, title, path, value=ratio, ylabel="cuBLASLt best / mkgemm",
               subtitle="above 1.0 mkgemm is faster"):
    shapes = shape_order(rows)
    ms = sorted({row["M"] for row in rows})
    cmap = plt.get_cmap("viridis", max(len(ms), 2))
    color = {m: cmap(i) for i, m in enumerate(ms)}
    width = max(12.0, 0.16 * len(rows) / max(len(dtypes), 1) + 3.0)
    fig, axes = plt.subplots(len(dtypes), 1, figsize=(width, 4.2 * len(dtypes)), squeeze=False)
    for ax, dtype in zip(axes[:, 0], dtypes):
        x, ticks = 0.0, []
        for shape in shapes:
            group = sorted((r for r in rows if r["shape"] == shape and r["dtype"] == dtype), key=lambda r: r["M"])
            if not group:
                continue
            start = x
            for row in group:
                v = value(row)
                if v is not None:
                    ax.bar(x, v, width=0.9, color=color[row["M"]])
                x += 1.0
            ticks.append(((start + x - 1.0) / 2.0, shape))
            x += 1.0
        ax.axhline(1.0, color="black", linewidth=1.0)
        ax.set_xticks([t for t, _ in ticks])
        ax.set_xticklabels([s for _, s in ticks], rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(ylabel)
        ax.set_title(f"{dtype}: {subtitle}")
        ax.grid(axis="y", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=color[m]) for m in ms]
    fig.legend(handles, [f"M={m}" for m in ms], loc="upper right", fontsize=7, ncol=2)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0, 0.93, 0.97))
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---- TFLOP/s vs M --------------------------------------------------------------------------


def plot_tflops(rows, dtypes, title, path):
    sweeps = [s for s in shape_order(rows) if len({r["M"] for r in rows if r["shape"] == s}) > 1]
    if not sweeps:
        return False
    fig, axes = plt.subplots(1, len(dtypes), figsize=(7.5 * len(dtypes), 5.5), squeeze=False)
    colors = plt.get_cmap("tab10")
    for ax, dtype in zip(axes[0, :], dtypes):
        for i, shape in enumerate(sweeps):
            group = sorted((r for r in rows if r["shape"] == shape and r["dtype"] == dtype), key=lambda r: r["M"])
            if not group:
                continue
            ms = [r["M"] for r in group]
            ax.plot(ms, [tflops(r, "mkg_us") for r in group], "-o", markersize=3, color=colors(i % 10), label=shape)
            ax.plot(ms, [tflops(r, "oracle_us") for r in group], ":", color=colors(i % 10), alpha=0.7)
            if any(r.get("tuned_us") for r in group):
                ax.plot(ms, [tflops(r, "tuned_us") for r in group], "-.", color=colors(i % 10), alpha=0.7)
            ax.plot(ms, [tflops(r, "cublas_best_us") for r in group], "--", color=colors(i % 10), alpha=0.7)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("M (tokens)")
        ax.set_ylabel("TFLOP/s")
        ax.set_title(f"{dtype}: mkgemm dispatched solid, oracle dotted, tuned dash-dot, cuBLASLt best dashed",
                     fontsize=9)
        ax.grid(which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


# ---- main ----------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description="Plot mkg_bench_gemm result JSONs.")
    parser.add_argument("results", nargs="+", help="result JSON files written by mkg_bench_gemm --out")
    parser.add_argument("--out", default="bench/results/", help="folder for the PNGs (default bench/results/)")
    args = parser.parse_args()

    rows, gpus = load_rows(args.results)
    if not rows:
        sys.exit("plot_gemm.py: no rows in " + ", ".join(args.results))
    dtypes = [d for d in ("bf16", "fp16") if any(r["dtype"] == d for r in rows)]
    dtypes += sorted({r["dtype"] for r in rows} - set(dtypes))
    title = "mkgemm vs cuBLASLt on " + ", ".join(gpus)
    os.makedirs(args.out, exist_ok=True)

    ratio_png = os.path.join(args.out, "gemm_ratio.png")
    plot_ratio(rows, dtypes, title, ratio_png)
    print("wrote", ratio_png)
    if any("dispatch_bitexact" in r for r in rows):
        pick_png = os.path.join(args.out, "gemm_pick.png")
        plot_ratio(rows, dtypes, title.replace("vs cuBLASLt", "cost-model pick vs oracle"), pick_png, value=pick,
                   ylabel="oracle / dispatched", subtitle="1.0: the cost model picked the oracle")
        print("wrote", pick_png)
    tflops_png = os.path.join(args.out, "gemm_tflops.png")
    if plot_tflops(rows, dtypes, title, tflops_png):
        print("wrote", tflops_png)
    else:
        print("no shape with several M values: skipped", tflops_png)


if __name__ == "__main__":
    main()
