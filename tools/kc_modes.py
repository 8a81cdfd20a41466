#!/usr/bin/env python3
"""kc_modes.py - issue 4's side-by-side report from two mkg_bench_gemm runs of one dtype.

    tools/kc_modes.py ONE.json DECODE.json [--out MERGED.json]

ONE.json was run with --kc-policy one (KC = K for every layer), DECODE.json with
--kc-policy decode (mkg_plan_kc_decode: chunks from N and K alone). Per row:
  invariant  the decode policy's oracle (one KC per layer, whatever M: bits fixed)
  one        the one-chunk policy's oracle (also invariant, a different KC choice)
  fast       the faster of the two for this row (fast mode may pick KC per M, so its
             bits move with M)
cuBLASLt is the better of the two runs' best. Prints the figures issue 4 asks for and
writes the merged rows. --pdl: our times are the oracle under PDL launches (oracle_pdl_us;
both runs made with mkg_bench_gemm --pdl 1); cuBLASLt is launched as it launches."""
import argparse
import json
import math
import sys


def geomean(xs):
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("one")
    ap.add_argument("decode")
    ap.add_argument("--out")
    ap.add_argument("--pdl", action="store_true", help="use oracle_pdl_us / oracle_pdl_schedule")
    a = ap.parse_args()
    us, sched = ("oracle_pdl_us", "oracle_pdl_schedule") if a.pdl else ("oracle_us", "oracle_schedule")
    one = json.load(open(a.one))
    dec = json.load(open(a.decode))
    if one.get("kc_policy", "one") != "one" or dec.get("kc_policy") != "decode":
        sys.exit("kc_modes: want a --kc-policy one run, then a --kc-policy decode run")
    key = lambda r: (r["shape"], r["dtype"], r["M"])
    by = {key(r): r for r in one["rows"]}
    rows = []
    for d in dec["rows"]:
        o = by.get(key(d))
        if o is None or o.get(us) is None or d.get(us) is None:
            continue
        lt = min(o["cublas_best_us"], d["cublas_best_us"])
        rows.append({
            "shape": d["shape"], "dtype": d["dtype"], "M": d["M"], "N": d["N"], "K": d["K"],
            "kc_one": o["kc"], "kc_decode": d["kc"],
            "one_us": o[us], "one_schedule": o[sched],
            "invariant_us": d[us], "invariant_schedule": d[sched],
            "fast_us": min(o[us], d[us]),
            "cublas_best_us": lt,
            "weight_bytes": d["N"] * d["K"] * (4 if d["dtype"] == "fp32" else 2),
        })
    if not rows:
        sys.exit("kc_modes: the two runs share no rows")
    copy = dec.get("copy_gbps") or one.get("copy_gbps")
    chunked = {(r["shape"], r["N"], r["K"]) for r in rows if r["kc_decode"] < r["K"]}
    print(f"times: {us}")
    print(f"{len(rows)} rows; layers the decode policy chunks: "
          + ", ".join(f"{s} (K {k} -> KC {next(r['kc_decode'] for r in rows if r['shape'] == s)})"
                      for s, n, k in sorted(chunked)))
    dec_rows = [r for r in rows if r["M"] <= 64]
    big = [r for r in rows if r["M"] >= 512]
    inv_lt = [r["cublas_best_us"] / r["invariant_us"] for r in dec_rows]
    worst = min(dec_rows, key=lambda r: r["cublas_best_us"] / r["invariant_us"])
    print(f"M in 1..64, invariant vs cuBLASLt: geomean {geomean(inv_lt):.3f}, worst "
          f"{worst['cublas_best_us'] / worst['invariant_us']:.3f} at {worst['shape']} M={worst['M']} "
          f"(target >= 1.0, none below 0.9); one-chunk policy {geomean(r['cublas_best_us'] / r['one_us'] for r in dec_rows):.3f}")
    print(f"all rows, invariant vs fast (fast_us / invariant_us): geomean "
          f"{geomean(r['fast_us'] / r['invariant_us'] for r in rows):.3f} (target >= 0.97)")
    print(f"M >= 512 vs cuBLASLt: invariant {geomean(r['cublas_best_us'] / r['invariant_us'] for r in big):.3f}, "
          f"one-chunk {geomean(r['cublas_best_us'] / r['one_us'] for r in big):.3f}, "
          f"fast {geomean(r['cublas_best_us'] / r['fast_us'] for r in big):.3f}")
    price = [r["one_us"] / r["invariant_us"] for r in big if r["kc_decode"] < r["K"]]
    if price:
        print(f"price of the decode chunks at M >= 512 on the chunked layers (one_us / invariant_us): "
              f"geomean {geomean(price):.3f} over {len(price)} rows")
    if copy:
        stream = [r for r in rows if r["M"] <= 16 and r["weight_bytes"] >= 32 * 1024 * 1024]
        frac = lambda us, r: r["weight_bytes"] / (us * 1e3) / copy
        if stream:
            w = min(stream, key=lambda r: frac(r["invariant_us"], r))
            print(f"M <= 16, weights >= 32 MB, weight stream / copy ({copy:.0f} GB/s): invariant geomean "
                  f"{geomean(frac(r['invariant_us'], r) for r in stream):.2f}, worst {frac(w['invariant_us'], w):.2f} "
                  f"at {w['shape']} M={w['M']}; cuBLASLt {geomean(frac(r['cublas_best_us'], r) for r in stream):.2f} "
                  f"(target >= 0.90)")
    print(f"{'shape':20s} {'M':>5s} {'KC':>11s} {'one us':>9s} {'inv us':>9s} {'cuBLASLt':>9s} {'inv ratio':>9s}  schedule")
    for r in rows:
        if r["kc_decode"] < r["K"]:
            print(f"{r['shape']:20s} {r['M']:5d} {r['K']:5d}>{r['kc_decode']:<5d} {r['one_us']:9.2f} "
                  f"{r['invariant_us']:9.2f} {r['cublas_best_us']:9.2f} {r['cublas_best_us'] / r['invariant_us']:9.3f}  "
                  f"{r['invariant_schedule']}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"times": us,
                       "one": {"commit": one["commit"], "date": one["date"]},
                       "decode": {"commit": dec["commit"], "date": dec["date"]},
                       "gpu": dec["gpu"], "copy_gbps": copy, "rows": rows}, f, indent=1)
        print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
