/* mkg_bench_dispatch_bf16.cu - the benchmark's dispatch kernel for bf16 inputs with plain
 * bf16 stores (every schedule row; a translation unit of its own for build time). */
#include "mkg_bench_dispatch_kernel.cuh"

MKG_BENCH_DISPATCH_ENTRIES(bf16, MKG_DTYPE_BF16, MKG_DTYPE_BF16, 0)
