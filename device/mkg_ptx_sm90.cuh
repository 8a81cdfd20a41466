/* mkg_ptx_sm90.cuh - thin wrappers over the sm_90a PTX that the mainloop uses.
 *
 * One static __forceinline__ function per instruction, named after it:
 * mbarrier init / arrive / expect-tx / try-wait, TMA tile loads, wgmma
 * fence / commit / wait, setmaxnreg, proxy and mbarrier-init fences, named
 * barriers. Addresses of shared memory are 32-bit shared-window addresses.
 * PTX ISA references are to the CUDA 13.0 PTX ISA (8.x sections).
 */
#ifndef MKG_PTX_SM90_CUH
#define MKG_PTX_SM90_CUH

#include <cuda.h>
#include <stdint.h>

static __device__ __forceinline__ uint32_t mkg_smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

// ---- mbarrier (PTX ISA 9.7.13.15) -------------------------------------------

static __device__ __forceinline__ void mkg_mbarrier_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

// NOTE: makes the initialised barriers visible to the async proxy (TMA) and to
// other threads before anyone arrives on them.
static __device__ __forceinline__ void mkg_fence_mbarrier_init(void)
{
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

static __device__ __forceinline__ void mkg_mbarrier_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

static __device__ __forceinline__ void mkg_mbarrier_arrive_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;"
                 ::"r"(bar), "r"(bytes) : "memory");
}

// Adds expected transaction bytes to the current phase without arriving: the phase then needs
// its arrivals from elsewhere (a warp that writes the rest of the stage, then arrives).
static __device__ __forceinline__ void mkg_mbarrier_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

// True once the phase of the given parity has completed. A fresh barrier
// reports parity 1 as complete, which is how a producer's first pass through
// an empty ring proceeds without waiting.
static __device__ __forceinline__ uint32_t mkg_mbarrier_try_wait_parity(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done;
}

static __device__ __forceinline__ void mkg_mbarrier_wait_parity(uint32_t bar, uint32_t parity)
{
    while (!mkg_mbarrier_try_wait_parity(bar, parity)) {
    }
}

// ---- thread-block clusters (PTX ISA 9.7.13.4, 9.7.9.16, 10.x %cluster_ctarank) ---

static __device__ __forceinline__ uint32_t mkg_cluster_ctarank(void)
{
    uint32_t r;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

// The shared::cluster address of `addr` (a shared::cta address of this CTA) in the
// shared memory of cluster CTA `rank`.
static __device__ __forceinline__ uint32_t mkg_mapa(uint32_t addr, uint32_t rank)
{
    uint32_t r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
    return r;
}

// Arrive on an mbarrier of any CTA of the cluster (address from mkg_mapa).
// NOTE: .release.cta, not .release.cluster: the cluster-scope release compiles to
// MEMBAR.ALL.GPU before the arrive, which waits for every outstanding global store of
// the thread (the first cluster rows ran 1.7-3.2x slower with it). What the arrive
// publishes is "my wgmma reads of this slot are done" (wgmma.wait_group), and the
// peer's TMA write that it licenses is ordered by the barrier itself.
static __device__ __forceinline__ void mkg_mbarrier_arrive_cluster(uint32_t cluster_bar)
{
    asm volatile("mbarrier.arrive.release.cta.shared::cluster.b64 _, [%0];" ::"r"(cluster_bar) : "memory");
}

// Arrive with a cluster-scope release: this thread's earlier shared-memory accesses (its
// partials written, or a peer's partials read) are ordered before whatever a thread of another
// CTA does after its cluster-scope acquire of the phase (mkg_mbarrier_wait_parity_cluster).
// NOTE: compiles to a GPU-wide MEMBAR before the arrive (see above): per tile of a cluster
// split-K row, once per peer thread and CL - 1 times per rank-0 thread, never per stage.
static __device__ __forceinline__ void mkg_mbarrier_arrive_release_cluster(uint32_t cluster_bar)
{
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(cluster_bar) : "memory");
}

// Waits on a barrier of this CTA for a phase completed by other CTAs' cluster-scope releases.
static __device__ __forceinline__ void mkg_mbarrier_wait_parity_cluster(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}

// A float4 of another cluster CTA's shared memory (address from mkg_mapa).
static __device__ __forceinline__ float4 mkg_ld_shared_cluster_v4(uint32_t cluster_addr)
{
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(cluster_addr) : "memory");
    return v;
}

// Every thread of every CTA of the cluster: all arrive, then all wait (release/acquire).
// NOTE: not .aligned: callers reach it after role-divergent code.
static __device__ __forceinline__ void mkg_cluster_sync(void)
{
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}

