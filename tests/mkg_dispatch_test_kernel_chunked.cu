/* mkg_dispatch_test_kernel_chunked.cu - the chunk-stepping form of the dispatch test kernel (see
 * mkg_dispatch_test_kernel.cuh: a CHUNKS = 1 pick, the chunked producer, mkg_dispatch_consume_chunked)
 * for bf16 and e4m3 layers, which runs chunked layers (kc < K) and e4m3 layers with block scales;
 * a translation unit of its own for build time. */
#include "mkg_dispatch_test_kernel.cuh"

extern "C" cudaError_t mkg_test_run_layers_chunked(const mkg_layer_dev *rows, int count, const int *m_cur,
                                                   unsigned int *err, const int *order, int steps, int grid,
                                                   cudaStream_t stream)
{
    return mkg_test_launch_layers<MKG_DTYPE_BF16, -1, 1>(rows, count, m_cur, err, order, steps, grid, stream);
}

extern "C" cudaError_t mkg_test_run_layers_chunked_e4m3(const mkg_layer_dev *rows, int count, const int *m_cur,
                                                        unsigned int *err, const int *order, int steps, int grid,
                                                        cudaStream_t stream)
{
    return mkg_test_launch_layers<MKG_DTYPE_E4M3, -1, 1>(rows, count, m_cur, err, order, steps, grid, stream);
}
