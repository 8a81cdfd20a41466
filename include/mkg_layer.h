/* mkg_layer.h - layers, M buckets, the cost-model planner and the per-layer
 * schedule table that device code dispatches from.
 *
 * At startup the host describes each layer once (mkg_layer_desc), the planner
 * fills one schedule per M bucket (cost model, or a measured table file), and
 * the whole table goes to device memory once. At run time device code reads a
 * layer's current M, takes its bucket and runs that bucket's schedule.
 * Buckets are finer at small M: upper bounds 1, 2, 3, 4, 6, 8, 12, 16, 24, ...
 * (powers of two and the midpoints between them).
 */
#ifndef MKG_LAYER_H
#define MKG_LAYER_H

#include <stddef.h>

#include "mkg_gemm.h"
#include "mkg_schedules.h"
#include "mkg_status.h"
#include "mkg_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mkg_mode {
    MKG_MODE_INVARIANT = 0,     /* bits of row i depend on A[i,:], B and kc only (SPEC section 5) */
    MKG_MODE_FAST = 1,          /* any schedule, any chunking, for speed */
    MKG_MODE_COUNT
} mkg_mode;

/** A linear layer as the application describes it once at startup. */
typedef struct mkg_layer_desc {
    int n, k;                   /**< output features, input features */
    mkg_dtype in_type;          /**< A and B dtype: bf16, fp16, fp32 (tf32 math) or e4m3 (per-tensor or block scales) */
    mkg_dtype c_type;           /**< output dtype (bf16, fp16 or fp32) */
    const void *a;              /**< activations, m_max x K, row stride lda */
    const void *b;              /**< weights, N x K, row stride ldb */
    void *c;                    /**< output, m_max x N, row stride ldc */
    long long lda, ldb, ldc;
    mkg_epilogue epilogue;
    const void *aux;            /**< residual (MKG_EPI_RESIDUAL), row stride ld_aux */
    long long ld_aux;
    mkg_gemm_deps deps;         /**< megakernel dependencies (zero: none) */
    int m_max;                  /**< largest M any step will run */
    mkg_mode mode;
    int kc;                     /**< canonical K chunk; 0: the planner's (mkg_layer_kc) */
    float a_scale, b_scale;     /**< e4m3 inputs: per-tensor dequantisation scales, finite and nonzero, as in
                                     mkg_gemm_desc (C = epilogue(a_scale * b_scale * A . B^T)); ignored otherwise */
    /** e4m3 block scales (both NULL: none), as in mkg_gemm_desc: 1 x 128 activation scales,
     *  float [ceil(K / 128)][ld_a_block_scales] with ld_a_block_scales >= m_max, and 128 x 128
     *  weight scales, float [ceil(N / 128)][ceil(K / 128)]. The K block is the canonical chunk:
     *  kc is 128 (0 means 128 here). Such a layer runs only where device code steps through K
     *  chunks (a CHUNKS = 1 pick: mkg_dispatch_consume_chunked, the megakernel's loop); a
     *  one-chunk dispatcher reports it (MKG_DISPATCH_CHUNKED) and skips it. */
    const float *a_block_scales;
    long long ld_a_block_scales;
    const float *b_block_scales;
} mkg_layer_desc;

// ---- M buckets ------------------------------------------------------------------------

#define MKG_MAX_BUCKETS 40

/* Bucket of M >= 1: the smallest b with mkg_bucket_upper(b) >= m. */
static MKG_HD int mkg_bucket_of(int m)
{
    if (m <= 2)
        return m < 1 ? 0 : m - 1;
    unsigned v = (unsigned)(m - 1);
#ifdef __CUDA_ARCH__
    const int e = 31 - __clz((int)v);           /* floor(log2(m - 1)): 2^e < m <= 2^(e+1) */
#else
    int e = 0;                                  /* floor(log2(m - 1)): 2^e < m <= 2^(e+1) */
    while (v >>= 1)
        ++e;
#endif
    return (2 * m <= 3 << e) ? 2 * e : 2 * e + 1;  /* m <= 3 * 2^(e-1): the midpoint bucket */
}

