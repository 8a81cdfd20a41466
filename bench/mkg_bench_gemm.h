/* mkg_bench_gemm.h - the GEMM benchmark engine: every eligible mkgemm schedule
 * against cuBLASLt, side by side in one process (SPEC section 10).
 *
 * One call of mkg_bench_gemm_row() measures one (shape, M, dtype): it allocates
 * rotation sets of (A, B, C) whose total exceeds twice the L2, checks every
 * eligible schedule against an FP64 reference and against each other bitwise,
 * then times each schedule and cuBLASLt's top heuristic candidates as CUDA-graph
 * replays (median of cfg->replays). mkg_bench_gemm and mkg_demo both drive it.
 * Engine calls print the failing call and exit(1) on any CUDA, cuBLASLt or
 * mkgemm error: they are for benchmark programs, never for the library.
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
    cudaStream_t stream;
    cublasLtHandle_t lt;
    void *workspace;            /* MKG_BENCH_WORKSPACE_BYTES of device memory */
} mkg_bench_cfg;

/* Opens the current device (call mkg_device_check() first); exits on failure. */
void mkg_bench_init(mkg_bench_cfg *cfg, int replays);

/* Releases what mkg_bench_init created. */
void mkg_bench_release(mkg_bench_cfg *cfg);

// ---- one measured row ------------------------------------------------------------------

typedef struct mkg_bench_row {
    char shape[MKG_BENCH_NAME_MAX];
    mkg_dtype dtype;            /* input and output dtype */
    int m, n, k;
    int kc;                     /* the layer's canonical K chunk (mkg_plan_kc) */
    int oracle;                 /* fastest eligible schedule */
    double mkg_us;              /* the dispatched schedule; the oracle until dispatch exists */
    double oracle_us;
    double cublas_us;           /* cuBLASLt heuristic #0 */
    double cublas_best_us;      /* best of the cuBLASLt candidates */
    int cublas_algos;           /* cuBLASLt candidates timed */
    double max_rel_err;         /* oracle vs FP64 reference; INFINITY if any output is non-finite */
    double cublas_max_rel_err;  /* cuBLASLt heuristic #0 vs the same reference */
    int bitexact;               /* 1: every eligible schedule wrote the same bits */
    double tflops;              /* of mkg_us */
    int eligible[MKG_SCHED_COUNT];      /* 1: timed and checked */
    double sched_us[MKG_SCHED_COUNT];   /* microseconds per GEMM, eligible schedules */
    double sched_err[MKG_SCHED_COUNT];  /* max_rel_err, eligible schedules */
    int mismatch[MKG_SCHED_COUNT];      /* 1: C differs bitwise from the first eligible schedule */
} mkg_bench_row;

/* 1 if the benchmark runs schedule s on d (the rules are commented inside). */
int mkg_bench_schedule_eligible(const mkg_gemm_desc *d, int s);

/* Measures C[m x n] = A[m x k] . B[n x k]^T in dtype dt into *out. */
void mkg_bench_gemm_row(const mkg_bench_cfg *cfg, const char *shape, int m, int n, int k, mkg_dtype dt,
                        mkg_bench_row *out);

/* cublas_best_us / mkg_us: above 1 means mkgemm is faster. */
double mkg_bench_ratio(const mkg_bench_row *r);

/* One human-readable line for a row, flushed. */
void mkg_bench_print_row(const mkg_bench_row *r);

/* Per dtype: geomean ratio over M >= 512, the minimum ratio and its row, the ratio at square_8192. */
void mkg_bench_print_summary(const mkg_bench_row *rows, int count, mkg_dtype dt);

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

// ---- results JSON ----------------------------------------------------------------------

/* Top-level fields of a results file. */
typedef struct mkg_bench_meta {
    const char *commit;
    char date[32];              /* UTC ISO-8601 */
    int clocks_valid;           /* 0: clocks_mhz is written as null */
    int sm_mhz, mem_mhz;
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
