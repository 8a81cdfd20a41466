/* mkg_pipeline_sm90.cuh - the shared-memory operand ring and its state.
 *
 * Launch-wide layout of dynamic shared memory (MKG_LAUNCH_SMEM_BYTES):
 *   [full barriers x MAX_STAGES][empty barriers x MAX_STAGES][flags][dep][fold barriers x 4] ... pad ...
 *   [ring, 1024-aligned]
 *   [epilogue staging]
 * A schedule with ST stages of S bytes uses ring slots 0..ST-1 at slot * S.
 * full[s]  : one producer arrive + TMA transaction bytes; consumers wait on it.
 * empty[s] : one arrive per consumer warpgroup once its wgmma reading s is done.
 *
 * mkg_ring is the per-role pipeline state (next slot + one parity bit per slot);
 * the producer thread and each consumer thread keep their own copy in registers
 * and walk the same slot sequence. Because parity is tracked per slot, schedules
 * with different stage counts can follow each other on one ring (megakernel):
 * on a layout change the producer first drains every slot, or, keyed by geometry, waits per new
 * slot for the old stages under it only (mkg_ring_switch, mkg_ring_handover.h).
 */
#ifndef MKG_PIPELINE_SM90_CUH
#define MKG_PIPELINE_SM90_CUH

#include <stdint.h>

#include "mkg_ptx_sm90.cuh"
#include "mkg_ring_handover.h"
#include "mkg_schedules.h"

// Barriers and flags sit below the 1024-aligned ring: with a 16-byte aligned dynamic base the
// ring starts at most (barrier bytes rounded up to 8 mod 16, + 1016) past it, inside
// MKG_LAUNCH_SMEM_BYTES' 1536-byte pad (16 stages: 256 + 8 flag bytes + the dependency word in
// an 8-byte slot = 272, the 4 fold barriers of the cluster split-K rows = 304 and a handover's
// gate byte per stage = 320, the A-writer queue and its exchange words = 504; asserted, with 8 bytes more:
// 512 + 1016 = 1528 of the 1536). After the gates: the A-writer queue (mkg_aq_at), then the exchange (mkg_aq_xchg).
#define MKG_AQ_ENTRIES MKG_LAUNCH_MAX_STAGES
#define MKG_AQ_XCHG_BYTES 48
#define MKG_AQ_BYTES (8 + 8 * MKG_AQ_ENTRIES + MKG_AQ_XCHG_BYTES)
static_assert(16 * MKG_LAUNCH_MAX_STAGES + 4 * MKG_LAUNCH_CONSUMERS + 16 + 32 + MKG_LAUNCH_MAX_STAGES + MKG_AQ_BYTES +
                      1016 <=
                  MKG_LAUNCH_SMEM_BYTES - MKG_LAUNCH_RING_BYTES - MKG_LAUNCH_EPI_BYTES,
              "barrier area outgrows the shared-memory pad below the ring");
// mkg_ring::parity holds a slot's parity in bit s and its pending handover gate in bit 16 + s.
static_assert(MKG_LAUNCH_MAX_STAGES <= 16, "parity and gate bits share one word");

typedef struct mkg_smem {
    uint32_t full;      /* shared address of full[0]; full[s] = full + 8 s */
    uint32_t empty;     /* shared address of empty[0] */
    uint32_t ring;      /* shared address of slot 0, 1024-byte aligned */
    uint32_t epi;       /* epilogue staging: consumer w, buffer b at epi + (2 w + b) * 8 KB */
    uint32_t flag;      /* one word per consumer warpgroup (split-K: "this unit combines") */
    uint32_t dep;       /* word: units whose input rows the first producer saw ready (NP > 1); then the
                           fold barriers (mkg_fold_bar) and the handover gates (mkg_ring_gate_at) */
} mkg_smem;

