/* mkg_test_shims.c - padded, poisoned GEMM cases for the GPU tests (see header). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "mkg_test_shims.h"

static long long mkg_round_up(long long x, long long q)
{
    return (x + q - 1) / q * q;
}

const char *mkg_shim_gpu_skip_reason(void)
{
    switch (mkg_device_check()) {
    case MKG_OK: return "";
    case MKG_ERR_NO_DEVICE: return "no CUDA device is present: GPU tests need an sm_90a (H100/H200) GPU";
    default: return "the CUDA device is not compute capability 9.0: GPU tests need an sm_90a (H100/H200) GPU";
    }
}

unsigned long long mkg_shim_seed(void)
{
    const char *env = getenv("MKG_TEST_SEED");
    unsigned long long seed = env ? strtoull(env, NULL, 0) : (unsigned long long)time(NULL) * 2654435761ull;
    return seed;
}

mkg_status mkg_case_init(mkg_case *c, int m, int n, int k, mkg_dtype in, mkg_dtype out, unsigned long long seed)
{
    memset(c, 0, sizeof(*c));
    c->m = m;
    c->n = n;
    c->k = k;
    c->in = in;
    c->out = out;
    const long long isz = (long long)mkg_dtype_size(in), osz = (long long)mkg_dtype_size(out);
    /* K pads of 16 bytes or more (8 elements; 16 for 1-byte e4m3) past K in every row. */
    c->lda = k + (in == MKG_DTYPE_E4M3 ? 16 : 8);
    c->ldb = c->lda;
    c->ldc = mkg_round_up((long long)n, 16 / osz) + 16 / osz;
    c->c_rows = m + 3;
    const size_t a_bytes = (size_t)(m * c->lda * isz), b_bytes = (size_t)(n * c->ldb * isz);
    const size_t c_bytes = (size_t)(c->c_rows * c->ldc * osz);
    if (cudaMalloc(&c->a, a_bytes) != cudaSuccess || cudaMalloc(&c->b, b_bytes) != cudaSuccess ||
        cudaMalloc(&c->c, c_bytes) != cudaSuccess || cudaMalloc(&c->keep, c_bytes) != cudaSuccess) {
        mkg_case_free(c);
        return MKG_ERR_OUT_OF_MEMORY;
    }
    /* 0xFF.. is NaN in bf16, fp16 and e4m3: the K pads poison any read past K. */
    if (cudaMemset(c->a, 0xFF, a_bytes) != cudaSuccess || cudaMemset(c->b, 0xFF, b_bytes) != cudaSuccess ||
        mkg_fill_random(c->a, in, m, k, c->lda, seed, 1.0f, 0) != cudaSuccess ||
        mkg_fill_random(c->b, in, n, k, c->ldb, seed ^ 0x5bd1e995ull, 1.0f, 0) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess) {
        mkg_case_free(c);
        return MKG_ERR_CUDA;
    }
    return MKG_OK;
}

void mkg_case_free(mkg_case *c)
{
    cudaFree(c->a);
    cudaFree(c->b);
    cudaFree(c->c);
    cudaFree(c->keep);
    cudaFree(c->ref);
    cudaFree(c->ws);
    cudaFree(c->bsa);
    cudaFree(c->bsb);
    memset(c, 0, sizeof(*c));
}

mkg_status mkg_case_set_block_scales(mkg_case *c, unsigned long long seed, float lo, float hi)
{
    const long long kb = (c->k + 127) / 128, nb = (c->n + 127) / 128;
    c->ld_bsa = c->m + 5;
    if (!c->bsa && (cudaMalloc((void **)&c->bsa, (size_t)(kb * c->ld_bsa) * sizeof(float)) != cudaSuccess ||
                    cudaMalloc((void **)&c->bsb, (size_t)(nb * kb) * sizeof(float)) != cudaSuccess))
        return MKG_ERR_OUT_OF_MEMORY;
    /* 0xFF: NaN in the pads, so a stored row that reads its scale past M (a wrong stride) shows up in C. */
    if (cudaMemset(c->bsa, 0xFF, (size_t)(kb * c->ld_bsa) * sizeof(float)) != cudaSuccess)
        return MKG_ERR_CUDA;
    for (long long b = 0; b < kb; ++b)
        if (mkg_fill_scales(c->bsa + b * c->ld_bsa, c->m, seed + 977ull * (unsigned long long)b, lo, hi, 0) !=
            cudaSuccess)
            return MKG_ERR_CUDA;
    if (mkg_fill_scales(c->bsb, nb * kb, seed ^ 0x9e3779b97f4a7c15ull, lo, hi, 0) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess)
        return MKG_ERR_CUDA;
    return mkg_case_set_kc(c, 128);
}

