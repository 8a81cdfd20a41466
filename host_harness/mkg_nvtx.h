/* mkg_nvtx.h - NVTX3 ranges in the "mkgemm" domain around host phases.
 *
 * mkg_nvtx_push/pop nest like nvtxRangePush/Pop; ranges show in Nsight Systems
 * and select kernels in Nsight Compute (--nvtx --nvtx-include "mkgemm@...").
 */
#ifndef MKG_NVTX_H
#define MKG_NVTX_H

#ifdef __cplusplus
extern "C" {
#endif

void mkg_nvtx_push(const char *name);
void mkg_nvtx_pop(void);

#ifdef __cplusplus
}
#endif
#endif /* MKG_NVTX_H */
