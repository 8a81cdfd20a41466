/* mkg_bench_gemm.c - main of mkg_bench_gemm: mkgemm against cuBLASLt over a shapes file.
 *
 *   mkg_bench_gemm --out PATH [--shapes FILE] [--dtype bf16|fp16|all] [--commit STR] [--replays N]
 *                  [--only NAME[,NAME..]] [--max-m N] [--min-m N] [--table FILE] [--autotune-out FILE]
 *
 * Runs every (dtype, shape, M) through the engine in mkg_bench_gemm.h (host-launched
 * schedules, the device-dispatched cost-model table and, with --table, the loaded one),
 * printing a line per row, then writes the results JSON (SPEC section 10), the autotuned
 * table file if asked, and a summary per dtype. Needs a compute-capability-9.0 GPU;
 * without one it says why and exits 1.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mkg_bench_gemm.h"

#ifndef MKG_BENCH_DEFAULT_SHAPES
#define MKG_BENCH_DEFAULT_SHAPES "../shared/bench/shapes.csv"
#endif

// ---- command line ------------------------------------------------------------------------

typedef struct mkg_bench_args {
    const char *shapes;
    const char *dtype;
    const char *out;
    const char *commit;
    const char *only;           /* comma-separated shape names, NULL: all */
    const char *table;          /* table file to dispatch from as well, NULL: none */
    const char *autotune_out;   /* table file to write from the measurements, NULL: none */
    int replays;
    int min_m, max_m;
    int pdl;
    int sustain_ms;
    int dispatch_grid_units;
    int kc_policy;              /* MKG_BENCH_KC_ONE, _DECODE, _FIXED or _CLUSTER */
    int kc_min;                 /* --kc-min (0: MKG_PLAN_MIN_KC) */
    int block_scales;           /* --block-scales 0|1 */
    int l2_default;             /* --l2-hints 0 */
    int sets;                   /* --sets N (0: enough to cover 2 x L2) */
    const char *schedules;      /* --schedules SUB[,SUB..] */
} mkg_bench_args;

