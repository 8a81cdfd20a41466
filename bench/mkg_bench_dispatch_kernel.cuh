/* mkg_bench_dispatch_kernel.cuh - the one-GEMM dispatch kernel of the benchmark (see
 * mkg_bench_dispatch.cu), in a header so that tools/launch_probe.cu instruments this very code:
 * its MKG_PROBE marks are empty unless the includer defines them (device/mkg_ptx_sm90.cuh).
 * Point 2 is "schedule picked" here (the shipped kernel's is "producer start"); the pick itself
 * runs on warp 1 beside the barrier init, so it lands in point 1. Points 13, 11 and 12 split the
 * producer's start: the role branch next (the CTA's rank known), its branch reached, its
 * registers released (d3, d4 in bench/NOTES.md).
 * CHUNKS = 1 is the chunk-stepping form for chunked and block-scaled layers: a CHUNKS = 1 pick, the
 * chunked producer and mkg_dispatch_consume_chunked (run-time epilogue, OT = -1), chunk-folding rows.
 */
#ifndef MKG_BENCH_DISPATCH_KERNEL_CUH
#define MKG_BENCH_DISPATCH_KERNEL_CUH

#include "mkg_dispatch_sm90.cuh"

template <int DT, int OT, int CHUNKS = 0>
__global__ void __launch_bounds__(MKG_LAUNCH_THREADS, 1)
mkg_bench_dispatch_kernel(const mkg_layer_dev *__restrict__ rows, int count, const int *__restrict__ m_cur,
                          unsigned int *err, int layer, int producers, int order)
{
    static_assert(!(CHUNKS && OT >= 0), "the chunk-stepping consumers keep the run-time epilogue");
    extern __shared__ __align__(1024) unsigned char mkg_dyn_smem[];
    __shared__ mkg_dispatch_slot slot;
    const mkg_smem sm = mkg_smem_carve(mkg_dyn_smem);
    // Thread 0 starts the tensor maps towards the L2 and sets up the barriers while warp 1
    // picks the schedule (v47 in bench/NOTES.md): the CTA barrier then waits for the slower.
    if (threadIdx.x == 0) {
        MKG_PROBE(0);
        mkg_dispatch_prefetch_maps(rows, count, layer);
        mkg_smem_init(&sm);
        MKG_PROBE_ANY(15);                           // thread 0 at the CTA barrier (d5)
    } else if (threadIdx.x / 32 == 1) {
        mkg_dispatch_pick_warp<DT, CHUNKS, OT>(rows, count, m_cur, layer, err, &slot);
        if (threadIdx.x == 32)
            MKG_PROBE_ANY(14);                       // the pick done (d5)
    }
    __syncthreads();
    if (threadIdx.x == 0)
        MKG_PROBE(1);

    // This CTA's rank in unit order (mkg_bench_dispatch_order): 3 (the default) by the order
    // that warp 1's pick left in the slot (mkg_row_spreads: rows of at most 64 rows or one M
    // tile even CTAs first, longer rows with several M tiles blockIdx; v82-v83 in
    // bench/NOTES.md), 1 even CTAs first for every row (mkg_cta_rank_spread, v71), 0 blockIdx, 2
    // even SMs first by %smid (a diagnostic: right only while every SM runs exactly one CTA of
    // the grid, which the host checks it can be).
    const int b = (int)blockIdx.x, grid = (int)gridDim.x;
    const int rank = mkg_warp_uniform(order == 3   ? mkg_cta_rank_for_row(b, grid, slot.spread)
                                      : order == 1 ? mkg_cta_rank_spread(b, grid)
                                      : order == 2 ? mkg_cta_rank_spread(mkg_smid(), grid)
                                                   : b);
    mkg_ring ring = mkg_ring_start();
    const mkg_gemm_params *p = NULL;
    int m = 0, units = 0;
    if (threadIdx.x == 0)
        MKG_PROBE(13);                               // rank known, the role branch next (d4)
    if (threadIdx.x < 128) {
        if (threadIdx.x == 0)
            MKG_PROBE(11);                           // the producers' branch reached (d3)
        mkg_setmaxnreg_dec<MKG_LAUNCH_PRODUCER_REGS>();
        if (threadIdx.x == 0)
            MKG_PROBE(12);                           // registers released
        // producers (1 or 2): lanes 0 of that many warps fill the ring's slots in turn
        // (mkg_ring_mine), at most the row's mkg_shape::PRODUCERS (the others leave at once).
        const int np = producers == 2 ? 2 : 1;
        if ((threadIdx.x & 31) == 0 && (int)threadIdx.x < 32 * np) {
            const int s = mkg_dispatch_begin_slot(rows, layer, &slot, &ring, &sm, 1, &p, &m, &units);
            if (threadIdx.x == 0)
                MKG_PROBE(2);
            for (int u = rank; s >= 0 && u < units; u += grid) {
                if (np == 2)
                    mkg_dispatch_produce<DT, 0, !CHUNKS, 2, true>(p, s, m, u, &ring, &sm);
                else
                    mkg_dispatch_produce<DT, 0, !CHUNKS>(p, s, m, u, &ring, &sm);
            }
            if (threadIdx.x == 0)
                MKG_PROBE_DONE();
        }
    } else {
        mkg_setmaxnreg_inc<MKG_LAUNCH_CONSUMER_REGS>();
        const int wg = mkg_warp_uniform((int)threadIdx.x / 128) - 1;
        const int s = mkg_dispatch_begin_slot(rows, layer, &slot, &ring, &sm, 0, &p, &m, &units);
        if constexpr (CHUNKS) {
            if (s >= 0)
                mkg_dispatch_consume_chunked<DT>(p, s, m, rank, grid, units, &ring, &sm, wg);
        } else if (s >= 0) {
            mkg_dispatch_consume_units_one<DT, OT>(p, s, m, rank, grid, units, &ring, &sm, wg);
        }
        MKG_PROBE(5 + 4 * wg);
        mkg_epilogue_drain();
        MKG_PROBE(6 + 4 * wg);
        MKG_PROBE_DONE();
    }
}

