/* mkg_bench_dispatch.cu - the persistent kernel behind mkg_bench_dispatch.h: one CTA per
 * SM runs one layer of the uploaded table, its schedule picked on the device from the
 * layer's current M (mkg_dispatch_begin, then the X-macro switches of
 * device/mkg_dispatch_sm90.cuh). Same roles as the host-launched kernel: warpgroup 0's
 * first thread issues the TMA loads, warpgroups 1 and 2 run wgmma and the epilogue.
 * Instantiated for bf16 and fp16 inputs, each compiled for plain stores of its own type
 * (the benchmark's layers), as the shipped kernel's MKG_KV_STORE variant is: the producer
 * takes the one-chunk path and the consumers hold only that epilogue (v38 in bench/NOTES.md).
 * A layer of another kind is reported as MKG_DISPATCH_NOT_PLAIN and skipped.
 */
#include <stdlib.h>

#include "mkg_bench_dispatch.h"
#include "mkg_bench_dispatch_kernel.cuh"

// ---- launcher ----------------------------------------------------------------------------

extern "C" int mkg_bench_dispatch_available(void)
{
    return 1;
}

extern "C" int mkg_bench_dispatch_order(void)
{
    static int order = -1;
    if (order < 0) {
        const char *e = getenv("MKG_DISPATCH_ORDER");
        const int v = e && *e ? atoi(e) : 3;
        order = v >= 0 && v <= 2 ? v : 3;
    }
    return order;
}

extern "C" cudaError_t mkg_bench_dispatch_init(void)
{
    cudaError_t e = cudaFuncSetAttribute((const void *)mkg_bench_dispatch_kernel<MKG_DTYPE_BF16, MKG_DTYPE_BF16>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, MKG_LAUNCH_SMEM_BYTES);
    if (e != cudaSuccess)
        return e;
    return cudaFuncSetAttribute((const void *)mkg_bench_dispatch_kernel<MKG_DTYPE_FP16, MKG_DTYPE_FP16>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize, MKG_LAUNCH_SMEM_BYTES);
}

extern "C" cudaError_t mkg_bench_dispatch_launch(mkg_dtype dt, const mkg_layer_dev *rows, int count,
                                                 const int *m_cur, unsigned int *err, int layer, int grid,
                                                 cudaStream_t stream)
{
    static int sms = 0;
    if (!sms) {
        int dev = 0;
        cudaError_t e = cudaGetDevice(&dev);
        if (e == cudaSuccess)
            e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        if (e != cudaSuccess)
            return e;
    }
    const int order = mkg_bench_dispatch_order() == 2 && grid != sms ? 1 : mkg_bench_dispatch_order();
    if (dt == MKG_DTYPE_BF16)
        mkg_bench_dispatch_kernel<MKG_DTYPE_BF16, MKG_DTYPE_BF16>
            <<<grid, MKG_LAUNCH_THREADS, MKG_LAUNCH_SMEM_BYTES, stream>>>(rows, count, m_cur, err, layer,
                                                                               mkg_launch_producers(), order);
    else if (dt == MKG_DTYPE_FP16)
        mkg_bench_dispatch_kernel<MKG_DTYPE_FP16, MKG_DTYPE_FP16>
            <<<grid, MKG_LAUNCH_THREADS, MKG_LAUNCH_SMEM_BYTES, stream>>>(rows, count, m_cur, err, layer,
                                                                               mkg_launch_producers(), order);
    else
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}