static void mkg_bench_usage(FILE *f)
{
    fprintf(f,
            "usage: mkg_bench_gemm --out PATH [--shapes FILE] [--dtype bf16|fp16|all] [--commit STR]\n"
            "                      [--replays N] [--only NAME[,NAME..]] [--max-m N] [--min-m N]\n"
            "                      [--table FILE] [--autotune-out FILE] [--pdl 0|1] [--sustain MS]\n"
            "                      [--dispatch-grid sms|units] [--kc-policy one|decode|fixed] [--block-scales 0|1]\n"
            "                      [--l2-hints 0|1] [--sets N] [--schedules SUB[,SUB..]]\n"
            "  --out PATH      results JSON to write (required)\n"
            "  --shapes FILE   shapes CSV `name,N,K,M values` (default %s)\n"
            "  --dtype D       input and output dtype: bf16, fp16, tf32 (fp32 operands and C, tf32\n"
            "                  math), e4m3 (FP8 operands with per-tensor scales 0.5 and 0.25, bf16 C;\n"
            "                  against cuBLASLt FP8 with fast accumulation; --block-scales 1: block scales,\n"
            "                  dispatched by the chunk-stepping kernel) or all (bf16 and fp16; default bf16)\n"
            "  --commit STR    commit recorded in the JSON (default $MKG_COMMIT, else \"unknown\")\n"
            "  --replays N     timed CUDA-graph replays per candidate, median taken (default 20)\n"
            "  --only NAMES    run only these shapes (comma-separated names)\n"
            "  --min-m N       run only M values >= N\n"
            "  --max-m N       run only M values <= N\n"
            "  --table FILE    also dispatch from this table file (written by --autotune-out for the\n"
            "                  same shapes file and GPU): JSON tuned_schedule, tuned_us; if it does not\n"
            "                  load, says why and runs the cost model only\n"
            "  --pdl 0|1       1: also time every schedule launched with programmatic dependent launch\n"
            "                  (MKG_LAUNCH_FLAG_PDL): JSON oracle_pdl_*, schedules_pdl (default 0)\n"
            "  --sustain MS    > 0: then replay the oracle and cuBLASLt's best alone for MS ms each,\n"
            "                  sampling SM clock and power through NVML: JSON sustained (default 0)\n"
            "  --dispatch-grid sms|units  the dispatch kernel's grid: one CTA per SM (default, what a\n"
            "                  dispatcher that reads M on the device must launch) or, as a diagnostic,\n"
            "                  the planned schedule's unit count when fewer (JSON dispatch_grid)\n"
            "  --sets N        a diagnostic: N >= 2 rotation sets of (A, B, C) per row instead of enough to\n"
            "                  cover twice the L2, so that small rows run with operands, tables, tensor\n"
            "                  maps and code left in the L2 by the previous replay (JSON rotation_sets;\n"
            "                  0 without --sets: the spec's cold-operand timing); not with --autotune-out\n"
            "  --schedules SUBS a diagnostic (e.g. under ncu): time only the schedules whose name holds one\n"
            "                  of these comma-separated substrings; the oracle is then the best of those\n"
            "                  (JSON schedule_filter); not with --autotune-out\n"
            "  --kc-policy P   each layer's canonical K chunk (invariant mode, from N and K only): one\n"
            "                  (default, mkg_plan_kc: KC = K) or decode (mkg_plan_kc_decode: chunks that\n"
            "                  give decode split-K enough work units) or fixed (KC = the --kc-min value for\n"
            "                  every layer, K where that is longer) or cluster (mkg_plan_kc_cluster: 2 or 4\n"
            "                  chunks for the cluster split-K rows); recorded as kc_policy in the JSON\n"
            "  --kc-min N      decode policy: smallest chunk; fixed policy: the chunk; a multiple of 128\n"
            "                  (default MKG_PLAN_MIN_KC)\n"
            "  --block-scales 0|1  e4m3 only: 1 x 128 activation and 128 x 128 weight block scales\n"
            "                  (log-uniform in [1/2, 2)), kc = 128, the chunk-capable schedules; cuBLASLt\n"
            "                  runs block-scaled FP8 too where it can (JSON cublas_block_scaled, and\n"
            "                  cublas_block_form: which operand roles ran, mkg_bench_lt_plan_try; its\n"
            "                  cublas_max_rel_err checks that it read the scales as we lay them out),\n"
            "                  else per-tensor FP8 (its error column then measures a different GEMM)\n"
            "  --l2-hints 0|1  0: every operand load of ours under the L2's default policy (MKG_DEPS_L2_DEFAULT),\n"
            "                  for A/B against the library's evict-first streaming of one-tile GEMMs (default 1;\n"
            "                  JSON l2_hints)\n"
            "  MKG_TMA_L2_PROMOTION=0|64|128|256 in the environment: the L2 promotion of every tensor map\n"
            "                  (default 128; JSON tma_l2_promotion)\n"
            "  --autotune-out FILE\n"
            "                  after the runs, write a table file: per (layer, M bucket) the fastest\n"
            "                  measured schedule, the cost model where nothing was measured\n"
            "  mkg_us and schedule are the dispatch kernel on the cost-model table; oracle_* the\n"
            "  fastest host-launched schedule. Table file layers: for bf16, fp16, tf32 and e4m3 (block\n"
            "  scales under --block-scales 1), one per shape name in file order, m_max = its largest M\n"
            "  (whatever --dtype, --only, --min/max-m say).\n",
            MKG_BENCH_DEFAULT_SHAPES);
}

static int mkg_bench_int_arg(const char *flag, const char *value)
{
    char *end = NULL;
    const long v = strtol(value, &end, 10);
    if (end == value || *end != '\0' || v < 1 || v > INT_MAX) {
        fprintf(stderr, "mkg_bench_gemm: %s wants a positive integer, got '%s'\n", flag, value);
        exit(1);
    }
    return (int)v;
}

