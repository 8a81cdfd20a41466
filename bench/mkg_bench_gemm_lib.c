/* mkg_bench_gemm_lib.c - the GEMM benchmark engine declared in mkg_bench_gemm.h.
 *
 * A row reads top to bottom: allocate R rotation sets of (A, B, C), one mkgemm op per set
 * and one uploaded layer table per plan (a layer per set), ask cuBLASLt for its candidates,
 * check the schedules (FP64 reference on the first and last rows, bitwise across them),
 * time every candidate under interleaved CUDA-graph replay, check the dispatched C against
 * the oracle's bits, free everything. Then come the report, the shapes-file reader, the
 * layer list and autotune of the table files, and the results JSON. CUDA calls go through
 * MKG_CUDA_CHECK, cuBLASLt calls through MKG_BENCH_LT_CHECK, mkgemm calls through MKG_BENCH_MKG_CHECK.
 */
#define _POSIX_C_SOURCE 200809L     /* popen, pclose, gmtime_r */

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mkg_bench_dispatch.h"
#include "mkg_bench_gemm.h"

/* e4m3 rows: per-tensor scales (powers of two, so the reference scales exactly). */
#define MKG_BENCH_FP8_A_SCALE 0.5f
#define MKG_BENCH_FP8_B_SCALE 0.25f
#include "mkg_check.h"
#include "mkg_harness.h"

#define MKG_BENCH_TARGET_REPLAY_US 200.0    /* one timed replay runs at least this long */
#define MKG_BENCH_MAX_LAUNCHES 1024         /* cap on L, the launches captured in one graph */
#define MKG_BENCH_WARMUPS 3                 /* untimed replays before the timed ones */
#define MKG_BENCH_PROBE_REPLAYS 3           /* timed replays of the probe graph that sizes L */
#define MKG_BENCH_REF_ROWS 128              /* reference rows at each end of C */
#define MKG_BENCH_ALIGN 256                 /* byte alignment of each rotation-set slice */

// ---- error checks -----------------------------------------------------------------------

static void mkg_bench_check_lt(cublasStatus_t st, const char *what, const char *file, int line)
{
    if (st != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, what, cublasLtGetStatusName(st),
                cublasLtGetStatusString(st));
        exit(1);
    }
}

static void mkg_bench_check_mkg(mkg_status st, const char *what, const char *file, int line)
{
    if (st != MKG_OK) {
        fprintf(stderr, "%s:%d: %s failed: %s: %s\n", file, line, what, mkg_status_name(st), mkg_status_string(st));
        exit(1);
    }
}

#define MKG_BENCH_LT_CHECK(call) mkg_bench_check_lt((call), #call, __FILE__, __LINE__)
#define MKG_BENCH_MKG_CHECK(call) mkg_bench_check_mkg((call), #call, __FILE__, __LINE__)

static void *mkg_bench_calloc(size_t count, size_t size)
{
    void *p = calloc(count, size);
    if (!p) {
        fprintf(stderr, "mkg_bench: out of host memory (%zu x %zu bytes)\n", count, size);
        exit(1);
    }
    return p;
}

// ---- configuration ----------------------------------------------------------------------

void mkg_bench_init(mkg_bench_cfg *cfg, int replays)
{
    struct cudaDeviceProp prop;
    memset(cfg, 0, sizeof *cfg);
    cfg->replays = replays;
    cfg->target_replay_us = MKG_BENCH_TARGET_REPLAY_US;
    MKG_CUDA_CHECK(cudaGetDevice(&cfg->device));
    MKG_CUDA_CHECK(cudaGetDeviceProperties(&prop, cfg->device));
    snprintf(cfg->gpu, sizeof cfg->gpu, "%s", prop.name);
    MKG_CUDA_CHECK(cudaDeviceGetAttribute(&cfg->sms, cudaDevAttrMultiProcessorCount, cfg->device));
    /* NOTE: the same key mkg_table_create builds for its cost-model plans. */
    snprintf(cfg->info.name, sizeof cfg->info.name, "%.95s", prop.name);
    cfg->info.sms = prop.multiProcessorCount;
    MKG_CUDA_CHECK(cudaDeviceGetAttribute(&cfg->l2_bytes, cudaDevAttrL2CacheSize, cfg->device));
    MKG_CUDA_CHECK(cudaStreamCreateWithFlags(&cfg->stream, cudaStreamNonBlocking));
    MKG_BENCH_LT_CHECK(cublasLtCreate(&cfg->lt));
    MKG_CUDA_CHECK(cudaMalloc(&cfg->workspace, MKG_BENCH_WORKSPACE_BYTES));
    /* NOTE: each scale on its own 16-byte slot ([0] A, [4] B): cuBLASLt reads them by pointer. */
    const float scales[8] = {MKG_BENCH_FP8_A_SCALE, 0, 0, 0, MKG_BENCH_FP8_B_SCALE, 0, 0, 0};
    MKG_CUDA_CHECK(cudaMalloc((void **)&cfg->fp8_scales, sizeof scales));
    MKG_CUDA_CHECK(cudaMemcpy(cfg->fp8_scales, scales, sizeof scales, cudaMemcpyHostToDevice));
    MKG_CUDA_CHECK(mkg_bench_dispatch_init());
    if (!mkg_bench_dispatch_available())
        printf("note: built without the dispatch kernel (MKG_BENCH_DISPATCH=OFF): \"dispatched\" is the oracle\n");
}

int mkg_bench_layer_kc(const mkg_bench_cfg *cfg, int n, int k)
{
    const int kc_min = cfg->kc_min > 0 ? cfg->kc_min : MKG_PLAN_MIN_KC;
    if (cfg->kc_policy == MKG_BENCH_KC_FIXED)
        return kc_min < k ? kc_min : k;
    if (cfg->kc_policy == MKG_BENCH_KC_CLUSTER)
        return mkg_plan_kc_cluster(n, k, cfg->sms);
    if (cfg->kc_policy != MKG_BENCH_KC_DECODE)
        return mkg_plan_kc(n, k, cfg->sms);
    return mkg_plan_kc_decode_min(n, k, cfg->sms, kc_min);
}

const char *mkg_bench_kc_policy_name(const mkg_bench_cfg *cfg)
{
    return cfg->kc_policy == MKG_BENCH_KC_DECODE    ? "decode"
           : cfg->kc_policy == MKG_BENCH_KC_FIXED   ? "fixed"
           : cfg->kc_policy == MKG_BENCH_KC_CLUSTER ? "cluster"
                                                    : "one";
}

void mkg_bench_measure_copy(mkg_bench_cfg *cfg)
{
    const size_t bytes = (size_t)256 << 20;
    void *src = NULL, *dst = NULL;
    cudaEvent_t e0, e1;
    MKG_CUDA_CHECK(cudaMalloc(&src, bytes));
    MKG_CUDA_CHECK(cudaMalloc(&dst, bytes));
    MKG_CUDA_CHECK(cudaMemsetAsync(src, 1, bytes, cfg->stream));
    MKG_CUDA_CHECK(cudaEventCreate(&e0));
    MKG_CUDA_CHECK(cudaEventCreate(&e1));
    float best = 0.0f;
    for (int i = 0; i < 12; ++i) {
        MKG_CUDA_CHECK(cudaEventRecord(e0, cfg->stream));
        MKG_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cfg->stream));
        MKG_CUDA_CHECK(cudaEventRecord(e1, cfg->stream));
        MKG_CUDA_CHECK(cudaEventSynchronize(e1));
        float ms = 0.0f;
        MKG_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (i >= 2 && (best == 0.0f || ms < best))
            best = ms;                                   /* the first two warm up */
    }
    /* NOTE: a copy reads and writes every byte (bandwidthTest's device-to-device convention). */
    cfg->copy_gbps = 2.0 * (double)bytes / ((double)best * 1e-3) / 1e9;
    MKG_CUDA_CHECK(cudaEventDestroy(e0));
    MKG_CUDA_CHECK(cudaEventDestroy(e1));
    MKG_CUDA_CHECK(cudaFree(src));
    MKG_CUDA_CHECK(cudaFree(dst));
}

void mkg_bench_release(mkg_bench_cfg *cfg)
{
    MKG_CUDA_CHECK(cudaFree(cfg->workspace));
    MKG_CUDA_CHECK(cudaFree(cfg->fp8_scales));
    MKG_BENCH_LT_CHECK(cublasLtDestroy(cfg->lt));
    MKG_CUDA_CHECK(cudaStreamDestroy(cfg->stream));
}

// ---- one problem: rotation sets, layer tables and the cuBLASLt plan ----------------------

/* One rotation set: dense A (m x k, lda = k), B (n x k, ldb = k), C (m x n, ldc = n). */
typedef struct mkg_bench_set {
    void *a, *b, *c;
    mkg_gemm_op *op;
} mkg_bench_set;

/* cuBLASLt's view of the same GEMM and its heuristic candidates. */
typedef struct mkg_bench_lt_plan {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t mat_a, mat_b, mat_c;  /* its A is our B, its B is our A, its D is C^T */
    cublasLtMatmulHeuristicResult_t algos[MKG_BENCH_LT_ALGOS];
    int count;
    int block;                                    /* 1: FP8 with block scales (VEC128 / BLK128x128) */
    int swap;                                     /* 1: its A is our A and its B our B, D row-major = C */
} mkg_bench_lt_plan;

typedef struct mkg_bench_problem {
    int m, n, k;
    int kc;                             /* the layer's canonical K chunk (invariant mode) */
    unsigned int deps_flags;            /* cfg->deps_flags: every desc's and layer's deps.flags */
    mkg_dtype dt;                       /* input dtype */
    mkg_dtype ct;                       /* output dtype: dt, or bf16 for e4m3 inputs */
    size_t esize, c_esize;
    size_t a_bytes, b_bytes, c_bytes;
    int nsets;
    void *a_all, *b_all, *c_all;        /* nsets slices each, MKG_BENCH_ALIGN-aligned */
    float *bsa, *bsb;                   /* e4m3 block scales (cfg->block_scales), shared by every set */
    mkg_bench_set *sets;
    mkg_table *table[2];                /* layer i = set i; [0]: cost model, [1]: loaded plan or NULL */
    int dispatch_grid[2];               /* CTAs of the dispatch kernel for table[0] / table[1] */
    mkg_bench_lt_plan lt;
} mkg_bench_problem;

static size_t mkg_bench_round_up(size_t bytes)
{
    return (bytes + MKG_BENCH_ALIGN - 1) / MKG_BENCH_ALIGN * MKG_BENCH_ALIGN;
}

/* R = max(2, ceil(2 * L2 / bytes per set)): a set has left the L2 before it comes back; or
 * cfg->rotation_sets where --sets gave it (a diagnostic). */
static int mkg_bench_rotation_sets(const mkg_bench_cfg *cfg, size_t set_bytes)
{
    if (cfg->rotation_sets >= 2)
        return cfg->rotation_sets;
    const size_t need = 2 * (size_t)cfg->l2_bytes;
    const size_t r = (need + set_bytes - 1) / set_bytes;
    return r < 2 ? 2 : (int)r;
}

/* A fresh seed per (shape, M, dtype): FNV-1a of the name, mixed with M and the dtype. */
static unsigned long long mkg_bench_seed(const char *shape, int m, mkg_dtype dt)
{
    unsigned long long h = 1469598103934665603ull;
    for (const char *s = shape; *s; ++s)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ^ ((unsigned long long)m << 24) ^ ((unsigned long long)dt << 56);
}

