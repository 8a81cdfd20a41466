/* mkg_kernels_bf16_sm90.cu - persistent GEMM kernels for bf16 inputs, one per schedule row. */
#include "mkg_kernels_sm90.cuh"

MKG_KERNEL_TABLE_FN(mkg_kernel_sm90_bf16, BF16)
