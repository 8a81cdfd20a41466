/* mkg_bench_gemm.h - the GEMM benchmark engine: every eligible mkgemm schedule, the
 * device-dispatched path and cuBLASLt, side by side in one process (SPEC section 10).
 *
 * mkg_bench_gemm_row() measures one (shape, M, dtype) on rotation sets of (A, B, C) over
 * twice the L2: schedules against an FP64 reference and each other bitwise, then every
 * schedule, the dispatch kernel on a cost-model table (and on a loaded plan) and
 * cuBLASLt's candidates as interleaved CUDA-graph replays, then the dispatched bits against
 * the oracle's. mkg_bench_layers is the layer list of autotune's table files.
 * Engine calls print the failing call and exit(1) on any error: benchmark programs only.
 */
#ifndef MKG_BENCH_GEMM_H
#define MKG_BENCH_GEMM_H

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "mkgemm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MKG_BENCH_NAME_MAX 64                   /* shape name, with its terminating NUL */
#define MKG_BENCH_MAX_MS 64                     /* M values on one shapes-file row */
#define MKG_BENCH_LT_ALGOS 8                    /* cuBLASLt heuristic candidates asked for */
#define MKG_BENCH_WORKSPACE_BYTES (64u << 20)   /* cuBLASLt workspace */

// ---- configuration ---------------------------------------------------------------------

/* What every row shares: the device, one stream, one cuBLASLt handle and workspace. */
typedef struct mkg_bench_cfg {
    int replays;                /* timed graph replays per candidate (SPEC: >= 20) */
    double target_replay_us;    /* one replay runs at least this long when L allows */
    int device;
    int sms;
    int l2_bytes;
    char gpu[256];
    mkg_gpu_info info;          /* name and SM count, as table files and mkg_table_create key them */
    cudaStream_t stream;
    cublasLtHandle_t lt;
    void *workspace;            /* MKG_BENCH_WORKSPACE_BYTES of device memory */
    float *fp8_scales;          /* device: e4m3 rows' per-tensor scales of A and B (cuBLASLt reads them) */
    int pdl;                    /* 1: also time every schedule launched with MKG_LAUNCH_FLAG_PDL */
    int sustain_ms;             /* > 0: also run the oracle and cuBLASLt's best alone this long each,
                                   sampling the SM clock and board power (mkg_bench_sustain) */
    int dispatch_grid_units;    /* 1: the dispatch kernel launches min(SMs, units of the planned
                                   schedule) CTAs, a diagnostic (the host reads the plan); 0: SMs */
    const char *sched_filter;   /* --schedules: only schedules whose name holds one of these comma-separated
                                   substrings are timed (a diagnostic, e.g. for ncu); NULL: all */
    int rotation_sets;          /* >= 2: this many rotation sets per row (--sets, a diagnostic); 0: enough
                                   to cover twice the L2 (mkg_bench_rotation_sets) */
    int kc_policy;              /* each layer's canonical K chunk: MKG_BENCH_KC_ONE (mkg_plan_kc, the
                                   library default), MKG_BENCH_KC_DECODE (mkg_plan_kc_decode) or
                                   MKG_BENCH_KC_FIXED (kc_min for every layer) or MKG_BENCH_KC_CLUSTER
                                   (mkg_plan_kc_cluster) */
    int kc_min;                 /* decode policy: smallest chunk; fixed: the chunk (MKG_PLAN_MIN_KC unless
                                   --kc-min) */
    int block_scales;           /* e4m3 rows: 1 x 128 activation and 128 x 128 weight block scales
                                   (kc = 128, chunk-capable schedules); cuBLASLt stays per-tensor FP8 */
    unsigned int deps_flags;    /* every desc's and layer's deps.flags: MKG_DEPS_L2_DEFAULT under --l2-hints 0 */
    double copy_gbps;           /* device-to-device cudaMemcpy, (read + written) bytes / s / 1e9,
                                   best of several 256 MB copies (mkg_bench_measure_copy) */
} mkg_bench_cfg;

#define MKG_BENCH_KC_ONE    0
#define MKG_BENCH_KC_DECODE 1
#define MKG_BENCH_KC_FIXED  2
#define MKG_BENCH_KC_CLUSTER 3

/* The canonical K chunk of an N x K layer under cfg->kc_policy (from N and K alone). */
int mkg_bench_layer_kc(const mkg_bench_cfg *cfg, int n, int k);

/* cfg->kc_policy as the JSON and the log name it: "one", "decode", "fixed" or "cluster". */
const char *mkg_bench_kc_policy_name(const mkg_bench_cfg *cfg);

/* Measures cfg->copy_gbps (the weight-streaming yardstick of the decode rows). */
void mkg_bench_measure_copy(mkg_bench_cfg *cfg);