static mkg_gemm_desc mkg_bench_desc(const mkg_bench_problem *p, const mkg_bench_set *s)
{
    mkg_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.m = p->m;
    d.n = p->n;
    d.k = p->k;
    d.a_type = d.b_type = p->dt;
    d.c_type = p->ct;
    d.a_scale = MKG_BENCH_FP8_A_SCALE;
    d.b_scale = MKG_BENCH_FP8_B_SCALE;
    d.a = s->a;
    d.b = s->b;
    d.c = s->c;
    d.lda = p->k;
    d.ldb = p->k;
    d.ldc = p->n;
    d.epilogue = MKG_EPI_STORE;
    d.kc = p->kc;
    d.deps.flags = p->deps_flags;
    d.a_block_scales = p->bsa;                  /* NULL unless --block-scales */
    d.ld_a_block_scales = p->m;
    d.b_block_scales = p->bsb;
    if (p->bsa)                                 /* block-scaled rows: no per-tensor factor on top, */
        d.a_scale = d.b_scale = 1.0f;           /* as cuBLASLt's block-scaled GEMM has none */
    return d;
}

/* Allocates the R sets as slices of three buffers, fills A and B (never zeros) and creates one op per set. */
static void mkg_bench_alloc_sets(const mkg_bench_cfg *cfg, mkg_bench_problem *p, unsigned long long seed)
{
    const size_t sa = mkg_bench_round_up(p->a_bytes), sb = mkg_bench_round_up(p->b_bytes);
    const size_t sc = mkg_bench_round_up(p->c_bytes);
    MKG_CUDA_CHECK(cudaMalloc(&p->a_all, sa * p->nsets));
    MKG_CUDA_CHECK(cudaMalloc(&p->b_all, sb * p->nsets));
    MKG_CUDA_CHECK(cudaMalloc(&p->c_all, sc * p->nsets));
    if (cfg->block_scales && p->dt == MKG_DTYPE_E4M3) {
        const long long kb = (p->k + 127) / 128, nb = (p->n + 127) / 128;
        MKG_CUDA_CHECK(cudaMalloc((void **)&p->bsa, (size_t)(kb * p->m) * sizeof(float)));
        MKG_CUDA_CHECK(cudaMalloc((void **)&p->bsb, (size_t)(kb * nb) * sizeof(float)));
        MKG_CUDA_CHECK(mkg_fill_scales(p->bsa, kb * p->m, seed ^ 0xb5ull, 0.5f, 2.0f, cfg->stream));
        MKG_CUDA_CHECK(mkg_fill_scales(p->bsb, kb * nb, seed ^ 0xb6ull, 0.5f, 2.0f, cfg->stream));
    }
    p->sets = (mkg_bench_set *)mkg_bench_calloc(p->nsets, sizeof *p->sets);
    for (int i = 0; i < p->nsets; ++i) {
        mkg_bench_set *s = &p->sets[i];
        s->a = (char *)p->a_all + sa * i;
        s->b = (char *)p->b_all + sb * i;
        s->c = (char *)p->c_all + sc * i;
        MKG_CUDA_CHECK(mkg_fill_random(s->a, p->dt, p->m, p->k, p->k, seed + 2 * i, 1.0f, cfg->stream));
        MKG_CUDA_CHECK(mkg_fill_random(s->b, p->dt, p->n, p->k, p->k, seed + 2 * i + 1, 1.0f, cfg->stream));
        MKG_CUDA_CHECK(cudaMemsetAsync(s->c, 0, p->c_bytes, cfg->stream));
        const mkg_gemm_desc d = mkg_bench_desc(p, s);
        MKG_BENCH_MKG_CHECK(mkg_gemm_create(&d, &s->op));
    }
    /* Once per run: how many clusters the cluster rows get (a persistent grid that did
     * not fit at once would run its clusters one after another). */
    static int cluster_note_done = 0;
    for (int c = 0; c < MKG_SCHED_COUNT && !cluster_note_done; ++c)
        if (mkg_schedule_get(c)->cluster > 1) {
            printf("note: cluster rows get %d clusters of %d resident at once\n",
                   mkg_gemm_cluster_fit(p->sets[0].op, c), mkg_schedule_get(c)->cluster);
            cluster_note_done = 1;
        }
    MKG_CUDA_CHECK(cudaStreamSynchronize(cfg->stream));
}

/* Row-major C (m x n) = A . B^T is column-major D (n x m) = op(B) . A, so cuBLASLt's
 * A is our B (k x n column-major, ld = ldb, TRANSA = T), its B is our A (k x m
 * column-major, ld = lda, TRANSB = N) and D = C is n x m column-major with ld = ldc. */
/* One attempt: block = 1 asks for FP8 block scaling, with 128 x 128 blocks on the weights (p->bsb)
 * and 1 x 128 blocks on the activations (p->bsa), in the layouts our kernels read. block = 1 keeps
 * the roles above (cuBLASLt's A is our B) with fast accumulation, as per-tensor FP8 runs. block = 2
 * is the form of NVIDIA's LtBlk128x128Fp8Matmul sample: cuBLASLt's A is our A (VEC128, the 1 x 128
 * activation scales), its B our B (BLK128x128), no fast accumulation, and D row-major, which is
 * our C. block = 3 is block = 1 without fast accumulation. NOTE: cuBLASLt 13.0 found no block-scaled
 * algorithm in form 1 on the H200 or the H100 (sessions 41-42); forms 2 and 3 were written without
 * a GPU and are tried first. That cuBLASLt reads our scale layouts is a guess, checked by the row's
 * cublas_max_rel_err against the block-scaled reference; the timing does not depend on it.
 * Returns the candidates that run (0: none, or this form is not supported). */
static int mkg_bench_lt_plan_try(const mkg_bench_cfg *cfg, mkg_bench_problem *p, int block)
{
    const cudaDataType_t t = p->dt == MKG_DTYPE_BF16 ? CUDA_R_16BF : p->dt == MKG_DTYPE_FP16 ? CUDA_R_16F
                           : p->dt == MKG_DTYPE_E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_32F;
    const cudaDataType_t tc = p->ct == MKG_DTYPE_BF16 ? CUDA_R_16BF : p->ct == MKG_DTYPE_FP16 ? CUDA_R_16F : CUDA_R_32F;
    const cublasComputeType_t compute = p->dt == MKG_DTYPE_FP32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const cublasOperation_t trans = CUBLAS_OP_T, no_trans = CUBLAS_OP_N;
    const uint64_t workspace = MKG_BENCH_WORKSPACE_BYTES;
    cublasLtMatmulHeuristicResult_t found[MKG_BENCH_LT_ALGOS];
    cublasLtMatmulPreference_t pref;
    int returned = 0;
    mkg_bench_lt_plan *lt = &p->lt;

    MKG_BENCH_LT_CHECK(cublasLtMatmulDescCreate(&lt->desc, compute, CUDA_R_32F));
    MKG_BENCH_LT_CHECK(cublasLtMatmulDescSetAttribute(lt->desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans));
    MKG_BENCH_LT_CHECK(
        cublasLtMatmulDescSetAttribute(lt->desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof no_trans));
    if (p->dt == MKG_DTYPE_E4M3) {
        /* FP8: per-tensor scales by device pointer (cuBLASLt's A is our B), and fast
         * accumulation, which keeps the sum in the tensor cores as our kernels do. */
        const int8_t fast = block == 0 || block == 1;
        const float *lt_a_scale = block == 2 ? p->bsa : block ? p->bsb : cfg->fp8_scales + 4;
        const float *lt_b_scale = block == 2 ? p->bsb : block ? p->bsa : cfg->fp8_scales;
        if (block) {
            const int32_t mode_a = block == 2 ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F
                                              : CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
            const int32_t mode_b = block == 2 ? CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F
                                              : CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
            MKG_BENCH_LT_CHECK(
                cublasLtMatmulDescSetAttribute(lt->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode_a, sizeof mode_a));
            MKG_BENCH_LT_CHECK(
                cublasLtMatmulDescSetAttribute(lt->desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode_b, sizeof mode_b));
        }
        MKG_BENCH_LT_CHECK(cublasLtMatmulDescSetAttribute(lt->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                          &lt_a_scale, sizeof lt_a_scale));
        MKG_BENCH_LT_CHECK(cublasLtMatmulDescSetAttribute(lt->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                          &lt_b_scale, sizeof lt_b_scale));
        MKG_BENCH_LT_CHECK(
            cublasLtMatmulDescSetAttribute(lt->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
    }
    lt->swap = block == 2;
    MKG_BENCH_LT_CHECK(cublasLtMatrixLayoutCreate(&lt->mat_a, t, p->k, lt->swap ? p->m : p->n, p->k));
    MKG_BENCH_LT_CHECK(cublasLtMatrixLayoutCreate(&lt->mat_b, t, p->k, lt->swap ? p->n : p->m, p->k));
    if (lt->swap) {
        /* D = A^T B is M x N: row-major with ld = N is our C. */
        const int32_t row = CUBLASLT_ORDER_ROW;
        MKG_BENCH_LT_CHECK(cublasLtMatrixLayoutCreate(&lt->mat_c, tc, p->m, p->n, p->n));
        MKG_BENCH_LT_CHECK(cublasLtMatrixLayoutSetAttribute(lt->mat_c, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof row));
    } else {
        MKG_BENCH_LT_CHECK(cublasLtMatrixLayoutCreate(&lt->mat_c, tc, p->n, p->m, p->n));
    }

    MKG_BENCH_LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    MKG_BENCH_LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                            &workspace, sizeof workspace));
    const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(cfg->lt, lt->desc, lt->mat_a, lt->mat_b, lt->mat_c,
                                                             lt->mat_c, pref, MKG_BENCH_LT_ALGOS, found, &returned);
    if (hs != CUBLAS_STATUS_SUCCESS) {
        if (!block)
            MKG_BENCH_LT_CHECK(hs);
        returned = 0;                         /* block scaling not supported for this problem */
    }
    MKG_BENCH_LT_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    /* Keep the candidates that run: the heuristic's state is not the last word (for FP8 some of
     * its candidates answer CUBLAS_STATUS_NOT_SUPPORTED at launch). Each is tried once on set 0;
     * a rejected one is named, so a thin field is visible in the log. */
    lt->count = 0;
    for (int i = 0; i < returned; ++i) {
        if (found[i].state != CUBLAS_STATUS_SUCCESS)
            continue;
        const float alpha = 1.0f, beta = 0.0f;
        const mkg_bench_set *s = &p->sets[0];
        const cublasStatus_t st =
            cublasLtMatmul(cfg->lt, lt->desc, &alpha, lt->swap ? s->a : s->b, lt->mat_a, lt->swap ? s->b : s->a,
                           lt->mat_b, &beta, s->c, lt->mat_c, s->c, lt->mat_c, &found[i].algo, cfg->workspace,
                           workspace, cfg->stream);
        if (st == CUBLAS_STATUS_SUCCESS)
            lt->algos[lt->count++] = found[i];
        else
            printf("note: cuBLASLt candidate %d of M=%d N=%d K=%d %s does not run (%s); left out\n", i, p->m, p->n,
                   p->k, mkg_dtype_name(p->dt), cublasLtGetStatusName(st));
    }
    MKG_CUDA_CHECK(cudaStreamSynchronize(cfg->stream));
    lt->block = block;
    return lt->count;
}

static void mkg_bench_lt_plan_destroy(mkg_bench_lt_plan *lt)
{
    MKG_BENCH_LT_CHECK(cublasLtMatrixLayoutDestroy(lt->mat_c));
    MKG_BENCH_LT_CHECK(cublasLtMatrixLayoutDestroy(lt->mat_b));
    MKG_BENCH_LT_CHECK(cublasLtMatrixLayoutDestroy(lt->mat_a));
    MKG_BENCH_LT_CHECK(cublasLtMatmulDescDestroy(lt->desc));
}

