/* mkg_bench_dispatch_tf32.cu - the benchmark's dispatch kernel for fp32 inputs (tf32 math) with plain
 * fp32 stores (every schedule row; a translation unit of its own for build time). */
#include "mkg_bench_dispatch_kernel.cuh"

MKG_BENCH_DISPATCH_ENTRIES(tf32, MKG_DTYPE_FP32, MKG_DTYPE_FP32, 0)
