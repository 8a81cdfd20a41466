#!/usr/bin/env bash
# ab_gpu.sh OUT BASE NEW - on the GPU machine: one call's A/B of two builds made elsewhere and
# carried as stripped binaries (the lent machine's copy of the repository has no build; building
# both there costs minutes of device time). BASE and NEW are folders holding mkg_bench_gemm and
# mkg_demo; NEW may also hold mkgemm_gpu_tests (run first: the whole GPU suite) and
# mkg_demo_phases (a -DMKG_MK_PHASES=ON build: one decode b1 trace with unit phases). Writes
# OUT/log.txt (the summary) and OUT/ab.tgz (every log, JSON and trace): the lent machine returns
# at most 8 files.
#   MKG_AB_ROUNDS     rounds of each comparison, the two builds alternating (3)
#   MKG_AB_SHAPES     bench rows (bench/shapes_decode.csv); MKG_AB_SCHEDULES the bench's --schedules
#                     filter (swap,sk8); MKG_AB_BENCH=0 skips the bench
#   MKG_AB_DEMO_ENVS  ';'-separated environment sets, one more NEW demo run each (e.g.
#                     "MKG_MK_KC=down:1024;MKG_MK_FORCE=qkv:m16n64k128_s8_swap_rn_g8@8")
#   MKG_AB_SANITIZER  a compute-sanitizer binary: bench/run_gpu.sh's sanitize stage on NEW's tests
#                     (memcheck and synccheck of Megakernel.TwoLayerStepsForSanitizers and the bf16
#                     ragged sweep, racecheck of the former; MKG_AB_SAN_SCHEDULES limits the sweep's
#                     rows, MKG_TEST_SCHEDULES)
#   MKG_AB_BUDGET     seconds after which optional stages are skipped (420): the call limit is 600
#   MKG_AB_JSON       1: BASE's demo with --out and a decode b1 trace first (ab/megakernel_base.json: the
#                     refresh of bench/results/megakernel.json; MKG_AB_BASE_COMMIT names its commit)
#   MKG_AB_TRACE_ENVS ';'-separated environment sets, one traced NEW demo each (and its phases twin where
#                     NEW holds mkg_demo_phases), each trace summarized (e.g. "MKG_MK_OPTS=532809955")
# Example (bins.tar.xz holds v/main and v/new): mkdir -p /tmp/cb && tar -xJf build-carry/bins.tar.xz
#   -C /tmp/cb && bash tools/ab_gpu.sh "$OUT" /tmp/cb/v/main /tmp/cb/v/new
set -u -o pipefail
out=${1:?usage: tools/ab_gpu.sh OUT BASE NEW}
base=$(realpath "${2:?BASE}")
new=$(realpath "${3:?NEW}")
root=$(cd "$(dirname "$0")/.." && pwd)
r=$out/ab
mkdir -p "$r"
log=$out/log.txt
rounds=${MKG_AB_ROUNDS:-3}
budget=${MKG_AB_BUDGET:-420}
say() { echo "== $(date -u +%T) $*" | tee -a "$log"; }
late() { [ "$SECONDS" -gt "$budget" ] && say "skipped after ${SECONDS}s: $*"; }
lines() { grep -E "^(decode|prefill) " "$1" | tee -a "$log"; }

say "base $base  new $new"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee -a "$log"

# ---- the GPU test suite of NEW
if [ -x "$new/mkgemm_gpu_tests" ]; then
  say "GPU tests (new)"
  (cd "$new" && timeout 300 ./mkgemm_gpu_tests) >"$r/gpu_tests_new.log" 2>&1
  say "rc=$?"
  grep -E "^\[  (PASSED|FAILED) |tests ran" "$r/gpu_tests_new.log" | tee -a "$log"
fi

# ---- BASE's demo JSON and decode b1 trace (the results refresh)
if [ "${MKG_AB_JSON:-0}" != 0 ]; then
  say "demo JSON and trace (base)"
  MKG_COMMIT=base timeout 200 "$base/mkg_demo" --out "$r/megakernel_base.json" --trace "$r/trace_base.json" \
    --commit "${MKG_AB_BASE_COMMIT:-base}" >"$r/demo_json_base.txt" 2>&1
  say "rc=$?"
  lines "$r/demo_json_base.txt"
  python3 "$root/tools/trace_summary.py" "$r/trace_base.json" >"$r/trace_base_summary.txt" 2>&1
  [ -f "$r/trace_base.json" ] && gzip -f "$r/trace_base.json"
fi

# ---- NEW traced under each MKG_AB_TRACE_ENVS set
IFS=';' read -r -a tenvs <<<"${MKG_AB_TRACE_ENVS:-}"
n=0
for e in "${tenvs[@]}"; do
  n=$((n + 1))
  for d in mkg_demo mkg_demo_phases; do
    [ -x "$new/$d" ] || continue
    late "traced $d with $e" && break 2
    t=$r/trace_new_env${n}_$d.json
    say "traced $d (new) with $e"
    # shellcheck disable=SC2086
    env $e MKG_COMMIT=new-trace$n timeout 150 "$new/$d" --trace "$t" >"${t%.json}.txt" 2>&1
    say "rc=$?"
    lines "${t%.json}.txt"
    python3 "$root/tools/trace_summary.py" "$t" >"${t%.json}_summary.txt" 2>&1
    [ -f "$t" ] && gzip -f "$t"
  done