/* cuBLASLt's plan for p: block-scaled FP8 when the row has block scales and cuBLASLt runs
 * them, else per-tensor scales (FP8) or none. */
static void mkg_bench_lt_plan_create(const mkg_bench_cfg *cfg, mkg_bench_problem *p)
{
    if (p->dt == MKG_DTYPE_E4M3 && p->bsa) {
        static const int forms[3] = {2, 3, 1};   /* the sample's form first (mkg_bench_lt_plan_try) */
        for (int f = 0; f < 3; ++f) {
            if (mkg_bench_lt_plan_try(cfg, p, forms[f]) > 0)
                return;
            mkg_bench_lt_plan_destroy(&p->lt);
        }
        printf("note: cuBLASLt runs no block-scaled FP8 algorithm for M=%d N=%d K=%d; its column is per-tensor FP8\n",
               p->m, p->n, p->k);
    }
    if (mkg_bench_lt_plan_try(cfg, p, 0) == 0) {
        fprintf(stderr, "mkg_bench: cuBLASLt returned no algorithm for M=%d N=%d K=%d %s\n", p->m, p->n, p->k,
                mkg_dtype_name(p->dt));
        exit(1);
    }
}

/* 1 if p's layer runs in the chunk-stepping dispatch kernel: several K chunks, or block scales. */
static int mkg_bench_chunked(const mkg_bench_problem *p)
{
    return p->bsa != NULL || mkg_chunk_count(p->k, p->kc) > 1;
}

/* Set s as a layer: its pointers, m_max = M, the row's kc and block scales, invariant mode. */
static mkg_layer_desc mkg_bench_layer_of(const mkg_bench_problem *p, const mkg_bench_set *s)
{
    mkg_layer_desc l;
    memset(&l, 0, sizeof l);
    l.n = p->n;
    l.k = p->k;
    l.in_type = p->dt;
    l.c_type = p->ct;
    l.a_scale = MKG_BENCH_FP8_A_SCALE;          /* e4m3: the per-tensor scales of every row (unused otherwise) */
    l.b_scale = MKG_BENCH_FP8_B_SCALE;
    l.a = s->a;
    l.b = s->b;
    l.c = s->c;
    l.lda = p->k;
    l.ldb = p->k;
    l.ldc = p->n;
    l.epilogue = MKG_EPI_STORE;
    l.m_max = p->m;
    l.mode = MKG_MODE_INVARIANT;
    l.kc = p->kc;
    l.deps.flags = p->deps_flags;
    l.a_block_scales = p->bsa;                  /* NULL unless --block-scales, as mkg_bench_desc */
    l.ld_a_block_scales = p->m;
    l.b_block_scales = p->bsb;
    if (p->bsa)
        l.a_scale = l.b_scale = 1.0f;
    return l;
}

/* Every row of table t must hold schedule s in bucket b: what the device will read. */
static void mkg_bench_table_expect(const mkg_bench_problem *p, const mkg_table *t, int b, int s, const char *what)
{
    /* NOTE: aligned like the rows themselves (their tensor maps are 64-byte aligned). */
    mkg_layer_dev *rows = (mkg_layer_dev *)aligned_alloc(64, (size_t)p->nsets * sizeof *rows);
    if (!rows) {
        fprintf(stderr, "mkg_bench: out of host memory (%d table rows)\n", p->nsets);
        exit(1);
    }
    MKG_CUDA_CHECK(cudaMemcpy(rows, mkg_table_rows(t), (size_t)p->nsets * sizeof *rows, cudaMemcpyDeviceToHost));
    for (int i = 0; i < p->nsets; ++i)
        if (!rows[i].planned || b >= rows[i].buckets || rows[i].schedule[b] != s) {
            fprintf(stderr, "mkg_bench: the uploaded %s table holds schedule %d in bucket %d of layer %d, not %s\n",
                    what, rows[i].schedule[b], b, i, mkg_schedule_get(s)->name);
            exit(1);
        }
    free(rows);
}

/* Uploads p->table[0] from the cost model (plans = NULL, as an application would) and,
 * given `tuned`, p->table[1] from that plan cut to M's buckets; sets every layer's M.
 * row->schedule (and tuned_schedule) get the table's schedule for M's bucket, computed
 * with mkg_layers_plan and checked against the uploaded rows. */
static void mkg_bench_tables_create(const mkg_bench_cfg *cfg, mkg_bench_problem *p, const mkg_layer_plan *tuned,
                                    mkg_bench_row *row)
{
    /* NOTE: a chunked layer (--kc-policy decode or fixed) or a block-scaled one runs in the
     * chunk-stepping dispatch kernel (bf16 and e4m3 only); the one-chunk kernels report it. */
    if (!mkg_bench_dispatch_available() || (mkg_bench_chunked(p) && !mkg_bench_dispatch_chunked_available(p->dt))) {
        row->schedule = -1;                  /* not dispatched (or no kernel built): the row reports the oracle */
        return;
    }
    mkg_layer_desc *layers = (mkg_layer_desc *)mkg_bench_calloc((size_t)p->nsets, sizeof *layers);
    mkg_layer_plan *plans = (mkg_layer_plan *)mkg_bench_calloc((size_t)p->nsets, sizeof *plans);
    const mkg_cost_model cm = mkg_cost_model_h200();
    const int b = mkg_bucket_of(p->m), buckets = mkg_bucket_count(p->m);
    for (int i = 0; i < p->nsets; ++i)
        layers[i] = mkg_bench_layer_of(p, &p->sets[i]);
    MKG_BENCH_MKG_CHECK(mkg_layers_plan(&cm, layers, p->nsets, &cfg->info, plans));
    MKG_BENCH_MKG_CHECK(mkg_table_create(layers, p->nsets, NULL, &p->table[0]));
    row->schedule = plans[0].schedule[b];
    mkg_bench_table_expect(p, p->table[0], b, row->schedule, "cost-model");
    if (tuned) {
        if (tuned->kc != p->kc || tuned->buckets < buckets) {
            fprintf(stderr, "mkg_bench: the loaded plan (kc %d, %d buckets) does not cover M=%d with kc %d\n",
                    tuned->kc, tuned->buckets, p->m, p->kc);
            exit(1);
        }
        for (int i = 0; i < p->nsets; ++i) {
            memset(&plans[i], 0, sizeof plans[i]);
            plans[i].kc = tuned->kc;
            plans[i].buckets = buckets;
            memcpy(plans[i].schedule, tuned->schedule, (size_t)buckets);
        }
        MKG_BENCH_MKG_CHECK(mkg_table_create(layers, p->nsets, plans, &p->table[1]));
        row->tuned = 1;
        row->tuned_schedule = tuned->schedule[b];
        mkg_bench_table_expect(p, p->table[1], b, row->tuned_schedule, "loaded");
    }
    for (int t = 0; t < 2; ++t) {
        const int s = t == 0 ? row->schedule : row->tuned_schedule;
        p->dispatch_grid[t] = cfg->sms;
        if (p->table[t] && cfg->dispatch_grid_units) {
            const int units = mkg_schedule_units(s, p->m, p->n, p->k, p->kc);
            p->dispatch_grid[t] = units < 1 ? 1 : units < cfg->sms ? units : cfg->sms;
        }
        for (int i = 0; p->table[t] && i < p->nsets; ++i)
            MKG_BENCH_MKG_CHECK(mkg_table_set_m(p->table[t], i, p->m, cfg->stream));
    }
    MKG_CUDA_CHECK(cudaStreamSynchronize(cfg->stream));
    free(plans);
    free(layers);
}

static void mkg_bench_problem_create(const mkg_bench_cfg *cfg, mkg_bench_problem *p, const char *shape, int m,
                                     int n, int k, mkg_dtype dt)
{
    memset(p, 0, sizeof *p);
    p->m = m;
    p->n = n;
    p->k = k;
    /* Invariant mode: the planner's chunk for this layer, from N and K alone. */
    p->kc = cfg->block_scales && dt == MKG_DTYPE_E4M3 ? 128 : mkg_bench_layer_kc(cfg, n, k);
    p->deps_flags = cfg->deps_flags;
    p->dt = dt;
    p->ct = dt == MKG_DTYPE_E4M3 ? MKG_DTYPE_BF16 : dt;
    p->esize = mkg_dtype_size(dt);
    p->c_esize = mkg_dtype_size(p->ct);
    p->a_bytes = (size_t)m * k * p->esize;
    p->b_bytes = (size_t)n * k * p->esize;
    p->c_bytes = (size_t)m * n * p->c_esize;
    p->nsets = mkg_bench_rotation_sets(cfg, p->a_bytes + p->b_bytes + p->c_bytes);
    mkg_bench_alloc_sets(cfg, p, mkg_bench_seed(shape, m, dt));
    mkg_bench_lt_plan_create(cfg, p);
}

static void mkg_bench_problem_free(mkg_bench_problem *p)
{
    mkg_table_destroy(p->table[1]);
    mkg_table_destroy(p->table[0]);
    for (int i = 0; i < p->nsets; ++i)
        mkg_gemm_destroy(p->sets[i].op);
    mkg_bench_lt_plan_destroy(&p->lt);
    MKG_CUDA_CHECK(cudaFree(p->c_all));
    MKG_CUDA_CHECK(cudaFree(p->b_all));
    MKG_CUDA_CHECK(cudaFree(p->a_all));
    MKG_CUDA_CHECK(cudaFree(p->bsa));
    MKG_CUDA_CHECK(cudaFree(p->bsb));
    free(p->sets);
    memset(p, 0, sizeof *p);
}

// ---- candidates: what one launch of a timed graph is ------------------------------------

typedef enum mkg_bench_kind {
    MKG_BENCH_MKGEMM = 0,       /* id: mkgemm schedule, host-launched */
    MKG_BENCH_CUBLAS = 1,       /* id: index into the cuBLASLt heuristic candidates */
    MKG_BENCH_DISPATCH = 2,     /* id: index into p->table, run by the device dispatcher */
    MKG_BENCH_MKGEMM_PDL = 3    /* id: mkgemm schedule, launched with MKG_LAUNCH_FLAG_PDL */
} mkg_bench_kind;

typedef struct mkg_bench_cand {
    mkg_bench_kind kind;
    int id;
} mkg_bench_cand;

static mkg_bench_cand mkg_bench_cand_of(mkg_bench_kind kind, int id)
{
    mkg_bench_cand c = {kind, id};
    return c;
}

/* Enqueues one GEMM of candidate c on rotation set `set`. */
static void mkg_bench_enqueue(const mkg_bench_cfg *cfg, const mkg_bench_problem *p, mkg_bench_cand c, int set)
{
    const mkg_bench_set *s = &p->sets[set];
    if (c.kind == MKG_BENCH_MKGEMM || c.kind == MKG_BENCH_MKGEMM_PDL) {
        const unsigned int flags = c.kind == MKG_BENCH_MKGEMM_PDL ? MKG_LAUNCH_FLAG_PDL : 0u;
        MKG_BENCH_MKG_CHECK(mkg_gemm_launch_ex(s->op, c.id, 0, flags, cfg->stream));
        return;
    }
    if (c.kind == MKG_BENCH_DISPATCH) {
        const mkg_table *t = p->table[c.id];
        MKG_CUDA_CHECK(mkg_bench_dispatch_launch(p->dt, mkg_bench_chunked(p), mkg_table_rows(t), mkg_table_count(t),
                                                 mkg_table_m(t), mkg_table_error(t), set, p->dispatch_grid[c.id],
                                                 cfg->stream));
        return;
    }
    const float alpha = 1.0f, beta = 0.0f;
    const void *lt_a = p->lt.swap ? s->a : s->b, *lt_b = p->lt.swap ? s->b : s->a;
    MKG_BENCH_LT_CHECK(cublasLtMatmul(cfg->lt, p->lt.desc, &alpha, lt_a, p->lt.mat_a, lt_b, p->lt.mat_b, &beta,
                                      s->c, p->lt.mat_c, s->c, p->lt.mat_c, &p->lt.algos[c.id].algo,
                                      cfg->workspace, MKG_BENCH_WORKSPACE_BYTES, cfg->stream));
}

