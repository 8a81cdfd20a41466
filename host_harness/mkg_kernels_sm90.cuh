/* mkg_kernels_sm90.cuh - expands the schedule table into a kernel table for one
 * input dtype. Included by mkg_kernels_{bf16,fp16,fp32,e4m3}_sm90.cu.
 */
#ifndef MKG_KERNELS_SM90_CUH
#define MKG_KERNELS_SM90_CUH

#include "mkg_gemm_sm90.cuh"
#include "mkg_internal.h"

#define MKG_KERNEL_TABLE_FN(fn_name, DT)                                                   \
    extern "C" const void *fn_name(int s, int chunked)                                     \
    {                                                                                      \
        switch (s) {                                                                       \
            MKG_SCHEDULE_LIST(MKG_X_KERNEL_CASE_##DT)                                      \
        default: return NULL;                                                              \
        }                                                                                  \
    }

// A row's TK counts 16-bit elements: tk / 64 sub-tiles (KH) of one 128-byte row each per stage.
// A 128-byte row is 64 16-bit elements, 32 fp32 (tf32 math) or 128 e4m3.
#define MKG_X_KERNEL_CASE_DT(DT, SUB, name, tm, tn, tk, st, swap, cl, pp)                                      \
    case MKG_SCHED_##name:                                                                                     \
        return chunked ? (pp ? NULL : mkg_chunked_kernel_sm90<DT, tm, tn, SUB, st, swap, cl, tk / 64>())       \
                       : (const void *)mkg_gemm_persistent_sm90<DT, tm, tn, SUB, st, swap, 0, cl, pp, tk / 64>;
#define MKG_X_KERNEL_CASE_BF16(name, tm, tn, tk, st, raster, group, swap, split, cl, pp) \
    MKG_X_KERNEL_CASE_DT(MKG_DTYPE_BF16, 64, name, tm, tn, tk, st, swap, cl, pp)
#define MKG_X_KERNEL_CASE_FP16(name, tm, tn, tk, st, raster, group, swap, split, cl, pp) \
    MKG_X_KERNEL_CASE_DT(MKG_DTYPE_FP16, 64, name, tm, tn, tk, st, swap, cl, pp)
#define MKG_X_KERNEL_CASE_FP32(name, tm, tn, tk, st, raster, group, swap, split, cl, pp) \
    MKG_X_KERNEL_CASE_DT(MKG_DTYPE_FP32, 32, name, tm, tn, tk, st, swap, cl, pp)
#define MKG_X_KERNEL_CASE_E4M3(name, tm, tn, tk, st, raster, group, swap, split, cl, pp) \
    MKG_X_KERNEL_CASE_DT(MKG_DTYPE_E4M3, 128, name, tm, tn, tk, st, swap, cl, pp)

#endif /* MKG_KERNELS_SM90_CUH */
