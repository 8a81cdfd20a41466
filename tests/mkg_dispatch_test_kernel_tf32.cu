/* mkg_dispatch_test_kernel_tf32.cu - the plain form of the dispatch test kernel (see
 * mkg_dispatch_test_kernel.cuh) for fp32 layers (tf32 math) with plain
 * fp32 stores, in a translation unit of its own for build time. */
#include "mkg_dispatch_test_kernel.cuh"

extern "C" cudaError_t mkg_test_run_layers_tf32(const mkg_layer_dev *rows, int count, const int *m_cur,
                                                unsigned int *err, const int *order, int steps, int grid,
                                                cudaStream_t stream)
{
    return mkg_test_launch_layers<MKG_DTYPE_FP32, MKG_DTYPE_FP32>(rows, count, m_cur, err, order, steps, grid, stream);
}