/* Poisons C of set 0 (0xFF bytes are NaN in bf16 and fp16), runs c once on set 0, waits. */
static void mkg_bench_run_once(const mkg_bench_cfg *cfg, const mkg_bench_problem *p, mkg_bench_cand c)
{
    MKG_CUDA_CHECK(cudaMemsetAsync(p->sets[0].c, 0xFF, p->c_bytes, cfg->stream));
    mkg_bench_enqueue(cfg, p, c, 0);
    MKG_CUDA_CHECK(cudaStreamSynchronize(cfg->stream));
}

// ---- timing: CUDA-graph replay -----------------------------------------------------------

static int mkg_bench_cmp_double(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double mkg_bench_median(double *v, int count)
{
    qsort(v, count, sizeof *v, mkg_bench_cmp_double);
    return count % 2 ? v[count / 2] : 0.5 * (v[count / 2 - 1] + v[count / 2]);
}

/* One candidate's captured graph: `launches` launches cycling through the sets. */
typedef struct mkg_bench_graph {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    int launches;
} mkg_bench_graph;

static void mkg_bench_graph_create(const mkg_bench_cfg *cfg, const mkg_bench_problem *p, mkg_bench_cand c,
                                   int launches, mkg_bench_graph *g)
{
    g->launches = launches;
    MKG_CUDA_CHECK(cudaStreamBeginCapture(cfg->stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < launches; ++i)
        mkg_bench_enqueue(cfg, p, c, i % p->nsets);
    MKG_CUDA_CHECK(cudaStreamEndCapture(cfg->stream, &g->graph));
    MKG_CUDA_CHECK(cudaGraphInstantiate(&g->exec, g->graph, 0));
}

static void mkg_bench_graph_destroy(mkg_bench_graph *g)
{
    MKG_CUDA_CHECK(cudaGraphExecDestroy(g->exec));
    MKG_CUDA_CHECK(cudaGraphDestroy(g->graph));
}

/* Median microseconds of one replay of g over `replays` timed replays (after warm-up). */
static double mkg_bench_graph_median_us(const mkg_bench_cfg *cfg, const mkg_bench_graph *g, int replays)
{
    cudaEvent_t *ev = (cudaEvent_t *)mkg_bench_calloc(2 * (size_t)replays, sizeof *ev);
    double *us = (double *)mkg_bench_calloc(replays, sizeof *us);
    for (int i = 0; i < 2 * replays; ++i)
        MKG_CUDA_CHECK(cudaEventCreate(&ev[i]));
    for (int i = 0; i < MKG_BENCH_WARMUPS; ++i)
        MKG_CUDA_CHECK(cudaGraphLaunch(g->exec, cfg->stream));
    for (int i = 0; i < replays; ++i) {
        MKG_CUDA_CHECK(cudaEventRecord(ev[2 * i], cfg->stream));
        MKG_CUDA_CHECK(cudaGraphLaunch(g->exec, cfg->stream));
        MKG_CUDA_CHECK(cudaEventRecord(ev[2 * i + 1], cfg->stream));
    }
    MKG_CUDA_CHECK(cudaStreamSynchronize(cfg->stream));
    for (int i = 0; i < replays; ++i) {
        float ms = 0.0f;
        MKG_CUDA_CHECK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
        us[i] = 1000.0 * ms;
    }
    const double median = mkg_bench_median(us, replays);
    for (int i = 0; i < 2 * replays; ++i)
        MKG_CUDA_CHECK(cudaEventDestroy(ev[i]));
    free(us);
    free(ev);
    return median;
}

/* Launches per graph for c: a multiple of R (every set used equally) long enough for
 * one replay to run >= target_replay_us, from a probe graph of R launches; at most
 * MKG_BENCH_MAX_LAUNCHES unless R itself is larger. */
static int mkg_bench_launches_for(const mkg_bench_cfg *cfg, const mkg_bench_problem *p, mkg_bench_cand c)
{
    mkg_bench_graph probe;
    mkg_bench_graph_create(cfg, p, c, p->nsets, &probe);
    const double probe_us = mkg_bench_graph_median_us(cfg, &probe, MKG_BENCH_PROBE_REPLAYS);
    mkg_bench_graph_destroy(&probe);
    const int max_rounds = MKG_BENCH_MAX_LAUNCHES / p->nsets > 1 ? MKG_BENCH_MAX_LAUNCHES / p->nsets : 1;
    int rounds = max_rounds;
    if (probe_us > 0.0 && cfg->target_replay_us / probe_us < max_rounds)
        rounds = (int)ceil(cfg->target_replay_us / probe_us);
    if (rounds < 1)
        rounds = 1;
    return rounds * p->nsets;
}

/* Microseconds per GEMM of every candidate. NOTE: candidates are timed in interleaved
 * rounds (each round replays every candidate's graph once, in turn) so that the chip's
 * clock and temperature drift during the measurement falls on all of them alike; timed
 * one after another, the first candidate ran on a cool chip at higher clocks (seen on the
 * H200: up to 16% between two schedules that differ only in raster order). */
static void mkg_bench_time_interleaved(const mkg_bench_cfg *cfg, const mkg_bench_problem *p,
                                       const mkg_bench_cand *cands, int count, double *us_out)
{
    mkg_bench_graph *g = (mkg_bench_graph *)mkg_bench_calloc((size_t)count, sizeof *g);
    const int replays = cfg->replays;
    cudaEvent_t *ev = (cudaEvent_t *)mkg_bench_calloc(2 * (size_t)replays * count, sizeof *ev);
    double *us = (double *)mkg_bench_calloc((size_t)replays, sizeof *us);
    for (int c = 0; c < count; ++c)
        mkg_bench_graph_create(cfg, p, cands[c], mkg_bench_launches_for(cfg, p, cands[c]), &g[c]);
    for (int i = 0; i < 2 * replays * count; ++i)
        MKG_CUDA_CHECK(cudaEventCreate(&ev[i]));
    for (int w = 0; w < MKG_BENCH_WARMUPS; ++w)
        for (int c = 0; c < count; ++c)
            MKG_CUDA_CHECK(cudaGraphLaunch(g[c].exec, cfg->stream));
    for (int i = 0; i < replays; ++i)
        for (int c = 0; c < count; ++c) {
            cudaEvent_t *e = &ev[2 * ((size_t)i * count + c)];
            MKG_CUDA_CHECK(cudaEventRecord(e[0], cfg->stream));
            MKG_CUDA_CHECK(cudaGraphLaunch(g[c].exec, cfg->stream));
            MKG_CUDA_CHECK(cudaEventRecord(e[1], cfg->stream));
        }
    MKG_CUDA_CHECK(cudaStreamSynchronize(cfg->stream));
    for (int c = 0; c < count; ++c) {
        for (int i = 0; i < replays; ++i) {
            float ms = 0.0f;
            const cudaEvent_t *e = &ev[2 * ((size_t)i * count + c)];
            MKG_CUDA_CHECK(cudaEventElapsedTime(&ms, e[0], e[1]));
            us[i] = 1000.0 * ms;
        }
        us_out[c] = mkg_bench_median(us, replays) / g[c].launches;
        mkg_bench_graph_destroy(&g[c]);
    }
    for (int i = 0; i < 2 * replays * count; ++i)
        MKG_CUDA_CHECK(cudaEventDestroy(ev[i]));
    free(us);
    free(ev);
    free(g);
}

// ---- sustained runs: one candidate alone, clock and power sampled through NVML ------------

/* NVML through dlopen (the driver's libnvidia-ml; nothing links against it at build time). */
typedef struct mkg_nvml {
    void *lib;
    void *dev;
    int (*clock)(void *dev, int type, unsigned int *mhz);
    int (*power)(void *dev, unsigned int *mw);
    int (*reasons)(void *dev, unsigned long long *bits);
} mkg_nvml;

static int mkg_nvml_open(const mkg_bench_cfg *cfg, mkg_nvml *n)
{
    memset(n, 0, sizeof *n);
    n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib)
        return 0;
    int (*init)(void) = (int (*)(void))dlsym(n->lib, "nvmlInit_v2");
    int (*by_bus)(const char *, void **) = (int (*)(const char *, void **))dlsym(n->lib,
                                                                               "nvmlDeviceGetHandleByPciBusId_v2");
    n->clock = (int (*)(void *, int, unsigned int *))dlsym(n->lib, "nvmlDeviceGetClockInfo");
    n->power = (int (*)(void *, unsigned int *))dlsym(n->lib, "nvmlDeviceGetPowerUsage");
    n->reasons = (int (*)(void *, unsigned long long *))dlsym(n->lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    char bus[32];
    MKG_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, (int)sizeof bus, cfg->device));
    if (!init || !by_bus || !n->clock || !n->power || init() != 0 || by_bus(bus, &n->dev) != 0) {
        dlclose(n->lib);
        n->lib = NULL;
        return 0;
    }
    return 1;
}

/* Replays candidate c's graph back to back for cfg->sustain_ms after a 200 ms idle gap, and
 * measures the second half: per-GEMM time from events, clock and power from NVML samples
 * taken every ~2 ms while the replays run. NOTE: the interleaved timing averages the chip's
 * power state over all candidates; this isolates one candidate's steady state, so a gap
 * that comes from clock (power draw) separates from one that comes from cycles. */
