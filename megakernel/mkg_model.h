/* mkg_model.h - the sample model: a Llama-style decoder (config, weights, KV cache,
 * activations) shared by the megakernel and the reference path.
 *
 * Every matrix is bf16, row-major. Linear layers follow mkgemm's convention
 * C[M x N] = A[M x K] . W[N x K]^T (W stored N x K, K contiguous). Per layer:
 *   attn_norm  (H)                     RMSNorm weight before attention
 *   wqkv       (QH*D + 2*KVH*D, H)     rows: q heads 0..QH-1, then k heads, then v heads (D rows each)
 *   wo         (H, QH*D)
 *   ffn_norm   (H)
 *   wgu        (2F, H)                 gate and up interleaved in blocks of 8 rows:
 *                                      row 16b+i = gate row 8b+i, row 16b+8+i = up row 8b+i (i < 8)
 *   wd         (H, F)
 * then final_norm (H) and lm_head (V, H). The interleave lets a GEMM tile compute
 * act[:, 8b+i] = silu(gate) * up from one thread's own accumulators (see
 * mkg_epilogue_sm90.cuh: columns c and c+8 of a tile sit in the same thread).
 *
 * One step runs m tokens. Decode: token i is sequence i at position pos[i].
 * Prefill: the m tokens are sequence 0 at positions pos0 .. pos0+m-1.
 * KV cache: k_cache / v_cache (layers, max_batch, KVH, max_ctx, D) bf16; the
 * step writes the rotated k and the v of each token at its position.
 */
#ifndef MKG_MODEL_H
#define MKG_MODEL_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "mkg_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mkg_model_config {
    int hidden;                 /* H */
    int layers;
    int q_heads, kv_heads;      /* QH, KVH (QH a multiple of KVH) */
    int head_dim;               /* D (64: RoPE pairs i, i + 32) */
    int ffn;                    /* F */
    int vocab;                  /* V */
    float norm_eps;
    float rope_theta;
    int max_ctx;                /* KV cache positions per sequence */
    int max_batch;              /* decode sequences */
    int max_tokens;             /* largest m of one step */
    unsigned long long seed;
} mkg_model_config;

/** The Llama-3.2-1B shape: hidden 2048, 16 layers, 32/8 heads of 64, FFN 8192, vocab 128256. */
mkg_model_config mkg_model_config_llama32_1b(void);

typedef struct mkg_layer_weights {
    void *attn_norm, *wqkv, *wo, *ffn_norm, *wgu, *wd;   /* device, bf16 */
} mkg_layer_weights;

/* Device buffers of one model instance (all bf16 unless said). */
typedef struct mkg_model {
    mkg_model_config cfg;
    mkg_layer_weights *layer;   /* host array of cfg.layers */
    void *final_norm, *lm_head;
    void *k_cache, *v_cache;    /* (layers, max_batch, KVH, max_ctx, D) */
    void *x;                    /* (max_tokens, H) residual stream, in place */
    void *xn;                   /* (max_tokens, H) normed input of a GEMM */
    void *qkv;                  /* (max_tokens, QH*D + 2*KVH*D) */
    void *attn;                 /* (max_tokens, QH*D) attention output */
    void *act;                  /* (max_tokens, F) silu(gate) * up */
    void *gu;                   /* (max_tokens, 2F) reference path only: gate/up before the fused op */
    void *logits;               /* (max_tokens, V) */
    int *pos;                   /* device (max_tokens): position of each token this step */
    size_t weight_bytes;        /* bytes of all weights a decode step reads (LM head included) */
    size_t lm_head_bytes;
} mkg_model;

static MKG_HD int mkg_model_qkv_n(const mkg_model_config *c)
{
    return (c->q_heads + 2 * c->kv_heads) * c->head_dim;
}

/* Element offset of (layer, seq, kv head, position, 0) in k_cache / v_cache. */
static MKG_HD size_t mkg_model_cache_at(const mkg_model_config *c, int layer, int seq, int head, int pos)
{
    return ((((size_t)layer * c->max_batch + seq) * c->kv_heads + head) * c->max_ctx + pos) * c->head_dim;
}

/* ---- setup (megakernel/mkg_model.cu) ---- */

/**
 * Allocates every buffer of m for config c and fills it from c->seed: linear weights uniform
 * in [-a, a] with a = sqrt(3 / K) (K = input features), norm weights 1 + uniform[-0.1, 0.1],
 * KV cache uniform[-1, 1] (stands for earlier context), x uniform[-1, 1], pos and the other
 * activations zero. Each tensor draws from its own counter-based stream (seed, tensor id).
 * Synchronous (waits for the fills). Needs head_dim 64 and q_heads / kv_heads <= 4.
 * Returns 0 or a cudaError_t value; on failure m holds nothing to free.
 */
int mkg_model_create(const mkg_model_config *c, mkg_model *m);

/** Frees every buffer of m (those that are set) and zeroes m. */
void mkg_model_destroy(mkg_model *m);

/** Refills x rows 0 .. rows-1 from the stream (seed, x), uniform[-1, 1]; asynchronous on s. */
int mkg_model_fill_x(mkg_model *m, int rows, unsigned long long seed, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif /* MKG_MODEL_H */
