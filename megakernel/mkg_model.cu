/* mkg_model.cu - setup of the sample model (mkg_model.h): the Llama-3.2-1B config,
 * allocation of weights, KV cache and activations, and their deterministic fill.
 *
 * Every tensor is filled by one counter-based hash kernel: element e of tensor id T
 * is a pure function of (seed, T, e), so a fill does not depend on the grid, the
 * GPU or the order of the fills, and 2.5 GB of weights take a few milliseconds.
 * The megakernel and the reference path (mkg_reference_model.cu) read the same
 * mkg_model; neither writes a weight.
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mkg_model.h"

// ---- config ------------------------------------------------------------------------------

extern "C" mkg_model_config mkg_model_config_llama32_1b(void)
{
    mkg_model_config c;
    memset(&c, 0, sizeof c);
    c.hidden = 2048;
    c.layers = 16;
    c.q_heads = 32;
    c.kv_heads = 8;
    c.head_dim = 64;
    c.ffn = 8192;
    c.vocab = 128256;
    c.norm_eps = 1e-5f;
    c.rope_theta = 500000.0f;
    c.max_ctx = 4096;
    c.max_batch = 64;
    c.max_tokens = 2048;
    c.seed = 1234;
    return c;
}

// ---- counter-based random fill -----------------------------------------------------------

/* Tensor ids of the seed streams; layer l's tensors are MKG_TENSOR_LAYER0 + 8 l + j. */
enum {
    MKG_TENSOR_FINAL_NORM = 1,
    MKG_TENSOR_LM_HEAD = 2,
    MKG_TENSOR_K_CACHE = 3,
    MKG_TENSOR_V_CACHE = 4,
    MKG_TENSOR_X = 5,
    MKG_TENSOR_LAYER0 = 16
};

static __host__ __device__ __forceinline__ unsigned long long mkg_model_splitmix64(unsigned long long x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The key of stream (seed, tensor id). */
static unsigned long long mkg_model_stream_key(unsigned long long seed, int tensor)
{
    return mkg_model_splitmix64(mkg_model_splitmix64(seed) ^ ((unsigned long long)tensor * 0xD1B54A32D192ED03ull));
}

static __device__ __forceinline__ unsigned int mkg_model_pack_bf16x2(float lo, float hi)
{
    return (unsigned int)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
           ((unsigned int)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16);
}

// dst is n bf16 values: dst[e] = bf16(center + (2u - 1) * half_width), u in [0, 1) from 24 hash
// bits. Element group gi (elements 8 gi .. 8 gi + 7) uses hashes key + 4 gi .. key + 4 gi + 3,
// two 24-bit draws each (bits 40..63 -> even element, bits 8..31 -> odd element).
__global__ void mkg_model_fill_kernel(__nv_bfloat16 *dst, size_t n, unsigned long long key, float center,
                                      float half_width)
{
    const size_t groups = (n + 7) / 8;
    for (size_t gi = blockIdx.x * (size_t)blockDim.x + threadIdx.x; gi < groups;
         gi += (size_t)gridDim.x * blockDim.x) {
        float v[8];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const unsigned long long h = mkg_model_splitmix64(key + 4 * (unsigned long long)gi + j);
            const float u0 = (float)(h >> 40) * (1.0f / 16777216.0f);
            const float u1 = (float)((h >> 8) & 0xFFFFFFull) * (1.0f / 16777216.0f);
            v[2 * j] = center + (2.0f * u0 - 1.0f) * half_width;
            v[2 * j + 1] = center + (2.0f * u1 - 1.0f) * half_width;
        }
        if (8 * gi + 8 <= n) {
            uint4 w;
            w.x = mkg_model_pack_bf16x2(v[0], v[1]);
            w.y = mkg_model_pack_bf16x2(v[2], v[3]);
            w.z = mkg_model_pack_bf16x2(v[4], v[5]);
            w.w = mkg_model_pack_bf16x2(v[6], v[7]);
            ((uint4 *)dst)[gi] = w;   // cudaMalloc'd: 256-byte aligned
        } else {
            for (int i = 0; 8 * gi + i < n; ++i)
                dst[8 * gi + i] = __float2bfloat16_rn(v[i]);
        }
    }
}