static mkg_bench_sustained mkg_bench_sustain(const mkg_bench_cfg *cfg, const mkg_bench_problem *p,
                                             mkg_bench_cand c)
{
    mkg_bench_sustained out;
    memset(&out, 0, sizeof out);
    mkg_bench_graph g;
    mkg_bench_graph_create(cfg, p, c, mkg_bench_launches_for(cfg, p, c), &g);
    const double replay_us = mkg_bench_graph_median_us(cfg, &g, MKG_BENCH_PROBE_REPLAYS);
    int n = (int)(1e3 * cfg->sustain_ms / (replay_us > 1.0 ? replay_us : 1.0));
    n = n < 8 ? 8 : n > 20000 ? 20000 : n;
    cudaEvent_t *ev = (cudaEvent_t *)mkg_bench_calloc((size_t)n + 1, sizeof *ev);
    double *us = (double *)mkg_bench_calloc((size_t)n, sizeof *us);
    for (int i = 0; i <= n; ++i)
        MKG_CUDA_CHECK(cudaEventCreate(&ev[i]));
    mkg_nvml nv;
    const int have_nvml = mkg_nvml_open(cfg, &nv);
    const struct timespec gap = {0, 200 * 1000 * 1000};
    nanosleep(&gap, NULL);
    MKG_CUDA_CHECK(cudaEventRecord(ev[0], cfg->stream));
    for (int i = 0; i < n; ++i) {
        MKG_CUDA_CHECK(cudaGraphLaunch(g.exec, cfg->stream));
        MKG_CUDA_CHECK(cudaEventRecord(ev[i + 1], cfg->stream));
    }
    double mhz = 0.0, mw = 0.0;
    while (cudaEventQuery(ev[n]) == cudaErrorNotReady) {
        const struct timespec tick = {0, 2 * 1000 * 1000};
        nanosleep(&tick, NULL);
        // The second half of the replays, as far as the host can tell.
        if (!have_nvml || cudaEventQuery(ev[n / 2]) != cudaSuccess)
            continue;
        unsigned int clk = 0, pw = 0;
        unsigned long long why = 0;
        if (nv.clock(nv.dev, 1 /* NVML_CLOCK_SM */, &clk) == 0 && nv.power(nv.dev, &pw) == 0) {
            mhz += clk;
            mw += pw;
            ++out.samples;
        }
        if (nv.reasons && nv.reasons(nv.dev, &why) == 0)
            out.reasons |= why;
    }
    MKG_CUDA_CHECK(cudaGetLastError());
    for (int i = 0; i < n; ++i) {
        float ms = 0.0f;
        MKG_CUDA_CHECK(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
        us[i] = 1000.0 * ms / g.launches;
    }
    out.us = mkg_bench_median(us + n / 2, n - n / 2);
    if (out.samples > 0) {
        out.valid = 1;
        out.sm_mhz = mhz / out.samples;
        out.watts = 1e-3 * mw / out.samples;
        out.mcycles = out.us * out.sm_mhz * 1e-6;
    }
    if (have_nvml)
        dlclose(nv.lib);
    for (int i = 0; i <= n; ++i)
        MKG_CUDA_CHECK(cudaEventDestroy(ev[i]));
    free(us);
    free(ev);
    mkg_bench_graph_destroy(&g);
    return out;
}

// ---- correctness -------------------------------------------------------------------------

/* FP64 reference of the first and the last min(M, 128) rows of C (one block when they meet). */
typedef struct mkg_bench_ref {
    double *r;                  /* the blocks stacked, n doubles per row */
    int blocks;
    int row0[2], rows[2];
} mkg_bench_ref;

static void mkg_bench_ref_create(const mkg_bench_cfg *cfg, const mkg_bench_problem *p, mkg_bench_ref *ref)
{
    const int edge = p->m < MKG_BENCH_REF_ROWS ? p->m : MKG_BENCH_REF_ROWS;
    ref->blocks = p->m <= 2 * edge ? 1 : 2;
    ref->row0[0] = 0;
    ref->rows[0] = ref->blocks == 1 ? p->m : edge;
    ref->row0[1] = p->m - edge;
    ref->rows[1] = edge;
    const size_t total = (size_t)(ref->rows[0] + (ref->blocks == 2 ? edge : 0));
    MKG_CUDA_CHECK(cudaMalloc((void **)&ref->r, total * p->n * sizeof(double)));
    size_t done = 0;
    for (int b = 0; b < ref->blocks; ++b) {
        const char *a = (const char *)p->sets[0].a + (size_t)ref->row0[b] * p->k * p->esize;
        if (p->bsa)
            MKG_CUDA_CHECK(mkg_ref_gemm_block_gpu(a, p->sets[0].b, p->dt, ref->rows[b], p->n, p->k, p->k, p->k,
                                                  p->bsa + ref->row0[b], p->m, p->bsb, ref->r + done * p->n, p->n,
                                                  cfg->stream));
        else
            MKG_CUDA_CHECK(mkg_ref_gemm_gpu(a, p->sets[0].b, p->dt, ref->rows[b], p->n, p->k, p->k, p->k,
                                            ref->r + done * p->n, p->n, cfg->stream));
        if (p->dt == MKG_DTYPE_E4M3 && !p->bsa)
            MKG_CUDA_CHECK(mkg_scale_ref_gpu(ref->r + done * p->n, p->n, ref->rows[b], p->n,
                                             (double)MKG_BENCH_FP8_A_SCALE * MKG_BENCH_FP8_B_SCALE, cfg->stream));
        done += (size_t)ref->rows[b];
    }
}

/* max_abs_err / max_abs_ref of c (m x n, ldc = n) over the reference rows; INFINITY
 * if any element is non-finite where the reference is finite (poison left, NaN, Inf). */
static double mkg_bench_ref_error(const mkg_bench_cfg *cfg, const mkg_bench_problem *p, const mkg_bench_ref *ref,
                                  const void *c)
{
    double err = 0.0, mag = 0.0;
    long long nonfinite = 0;
    size_t done = 0;
    for (int b = 0; b < ref->blocks; ++b) {
        mkg_err_stats st;
        const char *cb = (const char *)c + (size_t)ref->row0[b] * p->n * p->c_esize;
        MKG_CUDA_CHECK(mkg_error_stats_gpu(cb, p->ct, p->n, ref->r + done * p->n, p->n, ref->rows[b], p->n, &st,
                                           cfg->stream));
        err = fmax(err, st.max_abs_err);
        mag = fmax(mag, st.max_abs_ref);
        nonfinite += st.nonfinite;
        done += (size_t)ref->rows[b];
    }
    if (nonfinite > 0)
        return INFINITY;
    return mag > 0.0 ? err / mag : err;
}

/* Runs every eligible schedule once on set 0: error against the reference, and C's
 * bits against the first eligible schedule's (kept in a separate buffer). Then
 * cuBLASLt's heuristic #0 against the same reference. */
static void mkg_bench_check(const mkg_bench_cfg *cfg, const mkg_bench_problem *p, mkg_bench_row *row)
{
    mkg_bench_ref ref;
    void *first = NULL;
    int have_first = 0;
    mkg_bench_ref_create(cfg, p, &ref);
    MKG_CUDA_CHECK(cudaMalloc(&first, p->c_bytes));
    row->bitexact = 1;
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        if (!row->eligible[s])
            continue;
        mkg_bench_run_once(cfg, p, mkg_bench_cand_of(MKG_BENCH_MKGEMM, s));
        row->sched_err[s] = mkg_bench_ref_error(cfg, p, &ref, p->sets[0].c);
        if (!have_first) {
            MKG_CUDA_CHECK(cudaMemcpyAsync(first, p->sets[0].c, p->c_bytes, cudaMemcpyDeviceToDevice, cfg->stream));
            have_first = 1;
            continue;
        }
        long long differ = 0;
        MKG_CUDA_CHECK(mkg_count_mismatch_gpu(p->sets[0].c, p->n, first, p->n, p->m, p->n, (int)p->c_esize, &differ,
                                              cfg->stream));
        row->mismatch[s] = differ != 0;
        row->bitexact = row->bitexact && differ == 0;
    }
    /* The PDL launch of every schedule must write the same bits. (Each runs after a
     * memset and a sync, so this checks the launch path, not ordering: the GPU test
     * PdlLaunchedChainMatchesPlainLaunches checks that a PDL launch waits for its
     * predecessor.) */
    row->pdl_bitexact = 1;
    for (int s = 0; s < MKG_SCHED_COUNT && cfg->pdl; ++s) {
        if (!row->eligible[s])
            continue;
        long long differ = 0;
        mkg_bench_run_once(cfg, p, mkg_bench_cand_of(MKG_BENCH_MKGEMM_PDL, s));
        MKG_CUDA_CHECK(mkg_count_mismatch_gpu(p->sets[0].c, p->n, first, p->n, p->m, p->n, (int)p->c_esize, &differ,
                                              cfg->stream));
        row->pdl_bitexact = row->pdl_bitexact && differ == 0;
    }
    mkg_bench_run_once(cfg, p, mkg_bench_cand_of(MKG_BENCH_CUBLAS, 0));
    row->cublas_max_rel_err = mkg_bench_ref_error(cfg, p, &ref, p->sets[0].c);
    /* Every schedule of ours has been checked against the same reference above; a block-scaled
     * cuBLASLt C far from it read the scale tensors in another layout (seen at N = K = 768 on the
     * H100, e0bc7d3: 0.92). Its time is still that of a block-scaled GEMM of this shape. */
    double ours = 0.0;
    for (int s = 0; s < MKG_SCHED_COUNT; ++s)
        if (row->eligible[s] && row->sched_err[s] > ours)
            ours = row->sched_err[s];
    if (p->lt.block && row->cublas_max_rel_err > 4.0 * (ours > 1e-3 ? ours : 1e-3))
        printf("note: cuBLASLt's block-scaled C for M=%d N=%d K=%d is off the block-scaled reference (max rel err "
               "%.3g, ours %.3g): it read the scales in another layout; its time is kept\n",
               p->m, p->n, p->k, row->cublas_max_rel_err, ours);
    MKG_CUDA_CHECK(cudaFree(first));
    MKG_CUDA_CHECK(cudaFree(ref.r));
}

/* After timing: the oracle's C of set 0 is kept, then each table is dispatched once on
 * set 0 and its C compared bit for bit (every schedule writes the same bits, so the
 * dispatched one must too). A table's error word, sticky over every launch so far,
 * must still be 0. */
static void mkg_bench_check_dispatch(const mkg_bench_cfg *cfg, mkg_bench_problem *p, mkg_bench_row *row)
{
    static const char *const what[2] = {"cost-model", "loaded"};
    void *oracle = NULL;
    MKG_CUDA_CHECK(cudaMalloc(&oracle, p->c_bytes));
    mkg_bench_run_once(cfg, p, mkg_bench_cand_of(MKG_BENCH_MKGEMM, row->oracle));
    MKG_CUDA_CHECK(cudaMemcpyAsync(oracle, p->sets[0].c, p->c_bytes, cudaMemcpyDeviceToDevice, cfg->stream));
    for (int t = 0; t < 2; ++t) {
        if (!p->table[t])
            continue;
        unsigned int word = 0;
        long long differ = 0;
        mkg_bench_run_once(cfg, p, mkg_bench_cand_of(MKG_BENCH_DISPATCH, t));
        MKG_BENCH_MKG_CHECK(mkg_table_take_error(p->table[t], &word, cfg->stream));
        if (word != 0) {
            fprintf(stderr, "mkg_bench: the dispatch kernel on the %s table set error word 0x%x: layer %u, "
                    "reason %u (mkg_dispatch_error in mkg_layer.h)\n", what[t], word, (word >> 8) - 1, word & 0xFFu);
            exit(1);
        }
        MKG_CUDA_CHECK(mkg_count_mismatch_gpu(p->sets[0].c, p->n, oracle, p->n, p->m, p->n, (int)p->c_esize, &differ,
                                              cfg->stream));
        if (differ != 0)
            fprintf(stderr, "mkg_bench: M=%d N=%d K=%d %s: the dispatched C (%s table) differs from the oracle's in "
                    "%lld elements\n", p->m, p->n, p->k, mkg_dtype_name(p->dt), what[t], differ);
        if (t == 0)
            row->dispatch_bitexact = differ == 0;
        else
            row->tuned_bitexact = differ == 0;
    }
    MKG_CUDA_CHECK(cudaFree(oracle));
}

// ---- one row -----------------------------------------------------------------------------

int mkg_bench_schedule_eligible(const mkg_gemm_desc *d, int s)
{
    const mkg_schedule_info *info = mkg_schedule_get(s);
    /* The library must accept the schedule for this descriptor (dtype, tile K). */
    if (!info || mkg_schedule_check(d, s) != MKG_OK)
        return 0;
    /* swap_ab puts the token dimension on the wgmma N side (TM = 8..64); past M = 256
     * a non-swapped tile fills the 64-row MMA side anyway and swap only adds tiles. */
    if (info->swap_ab && d->m > 256)
        return 0;
    /* Without swap_ab the M tile is the wgmma M side, which is 64 rows at least. */
    if (info->tile_m < 64 && !info->swap_ab)
        return 0;
    return 1;
}

/* 1 if schedule name `name` holds one of the comma-separated substrings of `filter` (--schedules). */
static int mkg_bench_sched_matches(const char *filter, const char *name)
{
    for (const char *at = filter; at;) {
        const char *comma = strchr(at, ',');
        const size_t n = comma ? (size_t)(comma - at) : strlen(at);
        for (const char *s = name; n > 0 && *s; ++s)
            if (strncmp(s, at, n) == 0)
                return 1;
        at = comma ? comma + 1 : NULL;
    }
    return 0;
}

