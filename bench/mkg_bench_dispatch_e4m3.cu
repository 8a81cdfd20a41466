/* mkg_bench_dispatch_e4m3.cu - the benchmark's dispatch kernel for e4m3 inputs with plain
 * bf16 stores (every schedule row; a translation unit of its own for build time). */
#include "mkg_bench_dispatch_kernel.cuh"

MKG_BENCH_DISPATCH_ENTRIES(e4m3, MKG_DTYPE_E4M3, MKG_DTYPE_BF16, 0)