static int mkg_model_fill(void *dst, size_t n, unsigned long long seed, int tensor, float center, float half_width,
                          cudaStream_t s)
{
    int dev = 0, sms = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess)
        return (int)e;
    const size_t groups = (n + 7) / 8;
    size_t blocks = (groups + 255) / 256;
    if (blocks > (size_t)sms * 8)
        blocks = (size_t)sms * 8;
    if (blocks == 0)
        return 0;
    mkg_model_fill_kernel<<<(unsigned int)blocks, 256, 0, s>>>((__nv_bfloat16 *)dst, n,
                                                              mkg_model_stream_key(seed, tensor), center, half_width);
    return (int)cudaGetLastError();
}

// ---- create / destroy --------------------------------------------------------------------

static int mkg_model_config_ok(const mkg_model_config *c)
{
    if (c->hidden <= 0 || c->layers <= 0 || c->q_heads <= 0 || c->kv_heads <= 0 || c->ffn <= 0 || c->vocab <= 0 ||
        c->max_ctx <= 0 || c->max_batch <= 0 || c->max_tokens <= 0)
        return 0;
    // NOTE: the attention ops (mkg_mk_ops.cuh) are written for head_dim 64 and at most 4 query
    // heads per KV head; vectorised rows need multiples of 8 elements.
    if (c->head_dim != 64 || c->q_heads % c->kv_heads != 0 || c->q_heads / c->kv_heads > 4)
        return 0;
    return c->hidden % 8 == 0 && c->ffn % 8 == 0;
}

static int mkg_model_alloc(void **p, size_t bytes)
{
    return (int)cudaMalloc(p, bytes);
}

extern "C" void mkg_model_destroy(mkg_model *m)
{
    if (m == NULL)
        return;
    if (m->layer != NULL) {
        for (int l = 0; l < m->cfg.layers; ++l) {
            mkg_layer_weights *w = &m->layer[l];
            void *p[6] = {w->attn_norm, w->wqkv, w->wo, w->ffn_norm, w->wgu, w->wd};
            for (int j = 0; j < 6; ++j)
                if (p[j] != NULL)
                    cudaFree(p[j]);
        }
        free(m->layer);
    }
    void *bufs[] = {m->final_norm, m->lm_head, m->k_cache, m->v_cache, m->x,      m->xn,
                    m->qkv,        m->attn,    m->act,     m->gu,      m->logits, m->pos};
    for (size_t j = 0; j < sizeof bufs / sizeof bufs[0]; ++j)
        if (bufs[j] != NULL)
            cudaFree(bufs[j]);
    memset(m, 0, sizeof *m);
}

extern "C" int mkg_model_fill_x(mkg_model *m, int rows, unsigned long long seed, cudaStream_t s)
{
    if (m == NULL || m->x == NULL || rows < 0 || rows > m->cfg.max_tokens)
        return (int)cudaErrorInvalidValue;
    return mkg_model_fill(m->x, (size_t)rows * m->cfg.hidden, seed, MKG_TENSOR_X, 0.0f, 1.0f, s);
}

