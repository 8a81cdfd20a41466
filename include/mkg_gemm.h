/* mkg_gemm.h - the GEMM descriptor, its validation, and the host launch API.
 *
 *   C[M x N] = epilogue(A[M x K] . B[N x K]^T), FP32 accumulation.
 *   A row-major (K contiguous, lda), B stored N x K (K contiguous, ldb), C row-major (ldc).
 *
 * mkg_gemm_params is what device code reads: the operands' TMA tensor maps (one
 * per TMA box height a schedule may ask for) and C's address and shape. A user
 * of the device headers builds it with mkg_gemm_encode_params() and keeps it in
 * device memory; mkg_gemm_create() does that and uploads it for the shipped
 * persistent kernel. Nothing here launches on invalid input.
 */
#ifndef MKG_GEMM_H
#define MKG_GEMM_H

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "mkg_schedules.h"
#include "mkg_status.h"
#include "mkg_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* TMA box heights: a schedule loads TM rows of A and TN rows of B per stage. */
#define MKG_BOX_CLASSES 8
static MKG_HD int mkg_box_class(int rows)
{
    return rows == 8 ? 0 : rows == 16 ? 1 : rows == 32 ? 2 : rows == 64 ? 3
         : rows == 128 ? 4 : rows == 256 ? 5 : rows == 192 ? 6 : rows == 176 ? 7 : -1;
}
static MKG_HD int mkg_box_rows(int cls)
{
    return cls == 6 ? 192 : cls == 7 ? 176 : 8 << cls;
}

/** Tile-granular dependencies of a GEMM inside a persistent megakernel (all zero:
 *  none). Counters are per block of 64 rows of M. The producer loads a unit's first
 *  stages of B, then waits until A's row blocks are ready, then loads A; after the
 *  epilogue has written a 64-row slice of C, it adds rows x columns written to done.
 *  Every wait is bounded: on timeout the first staller writes {tag + 1, row block,
 *  target, value seen} to stall[0..3], and every later wait gives up at once. */
typedef struct mkg_gemm_deps {
    const unsigned int *wait;       /**< A row block rb is ready when wait[rb] >= rows(rb) * wait_per_row */
    unsigned int wait_per_row;
    unsigned int *done;             /**< per 64-row block of C: elements written (NULL: no signal) */
    unsigned int *stall;            /**< 4 words, zero before the launch; required when wait is set */
    unsigned int tag;               /**< who is waiting, for the stall report */
    unsigned long long timeout_ns;  /**< a wait longer than this is a stall */
    unsigned long long *stamps;     /**< optional timeline (NULL: off): unit u's producer writes {reached u,
                                         A rows ready} (globaltimer ns) to stamps[2 u], stamps[2 u + 1] */
    unsigned int flags;             /**< MKG_DEPS_* bits (0: none) */
} mkg_gemm_deps;

/** mkg_gemm_deps::flags. */
#define MKG_DEPS_L2_TAIL 1u        /**< before the wait, the producer also asks the L2 for the unit's B tiles
                                        past the first stages (the weight stream goes on while A is not ready) */
#define MKG_DEPS_B_EVICT_FIRST 2u  /**< B (weights, read once per step) loads with an L2 evict-first hint, so
                                        they do not push activations, caches and code out of the L2 (a GEMM
                                        whose M fits one tile streams B, and without deps.wait A, that way
                                        whatever the flags say, unless MKG_DEPS_L2_DEFAULT) */
#define MKG_DEPS_A_MAP_PREFETCH 4u /**< after those first stages, the producer asks the TMA unit for A's tensor
                                        map before it waits, so A's first load after the wait does not fetch it */
#define MKG_DEPS_L2_DEFAULT 8u    /**< every operand load under the L2's default policy, also where the library
                                        would stream a one-tile GEMM's operands evict-first (A/B measurement) */
#define MKG_DEPS_READY_IN_ORDER 16u /**< a unit whose input is already complete when its producer reaches it
                                        loads in stage order (A and B of each stage together) instead of B
                                        first; one producer thread only (the megakernel's default) */
#define MKG_DEPS_PRE_SHIFT 8       /**< flags bits 8..15: at most that many B stages before the wait (0: as many
                                        as the ring holds) */
