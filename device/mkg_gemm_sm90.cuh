/* mkg_gemm_sm90.cuh - what a persistent kernel includes to run mkgemm inline.
 *
 * Brings the launch-wide shared-memory layout, the per-unit producer/consumer
 * routines, and mkg_gemm_persistent_sm90: the shipped kernel that runs one GEMM
 * with one schedule by looping over its work units. A user's megakernel follows
 * the same shape:
 *
 *   extern __shared__ unsigned char smem[];            // MKG_LAUNCH_SMEM_BYTES
 *   mkg_smem sm = mkg_smem_carve(smem);
 *   if (threadIdx.x == 0) mkg_smem_init(&sm);
 *   __syncthreads();
 *   mkg_ring ring = mkg_ring_start();
 *   if (threadIdx.x < 128) {                           // producer warpgroup
 *       mkg_setmaxnreg_dec<MKG_LAUNCH_PRODUCER_REGS>();
 *       if (threadIdx.x == 0) for (each unit u) mkg_gemm_produce_unit<...>(p, m, u, ..., split, &ring, &sm);
 *       // or: lanes 0 of warps 0 and 1 both run that loop with NP = 2 (alternate slots, mkg_ring_mine),
 *       // for rows whose mkg_shape::PRODUCERS is 2 (stages of <= 24 KB)
 *   } else {                                           // consumer warpgroups 0, 1
 *       mkg_setmaxnreg_inc<MKG_LAUNCH_CONSUMER_REGS>();
 *       float d[WN / 2] = {0}, tot[WN / 2];            // accumulators, chunk fold
 *       for (each unit u, each chunk c of u)           // ONE flat loop (see consume_step)
 *           mkg_gemm_consume_step<...>(p, m, u, c, ..., split, &ring, &sm, threadIdx.x / 128 - 1, d, tot);
 *       mkg_epilogue_drain();                          // TMA stores done before smem goes away
 *   }
 * Named barriers MKG_LAUNCH_BAR_EPI and MKG_LAUNCH_BAR_EPI + 1 belong to the consumers. The ping-pong
 * rows use MKG_LAUNCH_BAR_PP and MKG_LAUNCH_BAR_PP + 1 as well, but only in the shipped kernel below:
 * a user's persistent loop runs rows through mkg_gemm_consume_step (cooperative for every row), so
 * ids from MKG_LAUNCH_BAR_PP up stay free for it (the sample megakernel syncs its ops on 3). The
 * device dispatcher (mkg_dispatch_sm90.cuh) runs neither ping-pong nor cluster rows.
 */
#ifndef MKG_GEMM_SM90_CUH
#define MKG_GEMM_SM90_CUH

#include "mkg_gemm.h"
#include "mkg_mainloop_sm90.cuh"
#include "mkg_pipeline_sm90.cuh"
#include "mkg_ptx_sm90.cuh"
#include "mkg_schedules.h"

static_assert(MKG_LAUNCH_THREADS == 128 * (1 + MKG_LAUNCH_CONSUMERS), "one producer + consumer warpgroups");
static_assert(MKG_LAUNCH_CONSUMERS * 128 * MKG_LAUNCH_CONSUMER_REGS + 128 * MKG_LAUNCH_PRODUCER_REGS <= 65536,
              "setmaxnreg split exceeds the register file");
static_assert(MKG_LAUNCH_SMEM_BYTES <= 227 * 1024, "shared memory budget exceeds sm_90's 227 KB");
static_assert(sizeof(mkg_gemm_params) + 3 * sizeof(int) <= 4096,
              "the shipped kernel takes mkg_gemm_params by value: 4 KB of kernel parameters");