done

# ---- bench rows, dispatched (the cost model's pick), the builds alternating
if [ "${MKG_AB_BENCH:-1}" != 0 ]; then
  for i in $(seq 1 "$rounds"); do
    for v in base new; do
      dir=$base; [ $v = new ] && dir=$new
      timeout 120 "$dir/mkg_bench_gemm" --shapes "${MKG_AB_SHAPES:-$root/bench/shapes_decode.csv}" \
        --schedules "${MKG_AB_SCHEDULES:-swap,sk8}" --commit "$v" --out "$r/bench_${v}_$i.json" \
        >"$r/bench_${v}_$i.txt" 2>&1
      say "bench $v round $i rc=$?"
    done
  done
  python3 - "$r" <<'PY' | tee -a "$log"
# Per row: the dispatched time of each round, both builds; the new build's shipped-kernel time of
# each schedule the two picks name; bitwise = every dispatched C equal to the oracle's.
import glob, json, sys
r = sys.argv[1]
def load(v):
    rows = {}
    for f in sorted(glob.glob(f"{r}/bench_{v}_*.json")):
        for x in json.load(open(f))["rows"]:
            rows.setdefault((x["shape"], x["M"]), []).append(x)
    return rows
a, b = load("base"), load("new")
fmt = lambda xs: "/".join("%.2f" % x for x in xs)
for k in sorted(a):
    ra, rb = a[k], b.get(k, [])
    if not rb:
        continue
    picks = sorted({ra[0]["schedule"], rb[0]["schedule"]})
    shipped = " ".join("%s %s" % (p, fmt(x["schedules"].get(p) or 0 for x in rb)) for p in picks)
    print("%-18s M=%4d base %-28s %s | new %-28s %s | shipped(new) %s | bitwise %s" % (
        k[0], k[1], ra[0]["schedule"], fmt(x["mkg_us"] for x in ra), rb[0]["schedule"],
        fmt(x["mkg_us"] for x in rb), shipped, all(x["dispatch_bitexact"] for x in ra + rb)))
PY
fi

# ---- the megakernel demo, the builds alternating
for i in $(seq 1 "$rounds"); do
  late "demo round $i" && break
  for v in base new; do
    dir=$base; [ $v = new ] && dir=$new
    say "demo $v round $i"
    MKG_COMMIT=$v timeout 150 "$dir/mkg_demo" >"$r/demo_${v}_$i.txt" 2>&1
    say "rc=$?"
    lines "$r/demo_${v}_$i.txt"
  done
done
IFS=';' read -r -a envs <<<"${MKG_AB_DEMO_ENVS:-}"
n=0
for e in "${envs[@]}"; do
  late "demo $e" && break
  n=$((n + 1))
  say "demo new with $e"
  # shellcheck disable=SC2086
  env $e MKG_COMMIT=new-env$n timeout 150 "$new/mkg_demo" >"$r/demo_new_env$n.txt" 2>&1
  say "rc=$?"
  lines "$r/demo_new_env$n.txt"
done

# ---- one decode b1 step of NEW with unit phases
if [ -x "$new/mkg_demo_phases" ] && ! late "phases trace"; then
  say "phases trace (new, decode b1)"
  MKG_COMMIT=new-phases timeout 150 "$new/mkg_demo_phases" --trace "$r/trace_phases_new.json" \
    >"$r/demo_phases_new.txt" 2>&1
  say "rc=$?"
  python3 "$root/tools/trace_summary.py" "$r/trace_phases_new.json" >"$r/trace_phases_new_summary.txt" 2>&1
  gzip -f "$r/trace_phases_new.json"
fi

# ---- compute-sanitizer on NEW: bench/run_gpu.sh's sanitize stage, pointed at NEW's test binary
san=${MKG_AB_SANITIZER:-}
if [ -n "$san" ] && [ -x "$new/mkgemm_gpu_tests" ] && ! late "sanitizers"; then
  mkdir -p /tmp/ab_san_build/tests && ln -sf "$new/mkgemm_gpu_tests" /tmp/ab_san_build/tests/
  MKG_STAGES=sanitize MKG_BUILD_DIR=/tmp/ab_san_build MKG_SANITIZER="$san" MKG_COMMIT=new \
    MKG_SANITIZE_FILTER="Megakernel.TwoLayerStepsForSanitizers:Gpu.EveryScheduleRaggedShapesBf16" \
    MKG_SANITIZE_RACE_FILTER=Megakernel.TwoLayerStepsForSanitizers MKG_SANITIZE_TIMEOUT=150 \
    MKG_TEST_SCHEDULES=${MKG_AB_SAN_SCHEDULES:-} bash "$root/bench/run_gpu.sh" "$r/sanitize" >/dev/null 2>&1
  grep -E "sanitizer:|run [0-9]+ \(|^  [^ ]" "$r/sanitize/log.txt" | tee -a "$log"
fi

say "done after ${SECONDS}s"
tar -czf "$out/ab.tgz" -C "$out" ab