/* Allocates and fills everything; on error returns with what it allocated so far (the caller frees). */
static int mkg_model_build(const mkg_model_config *c, mkg_model *m)
{
    const size_t H = (size_t)c->hidden, F = (size_t)c->ffn, V = (size_t)c->vocab, T = (size_t)c->max_tokens;
    const size_t qd = (size_t)c->q_heads * c->head_dim, qkv_n = (size_t)mkg_model_qkv_n(c);
    const size_t cache = (size_t)c->layers * c->max_batch * c->kv_heads * c->max_ctx * c->head_dim;
    const size_t b = sizeof(__nv_bfloat16);
    const unsigned long long seed = c->seed;
    int e;

    m->layer = (mkg_layer_weights *)calloc((size_t)c->layers, sizeof(mkg_layer_weights));
    if (m->layer == NULL)
        return (int)cudaErrorMemoryAllocation;

    // Per layer: shapes (rows x K) and the uniform half-width sqrt(3 / K) of the linear weights.
    for (int l = 0; l < c->layers; ++l) {
        mkg_layer_weights *w = &m->layer[l];
        void **dst[6] = {&w->attn_norm, &w->wqkv, &w->wo, &w->ffn_norm, &w->wgu, &w->wd};
        const size_t rows[6] = {1, qkv_n, H, 1, 2 * F, H};
        const size_t cols[6] = {H, H, qd, H, H, F};
        for (int j = 0; j < 6; ++j) {
            const size_t n = rows[j] * cols[j];
            const int norm = (j == 0 || j == 3);
            const int id = MKG_TENSOR_LAYER0 + 8 * l + j;
            if ((e = mkg_model_alloc(dst[j], n * b)) != 0)
                return e;
            e = norm ? mkg_model_fill(*dst[j], n, seed, id, 1.0f, 0.1f, 0)
                     : mkg_model_fill(*dst[j], n, seed, id, 0.0f, sqrtf(3.0f / (float)cols[j]), 0);
            if (e != 0)
                return e;
            m->weight_bytes += n * b;
        }
    }
    if ((e = mkg_model_alloc(&m->final_norm, H * b)) != 0 ||
        (e = mkg_model_fill(m->final_norm, H, seed, MKG_TENSOR_FINAL_NORM, 1.0f, 0.1f, 0)) != 0)
        return e;
    if ((e = mkg_model_alloc(&m->lm_head, V * H * b)) != 0 ||
        (e = mkg_model_fill(m->lm_head, V * H, seed, MKG_TENSOR_LM_HEAD, 0.0f, sqrtf(3.0f / (float)H), 0)) != 0)
        return e;
    m->lm_head_bytes = V * H * b;
    m->weight_bytes += H * b + m->lm_head_bytes;

    if ((e = mkg_model_alloc(&m->k_cache, cache * b)) != 0 ||
        (e = mkg_model_fill(m->k_cache, cache, seed, MKG_TENSOR_K_CACHE, 0.0f, 1.0f, 0)) != 0)
        return e;
    if ((e = mkg_model_alloc(&m->v_cache, cache * b)) != 0 ||
        (e = mkg_model_fill(m->v_cache, cache, seed, MKG_TENSOR_V_CACHE, 0.0f, 1.0f, 0)) != 0)
        return e;

    // Activations: x random, the rest zero (a stale value never looks like a result).
    void **act[7] = {&m->x, &m->xn, &m->qkv, &m->attn, &m->act, &m->gu, &m->logits};
    const size_t act_n[7] = {T * H, T * H, T * qkv_n, T * qd, T * F, T * 2 * F, T * V};
    for (int j = 0; j < 7; ++j) {
        if ((e = mkg_model_alloc(act[j], act_n[j] * b)) != 0)
            return e;
        if (j > 0 && (e = (int)cudaMemset(*act[j], 0, act_n[j] * b)) != 0)
            return e;
    }
    if ((e = mkg_model_fill_x(m, c->max_tokens, seed, 0)) != 0)
        return e;
    if ((e = mkg_model_alloc((void **)&m->pos, T * sizeof(int))) != 0 ||
        (e = (int)cudaMemset(m->pos, 0, T * sizeof(int))) != 0)
        return e;
    return (int)cudaDeviceSynchronize();
}

extern "C" int mkg_model_create(const mkg_model_config *c, mkg_model *m)
{
    if (m == NULL)
        return (int)cudaErrorInvalidValue;
    memset(m, 0, sizeof *m);
    if (c == NULL || !mkg_model_config_ok(c))
        return (int)cudaErrorInvalidValue;
    m->cfg = *c;
    const int e = mkg_model_build(c, m);
    if (e != 0)
        mkg_model_destroy(m);
    return e;
}