/* Largest M of bucket b. */
static MKG_HD int mkg_bucket_upper(int b)
{
    if (b < 2)
        return b + 1;
    const int e = b / 2;
    return (b & 1) ? 2 << e : 3 << (e - 1);
}

static MKG_HD int mkg_bucket_count(int m_max)
{
    return mkg_bucket_of(m_max) + 1;
}

// ---- GPU and cost model -----------------------------------------------------------------

typedef struct mkg_gpu_info {
    char name[96];              /* cudaDeviceProp.name */
    int sms;                    /* multiprocessors */
} mkg_gpu_info;

/* Constants of the analytic cost model, calibrated per GPU (mkg_cost_model_h200()). */
typedef struct mkg_cost_model {
    double sm_tflops;           /* dense 16-bit MMA rate of one SM under sustained load, TFLOP/s */
    double dram_tbps;           /* achievable DRAM bandwidth, TB/s */
    double l2_tbps;             /* L2 -> SM operand bandwidth of the whole chip, TB/s */
    double l2_mb;               /* L2 capacity usable for operand reuse, MB */
    double mem_latency_us;      /* TMA round trip that in-flight stages must cover */
    double launch_us;           /* launch, prologue and final drain of one GEMM */
    double unit_us;             /* fixed cost of one work unit (tile switch, epilogue issue) */
    double epi_gbps;            /* epilogue store rate of one SM, GB/s */
    double eff_p64;             /* tensor efficiency factor of 64-row MMA tiles (both consumers share X) */
    double eff_wn[5];           /* tensor efficiency by consumer wgmma N: >=256, 192, 128, 64, <=32 */
    double split_us;            /* extra cost per split unit: partial write, counter, fold read */
    double overlap_p;           /* compute and DRAM time combine as (tc^p + tm^p)^(1/p): large p = max */
    double stage_us;            /* one pipeline stage's round trip (full wait, wgmma commit and wait,
                                   release): a unit takes at least its stages times this */
    double bscale_load_us;      /* block-scaled layers: one scale a consumer thread loads (and applies)
                                   per K chunk step; a swap row loads 2 + wgmma N / 4, the others 3 */
    double tail_units;          /* megakernel planning (0 for launches of their own): units of time a layer
                                   pays past its waves when its input lands by 64-row blocks (M > 256), the
                                   last block's units starting only as it lands */
    int tail_per_tile;          /* 1: a split row's tail is its tile's whole time (splits x t_unit); 0: one
                                   unit's */
} mkg_cost_model;

/** The model calibrated on the H200 (bench/results, bench/NOTES.md). */
mkg_cost_model mkg_cost_model_h200(void);

/** Predicted microseconds of schedule s for M x N x K (chunk kc) of input dtype `in` on `sms` SMs,
 *  for a layer without block scales (the planner adds their per-chunk cost itself);
 *  < 0 if s is unknown. The model's constants are for 16-bit operands: a GEMM of another input
 *  dtype is modelled as the 16-bit GEMM of the same bytes along K (K * size(in) / 2 elements),
 *  which also matches its tensor rate (e4m3 twice, tf32 half the 16-bit rate per element). */
double mkg_cost_predict_us(const mkg_cost_model *cm, int s, int m, int n, int k, int kc, mkg_dtype in, mkg_dtype out,
                           int sms);

/** The layer's canonical K chunk: l->kc when set, else 128 for a block-scaled layer, else the
 *  planner's choice from N and K (mkg_plan_kc; never from M). */
int mkg_layer_kc(const mkg_layer_desc *l, int sms);

/** Eligible: s runs this layer at M (dtype, chunk fold) and, in invariant mode, the
 *  determinism contract covers it (every row today: all are bitwise identical). */
int mkg_plan_eligible(const mkg_layer_desc *l, int s);

/** Cost-model choice for layer l at M (the bucket's upper M when planning a table). */
mkg_status mkg_plan_pick(const mkg_cost_model *cm, const mkg_layer_desc *l, const mkg_gpu_info *g, int m, int *s);

/** Writes, for layer l at M, every eligible schedule with its predicted time and the
 *  terms behind it, and why the winner won; returns the length written (snprintf style). */
int mkg_plan_explain(const mkg_cost_model *cm, const mkg_layer_desc *l, const mkg_gpu_info *g, int m, char *buf,
                     size_t size);

