#!/usr/bin/env bash
# run_gpu.sh OUTDIR - the one GPU-machine script: builds with ninja, checks the
# SASS, runs the GPU tests, compute-sanitizer, and the GEMM benchmark, writing
# logs and JSON into OUTDIR (at most 8 files come back from the lent machine).
#
#   MKG_STAGES   comma list of stages to run (default: build,sass,test,sanitize,bench; also probe
#                (tools/launch_probe.cu), mk, mkopts (the demo per MKG_MK_OPTS_LIST value or MKG_MK_CASES
#                entry), sq8192 (square_8192 bf16, MKG_SQ_RUNS runs), ncu, ncusrc, ncustall, cubsrc, ncumk (the
#                megakernel's sampled stall reasons), streamprobe (tools/weight_stream_probe.cu and
#                tools/tpc_stream_probe.cu, compiled standalone), raceprobe
#                (tools/racecheck_named_barrier_probe.cu under racecheck), ncukern (ncu device time of our
#                GEMM kernels per instantiation while the bench runs MKG_NCUKERN_ARGS), benchx (more GEMM benchmark passes: MKG_BENCHX_ARGS, ';'-separated
#                argument sets, MKG_BENCHX_DTYPES), cubnames (cuBLASLt's kernels for MKG_CUBNAMES="SHAPE:M ..."))
#   MKG_BENCH_ARGS extra arguments for mkg_bench_gemm (e.g. "--only square_8192 --pdl 1"); MKG_BENCH_DTYPES
#                ("bf16 fp16" by default; add tf32 for fp32 operands with tf32 math)
#   MKG_NCU_ONLY  shape for the ncu stage (square_8192)
#   MKG_GTEST_FILTER  gtest filter for the test stage (default: all GPU tests)
#   MKG_MK_ARGS  extra mkg_demo arguments (mk stage: megakernel demo, JSON and a decode timeline)
#   MKG_SANITIZE_FILTER gtest filter for the compute-sanitizer stage (MKG_TEST_SCHEDULES=sub,..
#                limits the GEMM sweep to rows whose name holds a listed substring); MKG_SANITIZE_TIMEOUT seconds
#                per tool (420)
#                MKG_SANITIZE_RUNS runs of each tool per MKG_SANITIZE_ENVS set (see the stage);
#                MKG_SANITIZE_RACE_FILTER racecheck's own filter (default: MKG_SANITIZE_FILTER where set, else
#                the megakernel step alone; the default filter's bf16 ragged sweep and chunked-K tests take
#                ~4 minutes under racecheck, which ran session 35's first call into its 600 s limit)
#   MKG_SANITIZER the compute-sanitizer binary (default: build-san2026/compute-sanitizer where that was carried,
#                else the one on PATH). A newer release can be carried in
#                an ignored folder: tools/get_sanitizer.sh puts 2026.4 (the nvidia-cuda-sanitizer-api 13.5.25
#                wheel) in build-san2026/compute-sanitizer. It runs on the lent driver 580 and reads the
#                megakernel's 2-layer steps racecheck-clean, where the box's 2025.3.1 reports the item code's
#                named-barrier false positives (bench/NOTES.md, session 58); the run log names each run's version.
#   MKG_BUILD_DIR the build folder (build-gpu in the repository); with the sass stage alone it reads a
#                build made elsewhere, e.g. on the GPU-less machine with tools/get_sass_tools.sh's cuobjdump
#   MKG_CMAKE_ARGS extra cmake configure arguments; MKG_TEST_TIMEOUT seconds for the test stage (900)
#   MKG_BUILD_TARGETS only these build targets; MKG_GPU_TEST_BIN the test stage's binary (mkgemm_gpu_tests).
#                A quick GEMM-only run: MKG_CMAKE_ARGS=-DMKG_BENCH_DISPATCH=OFF
#                MKG_BUILD_TARGETS="mkgemm_gemm_gpu_tests mkg_bench_gemm" MKG_GPU_TEST_BIN=mkgemm_gemm_gpu_tests
# Every stage runs under a time limit so a hang cannot eat the lease. The lent machine sends
# back at most 8 files: the default stages write 8, so add mkopts or sq8192 to a shorter list.
set -u -o pipefail
out=${1:?usage: bench/run_gpu.sh OUTDIR}
mkdir -p "$out"
root=$(cd "$(dirname "$0")/.." && pwd)
build="${MKG_BUILD_DIR:-$root/build-gpu}"
stages=",${MKG_STAGES:-build,sass,test,sanitize,bench},"
log="$out/log.txt"
# MKG_COMMIT names the committed tree this copy was made from (the lent machine's copy of the
# repository has a stale .git, so its own HEAD and status say nothing); without it, HEAD and a
# -dirty mark for uncommitted changes, marked -unlabelled so that a stale HEAD (session 21's
# logs said d7e943f for a later tree) is not taken for the tree that ran.
if [ -n "${MKG_COMMIT:-}" ]; then
  commit=$MKG_COMMIT
