/* mkg_reference_model.h - the reference path of the sample model step: the same decoder
 * step as the megakernel, as plain kernels (the ops of mkg_mk_ops.cuh) plus cuBLAS GEMMs.
 *
 * A step enqueues everything on one stream, allocates nothing and never synchronises, so
 * the host can capture it in a CUDA graph and time it against the megakernel. It reads
 * and writes the buffers of an mkg_model (mkg_model.h): x in place, xn, qkv, attn, gu,
 * act, logits, and the KV cache at the step's positions.
 */
#ifndef MKG_REFERENCE_MODEL_H
#define MKG_REFERENCE_MODEL_H

#include <cuda_runtime_api.h>

#include "mkg_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Errors: a cudaError_t value, or MKG_REF_CUBLAS_ERROR_BASE + cublasStatus_t. */
#define MKG_REF_CUBLAS_ERROR_BASE 1000

typedef struct mkg_ref_model mkg_ref_model;

/** Creates the cuBLAS handle and its explicit workspace. Returns 0 or an error code. */
int mkg_ref_model_create(mkg_ref_model **out);

/** Frees r (NULL is fine). */
void mkg_ref_model_destroy(mkg_ref_model *r);

/**
 * Enqueues one decoder step of `tokens` rows on s. Per layer: RMSNorm, QKV GEMM, attention
 * (RoPE, KV-cache append), O GEMM + residual, RMSNorm, gate/up GEMM, SiLU * up, down GEMM +
 * residual; then, when lm_head != 0, the final RMSNorm and logits = xn lm_head^T (all rows).
 * Decode (prefill == 0): token i is sequence i at position m->pos[i] (read on the device;
 * tokens <= max_batch). Prefill: the tokens are sequence 0 at positions pos0 .. pos0+tokens-1.
 * Returns 0 or an error code (bad arguments: cudaErrorInvalidValue).
 */
int mkg_ref_model_step(mkg_ref_model *r, const mkg_model *m, int tokens, int prefill, int pos0, int lm_head,
                       cudaStream_t s);

/**
 * Enqueues the attention op of one layer alone (the kernel the step runs after the QKV GEMM):
 * reads m->qkv rows 0 .. tokens-1, appends rotated k and v to the KV cache at the step's
 * positions, writes m->attn. Decode reads positions from m->pos; prefill as for
 * mkg_ref_model_step. No argument checks beyond the step's (the tests call it).
 */
int mkg_ref_attention_run(const mkg_model *m, int layer, int tokens, int prefill, int pos0, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif /* MKG_REFERENCE_MODEL_H */
