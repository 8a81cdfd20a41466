/* mkg_reference_model.cu - the reference path of the sample model step
 * (mkg_reference_model.h): one plain kernel per non-GEMM op, each a thin wrapper that
 * runs the megakernel's own device function (mkg_mk_ops.cuh) on a 256-thread CTA, plus
 * the SiLU * up kernel (the megakernel fuses that into its gate/up GEMM) and cuBLAS
 * GEMMs (cublasGemmEx, bf16 in and out, FP32 compute, default algorithm).
 *
 * Reads top to bottom: the kernels, the GEMM helper, create / destroy, the step.
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdlib.h>

#include "mkg_mk_ops.cuh"
#include "mkg_mk_norm.cuh"
#include "mkg_reference_model.h"

#define MKG_REF_BAR 1                           /* named barrier id of the op wrappers */
#define MKG_REF_NORM_ROWS 8                     /* RMSNorm rows per CTA: one per warp */
#define MKG_REF_WORKSPACE_BYTES (32u << 20)     /* cuBLAS workspace (its Hopper recommendation) */

// ---- kernels -----------------------------------------------------------------------------

// x, y (rows, h): CTA b normalises rows 8 b .. 8 b + 7.
__global__ void __launch_bounds__(MKG_OP_THREADS)
    mkg_ref_rmsnorm_kernel(const __nv_bfloat16 *x, const __nv_bfloat16 *g, __nv_bfloat16 *y, int rows, int h,
                           float eps)
{
    __shared__ float red[MKG_OP_THREADS / 32];
    const int row0 = blockIdx.x * MKG_REF_NORM_ROWS;
    mkg_op_rmsnorm_rows(x, g, y, row0, min(MKG_REF_NORM_ROWS, rows - row0), h, eps, red, threadIdx.x, MKG_REF_BAR);
}

// One CTA per (token blockIdx.x, KV head blockIdx.y); token i is sequence i at position pos[i].
__global__ void __launch_bounds__(MKG_OP_THREADS, 1)
    mkg_ref_attention_decode_kernel(const mkg_model_config cfg, int layer, const __nv_bfloat16 *qkv,
                                    const int *pos, __nv_bfloat16 *k_cache, __nv_bfloat16 *v_cache,
                                    __nv_bfloat16 *attn)
{
    __shared__ __align__(1024) unsigned char scratch[MKG_OP_DECODE_SCRATCH_BYTES];
    const int tok = blockIdx.x, p = pos[tok];
    // NOTE: a position outside the cache would write out of bounds; the row is left as it is
    // (CTA-uniform test, so no thread is left waiting at a barrier).
    if (p < 0 || p >= cfg.max_ctx)
        return;
    mkg_op_attention_decode(&cfg, layer, qkv, tok, tok, p, blockIdx.y, k_cache, v_cache, attn, scratch, threadIdx.x,
                            MKG_REF_BAR);
}

// One CTA per (64-query block, KV head blockIdx.y) of sequence 0. Blocks run in reverse
// order: the late blocks attend the most keys, so they start first and the tail is short.
__global__ void __launch_bounds__(MKG_OP_THREADS, 1)
    mkg_ref_attention_prefill_kernel(const mkg_model_config cfg, int layer, const __nv_bfloat16 *qkv, int tokens,
                                     int pos0, __nv_bfloat16 *k_cache, __nv_bfloat16 *v_cache, __nv_bfloat16 *attn)
{
    __shared__ __align__(1024) unsigned char scratch[MKG_OP_PREFILL_SCRATCH_BYTES];
    const int t0 = (gridDim.x - 1 - blockIdx.x) * 64;
    mkg_op_attention_prefill(&cfg, layer, qkv, t0, min(64, tokens - t0), pos0, blockIdx.y, k_cache, v_cache, attn,
                             scratch, threadIdx.x, MKG_REF_BAR);
}

