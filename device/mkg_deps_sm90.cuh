/* mkg_deps_sm90.cuh - tile-granular dependencies between work items of a
 * persistent megakernel: counters in global memory, one per block of 64 rows.
 *
 * A producer of rows adds "elements written" to the block's counter with release
 * semantics after its stores (mkg_dep_signal); a consumer spins with acquire loads
 * until the counter reaches rows x columns (mkg_dep_wait). Every wait is bounded:
 * past timeout_ns (globaltimer) the first staller records {tag + 1, row block,
 * target, value seen} in stall[0..3] and returns false; once stall[0] is set every
 * later wait returns false at once, so the whole grid drains instead of hanging.
 */
#ifndef MKG_DEPS_SM90_CUH
#define MKG_DEPS_SM90_CUH

#include <stdint.h>

#include "mkg_gemm.h"
#include "mkg_ptx_sm90.cuh"

#define MKG_DEP_ROWS 64                 /* rows per counter */

// Rows of block rb in an m-row tensor.
static __device__ __forceinline__ unsigned int mkg_dep_rows(int m, int rb)
{
    return (unsigned int)min(MKG_DEP_ROWS, m - rb * MKG_DEP_ROWS);
}

// One thread: waits until *ctr >= target. False on a stall (this one or an earlier one).
static __device__ __forceinline__ bool mkg_dep_wait(const unsigned int *ctr, unsigned int target, unsigned int *stall,
                                                 unsigned int tag, unsigned int rb, unsigned long long timeout_ns)
{
    uint32_t v = mkg_ld_acquire_gpu_u32(ctr);
    if (v >= target)
        return true;
    const uint64_t t0 = mkg_globaltimer();
    unsigned int ns = 32;
    for (;;) {
        if (*(volatile unsigned int *)stall != 0)
            return false;
        __nanosleep(ns);
        ns = ns < 256 ? 2 * ns : ns;
        v = mkg_ld_acquire_gpu_u32(ctr);
        if (v >= target)
            return true;
        if (mkg_globaltimer() - t0 > timeout_ns) {
            if (atomicCAS(stall, 0u, tag + 1) == 0u) {
                stall[1] = rb;
                stall[2] = target;
                stall[3] = v;
                __threadfence();
            }
            return false;
        }
    }
}

// One thread: waits for rows [r0, r1) of an m-row tensor whose blocks are complete at
// rows(rb) * per_row. False on a stall.
static __device__ __forceinline__ bool mkg_dep_wait_rows(const unsigned int *ctr, unsigned int per_row, int m, int r0,
                                                         int r1, unsigned int *stall, unsigned int tag,
                                                         unsigned long long timeout_ns)
{
    r1 = min(r1, m);
    bool ok = true;
    for (int rb = r0 / MKG_DEP_ROWS; ok && rb * MKG_DEP_ROWS < r1; ++rb)
        ok = mkg_dep_wait(ctr + rb, mkg_dep_rows(m, rb) * per_row, stall, tag, (unsigned int)rb, timeout_ns);
    return ok;
}

// One thread, without waiting: true when rows [r0, r1) are complete already (acquire loads,
// like mkg_dep_wait's, so what the caller reads next is ordered after them).
static __device__ __forceinline__ bool mkg_dep_ready_rows(const unsigned int *ctr, unsigned int per_row, int m, int r0,
                                                          int r1)
{
    r1 = min(r1, m);
    bool ready = true;
    for (int rb = r0 / MKG_DEP_ROWS; rb * MKG_DEP_ROWS < r1; ++rb)
        ready = mkg_ld_acquire_gpu_u32(ctr + rb) >= mkg_dep_rows(m, rb) * per_row && ready;
    return ready;
}

// One thread, after a barrier that follows the group's stores: publishes them GPU-wide
// and counts them into block rb. The release is cumulative: it also publishes what the
// other threads wrote before the barrier (PTX memory model: the barrier orders their writes
// before this thread's release; CUTLASS's arrival counts rely on the same). No fence.sc
// before it (v113 in bench/NOTES.md: __threadfence() was a MEMBAR.SC.GPU ahead of the
// release's own MEMBAR.ALL.GPU on every count).
static __device__ __forceinline__ void mkg_dep_signal(unsigned int *ctr, int rb, unsigned int elements)
{
    mkg_red_release_gpu_add_u32(ctr + rb, elements);
}

#endif /* MKG_DEPS_SM90_CUH */