#define MKG_DEPS_TAIL_SHIFT 16     /**< flags bits 16..23: MKG_DEPS_L2_TAIL asks for at most that many K tiles
                                        past the first stages (0: the rest of the unit) */
#define MKG_DEPS_KNOWN                                                                                 \
    (MKG_DEPS_L2_TAIL | MKG_DEPS_B_EVICT_FIRST | MKG_DEPS_A_MAP_PREFETCH | MKG_DEPS_L2_DEFAULT |             \
     MKG_DEPS_READY_IN_ORDER | (0xffu << MKG_DEPS_PRE_SHIFT) | (0xffu << MKG_DEPS_TAIL_SHIFT))

/** Depth of an fp8 block scale's K block (mkg_gemm_desc::a_block_scales), which is also the
 *  canonical K chunk of a block-scaled GEMM. */
#define MKG_BLOCK_SCALE_K 128

/** A GEMM as the caller describes it. Leading dimensions are in elements. */
typedef struct mkg_gemm_desc {
    int m, n, k;
    mkg_dtype a_type, b_type;   /**< input dtypes, equal: bf16, fp16, fp32 (tf32 math) or e4m3 */
    mkg_dtype c_type;           /**< output dtype (bf16, fp16 or fp32) */
    const void *a;              /**< device pointer, M x K, row stride lda */
    const void *b;              /**< device pointer, N x K, row stride ldb */
    void *c;                    /**< device pointer, M x N, row stride ldc */
    long long lda, ldb, ldc;
    mkg_epilogue epilogue;
    const void *aux;            /**< MKG_EPI_RESIDUAL: R, M x N of c_type, row stride ld_aux (may equal c) */
    long long ld_aux;
    mkg_gemm_deps deps;         /**< megakernel dependencies (zero: none) */
    int kc;                     /**< canonical K chunk: 0 or >= K for one chunk, else a multiple of 64
                                     (of 128 for fp8 inputs: a chunk edge is a stage edge) */
    void *workspace;            /**< split-K partials + tile counters; NULL: mkg_gemm_create allocates */
    size_t workspace_bytes;     /**< size of workspace (see mkg_gemm_workspace_bytes) */
    float a_scale, b_scale;     /**< fp8 (e4m3) inputs: per-tensor dequantisation scales, C = epilogue(
                                     a_scale * b_scale * (A . B^T)), the product applied once to the FP32
                                     sum after the chunk fold; must be finite and nonzero. Other input
                                     dtypes ignore them. */
    /** fp8 (e4m3) block scales (both NULL: none). The K block is 128 deep and is the canonical
     *  chunk, so kc must be 128. C = epilogue(a_scale * b_scale * sum over K blocks kb of
     *  sa(row, kb) * sb(col / 128, kb) * (A . B^T restricted to block kb)), each block's FP32
     *  partial scaled once (sa * sb, then the partial times that) before the chunk fold.
     *  a_block_scales: 1 x 128 activation scales, float [ceil(K / 128)][ld_a_block_scales],
     *  M contiguous (row i of block kb at kb * ld_a_block_scales + i).
     *  b_block_scales: 128 x 128 weight scales, float [ceil(N / 128)][ceil(K / 128)], dense.
     *  The factor sa * sb is an FP32 product: it overflows to Inf or underflows to 0 where the
     *  exact product would not. Only the chunked kernel instances apply them (mkg_gemm_launch
     *  always picks those); a device caller that runs one-chunk steps (ONE = true, e.g.
     *  mkg_dispatch_consume_units_one) ignores them. Split rows keep every chunk's partial: the
     *  workspace grows with ceil(K / 128). No dependency wait (deps.wait) with block scales. */
    const float *a_block_scales;
    long long ld_a_block_scales;
    const float *b_block_scales;
} mkg_gemm_desc;