typedef struct mkg_ring {
    uint32_t slot;      /* next slot to fill (producer) or consume (consumer) */
    uint32_t parity;    /* bit s: number of completed uses of slot s, mod 2; bit 16 + s (producer): the
                           first fill of s after a handover waits for its gate (mkg_ring_switch) */
    int layout;         /* ring layout key of the last unit (-1: none yet) */
    uint32_t epi;       /* consumer: epilogue chunks stored so far (picks the staging buffer) */
    uint32_t dep;       /* producers: dependency waits passed so far (the first publishes it in sm->dep) */
    uint32_t fills;     /* producer: stages filled in this layout (counted per unit by mkg_gemm_produce_rest) */
    unsigned int *pend; /* consumer issuing thread: the counter of a deferred count (MKG_EPI_DEFER_COUNT) */
    uint32_t pend_n;    /* and its elements */
} mkg_ring;

static __device__ __forceinline__ mkg_ring mkg_ring_start(void)
{
    mkg_ring r;
    r.slot = 0;
    r.parity = 0;
    r.layout = -1;
    r.epi = 0;
    r.dep = 0;
    r.fills = 0;
    r.pend = nullptr;
    r.pend_n = 0;
    return r;
}

// Carves the launch-wide layout out of the dynamic shared memory base.
static __device__ __forceinline__ mkg_smem mkg_smem_carve(void *dyn)
{
    mkg_smem sm;
    uint32_t base = mkg_smem_addr(dyn);
    sm.full = (base + 7u) & ~7u;
    sm.empty = sm.full + 8u * MKG_LAUNCH_MAX_STAGES;
    sm.flag = sm.empty + 8u * MKG_LAUNCH_MAX_STAGES;
    sm.dep = (sm.flag + 4u * MKG_LAUNCH_CONSUMERS + 7u) & ~7u;
    sm.ring = (sm.dep + 8u + 32u + MKG_LAUNCH_MAX_STAGES + MKG_AQ_BYTES + 1023u) & ~1023u;   // past gates and queue
    sm.epi = sm.ring + MKG_LAUNCH_RING_BYTES;
    return sm;
}

// One thread initialises every barrier; the caller then syncs the CTA (the cluster,
// for cluster > 1: empty[s] then takes one arrive per consumer warpgroup of every
// CTA of the cluster, since every CTA's producer writes slot s in all of them).
static __device__ __forceinline__ void mkg_smem_init(const mkg_smem *sm, int cluster = 1)
{
    for (int s = 0; s < MKG_LAUNCH_MAX_STAGES; ++s) {
        mkg_mbarrier_init(sm->full + 8u * s, 1);
        mkg_mbarrier_init(sm->empty + 8u * s, MKG_LAUNCH_CONSUMERS * cluster);
    }
    mkg_st_release_cta_shared_u32(sm->dep, 0u);
    mkg_fence_mbarrier_init();
}

// Cluster split-K rows (CL > 1 with SWAP, mkg_schedules.h): the CTAs of a cluster share one tile's
// K chunks, and rank 0 folds the others' chunk partials out of their shared memory. Per consumer
// warpgroup w: barrier w of rank 0 ("in") completes when every peer thread of w has written its
// partials of the tile; barrier 2 + w of each peer ("out") when rank 0's threads of w have read
// them, so the peer may write the next tile's. They sit right after the dependency word.
static __device__ __forceinline__ uint32_t mkg_fold_bar(const mkg_smem *sm, int i)
{
    return sm->dep + 8u + 8u * (uint32_t)i;
}

// One thread, before the cluster sync that follows mkg_smem_init: the fold barriers of a cluster
// of `ctas` CTAs.
static __device__ __forceinline__ void mkg_fold_init(const mkg_smem *sm, int ctas)
{
    for (int w = 0; w < MKG_LAUNCH_CONSUMERS; ++w) {
        mkg_mbarrier_init(mkg_fold_bar(sm, w), 128u * (uint32_t)(ctas - 1));
        mkg_mbarrier_init(mkg_fold_bar(sm, MKG_LAUNCH_CONSUMERS + w), 128u);
    }
    mkg_fence_mbarrier_init();
}

// The gate byte of new slot s after a handover: the old slot to wait for (bits 0-4) and the
// parity of that wait (bit 7). After the fold barriers.
static __device__ __forceinline__ uint32_t mkg_ring_gate_at(const mkg_smem *sm, uint32_t s)
{
    return sm->dep + 8u + 32u + s;
}

