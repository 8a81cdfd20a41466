/* mkg_dispatch_test_kernel.cu - a persistent test kernel that runs several layers
 * back to back, each dispatched on the device from the uploaded table by its
 * current M (the GPU dispatch tests call it through mkg_test_run_layers). Two variants:
 * the run-time epilogue (OT = -1, the calls of the README's example) and one compiled for
 * plain bf16 stores with the one-chunk producer path and the warp pick (OT = bf16, as the
 * benchmark's kernel).
 */
#include "mkg_dispatch_sm90.cuh"
#include "mkg_test_shims.h"

#define MKG_TEST_MAX_STEPS 16

// The plain variant picks as the benchmark's kernel does (mkg_dispatch_pick_warp on warp 1,
// beside the barrier init; here every step up front, since no M changes within a launch); the
// run-time-epilogue variant picks per role and step (mkg_dispatch_begin).
template <int DT, int OT>
__global__ void __launch_bounds__(MKG_LAUNCH_THREADS, 1)
mkg_dispatch_test_kernel(const mkg_layer_dev *__restrict__ rows, int count, const int *__restrict__ m_cur,
                         unsigned int *err, const int *__restrict__ order, int steps)
{
    extern __shared__ __align__(1024) unsigned char dyn_smem[];
    __shared__ mkg_dispatch_slot slots[MKG_TEST_MAX_STEPS];
    constexpr bool WARP_PICK = OT >= 0;
    const mkg_smem sm = mkg_smem_carve(dyn_smem);
    if (threadIdx.x == 0) {
        mkg_smem_init(&sm);
    } else if (WARP_PICK && threadIdx.x / 32 == 1) {
        for (int i = 0; i < steps; ++i)
            mkg_dispatch_pick_warp<DT, 0, OT>(rows, count, m_cur, order[i], err, &slots[i]);
    }
    __syncthreads();
    mkg_ring ring = mkg_ring_start();
    if (threadIdx.x < 128) {
        mkg_setmaxnreg_dec<MKG_LAUNCH_PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            for (int i = 0; i < steps; ++i) {
                const mkg_gemm_params *p;
                int m, units;
                const int s = WARP_PICK ? mkg_dispatch_begin_slot(rows, order[i], &slots[i], &ring, &sm, 1, &p, &m,
                                                                  &units)
                                        : mkg_dispatch_begin<DT, 0, OT>(rows, count, m_cur, order[i], err, &ring,
                                                                        &sm, 1, &p, &m, &units);
                for (int u = blockIdx.x; s >= 0 && u < units; u += gridDim.x) {
                    if constexpr (OT < 0)
                        mkg_dispatch_produce(p, s, m, u, &ring, &sm);
                    else
                        mkg_dispatch_produce<0, true>(p, s, m, u, &ring, &sm);
                }
            }
        }
    } else {
        mkg_setmaxnreg_inc<MKG_LAUNCH_CONSUMER_REGS>();
        const int wg = mkg_warp_uniform((int)threadIdx.x / 128) - 1;
        for (int i = 0; i < steps; ++i) {
            const mkg_gemm_params *p;
            int m, units;
            const int s = WARP_PICK ? mkg_dispatch_begin_slot(rows, order[i], &slots[i], &ring, &sm, 0, &p, &m, &units)
                                    : mkg_dispatch_begin<DT, 0, OT>(rows, count, m_cur, order[i], err, &ring, &sm, 0,
                                                                    &p, &m, &units);
            if (s >= 0)
                mkg_dispatch_consume_units_one<DT, OT>(p, s, m, (int)blockIdx.x, (int)gridDim.x, units, &ring, &sm,
                                                       wg);
        }
        mkg_epilogue_drain();
    }
}

extern "C" cudaError_t mkg_test_run_layers(const mkg_layer_dev *rows, int count, const int *m_cur,
                                           unsigned int *err, const int *order, int steps, int grid, int plain,
                                           cudaStream_t stream)
{
    if (steps < 0 || steps > MKG_TEST_MAX_STEPS)
        return cudaErrorInvalidValue;
    const void *k = plain ? (const void *)mkg_dispatch_test_kernel<MKG_DTYPE_BF16, MKG_DTYPE_BF16>
                          : (const void *)mkg_dispatch_test_kernel<MKG_DTYPE_BF16, -1>;
    cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, MKG_LAUNCH_SMEM_BYTES);
    if (e != cudaSuccess)
        return e;
    if (plain)
        mkg_dispatch_test_kernel<MKG_DTYPE_BF16, MKG_DTYPE_BF16>
            <<<grid, MKG_LAUNCH_THREADS, MKG_LAUNCH_SMEM_BYTES, stream>>>(rows, count, m_cur, err, order, steps);
    else
        mkg_dispatch_test_kernel<MKG_DTYPE_BF16, -1>
            <<<grid, MKG_LAUNCH_THREADS, MKG_LAUNCH_SMEM_BYTES, stream>>>(rows, count, m_cur, err, order, steps);
    return cudaGetLastError();
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