// ---- TMA (PTX ISA 9.7.9.25) ---------------------------------------------------

// 2-D tile load of the box at {c0 (inner, elements), c1 (rows)} into shared
// memory at dst, completing `box bytes` of transaction on bar. Out-of-bounds
// elements are zero-filled and still counted.
static __device__ __forceinline__ void mkg_tma_load_2d(uint32_t dst, const CUtensorMap *map,
                                                       uint32_t bar, int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(dst), "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}

// As mkg_tma_load_2d, but the box lands at the same offset dst in every CTA of the
// cluster named in cta_mask, completing its bytes on the barrier at offset bar in each.
static __device__ __forceinline__ void mkg_tma_load_2d_multicast(uint32_t dst, const CUtensorMap *map,
                                                                 uint32_t bar, int c0, int c1, uint16_t cta_mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
                 ::"r"(dst), "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask) : "memory");
}

// As mkg_tma_load_2d, with an L2 cache policy (mkg_l2_policy_evict_first).
static __device__ __forceinline__ void mkg_tma_load_2d_hint(uint32_t dst, const CUtensorMap *map, uint32_t bar,
                                                            int c0, int c1, uint64_t policy)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
                 " [%0], [%1, {%2, %3}], [%4], %5;"
                 ::"r"(dst), "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(bar), "l"(policy) : "memory");
}

// An L2 cache policy (PTX ISA: createpolicy): lines it loads are the first to be evicted.
static __device__ __forceinline__ uint64_t mkg_l2_policy_evict_first(void)
{
    uint64_t policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    return policy;
}

// Bulk copy (not a tensor map): `bytes` (a multiple of 16) from global src into shared dst (both
// 16-byte aligned), completing that many bytes of transaction on bar. The async proxy reads src:
// generic writes to it need fence.proxy.async.global (and a barrier to the issuing thread) first.
static __device__ __forceinline__ void mkg_bulk_load(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "l"((uint64_t)src), "r"(bytes), "r"(bar) : "memory");
}

// Prefetches the box at {c0, c1} into L2 (no shared memory, no completion).
static __device__ __forceinline__ void mkg_tma_prefetch_l2_2d(const CUtensorMap *map, int c0, int c1)
{
    asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];"
                 ::"l"((uint64_t)map), "r"(c0), "r"(c1) : "memory");
}

// 2-D tile store of shared memory at src into the box at {c0, c1}; elements
// outside the tensor are not written. Completes as part of a bulk async-group.
static __device__ __forceinline__ void mkg_tma_store_2d(const CUtensorMap *map, uint32_t src, int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                 ::"l"((uint64_t)map), "r"(c0), "r"(c1), "r"(src) : "memory");
}

static __device__ __forceinline__ void mkg_bulk_commit_group(void)
{
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// Waits until at most N of this thread's bulk groups still read shared memory.
template <int N>
static __device__ __forceinline__ void mkg_bulk_wait_group_read(void)
{
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// Waits until at most N of this thread's bulk groups are incomplete (writes visible).
template <int N>
static __device__ __forceinline__ void mkg_bulk_wait_group(void)
{
    asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

static __device__ __forceinline__ void mkg_prefetch_tensormap(const CUtensorMap *map)
{
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)map) : "memory");
}

// Brings the line holding p into the L2 (no register result, no wait; the LSU, not the TMA unit).
static __device__ __forceinline__ void mkg_prefetch_l2(const void *p)
{
    asm volatile("prefetch.global.L2 [%0];" ::"l"((uint64_t)p));
}

// Brings the line holding p into this SM's L1 (no register result, no wait).
static __device__ __forceinline__ void mkg_prefetch_l1(const void *p)
{
    asm volatile("prefetch.global.L1 [%0];" ::"l"((uint64_t)p));
}

// ---- wgmma control (PTX ISA 9.7.15.5-9.7.15.7) --------------------------------

