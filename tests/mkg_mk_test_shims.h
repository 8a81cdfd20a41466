/* mkg_mk_test_shims.h - extern "C" checks of the sample model's ops that the GoogleTest
 * files call (the megakernel and its reference path share these ops, so their agreement
 * says nothing about the ops themselves; these compare an op with an FP64 model of it).
 */
#ifndef MKG_MK_TEST_SHIMS_H
#define MKG_MK_TEST_SHIMS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mkg_attn_check {
    double attn_err;        /* max |attn - ref| / max |ref| over the step's rows, all q heads */
    double k_err;           /* max |k appended - ref| / max |ref| (rotated k, bf16) */
    int v_exact;            /* 1: the appended v equal the qkv rows' v bitwise */
    int others_untouched;   /* 1: cache positions outside [pos0, pos0 + tokens) kept their bits */
} mkg_attn_check;

/**
 * Prefill attention of layer 0 (the reference path's kernel, i.e. mkg_op_attention_prefill)
 * on the Llama-3.2-1B head shape (32 query heads, 8 KV heads of 64, RoPE theta 500000):
 * `tokens` random qkv rows (uniform[-2, 2]) at positions pos0 .. pos0 + tokens - 1 over a
 * random cache for positions < pos0, against causal attention computed in FP64 (RoPE in
 * FP64, keys < pos0 from the cache). Returns 0 or a CUDA error code.
 */
int mkg_shim_prefill_attention_check(int tokens, int pos0, unsigned long long seed, mkg_attn_check *out);

#ifdef __cplusplus
}
#endif
#endif /* MKG_MK_TEST_SHIMS_H */
