/* mkg_dispatch_test_kernel_chunked.cu - the chunk-stepping form of the dispatch test kernel (see
 * mkg_dispatch_test_kernel.cuh: a CHUNKS = 1 pick, the chunked producer, mkg_dispatch_consume_chunked)
 * for bf16 and e4m3 layers, which runs chunked layers (kc < K) and e4m3 layers with block scales;
 * a translation unit of its own for build time. The bf16 form picks per role with
 * mkg_dispatch_begin<DT, 1> (the README's recipe), the e4m3 form by warp (as the bench's kernel), so
 * that both picks meet chunked layers. (e4m3 per role spilled 1856 B here against 1432 B by warp.) */
#include "mkg_dispatch_test_kernel.cuh"

extern "C" cudaError_t mkg_test_run_layers_chunked(const mkg_layer_dev *rows, int count, const int *m_cur,
                                                   unsigned int *err, const int *order, int steps, int grid,
                                                   cudaStream_t stream)
{
    return mkg_test_launch_layers<MKG_DTYPE_BF16, -1, 1, false>(rows, count, m_cur, err, order, steps, grid, stream);
}

extern "C" cudaError_t mkg_test_run_layers_chunked_e4m3(const mkg_layer_dev *rows, int count, const int *m_cur,
                                                        unsigned int *err, const int *order, int steps, int grid,
                                                        cudaStream_t stream)
{
    return mkg_test_launch_layers<MKG_DTYPE_E4M3, -1, 1, true>(rows, count, m_cur, err, order, steps, grid, stream);
}
