/* mkg_kernels_sm90.cuh - expands the schedule table into a kernel table for one
 * input dtype. Included by mkg_kernels_{bf16,fp16,fp32,e4m3}_sm90.cu.
 */
#ifndef MKG_KERNELS_SM90_CUH
#define MKG_KERNELS_SM90_CUH

#include "mkg_gemm_sm90.cuh"
#include "mkg_internal.h"

#define MKG_KERNEL_TABLE_FN(fn_name, DT)                                                   \
    extern "C" const void *fn_name(int s, int v)                                           \
    {                                                                                      \
        switch (s) {                                                                       \
            MKG_SCHEDULE_LIST(MKG_X_KERNEL_CASE_##DT)                                      \
        default: return NULL;                                                              \
        }                                                                                  \
    }

// Variant v (MKG_KV_*) of a row for input dtype DT whose 128-byte stage row is SUB elements;
// OT is the output type of the MKG_KV_STORE variant (mkg_store_type). The table's TK counts
// 16-bit elements: tk / 64 K sub-tiles (KH) of one 128-byte row each per stage.
#define MKG_KERNEL_VARIANT(DT, OT, SUB, tm, tn, tk, st, swap, cl, pp)                                              \
    (v == MKG_KV_CHUNKED ? (pp ? NULL : mkg_chunked_kernel_sm90<DT, tm, tn, SUB, st, swap, cl, tk / 64>())         \
     : v == MKG_KV_CHUNKED_STORE ? (pp ? NULL : mkg_chunked_kernel_sm90<DT, tm, tn, SUB, st, swap, cl, tk / 64, OT>()) \
     : v == MKG_KV_STORE ? mkg_one_chunk_kernel_sm90<DT, tm, tn, SUB, st, swap, cl, pp, OT, tk / 64>()              \
     : v == MKG_KV_ONE   ? mkg_one_chunk_kernel_sm90<DT, tm, tn, SUB, st, swap, cl, pp, -1, tk / 64>()              \
                         : NULL)

#define MKG_X_KERNEL_CASE_BF16(name, tm, tn, tk, st, raster, group, swap, split, cl, pp)                       \
    case MKG_SCHED_##name:                                                                                 \
        return MKG_KERNEL_VARIANT(MKG_DTYPE_BF16, MKG_DTYPE_BF16, 64, tm, tn, tk, st, swap, cl, pp);
// fp32 inputs (tf32 math): a 128-byte stage row is 32 elements.
#define MKG_X_KERNEL_CASE_FP32(name, tm, tn, tk, st, raster, group, swap, split, cl, pp)                       \
    case MKG_SCHED_##name:                                                                                 \
        return MKG_KERNEL_VARIANT(MKG_DTYPE_FP32, MKG_DTYPE_FP32, 32, tm, tn, tk, st, swap, cl, pp);
// e4m3 inputs (FP8): a 128-byte stage row is 128 elements.
#define MKG_X_KERNEL_CASE_E4M3(name, tm, tn, tk, st, raster, group, swap, split, cl, pp)                       \
    case MKG_SCHED_##name:                                                                                 \
        return MKG_KERNEL_VARIANT(MKG_DTYPE_E4M3, MKG_DTYPE_BF16, 128, tm, tn, tk, st, swap, cl, pp);
#define MKG_X_KERNEL_CASE_FP16(name, tm, tn, tk, st, raster, group, swap, split, cl, pp)                       \
    case MKG_SCHED_##name:                                                                                 \
        return MKG_KERNEL_VARIANT(MKG_DTYPE_FP16, MKG_DTYPE_FP16, 64, tm, tn, tk, st, swap, cl, pp);

#endif /* MKG_KERNELS_SM90_CUH */
