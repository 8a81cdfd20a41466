/* mkg_test_shims.h - extern "C" helpers the GoogleTest files call.
 *
 * A mkg_case owns one GEMM's device buffers, padded and poisoned so that
 * out-of-bounds reads show up as NaN and out-of-bounds writes as changed bytes:
 *   A: M x K in rows of lda = K + 8 (the 8-element pad holds NaN)
 *   B: N x K in rows of ldb = K + 8 (pad holds NaN)
 *   C: (M + 3) rows of ldc = N rounded up to 16 bytes + 16 bytes, all 0xFF
 *      before each run; only the M x N block may change.
 * Running a schedule goes through the public API (create, launch, destroy).
 */
#ifndef MKG_TEST_SHIMS_H
#define MKG_TEST_SHIMS_H

#include "mkg_harness.h"
#include "mkgemm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* e4m3 cases: per-tensor scales (powers of two: the reference scales exactly). */
#define MKG_SHIM_FP8_A_SCALE 0.5f
#define MKG_SHIM_FP8_B_SCALE 0.25f

typedef struct mkg_case {
    int m, n, k;
    mkg_dtype in, out;
    long long lda, ldb, ldc, c_rows;
    void *a, *b, *c;
    void *keep;                 /* a second C of the same shape, for bitwise comparisons */
    double *ref;                /* M x N FP64 reference (NULL until computed) */
    int kc;                     /* canonical K chunk of every run (0: one chunk) */
    void *ws;                   /* split-K workspace (partials poisoned with NaN), or NULL */
    size_t ws_bytes;
    float *bsa, *bsb;           /* e4m3 block scales (mkg_case_set_block_scales), or NULL */
    long long ld_bsa;
} mkg_case;

/* Empty string when a CC 9.0 GPU is usable, otherwise the reason to skip. */
const char *mkg_shim_gpu_skip_reason(void);

/* Seed for fresh random data: MKG_TEST_SEED if set, else time-based; printed once. */
unsigned long long mkg_shim_seed(void);

mkg_status mkg_case_init(mkg_case *c, int m, int n, int k, mkg_dtype in, mkg_dtype out, unsigned long long seed);
void mkg_case_free(mkg_case *c);

/* Copies host rows (M x K for A, N x K for B, K contiguous) over the operands. */
mkg_status mkg_case_upload(mkg_case *c, const void *a_host, const void *b_host);

mkg_status mkg_case_reference(mkg_case *c);

/* Sets the case's K chunk and gives it a workspace for every schedule: counters
 * zero, partials 0xFF (NaN) so a read before the write shows up in C. */
mkg_status mkg_case_set_kc(mkg_case *c, int kc);

/* e4m3 cases: gives the case 1 x 128 activation and 128 x 128 weight block scales, log-uniform in
 * [lo, hi) (lo = hi: every scale equal), with ld_a_block_scales = M + 5 (the 5-float pad holds
 * NaN), and sets kc = 128 (mkg_case_set_kc). The reference then applies them. */
mkg_status mkg_case_set_block_scales(mkg_case *c, unsigned long long seed, float lo, float hi);
/* Fills all of C's allocation with 0xFF. */
mkg_status mkg_case_poison(mkg_case *c);

/* The case's descriptor for its first m rows, as mkg_case_run builds it. */
mkg_gemm_desc mkg_case_desc(const mkg_case *c, int m);

/* Poisons C, runs schedule s with grid (0 = one CTA per SM) on a GEMM of the
 * case's first m rows (m <= c->m), and synchronizes. */
mkg_status mkg_case_run(mkg_case *c, int s, int grid, int m);
/* mkg_case_run with launch flags (MKG_LAUNCH_FLAG_*). */
mkg_status mkg_case_run_flags(mkg_case *c, int s, int grid, int m, unsigned int flags);

/* Error of C against the reference over the first m rows. */
mkg_status mkg_case_errors(const mkg_case *c, int m, mkg_err_stats *out);

/* Bytes of C outside the first m rows x N that are no longer 0xFF. */
long long mkg_case_outside_writes(const mkg_case *c, int m);

/* Copies C into keep; then counts elements of the first m rows that differ bitwise. */
mkg_status mkg_case_keep(mkg_case *c);
long long mkg_case_mismatch_vs_keep(const mkg_case *c, int m);

/* Copies the M x N block of C to host memory (dense, N per row). */
mkg_status mkg_case_download(const mkg_case *c, void *host);

/* Two chains of bf16 GEMMs sharing C1: C1 = A . B^T, C2 = C1 . B2^T, then C1 = A2 . B^T,
 * C3 = C1 . B2^T. First with plain launches (the bitwise references for C2 and C3), then
 * `reps` times with C1, C2, C3 poisoned (NaN) and all four GEMMs launched back to back
 * with MKG_LAUNCH_FLAG_PDL: a GEMM that read C1 before its producer finished (NaN), or
 * overwrote C1 while the previous GEMM still read it (C2 from A2's C1), shows.
 * *mismatch: elements of C2 and C3 that differ from their references, summed over reps;
 * *bad_flags: the status of a launch with an unknown flag bit. */
mkg_status mkg_shim_pdl_chain(int s, int m, int n, int k, int n2, int reps, unsigned long long seed,
                              long long *mismatch, mkg_status *bad_flags);

/* Runs `steps` layers (indices in order[], device memory) of an uploaded table in
 * one persistent launch of the dispatch test kernel (bf16 layers; grid CTAs). plain = 1:
 * the variant compiled for plain bf16 stores (other layers: MKG_DISPATCH_NOT_PLAIN). */
cudaError_t mkg_test_run_layers(const mkg_layer_dev *rows, int count, const int *m_cur, unsigned int *err,
                                const int *order, int steps, int grid, int plain, cudaStream_t stream);

/* mkg_test_run_layers with plain = 1 for the other input dtypes: e4m3 layers (per-tensor scales,
 * bf16 C) and fp32 layers (tf32 math, fp32 C). A layer of another dtype sets the error word
 * (MKG_DISPATCH_BAD_DTYPE) and is skipped. */
cudaError_t mkg_test_run_layers_e4m3(const mkg_layer_dev *rows, int count, const int *m_cur, unsigned int *err,
                                     const int *order, int steps, int grid, cudaStream_t stream);
cudaError_t mkg_test_run_layers_tf32(const mkg_layer_dev *rows, int count, const int *m_cur, unsigned int *err,
                                     const int *order, int steps, int grid, cudaStream_t stream);

/* The chunk-stepping form (a CHUNKS = 1 pick, mkg_dispatch_consume_chunked, run-time epilogue) for
 * bf16 and for e4m3 layers: runs chunked layers (kc < K) and e4m3 layers with block scales on the
 * rows that fold chunks. */
cudaError_t mkg_test_run_layers_chunked(const mkg_layer_dev *rows, int count, const int *m_cur, unsigned int *err,
                                        const int *order, int steps, int grid, cudaStream_t stream);
cudaError_t mkg_test_run_layers_chunked_e4m3(const mkg_layer_dev *rows, int count, const int *m_cur,
                                             unsigned int *err, const int *order, int steps, int grid,
                                             cudaStream_t stream);

/* mkg_bucket_of as the device computes it, for M = 1 .. n: out[m - 1] (host memory). 0 or a
 * CUDA error. */
int mkg_test_device_buckets(int n, int *out);

#ifdef __cplusplus
}
#endif
#endif /* MKG_TEST_SHIMS_H */