/* Times every eligible schedule (the fastest is the oracle), the dispatch kernel on each
 * table and every cuBLASLt candidate, all in the same interleaved rounds. */
static void mkg_bench_time_all(const mkg_bench_cfg *cfg, const mkg_bench_problem *p, mkg_bench_row *row)
{
    mkg_bench_cand cands[2 * MKG_SCHED_COUNT + 2 + MKG_BENCH_LT_ALGOS];
    double us[2 * MKG_SCHED_COUNT + 2 + MKG_BENCH_LT_ALGOS];
    int count = 0;
    for (int s = 0; s < MKG_SCHED_COUNT; ++s)
        if (row->eligible[s])
            cands[count++] = mkg_bench_cand_of(MKG_BENCH_MKGEMM, s);
    const int first_pdl = count;
    for (int s = 0; s < MKG_SCHED_COUNT && cfg->pdl; ++s)
        if (row->eligible[s])
            cands[count++] = mkg_bench_cand_of(MKG_BENCH_MKGEMM_PDL, s);
    const int first_dispatch = count;
    for (int t = 0; t < 2; ++t)
        if (p->table[t])
            cands[count++] = mkg_bench_cand_of(MKG_BENCH_DISPATCH, t);
    const int first_lt = count;
    for (int i = 0; i < p->lt.count; ++i)
        cands[count++] = mkg_bench_cand_of(MKG_BENCH_CUBLAS, i);
    mkg_bench_time_interleaved(cfg, p, cands, count, us);

    row->oracle = -1;
    for (int c = 0; c < first_pdl; ++c) {
        const int s = cands[c].id;
        row->sched_us[s] = us[c];
        if (row->oracle < 0 || us[c] < row->sched_us[row->oracle])
            row->oracle = s;
    }
    row->oracle_pdl = -1;
    for (int c = first_pdl; c < first_dispatch; ++c) {
        const int s = cands[c].id;
        row->pdl_us[s] = us[c];
        if (row->oracle_pdl < 0 || us[c] < row->pdl_us[row->oracle_pdl])
            row->oracle_pdl = s;
    }
    row->oracle_pdl_us = row->oracle_pdl < 0 ? NAN : row->pdl_us[row->oracle_pdl];
    for (int c = first_dispatch; c < first_lt; ++c) {
        if (cands[c].id == 0)
            row->mkg_us = us[c];
        else
            row->tuned_us = us[c];
    }
    row->cublas_algos = p->lt.count;
    row->cublas_block_scaled = p->lt.block;
    for (int c = first_lt; c < count; ++c) {
        if (c == first_lt)
            row->cublas_us = row->cublas_best_us = us[c];
        if (us[c] <= row->cublas_best_us) {
            row->cublas_best_us = us[c];
            row->cublas_best = cands[c].id;
        }
    }
}

void mkg_bench_gemm_row_tuned(const mkg_bench_cfg *cfg, const char *shape, int m, int n, int k, mkg_dtype dt,
                              const mkg_layer_plan *tuned, mkg_bench_row *out)
{
    mkg_bench_problem p;
    int eligible = 0;
    memset(out, 0, sizeof *out);
    snprintf(out->shape, sizeof out->shape, "%s", shape);
    out->dtype = dt;
    out->m = m;
    out->n = n;
    out->k = k;
    out->tuned_schedule = -1;
    out->tuned_us = NAN;

    mkg_bench_problem_create(cfg, &p, shape, m, n, k, dt);
    out->kc = p.kc;
    const mkg_gemm_desc d = mkg_bench_desc(&p, &p.sets[0]);
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        const char *name = mkg_schedule_get(s) ? mkg_schedule_get(s)->name : "";
        out->eligible[s] = mkg_bench_schedule_eligible(&d, s) &&
                           (!cfg->sched_filter || mkg_bench_sched_matches(cfg->sched_filter, name));
        eligible += out->eligible[s];
    }
    if (eligible == 0) {
        fprintf(stderr, "mkg_bench: no eligible mkgemm schedule for %s M=%d N=%d K=%d %s%s%s\n", shape, m, n, k,
                mkg_dtype_name(dt), cfg->sched_filter ? " under --schedules " : "",
                cfg->sched_filter ? cfg->sched_filter : "");
        exit(1);
    }

    mkg_bench_tables_create(cfg, &p, tuned, out);
    mkg_bench_check(cfg, &p, out);
    mkg_bench_time_all(cfg, &p, out);
    if (cfg->sustain_ms > 0) {
        out->sustained[0] = mkg_bench_sustain(cfg, &p, mkg_bench_cand_of(MKG_BENCH_MKGEMM, out->oracle));
        out->sustained[1] = mkg_bench_sustain(cfg, &p, mkg_bench_cand_of(MKG_BENCH_CUBLAS, out->cublas_best));
    }
    mkg_bench_check_dispatch(cfg, &p, out);
    if (!p.table[0]) {
        out->schedule = out->oracle;
        out->mkg_us = out->sched_us[out->oracle];
        out->dispatch_bitexact = 1;
    }
    mkg_bench_problem_free(&p);

    out->oracle_us = out->sched_us[out->oracle];
    out->max_rel_err = out->sched_err[out->oracle];
    out->tflops = 2.0 * m * n * (double)k / (out->mkg_us * 1e6);
}

void mkg_bench_gemm_row(const mkg_bench_cfg *cfg, const char *shape, int m, int n, int k, mkg_dtype dt,
                        mkg_bench_row *out)
{
    mkg_bench_gemm_row_tuned(cfg, shape, m, n, k, dt, NULL, out);
}

// ---- stdout report -----------------------------------------------------------------------

double mkg_bench_ratio(const mkg_bench_row *r)
{
    return r->cublas_best_us / r->mkg_us;
}

void mkg_bench_print_row(const mkg_bench_row *r)
{
    printf("%-20s %s M=%-5d N=%-5d K=%-5d  mkg %-30s %9.2f us  oracle %-30s %9.2f us", r->shape,
           mkg_dtype_name(r->dtype), r->m, r->n, r->k, mkg_schedule_get(r->schedule)->name, r->mkg_us,
           mkg_schedule_get(r->oracle)->name, r->oracle_us);
    if (r->tuned)
        printf("  tuned %-30s %9.2f us", mkg_schedule_get(r->tuned_schedule)->name, r->tuned_us);
    printf("  cublas_best %9.2f us  ratio %6.3f  err %.2e  bitexact %s  dispatch %s\n", r->cublas_best_us,
           mkg_bench_ratio(r), r->max_rel_err, r->bitexact ? "yes" : "NO",
           r->dispatch_bitexact && (!r->tuned || r->tuned_bitexact) ? "=oracle" : "DIFFERS");
    if (r->sustained[0].us > 0.0) {
        const mkg_bench_sustained *a = &r->sustained[0], *b = &r->sustained[1];
        printf("  sustained alone: oracle %.2f us at %.0f MHz %.0f W (%.4f Mcycles, reasons 0x%llx), cuBLASLt %.2f us "
               "at %.0f MHz %.0f W (%.4f Mcycles, reasons 0x%llx): time ratio %.3f, cycle ratio %.3f\n",
               a->us, a->sm_mhz, a->watts, a->mcycles, a->reasons, b->us, b->sm_mhz, b->watts, b->mcycles,
               b->reasons, b->us / a->us, a->mcycles > 0.0 ? b->mcycles / a->mcycles : NAN);
        fflush(stdout);
    }
}

/* A geometric mean of ratios and the row of the smallest. */
typedef struct mkg_bench_mean {
    double log_sum;
    int count;
    double worst;
    const mkg_bench_row *at;
} mkg_bench_mean;

static void mkg_bench_mean_add(mkg_bench_mean *g, double ratio, const mkg_bench_row *r)
{
    g->log_sum += log(ratio);
    if (g->count++ == 0 || ratio < g->worst) {
        g->worst = ratio;
        g->at = r;
    }
}

static void mkg_bench_mean_print(const char *what, const mkg_bench_mean *g)
{
    if (g->count == 0)
        printf("  %s: no rows\n", what);
    else
        printf("  %s: geomean %.3f over %d rows; worst %.3f at %s M=%d\n", what, exp(g->log_sum / g->count),
               g->count, g->worst, g->at->shape, g->at->m);
}

void mkg_bench_print_summary(const mkg_bench_row *rows, int count, mkg_dtype dt)
{
    mkg_bench_mean big, big_oracle, big_tuned, all, pick, pick_same, tuned_pick, tuned_same, big_pdl, small_oracle,
        small_pdl;
    const mkg_bench_row *square = NULL;
    int seen = 0, differ = 0, undispatched = 0;
    memset(&big, 0, sizeof big);
    big_oracle = big_tuned = all = pick = pick_same = tuned_pick = tuned_same = big_pdl = small_oracle = big;
    small_pdl = big;
    int pdl_differ = 0;
    for (int i = 0; i < count; ++i) {
        const mkg_bench_row *r = &rows[i];
        if (r->dtype != dt)
            continue;
        ++seen;
        undispatched += r->schedule < 0;
        differ += !r->dispatch_bitexact || (r->tuned && !r->tuned_bitexact);
        pdl_differ += !r->pdl_bitexact;
        if (strcmp(r->shape, "square_8192") == 0)
            square = r;
        mkg_bench_mean_add(&all, mkg_bench_ratio(r), r);
        mkg_bench_mean_add(&pick, r->oracle_us / r->mkg_us, r);
        /* The pick alone: its own time in the shipped kernel, the oracle's kernel. */
        if (r->schedule >= 0 && r->schedule < MKG_SCHED_COUNT && r->eligible[r->schedule] &&
            r->sched_us[r->schedule] > 0)
            mkg_bench_mean_add(&pick_same, r->oracle_us / r->sched_us[r->schedule], r);
        if (r->tuned)
            mkg_bench_mean_add(&tuned_pick, r->oracle_us / r->tuned_us, r);
        if (r->tuned && r->tuned_schedule >= 0 && r->tuned_schedule < MKG_SCHED_COUNT &&
            r->eligible[r->tuned_schedule] && r->sched_us[r->tuned_schedule] > 0)
            mkg_bench_mean_add(&tuned_same, r->oracle_us / r->sched_us[r->tuned_schedule], r);
        if (r->m < 512) {
            mkg_bench_mean_add(&small_oracle, r->cublas_best_us / r->oracle_us, r);
            if (r->oracle_pdl >= 0)
                mkg_bench_mean_add(&small_pdl, r->cublas_best_us / r->oracle_pdl_us, r);
            continue;
        }
        if (r->oracle_pdl >= 0)
            mkg_bench_mean_add(&big_pdl, r->cublas_best_us / r->oracle_pdl_us, r);
        mkg_bench_mean_add(&big, mkg_bench_ratio(r), r);
        mkg_bench_mean_add(&big_oracle, r->cublas_best_us / r->oracle_us, r);
        if (r->tuned)
            mkg_bench_mean_add(&big_tuned, r->cublas_best_us / r->tuned_us, r);
    }
    if (seen == 0)
        return;
    printf("summary %s (each ratio is reference time / mkgemm path time: above 1 the path is faster)\n",
           mkg_dtype_name(dt));
    mkg_bench_mean_print("dispatched vs cuBLASLt, M >= 512 (cublas_best_us / mkg_us)", &big);
    mkg_bench_mean_print("oracle vs cuBLASLt, M >= 512 (cublas_best_us / oracle_us)", &big_oracle);
    mkg_bench_mean_print("oracle vs cuBLASLt, M < 512", &small_oracle);
    if (big_pdl.count + small_pdl.count > 0) {
        mkg_bench_mean_print("oracle with PDL launches vs cuBLASLt, M >= 512 (cublas_best_us / oracle_pdl_us)",
                             &big_pdl);
        mkg_bench_mean_print("oracle with PDL launches vs cuBLASLt, M < 512", &small_pdl);
        if (pdl_differ)
            printf("  PDL launches wrote different bits in %d rows\n", pdl_differ);
        else
            printf("  PDL launches wrote the plain launches' bits in every row\n");
    }
    if (tuned_pick.count > 0)
        mkg_bench_mean_print("tuned vs cuBLASLt, M >= 512 (cublas_best_us / tuned_us)", &big_tuned);
    mkg_bench_mean_print("dispatched vs cuBLASLt, all rows", &all);
    /* NOTE: such rows (a build without the dispatch kernels, or chunked fp16 / tf32 layers, which
     * have no chunk-stepping kernel in the bench) count the oracle's time in both dispatched lines. */
    if (undispatched > 0)
        printf("  %d of %d rows were not dispatched and count the oracle's time in the dispatched lines\n",
               undispatched, seen);
    if (square)
        printf("  square_8192: oracle %.3f, dispatched %.3f (cublas_best_us / path us)\n",
               square->cublas_best_us / square->oracle_us, mkg_bench_ratio(square));
    else
        printf("  square_8192: not run\n");
    mkg_bench_mean_print("cost-model pick vs oracle, all rows (oracle_us / mkg_us)", &pick);
    if (pick_same.count > 0)
        mkg_bench_mean_print("cost-model pick vs oracle, same kernel (oracle_us / the pick's shipped-kernel us)",
                             &pick_same);
    if (tuned_pick.count > 0)
        mkg_bench_mean_print("tuned pick vs oracle, all rows (oracle_us / tuned_us)", &tuned_pick);
    if (tuned_same.count > 0)
        mkg_bench_mean_print("tuned pick vs oracle, same kernel (oracle_us / the tuned pick's shipped-kernel us)",
                             &tuned_same);
    if (differ > 0)
        printf("  dispatched C differs from the oracle's bits in %d rows\n", differ);
    else
        printf("  dispatched C equals the oracle's bits in every row\n");
    fflush(stdout);
}