// ---- planned table ----------------------------------------------------------------------

/** One layer's plan: its chunk and one schedule per M bucket. */
typedef struct mkg_layer_plan {
    int kc;
    int buckets;
    unsigned char schedule[MKG_MAX_BUCKETS];
} mkg_layer_plan;

/** The layer as a GEMM descriptor of m rows with chunk kc (no workspace; kc 0 with block
 *  scales: MKG_BLOCK_SCALE_K). */
mkg_gemm_desc mkg_layer_gemm_desc(const mkg_layer_desc *l, int m, int kc);

/** Validates every layer; *bad gets the first bad layer's index (-1 if none). */
mkg_status mkg_layers_validate(const mkg_layer_desc *layers, int count, int *bad);

/** Fills plans[i] for every layer from the cost model. */
mkg_status mkg_layers_plan(const mkg_cost_model *cm, const mkg_layer_desc *layers, int count,
                           const mkg_gpu_info *g, mkg_layer_plan *plans);

/** Writes a versioned table file keyed by GPU name, SM count and library version. */
mkg_status mkg_table_save(const char *path, const mkg_gpu_info *g, const mkg_layer_desc *layers,
                          const mkg_layer_plan *plans, int count);

/** Reads a table file into plans; a missing, corrupt, truncated, foreign-GPU,
 *  other-version or other-layer-list file returns its own status and leaves plans untouched. */
mkg_status mkg_table_load(const char *path, const mkg_gpu_info *g, const mkg_layer_desc *layers,
                          mkg_layer_plan *plans, int count);

// ---- the table on the device ----------------------------------------------------------

/** One layer's row in device memory (64-byte aligned): its params, encoded for m_max
 *  rows, and its schedule per M bucket. */
typedef struct mkg_layer_dev {
    mkg_gemm_params params;
    int m_max;
    int buckets;
    int planned;                            /* 1 once the host filled the row */
    unsigned char schedule[MKG_MAX_BUCKETS];
} mkg_layer_dev;

/* Reasons in the device error word: (layer + 1) << 8 | reason; 0 means no error. */
typedef enum mkg_dispatch_error {
    MKG_DISPATCH_OK = 0,
    MKG_DISPATCH_BAD_LAYER = 1,             /* layer index outside the table */
    MKG_DISPATCH_NOT_PLANNED = 2,           /* row never filled */
    MKG_DISPATCH_M_RANGE = 3,               /* current M < 1 or > m_max */
    MKG_DISPATCH_BAD_SCHEDULE = 4,          /* bucket holds no schedule of this build */
    MKG_DISPATCH_BAD_DTYPE = 5,             /* the kernel was built for another input dtype */
    MKG_DISPATCH_CHUNKED = 6,               /* more than one K chunk, or block scales: the dispatcher runs
                                               one-chunk layers (its pick has CHUNKS = 0) */
    MKG_DISPATCH_NOT_PLAIN = 7              /* a kernel compiled for plain stores of one output type met a layer
                                               with another epilogue, output type or a dependency signal */
} mkg_dispatch_error;

/** The uploaded table: rows, current M per layer, and the error word, all in device memory. */
typedef struct mkg_table mkg_table;

/** Validates the layers, encodes their tensor maps (m_max rows), fills each row from
 *  plans (NULL: the cost model) and uploads everything once. */
mkg_status mkg_table_create(const mkg_layer_desc *layers, int count, const mkg_layer_plan *plans, mkg_table **out);
void mkg_table_destroy(mkg_table *t);

const mkg_layer_dev *mkg_table_rows(const mkg_table *t);   /**< device rows */
int *mkg_table_m(const mkg_table *t);                      /**< device: current M of each layer */
unsigned int *mkg_table_error(const mkg_table *t);         /**< device: the error word */
int mkg_table_count(const mkg_table *t);

/** Sets layer's current M (asynchronous copy on stream; M outside 1..m_max is refused). */
mkg_status mkg_table_set_m(mkg_table *t, int layer, int m, cudaStream_t stream);

/** Reads and clears the error word (synchronizes the stream). */
mkg_status mkg_table_take_error(mkg_table *t, unsigned int *word, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif /* MKG_LAYER_H */