// Every schedule row compiles against the launch shape (mkg_shape's asserts). A row's TK is
// 64 (one 128-byte K sub-tile of 16-bit input per stage) or 128 (two: KH = 2).
#define MKG_X_CHECK(name, tm, tn, tk, st, raster, group, swap, split, cl, pp)                               \
    static_assert(sizeof(mkg_shape<tm, tn, 64, st, swap, tk / 64>) > 0, #name);                       \
    static_assert(tk == 64 || (tk == 128 && (cl == 1 || swap) && pp == 0),                             \
                  #name ": 128-deep stages: no multicast cluster, no ping-pong");                       \
    static_assert(cl == 1 || (cl <= MKG_LAUNCH_MAX_CLUSTER && !swap && split == 1 &&                   \
                              ((tn / cl) == 64 || (tn / cl) == 128)) ||                                 \
                      (cl <= MKG_LAUNCH_MAX_CLUSTER && swap && split == cl &&                           \
                       mkg_shape<tm, tn, 64, st, swap, tk / 64>::CHUNKED),                              \
                  #name ": cluster rows multicast a B box of TN / CL rows (a box class), no swap, no " \
                        "split; or split K over the cluster (swap, SPLIT = CL, a chunk-folding row)"); \
    static_assert(pp == 0 || (tm == 128 && !swap && split == 1 && cl == 1),                           \
                  #name ": ping-pong rows are 128-row tiles, no swap, no split, no cluster");          \
    static_assert(split >= 1 && split <= MKG_MAX_SPLIT, #name ": mkg_div_split divides by 2 .. 16");
MKG_SCHEDULE_LIST(MKG_X_CHECK)
#undef MKG_X_CHECK

// The shipped persistent kernel: one CTA per SM (or fewer), units handed out
// round-robin in unit order. raster, group and split are the schedule row's
// index-only choices. CH = 0 runs GEMMs of one K chunk, CH = 1 GEMMs of several
// (rows with wgmma N <= MKG_CHUNKED_MAX_WN only). CL > 1: launched with clusters of CL
// CTAs along x (grid a multiple of CL); cluster c runs cluster units c, c + clusters, ...
// NOTE: two instantiations rather than a runtime branch: with both consumer loops in
// one kernel ptxas serialized every wgmma (C7520), and the flat chunk loop alone
// measured 5-18% slower than the plain one on single-chunk GEMMs.
// PP = 1: ping-pong consumers (mkg_gemm_consume_pp), one K chunk, no split.
// OT >= 0: C is of type OT with a plain store, known at compile time (mkg_epilogue_store);
// OT < 0: output type and epilogue kind are read from the params.
// KH = 2: each stage holds two K sub-tiles of TK (128-deep stages of 16-bit input).
// CL > 1 with SWAP: a cluster split-K row (mkg_schedules.h), chunked instantiation only: cluster c
// runs tiles c, c + clusters, ..., its CTA of rank r split r of each tile's chunks on its own ring,
// and rank 0 folds the others' partials from their shared memory (mkg_gemm_consume_step, CK).
template <int DT, int TM, int TN, int TK, int ST, int SWAP, int CH, int CL = 1, int PP = 0, int OT = -1, int KH = 1>
__global__ void __launch_bounds__(MKG_LAUNCH_THREADS, 1)
mkg_gemm_persistent_sm90(const __grid_constant__ mkg_gemm_params params, int raster, int group, int split,
                         int producers)
{
    // NOTE: the params travel by value (kernel parameter space, read through the constant
    // cache; the tensor maps are fetched from there by the TMA unit), not through a pointer
    // to global memory: with inputs rotated through more than L2 a device copy is evicted
    // between launches, and every launch then began with two dependent DRAM round trips
    // (the fields, then the tensor maps) before its first tile load.
    const mkg_gemm_params *__restrict__ p = &params;
    extern __shared__ __align__(1024) unsigned char mkg_dyn_smem[];
    constexpr bool CK = CL > 1 && SWAP;              // cluster split-K row
    static_assert(CL == 1 || CK || !CH, "multicast cluster rows run one K chunk");
    static_assert(!CK || CH, "cluster split-K rows run the chunked instantiation");
    static_assert(KH == 1 || ((CL == 1 || CK) && !PP),
                  "rows with two K sub-tiles per stage: no multicast cluster, no ping-pong");
    static_assert(!PP || (!CH && CL == 1 && !SWAP && TM == 128), "ping-pong rows: one chunk, no cluster, no swap");
    const mkg_smem sm = mkg_smem_carve(mkg_dyn_smem);
    typedef mkg_shape<TM, TN, TK, ST, SWAP, KH> S;
    const int m = p->m;
    if constexpr (PP)
        split = 1;                                   // ping-pong rows never split K (host-checked too)
    if constexpr (CK)
        split = CL;                                  // one split per CTA of the cluster: rank 0's fold counts CL
    // CK: units are tiles here; each CTA of the cluster runs its rank's split of every tile.
    const int units = CK ? mkg_unit_count<TM, TN, 1, true>(p, m, 1) : mkg_unit_count<TM, TN, CL, !CH>(p, m, split);
    const int first = (int)(blockIdx.x / CL), stride = (int)(gridDim.x / CL);
    mkg_ring ring = mkg_ring_start();
    if (threadIdx.x == 0) {
        MKG_PROBE(0);                                // probe points: see tools/launch_probe.cu
        mkg_prefetch_tensormap(&p->a_map[mkg_box_class(TM)]);
        mkg_prefetch_tensormap(&p->b_map[mkg_box_class(CK ? TN : TN / CL)]);
        // NOTE: C's map is prefetched after the first unit's loads are issued (below), so
        // nothing but A's and B's maps is ahead of them in the TMA unit. Measured neutral to
        // slightly faster on the small grids (v35 in bench/NOTES.md).
        mkg_smem_init(&sm, CK ? 1 : CL);
        if constexpr (CK)
            mkg_fold_init(&sm, CL);
        MKG_PROBE_ANY(15);                           // thread 0 at the CTA barrier
        // NOTE: the first unit's loads are not issued here, before the CTA barrier: tried
        // (session 6, tools/launch_probe.cu), the first TMA issue stalls this thread ~1 us
        // and the consumers then wait at the barrier for all of the unit's first stages;
        // small launches got 3-12% slower.
    }
    if constexpr (CL > 1)
        mkg_cluster_sync();                          // peers' barriers exist before any multicast
    else
        __syncthreads();
    // Launched with programmatic stream serialization (MKG_LAUNCH_FLAG_PDL), the set-up above
    // overlapped the previous kernel's tail; nothing reads A, B or the workspace or
    // writes C before that kernel has completed. Otherwise both are no-ops.
    mkg_griddep_wait();
    mkg_griddep_launch_dependents();
    if (threadIdx.x == 0)
        MKG_PROBE(1);
    if (threadIdx.x == 0)
        MKG_PROBE(13);                               // the role branch next (d4)

    if (threadIdx.x < 128) {
        if (threadIdx.x == 0)
            MKG_PROBE(11);                           // the producers' branch reached
        mkg_setmaxnreg_dec<MKG_LAUNCH_PRODUCER_REGS>();
        if (threadIdx.x == 0)
            MKG_PROBE(12);                           // registers released
        // producers (1 or 2): lanes 0 of that many warps share the ring's slots (mkg_ring_mine),
        // at most the row's mkg_shape::PRODUCERS; cluster rows keep one producer.
        const int np = (CL > 1 && !CK) || producers != 2 ? 1 : S::PRODUCERS;
        if ((threadIdx.x & 31) == 0 && (int)threadIdx.x < 32 * np) {
            if (threadIdx.x == 0)
                MKG_PROBE(2);
            const CUtensorMap *map_c = &p->c_map[mkg_box_class(SWAP ? S::WN : 64)];   // the epilogue's store box
            for (int u = first; u < units; u += stride) {
                if constexpr (CK) {
                    const int cu = u * CL + (int)mkg_cluster_ctarank();
                    if (np == 2)
                        mkg_gemm_produce_unit<TM, TN, TK, ST, SWAP, false, KH, 2>(p, m, cu, raster, group, split,
                                                                                  &ring, &sm);
                    else
                        mkg_gemm_produce_unit<TM, TN, TK, ST, SWAP, false, KH>(p, m, cu, raster, group, split, &ring,
                                                                               &sm);
                } else if constexpr (CL > 1)
                    mkg_gemm_produce_rest<TM, TN, TK, ST, SWAP, CL, !CH>(p, m, u, raster, group, split, &ring, &sm,
                                                                         0);
                else if (np == 2)
                    mkg_gemm_produce_unit<TM, TN, TK, ST, SWAP, !CH, KH, 2>(p, m, u, raster, group, split, &ring,
                                                                            &sm);
                else
                    mkg_gemm_produce_unit<TM, TN, TK, ST, SWAP, !CH, KH>(p, m, u, raster, group, split, &ring,
                                                                         &sm);
                if (u == first && threadIdx.x == 0)
                    mkg_prefetch_tensormap(map_c);
            }
            if (threadIdx.x == 0)
                MKG_PROBE_DONE();
        }
    } else {
        mkg_setmaxnreg_inc<MKG_LAUNCH_CONSUMER_REGS>();
        const int wg = mkg_warp_uniform((int)threadIdx.x / 128) - 1;   // uniform: see mkg_warp_uniform
        if constexpr (PP) {
            // Unit i of this CTA runs on warpgroup i & 1; see mkg_gemm_consume_pp for the hand-off.
            mkg_gemm_consume_pp_units<DT, TM, TN, TK, ST, OT>(p, m, first, stride, units, raster, group, &ring, &sm,
                                                              wg);
        } else {
            float d[S::WN / 2];                          // (64, WN) chunk accumulators
            float tot[CH ? S::WN / 2 : 1];               // chunk fold
            mkg_fold_reset<CH ? S::WN / 2 : 1>(tot);     // e4m3 steps fold in place (mkg_gemm_consume_step)
#pragma unroll
            for (int i = 0; i < S::WN / 2; ++i)
                d[i] = 0.0f;
            static_assert(!CH || S::CHUNKED, "only rows with wgmma N <= MKG_CHUNKED_MAX_WN fold chunks");
            if constexpr (CK) {
                // The chunked step loop below, over this CTA's split of each of the cluster's tiles.
                const int rank = (int)mkg_cluster_ctarank();
                int t = first, c = 0;
                mkg_unit uu{};
                mkg_bscale_in<S::WN, SWAP> bs{};
                if (t < units) {
                    uu = mkg_unit_of<TM, TN, TK, 1, false, KH>(p, m, t * CL + rank, raster, group, split);
                    c = uu.c0;
                    // NOTE: the host admits these rows only with at least CL chunks (mkg_schedule_check);
                    // a rank without a chunk would never leave the step loop, so stop loudly instead.
                    if (uu.c1 <= uu.c0)
                        __trap();
                }
                while (t < units) {
                    mkg_gemm_consume_step<DT, TM, TN, TK, ST, SWAP, false, 1, true, OT, KH, CL>(
                        p, m, t * CL + rank, c, raster, group, split, &ring, &sm, wg, d, tot, &uu, &bs);
                    if (++c == uu.c1) {
                        t += stride;
                        if (t < units) {
                            uu = mkg_unit_of<TM, TN, TK, 1, false, KH>(p, m, t * CL + rank, raster, group, split);
                            c = uu.c0;
                        }
                    }
                }
            } else if constexpr (!CH) {
                for (int u = first; u < units; u += stride)
                    mkg_gemm_consume_step<DT, TM, TN, TK, ST, SWAP, true, CL, true, OT, KH>(
                        p, m, u, 0, raster, group, split, &ring, &sm, wg, d, tot);
            } else {
                // One flat loop over (unit, chunk) steps: see mkg_gemm_consume_step. The unit's
                // coordinates are worked out once per unit, not once per step (v23).
                int u = blockIdx.x, c = 0;
                mkg_unit uu{};
                mkg_bscale_in<S::WN, SWAP> bs{};             // next chunk's block scales (e4m3)
                if (u < units) {
                    uu = mkg_unit_of<TM, TN, TK, 1, false, KH>(p, m, u, raster, group, split);
                    c = uu.c0;
                }
                while (u < units) {
                    mkg_gemm_consume_step<DT, TM, TN, TK, ST, SWAP, false, 1, true, OT, KH>(
                        p, m, u, c, raster, group, split, &ring, &sm, wg, d, tot, &uu, &bs);
                    if (++c == uu.c1) {
                        u += gridDim.x;
                        if (u < units) {
                            uu = mkg_unit_of<TM, TN, TK, 1, false, KH>(p, m, u, raster, group, split);
                            c = uu.c0;
                        }
                    }
                }
            }
        }
        MKG_PROBE(5 + 4 * wg);
        mkg_epilogue_drain();
        MKG_PROBE(6 + 4 * wg);
        MKG_PROBE_DONE();
    }
    // NOTE: no CTA of a cluster leaves while a peer may still multicast into its ring or arrive
    // on its empty barriers (multicast rows), or still read its chunk partials or arrive on its
    // fold barriers (cluster split-K rows).
    if constexpr (CL > 1)
        mkg_cluster_sync();
}

// The chunked instantiation of a row, or NULL for rows that cannot fold chunks (wgmma N >
// MKG_CHUNKED_MAX_WN, multicast cluster rows). OT >= 0: compiled for a plain store of C as OT only.
template <int DT, int TM, int TN, int TK, int ST, int SWAP, int CL, int KH = 1, int OT = -1>
static const void *mkg_chunked_kernel_sm90(void)
{
    if constexpr (mkg_shape<TM, TN, TK, ST, SWAP>::CHUNKED && (CL == 1 || SWAP))
        return (const void *)mkg_gemm_persistent_sm90<DT, TM, TN, TK, ST, SWAP, 1, CL, 0, OT, KH>;
    else
        return NULL;
}

// A one-chunk instantiation of a row (MKG_KV_ONE, MKG_KV_STORE), or NULL for the cluster split-K
// rows, which need at least CL chunks and so run the chunked one only.
template <int DT, int TM, int TN, int TK, int ST, int SWAP, int CL, int PP, int OT, int KH>
static const void *mkg_one_chunk_kernel_sm90(void)
{
    if constexpr (CL > 1 && SWAP)
        return NULL;
    else
        return (const void *)mkg_gemm_persistent_sm90<DT, TM, TN, TK, ST, SWAP, 0, CL, PP, OT, KH>;
}

#endif /* MKG_GEMM_SM90_CUH */
