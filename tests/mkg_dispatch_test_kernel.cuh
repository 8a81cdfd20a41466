/* mkg_dispatch_test_kernel.cuh - the persistent dispatch test kernel: several layers of an
 * uploaded table back to back in one launch, each dispatched on the device by its current M.
 * Three forms: the run-time epilogue (OT = -1, the calls of the README's example); one compiled
 * for plain stores of type OT with the one-chunk producer path and the warp pick (as the
 * benchmark's kernel); and the chunk-stepping form (CHUNKS = 1: chunked producer,
 * mkg_dispatch_consume_chunked), which runs chunked and block-scaled layers, picking by warp or
 * per role (WARP). Included by
 * mkg_dispatch_test_kernel.cu (bf16: the first two), mkg_dispatch_test_kernel_{e4m3,tf32}.cu
 * (plain) and mkg_dispatch_test_kernel_chunked.cu (chunk-stepping, bf16 and e4m3), so that they
 * build in parallel.
 */
#ifndef MKG_DISPATCH_TEST_KERNEL_CUH
#define MKG_DISPATCH_TEST_KERNEL_CUH

#include "mkg_dispatch_sm90.cuh"
#include "mkg_test_shims.h"

#define MKG_TEST_MAX_STEPS 16

// WARP (the plain variant's way): pick as the benchmark's kernel does (mkg_dispatch_pick_warp on
// warp 1, beside the barrier init; here every step up front, since no M changes within a launch);
// else per role and step (mkg_dispatch_begin, as the README's example and the megakernel).
template <int DT, int OT, int CHUNKS = 0, bool WARP = (OT >= 0)>
__global__ void __launch_bounds__(MKG_LAUNCH_THREADS, 1)
mkg_dispatch_test_kernel(const mkg_layer_dev *__restrict__ rows, int count, const int *__restrict__ m_cur,
                         unsigned int *err, const int *__restrict__ order, int steps)
{
    extern __shared__ __align__(1024) unsigned char dyn_smem[];
    __shared__ mkg_dispatch_slot slots[MKG_TEST_MAX_STEPS];
    static_assert(!(CHUNKS && OT >= 0), "the chunk-stepping consumers keep the run-time epilogue");
    static_assert(WARP || OT < 0, "the plain variant picks by warp");
    constexpr bool WARP_PICK = WARP;
    const mkg_smem sm = mkg_smem_carve(dyn_smem);
    if (threadIdx.x == 0) {
        mkg_smem_init(&sm);
    } else if (WARP_PICK && threadIdx.x / 32 == 1) {
        for (int i = 0; i < steps; ++i)
            mkg_dispatch_pick_warp<DT, CHUNKS, OT>(rows, count, m_cur, order[i], err, &slots[i]);
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
                                        : mkg_dispatch_begin<DT, CHUNKS, OT>(rows, count, m_cur, order[i], err,
                                                                             &ring, &sm, 1, &p, &m, &units);
                for (int u = blockIdx.x; s >= 0 && u < units; u += gridDim.x) {
                    if constexpr (OT < 0)
                        mkg_dispatch_produce<DT>(p, s, m, u, &ring, &sm);       // chunks of each unit
                    else
                        mkg_dispatch_produce<DT, 0, true>(p, s, m, u, &ring, &sm);
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
                                    : mkg_dispatch_begin<DT, CHUNKS, OT>(rows, count, m_cur, order[i], err, &ring,
                                                                         &sm, 0, &p, &m, &units);
            if (s < 0)
                continue;
            if constexpr (CHUNKS)
                mkg_dispatch_consume_chunked<DT>(p, s, m, (int)blockIdx.x, (int)gridDim.x, units, &ring, &sm, wg);
            else
                mkg_dispatch_consume_units_one<DT, OT>(p, s, m, (int)blockIdx.x, (int)gridDim.x, units, &ring, &sm,
                                                       wg);
        }
        mkg_epilogue_drain();
    }
}

// Sets the kernel's shared-memory attribute and launches `steps` layers (indices in order[]).
template <int DT, int OT, int CHUNKS = 0, bool WARP = (OT >= 0)>
static cudaError_t mkg_test_launch_layers(const mkg_layer_dev *rows, int count, const int *m_cur, unsigned int *err,
                                          const int *order, int steps, int grid, cudaStream_t stream)
{
    if (steps < 0 || steps > MKG_TEST_MAX_STEPS)
        return cudaErrorInvalidValue;
    cudaError_t e = cudaFuncSetAttribute((const void *)mkg_dispatch_test_kernel<DT, OT, CHUNKS, WARP>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, MKG_LAUNCH_SMEM_BYTES);
    if (e != cudaSuccess)
        return e;
    mkg_dispatch_test_kernel<DT, OT, CHUNKS, WARP><<<grid, MKG_LAUNCH_THREADS, MKG_LAUNCH_SMEM_BYTES, stream>>>(
        rows, count, m_cur, err, order, steps);
    return cudaGetLastError();
}

#endif /* MKG_DISPATCH_TEST_KERNEL_CUH */
