/* mkg_kernels_e4m3_sm90.cu - persistent GEMM kernels for FP8 e4m3 inputs (per-tensor scales),
 * one per schedule row: 128-element stage rows, wgmma k32 e4m3. */
#include "mkg_kernels_sm90.cuh"

MKG_KERNEL_TABLE_FN(mkg_kernel_sm90_e4m3, E4M3)
