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

/* Persistent kernel of schedule s for bf16 / fp16 inputs, for GEMMs of one K chunk
 * (chunked = 0) or several (1); NULL if s is unknown or cannot fold chunks. */
const void *mkg_kernel_sm90_bf16(int s, int chunked);
const void *mkg_kernel_sm90_fp16(int s, int chunked);
const void *mkg_kernel_sm90_fp32(int s, int chunked);
const void *mkg_kernel_sm90_e4m3(int s, int chunked);

/* Kernel of schedule s for input dtype t, or NULL. */
const void *mkg_kernel_sm90(mkg_dtype t, int s, int chunked);

#ifdef __cplusplus
}
#endif
#endif /* MKG_INTERNAL_H */