/* TMA store boxes of C: {128 bytes of columns, rows} for rows 8, 16, 32, 64 (box classes 0..3). */
#define MKG_C_BOX_CLASSES 4

/** What device code reads for one GEMM. Lives in device memory, 64-byte aligned. */
typedef struct mkg_gemm_params {
    CUtensorMap a_map[MKG_BOX_CLASSES];     /* box {128 B of k, rows} of A, 128B swizzle */
    CUtensorMap b_map[MKG_BOX_CLASSES];     /* box {128 B of k, rows} of B, 128B swizzle */
    CUtensorMap c_map[MKG_C_BOX_CLASSES];   /* box {128 B / elem, rows} of C, 128B swizzle */
    void *c;
    long long ldc;
    int m, n, k;
    int in_type, c_type, epilogue;
    const void *aux;                        /* residual R (MKG_EPI_RESIDUAL) */
    long long ld_aux;
    mkg_gemm_deps deps;
    int kc;                                 /* canonical K chunk (see mkg_chunk_count) */
    int chunks;                             /* mkg_chunk_count(k, kc), so that device code divides by no
                                               run-time value to find a unit's chunks (v64) */
    unsigned int *counters;                 /* split-K: arrivals per (tile, consumer), kept at 0 */
    float *partials;                        /* split-K: per (tile, chunk, consumer) FP32 partials */
    float alpha;                            /* fp8 inputs: a_scale * b_scale (1 otherwise) */
    const float *a_bscales;                 /* fp8 block scales (see mkg_gemm_desc), or NULL */
    long long ld_a_bscales;
    const float *b_bscales;
} mkg_gemm_params;

/** Columns of C: N, or N / 2 under MKG_EPI_SILU_MUL. */
static inline long long mkg_gemm_c_cols(const mkg_gemm_desc *d)
{
    return d->epilogue == MKG_EPI_SILU_MUL ? d->n / 2 : d->n;
}

/** Checks every field of d; returns the first problem found, MKG_OK if none. */
mkg_status mkg_gemm_validate(const mkg_gemm_desc *d);

/** MKG_OK if schedule s exists and can run d (d must already be valid). */
mkg_status mkg_schedule_check(const mkg_gemm_desc *d, int s);

/** MKG_OK if the current device is compute capability 9.0. */
mkg_status mkg_device_check(void);

/** Validates d and encodes its tensor maps into *out (host memory). */
mkg_status mkg_gemm_encode_params(const mkg_gemm_desc *d, mkg_gemm_params *out);

/** L2 promotion of every tensor map mkg_gemm_encode_params writes, in bytes: how much the L2
 *  fetches from DRAM around a TMA box row that misses. 128 B, one box row: 132 SMs streaming
 *  weights in the GEMM's boxes read at 1.05 of the copy bandwidth with 128 B or none and at
 *  0.93-0.97 with 256 B (tools/weight_stream_probe.cu, bench/NOTES.md v72). */
#define MKG_TMA_L2_PROMOTION_DEFAULT 128
/** MKG_TMA_L2_PROMOTION_DEFAULT, or 0, 64, 128 or 256 from MKG_TMA_L2_PROMOTION in the environment
 *  (read once; an A/B switch for measurements). */
int mkg_tma_l2_promotion(void);

/** A prepared GEMM: validated descriptor plus its params uploaded to the device. */
typedef struct mkg_gemm_op mkg_gemm_op;

/** Validates, encodes and uploads; *out is NULL on failure. */
mkg_status mkg_gemm_create(const mkg_gemm_desc *d, mkg_gemm_op **out);

/** Enqueues the persistent kernel for schedule s on stream; grid 0 = one CTA per SM. Cluster
 *  rows (CL > 1) round the grid up to whole clusters, at most as many as are resident at once. */
mkg_status mkg_gemm_launch(const mkg_gemm_op *op, int s, int grid, cudaStream_t stream);