/* Opens the current device (call mkg_device_check() first) and readies the dispatch
 * kernel; exits on failure. */
void mkg_bench_init(mkg_bench_cfg *cfg, int replays);

/* Releases what mkg_bench_init created. */
void mkg_bench_release(mkg_bench_cfg *cfg);

// ---- one measured row ------------------------------------------------------------------

/* One candidate replayed alone for cfg->sustain_ms (the second half is measured): time per
 * GEMM and the SM clock, board power and clock-event reasons NVML reported meanwhile. */
typedef struct mkg_bench_sustained {
    int valid;                  /* 0: not run, or NVML unavailable (then only us is set) */
    double us;                  /* median microseconds per GEMM over the measured replays */
    double sm_mhz;              /* mean SM clock over the measured half */
    double watts;               /* mean board power over the measured half */
    double mcycles;             /* us * sm_mhz / 1e6: SM megacycles per GEMM (clock-free cost) */
    unsigned long long reasons; /* OR of NVML clock-event reasons seen (0x4 SW power cap, ...) */
    int samples;
} mkg_bench_sustained;

typedef struct mkg_bench_row {
    char shape[MKG_BENCH_NAME_MAX];
    mkg_dtype dtype;            /* input and output dtype */
    int m, n, k;
    int kc;                     /* the layer's canonical K chunk (mkg_plan_kc) */
    int schedule;               /* dispatched: the cost-model table's schedule for M's bucket */
    double mkg_us;              /* the dispatch kernel running from the cost-model table */
    int dispatch_bitexact;      /* 1: the dispatched C has the oracle's bits */
    int oracle;                 /* fastest eligible schedule */
    double oracle_us;
    int tuned;                  /* 1: a loaded plan was dispatched too (tuned_* hold it) */
    int tuned_schedule;         /* the loaded table's schedule for M's bucket */
    double tuned_us;            /* the dispatch kernel running from the loaded plan */
    int tuned_bitexact;         /* 1: its C has the oracle's bits */
    double cublas_us;           /* cuBLASLt heuristic #0 */
    double cublas_best_us;      /* best of the cuBLASLt candidates */
    int cublas_algos;           /* cuBLASLt candidates timed */
    int cublas_block_scaled;    /* > 0: cuBLASLt ran FP8 with block scales too, in this form of
                                   mkg_bench_lt_plan_try (else 0: per-tensor) */
    double max_rel_err;         /* oracle (= dispatched when bitexact) vs FP64 reference; INFINITY if non-finite */
    double cublas_max_rel_err;  /* cuBLASLt heuristic #0 vs the same reference */
    int bitexact;               /* 1: every eligible schedule wrote the same bits */
    double tflops;              /* of mkg_us */
    int eligible[MKG_SCHED_COUNT];      /* 1: timed and checked */
    double sched_us[MKG_SCHED_COUNT];   /* microseconds per GEMM, eligible schedules */
    double pdl_us[MKG_SCHED_COUNT];     /* the same launched with MKG_LAUNCH_FLAG_PDL */
    int oracle_pdl;                     /* fastest eligible schedule under PDL launches */
    double oracle_pdl_us;
    int pdl_bitexact;                   /* 1: every PDL launch wrote the plain launch's bits */
    int cublas_best;                    /* index of the fastest cuBLASLt candidate */
    mkg_bench_sustained sustained[2];   /* cfg->sustain_ms > 0: [0] the oracle, [1] cuBLASLt's best */
    double sched_err[MKG_SCHED_COUNT];  /* max_rel_err, eligible schedules */
    int mismatch[MKG_SCHED_COUNT];      /* 1: C differs bitwise from the first eligible schedule */
} mkg_bench_row;

/* 1 if the benchmark runs schedule s on d (the rules are commented inside). */
int mkg_bench_schedule_eligible(const mkg_gemm_desc *d, int s);

/* Measures C[m x n] = A[m x k] . B[n x k]^T in dtype dt into *out; tuned, when not NULL,
 * is this layer's plan from a loaded table file (kc = the row's kc, at least M's bucket),
 * dispatched as a second mode. */
void mkg_bench_gemm_row_tuned(const mkg_bench_cfg *cfg, const char *shape, int m, int n, int k, mkg_dtype dt,
                              const mkg_layer_plan *tuned, mkg_bench_row *out);

/* mkg_bench_gemm_row_tuned without a loaded plan. */
void mkg_bench_gemm_row(const mkg_bench_cfg *cfg, const char *shape, int m, int n, int k, mkg_dtype dt,
                        mkg_bench_row *out);

/* cublas_best_us / mkg_us: above 1 means mkgemm (dispatched) is faster. */
double mkg_bench_ratio(const mkg_bench_row *r);

/* One human-readable line for a row, flushed. */
void mkg_bench_print_row(const mkg_bench_row *r);

