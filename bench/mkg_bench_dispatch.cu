/* mkg_bench_dispatch.cu - the persistent kernel behind mkg_bench_dispatch.h: one CTA per
 * SM runs one layer of the uploaded table, its schedule picked on the device from the
 * layer's current M (warp 1's mkg_dispatch_pick_warp, then the X-macro switches of
 * device/mkg_dispatch_sm90.cuh). Same roles as the host-launched kernel: warpgroup 0's
 * first thread issues the TMA loads, warpgroups 1 and 2 run wgmma and the epilogue.
 * Instantiated for bf16, fp16, fp32 (tf32 math) and e4m3 inputs, one translation unit each
 * (mkg_bench_dispatch_<dtype>.cu), each compiled for plain stores of the benchmark's output
 * type (the input's own, bf16 for e4m3), as the shipped kernel's MKG_KV_STORE variant is: the
 * producer takes the one-chunk path and the consumers hold only that epilogue (v38 in
 * bench/NOTES.md). A layer of another kind is reported as MKG_DISPATCH_NOT_PLAIN and skipped.
 * Chunked and block-scaled layers (bf16 and e4m3) run in the chunk-stepping kernels of
 * mkg_bench_dispatch_chunked.cu instead (run-time epilogue, chunk-folding rows).
 */
#include <stdlib.h>

#include "mkg_bench_dispatch.h"
#include "mkg_bench_dispatch_kernel.cuh"

MKG_BENCH_DISPATCH_DECLARE(bf16)
MKG_BENCH_DISPATCH_DECLARE(fp16)
MKG_BENCH_DISPATCH_DECLARE(tf32)
MKG_BENCH_DISPATCH_DECLARE(e4m3)
MKG_BENCH_DISPATCH_DECLARE(bf16_chunked)
MKG_BENCH_DISPATCH_DECLARE(e4m3_chunked)

// ---- launcher ----------------------------------------------------------------------------

extern "C" int mkg_bench_dispatch_available(void)
{
    return 1;
}

extern "C" int mkg_bench_dispatch_chunked_available(mkg_dtype dt)
{
    return dt == MKG_DTYPE_BF16 || dt == MKG_DTYPE_E4M3;
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
    cudaError_t e = mkg_bench_dispatch_init_bf16();
    if (e == cudaSuccess)
        e = mkg_bench_dispatch_init_fp16();
    if (e == cudaSuccess)
        e = mkg_bench_dispatch_init_tf32();
    if (e == cudaSuccess)
        e = mkg_bench_dispatch_init_e4m3();
    if (e == cudaSuccess)
        e = mkg_bench_dispatch_init_bf16_chunked();
    if (e == cudaSuccess)
        e = mkg_bench_dispatch_init_e4m3_chunked();
    return e;
}

extern "C" cudaError_t mkg_bench_dispatch_launch(mkg_dtype dt, int chunked, const mkg_layer_dev *rows, int count,
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
    const int producers = mkg_launch_producers();
    if (chunked) {
        if (dt == MKG_DTYPE_BF16)
            mkg_bench_dispatch_launch_bf16_chunked(rows, count, m_cur, err, layer, grid, producers, order, stream);
        else if (dt == MKG_DTYPE_E4M3)
            mkg_bench_dispatch_launch_e4m3_chunked(rows, count, m_cur, err, layer, grid, producers, order, stream);
        else
            return cudaErrorInvalidValue;
        return cudaGetLastError();
    }
    switch (dt) {
    case MKG_DTYPE_BF16:
        mkg_bench_dispatch_launch_bf16(rows, count, m_cur, err, layer, grid, producers, order, stream);
        break;
    case MKG_DTYPE_FP16:
        mkg_bench_dispatch_launch_fp16(rows, count, m_cur, err, layer, grid, producers, order, stream);
        break;
    case MKG_DTYPE_FP32:
        mkg_bench_dispatch_launch_tf32(rows, count, m_cur, err, layer, grid, producers, order, stream);
        break;
    case MKG_DTYPE_E4M3:
        mkg_bench_dispatch_launch_e4m3(rows, count, m_cur, err, layer, grid, producers, order, stream);
        break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