static void mkg_bench_parse_args(int argc, char **argv, mkg_bench_args *a)
{
    memset(a, 0, sizeof *a);
    a->shapes = MKG_BENCH_DEFAULT_SHAPES;
    a->dtype = "bf16";
    a->replays = 20;
    a->min_m = 1;
    a->max_m = INT_MAX;
    for (int i = 1; i < argc; ++i) {
        const char *flag = argv[i];
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            mkg_bench_usage(stdout);
            exit(0);
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "mkg_bench_gemm: %s needs a value (or is unknown)\n", flag);
            mkg_bench_usage(stderr);
            exit(1);
        }
        const char *value = argv[++i];
        if (strcmp(flag, "--shapes") == 0)
            a->shapes = value;
        else if (strcmp(flag, "--dtype") == 0)
            a->dtype = value;
        else if (strcmp(flag, "--out") == 0)
            a->out = value;
        else if (strcmp(flag, "--commit") == 0)
            a->commit = value;
        else if (strcmp(flag, "--only") == 0)
            a->only = value;
        else if (strcmp(flag, "--table") == 0)
            a->table = value;
        else if (strcmp(flag, "--autotune-out") == 0)
            a->autotune_out = value;
        else if (strcmp(flag, "--replays") == 0)
            a->replays = mkg_bench_int_arg(flag, value);
        else if (strcmp(flag, "--min-m") == 0)
            a->min_m = mkg_bench_int_arg(flag, value);
        else if (strcmp(flag, "--max-m") == 0)
            a->max_m = mkg_bench_int_arg(flag, value);
        else if (strcmp(flag, "--l2-hints") == 0) {
            if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0) {
                fprintf(stderr, "mkg_bench_gemm: --l2-hints takes 0 or 1, not %s\n", value);
                exit(1);
            }
            a->l2_default = strcmp(value, "0") == 0;
        }
        else if (strcmp(flag, "--pdl") == 0)
            a->pdl = mkg_bench_int_arg(flag, value) != 0;
        else if (strcmp(flag, "--sets") == 0) {
            a->sets = mkg_bench_int_arg(flag, value);
            if (a->sets < 2) {
                fprintf(stderr, "mkg_bench_gemm: --sets takes N >= 2, not %s\n", value);
                exit(1);
            }
        }
        else if (strcmp(flag, "--schedules") == 0) {
            /* schedule-name fragments only: the JSON's schedule_filter writes them unescaped */
            if (value[strspn(value, "abcdefghijklmnopqrstuvwxyz0123456789_,")] != '\0') {
                fprintf(stderr, "mkg_bench_gemm: --schedules takes schedule-name fragments (a-z, 0-9, _), "
                                "comma-separated, not %s\n", value);
                exit(1);
            }
            a->schedules = value;
        }
        else if (strcmp(flag, "--sustain") == 0)
            a->sustain_ms = mkg_bench_int_arg(flag, value);
        else if (strcmp(flag, "--dispatch-grid") == 0) {
            if (strcmp(value, "sms") != 0 && strcmp(value, "units") != 0) {
                fprintf(stderr, "mkg_bench_gemm: --dispatch-grid takes sms or units, not %s\n", value);
                exit(1);
            }
            a->dispatch_grid_units = strcmp(value, "units") == 0;
        }
        else if (strcmp(flag, "--kc-min") == 0) {
            a->kc_min = mkg_bench_int_arg(flag, value);
            if (a->kc_min % 128 != 0) {
                fprintf(stderr, "mkg_bench_gemm: --kc-min must be a positive multiple of 128\n");
                exit(1);
            }
        }
        else if (strcmp(flag, "--block-scales") == 0)
            a->block_scales = mkg_bench_int_arg(flag, value) != 0;
        else if (strcmp(flag, "--kc-policy") == 0) {
            if (strcmp(value, "one") != 0 && strcmp(value, "decode") != 0 && strcmp(value, "fixed") != 0 &&
                strcmp(value, "cluster") != 0) {
                fprintf(stderr, "mkg_bench_gemm: --kc-policy takes one, decode, fixed or cluster, not %s\n", value);
                exit(1);
            }
            a->kc_policy = strcmp(value, "decode") == 0    ? MKG_BENCH_KC_DECODE
                           : strcmp(value, "fixed") == 0   ? MKG_BENCH_KC_FIXED
                           : strcmp(value, "cluster") == 0 ? MKG_BENCH_KC_CLUSTER
                                                           : MKG_BENCH_KC_ONE;
        }
        else {
            fprintf(stderr, "mkg_bench_gemm: unknown option %s\n", flag);
            mkg_bench_usage(stderr);
            exit(1);
        }
    }
    if (!a->out) {
        fprintf(stderr, "mkg_bench_gemm: --out PATH is required\n");
        mkg_bench_usage(stderr);
        exit(1);
    }
}

/* The dtypes named by --dtype, into dts; returns how many. */
static int mkg_bench_dtypes(const char *name, mkg_dtype *dts)
{
    if (strcmp(name, "bf16") == 0 || strcmp(name, "fp16") == 0) {
        dts[0] = strcmp(name, "bf16") == 0 ? MKG_DTYPE_BF16 : MKG_DTYPE_FP16;
        return 1;
    }
    if (strcmp(name, "tf32") == 0) {
        dts[0] = MKG_DTYPE_FP32;             /* fp32 operands, tf32 math, fp32 C */
        return 1;
    }
    if (strcmp(name, "e4m3") == 0) {
        dts[0] = MKG_DTYPE_E4M3;             /* FP8 e4m3 operands, per-tensor scales, bf16 C */
        return 1;
    }
    if (strcmp(name, "all") == 0) {
        dts[0] = MKG_DTYPE_BF16;
        dts[1] = MKG_DTYPE_FP16;
        return 2;
    }
    fprintf(stderr, "mkg_bench_gemm: --dtype must be bf16, fp16, tf32, e4m3 or all, got '%s'\n", name);
    exit(1);
}