// ---- one input dtype's entry points -----------------------------------------------------
//
// Each dtype's kernel compiles every schedule row, so each gets a translation unit of its own
// (mkg_bench_dispatch_<tag>.cu, built in parallel), which expands this macro once for input DT,
// the plain-store output type OT (-1: run-time epilogue) and CHUNKS: mkg_bench_dispatch_init_<tag>()
// sets the kernel's shared memory attribute, mkg_bench_dispatch_launch_<tag>() launches it
// (mkg_bench_dispatch.cu picks the dtype and form).
// The entry points' declarations (mkg_bench_dispatch.cu; ENTRIES repeats them, so a mismatch fails
// to compile).
#define MKG_BENCH_DISPATCH_DECLARE(tag)                                                                      \
    extern "C" cudaError_t mkg_bench_dispatch_init_##tag(void);                                              \
    extern "C" void mkg_bench_dispatch_launch_##tag(const mkg_layer_dev *rows, int count, const int *m_cur,   \
                                                    unsigned int *err, int layer, int grid, int producers,   \
                                                    int order, cudaStream_t stream);

#define MKG_BENCH_DISPATCH_ENTRIES(tag, DT, OT, CHUNKS)                                                      \
    MKG_BENCH_DISPATCH_DECLARE(tag)                                                                          \
    extern "C" cudaError_t mkg_bench_dispatch_init_##tag(void)                                               \
    {                                                                                                        \
        return cudaFuncSetAttribute((const void *)mkg_bench_dispatch_kernel<DT, OT, CHUNKS>,                 \
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, MKG_LAUNCH_SMEM_BYTES);     \
    }                                                                                                        \
    extern "C" void mkg_bench_dispatch_launch_##tag(const mkg_layer_dev *rows, int count, const int *m_cur,   \
                                                    unsigned int *err, int layer, int grid, int producers,   \
                                                    int order, cudaStream_t stream)                          \
    {                                                                                                        \
        mkg_bench_dispatch_kernel<DT, OT, CHUNKS><<<grid, MKG_LAUNCH_THREADS, MKG_LAUNCH_SMEM_BYTES, stream>>>( \
            rows, count, m_cur, err, layer, producers, order);                                              \
    }

#endif /* MKG_BENCH_DISPATCH_KERNEL_CUH */