// gu (rows, 2F) holds gate and up interleaved in blocks of 8 columns (mkg_model.h); act (rows, F):
// act[r, 8b + i] = bf16(silu(gate) * up), gate = gu[r, 16b + i], up = gu[r, 16b + 8 + i],
// silu(v) = v / (1 + exp(-v)). One thread per (row, b): two 16-byte loads, one 16-byte store.
__global__ void mkg_ref_silu_mul_kernel(const __nv_bfloat16 *gu, __nv_bfloat16 *act, int rows, int f)
{
    const int blocks = f / 8;
    const long long total = (long long)rows * blocks;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        const long long r = e / blocks, b = e % blocks;
        const uint4 *src = (const uint4 *)(gu + r * 2 * f) + 2 * b;
        float gate[8], up[8], out[8];
        mkg_op_unpack8(src[0], gate);
        mkg_op_unpack8(src[1], up);
#pragma unroll
        for (int i = 0; i < 8; ++i)
            out[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
        ((uint4 *)(act + r * f))[b] = mkg_op_pack8(out);
    }
}

// ---- GEMM --------------------------------------------------------------------------------

struct mkg_ref_model {
    cublasHandle_t blas;
    void *workspace;            /* MKG_REF_WORKSPACE_BYTES, device */
};

static int mkg_ref_blas_error(cublasStatus_t st)
{
    return st == CUBLAS_STATUS_SUCCESS ? 0 : MKG_REF_CUBLAS_ERROR_BASE + (int)st;
}

// Row-major C (M, N) = A (M, K) W (N, K)^T + beta C, all bf16, FP32 compute. Column-major that is
// C^T (N, M) = W^T... i.e. op(W) = T on the (K, N) column-major view of W, A as (K, M) column-major.
static int mkg_ref_gemm(mkg_ref_model *r, const void *A, const void *W, void *C, int M, int N, int K, float beta)
{
    const float one = 1.0f;
    return mkg_ref_blas_error(cublasGemmEx(r->blas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, W, CUDA_R_16BF, K, A,
                                           CUDA_R_16BF, K, &beta, C, CUDA_R_16BF, N, CUBLAS_COMPUTE_32F,
                                           CUBLAS_GEMM_DEFAULT));
}

// ---- create / destroy --------------------------------------------------------------------

extern "C" int mkg_ref_model_create(mkg_ref_model **out)
{
    if (out == NULL)
        return (int)cudaErrorInvalidValue;
    *out = NULL;
    mkg_ref_model *r = (mkg_ref_model *)calloc(1, sizeof *r);
    if (r == NULL)
        return (int)cudaErrorMemoryAllocation;
    int e = mkg_ref_blas_error(cublasCreate(&r->blas));
    if (e != 0) {
        free(r);
        return e;
    }
    if ((e = (int)cudaMalloc(&r->workspace, MKG_REF_WORKSPACE_BYTES)) != 0 ||
        (e = mkg_ref_blas_error(cublasSetWorkspace(r->blas, r->workspace, MKG_REF_WORKSPACE_BYTES))) != 0) {
        mkg_ref_model_destroy(r);
        return e;
    }
    *out = r;
    return 0;
}

extern "C" void mkg_ref_model_destroy(mkg_ref_model *r)
{
    if (r == NULL)
        return;
    if (r->blas != NULL)
        cublasDestroy(r->blas);
    if (r->workspace != NULL)
        cudaFree(r->workspace);
    free(r);
}

// ---- the step ----------------------------------------------------------------------------

static int mkg_ref_rmsnorm(const mkg_model *m, const void *x, const void *g, void *y, int rows, cudaStream_t s)
{
    const int ctas = (rows + MKG_REF_NORM_ROWS - 1) / MKG_REF_NORM_ROWS;
    mkg_ref_rmsnorm_kernel<<<ctas, MKG_OP_THREADS, 0, s>>>((const __nv_bfloat16 *)x, (const __nv_bfloat16 *)g,
                                                           (__nv_bfloat16 *)y, rows, m->cfg.hidden,
                                                           m->cfg.norm_eps);
    return (int)cudaGetLastError();
}