// The A-writer queue (megakernel GEMMs whose A a warp of the CTA writes, mkg_gemm_produce_b_for_a):
// the producer's count of entries pushed and a spare word, then MKG_AQ_ENTRIES entries of 8 bytes
// (mkg_aq_push). After the gates, 8-byte aligned; zeroed before use.
static __device__ __forceinline__ uint32_t mkg_aq_at(const mkg_smem *sm)
{
    return sm->dep + 8u + 32u + MKG_LAUNCH_MAX_STAGES;
}

// The two A writers' exchange words, right after the queue's entries: the row's 8 sums of squares
// (one per virtual warp of mkg_op_rmsnorm_rows), then each row maker's "input seen" word, then the
// op whose row each of the CTA's two rows holds (the megakernel's mkg_mk_row_maker publishes them).
static __device__ __forceinline__ uint32_t mkg_aq_xchg(const mkg_smem *sm)
{
    return mkg_aq_at(sm) + 8u + 8u * MKG_AQ_ENTRIES;
}

static __device__ __forceinline__ uint32_t mkg_ring_bit(const mkg_ring *r, uint32_t s)
{
    return (r->parity >> s) & 1u;
}

// MKG_RING_GATES: defined to 1 for a translation unit whose kernels hand rings over with gates
// (MKG_RING_HANDOVER; the megakernel built with CMake MKG_MK_RING_GATES=ON). Without it the
// producer's fill path carries no gate check (a few instructions per stage show in the decode
// rows, whose producers set their rate, and the megakernel producer spills more), and
// mkg_ring_switch takes MKG_RING_HANDOVER as MKG_RING_KEYED.
#ifndef MKG_RING_GATES
#define MKG_RING_GATES 0
#endif

// Moves to the next slot of an ST-stage ring, flipping the parity of the slot used (and
// clearing its handover gate: the fill went out after it).
template <int ST>
static __device__ __forceinline__ void mkg_ring_advance(mkg_ring *r)
{
    if (MKG_RING_GATES)
        r->parity = (r->parity ^ (1u << r->slot)) & ~(0x10000u << r->slot);
    else
        r->parity ^= 1u << r->slot;
    r->slot = r->slot + 1 == (uint32_t)ST ? 0u : r->slot + 1;
}

// Producers: with NP producer threads (1, or 2: lanes 0 of warps 0 and 1) walking the same
// stages, producer w (mkg_producer_rank) arms and fills only the slots s with s % NP == w; each
// keeps the whole ring's state (it advances over the others' slots too), so all agree on every
// slot's parity. A slot has one owner in a ring layout, so a wait on an own slot is for the
// release of the owner's previous fill and never mistakes an older phase for it; the drain of
// a layout change (mkg_ring_switch) also waits on the others' slots, and takes two passes for
// that reason. One issuing thread lands about one stage
// per ~400-700 cycles whatever the stage's size or the ring's depth (tools/rate_probe.cu; v57 in
// bench/NOTES.md). NP is a template argument: as a run-time value it pushed the one-GEMM
// dispatch producers past their 40-register budget (spills).
template <int NP>
static __device__ __forceinline__ int mkg_producer_rank(void)
{
    static_assert(NP == 1 || NP == 2, "one or two producer threads (four measured no better, v57b)");
    return NP == 1 ? 0 : (int)((threadIdx.x >> 5) & 1u);
}

template <int NP>
static __device__ __forceinline__ bool mkg_ring_mine(uint32_t s)
{
    return NP == 1 || (s & 1u) == (uint32_t)mkg_producer_rank<NP>();
}

// Producer: waits until consumers have released slot s as often as it was filled; on the first
// fill of s after a handover, first until the old stage under its bytes was released.
static __device__ __forceinline__ void mkg_ring_wait_empty(const mkg_ring *r, const mkg_smem *sm, uint32_t s)
{
    if (MKG_RING_GATES && ((r->parity >> 16 >> s) & 1u)) {
        const uint32_t g = mkg_ld_shared_u8(mkg_ring_gate_at(sm, s));
        mkg_mbarrier_wait_parity(sm->empty + 8u * (g & 31u), g >> 7);
    }
    mkg_mbarrier_wait_parity(sm->empty + 8u * s, mkg_ring_bit(r, s) ^ 1u);
}

