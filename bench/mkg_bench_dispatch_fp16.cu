/* mkg_bench_dispatch_fp16.cu - the benchmark's dispatch kernel for fp16 inputs with plain
 * fp16 stores (every schedule row; a translation unit of its own for build time). */
#include "mkg_bench_dispatch_kernel.cuh"

MKG_BENCH_DISPATCH_ENTRIES(fp16, MKG_DTYPE_FP16, MKG_DTYPE_FP16, 0)