/* Per dtype: geomean cublas_best_us / mkg_us over M >= 512 and its worst row, the minimum
 * over all rows, square_8192, the cost-model pick against the oracle (oracle_us / mkg_us)
 * and, for rows with a loaded plan, the same for the tuned pick. */
void mkg_bench_print_summary(const mkg_bench_row *rows, int count, mkg_dtype dt);

/* Decode weight streaming (issue 4's yardstick): over rows of dtype dt with M <= 16 and a weight
 * matrix of at least 32 MB, weight bytes per second of the oracle and of cuBLASLt's best as a
 * fraction of cfg->copy_gbps. */
void mkg_bench_print_stream(const mkg_bench_cfg *cfg, const mkg_bench_row *rows, int count, mkg_dtype dt);

// ---- shapes file -----------------------------------------------------------------------

/* One row of a shapes CSV: `name,N,K,M values space-separated`. */
typedef struct mkg_bench_shape {
    char name[MKG_BENCH_NAME_MAX];
    int n, k;
    int m_count;
    int m[MKG_BENCH_MAX_MS];
} mkg_bench_shape;

/* Reads path into a malloc'd array (*out, *count); prints file:line and returns -1 on error. */
int mkg_bench_read_shapes(const char *path, mkg_bench_shape **out, int *count);

// ---- layer list of the table files -----------------------------------------------------

/* The layers a table file describes, fixed by the shapes file alone (never by --dtype,
 * --only or the M filters, so any run over the same shapes file can read it): for bf16,
 * then fp16, one layer per distinct shape name in file order, with that row's N and K,
 * output dtype = input dtype, kc = mkg_plan_kc, invariant mode, m_max = the largest M
 * of the name. NOTE: these layers are only planned, saved and loaded, never uploaded,
 * so a, b and c point at one placeholder that passes validation. */
typedef struct mkg_bench_layers {
    int count;
    mkg_layer_desc *layers;
    char (*names)[MKG_BENCH_NAME_MAX];  /* shape name of each layer */
    mkg_layer_plan *cost;               /* cost-model plans (mkg_layers_plan) */
    mkg_layer_plan *loaded;             /* the --table file's plans; valid when have_loaded */
    int have_loaded;
    void *placeholder;
} mkg_bench_layers;

/* Builds the list for shapes with cost-model plans; prints why and returns -1 when a
 * name repeats with another N or K, or the library refuses a layer. */
int mkg_bench_layers_create(const mkg_bench_cfg *cfg, const mkg_bench_shape *shapes, int count,
                            mkg_bench_layers *out);

void mkg_bench_layers_free(mkg_bench_layers *l);

/* Index of layer (shape, dt), or -1. */
int mkg_bench_layers_find(const mkg_bench_layers *l, const char *shape, mkg_dtype dt);

/* Reads a table file into l->loaded (mkg_table_load, keyed by cfg's GPU name and SM
 * count); on failure returns its status and leaves have_loaded at 0. */
mkg_status mkg_bench_layers_load(const mkg_bench_cfg *cfg, mkg_bench_layers *l, const char *path);

/* Autotune: for every layer and every bucket in which rows of the layer's (N, K, dtype)
 * were measured, the eligible schedule with the least summed time over those rows;
 * every other bucket keeps the cost-model plan. Writes path with mkg_table_save;
 * *tuned gets the number of measured buckets. */
mkg_status mkg_bench_autotune_save(const mkg_bench_cfg *cfg, const mkg_bench_layers *l, const mkg_bench_row *rows,
                                   int count, const char *path, int *tuned);

// ---- results JSON ----------------------------------------------------------------------

/* Top-level fields of a results file. */
typedef struct mkg_bench_meta {
    const char *commit;
    char date[32];              /* UTC ISO-8601 */
    int clocks_valid;           /* 0: clocks_mhz is written as null */
    int sm_mhz, mem_mhz;
    const char *table;          /* --table FILE, or NULL: written as "table": null */
    mkg_status table_status;    /* what mkg_table_load said about it */
} mkg_bench_meta;

/* Current UTC time as ISO-8601 (YYYY-MM-DDTHH:MM:SSZ). */
void mkg_bench_utc_now(char *buf, size_t size);

/* SM and memory clocks of cfg's device from nvidia-smi; 0 if unavailable. */
int mkg_bench_read_clocks(const mkg_bench_cfg *cfg, int *sm_mhz, int *mem_mhz);

/* Writes the results JSON; returns -1 (after printing why) if path cannot be written. */
int mkg_bench_write_json(const char *path, const mkg_bench_cfg *cfg, const mkg_bench_meta *meta,
                         const mkg_bench_row *rows, int count);

#ifdef __cplusplus
}
#endif
#endif /* MKG_BENCH_GEMM_H */