mkg_status mkg_case_set_kc(mkg_case *c, int kc)
{
    cudaFree(c->ws);
    c->ws = NULL;
    c->kc = kc;
    const mkg_gemm_desc d = mkg_case_desc(c, c->m);
    c->ws_bytes = mkg_gemm_workspace_bytes(&d);
    if (c->ws_bytes == 0)
        return MKG_OK;
    if (cudaMalloc(&c->ws, c->ws_bytes) != cudaSuccess)
        return MKG_ERR_OUT_OF_MEMORY;
    if (cudaMemset(c->ws, 0xFF, c->ws_bytes) != cudaSuccess ||
        cudaMemset(c->ws, 0, mkg_workspace_counter_bytes(c->m, c->n)) != cudaSuccess)
        return MKG_ERR_CUDA;
    return MKG_OK;
}

mkg_status mkg_case_upload(mkg_case *c, const void *a_host, const void *b_host)
{
    const size_t isz = mkg_dtype_size(c->in);
    if (cudaMemcpy2D(c->a, (size_t)c->lda * isz, a_host, (size_t)c->k * isz, (size_t)c->k * isz, (size_t)c->m,
                     cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy2D(c->b, (size_t)c->ldb * isz, b_host, (size_t)c->k * isz, (size_t)c->k * isz, (size_t)c->n,
                     cudaMemcpyHostToDevice) != cudaSuccess)
        return MKG_ERR_CUDA;
    return MKG_OK;
}

mkg_status mkg_case_reference(mkg_case *c)
{
    if (!c->ref && cudaMalloc((void **)&c->ref, (size_t)c->m * (size_t)c->n * sizeof(double)) != cudaSuccess)
        return MKG_ERR_OUT_OF_MEMORY;
    const cudaError_t ref = c->bsa ? mkg_ref_gemm_block_gpu(c->a, c->b, c->in, c->m, c->n, c->k, c->lda, c->ldb, c->bsa,
                                                            c->ld_bsa, c->bsb, c->ref, c->n, 0)
                                   : mkg_ref_gemm_gpu(c->a, c->b, c->in, c->m, c->n, c->k, c->lda, c->ldb, c->ref, c->n, 0);
    if (ref != cudaSuccess ||
        (c->in == MKG_DTYPE_E4M3 &&
         mkg_scale_ref_gpu(c->ref, c->n, c->m, c->n, (double)MKG_SHIM_FP8_A_SCALE * MKG_SHIM_FP8_B_SCALE, 0) !=
             cudaSuccess) ||
        cudaDeviceSynchronize() != cudaSuccess)
        return MKG_ERR_CUDA;
    return MKG_OK;
}

mkg_status mkg_case_poison(mkg_case *c)
{
    const size_t c_bytes = (size_t)(c->c_rows * c->ldc) * mkg_dtype_size(c->out);
    return cudaMemset(c->c, 0xFF, c_bytes) == cudaSuccess ? MKG_OK : MKG_ERR_CUDA;
}

mkg_gemm_desc mkg_case_desc(const mkg_case *c, int m)
{
    mkg_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.m = m;
    d.n = c->n;
    d.k = c->k;
    d.a_type = c->in;
    d.b_type = c->in;
    d.c_type = c->out;
    d.a = c->a;
    d.b = c->b;
    d.c = c->c;
    d.lda = c->lda;
    d.ldb = c->ldb;
    d.ldc = c->ldc;
    d.epilogue = MKG_EPI_STORE;
    d.kc = c->kc;
    d.workspace = c->ws;
    d.workspace_bytes = c->ws_bytes;
    d.a_scale = MKG_SHIM_FP8_A_SCALE;          /* read for e4m3 inputs only */
    d.b_scale = MKG_SHIM_FP8_B_SCALE;
    d.a_block_scales = c->bsa;
    d.ld_a_block_scales = c->ld_bsa;
    d.b_block_scales = c->bsb;
    return d;
}

mkg_status mkg_case_run(mkg_case *c, int s, int grid, int m)
{
    return mkg_case_run_flags(c, s, grid, m, 0u);
}

mkg_status mkg_case_run_flags(mkg_case *c, int s, int grid, int m, unsigned int flags)
{
    mkg_status st = mkg_case_poison(c);
    if (st != MKG_OK)
        return st;
    const mkg_gemm_desc d = mkg_case_desc(c, m);
    mkg_gemm_op *op = NULL;
    st = mkg_gemm_create(&d, &op);
    if (st != MKG_OK)
        return st;
    st = mkg_gemm_launch_ex(op, s, grid, flags, 0);
    if (st == MKG_OK && cudaDeviceSynchronize() != cudaSuccess)
        st = MKG_ERR_CUDA;
    mkg_gemm_destroy(op);
    return st;
}

mkg_status mkg_case_errors(const mkg_case *c, int m, mkg_err_stats *out)
{
    if (mkg_error_stats_gpu(c->c, c->out, c->ldc, c->ref, c->n, m, c->n, out, 0) != cudaSuccess)
        return MKG_ERR_CUDA;
    return MKG_OK;
}

long long mkg_case_outside_writes(const mkg_case *c, int m)
{
    long long count = -1;
    if (mkg_count_outside_gpu(c->c, (int)mkg_dtype_size(c->out), c->ldc, c->c_rows, m, c->n, 0xFF, &count, 0) !=
        cudaSuccess)
        return -1;
    return count;
}

mkg_status mkg_case_keep(mkg_case *c)
{
    const size_t c_bytes = (size_t)(c->c_rows * c->ldc) * mkg_dtype_size(c->out);
    return cudaMemcpy(c->keep, c->c, c_bytes, cudaMemcpyDeviceToDevice) == cudaSuccess ? MKG_OK : MKG_ERR_CUDA;
}

long long mkg_case_mismatch_vs_keep(const mkg_case *c, int m)
{
    long long count = -1;
    if (mkg_count_mismatch_gpu(c->c, c->ldc, c->keep, c->ldc, m, c->n, (int)mkg_dtype_size(c->out), &count, 0) !=
        cudaSuccess)
        return -1;
    return count;
}

mkg_status mkg_case_download(const mkg_case *c, void *host)
{
    const size_t osz = mkg_dtype_size(c->out);
    if (cudaMemcpy2D(host, (size_t)c->n * osz, c->c, (size_t)c->ldc * osz, (size_t)c->n * osz, (size_t)c->m,
                     cudaMemcpyDeviceToHost) != cudaSuccess)
        return MKG_ERR_CUDA;
    return MKG_OK;
}

static mkg_gemm_desc mkg_shim_bf16_desc(int m, int n, int k, const void *a, const void *b, void *c)
{
    mkg_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.m = m;
    d.n = n;
    d.k = k;
    d.a_type = d.b_type = d.c_type = MKG_DTYPE_BF16;
    d.a = a;
    d.b = b;
    d.c = c;
    d.lda = d.ldb = k;
    d.ldc = n;
    d.epilogue = MKG_EPI_STORE;
    return d;
}

mkg_status mkg_shim_pdl_chain(int s, int m, int n, int k, int n2, int reps, unsigned long long seed,
                              long long *mismatch, mkg_status *bad_flags)
{
    void *a = NULL, *a2 = NULL, *b = NULL, *b2 = NULL, *c1 = NULL, *c2 = NULL, *c3 = NULL, *ref = NULL, *ref2 = NULL;
    mkg_gemm_op *op1 = NULL, *op2 = NULL, *op1b = NULL, *op2b = NULL;
    cudaStream_t st = NULL;
    mkg_status rc = MKG_ERR_CUDA;
    const size_t ab = (size_t)m * k * 2, c1b = (size_t)m * n * 2, c2b = (size_t)m * n2 * 2;
    *mismatch = -1;
    if (cudaMalloc(&a, ab) != cudaSuccess || cudaMalloc(&a2, ab) != cudaSuccess ||
        cudaMalloc(&b, (size_t)n * k * 2) != cudaSuccess || cudaMalloc(&b2, (size_t)n2 * n * 2) != cudaSuccess ||
        cudaMalloc(&c1, c1b) != cudaSuccess || cudaMalloc(&c2, c2b) != cudaSuccess ||
        cudaMalloc(&c3, c2b) != cudaSuccess || cudaMalloc(&ref, c2b) != cudaSuccess ||
        cudaMalloc(&ref2, c2b) != cudaSuccess || cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess)
        goto out;
    if (mkg_fill_random(a, MKG_DTYPE_BF16, m, k, k, seed, 1.0f, st) != cudaSuccess ||
        mkg_fill_random(a2, MKG_DTYPE_BF16, m, k, k, seed + 3, 1.0f, st) != cudaSuccess ||
        mkg_fill_random(b, MKG_DTYPE_BF16, n, k, k, seed + 1, 1.0f, st) != cudaSuccess ||
        mkg_fill_random(b2, MKG_DTYPE_BF16, n2, n, n, seed + 2, 0.125f, st) != cudaSuccess ||
        cudaStreamSynchronize(st) != cudaSuccess)
        goto out;
    /* Chain 1: C1 = A . B^T, C2 = C1 . B2^T. Chain 2 reuses C1: C1 = A2 . B^T, C3 = C1 . B2^T,
     * so its first GEMM overwrites what chain 1's second GEMM reads. */
    const mkg_gemm_desc d1 = mkg_shim_bf16_desc(m, n, k, a, b, c1);
    const mkg_gemm_desc d2 = mkg_shim_bf16_desc(m, n2, n, c1, b2, c2);
    const mkg_gemm_desc d1b = mkg_shim_bf16_desc(m, n, k, a2, b, c1);
    const mkg_gemm_desc d2b = mkg_shim_bf16_desc(m, n2, n, c1, b2, c3);
    rc = mkg_gemm_create(&d1, &op1);
    if (rc == MKG_OK)
        rc = mkg_gemm_create(&d2, &op2);
    if (rc == MKG_OK)
        rc = mkg_gemm_create(&d1b, &op1b);
    if (rc == MKG_OK)
        rc = mkg_gemm_create(&d2b, &op2b);
    if (rc != MKG_OK)
        goto out;
    *bad_flags = mkg_gemm_launch_ex(op1, s, 0, 0x80u, st);
    /* References from plain launches. */
    rc = mkg_gemm_launch(op1, s, 0, st);
    if (rc == MKG_OK)
        rc = mkg_gemm_launch(op2, s, 0, st);
    if (rc == MKG_OK)
        rc = mkg_gemm_launch(op1b, s, 0, st);
    if (rc == MKG_OK)
        rc = mkg_gemm_launch(op2b, s, 0, st);
    if (rc != MKG_OK)
        goto out;
    rc = MKG_ERR_CUDA;
    if (cudaMemcpyAsync(ref, c2, c2b, cudaMemcpyDeviceToDevice, st) != cudaSuccess ||
        cudaMemcpyAsync(ref2, c3, c2b, cudaMemcpyDeviceToDevice, st) != cudaSuccess)
        goto out;
    *mismatch = 0;
    for (int r = 0; r < reps; ++r) {
        if (cudaMemsetAsync(c1, 0xFF, c1b, st) != cudaSuccess || cudaMemsetAsync(c2, 0xFF, c2b, st) != cudaSuccess ||
            cudaMemsetAsync(c3, 0xFF, c2b, st) != cudaSuccess)
            goto out;
        /* Four PDL launches back to back, no host sync between them. */
        mkg_gemm_op *const chain[4] = {op1, op2, op1b, op2b};
        for (int i = 0; i < 4; ++i) {
            rc = mkg_gemm_launch_ex(chain[i], s, 0, MKG_LAUNCH_FLAG_PDL, st);
            if (rc != MKG_OK)
                goto out;
        }
        rc = MKG_ERR_CUDA;
        long long count = -1, count2 = -1;
        if (mkg_count_mismatch_gpu(c2, n2, ref, n2, m, n2, 2, &count, st) != cudaSuccess || count < 0 ||
            mkg_count_mismatch_gpu(c3, n2, ref2, n2, m, n2, 2, &count2, st) != cudaSuccess || count2 < 0)
            goto out;
        *mismatch += count + count2;
    }
    rc = cudaStreamSynchronize(st) == cudaSuccess ? MKG_OK : MKG_ERR_CUDA;
out:
    if (rc != MKG_OK)
        (void)cudaGetLastError();
    mkg_gemm_destroy(op1);
    mkg_gemm_destroy(op2);
    mkg_gemm_destroy(op1b);
    mkg_gemm_destroy(op2b);
    cudaFree(a);
    cudaFree(a2);
    cudaFree(b);
    cudaFree(b2);
    cudaFree(c1);
    cudaFree(c2);
    cudaFree(c3);
    cudaFree(ref);
    cudaFree(ref2);
    if (st)
        cudaStreamDestroy(st);
    return rc;
}