// ---- shapes file -------------------------------------------------------------------------

void mkg_bench_print_stream(const mkg_bench_cfg *cfg, const mkg_bench_row *rows, int count, mkg_dtype dt)
{
    double log_ours = 0.0, log_lt = 0.0, worst = 1e30;
    int n = 0;
    const mkg_bench_row *worst_row = NULL;
    for (int i = 0; i < count; ++i) {
        const mkg_bench_row *r = &rows[i];
        const double weights = (double)r->n * r->k * mkg_dtype_size(r->dtype);
        if (r->dtype != dt || r->m > 16 || weights < 32.0 * 1024 * 1024 || !(r->oracle_us > 0.0) ||
            !(r->cublas_best_us > 0.0) || !(cfg->copy_gbps > 0.0))
            continue;
        const double ours = weights / (r->oracle_us * 1e3) / cfg->copy_gbps;   /* GB/s over GB/s */
        const double lt = weights / (r->cublas_best_us * 1e3) / cfg->copy_gbps;
        log_ours += log(ours);
        log_lt += log(lt);
        if (ours < worst) {
            worst = ours;
            worst_row = r;
        }
        ++n;
    }
    printf("  decode weight stream, M <= 16, weights >= 32 MB (copy %.0f GB/s, read + write):", cfg->copy_gbps);
    if (n == 0) {
        printf(" no rows\n");
        return;
    }
    printf(" oracle geomean %.2f of copy, worst %.2f at %s M=%d; cuBLASLt best %.2f\n", exp(log_ours / n), worst,
           worst_row->shape, worst_row->m, exp(log_lt / n));
}

static char *mkg_bench_trim(char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
        ++s;
    size_t len = strlen(s);
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r' || s[len - 1] == '\n'))
        s[--len] = '\0';
    return s;
}

/* A positive int filling the whole (trimmed) field. */
static int mkg_bench_parse_positive(char *field, int *out)
{
    char *s = mkg_bench_trim(field), *end = NULL;
    errno = 0;
    const long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0 || v < 1 || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

/* The M values: positive ints separated by spaces or tabs. */
static int mkg_bench_parse_ms(char *field, mkg_bench_shape *s)
{
    char *p = mkg_bench_trim(field);
    s->m_count = 0;
    while (*p) {
        char *end = NULL;
        errno = 0;
        const long v = strtol(p, &end, 10);
        if (end == p || errno != 0 || v < 1 || v > INT_MAX || s->m_count == MKG_BENCH_MAX_MS)
            return -1;
        if (*end != '\0' && *end != ' ' && *end != '\t')
            return -1;
        s->m[s->m_count++] = (int)v;
        p = end;
        while (*p == ' ' || *p == '\t')
            ++p;
    }
    return s->m_count > 0 ? 0 : -1;
}

/* `name,N,K,M values`; the line has its comment already cut off. */
static int mkg_bench_parse_shape(char *line, mkg_bench_shape *s)
{
    char *field[4];
    field[0] = line;
    for (int i = 1; i < 4; ++i) {
        char *comma = strchr(field[i - 1], ',');
        if (!comma)
            return -1;
        *comma = '\0';
        field[i] = comma + 1;
    }
    if (strchr(field[3], ','))
        return -1;
    const char *name = mkg_bench_trim(field[0]);
    if (!*name || strlen(name) >= sizeof s->name)
        return -1;
    snprintf(s->name, sizeof s->name, "%s", name);
    if (mkg_bench_parse_positive(field[1], &s->n) || mkg_bench_parse_positive(field[2], &s->k))
        return -1;
    return mkg_bench_parse_ms(field[3], s);
}

int mkg_bench_read_shapes(const char *path, mkg_bench_shape **out, int *count)
{
    char line[4096];
    int n = 0, cap = 0, lineno = 0;
    mkg_bench_shape *v = NULL;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot open shapes file: %s\n", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        ++lineno;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        if (*mkg_bench_trim(line) == '\0')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            mkg_bench_shape *grown = (mkg_bench_shape *)realloc(v, cap * sizeof *v);
            if (!grown) {
                fprintf(stderr, "%s: out of host memory\n", path);
                exit(1);
            }
            v = grown;
        }
        if (mkg_bench_parse_shape(line, &v[n]) != 0) {
            fprintf(stderr, "%s:%d: expected `name,N,K,M values space-separated` (positive ints, at most %d M)\n",
                    path, lineno, MKG_BENCH_MAX_MS);
            free(v);
            fclose(f);
            return -1;
        }
        ++n;
    }
    fclose(f);
    if (n == 0) {
        fprintf(stderr, "%s: no shapes in the file\n", path);
        free(v);
        return -1;
    }
    *out = v;
    *count = n;
    return 0;
}

// ---- layer list of the table files, autotune ----------------------------------------------

/* Every input dtype the dispatch kernel runs, each shape once per dtype. */
#define MKG_BENCH_TABLE_DTYPES 4
static const mkg_dtype mkg_bench_table_dtypes[MKG_BENCH_TABLE_DTYPES] = {MKG_DTYPE_BF16, MKG_DTYPE_FP16,
                                                                         MKG_DTYPE_FP32, MKG_DTYPE_E4M3};

int mkg_bench_layers_find(const mkg_bench_layers *l, const char *shape, mkg_dtype dt)
{
    for (int i = 0; i < l->count; ++i)
        if (l->layers[i].in_type == dt && strcmp(l->names[i], shape) == 0)
            return i;
    return -1;
}

int mkg_bench_layers_create(const mkg_bench_cfg *cfg, const mkg_bench_shape *shapes, int count,
                            mkg_bench_layers *out)
{
    const size_t cap = MKG_BENCH_TABLE_DTYPES * (size_t)count;
    memset(out, 0, sizeof *out);
    out->layers = (mkg_layer_desc *)mkg_bench_calloc(cap, sizeof *out->layers);
    out->names = (char(*)[MKG_BENCH_NAME_MAX])mkg_bench_calloc(cap, sizeof *out->names);
    out->cost = (mkg_layer_plan *)mkg_bench_calloc(cap, sizeof *out->cost);
    out->loaded = (mkg_layer_plan *)mkg_bench_calloc(cap, sizeof *out->loaded);
    out->placeholder = aligned_alloc(64, 64);
    if (!out->placeholder) {
        fprintf(stderr, "mkg_bench: out of host memory\n");
        exit(1);
    }
    for (int d = 0; d < MKG_BENCH_TABLE_DTYPES; ++d)
        for (int i = 0; i < count; ++i) {
            const mkg_bench_shape *s = &shapes[i];
            int m_max = 0;
            for (int j = 0; j < s->m_count; ++j)
                m_max = s->m[j] > m_max ? s->m[j] : m_max;
            const int found = mkg_bench_layers_find(out, s->name, mkg_bench_table_dtypes[d]);
            if (found >= 0) {
                mkg_layer_desc *l = &out->layers[found];
                if (l->n != s->n || l->k != s->k) {
                    fprintf(stderr, "mkg_bench: shape '%s' appears with N=%d K=%d and N=%d K=%d: a table file "
                            "layer needs one\n", s->name, l->n, l->k, s->n, s->k);
                    mkg_bench_layers_free(out);
                    return -1;
                }
                l->m_max = m_max > l->m_max ? m_max : l->m_max;
                continue;
            }
            mkg_layer_desc *l = &out->layers[out->count];
            snprintf(out->names[out->count++], MKG_BENCH_NAME_MAX, "%s", s->name);
            l->n = s->n;
            l->k = s->k;
            l->in_type = mkg_bench_table_dtypes[d];
            l->c_type = l->in_type == MKG_DTYPE_E4M3 ? MKG_DTYPE_BF16 : l->in_type;
            l->a_scale = MKG_BENCH_FP8_A_SCALE;
            l->b_scale = MKG_BENCH_FP8_B_SCALE;
            l->a = l->b = l->c = out->placeholder;
            l->lda = l->ldb = s->k;
            l->ldc = s->n;
            l->epilogue = MKG_EPI_STORE;
            l->m_max = m_max;
            l->mode = MKG_MODE_INVARIANT;
            l->kc = mkg_bench_layer_kc(cfg, s->n, s->k);
            if (cfg->block_scales && l->in_type == MKG_DTYPE_E4M3) {
                /* As the rows' layers (mkg_bench_layer_of): block scales, their 128-deep chunk. */
                l->a_block_scales = l->b_block_scales = (const float *)out->placeholder;
                l->a_scale = l->b_scale = 1.0f;
                l->kc = MKG_BLOCK_SCALE_K;
            }
        }
    for (int i = 0; i < out->count; ++i)
        out->layers[i].ld_a_block_scales = out->layers[i].m_max;   /* m_max is final only now */
    int bad = -1;
    mkg_status st = mkg_layers_validate(out->layers, out->count, &bad);
    if (st == MKG_OK) {
        const mkg_cost_model cm = mkg_cost_model_h200();
        st = mkg_layers_plan(&cm, out->layers, out->count, &cfg->info, out->cost);
    }
    if (st != MKG_OK) {
        fprintf(stderr, "mkg_bench: cannot plan the table layers%s%s: %s: %s\n", bad >= 0 ? ", shape " : "",
                bad >= 0 ? out->names[bad] : "", mkg_status_name(st), mkg_status_string(st));
        mkg_bench_layers_free(out);
        return -1;
    }
    return 0;
}

void mkg_bench_layers_free(mkg_bench_layers *l)
{
    free(l->placeholder);
    free(l->loaded);
    free(l->cost);
    free(l->names);
    free(l->layers);
    memset(l, 0, sizeof *l);
}