extern "C" int mkg_ref_attention_run(const mkg_model *m, int layer, int tokens, int prefill, int pos0,
                                     cudaStream_t s)
{
    const mkg_model_config *c = &m->cfg;
    __nv_bfloat16 *kc = (__nv_bfloat16 *)m->k_cache, *vc = (__nv_bfloat16 *)m->v_cache;
    const __nv_bfloat16 *qkv = (const __nv_bfloat16 *)m->qkv;
    __nv_bfloat16 *attn = (__nv_bfloat16 *)m->attn;
    if (prefill) {
        const dim3 grid((tokens + 63) / 64, c->kv_heads);
        mkg_ref_attention_prefill_kernel<<<grid, MKG_OP_THREADS, 0, s>>>(*c, layer, qkv, tokens, pos0, kc, vc, attn);
    } else {
        const dim3 grid(tokens, c->kv_heads);
        mkg_ref_attention_decode_kernel<<<grid, MKG_OP_THREADS, 0, s>>>(*c, layer, qkv, m->pos, kc, vc, attn);
    }
    return (int)cudaGetLastError();
}

static int mkg_ref_silu_mul(const mkg_model *m, int tokens, cudaStream_t s)
{
    const long long total = (long long)tokens * (m->cfg.ffn / 8);
    const long long ctas = (total + 255) / 256;
    mkg_ref_silu_mul_kernel<<<(unsigned int)(ctas < 65535 ? ctas : 65535), 256, 0, s>>>(
        (const __nv_bfloat16 *)m->gu, (__nv_bfloat16 *)m->act, tokens, m->cfg.ffn);
    return (int)cudaGetLastError();
}

extern "C" int mkg_ref_model_step(mkg_ref_model *r, const mkg_model *m, int tokens, int prefill, int pos0,
                                  int lm_head, cudaStream_t s)
{
    if (r == NULL || m == NULL || tokens <= 0 || tokens > m->cfg.max_tokens)
        return (int)cudaErrorInvalidValue;
    const mkg_model_config *c = &m->cfg;
    if (prefill ? (pos0 < 0 || pos0 + tokens > c->max_ctx) : tokens > c->max_batch)
        return (int)cudaErrorInvalidValue;
    const int H = c->hidden, F = c->ffn, QD = c->q_heads * c->head_dim, qkv_n = mkg_model_qkv_n(c);
    int e;
    // NOTE: cublasSetStream resets the workspace to cuBLAS's default pool, which may allocate
    // during graph capture; the explicit workspace is set again after it.
    if ((e = mkg_ref_blas_error(cublasSetStream(r->blas, s))) != 0 ||
        (e = mkg_ref_blas_error(cublasSetWorkspace(r->blas, r->workspace, MKG_REF_WORKSPACE_BYTES))) != 0)
        return e;
    for (int l = 0; l < c->layers; ++l) {
        const mkg_layer_weights *w = &m->layer[l];
        if ((e = mkg_ref_rmsnorm(m, m->x, w->attn_norm, m->xn, tokens, s)) != 0 ||
            (e = mkg_ref_gemm(r, m->xn, w->wqkv, m->qkv, tokens, qkv_n, H, 0.0f)) != 0 ||
            (e = mkg_ref_attention_run(m, l, tokens, prefill, pos0, s)) != 0 ||
            (e = mkg_ref_gemm(r, m->attn, w->wo, m->x, tokens, H, QD, 1.0f)) != 0 ||
            (e = mkg_ref_rmsnorm(m, m->x, w->ffn_norm, m->xn, tokens, s)) != 0 ||
            (e = mkg_ref_gemm(r, m->xn, w->wgu, m->gu, tokens, 2 * F, H, 0.0f)) != 0 ||
            (e = mkg_ref_silu_mul(m, tokens, s)) != 0 ||
            (e = mkg_ref_gemm(r, m->act, w->wd, m->x, tokens, H, F, 1.0f)) != 0)
            return e;
    }
    if (lm_head) {
        if ((e = mkg_ref_rmsnorm(m, m->x, m->final_norm, m->xn, tokens, s)) != 0 ||
            (e = mkg_ref_gemm(r, m->xn, m->lm_head, m->logits, tokens, c->vocab, H, 0.0f)) != 0)
            return e;
    }
    return 0;
}