/* 1 if name is one of the comma-separated names in list (a NULL list holds every name). */
static int mkg_bench_listed(const char *list, const char *name)
{
    const size_t len = strlen(name);
    while (list) {
        const char *comma = strchr(list, ',');
        const size_t n = comma ? (size_t)(comma - list) : strlen(list);
        if (n == len && strncmp(list, name, len) == 0)
            return 1;
        list = comma ? comma + 1 : NULL;
    }
    return 0;
}

/* Every name given to --only must be a row of the shapes file. */
static void mkg_bench_check_only(const char *only, const char *path, const mkg_bench_shape *shapes, int count)
{
    const char *name = only;
    while (name) {
        const char *comma = strchr(name, ',');
        const size_t n = comma ? (size_t)(comma - name) : strlen(name);
        int found = 0;
        for (int i = 0; i < count && !found; ++i)
            found = strlen(shapes[i].name) == n && strncmp(shapes[i].name, name, n) == 0;
        if (!found) {
            fprintf(stderr, "mkg_bench_gemm: --only: no shape named '%.*s' in %s\n", (int)n, name, path);
            exit(1);
        }
        name = comma ? comma + 1 : NULL;
    }
}

static int mkg_bench_selected(const mkg_bench_args *a, const mkg_bench_shape *s, int m)
{
    return (!a->only || mkg_bench_listed(a->only, s->name)) && m >= a->min_m && m <= a->max_m;
}

// ---- main --------------------------------------------------------------------------------

