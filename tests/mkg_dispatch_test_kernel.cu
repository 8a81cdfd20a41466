/* mkg_dispatch_test_kernel.cu - the dispatch test kernel for bf16 layers in two forms (see
 * mkg_dispatch_test_kernel.cuh; the GPU dispatch tests call it through mkg_test_run_layers),
 * and the device's bucket mapping for the bucket test.
 */
#include "mkg_dispatch_test_kernel.cuh"

extern "C" cudaError_t mkg_test_run_layers(const mkg_layer_dev *rows, int count, const int *m_cur,
                                           unsigned int *err, const int *order, int steps, int grid, int plain,
                                           cudaStream_t stream)
{
    return plain ? mkg_test_launch_layers<MKG_DTYPE_BF16, MKG_DTYPE_BF16>(rows, count, m_cur, err, order, steps, grid,
                                                                           stream)
                 : mkg_test_launch_layers<MKG_DTYPE_BF16, -1>(rows, count, m_cur, err, order, steps, grid, stream);
}

__global__ void mkg_test_bucket_kernel(int n, int *out)
{
    for (int m = 1 + blockIdx.x * blockDim.x + threadIdx.x; m <= n; m += gridDim.x * blockDim.x)
        out[m - 1] = mkg_bucket_of(m);
}

extern "C" int mkg_test_device_buckets(int n, int *out)
{
    int *d = NULL;
    cudaError_t e = cudaMalloc((void **)&d, (size_t)n * sizeof(int));
    if (e != cudaSuccess)
        return (int)e;
    mkg_test_bucket_kernel<<<264, 256>>>(n, d);
    e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaMemcpy(out, d, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(d);
    return (int)e;
}
