/* mkg_bench_dispatch.cu - the persistent kernel behind mkg_bench_dispatch.h: one CTA per
 * SM runs one layer of the uploaded table, its schedule picked on the device from the
 * layer's current M (mkg_dispatch_begin, then the X-macro switches of
 * device/mkg_dispatch_sm90.cuh). Same roles as the host-launched kernel: warpgroup 0's
 * first thread issues the TMA loads, warpgroups 1 and 2 run wgmma and the epilogue.
 * Instantiated for bf16 and fp16 inputs; the launcher picks by dtype.
 */
#include "mkg_bench_dispatch.h"
#include "mkg_dispatch_sm90.cuh"

// ---- kernel ------------------------------------------------------------------------------

// One role's unit loop of one schedule, out of line. Inlined into the switch, every schedule's
// loops and their out-of-line wait paths spread over megabytes of code, and the mainloop's
// failed waits jumped that far and back (v17 in bench/NOTES.md: with one tile shape compiled
// in, 8B down at M = 1 ran in 45 us instead of 54; the shipped kernel takes 41). As its own
// function, a schedule's loops sit next to their wait paths.
template <int TM, int TN, int TK, int ST, int SWAP>
static __device__ __noinline__ void mkg_bench_produce_units(const mkg_gemm_params *p, int m, int units, int raster,
                                                           int group, int split, mkg_smem sm)
{
    mkg_ring r = mkg_ring_start();
    for (int u = blockIdx.x; u < units; u += gridDim.x)
        mkg_gemm_produce_rest<TM, TN, TK, ST, SWAP>(p, m, u, raster, group, split, &r, &sm, 0);
}

template <int DT, int TM, int TN, int TK, int ST, int SWAP>
static __device__ __noinline__ void mkg_bench_consume_units(const mkg_gemm_params *p, int m, int units, int raster,
                                                           int group, int split, mkg_smem sm, int wg)
{
    mkg_ring r = mkg_ring_start();
    for (int u = blockIdx.x; u < units; u += gridDim.x) {
        float d[mkg_shape<TM, TN, TK, ST, SWAP>::WN / 2], tot[1];
        mkg_gemm_consume_step<DT, TM, TN, TK, ST, SWAP, true>(p, m, u, 0, raster, group, split, &r, &sm, wg, d,
                                                              tot);
    }
    mkg_epilogue_drain();
}

template <int DT>
static __device__ __forceinline__ void mkg_bench_run_role(const mkg_gemm_params *p, int s, int m, int units,
                                                          const mkg_smem &sm, int producer, int wg)
{
    switch (s) {
#define MKG_X_ROLE(name, tm, tn, tk, st, raster, group, swap, split, cl, pp)                                  \
    case MKG_SCHED_##name:                                                                             \
        if constexpr (mkg_dispatch_row(cl, pp, tm, tn, st)) {                                          \
            if (producer)                                                                              \
                mkg_bench_produce_units<tm, tn, tk, st, swap>(p, m, units, raster, group, split, sm);  \
            else                                                                                       \
                mkg_bench_consume_units<DT, tm, tn, tk, st, swap>(p, m, units, raster, group, split, sm, wg); \
        }                                                                                              \
        break;
        MKG_SCHEDULE_LIST(MKG_X_ROLE)
#undef MKG_X_ROLE
    default: break;
    }
}

template <int DT>
__global__ void __launch_bounds__(MKG_LAUNCH_THREADS, 1)
mkg_bench_dispatch_kernel(const mkg_layer_dev *__restrict__ rows, int count, const int *__restrict__ m_cur,
                          unsigned int *err, int layer)
{
    extern __shared__ __align__(1024) unsigned char mkg_dyn_smem[];
    const mkg_smem sm = mkg_smem_carve(mkg_dyn_smem);
    if (threadIdx.x == 0) {
        mkg_dispatch_prefetch_maps(rows, count, layer, m_cur);
        mkg_smem_init(&sm);
    }
    __syncthreads();

    int m = 0;
    if (threadIdx.x < 128) {
        mkg_setmaxnreg_dec<MKG_LAUNCH_PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            const int s = mkg_dispatch_pick<DT>(rows, count, m_cur, layer, err, &m);
            if (s >= 0)
                mkg_bench_run_role<DT>(&rows[layer].params, s, m, mkg_dispatch_units(&rows[layer].params, s, m), sm,
                                       1, 0);
        }
    } else {
        mkg_setmaxnreg_inc<MKG_LAUNCH_CONSUMER_REGS>();
        const int s = mkg_dispatch_pick<DT>(rows, count, m_cur, layer, err, &m);
        if (s >= 0)
            mkg_bench_run_role<DT>(&rows[layer].params, s, m, mkg_dispatch_units(&rows[layer].params, s, m), sm, 0,
                                   threadIdx.x / 128 - 1);
        else
            mkg_epilogue_drain();
    }
}

// ---- launcher ----------------------------------------------------------------------------

extern "C" int mkg_bench_dispatch_available(void)
{
    return 1;
}

extern "C" cudaError_t mkg_bench_dispatch_init(void)
{
    cudaError_t e = cudaFuncSetAttribute((const void *)mkg_bench_dispatch_kernel<MKG_DTYPE_BF16>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, MKG_LAUNCH_SMEM_BYTES);
    if (e != cudaSuccess)
        return e;
    return cudaFuncSetAttribute((const void *)mkg_bench_dispatch_kernel<MKG_DTYPE_FP16>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize, MKG_LAUNCH_SMEM_BYTES);
}

extern "C" cudaError_t mkg_bench_dispatch_launch(mkg_dtype dt, const mkg_layer_dev *rows, int count,
                                                 const int *m_cur, unsigned int *err, int layer, int grid,
                                                 cudaStream_t stream)
{
    if (dt == MKG_DTYPE_BF16)
        mkg_bench_dispatch_kernel<MKG_DTYPE_BF16>
            <<<grid, MKG_LAUNCH_THREADS, MKG_LAUNCH_SMEM_BYTES, stream>>>(rows, count, m_cur, err, layer);
    else if (dt == MKG_DTYPE_FP16)
        mkg_bench_dispatch_kernel<MKG_DTYPE_FP16>
            <<<grid, MKG_LAUNCH_THREADS, MKG_LAUNCH_SMEM_BYTES, stream>>>(rows, count, m_cur, err, layer);
    else
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}
