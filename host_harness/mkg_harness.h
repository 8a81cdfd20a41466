/* mkg_harness.h - what tests and benchmarks use to check mkgemm: FP64 reference
 * GEMMs (CPU and GPU), random operands, error statistics computed on the device
 * with CUB, and element conversions.
 *
 * Operands follow mkg_gemm.h: A is M x K (lda), B is N x K (ldb); the
 * reference R is M x N doubles (ldr). All GPU calls are asynchronous on the
 * given stream unless they return statistics.
 */
#ifndef MKG_HARNESS_H
#define MKG_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "mkg_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Error of C against an FP64 reference over the M x N block. */
typedef struct mkg_err_stats {
    double max_abs_err;         /* max |C - R| over finite pairs */
    double max_abs_ref;         /* max |R| */
    double max_rel_err;         /* max_abs_err / max_abs_ref (0 when R is all zero) */
    double norm_rel_err;        /* ||C - R||_F / ||R||_F */
    long long nonfinite;        /* elements where R is finite and C is not */
} mkg_err_stats;

/* ---- element conversions (host) ---- */
float mkg_load_float(const void *p, mkg_dtype t, size_t idx);
void mkg_store_float(void *p, mkg_dtype t, size_t idx, float v);   /* round to nearest even */
uint16_t mkg_float_to_bf16_bits(float v);
uint16_t mkg_float_to_fp16_bits(float v);
float mkg_bf16_bits_to_float(uint16_t h);
float mkg_fp16_bits_to_float(uint16_t h);
float mkg_e4m3_bits_to_float(uint8_t b);
uint8_t mkg_float_to_e4m3_bits(float v);       /* nearest, ties to even, saturating to +-448 */

/* ---- CPU FP64 reference: R[i][j] = sum_k A[i][k] * B[j][k] in double ---- */
void mkg_ref_gemm_cpu(const void *a, const void *b, mkg_dtype in, int m, int n, int k, long long lda,
                      long long ldb, double *r, long long ldr);

/* ---- GPU ---- */
/* Fills rows x cols of dst (row stride ld) with values uniform in [-scale, scale),
 * rounded to t (fp32: to tf32, the precision fp32 operands have on the tensor cores);
 * element (i, j) depends only on (seed, i, j). */
cudaError_t mkg_fill_random(void *dst, mkg_dtype t, long long rows, long long cols, long long ld,
                            unsigned long long seed, float scale, cudaStream_t stream);

/* FP64 reference GEMM on the device (plain tiled kernel, not tensor cores). */
cudaError_t mkg_ref_gemm_gpu(const void *a, const void *b, mkg_dtype in, int m, int n, int k, long long lda,
                             long long ldb, double *r, long long ldr, cudaStream_t stream);

/* The same with fp8 block scales (layouts of mkg_gemm_desc::a_block_scales and b_block_scales):
 * each operand element is dequantized in FP64 (times its block's scale) before the products. */
cudaError_t mkg_ref_gemm_block_gpu(const void *a, const void *b, mkg_dtype in, int m, int n, int k, long long lda,
                                   long long ldb, const float *sa, long long ld_sa, const float *sb, double *r,
                                   long long ldr, cudaStream_t stream);

/* Fills count floats with values log-uniform in [lo, hi) (lo > 0); element e depends only on
 * (seed, e). For fp8 block scales. */
cudaError_t mkg_fill_scales(float *dst, long long count, unsigned long long seed, float lo, float hi,
                            cudaStream_t stream);

/* R *= alpha over the m x n block (fp8 GEMMs: the per-tensor scale product). */
cudaError_t mkg_scale_ref_gpu(double *r, long long ldr, int m, int n, double alpha, cudaStream_t stream);

/* Error statistics of C (c_type, ldc) against R; synchronizes the stream. */
cudaError_t mkg_error_stats_gpu(const void *c, mkg_dtype c_type, long long ldc, const double *r, long long ldr,
                                int m, int n, mkg_err_stats *out, cudaStream_t stream);

/* Counts elements of the rows x cols block (element size esize bytes) whose bits
 * differ between x (ldx) and y (ldy); compares as integers, so -0.0 != +0.0 and
 * NaNs compare by payload. Synchronizes the stream. */
cudaError_t mkg_count_mismatch_gpu(const void *x, long long ldx, const void *y, long long ldy, int rows, int cols,
                                   int esize, long long *count, cudaStream_t stream);

/* Counts bytes of an allocation of rows_alloc rows of ld elements (esize bytes
 * each) that lie outside the m x n block and differ from `pattern`: anything
 * a GEMM wrote where it must not. Synchronizes the stream. */
cudaError_t mkg_count_outside_gpu(const void *c, int esize, long long ld, long long rows_alloc, int m, int n,
                                  unsigned char pattern, long long *count, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif /* MKG_HARNESS_H */
