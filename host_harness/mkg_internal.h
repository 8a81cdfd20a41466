/* mkg_internal.h - declarations shared inside the host library only.
 *
 * The kernel tables live in nvcc translation units (one per input dtype, so
 * they compile in parallel); everything else in the library is C11 and
 * launches through cudaLaunchKernel with these pointers.
 */
#ifndef MKG_INTERNAL_H
#define MKG_INTERNAL_H

#include "mkg_gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel variants of a schedule row. */
#define MKG_KV_ONE 0     /* GEMMs of one K chunk; output type and epilogue read at run time */
#define MKG_KV_CHUNKED 1 /* GEMMs of several K chunks (rows with wgmma N <= MKG_CHUNKED_MAX_WN) */
#define MKG_KV_STORE 2   /* one K chunk, a plain store of C in mkg_store_type(input type): only that
                            epilogue is compiled (a third of MKG_KV_ONE's code; v37 in bench/NOTES.md) */
#define MKG_KV_CHUNKED_STORE 3 /* several K chunks (or block scales), a plain store of C in mkg_store_type:
                                 MKG_KV_CHUNKED compiled for only that epilogue (v61 in bench/NOTES.md) */
#define MKG_KV_COUNT 4

/* The output type of the MKG_KV_STORE kernels of input type t. */
static inline mkg_dtype mkg_store_type(mkg_dtype t)
{
    return t == MKG_DTYPE_E4M3 ? MKG_DTYPE_BF16 : t;
}

/* Persistent kernel of schedule s for one input dtype, variant v (MKG_KV_*); NULL if s is
 * unknown or has no such variant (rows that cannot fold chunks). */
const void *mkg_kernel_sm90_bf16(int s, int v);
const void *mkg_kernel_sm90_fp16(int s, int v);
const void *mkg_kernel_sm90_fp32(int s, int v);
const void *mkg_kernel_sm90_e4m3(int s, int v);

/* Kernel of schedule s for input dtype t, variant v, or NULL. */
const void *mkg_kernel_sm90(mkg_dtype t, int s, int v);

#ifdef __cplusplus
}
#endif
#endif /* MKG_INTERNAL_H */