else
  commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
  if [ -n "$(git -C "$root" status --porcelain 2>/dev/null)" ]; then commit="$commit-dirty"; fi
  commit="$commit-unlabelled"
fi
export MKG_COMMIT="$commit"
say() { echo "== $(date -u +%T) $*" | tee -a "$log"; }
has() { [[ "$stages" == *",$1,"* ]]; }

say "commit $commit  $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv 2>&1 | tee -a "$log"

if has streamprobe; then
  # Standalone compiles (seconds, no CMake build needed): tools/weight_stream_probe.cu (issue 4: the
  # weight stream by TMA box shape and layout, against the copy bandwidth) and tools/tpc_stream_probe.cu
  # (v71: one SM per TPC against both SMs of half as many TPCs).
  say "stream probes"
  for p in weight_stream_probe tpc_stream_probe; do
    nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -I "$root/include" \
      -I "$root/device" -I "$root/host_harness" -I "$root/tools" "$root/tools/$p.cu" -o "/tmp/$p" -lcuda \
      >>"$out/stream_probe.txt" 2>&1 && timeout 120 "/tmp/$p" >>"$out/stream_probe.txt" 2>&1
    say "$p rc=$?"
  done
  cat "$out/stream_probe.txt" | tee -a "$log" >/dev/null
fi