mkg_status mkg_bench_layers_load(const mkg_bench_cfg *cfg, mkg_bench_layers *l, const char *path)
{
    const mkg_status st = mkg_table_load(path, &cfg->info, l->layers, l->loaded, l->count);
    l->have_loaded = st == MKG_OK;
    return st;
}

/* The schedule with the least summed time over the rows of l's (N, K, dtype, kc) whose
 * M lies in bucket b and within m_max, among those eligible for the layer and timed in
 * every such row; -1 when no row was measured there. */
static int mkg_bench_fastest(const mkg_layer_desc *l, int kc, const mkg_bench_row *rows, int count, int b)
{
    double sum[MKG_SCHED_COUNT];
    int ok[MKG_SCHED_COUNT], seen = 0, best = -1;
    mkg_layer_desc lk = *l;
    lk.kc = kc;
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        sum[s] = 0.0;
        ok[s] = mkg_plan_eligible(&lk, s);
    }
    for (int i = 0; i < count; ++i) {
        const mkg_bench_row *r = &rows[i];
        if (r->n != l->n || r->k != l->k || r->dtype != l->in_type || r->kc != kc || r->m > l->m_max ||
            mkg_bucket_of(r->m) != b)
            continue;
        ++seen;
        for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
            ok[s] = ok[s] && r->eligible[s];
            sum[s] += ok[s] ? r->sched_us[s] : 0.0;
        }
    }
    for (int s = 0; seen > 0 && s < MKG_SCHED_COUNT; ++s)
        if (ok[s] && (best < 0 || sum[s] < sum[best]))
            best = s;
    return best;
}

mkg_status mkg_bench_autotune_save(const mkg_bench_cfg *cfg, const mkg_bench_layers *l, const mkg_bench_row *rows,
                                   int count, const char *path, int *tuned)
{
    mkg_layer_plan *plans = (mkg_layer_plan *)mkg_bench_calloc((size_t)l->count, sizeof *plans);
    memcpy(plans, l->cost, (size_t)l->count * sizeof *plans);
    *tuned = 0;
    for (int i = 0; i < l->count; ++i)
        for (int b = 0; b < plans[i].buckets; ++b) {
            const int s = mkg_bench_fastest(&l->layers[i], plans[i].kc, rows, count, b);
            if (s < 0)
                continue;
            plans[i].schedule[b] = (unsigned char)s;
            ++*tuned;
        }
    const mkg_status st = mkg_table_save(path, &cfg->info, l->layers, plans, l->count);
    free(plans);
    return st;
}

// ---- results JSON ------------------------------------------------------------------------

void mkg_bench_utc_now(char *buf, size_t size)
{
    const time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &utc);
}

/* NOTE: nvidia-smi is asked for the device by PCI bus id: its index order need not be CUDA's. */
int mkg_bench_read_clocks(const mkg_bench_cfg *cfg, int *sm_mhz, int *mem_mhz)
{
    char bus[32], cmd[256], line[256];
    MKG_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, (int)sizeof bus, cfg->device));
    snprintf(cmd, sizeof cmd,
             "nvidia-smi --id=%s --query-gpu=clocks.sm,clocks.mem --format=csv,noheader,nounits 2>/dev/null", bus);
    FILE *p = popen(cmd, "r");
    if (!p)
        return 0;
    const int parsed = fgets(line, sizeof line, p) && sscanf(line, "%d , %d", sm_mhz, mem_mhz) == 2;
    const int status = pclose(p);
    return parsed && status == 0;
}

static void mkg_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; ++s) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* A number in fmt, or null when it is not finite (JSON has no NaN or Infinity). */
static void mkg_json_number(FILE *f, const char *fmt, double v)
{
    if (isfinite(v))
        fprintf(f, fmt, v);
    else
        fputs("null", f);
}

/* {"schedule name": us, ...} over the row's eligible schedules. */
static void mkg_json_schedule_times(FILE *f, const mkg_bench_row *r, const double *us)
{
    int first = 1;
    fputc('{', f);
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        if (!r->eligible[s])
            continue;
        fprintf(f, "%s\"%s\": ", first ? "" : ", ", mkg_schedule_get(s)->name);
        mkg_json_number(f, "%.3f", us[s]);
        first = 0;
    }
    fputc('}', f);
}

static void mkg_json_row(FILE *f, const mkg_bench_row *r)
{
    const char *oracle = mkg_schedule_get(r->oracle)->name;
    int first = 1;
    fputs("    {\"shape\": ", f);
    mkg_json_string(f, r->shape);
    fprintf(f, ", \"dtype\": \"%s\", \"M\": %d, \"N\": %d, \"K\": %d, \"kc\": %d, \"mode\": \"invariant\",\n",
            mkg_dtype_name(r->dtype), r->m, r->n, r->k, r->kc);
    fprintf(f, "     \"schedule\": \"%s\", \"mkg_us\": ", mkg_schedule_get(r->schedule)->name);
    mkg_json_number(f, "%.3f", r->mkg_us);
    fprintf(f, ", \"dispatch_bitexact\": %s, \"oracle_schedule\": \"%s\", \"oracle_us\": ",
            r->dispatch_bitexact ? "true" : "false", oracle);
    mkg_json_number(f, "%.3f", r->oracle_us);
    if (r->tuned) {
        fprintf(f, ",\n     \"tuned_schedule\": \"%s\", \"tuned_us\": ", mkg_schedule_get(r->tuned_schedule)->name);
        mkg_json_number(f, "%.3f", r->tuned_us);
        fprintf(f, ", \"tuned_bitexact\": %s", r->tuned_bitexact ? "true" : "false");
    } else {
        fputs(",\n     \"tuned_schedule\": null, \"tuned_us\": null, \"tuned_bitexact\": null", f);
    }
    fputs(",\n     \"cublas_us\": ", f);
    mkg_json_number(f, "%.3f", r->cublas_us);
    fputs(", \"cublas_best_us\": ", f);
    mkg_json_number(f, "%.3f", r->cublas_best_us);
    fprintf(f, ", \"cublas_block_scaled\": %s, \"cublas_block_form\": %d", r->cublas_block_scaled ? "true" : "false",
            r->cublas_block_scaled);
    fputs(", \"max_rel_err\": ", f);
    mkg_json_number(f, "%.6e", r->max_rel_err);
    fputs(", \"cublas_max_rel_err\": ", f);
    mkg_json_number(f, "%.6e", r->cublas_max_rel_err);
    fprintf(f, ",\n     \"bitexact_all_schedules\": %s, \"mismatching_schedules\": [",
            r->bitexact ? "true" : "false");
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        if (!r->eligible[s] || !r->mismatch[s])
            continue;
        fprintf(f, "%s\"%s\"", first ? "" : ", ", mkg_schedule_get(s)->name);
        first = 0;
    }
    fputs("], \"tflops\": ", f);
    mkg_json_number(f, "%.2f", r->tflops);
    fputs(",\n     \"schedules\": ", f);
    mkg_json_schedule_times(f, r, r->sched_us);
    if (r->sustained[0].us > 0.0) {
        fputs(",\n     \"sustained\": {", f);
        for (int i = 0; i < 2; ++i) {
            const mkg_bench_sustained *x = &r->sustained[i];
            fprintf(f, "%s\"%s\": {\"us\": ", i ? ", " : "", i ? "cublas_best" : "oracle");
            mkg_json_number(f, "%.3f", x->us);
            fputs(", \"sm_mhz\": ", f);
            mkg_json_number(f, "%.1f", x->valid ? x->sm_mhz : NAN);
            fputs(", \"watts\": ", f);
            mkg_json_number(f, "%.1f", x->valid ? x->watts : NAN);
            fputs(", \"mcycles\": ", f);
            mkg_json_number(f, "%.5f", x->valid ? x->mcycles : NAN);
            fprintf(f, ", \"clock_reasons\": %llu, \"samples\": %d}", x->reasons, x->samples);
        }
        fputs("}", f);
    }
    if (r->oracle_pdl < 0) {
        fputs(",\n     \"oracle_pdl_schedule\": null, \"oracle_pdl_us\": null, \"pdl_bitexact\": null, "
              "\"schedules_pdl\": null}", f);
        return;
    }
    fputs(",\n     \"oracle_pdl_schedule\": ", f);
    mkg_json_string(f, mkg_schedule_get(r->oracle_pdl)->name);
    fputs(", \"oracle_pdl_us\": ", f);
    mkg_json_number(f, "%.3f", r->oracle_pdl_us);
    fprintf(f, ", \"pdl_bitexact\": %s,\n     \"schedules_pdl\": ", r->pdl_bitexact ? "true" : "false");
    mkg_json_schedule_times(f, r, r->pdl_us);
    fputs("}", f);
}

int mkg_bench_write_json(const char *path, const mkg_bench_cfg *cfg, const mkg_bench_meta *meta,
                         const mkg_bench_row *rows, int count)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "%s: cannot write results: %s\n", path, strerror(errno));
        return -1;
    }
    fputs("{\n  \"commit\": ", f);
    mkg_json_string(f, meta->commit);
    fprintf(f, ",\n  \"date\": \"%s\",\n  \"gpu\": ", meta->date);
    mkg_json_string(f, cfg->gpu);
    fprintf(f, ",\n  \"sms\": %d,\n  \"clocks_mhz\": ", cfg->sms);
    if (meta->clocks_valid)
        fprintf(f, "{\"sm\": %d, \"mem\": %d}", meta->sm_mhz, meta->mem_mhz);
    else
        fputs("null", f);
    /* dispatch_kernel false: a MKG_BENCH_DISPATCH=OFF build, whose "dispatched" figures are the oracle's. */
    fprintf(f, ",\n  \"l2_bytes\": %d,\n  \"replays\": %d,\n  \"producers\": %d,\n  \"dispatch_kernel\": %s,"
               "\n  \"dispatch_grid\": \"%s\",\n  \"dispatch_order\": %d,"
               "\n  \"kc_policy\": \"%s\",\n  \"kc_min\": %d,\n  \"block_scales\": %s,\n  \"l2_hints\": %s,"
               "\n  \"tma_l2_promotion\": %d,\n  \"rotation_sets\": %d,\n  \"schedule_filter\": %s%s%s,"
               "\n  \"copy_gbps\": ",
            cfg->l2_bytes, cfg->replays, mkg_launch_producers(), mkg_bench_dispatch_available() ? "true" : "false",
            cfg->dispatch_grid_units ? "units" : "sms", mkg_bench_dispatch_order(), mkg_bench_kc_policy_name(cfg),
            cfg->kc_min > 0 ? cfg->kc_min : MKG_PLAN_MIN_KC, cfg->block_scales ? "true" : "false",
            (cfg->deps_flags & MKG_DEPS_L2_DEFAULT) ? "false" : "true", mkg_tma_l2_promotion(),
            cfg->rotation_sets, cfg->sched_filter ? "\"" : "", cfg->sched_filter ? cfg->sched_filter : "null",
            cfg->sched_filter ? "\"" : "");
    mkg_json_number(f, "%.1f", cfg->copy_gbps > 0.0 ? cfg->copy_gbps : NAN);
    fputs(",\n  \"table\": ", f);
    if (meta->table) {
        fputs("{\"path\": ", f);
        mkg_json_string(f, meta->table);
        fprintf(f, ", \"status\": \"%s\"}", mkg_status_name(meta->table_status));
    } else {
        fputs("null", f);
    }
    fputs(",\n  \"rows\": [\n", f);
    for (int i = 0; i < count; ++i) {
        mkg_json_row(f, &rows[i]);
        fputs(i + 1 < count ? ",\n" : "\n", f);
    }
    fputs("  ]\n}\n", f);
    const int failed = ferror(f);
    if (fclose(f) != 0 || failed) {
        fprintf(stderr, "%s: error while writing results\n", path);
        return -1;
    }
    return 0;
}
