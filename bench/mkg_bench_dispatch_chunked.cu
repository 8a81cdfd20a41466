/* mkg_bench_dispatch_chunked.cu - the benchmark's chunk-stepping dispatch kernels (CHUNKS = 1, run-time
 * epilogue) for bf16 and e4m3 inputs: layers of several K chunks (--kc-policy decode or fixed) and
 * block-scaled e4m3 layers (--block-scales 1), which the one-chunk kernels report and skip. Only
 * the chunk-folding rows (wgmma N <= MKG_CHUNKED_MAX_WN, no ping-pong); a translation unit of its
 * own for build time. */
#include "mkg_bench_dispatch_kernel.cuh"

MKG_BENCH_DISPATCH_ENTRIES(bf16_chunked, MKG_DTYPE_BF16, -1, 1)
MKG_BENCH_DISPATCH_ENTRIES(e4m3_chunked, MKG_DTYPE_E4M3, -1, 1)