static __device__ __forceinline__ void mkg_wgmma_fence(void)
{
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

static __device__ __forceinline__ void mkg_wgmma_commit_group(void)
{
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

template <int N>
static __device__ __forceinline__ void mkg_wgmma_wait_group(void)
{
    static_assert(N >= 0 && N <= 7, "wgmma.wait_group takes 0..7");
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// NOTE: wgmma writes its accumulators asynchronously, which the compiler cannot
// see. Passing every accumulator register through an empty volatile asm after
// wgmma.wait_group pins all later reads behind the wait.
static __device__ __forceinline__ void mkg_fence_operand(float &r)
{
    asm volatile("" : "+f"(r)::"memory");
}

// ---- shared-memory stores by address ----------------------------------------------

static __device__ __forceinline__ void mkg_st_shared_b16(uint32_t addr, uint16_t v)
{
    asm volatile("st.shared.b16 [%0], %1;" ::"r"(addr), "h"(v) : "memory");
}

static __device__ __forceinline__ void mkg_st_shared_b32(uint32_t addr, uint32_t v)
{
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

static __device__ __forceinline__ void mkg_st_shared_v2_b32(uint32_t addr, uint32_t v0, uint32_t v1)
{
    asm volatile("st.shared.v2.b32 [%0], {%1, %2};" ::"r"(addr), "r"(v0), "r"(v1) : "memory");
}

static __device__ __forceinline__ void mkg_st_shared_v4_b32(uint32_t addr, uint4 v)
{
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

static __device__ __forceinline__ void mkg_st_shared_v4_f32(uint32_t addr, float a, float b, float c, float d)
{
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}

// A relaxed 8-byte store and load of a polled shared word (no fence: a release store compiles to
// MEMBAR.ALL.CTA + STS, and after a TMA issue that membar seems to wait for the load; v97 / v97b in
// bench/NOTES.md). Both are atomics (an exchange, an OR of 0): racecheck reports a plain or strong
// st / ld pair on a polled word as a hazard, and leaves atomics be (v124, tools/racecheck_flag_probe.cu).
static __device__ __forceinline__ void mkg_st_relaxed_cta_shared_b64(uint32_t addr, uint64_t v)
{
    asm volatile("{ .reg .b64 t; atom.relaxed.cta.shared::cta.exch.b64 t, [%0], %1; }" ::"r"(addr), "l"(v) : "memory");
}

static __device__ __forceinline__ uint64_t mkg_ld_relaxed_cta_shared_b64(uint32_t addr)
{
    uint64_t v;
    asm volatile("atom.relaxed.cta.shared::cta.or.b64 %0, [%1], 0;" : "=l"(v) : "r"(addr) : "memory");
    return v;
}

static __device__ __forceinline__ uint32_t mkg_ld_shared_b32(uint32_t addr)
{
    uint32_t v;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
    return v;
}

// A value that every lane of the warp already holds, returned as lane 0's copy through a
// shuffle, which ptxas knows to be warp-uniform. What derives from it (a warpgroup's operand
// rows, and every branch on it) can then stay on the uniform datapath. A value computed from
// threadIdx or loaded from shared memory is per-lane as far as ptxas can tell: a branch on it
// is treated as divergent, the loops after it keep their ring slot and parity in vector
// registers, and every wgmma descriptor built from them crosses over through R2UR (v65 in
// bench/NOTES.md). All 32 lanes must execute it.
static __device__ __forceinline__ int mkg_warp_uniform(int v)
{
    return __shfl_sync(0xffffffffu, v, 0);
}

// The SM this thread runs on (PTX %smid: not guaranteed contiguous or stable across launches).
static __device__ __forceinline__ int mkg_smid(void)
{
    unsigned int id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return (int)id;
}

// ---- global vector access for split-K partials ---------------------------------------

static __device__ __forceinline__ void mkg_st_global_v4(float *p, float a, float b, float c, float d)
{
    asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}

// Reads through L2 only: partials written by other SMs are never stale in this SM's L1.
static __device__ __forceinline__ float4 mkg_ld_global_cg_v4(const float *p)
{
    float4 v;
    asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p) : "memory");
    return v;
}

// Byte offset of (row, byte) in a [rows][128 B] buffer with the 128-byte TMA
// swizzle: the 16-byte chunk index is XORed with row % 8 (buffer 1024-aligned).
static __device__ __forceinline__ uint32_t mkg_sw128_offset(int row, int byte)
{
    return (uint32_t)(row * 128 + ((((byte >> 4) ^ (row & 7)) << 4) | (byte & 15)));
}

// ---- registers, fences, barriers --------------------------------------------------

template <int R>
static __device__ __forceinline__ void mkg_setmaxnreg_inc(void)
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}

template <int R>
static __device__ __forceinline__ void mkg_setmaxnreg_dec(void)
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}

// Orders this thread's generic-proxy shared-memory writes before later
// async-proxy (TMA, wgmma) accesses of the same memory.
static __device__ __forceinline__ void mkg_fence_proxy_async_shared(void)
{
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

static __device__ __forceinline__ void mkg_bar_sync(int id, int threads)
{
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// barrier.sync without .aligned: the threads of a warp may reach it apart, e.g. right after a
// branch taken by some lanes (bar.sync is barrier.sync.aligned, whose warps must arrive
// converged). The megakernel's ops sync through this form (bench/NOTES.md, session 19).
static __device__ __forceinline__ void mkg_bar_sync_any(int id, int threads)
{
    asm volatile("barrier.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Counts this warp's threads on named barrier id without waiting (pairs with mkg_bar_sync
// of the threads that wait: `threads` counts both sides).
static __device__ __forceinline__ void mkg_bar_arrive(int id, int threads)
{
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// A byte of shared memory (shared address).
static __device__ __forceinline__ uint32_t mkg_ld_shared_u8(uint32_t addr)
{
    uint32_t v;
    asm volatile("ld.shared::cta.u8 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
    return v;
}

// ---- cross-CTA signalling (megakernel dependencies) ----------------------------------

// CTA-scope release store / acquire load of a polled shared-memory word (shared address), as
// atomics (an exchange, an OR of 0) for racecheck, as mkg_st_relaxed_cta_shared_b64 above.
static __device__ __forceinline__ void mkg_st_release_cta_shared_u32(uint32_t addr, uint32_t v)
{
    asm volatile("{ .reg .b32 t; atom.release.cta.shared::cta.exch.b32 t, [%0], %1; }" ::"r"(addr), "r"(v) : "memory");
}

static __device__ __forceinline__ uint32_t mkg_ld_acquire_cta_shared_u32(uint32_t addr)
{
    uint32_t v;
    asm volatile("atom.acquire.cta.shared::cta.or.b32 %0, [%1], 0;" : "=r"(v) : "r"(addr) : "memory");
    return v;
}

static __device__ __forceinline__ uint32_t mkg_ld_acquire_gpu_u32(const unsigned int *p)
{
    uint32_t v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

static __device__ __forceinline__ void mkg_red_release_gpu_add_u32(unsigned int *p, uint32_t v)
{
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Returns the old value; acquire and release at GPU scope (an arrival count whose last arrival
// reads what the others published before theirs).
static __device__ __forceinline__ uint32_t mkg_atom_acq_rel_gpu_add_u32(unsigned int *p, uint32_t v)
{
    uint32_t old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
}

// Orders generic-proxy global accesses (another SM's stores, observed through an
// acquire) before this thread's later async-proxy (TMA) reads of global memory.
static __device__ __forceinline__ void mkg_fence_proxy_async_global(void)
{
    asm volatile("fence.proxy.async.global;" ::: "memory");
}

// ---- programmatic dependent launch (PTX ISA 9.7.13.x griddepcontrol) -----------------

// Waits until every grid this one depends on programmatically has completed and its
// memory is visible; returns at once for a grid launched without that dependency.
static __device__ __forceinline__ void mkg_griddep_wait(void)
{
    asm volatile("griddepcontrol.wait;" ::: "memory");
}

// Lets the grid that depends on this one be launched now (its CTAs take SMs as ours
// leave them, then wait in mkg_griddep_wait until this grid completes).
static __device__ __forceinline__ void mkg_griddep_launch_dependents(void)
{
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

static __device__ __forceinline__ uint64_t mkg_globaltimer(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Phase probe hooks of the shipped kernel: MKG_PROBE(point) marks a point of a CTA's
// timeline, MKG_PROBE_DONE() says this warpgroup has passed its last mark. Empty unless a
// translation unit defines them before including the device headers (tools/launch_probe.cu).
#ifndef MKG_PROBE
#define MKG_PROBE(point) ((void)0)
#endif
#ifndef MKG_PROBE_DONE
#define MKG_PROBE_DONE() ((void)0)
#endif
// MKG_PROBE_ANY(point): the calling thread stamps the point, whichever warpgroup it is in.
#ifndef MKG_PROBE_ANY
#define MKG_PROBE_ANY(point) ((void)0)
#endif
// MKG_PROBE_STAGE(event, kt): per-stage marks of the K loop (K tile kt of the unit): 0 the
// producer starts waiting for an empty slot, 1 its loads are issued, 2 + w consumer warpgroup w
// has seen the stage land, 4 + w it has released the stage before (wgmma retired).
#ifndef MKG_PROBE_STAGE
#define MKG_PROBE_STAGE(event, kt) ((void)0)
#endif
// MKG_PROBE_EPI(): a consumer warpgroup has issued its direct epilogue stores, before the
// dependency count (the megakernel's phase-stamped build).
#ifndef MKG_PROBE_EPI
#define MKG_PROBE_EPI() ((void)0)
#endif

#endif /* MKG_PTX_SM90_CUH */