/** Most TMA-issuing threads per CTA in the kernels this library launches: MKG_LAUNCH_PRODUCERS (2:
 *  lanes 0 of warps 0 and 1 of the producer warpgroup fill alternate ring slots), or 1 or 2 from
 *  MKG_PRODUCERS in the environment (read once; an A/B switch for measurements). A row takes at
 *  most its mkg_shape::PRODUCERS (rows with stages over 24 KB keep one), cluster rows one. */
int mkg_launch_producers(void);

/** mkg_gemm_launch with flags (MKG_LAUNCH_FLAG_*; unknown bits: MKG_ERR_BAD_FLAGS).
 *  MKG_LAUNCH_FLAG_PDL launches with programmatic stream serialization: the kernel's
 *  set-up (barrier init, tensor-map prefetch) overlaps the tail of the previous kernel
 *  in the stream, and it reads A, B and the workspace and writes C only after that
 *  kernel has completed (griddepcontrol.wait). The op's params must not be written by
 *  the previous kernel. The kernel lets its own dependents launch early
 *  (griddepcontrol.launch_dependents): a kernel you launch after it with programmatic
 *  stream serialization must call cudaGridDependencySynchronize() before it reads C or
 *  the workspace. */
#define MKG_LAUNCH_FLAG_PDL 1u
/** A GEMM of one K chunk whose epilogue is a plain store of C in the input's natural type
 *  (bf16 -> bf16, fp16 -> fp16, fp32 -> fp32, e4m3 -> bf16; no dependency signal) runs a
 *  kernel compiled for only that epilogue. MKG_LAUNCH_FLAG_GENERIC_EPILOGUE runs the kernel
 *  that reads the output type and epilogue kind at run time instead; both write the same
 *  bits (for tests and measurements). */
#define MKG_LAUNCH_FLAG_GENERIC_EPILOGUE 2u
mkg_status mkg_gemm_launch_ex(const mkg_gemm_op *op, int s, int grid, unsigned int flags, cudaStream_t stream);

/** CTAs that mkg_gemm_launch(op, s, grid, ...) runs (0 for a bad op, schedule or grid). */
int mkg_gemm_launch_grid(const mkg_gemm_op *op, int s, int grid);

/** Cluster rows: clusters of schedule s's kernel resident at once, as the runtime
 *  reported it when op was created (0: not a cluster row, or unknown). */
int mkg_gemm_cluster_fit(const mkg_gemm_op *op, int s);

/** Device address of the op's mkg_gemm_params, for inline callers. */
const mkg_gemm_params *mkg_gemm_device_params(const mkg_gemm_op *op);

/** Releases an op (NULL is fine). */
void mkg_gemm_destroy(mkg_gemm_op *op);

/** One-shot: validate, create, launch schedule s, synchronize the stream, destroy. */
mkg_status mkg_gemm(const mkg_gemm_desc *d, int s, cudaStream_t stream);

/** Number of work units schedule s cuts an M x N x K GEMM with chunk kc into (0 if s is unknown). */
int mkg_schedule_units(int s, int m, int n, int k, int kc);

/** Workspace bytes schedule s needs for this GEMM (0 when it does not split). */
size_t mkg_schedule_workspace_bytes(int s, int m, int n, int k, int kc);

/** Workspace bytes that cover every schedule for this descriptor's shape and kc. */
size_t mkg_gemm_workspace_bytes(const mkg_gemm_desc *d);

/** Workspace layout: tile counters in the first mkg_workspace_counter_bytes(m, n) bytes
 *  (they must be zero before the first launch; kernels leave them at zero), then the
 *  FP32 chunk partials. */
size_t mkg_workspace_counter_bytes(int m, int n);

/** Points p's counters and partials into workspace (NULL: none) for an m x n output. */
void mkg_gemm_bind_workspace(mkg_gemm_params *p, int m, int n, void *workspace);

/* Largest warpgroup wgmma N whose kernels handle more than one K chunk: folding chunk
 * partials in registers needs a second accumulator set (WN/2 more registers), which
 * spills past WN = 128 under the 232-register consumer budget (ptxas, sm_90a). */
#define MKG_CHUNKED_MAX_WN 128

#ifdef __cplusplus
}
#endif
#endif /* MKG_GEMM_H */