if has build; then
  say "build"
  # NOTE: -DMKG_BENCH_DISPATCH=ON first (MKG_CMAKE_ARGS may turn it off): a quick build's OFF stays in the
  # CMake cache, and a later full run then timed the oracle as "dispatched" (session 14, ad3f206).
  cmake -S "$root" -B "$build" -G Ninja -DMKG_LINEINFO=ON -DMKG_BENCH_DISPATCH=ON -DMKG_MK_PHASES=OFF ${MKG_CMAKE_ARGS:-} >"$out/build.txt" 2>&1 &&
    timeout 600 cmake --build "$build" -j 16 ${MKG_BUILD_TARGETS:+--target $MKG_BUILD_TARGETS} >>"$out/build.txt" 2>&1
  rc=$?; say "build rc=$rc"; tail -3 "$out/build.txt" | tee -a "$log"
  [ $rc -eq 0 ] || exit 1
  grep -h -E "registers|spill|C75" "$build"/ptxas/*.log 2>/dev/null | sort | uniq -c | tee -a "$log"
  # C75xx (wgmma serialized) is an "info" line: look for it in every compile of this build too.
  grep -h -o "(C75[0-9]*)[^']*'[^']*'" "$out/build.txt" | sort | uniq -c | tee -a "$log"
fi

if has sass; then
  say "sass"
  # One disassembly per cubin, read three times (three cuobjdump calls per cubin took 2.5 min with 41 rows).
  for c in "$build"/ptxas/*.cubin; do
    cuobjdump --dump-sass "$c" >/tmp/sass_dump.txt
    n_hgmma=$(grep -c -E "HGMMA|QGMMA" /tmp/sass_dump.txt)
    n_tma=$(grep -c UTMALDG /tmp/sass_dump.txt)
    n_local=$(grep -c -E "LDL|STL" /tmp/sass_dump.txt)
    say "$(basename "$c"): HGMMA/QGMMA=$n_hgmma UTMALDG=$n_tma LDL/STL=$n_local"
    [ "$(basename "$c")" = mkg_kernels_bf16_sm90.cubin ] && cp /tmp/sass_dump.txt /tmp/sass_bf16.txt
  done
  cat /tmp/sass_bf16.txt |
    awk '/Function : .*ILi0ELi128ELi256ELi64ELi4ELi0E/{p=1} p&&/HGMMA|UTMALDG|SYNCS|WARPGROUP/{print} /EXIT/{if(p)exit}' |
    head -60 >"$out/sass_m128n256.txt"
fi

if has test; then
  say "gpu tests"
  timeout "${MKG_TEST_TIMEOUT:-900}" stdbuf -oL "$build"/tests/${MKG_GPU_TEST_BIN:-mkgemm_gpu_tests} --gtest_filter="${MKG_GTEST_FILTER:-*}" >"$out/gpu_tests.log" 2>&1
  say "gpu tests rc=$?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |report|bitwise|seed" "$out/gpu_tests.log" | head -60 | tee -a "$log"
  timeout 300 "$build"/tests/mkgemm_cpu_tests >>"$out/gpu_tests.log" 2>&1
  say "cpu tests on the GPU machine rc=$?"
fi

if has sanitize; then
  say "compute-sanitizer"
  filt=${MKG_SANITIZE_FILTER:-"Gpu.NanAndInfPropagate:Gpu.InvalidInputLaunchesNothing:Gpu.EveryScheduleRaggedShapesBf16:Gpu.ChunkedK*:Megakernel.TwoLayerStepsForSanitizers"}
  # MKG_SANITIZE_TOOLS (memcheck racecheck synccheck), each MKG_SANITIZE_RUNS (1) times: a hazard
  # that comes and goes between runs of the same code shows as differing summaries.
  # MKG_SANITIZE_ENVS: ';'-separated sets of environment assignments, each run under every tool
  # (e.g. "MKG_MK_OPTS=2275;MKG_MK_OPTS=18659"); default one set that changes nothing.
  IFS=';' read -r -a env_sets <<<"${MKG_SANITIZE_ENVS:-MKG_SANITIZE_DEFAULT=1}"
  # The carried 2026.4 by default where tools/get_sanitizer.sh put it, else the box's own.
  san_default=compute-sanitizer
  [ -x "$root/build-san2026/compute-sanitizer" ] && san_default=build-san2026/compute-sanitizer
  san=${MKG_SANITIZER:-$san_default}
  [ "$san" = compute-sanitizer ] || san=$(cd "$root" && realpath "$san")
  say "sanitizer: $san, $("$san" --version 2>&1 | grep -o 'Version [0-9.]*' | head -1)"
  nlog=0
  for tool in ${MKG_SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
    for e in "${env_sets[@]}"; do
      for run in $(seq 1 "${MKG_SANITIZE_RUNS:-1}"); do
        # NOTE: a running number first: the logs concatenate in run order (run 10 after run 9), and
        # two environment sets that map to the same characters below cannot share a file.
        nlog=$((nlog + 1))
        f="$out/sanitize_$(printf %03d $nlog)_${tool}_${run}_$(echo "$e" | tr -c 'A-Za-z0-9' '_').log"
        echo "#### $tool run $run ($e)" >"$f"
        # shellcheck disable=SC2086
        env $e MKG_TEST_QUICK=1 timeout "${MKG_SANITIZE_TIMEOUT:-420}" "$san" --tool $tool --error-exitcode 9 \
          "$build"/tests/${MKG_GPU_TEST_BIN:-mkgemm_gpu_tests} \
          --gtest_filter="$([ "$tool" = racecheck ] && echo "${MKG_SANITIZE_RACE_FILTER:-${MKG_SANITIZE_FILTER:-Megakernel.TwoLayerStepsForSanitizers}}" || echo "$filt")" >>"$f" 2>&1
        rc=$?
        say "$tool run $run ($e) rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$f" | tail -1)"
        # The sites of each record, file:line pairs only, into the run log too: log.txt always
        # comes back, sanitize.log not where a call writes more files than the lent machine returns.
        grep -E '(Race reported|Potential .* hazard|and (Read|Write) access| at .*\.cu[h]?:[0-9]+)' "$f" |
          grep -oE '(Write|Read) access|[A-Za-z0-9_]+\.cuh?:[0-9]+|\[[0-9]+ hazards\]' | paste -sd' ' |
          sed -E 's/ (Write access)/\n  \1/g' | head -40 | sed 's/^/  /' | tee -a "$log" >/dev/null
      done
    done
  done
  cat "$out"/sanitize_*.log >"$out/sanitize.log" && rm -f "$out"/sanitize_*.log
fi

if has raceprobe; then
  # tools/racecheck_named_barrier_probe.cu under racecheck, MKG_RACEPROBE_RUNS (3) times from mode
  # MKG_RACEPROBE_FIRST (0): does the tool lose `barrier.sync 3, 256` ordering with the megakernel's
  # traffic around it (mode 5: bulk-copy ring, mbarriers, cross-CTA waits, one CTA per SM)?
  say "racecheck probe"
  rm -f /tmp/raceprobe
  nvcc -gencode arch=compute_90a,code=sm_90a -lineinfo "$root/tools/racecheck_named_barrier_probe.cu" \
    -o /tmp/raceprobe >>"$out/raceprobe.txt" 2>&1
  /tmp/raceprobe "${MKG_RACEPROBE_FIRST:-0}" >>"$out/raceprobe.txt" 2>&1
  say "race probe plain rc=$?"
  for run in $(seq 1 "${MKG_RACEPROBE_RUNS:-3}"); do
    echo "#### racecheck run $run" >>"$out/raceprobe.txt"
    timeout "${MKG_RACEPROBE_TIMEOUT:-120}" compute-sanitizer --tool racecheck --racecheck-report all /tmp/raceprobe "${MKG_RACEPROBE_FIRST:-0}" \
      >/tmp/raceprobe_run.txt 2>&1
    rc=$?
    cat /tmp/raceprobe_run.txt >>"$out/raceprobe.txt"
    say "race probe racecheck run $run rc=$rc $(grep -E 'RACECHECK SUMMARY' /tmp/raceprobe_run.txt | tail -1)"
  done
fi

if has mk; then
  say "megakernel demo"
  timeout 600 "$build"/megakernel/mkg_demo --out "$out/megakernel.json" --trace "$out/trace_decode_b1.json" \
    --trace-prefill /tmp/trace_prefill.json --commit "$commit" ${MKG_MK_ARGS:-} >"$out/mk.txt" 2>&1
  say "mkg_demo rc=$?"; tail -14 "$out/mk.txt" | tee -a "$log"
  for t in "$out/trace_decode_b1.json" /tmp/trace_prefill.json; do
    [ -f "$t" ] && python3 "$root/tools/trace_summary.py" "$t" >>"$out/mk.txt" 2>&1
  done
fi

if has mkopts; then
  # A/B runs of the megakernel demo, each with its decode timeline summarized, into one file:
  # one case per value of MKG_MK_OPTS_LIST (the MKG_MK_OPT_* bits), or, when MKG_MK_CASES is
  # set, one per ';'-separated list of environment assignments (e.g.
  # "MKG_MK_OPTS=3;MKG_MK_OPTS=3 MKG_MK_KC=qkv:1024,o:1024"). MKG_MK_DEMO=mkg_demo_phases (a build with
  # MKG_CMAKE_ARGS=-DMKG_MK_PHASES=ON) runs them with GEMM phase stamps in the timeline.
  if [ -n "${MKG_MK_CASES:-}" ]; then cases=$MKG_MK_CASES; else
    cases=""; for o in ${MKG_MK_OPTS_LIST:-0 3}; do cases="$cases${cases:+;}MKG_MK_OPTS=$o"; done
  fi
  say "megakernel cases: $cases"
  i=0
  IFS=';' read -r -a case_list <<<"$cases"
  for c in "${case_list[@]}"; do
    i=$((i + 1))
    echo "#### $c" >>"$out/mkopts.txt"
    rm -f "/tmp/megakernel_case_$i.json" "/tmp/trace_case_$i.json" "/tmp/mk_case_$i.txt"
    # shellcheck disable=SC2086
    env $c timeout 300 "$build"/megakernel/${MKG_MK_DEMO:-mkg_demo} --out "/tmp/megakernel_case_$i.json" \
      --trace "/tmp/trace_case_$i.json" --commit "$commit" ${MKG_MK_ARGS:-} >"/tmp/mk_case_$i.txt" 2>&1
    rc=$?
    # the plan's first bucket (9 KC lines), then every timed row (decode / prefill: us, ratios)
    { grep -E "^ +(qkv|o\+res|down\+res) .*KC" "/tmp/mk_case_$i.txt" | head -9
      grep -E "^(decode|prefill) " "/tmp/mk_case_$i.txt"; } | tee -a "$out/mkopts.txt" "$log"
    say "mkg_demo case $i ($c) rc=$rc"
    python3 "$root/tools/trace_summary.py" "/tmp/trace_case_$i.json" 2>&1 | sed -n '/time added/,$p' >>"$out/mkopts.txt"
  done
fi

if has sq8192; then
  # square_8192 bf16 alone, MKG_SQ_RUNS (3) runs of 100 interleaved replays: the ratio lines of
  # every run in one file (a JSON per run would overrun what the lent machine sends back).
  say "square_8192 x ${MKG_SQ_RUNS:-3}"
  for r in $(seq 1 "${MKG_SQ_RUNS:-3}"); do
    rm -f "/tmp/sq8192_$r.json" "/tmp/sq8192_$r.txt"
    timeout 300 "$build"/bench/mkg_bench_gemm --shapes "$root/bench/shapes.csv" --dtype bf16 --only square_8192 \
      --replays 100 --out "/tmp/sq8192_$r.json" --commit "$commit" >"/tmp/sq8192_$r.txt" 2>&1
    echo "run $r rc=$?: $(grep -E '^square_8192' "/tmp/sq8192_$r.txt" | head -1)" | tee -a "$out/sq8192.txt" "$log"
    grep -E "square_8192: oracle" "/tmp/sq8192_$r.txt" | tee -a "$out/sq8192.txt" "$log"
  done
  cp "/tmp/sq8192_1.json" "$out/gemm_bf16_sq8192_r100.json" 2>/dev/null
fi

if has probe; then
  say "launch probe (fixed cost of small launches)"
  timeout 300 "$build"/bench/mkg_launch_probe --out "$out/launch_probe.json" >"$out/launch_probe.txt" 2>&1
  say "launch probe rc=$?"; cat "$out/launch_probe.txt" | tee -a "$log"
fi

if has bench; then
  say "gemm benchmark"
  for dt in ${MKG_BENCH_DTYPES:-bf16 fp16}; do
    timeout 900 "$build"/bench/mkg_bench_gemm --shapes "$root/bench/shapes.csv" --dtype $dt \
      --out "$out/gemm_$dt.json" --commit "$commit" ${MKG_BENCH_ARGS:-} >"$out/bench_$dt.txt" 2>&1
    say "bench $dt rc=$?"; tail -8 "$out/bench_$dt.txt" | tee -a "$log"
  done
  # Only this stage's per-dtype logs (other bench_*.txt files in OUTDIR are left alone).
  : >"$out/bench.txt"
  for dt in ${MKG_BENCH_DTYPES:-bf16 fp16}; do
    cat "$out/bench_$dt.txt" >>"$out/bench.txt" && rm -f "$out/bench_$dt.txt"
  done
fi
if has benchx; then
  # More benchmark passes with their own arguments (e.g. issue 4's decode rows under another K-chunk
  # policy): MKG_BENCHX_ARGS (';'-separated argument sets, one pass each), MKG_BENCHX_DTYPES (bf16),
  # MKG_BENCHX_ENV (environment assignments for all of them, e.g. MKG_PRODUCERS=1; a set's own leading
  # NAME=value words for that set); JSON gemm_x_$dt.json for
  # the first set, gemm_x2_$dt.json, gemm_x3_$dt.json, ... for the others; logs appended to bench.txt.
  IFS=';' read -r -a benchx_sets <<<"${MKG_BENCHX_ARGS:-}"
  [ ${#benchx_sets[@]} -gt 0 ] || benchx_sets=("")
  xi=0
  for xs in "${benchx_sets[@]}"; do
    xi=$((xi + 1)); xn=x; [ $xi -gt 1 ] && xn=x$xi
    # a set's leading NAME=value words are its own environment (e.g. "MKG_DISPATCH_ORDER=1 --max-m 64")
    xe=""; xa=""
    for w in $xs; do
      if [ -z "$xa" ] && [[ "$w" =~ ^[A-Z_][A-Z0-9_]*= ]]; then xe="$xe $w"; else xa="$xa $w"; fi
    done
    say "gemm benchmark $xn (${MKG_BENCHX_ENV:-}$xe |$xa)"
    for dt in ${MKG_BENCHX_DTYPES:-bf16}; do
      # shellcheck disable=SC2086
      env ${MKG_BENCHX_ENV:-} $xe timeout 900 "$build"/bench/mkg_bench_gemm --shapes "$root/bench/shapes.csv" --dtype $dt \
        --out "$out/gemm_${xn}_$dt.json" --commit "$commit" $xa >"/tmp/bench_${xn}_$dt.txt" 2>&1
      say "bench $xn $dt rc=$?"; tail -8 "/tmp/bench_${xn}_$dt.txt" | tee -a "$log"
      { echo "#### bench $xn $dt:$xe |$xa"; cat "/tmp/bench_${xn}_$dt.txt"; } >>"$out/bench.txt"
    done
  done
fi
if has ncukern; then
  # Our GEMM kernels' mean duration per instantiation (ncu's per-kernel summary: device time only,
  # no launch gaps) while the bench times MKG_NCUKERN_ARGS (';'-separated argument sets, e.g.
  # "--only llama32_1b_o --max-m 1 --kc-policy cluster"), into ncukern.txt. Set against the bench's
  # graph-replayed us per launch it splits a row's time into kernel and launch overhead.
  # MKG_NCUKERN_REGEX: the kernels (mkg_gemm_persistent; "mkg_gemm_persistent|mkg_bench_dispatch" adds the
  # dispatch kernel); MKG_NCUKERN_METRICS: more ncu metrics, comma-separated.
  say "ncu kernel durations (${MKG_NCUKERN_ARGS:-})"
  IFS=';' read -r -a ncuk_sets <<<"${MKG_NCUKERN_ARGS:-}"
  for a in "${ncuk_sets[@]}"; do
    echo "#### $a" >>"$out/ncukern.txt"
    # shellcheck disable=SC2086
    timeout "${MKG_NCUKERN_TIMEOUT:-150}" ncu --clock-control none -k "regex:${MKG_NCUKERN_REGEX:-mkg_gemm_persistent}" \
      --metrics "gpu__time_duration.sum,launch__grid_size${MKG_NCUKERN_METRICS:+,$MKG_NCUKERN_METRICS}" \
      --print-summary per-kernel "$build"/bench/mkg_bench_gemm --shapes "$root/bench/shapes.csv" --dtype bf16 \
      --replays 3 --out /tmp/ncukern.json $a >>"$out/ncukern.txt" 2>&1
    say "ncu kernels rc=$? ($a)"
  done
fi
if has cubnames; then
  # Which cuBLASLt kernels run (name, grid, mean duration over its launches) for each "SHAPE:M" of
  # MKG_CUBNAMES in MKG_CUBNAMES_DTYPE (e4m3): ncu's per-kernel summary of the bench's cuBLASLt
  # launches (heuristic candidates and their timing replays), into cubnames.txt.
  say "cuBLASLt kernel names (${MKG_CUBNAMES:-})"
  for c in ${MKG_CUBNAMES:-}; do
    echo "#### ${c%%:*} M=${c##*:} ${MKG_CUBNAMES_DTYPE:-e4m3}" >>"$out/cubnames.txt"
    timeout 300 ncu --clock-control none -k "regex:^(sm90_|nvjet|cutlass)" --metrics gpu__time_duration.sum,launch__grid_size \
      --print-summary per-kernel "$build"/bench/mkg_bench_gemm --shapes "$root/bench/shapes.csv" --only "${c%%:*}" \
      --min-m "${c##*:}" --max-m "${c##*:}" --dtype "${MKG_CUBNAMES_DTYPE:-e4m3}" --replays 3 \
      --out /tmp/cubnames.json >/tmp/cubnames.txt 2>&1
    say "ncu names $c rc=$?"
    grep -v -E "^==PROF==|^\[" /tmp/cubnames.txt | tail -120 >>"$out/cubnames.txt"
  done
fi
if has ncu; then
  say "ncu (${MKG_NCU_ONLY:-square_8192})"
  metrics=sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum.per_second,dram__bytes.sum.per_second,lts__t_sector_hit_rate.pct,gpu__time_duration.sum,launch__grid_size,sm__warps_active.avg.pct_of_peak_sustained_active
  # mkgemm: skip the 10 correctness launches (one per eligible schedule), then schedule 0's timing launches.
  for k in "regex:mkg_gemm_persistent:10" "regex:sm90_xmma|nvjet|cutlass:2"; do
    timeout 300 ncu --clock-control none -k "${k%:*}" --launch-skip "${k##*:}" --launch-count 2 \
      --metrics "$metrics" "$build"/bench/mkg_bench_gemm --shapes "$root/bench/shapes.csv" \
      --only "${MKG_NCU_ONLY:-square_8192}" --dtype bf16 --out /tmp/ncu_bench.json >>"$out/ncu.txt" 2>&1
    say "ncu $k rc=$?"
  done
  grep -E "^  [a-z_0-9]+.*\(|tensor_op|lts__t|dram__bytes|duration|grid_size|warps_active" "$out/ncu.txt" | head -60 | tee -a "$log"
fi
# One launch of the kernels matching regex $1 (mangled names), after skipping $2 of them, under
# --set full with source counters, for the problem MKG_NCU_BENCH selects in MKG_NCU_DTYPE (bf16):
# details and the tools/ncu_source_summary.py condensation (arguments $4...) into OUTDIR/$3.
ncu_source() {
  local kre=$1 skip=$2 file=$out/$3 rep=/tmp/ncu_${3%.txt}
  shift 3
  timeout 300 ncu --clock-control none --kernel-name-base mangled -k "regex:$kre" --launch-skip "$skip" \
    --launch-count 1 --set full --import-source yes -f -o "$rep" "$build"/bench/mkg_bench_gemm \
    --shapes "$root/bench/shapes.csv" ${MKG_NCU_BENCH:-} --dtype "${MKG_NCU_DTYPE:-bf16}" \
    --out "$rep.json" >"$file" 2>&1
  say "ncu $kre rc=$?"
  ncu -i "$rep.ncu-rep" --page details >>"$file" 2>&1
  ncu -i "$rep.ncu-rep" --page source --csv --print-source sass >"$rep.csv" 2>&1
  python3 "$root/tools/ncu_source_summary.py" "$rep.csv" "$@" >>"$file" 2>&1
}
if has ncusrc; then
  # Our kernel, then cuBLASLt's for the same problem (name, SOL, stalls).
  #   MKG_NCU_BENCH  mkg_bench_gemm arguments that select the problem (e.g. "--only X --min-m 4096 --max-m 4096")
  #   MKG_NCU_KERNEL mangled-name regex of our kernel; MKG_NCU_SKIP launches of it to skip first;
  #   MKG_NCU_DTYPE the input dtype (bf16)
  say "ncu source ($MKG_NCU_BENCH)"
  ncu_source "${MKG_NCU_KERNEL:-mkg_gemm_persistent}" "${MKG_NCU_SKIP:-3}" ncu_src.txt
  # MKG_NCU_KERNEL2 (MKG_NCU_SKIP2): a second kernel of ours for the same problem, side by side
  # (e.g. the dispatch kernel against the shipped instantiation of the schedule it picks).
  if [ -n "${MKG_NCU_KERNEL2:-}" ]; then
    say "ncu source, second kernel ($MKG_NCU_KERNEL2)"
    ncu_source "$MKG_NCU_KERNEL2" "${MKG_NCU_SKIP2:-3}" ncu_src2.txt
  fi
  # MKG_NCU_NO_CUBLAS=1: leave cuBLASLt's kernel out.
  if [ "${MKG_NCU_NO_CUBLAS:-0}" != 1 ]; then
    timeout 300 ncu --clock-control none -k "regex:^(sm90_|nvjet|cutlass)" --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy \
      --section MemoryWorkloadAnalysis "$build"/bench/mkg_bench_gemm --shapes "$root/bench/shapes.csv" \
      ${MKG_NCU_BENCH:-} --dtype "${MKG_NCU_DTYPE:-bf16}" --out /tmp/ncu_bench2.json >"$out/ncu_cublas.txt" 2>&1
    say "ncu cublas rc=$?"
    grep -E "^  [a-zA-Z_0-9]+.*\(|Duration|Throughput|Stall|Warp Cycles" "$out/ncu_cublas.txt" | head -30 | tee -a "$log"
  fi
fi
if has cubsrc; then
  # cuBLASLt's kernel with source counters and its hot loop in SASS. MKG_NCU_CUBLAS: a kernel-name
  # regex; MKG_NCU_CUBLAS_SKIP: its launches to skip (the bench tries each cuBLASLt candidate once
  # before timing the best); MKG_NCU_BENCH and MKG_NCU_DTYPE as for ncusrc.
  say "ncu cublas source ($MKG_NCU_BENCH, ${MKG_NCU_DTYPE:-bf16})"
  ncu_source "${MKG_NCU_CUBLAS:-^(sm90_|nvjet|cutlass)}" "${MKG_NCU_CUBLAS_SKIP:-2}" ncu_cublas_src.txt 30 0.3
  grep -E "^  [a-zA-Z_0-9]+.*\(|Duration|Cluster Size|Grid Size|Block Size|Registers|Dynamic Shared" \
    "$out/ncu_cublas_src.txt" | head -12 | tee -a "$log"
fi
if has ncumk; then
  # The megakernel under Nsight Compute: one decode step (MKG_NCU_MK_SKIP megakernel launches skipped
  # first: 2 = the demo's first checked decode b1 step), WarpStateStats + SourceCounters + the sampled
  # stall reasons; tools/ncu_mk_summary.py condenses them (whole-kernel reasons, 2 KB code windows, top
  # SASS instructions).
  say "ncu megakernel"
  rep=/tmp/ncu_mk
  timeout 400 ncu --clock-control none -k regex:mkg_megakernel_sm90 --launch-skip "${MKG_NCU_MK_SKIP:-2}" \
    --launch-count 1 --section WarpStateStats --section SourceCounters --section SpeedOfLight \
    --metrics "regex:smsp__pcsamp_warps_issue_stalled_.*" \
    --import-source yes -f -o "$rep" "$build"/megakernel/mkg_demo --replays 1 --out /tmp/ncu_mk.json \
    >"$out/ncu_mk.txt" 2>&1
  say "ncu megakernel rc=$?"
  ncu -i "$rep.ncu-rep" --page details >>"$out/ncu_mk.txt" 2>&1
  echo "#### sampled stall reasons (whole kernel)" >>"$out/ncu_mk.txt"
  ncu -i "$rep.ncu-rep" --page raw --csv 2>&1 | python3 "$root/tools/ncu_mk_summary.py" --raw >>"$out/ncu_mk.txt" 2>&1
  ncu -i "$rep.ncu-rep" --page source --csv --print-source sass >"$rep.csv" 2>&1
  python3 "$root/tools/ncu_mk_summary.py" "$rep.csv" 60 >>"$out/ncu_mk.txt" 2>&1
  grep -E "Warp Cycles|Duration|no_instruction|^  (stalled|[a-z_]+ +[0-9.]+%)" "$out/ncu_mk.txt" | head -40 | tee -a "$log"
fi
if has ncustall; then
  # Sampled warp-stall reasons (no-instruction, long/short scoreboard, barrier, ...) of one launch of our
  # kernel and of cuBLASLt's, same selection variables as ncusrc.
  say "ncu stall reasons ($MKG_NCU_BENCH)"
  for k in "regex:${MKG_NCU_KERNEL:-mkg_gemm_persistent}:${MKG_NCU_SKIP:-3}" "regex:^(sm90_|nvjet|cutlass):2"; do
    timeout 300 ncu --clock-control none --kernel-name-base mangled -k "${k%:*}" --launch-skip "${k##*:}" \
      --launch-count 1 --metrics "regex:smsp__pcsamp_warps_issue_stalled_.*,gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,sm__cycles_active.avg,smsp__inst_executed.sum,dram__bytes_read.sum.per_second" \
      "$build"/bench/mkg_bench_gemm --shapes "$root/bench/shapes.csv" ${MKG_NCU_BENCH:-} --dtype bf16 \
      --out /tmp/ncu_bench3.json >>"$out/ncu_stall.txt" 2>&1
    say "ncu stall $k rc=$?"
  done
fi
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv 2>&1 | tee -a "$log"
say "done"
