/* mkg_reference_gpu.cu - device side of the test/bench harness: counter-based
 * random operands, an FP64 reference GEMM, and error statistics reduced with
 * CUB. Exposed to C through mkg_harness.h.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <math.h>

#include <cub/device/device_reduce.cuh>

#include "mkg_harness.h"

// ---- random operands ----------------------------------------------------------------------

static __device__ __forceinline__ unsigned long long mkg_splitmix64(unsigned long long x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static __device__ __forceinline__ float mkg_load_dev(const void *p, int t, long long idx)
{
    if (t == MKG_DTYPE_BF16)
        return __bfloat162float(((const __nv_bfloat16 *)p)[idx]);
    if (t == MKG_DTYPE_FP16)
        return __half2float(((const __half *)p)[idx]);
    if (t == MKG_DTYPE_E4M3)
        return (float)((const __nv_fp8_e4m3 *)p)[idx];
    return ((const float *)p)[idx];
}

__global__ void mkg_fill_random_kernel(void *dst, int t, long long rows, long long cols, long long ld,
                                       unsigned long long seed, float scale)
{
    const long long total = rows * cols;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        const long long i = e / cols, j = e % cols;
        const unsigned long long h = mkg_splitmix64(seed ^ mkg_splitmix64((unsigned long long)e));
        const float u = (float)(h >> 40) * (1.0f / 16777216.0f);   // [0, 1), 24 bits
        const float v = (2.0f * u - 1.0f) * scale;
        const long long idx = i * ld + j;
        if (t == MKG_DTYPE_BF16)
            ((__nv_bfloat16 *)dst)[idx] = __float2bfloat16_rn(v);
        else if (t == MKG_DTYPE_FP16)
            ((__half *)dst)[idx] = __float2half_rn(v);
        else if (t == MKG_DTYPE_E4M3)
            ((__nv_fp8_e4m3 *)dst)[idx] = __nv_fp8_e4m3(v);   // round to nearest, saturate to +-448
        else {
            // NOTE: fp32 inputs feed tf32 wgmma, which reads 10 mantissa bits; rounding the
            // random values to tf32 here keeps the FP64 reference on the operands actually used.
            uint32_t bits;
            asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(v));
            ((float *)dst)[idx] = __uint_as_float(bits);
        }
    }
}

extern "C" cudaError_t mkg_fill_random(void *dst, mkg_dtype t, long long rows, long long cols, long long ld,
                                       unsigned long long seed, float scale, cudaStream_t stream)
{
    if (rows <= 0 || cols <= 0)
        return cudaSuccess;
    mkg_fill_random_kernel<<<1024, 256, 0, stream>>>(dst, (int)t, rows, cols, ld, seed, scale);
    return cudaGetLastError();
}

// ---- FP64 reference GEMM ------------------------------------------------------------------
// R (M x N) = A (M x K) . B (N x K)^T, 32 x 32 output tile per block, 16-deep
// K slices staged as doubles in shared memory; each thread owns a 2 x 2 block.

#define MKG_REF_T 32
#define MKG_REF_KT 16

// bsa / bsb (fp8 block scales, NULL: none): A(i, k) is dequantized as A(i, k) * bsa[(k / 128)
// * ld_bsa + i] and B(j, k) as B(j, k) * bsb[(j / 128) * ceil(K / 128) + k / 128], in FP64.
__global__ void mkg_ref_gemm_kernel(const void *a, const void *b, int t, int m, int n, int k, long long lda,
                                    long long ldb, double *r, long long ldr, const float *bsa, long long ld_bsa,
                                    const float *bsb)
{
    const int kb = (k + 127) / 128;
    __shared__ double sa[MKG_REF_T][MKG_REF_KT + 1];
    __shared__ double sb[MKG_REF_T][MKG_REF_KT + 1];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;        // 256 threads
    const int i0 = blockIdx.y * MKG_REF_T, j0 = blockIdx.x * MKG_REF_T;
    double acc[2][2] = {{0.0, 0.0}, {0.0, 0.0}};
    for (int k0 = 0; k0 < k; k0 += MKG_REF_KT) {
        for (int e = threadIdx.x; e < MKG_REF_T * MKG_REF_KT; e += blockDim.x) {
            const int row = e / MKG_REF_KT, kk = e % MKG_REF_KT;
            const int gk = k0 + kk;
            sa[row][kk] = (i0 + row < m && gk < k) ? (double)mkg_load_dev(a, t, (long long)(i0 + row) * lda + gk) : 0.0;
            sb[row][kk] = (j0 + row < n && gk < k) ? (double)mkg_load_dev(b, t, (long long)(j0 + row) * ldb + gk) : 0.0;
            if (bsa && i0 + row < m && gk < k)
                sa[row][kk] *= (double)bsa[(long long)(gk / 128) * ld_bsa + i0 + row];
            if (bsb && j0 + row < n && gk < k)
                sb[row][kk] *= (double)bsb[(long long)((j0 + row) / 128) * kb + gk / 128];
        }
        __syncthreads();
        for (int kk = 0; kk < MKG_REF_KT; ++kk) {
#pragma unroll
            for (int x = 0; x < 2; ++x)
#pragma unroll
                for (int y = 0; y < 2; ++y)
                    acc[x][y] += sa[ty + 16 * x][kk] * sb[tx + 16 * y][kk];
        }
        __syncthreads();
    }
#pragma unroll
    for (int x = 0; x < 2; ++x)
#pragma unroll
        for (int y = 0; y < 2; ++y) {
            const int i = i0 + ty + 16 * x, j = j0 + tx + 16 * y;
            if (i < m && j < n)
                r[(long long)i * ldr + j] = acc[x][y];
        }
}

extern "C" cudaError_t mkg_ref_gemm_gpu(const void *a, const void *b, mkg_dtype in, int m, int n, int k,
                                        long long lda, long long ldb, double *r, long long ldr,
                                        cudaStream_t stream)
{
    dim3 grid((n + MKG_REF_T - 1) / MKG_REF_T, (m + MKG_REF_T - 1) / MKG_REF_T);
    mkg_ref_gemm_kernel<<<grid, 256, 0, stream>>>(a, b, (int)in, m, n, k, lda, ldb, r, ldr, NULL, 0, NULL);
    return cudaGetLastError();
}

extern "C" cudaError_t mkg_ref_gemm_block_gpu(const void *a, const void *b, mkg_dtype in, int m, int n, int k,
                                              long long lda, long long ldb, const float *sa, long long ld_sa,
                                              const float *sb, double *r, long long ldr, cudaStream_t stream)
{
    dim3 grid((n + MKG_REF_T - 1) / MKG_REF_T, (m + MKG_REF_T - 1) / MKG_REF_T);
    mkg_ref_gemm_kernel<<<grid, 256, 0, stream>>>(a, b, (int)in, m, n, k, lda, ldb, r, ldr, sa, ld_sa, sb);
    return cudaGetLastError();
}

__global__ void mkg_fill_scales_kernel(float *dst, long long count, unsigned long long seed, float lo, float hi)
{
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < count;
         e += (long long)gridDim.x * blockDim.x) {
        const unsigned long long h = mkg_splitmix64(seed ^ mkg_splitmix64((unsigned long long)e));
        const float u = (float)(h >> 40) * (1.0f / 16777216.0f);   // [0, 1)
        dst[e] = lo * powf(hi / lo, u);
    }
}

extern "C" cudaError_t mkg_fill_scales(float *dst, long long count, unsigned long long seed, float lo, float hi,
                                       cudaStream_t stream)
{
    if (count <= 0)
        return cudaSuccess;
    mkg_fill_scales_kernel<<<256, 256, 0, stream>>>(dst, count, seed, lo, hi);
    return cudaGetLastError();
}

__global__ void mkg_scale_ref_kernel(double *r, long long ldr, int m, int n, double alpha)
{
    const long long total = (long long)m * n;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x)
        r[(e / n) * ldr + e % n] *= alpha;
}

extern "C" cudaError_t mkg_scale_ref_gpu(double *r, long long ldr, int m, int n, double alpha, cudaStream_t stream)
{
    if (m <= 0 || n <= 0)
        return cudaSuccess;
    mkg_scale_ref_kernel<<<1024, 256, 0, stream>>>(r, ldr, m, n, alpha);
    return cudaGetLastError();
}

// ---- error statistics (CUB reduction) -----------------------------------------------------

typedef struct mkg_err_terms {
    double max_abs_err, max_abs_ref, err2, ref2;
    long long nonfinite;
} mkg_err_terms;

struct mkg_err_combine {
    __device__ __forceinline__ mkg_err_terms operator()(const mkg_err_terms &x, const mkg_err_terms &y) const
    {
        mkg_err_terms z;
        z.max_abs_err = fmax(x.max_abs_err, y.max_abs_err);
        z.max_abs_ref = fmax(x.max_abs_ref, y.max_abs_ref);
        z.err2 = x.err2 + y.err2;
        z.ref2 = x.ref2 + y.ref2;
        z.nonfinite = x.nonfinite + y.nonfinite;
        return z;
    }
};

__global__ void mkg_err_terms_kernel(const void *c, int ct, long long ldc, const double *r, long long ldr, int m,
                                     int n, mkg_err_terms *out)
{
    const long long total = (long long)m * n;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        const long long i = e / n, j = e % n;
        const double ref = r[i * ldr + j];
        const double got = (double)mkg_load_dev(c, ct, i * ldc + j);
        mkg_err_terms t = {0.0, 0.0, 0.0, 0.0, 0};
        if (isfinite(ref)) {
            t.max_abs_ref = fabs(ref);
            t.ref2 = ref * ref;
            if (isfinite(got)) {
                t.max_abs_err = fabs(got - ref);
                t.err2 = (got - ref) * (got - ref);
            } else {
                t.nonfinite = 1;
            }
        }
        out[e] = t;
    }
}

extern "C" cudaError_t mkg_error_stats_gpu(const void *c, mkg_dtype c_type, long long ldc, const double *r,
                                           long long ldr, int m, int n, mkg_err_stats *out, cudaStream_t stream)
{
    const long long total = (long long)m * n;
    mkg_err_terms *terms = NULL, *result = NULL;
    void *temp = NULL;
    size_t temp_bytes = 0;
    const mkg_err_terms zero = {0.0, 0.0, 0.0, 0.0, 0};
    mkg_err_terms host;
    cudaError_t e = cudaMallocAsync((void **)&terms, (size_t)total * sizeof(mkg_err_terms), stream);
    if (e == cudaSuccess)
        e = cudaMallocAsync((void **)&result, sizeof(mkg_err_terms), stream);
    if (e == cudaSuccess) {
        mkg_err_terms_kernel<<<1024, 256, 0, stream>>>(c, (int)c_type, ldc, r, ldr, m, n, terms);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess)
        e = cub::DeviceReduce::Reduce(temp, temp_bytes, terms, result, total, mkg_err_combine(), zero, stream);
    if (e == cudaSuccess)
        e = cudaMallocAsync(&temp, temp_bytes, stream);
    if (e == cudaSuccess)
        e = cub::DeviceReduce::Reduce(temp, temp_bytes, terms, result, total, mkg_err_combine(), zero, stream);
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(&host, result, sizeof host, cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(stream);
    cudaFreeAsync(temp, stream);
    cudaFreeAsync(result, stream);
    cudaFreeAsync(terms, stream);
    if (e != cudaSuccess)
        return e;
    out->max_abs_err = host.max_abs_err;
    out->max_abs_ref = host.max_abs_ref;
    out->max_rel_err = host.max_abs_ref > 0.0 ? host.max_abs_err / host.max_abs_ref : host.max_abs_err;
    out->norm_rel_err = host.ref2 > 0.0 ? sqrt(host.err2 / host.ref2) : sqrt(host.err2);
    out->nonfinite = host.nonfinite;
    return cudaStreamSynchronize(stream);
}

// ---- bitwise comparison -------------------------------------------------------------------

__global__ void mkg_mismatch_kernel(const unsigned char *x, long long ldx, const unsigned char *y, long long ldy,
                                    int rows, int cols, int esize, unsigned long long *count)
{
    const long long total = (long long)rows * cols;
    unsigned long long local = 0;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        const long long i = e / cols, j = e % cols;
        const unsigned char *px = x + (i * ldx + j) * esize;
        const unsigned char *py = y + (i * ldy + j) * esize;
        bool same = true;
        for (int b = 0; b < esize; ++b)
            same = same && px[b] == py[b];
        local += same ? 0 : 1;
    }
    if (local)
        atomicAdd(count, local);
}

// A zeroed device counter for one counting kernel, read back (and freed) by mkg_counter_read.
static cudaError_t mkg_counter_open(unsigned long long **d, cudaStream_t stream)
{
    *d = NULL;
    cudaError_t e = cudaMallocAsync((void **)d, sizeof **d, stream);
    return e == cudaSuccess ? cudaMemsetAsync(*d, 0, sizeof **d, stream) : e;
}

// e: the status so far (the launch's); the counter is freed either way.
static cudaError_t mkg_counter_read(cudaError_t e, unsigned long long *d, long long *count, cudaStream_t stream)
{
    unsigned long long h = 0;
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(stream);
    cudaFreeAsync(d, stream);
    *count = (long long)h;
    return e == cudaSuccess ? cudaStreamSynchronize(stream) : e;
}

extern "C" cudaError_t mkg_count_mismatch_gpu(const void *x, long long ldx, const void *y, long long ldy, int rows,
                                              int cols, int esize, long long *count, cudaStream_t stream)
{
    unsigned long long *d;
    cudaError_t e = mkg_counter_open(&d, stream);
    if (e == cudaSuccess) {
        mkg_mismatch_kernel<<<1024, 256, 0, stream>>>((const unsigned char *)x, ldx, (const unsigned char *)y, ldy,
                                                      rows, cols, esize, d);
        e = cudaGetLastError();
    }
    return mkg_counter_read(e, d, count, stream);
}

// ---- writes outside the output block --------------------------------------------------------

__global__ void mkg_outside_kernel(const unsigned char *c, int esize, long long ld, long long rows_alloc, int m, int n,
                                   unsigned char pattern, unsigned long long *count)
{
    const long long row_bytes = ld * esize;
    const long long total = rows_alloc * row_bytes;
    unsigned long long local = 0;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        const long long i = e / row_bytes, col = (e % row_bytes) / esize;
        const bool inside = i < m && col < n;
        local += (!inside && c[e] != pattern) ? 1 : 0;
    }
    if (local)
        atomicAdd(count, local);
}

extern "C" cudaError_t mkg_count_outside_gpu(const void *c, int esize, long long ld, long long rows_alloc, int m,
                                             int n, unsigned char pattern, long long *count, cudaStream_t stream)
{
    unsigned long long *d;
    cudaError_t e = mkg_counter_open(&d, stream);
    if (e == cudaSuccess) {
        mkg_outside_kernel<<<1024, 256, 0, stream>>>((const unsigned char *)c, esize, ld, rows_alloc, m, n, pattern, d);
        e = cudaGetLastError();
    }
    return mkg_counter_read(e, d, count, stream);
}