int main(int argc, char **argv)
{
    mkg_bench_args args;
    mkg_bench_shape *shapes = NULL;
    mkg_dtype dts[2];
    int nshapes = 0, total = 0;
    mkg_bench_parse_args(argc, argv, &args);
    const int ndts = mkg_bench_dtypes(args.dtype, dts);
    if (args.sets && args.autotune_out) {
        fprintf(stderr, "mkg_bench_gemm: --sets is a diagnostic; an autotuned table must come from the spec's "
                        "cold-operand timing (no --sets)\n");
        return 1;
    }
    if (args.schedules && args.autotune_out) {
        fprintf(stderr, "mkg_bench_gemm: --schedules is a diagnostic; an autotuned table must time every "
                        "schedule (no --schedules)\n");
        return 1;
    }
    if (mkg_bench_read_shapes(args.shapes, &shapes, &nshapes) != 0)
        return 1;
    if (args.only)
        mkg_bench_check_only(args.only, args.shapes, shapes, nshapes);
    for (int i = 0; i < nshapes; ++i)
        for (int j = 0; j < shapes[i].m_count; ++j)
            total += mkg_bench_selected(&args, &shapes[i], shapes[i].m[j]) ? ndts : 0;
    if (total == 0) {
        fprintf(stderr, "mkg_bench_gemm: no (shape, M) in %s passes --only/--min-m/--max-m\n", args.shapes);
        return 1;
    }

    const mkg_status dev = mkg_device_check();
    if (dev != MKG_OK) {
        fprintf(stderr,
                "mkg_bench_gemm: cannot run: %s (%s). The benchmark needs an NVIDIA Hopper GPU of compute "
                "capability 9.0 (H100/H200).\n",
                mkg_status_string(dev), mkg_status_name(dev));
        return 1;
    }
    if (args.replays < 20)
        fprintf(stderr, "mkg_bench_gemm: note: --replays %d is below the 20 that SPEC section 10 asks for\n",
                args.replays);
    if (args.sets)
        fprintf(stderr, "mkg_bench_gemm: note: --sets %d keeps small rows' operands in the L2 between replays: a "
                        "diagnostic, not SPEC section 10's timing (JSON rotation_sets)\n",
                args.sets);

    mkg_bench_cfg cfg;
    mkg_bench_meta meta;
    mkg_bench_layers layers;
    memset(&meta, 0, sizeof meta);
    memset(&layers, 0, sizeof layers);
    mkg_bench_init(&cfg, args.replays);
    cfg.pdl = args.pdl;
    cfg.sustain_ms = args.sustain_ms;
    cfg.dispatch_grid_units = args.dispatch_grid_units;
    cfg.rotation_sets = args.sets;
    cfg.sched_filter = args.schedules;
    cfg.kc_policy = args.kc_policy;
    cfg.kc_min = args.kc_min;
    cfg.block_scales = args.block_scales;
    cfg.deps_flags = args.l2_default ? MKG_DEPS_L2_DEFAULT : 0u;
    mkg_bench_measure_copy(&cfg);
    if ((args.table || args.autotune_out) && mkg_bench_layers_create(&cfg, shapes, nshapes, &layers) != 0)
        return 1;
    if (args.table) {
        meta.table = args.table;
        meta.table_status = mkg_bench_layers_load(&cfg, &layers, args.table);
        if (meta.table_status == MKG_OK)
            printf("mkg_bench_gemm: dispatching from %s as well (%d layers)\n", args.table, layers.count);
        else
            fprintf(stderr,
                    "mkg_bench_gemm: --table %s: %s (%s); falling back to the cost model: rows are dispatched "
                    "from the cost-model table only and the tuned columns are null\n",
                    args.table, mkg_status_string(meta.table_status), mkg_status_name(meta.table_status));
    }
    mkg_bench_utc_now(meta.date, sizeof meta.date);
    const char *env_commit = getenv("MKG_COMMIT");
    meta.commit = args.commit ? args.commit : env_commit ? env_commit : "unknown";
    printf("mkg_bench_gemm: %s, %d SMs, L2 %d bytes, %d replays, %d rows from %s, commit %s\n", cfg.gpu, cfg.sms,
           cfg.l2_bytes, cfg.replays, total, args.shapes, meta.commit);
    if (cfg.rotation_sets)
        printf("mkg_bench_gemm: %d rotation sets per row (--sets: L2-warm where they fit, a diagnostic)\n",
               cfg.rotation_sets);
    printf("mkg_bench_gemm: K chunks: %s policy (kc_min %d); device-to-device copy %.0f GB/s (read + write)\n",
           mkg_bench_kc_policy_name(&cfg), cfg.kc_min > 0 ? cfg.kc_min : MKG_PLAN_MIN_KC, cfg.copy_gbps);
    fflush(stdout);

    mkg_bench_row *rows = (mkg_bench_row *)calloc(total, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "mkg_bench_gemm: out of host memory\n");
        return 1;
    }
    int done = 0;
    for (int d = 0; d < ndts; ++d)
        for (int i = 0; i < nshapes; ++i)
            for (int j = 0; j < shapes[i].m_count; ++j) {
                const mkg_bench_shape *s = &shapes[i];
                if (!mkg_bench_selected(&args, s, s->m[j]))
                    continue;
                const int layer = layers.have_loaded ? mkg_bench_layers_find(&layers, s->name, dts[d]) : -1;
                const mkg_layer_plan *tuned = layer >= 0 ? &layers.loaded[layer] : NULL;
                mkg_bench_gemm_row_tuned(&cfg, s->name, s->m[j], s->n, s->k, dts[d], tuned, &rows[done]);
                mkg_bench_print_row(&rows[done++]);
            }

    meta.clocks_valid = mkg_bench_read_clocks(&cfg, &meta.sm_mhz, &meta.mem_mhz);
    if (meta.clocks_valid)
        printf("clocks after the runs: sm %d MHz, mem %d MHz\n", meta.sm_mhz, meta.mem_mhz);
    else
        printf("clocks after the runs: unavailable (nvidia-smi gave nothing)\n");
    int failed = mkg_bench_write_json(args.out, &cfg, &meta, rows, done) != 0;
    if (!failed)
        printf("wrote %s\n", args.out);
    if (args.autotune_out) {
        int tuned = 0;
        const mkg_status st = mkg_bench_autotune_save(&cfg, &layers, rows, done, args.autotune_out, &tuned);
        if (st == MKG_OK)
            printf("wrote %s: %d (layer, M bucket) entries from measurements, the rest of %d layers from the "
                   "cost model\n", args.autotune_out, tuned, layers.count);
        else
            fprintf(stderr, "mkg_bench_gemm: --autotune-out %s: %s (%s)\n", args.autotune_out,
                    mkg_status_string(st), mkg_status_name(st));
        failed = failed || st != MKG_OK;
    }
    for (int d = 0; d < ndts; ++d) {
        mkg_bench_print_summary(rows, done, dts[d]);
        mkg_bench_print_stream(&cfg, rows, done, dts[d]);
    }

    mkg_bench_layers_free(&layers);
    mkg_bench_release(&cfg);
    free(rows);
    free(shapes);
    return failed ? 1 : 0;
}
