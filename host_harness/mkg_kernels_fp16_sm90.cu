/* mkg_kernels_fp16_sm90.cu - persistent GEMM kernels for fp16 inputs, one per schedule row. */
#include "mkg_kernels_sm90.cuh"

MKG_KERNEL_TABLE_FN(mkg_kernel_sm90_fp16, FP16)