// Consumer: waits until the current fill of slot s has landed.
static __device__ __forceinline__ void mkg_ring_wait_full(const mkg_ring *r, const mkg_smem *sm, uint32_t s)
{
    mkg_mbarrier_wait_parity(sm->full + 8u * s, mkg_ring_bit(r, s));
}

// Consumer warpgroup: slot s is free again, in this CTA (CL = 1) or in every CTA of
// the cluster.
template <int CL>
static __device__ __forceinline__ void mkg_ring_release(const mkg_smem *sm, uint32_t s)
{
    if constexpr (CL == 1) {
        mkg_mbarrier_arrive(sm->empty + 8u * s);
    } else {
#pragma unroll
        for (uint32_t c = 0; c < (uint32_t)CL; ++c)
            mkg_mbarrier_arrive_cluster(mkg_mapa(sm->empty + 8u * s, c));
    }
}

// How mkg_ring_switch changes layouts (its `handover` argument).
#define MKG_RING_DRAIN 0        /* layouts keyed by schedule: drain the whole ring, restart at slot 0 */
#define MKG_RING_KEYED 1        /* keyed by stage geometry (mkg_ring_key): rows of one stage count and size
                                   share a layout and change nothing between them; a change drains and
                                   restarts at slot 0 */
#define MKG_RING_HANDOVER 2     /* keyed by geometry; a change starts at mkg_ring_handover_start, and one
                                   producer whose old layout filled its whole ring waits per new slot for its
                                   gate only (with MKG_RING_GATES; else as MKG_RING_KEYED) */
#define MKG_RING_HANDOVER_DRAIN 3 /* HANDOVER's keys and start slot with the whole drain (several producers) */

// Called by both roles at the start of every unit (or task) with the same layout key. When
// the layout changes, slots of the old layout may overlap any slot of the new one. Under
// MKG_RING_DRAIN and MKG_RING_KEYED the producer waits until every slot it ever filled was released,
// and both roles restart at slot 0. Under MKG_RING_HANDOVER (mkg_ring_handover.h) both roles start at
// the slot whose first fill waits least, and the producer, where it can (one producer, and the
// old layout's last fills in all of its slots), marks each new slot's first fill to wait for
// the old stage under its bytes (its gate byte and bit 16 + s of parity; mkg_ring_wait_empty)
// instead of draining. Parity bits carry over unchanged.
static __device__ __forceinline__ void mkg_ring_switch(mkg_ring *r, const mkg_smem *sm, int layout, int producer,
                                                       int handover = MKG_RING_DRAIN)
{
    if (r->layout == layout)
        return;
    uint32_t start = 0, gates = 0;
    bool gated = false;
    if (MKG_RING_GATES && handover >= MKG_RING_HANDOVER && r->layout >= 0) {
        const int p = (int)r->slot;
        start = (uint32_t)mkg_ring_handover_start(r->layout, p, layout);
        if (producer && handover == MKG_RING_HANDOVER && r->fills >= (uint32_t)mkg_ring_key_stages(r->layout)) {
            gated = true;
            // The producer thread writes its gate bytes through a generic pointer to its own
            // shared memory and reads them back with ld.shared (mkg_ring_wait_empty).
            gates = mkg_ring_handover_gates(r->layout, p, layout, (int)start, r->parity,
                                            (unsigned char *)__cvta_shared_to_generic(mkg_ring_gate_at(sm, 0)));
        }
    }
    if (producer && r->layout >= 0 && !gated) {
        // NOTE: two passes. With several producers, one that did not fill the layout's last
        // stages knows only the releases up to its own last fill less a ring; a slot filled
        // after that can be two fills ahead of its barrier, and a parity wait on it would pass
        // on an older phase. The first pass waits on every slot at most one fill ahead, which
        // brings the others within one; the second then waits on them too. With one
        // producer the second pass finds every barrier complete.
        for (int pass = 0; pass < 2; ++pass)
            for (uint32_t s = 0; s < MKG_LAUNCH_MAX_STAGES; ++s)
                mkg_mbarrier_wait_parity(sm->empty + 8u * s, mkg_ring_bit(r, s) ^ 1u);
    }
    r->parity = (r->parity & 0xffffu) | gates << 16;
    r->layout = layout;
    r->slot = start;
    r->fills = 0;
}

#endif /* MKG_PIPELINE_SM90_CUH */
