/* mkg_dispatch_test_kernel_e4m3.cu - the plain form of the dispatch test kernel (see
 * mkg_dispatch_test_kernel.cuh) for e4m3 layers (per-tensor scales) with
 * plain bf16 stores, in a translation unit of its own for build time. */
#include "mkg_dispatch_test_kernel.cuh"

extern "C" cudaError_t mkg_test_run_layers_e4m3(const mkg_layer_dev *rows, int count, const int *m_cur,
                                                unsigned int *err, const int *order, int steps, int grid,
                                                cudaStream_t stream)
{
    return mkg_test_launch_layers<MKG_DTYPE_E4M3, MKG_DTYPE_BF16>(rows, count, m_cur, err, order, steps, grid, stream);
}
