/* mkg_kernels_fp32_sm90.cu - persistent GEMM kernels for fp32 inputs (tf32 wgmma), one per schedule row. */
#include "mkg_kernels_sm90.cuh"

MKG_KERNEL_TABLE_FN(mkg_kernel_sm90_fp32, FP32)
