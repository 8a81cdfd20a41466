/* mkg_dispatch_sm90.cuh - device-side dispatch: from (table, layer, current M) to a
 * schedule, and a switch generated from the schedule X-macro that runs that
 * schedule's inline unit routines. No host work per step, no function pointers.
 *
 * Every thread that takes part (the producer thread and all consumer threads) calls
 * mkg_dispatch_pick with the same arguments and gets the same answer, so on a bad
 * entry all of them skip the layer together; the first error is kept in the error
 * word as (layer + 1) << 8 | mkg_dispatch_error. A one-chunk dispatcher (CHUNKS = 0) runs
 * layers of one K chunk (the planner's choice for per-tensor layers) and reports a chunked or
 * block-scaled layer; a chunk-stepping one (CHUNKS = 1: mkg_dispatch_consume_chunked, the
 * megakernel's loop) runs both, on the rows that fold chunks.
 * A one-GEMM dispatch kernel may be compiled for plain stores of one output type (OT >= 0,
 * as the shipped kernel's MKG_KV_STORE variant): its consumers then hold only that epilogue,
 * and a layer with any other epilogue, output type or dependency signal is reported as
 * MKG_DISPATCH_NOT_PLAIN and skipped. The megakernel keeps the run-time epilogue (OT = -1).
 */
#ifndef MKG_DISPATCH_SM90_CUH
#define MKG_DISPATCH_SM90_CUH

#include "mkg_gemm_sm90.cuh"
#include "mkg_layer.h"

// A row's TK column counts 16-bit elements: a stage holds TK / 64 K sub-tiles (KH) of one
// 128-byte swizzled row each, which is mkg_dispatch_sub(DT) elements of input dtype DT (64 bf16
// or fp16, 32 fp32 for tf32 math, 128 e4m3), as the shipped kernel tables expand it
// (host_harness/mkg_kernels_sm90.cuh). A row's byte facts (stage size, chunk capability) are
// the same for every dtype, and are read at MKG_DISPATCH_TK.
#define MKG_DISPATCH_TK 64

static constexpr int mkg_dispatch_sub(int dt)
{
    return dt == MKG_DTYPE_E4M3 ? 128 : dt == MKG_DTYPE_FP32 ? 32 : 64;
}

static __device__ __forceinline__ int mkg_dispatch_fail(unsigned int *err, int layer, int reason)
{
    atomicCAS(err, 0u, ((unsigned int)(layer + 1) << 8) | (unsigned int)reason);
    return -1;
}

// 1 if a row of these columns folds K chunks (wgmma N <= MKG_CHUNKED_MAX_WN, cooperative consumers).
template <int TM, int TN, int TK, int ST, int SWAP, int PP>
static constexpr bool mkg_dispatch_capable_row()
{
    return mkg_shape<TM, TN, MKG_DISPATCH_TK, ST, SWAP, TK / 64>::CHUNKED && !PP;
}

// 1 if schedule s folds K chunks: callers with a chunk step loop (CHUNKS = 1: the megakernel,
// mkg_dispatch_consume_chunked) run those rows only.
static __device__ __forceinline__ int mkg_dispatch_chunk_capable(int s)
{
    switch (s) {
#define MKG_X_CAPABLE(name, tm, tn, tk, st, raster, group, swap, split, cl, pp) \
    case MKG_SCHED_##name: return mkg_dispatch_capable_row<tm, tn, tk, st, swap, pp>();
        MKG_SCHEDULE_LIST(MKG_X_CAPABLE)
#undef MKG_X_CAPABLE
    default: return 0;
    }
}

// Rows the dispatcher runs: rows that need a cluster launch (CL > 1) are shipped-kernel only
// (mkg_schedule_shipped_only). The planner never puts them in a table (mkg_plan_eligible) and
// the switches below compile no code for them. Ping-pong rows (PP) run one K chunk with a plain
// store, in callers of the one-chunk consumer loop (mkg_dispatch_consume_units_one) only: the
// chunk step switches and the dependency-waiting producer (megakernels) compile none of them,
// and a CHUNKS = 1 pick refuses them (mkg_dispatch_chunk_capable).
// MKG_DISPATCH_ONLY_SHAPE (an experiment knob, -1 by default): compile only the rows whose
// TM * 100000 + TN * 100 + ST equals it, to measure what the size of the switch costs a
// launch (v17 in bench/NOTES.md). The others then read as rows the dispatcher does not run.
#ifndef MKG_DISPATCH_ONLY_SHAPE
#define MKG_DISPATCH_ONLY_SHAPE -1
#endif
// MKG_DISPATCH_MAP_PREFETCH (an experiment knob, 1 by default): 0 drops v92's prefetch.tensormap of
// each unit's A and B maps in mkg_dispatch_produce, for an A/B build.
#ifndef MKG_DISPATCH_MAP_PREFETCH
#define MKG_DISPATCH_MAP_PREFETCH 1
#endif
static constexpr bool mkg_dispatch_row(int cl, int /* pp */, int tm = 0, int tn = 0, int st = 0)
{
    return cl == 1 &&
           (MKG_DISPATCH_ONLY_SHAPE < 0 || tm * 100000 + tn * 100 + st == MKG_DISPATCH_ONLY_SHAPE);
}

// 1 if the dispatcher runs schedule s (see mkg_dispatch_row).
static __device__ __forceinline__ int mkg_dispatch_runs(int s)
{
    switch (s) {
#define MKG_X_RUNS(name, tm, tn, tk, st, raster, group, swap, split, cl, pp) \
    case MKG_SCHED_##name: return mkg_dispatch_row(cl, pp, tm, tn, st);
        MKG_SCHEDULE_LIST(MKG_X_RUNS)
#undef MKG_X_RUNS
    default: return 0;
    }
}

// 1 if schedule s is not a ping-pong row (the chunk step loops and dependency waits run none).
static __device__ __forceinline__ int mkg_dispatch_not_pp(int s)
{
    switch (s) {
#define MKG_X_NOT_PP(name, tm, tn, tk, st, raster, group, swap, split, cl, pp) \
    case MKG_SCHED_##name: return !pp;
        MKG_SCHEDULE_LIST(MKG_X_NOT_PP)
#undef MKG_X_NOT_PP
    default: return 0;
    }
}

// 1 if a chunk-stepping caller built with MKG_DISPATCH_WIDE runs schedule s, which does not fold
// chunks, on a layer of `chunks` K chunks: one chunk, no block scales, no ping-pong.
static __device__ __forceinline__ bool mkg_dispatch_wide_ok(int s, int chunks, bool bscaled)
{
    return MKG_DISPATCH_WIDE && chunks == 1 && !bscaled && mkg_dispatch_not_pp(s);
}

// Schedule of `layer` at its current M (stored in *m), or -1 after recording why not.
// CHUNKS = 0: the caller runs one-chunk layers without block scales (mkg_dispatch_consume_units_one);
// CHUNKS = 1: it steps through chunks (mkg_dispatch_consume_chunked, mkg_dispatch_consume_units,
// mkg_dispatch_consume_step) and runs chunk-capable rows only.
// OT >= 0: the caller's consumers store C as OT with a plain store (see the file comment).
template <int DT, int CHUNKS = 0, int OT = -1>
static __device__ __forceinline__ int mkg_dispatch_pick(const mkg_layer_dev *rows, int count, const int *m_cur,
                                                        int layer, unsigned int *err, int *m)
{
    if (layer < 0 || layer >= count)
        return mkg_dispatch_fail(err, layer, MKG_DISPATCH_BAD_LAYER);
    const mkg_layer_dev *r = rows + layer;
    // NOTE: every field the checks need is loaded first, so the loads go out together: with each
    // load behind the previous check's early return they ran one after another, a chain of
    // L2 round trips of ~1.5-2.3 us before the first TMA load (the launch probe's disp_*
    // cases, bench/NOTES.md v46). Only the bucket's schedule depends on a loaded value (M).
    const int planned = r->planned, m_max = r->m_max, buckets = r->buckets;
    const int in_type = r->params.in_type, k = r->params.k, kc = r->params.kc;
    const int epilogue = r->params.epilogue, c_type = r->params.c_type;
    const bool signals = r->params.deps.done != nullptr;
    const bool bscaled = r->params.a_bscales != nullptr;
    *m = m_cur[layer];
    if (!planned)
        return mkg_dispatch_fail(err, layer, MKG_DISPATCH_NOT_PLANNED);
    if (*m < 1 || *m > m_max)
        return mkg_dispatch_fail(err, layer, MKG_DISPATCH_M_RANGE);
    if (in_type != DT || (MKG_EPI_OT_ONLY >= 0 && c_type != MKG_EPI_OT_ONLY))
        return mkg_dispatch_fail(err, layer, MKG_DISPATCH_BAD_DTYPE);
    // NOTE: block scales are applied per K chunk by the chunk-stepping consumers only; a
    // one-chunk consumer would ignore them (mkg_gemm_desc), even on a layer of one 128-deep chunk.
    if (!CHUNKS && (mkg_chunk_count(k, kc) > 1 || bscaled))
        return mkg_dispatch_fail(err, layer, MKG_DISPATCH_CHUNKED);
    if (OT >= 0 && (epilogue != MKG_EPI_STORE || signals || c_type != OT))
        return mkg_dispatch_fail(err, layer, MKG_DISPATCH_NOT_PLAIN);
    const int b = mkg_bucket_of(*m);
    if (b >= buckets || b >= MKG_MAX_BUCKETS)
        return mkg_dispatch_fail(err, layer, MKG_DISPATCH_M_RANGE);
    const int s = r->schedule[b];
    if (s >= MKG_SCHED_COUNT || !mkg_dispatch_runs(s) ||
        (CHUNKS && !mkg_dispatch_chunk_capable(s) && !mkg_dispatch_wide_ok(s, mkg_chunk_count(k, kc), bscaled)))
        return mkg_dispatch_fail(err, layer, MKG_DISPATCH_BAD_SCHEDULE);
    return s;
}

// ---- the pick by one warp, once per launch (one-GEMM dispatch kernels) ---------------
//
// mkg_dispatch_pick runs on every thread of both roles after the CTA's barrier init. Here one
// warp reads everything at once, one 32-bit word per lane (M, the checked fields, N and all
// MKG_MAX_BUCKETS schedule bytes), picks with shuffles and leaves the answer in shared memory;
// run it beside the barrier init, and after the CTA barrier every role starts from the slot.
// Same checks in the same order, same error codes as mkg_dispatch_pick. Measured neutral per
// launch against the per-thread pick (v47 in bench/NOTES.md: the ~1 us before the producer's
// first load is not the pick), but it takes the pick off the launch's path.

/** A pick left in shared memory: schedule (-1: the layer is skipped), M, the unit count and
 *  the unit order, mkg_row_spreads of the row (the argument of mkg_cta_rank_for_row). */
typedef struct mkg_dispatch_slot {
    int s, m, units;
    int spread;                 /* 1: deal units even CTAs first (mkg_row_spreads), 0: CTA order */
} mkg_dispatch_slot;

// Work units of schedule s at M from N, K and KC held in registers (ONE: one K chunk), as
// mkg_unit_count counts them for a plain (CL = 1) launch; *tiles_m: its tiles along M.
template <bool ONE>
static __device__ __forceinline__ int mkg_dispatch_units_of(int s, int m, int n, int k, int kc, int *tiles_m)
{
    switch (s) {
#define MKG_X_UNITS_OF(name, tm, tn, tk, st, raster, group, swap, split, cl, pp)                    \
    case MKG_SCHED_##name:                                                                        \
        *tiles_m = mkg_ceil_div(m, tm);                                                           \
        return *tiles_m * mkg_ceil_div(n, tn) * (ONE ? 1 : mkg_split_count(split, mkg_chunk_count(k, kc)));
        MKG_SCHEDULE_LIST(MKG_X_UNITS_OF)
#undef MKG_X_UNITS_OF
    default: *tiles_m = 0; return 0;
    }
}

// The same from the params (ONE: the layer is one K chunk).
template <bool ONE>
static __device__ __forceinline__ int mkg_dispatch_units(const mkg_gemm_params *p, int s, int m)
{
    int tiles_m;
    return mkg_dispatch_units_of<ONE>(s, m, p->n, p->k, p->kc, &tiles_m);
}

// ---- v90: the warp pick as straight-line code ----------------------------------------
//
// The pick runs once per launch on code no warp has run before: with the per-lane offsets from a
// branch tree and the schedule's facts from switches over every row it was ~830 instructions
// with ~170 branches, each taken branch into a cold instruction line a round trip to the L2 or
// DRAM, on the launch's path to the producer's first load (d5 in bench/NOTES.md). Here every lane
// loads its word with no branch (offsets unpacked from constants), the chosen schedule's facts
// come from a table loaded beside the row (mkg_dispatch_geom_tab, v125; v90 had a chain of selects)
// and the checks are selects.

// A schedule's facts for the warp pick, one word: TM (bits 0-8), TN (9-17), SPLIT (18-22), the
// dispatcher runs it (bit 23, mkg_dispatch_runs), it folds K chunks (bit 24,
// mkg_dispatch_chunk_capable), it is not a ping-pong row (bit 25); 0 for a schedule outside the
// list ("not run").
static constexpr unsigned int mkg_dispatch_geom_word(int tm, int tn, int split, bool runs, bool capable, bool pp)
{
    return (unsigned int)tm | (unsigned int)tn << 9 | (unsigned int)split << 18 | (unsigned int)runs << 23 |
           (unsigned int)capable << 24 | (unsigned int)!pp << 25;
}

// The facts of every schedule, one 64-bit entry each: mkg_dispatch_geom_word in the low word and
// ceil(2^32 / TN) in the high word (ceil(n / TN) by a multiply, mkg_dispatch_div_tn). v125: the warp
// pick loads this table beside the row (lane l entries l and l + 32), so its cold line costs no
// round trip of its own, and picks the chosen entry with one shuffle; v90's chain of 44 dependent
// selects and a runtime division were ~250 cycles on the launch's path (bench/NOTES.md, session 59).
static constexpr unsigned long long mkg_dispatch_geom_entry(int tm, int tn, int split, bool runs, bool capable,
                                                            bool pp)
{
    return (unsigned long long)mkg_dispatch_geom_word(tm, tn, split, runs, capable, pp) |
           ((0x100000000ull + (unsigned long long)tn - 1) / (unsigned long long)tn) << 32;
}

#define MKG_DISPATCH_GEOM_ENTRIES 64
static_assert(MKG_SCHED_COUNT <= MKG_DISPATCH_GEOM_ENTRIES, "two table entries per lane of the warp pick");
static __device__ const unsigned long long mkg_dispatch_geom_tab[MKG_DISPATCH_GEOM_ENTRIES] = {
#define MKG_X_GEOM(name, tm, tn, tk, st, raster, group, swap, split, cl, pp)                                 \
    mkg_dispatch_geom_entry(tm, tn, split, mkg_dispatch_row(cl, pp, tm, tn, st),                            \
                            mkg_dispatch_capable_row<tm, tn, tk, st, swap, pp>(), pp != 0),
    MKG_SCHEDULE_LIST(MKG_X_GEOM)
#undef MKG_X_GEOM
};

// ceil(n / tn) for 0 <= n < 2^31 and 1 <= tn <= 511, with inv = ceil(2^32 / tn): the multiply's
// quotient of x = n + tn - 1 is floor(x / tn) or one more (x * (inv - 2^32 / tn) < 2^32), and the
// one correction makes it exact.
static __device__ __forceinline__ int mkg_dispatch_div_tn(int n, int tn, unsigned int inv)
{
    const unsigned int x = (unsigned int)n + (unsigned int)tn - 1u;
    unsigned int q = __umulhi(x, inv);
    q -= q * (unsigned int)tn > x ? 1u : 0u;
    return (int)q;
}

#define MKG_X_GEOM_FITS(name, tm, tn, tk, st, raster, group, swap, split, cl, pp) &&tm < 512 && tn < 512 && split < 32
static_assert(true MKG_SCHEDULE_LIST(MKG_X_GEOM_FITS), "every row's TM, TN and SPLIT fit mkg_dispatch_geom_word");
#undef MKG_X_GEOM_FITS
#define MKG_X_TM_POW2(name, tm, tn, tk, st, raster, group, swap, split, cl, pp) &&(tm & (tm - 1)) == 0
static_assert(true MKG_SCHEDULE_LIST(MKG_X_TM_POW2), "every row's TM is a power of two (the warp pick shifts by it)");
#undef MKG_X_TM_POW2

// Lanes of the warp pick: lane 0 loads M, lanes 1..MKG_PICK_SCHED - 1 one field each (a pointer
// is two lanes), lanes MKG_PICK_SCHED.. the schedule bytes, four per lane; the lanes past them load
// words after the schedule (never used; the index is clamped to the row's last word).
#define MKG_PICK_SCHED 13
static_assert(MKG_PICK_SCHED + (MKG_MAX_BUCKETS + 3) / 4 <= 32, "the warp pick loads one word per lane");
static_assert(offsetof(mkg_layer_dev, schedule) % 4 == 0 && sizeof(mkg_layer_dev) % 4 == 0,
              "schedule bytes are read as whole words inside the row");
static_assert(sizeof(mkg_layer_dev) / 4 < 1024, "a row word index fits the 10 bits of mkg_pick_words");

// Word indices into the row of the fields of lanes 1..12 (lane 0 loads m_cur), 10 bits per lane,
// six lanes per constant: lane l's index is bits 10 * (l % 6) of constant l / 6.
static constexpr unsigned long long mkg_pick_word(int lane)
{
    constexpr size_t P = offsetof(mkg_layer_dev, params);
    constexpr size_t DONE = P + offsetof(mkg_gemm_params, deps) + offsetof(mkg_gemm_deps, done);
    constexpr size_t BSA = P + offsetof(mkg_gemm_params, a_bscales);
    const size_t off = lane == 1    ? offsetof(mkg_layer_dev, planned)
                       : lane == 2  ? offsetof(mkg_layer_dev, m_max)
                       : lane == 3  ? offsetof(mkg_layer_dev, buckets)
                       : lane == 4  ? P + offsetof(mkg_gemm_params, in_type)
                       : lane == 5  ? P + offsetof(mkg_gemm_params, chunks)
                       : lane == 6  ? P + offsetof(mkg_gemm_params, epilogue)
                       : lane == 7  ? P + offsetof(mkg_gemm_params, c_type)
                       : lane == 8  ? P + offsetof(mkg_gemm_params, n)
                       : lane == 9  ? DONE
                       : lane == 10 ? DONE + 4
                       : lane == 11 ? BSA
                       : lane == 12 ? BSA + 4
                                    : 0;
    return (unsigned long long)(off / 4) << (10 * (lane % 6));
}

static constexpr unsigned long long mkg_pick_words(int first)
{
    unsigned long long w = 0;
    for (int l = first; l < first + 6 && l < MKG_PICK_SCHED; ++l)
        w |= mkg_pick_word(l);
    return w;
}

// Called by all 32 lanes of one warp. CHUNKS and OT as for mkg_dispatch_pick (same checks in the
// same order, same error codes); lane 0 writes *out.
template <int DT, int CHUNKS = 0, int OT = -1>
static __device__ __forceinline__ void mkg_dispatch_pick_warp(const mkg_layer_dev *rows, int count, const int *m_cur,
                                                              int layer, unsigned int *err, mkg_dispatch_slot *out)
{
    const unsigned int all = 0xFFFFFFFFu;
    const int lane = threadIdx.x & 31;
    if (layer < 0 || layer >= count) {
        if (lane == 0) {
            mkg_dispatch_fail(err, layer, MKG_DISPATCH_BAD_LAYER);
            out->s = -1;
            out->m = out->units = 0;
            out->spread = mkg_row_spreads(0, 0);
        }
        return;
    }
    constexpr unsigned long long W0 = mkg_pick_words(0), W1 = mkg_pick_words(6), W2 = mkg_pick_words(12);
    const unsigned long long wl = lane < 6 ? W0 : lane < 12 ? W1 : W2;
    const unsigned int field = (unsigned int)(wl >> (10 * (lane % 6))) & 0x3FFu;
    constexpr unsigned int SCHED_WORD = (unsigned int)(offsetof(mkg_layer_dev, schedule) / 4);
    constexpr unsigned int LAST_WORD = (unsigned int)(sizeof(mkg_layer_dev) / 4 - 1);
    const unsigned int word = lane < MKG_PICK_SCHED ? field : SCHED_WORD + (unsigned int)(lane - MKG_PICK_SCHED);
    const unsigned int *src = lane == 0 ? (const unsigned int *)(m_cur + layer)
                                        : (const unsigned int *)(rows + layer) + min(word, LAST_WORD);
    // The schedule table's entries lane and lane + 32 go out with the row's word (independent loads).
    const unsigned long long e0 = __ldg(&mkg_dispatch_geom_tab[lane]);
    const unsigned long long e1 = __ldg(&mkg_dispatch_geom_tab[lane + 32]);
    const unsigned int v = *src;
    const int m = (int)__shfl_sync(all, v, 0);
    if (lane == 0 && v != 0x80000000u)           // a branch on the loaded word: the stamp waits for it
        MKG_PROBE_ANY(16);                      // the row's words are in (d5; empty outside the probe)
    const int planned = (int)__shfl_sync(all, v, 1), m_max = (int)__shfl_sync(all, v, 2);
    const int buckets = (int)__shfl_sync(all, v, 3), in_type = (int)__shfl_sync(all, v, 4);
    const int chunks = (int)__shfl_sync(all, v, 5), epilogue = (int)__shfl_sync(all, v, 6);
    const int c_type = (int)__shfl_sync(all, v, 7), n = (int)__shfl_sync(all, v, 8);
    const bool signals = (__shfl_sync(all, v, 9) | __shfl_sync(all, v, 10)) != 0u;
    const bool bscaled = (__shfl_sync(all, v, 11) | __shfl_sync(all, v, 12)) != 0u;
    const int b = mkg_bucket_of(m);
    const int bi = min(max(b, 0), MKG_MAX_BUCKETS - 1);
    const int sb = (int)((__shfl_sync(all, v, MKG_PICK_SCHED + bi / 4) >> (8 * (bi % 4))) & 0xFFu);
    const unsigned long long e = __shfl_sync(all, sb < 32 ? e0 : e1, sb & 31);
    const unsigned int g = sb < MKG_SCHED_COUNT ? (unsigned int)e : 0u;
    const bool runs = (g >> 23 & 1u) != 0u, capable = (g >> 24 & 1u) != 0u;
    const bool wide = MKG_DISPATCH_WIDE && chunks == 1 && !bscaled && (g >> 25 & 1u) != 0u;  // mkg_dispatch_wide_ok
    // The checks as selects, the last check first, so the first failing one decides.
    int why = MKG_DISPATCH_OK;
    why = sb >= MKG_SCHED_COUNT || !runs || (CHUNKS && !capable && !wide) ? MKG_DISPATCH_BAD_SCHEDULE : why;
    why = b >= buckets || b >= MKG_MAX_BUCKETS ? MKG_DISPATCH_M_RANGE : why;
    why = OT >= 0 && (epilogue != MKG_EPI_STORE || signals || c_type != OT) ? MKG_DISPATCH_NOT_PLAIN : why;
    why = !CHUNKS && (chunks > 1 || bscaled) ? MKG_DISPATCH_CHUNKED : why;
    why = in_type != DT || (MKG_EPI_OT_ONLY >= 0 && c_type != MKG_EPI_OT_ONLY) ? MKG_DISPATCH_BAD_DTYPE : why;
    why = m < 1 || m > m_max ? MKG_DISPATCH_M_RANGE : why;
    why = !planned ? MKG_DISPATCH_NOT_PLANNED : why;
    // Units as mkg_unit_count counts them for a plain (CL = 1) launch (mkg_dispatch_units_of).
    // TM is a power of two (MKG_X_TM_POW2's static_assert): tiles along M by a shift; along N by the entry's
    // reciprocal (only a valid pick's count is used, so an out-of-range M or schedule may give any).
    const int tm = max((int)(g & 0x1FFu), 1), tn = max((int)(g >> 9 & 0x1FFu), 1);
    const int tiles_m = (int)(((unsigned int)m + (unsigned int)tm - 1u) >> (__ffs(tm) - 1));
    const int units = tiles_m * mkg_dispatch_div_tn(n, tn, (unsigned int)(e >> 32)) *
                      (CHUNKS ? mkg_split_count((int)(g >> 18 & 0x1Fu), chunks) : 1);
    if (lane == 0) {
        if (why != MKG_DISPATCH_OK)
            mkg_dispatch_fail(err, layer, why);
        const bool ok = why == MKG_DISPATCH_OK;
        out->s = ok ? sb : -1;
        out->m = m;
        out->units = ok ? units : 0;
        out->spread = mkg_row_spreads(m, ok ? tiles_m : 0);
    }
}

// The ring layout key of schedule s under MKG_RING_KEYED and MKG_RING_HANDOVER: its stage
// geometry, so that rows of equal stage count and size share one layout (mkg_ring_handover.h).
static __device__ __forceinline__ int mkg_dispatch_ring_key(int s)
{
    switch (s) {
#define MKG_X_KEY(name, tm, tn, tk, st, raster, group, swap, split, cl, pp) \
    case MKG_SCHED_##name: return mkg_ring_key(st, mkg_shape<tm, tn, MKG_DISPATCH_TK, st, swap, tk / 64>::STAGE_BYTES);
        MKG_SCHEDULE_LIST(MKG_X_KEY)
#undef MKG_X_KEY
    default: return -1;
    }
}

// After the CTA barrier that follows mkg_dispatch_pick_warp: one role starts `layer` from the
// slot (as mkg_dispatch_begin, without the pick). -1 when the layer is skipped.
static __device__ __forceinline__ int mkg_dispatch_begin_slot(const mkg_layer_dev *rows, int layer,
                                                              const mkg_dispatch_slot *slot, mkg_ring *r,
                                                              const mkg_smem *sm, int producer,
                                                              const mkg_gemm_params **p, int *m, int *units)
{
    int s = slot->s;
    *m = slot->m;
    *units = slot->units;
    if (!producer) {
        // Consumer warps (whole warps; producers are single lanes): read from shared memory, these
        // are per-lane to ptxas; made uniform, the loops they bound stay on the uniform datapath.
        s = mkg_warp_uniform(s);
        *m = mkg_warp_uniform(*m);
        *units = mkg_warp_uniform(*units);
    }
    if (s < 0)
        return -1;
    *p = &rows[layer].params;
    mkg_ring_switch(r, sm, s, producer);
    return s;
}


// One thread, first thing in the kernel: asks the L2 to fetch every tensor map of
// `layer` (A, B and C in all box classes), and this SM's L1 to fetch the row's fields past
// the maps (the params' scalars, M range, schedules) and, given m_cur, the layer's current M.
// The pick then reads M, the bucket's schedule and the params one after another; without
// the prefetch each of those dependent loads is a DRAM round trip when the table has left
// the L2 (v15 in bench/NOTES.md). No address needs a load; a layer out of range is skipped
// (mkg_dispatch_pick reports it).
static __device__ __forceinline__ void mkg_dispatch_prefetch_maps(const mkg_layer_dev *rows, int count, int layer,
                                                                  const int *m_cur = nullptr)
{
    if (layer < 0 || layer >= count)
        return;
    const char *row = (const char *)(rows + layer);
    // NOTE: rows are 64-byte aligned, so the span can reach one line past the last step.
    for (size_t off = offsetof(mkg_layer_dev, params) + offsetof(mkg_gemm_params, c) / 128 * 128;
         off < sizeof(mkg_layer_dev); off += 128)
        mkg_prefetch_l1(row + off);
    mkg_prefetch_l1(row + sizeof(mkg_layer_dev) - 1);
    if (m_cur)
        mkg_prefetch_l1(m_cur + layer);
    // NOTE: the maps are brought into the L2 as plain lines (the LSU), not with 18
    // prefetch.tensormap requests queued in the TMA unit ahead of the first loads; the
    // first load of each map then finds it in the L2 instead of DRAM. Measured the same
    // speed as the tensor-map prefetches (v36 in bench/NOTES.md).
    static_assert(sizeof(CUtensorMap) == 128, "one tensor map per 128-byte line");
    const size_t maps0 = offsetof(mkg_layer_dev, params) + offsetof(mkg_gemm_params, a_map);
    const size_t maps1 = offsetof(mkg_layer_dev, params) + offsetof(mkg_gemm_params, c_map) +
                         MKG_C_BOX_CLASSES * sizeof(CUtensorMap);
    for (size_t off = maps0; off < maps1; off += 128)
        mkg_prefetch_l2(row + off);
    mkg_prefetch_l2(row + maps1 - 1);                // rows are 64-byte aligned: the last line
}

// Starts `layer` for one role: picks its schedule, switches the ring to it and
// returns the schedule with its params, M and unit count; -1 when the layer is
// skipped (the error word says why). CHUNKS and OT as for mkg_dispatch_pick. handover: how
// the ring changes layout (mkg_ring_switch; every role of a kernel passes the same keying).
template <int DT, int CHUNKS = 0, int OT = -1>
static __device__ __forceinline__ int mkg_dispatch_begin(const mkg_layer_dev *rows, int count, const int *m_cur,
                                                         int layer, unsigned int *err, mkg_ring *r,
                                                         const mkg_smem *sm, int producer,
                                                         const mkg_gemm_params **p, int *m, int *units,
                                                         int handover = MKG_RING_DRAIN)
{
    int s = mkg_dispatch_pick<DT, CHUNKS, OT>(rows, count, m_cur, layer, err, m);
    if (!producer) {
        // Consumer warps: the pick's loads are per-lane to ptxas (see mkg_dispatch_begin_slot).
        s = mkg_warp_uniform(s);
        *m = mkg_warp_uniform(*m);
    }
    if (s < 0)
        return -1;
    *p = &rows[layer].params;
    mkg_ring_switch(r, sm, handover == MKG_RING_DRAIN ? s : mkg_dispatch_ring_key(s), producer, handover);
    *units = mkg_dispatch_units<!CHUNKS>(*p, s, *m);
    if (!producer)
        *units = mkg_warp_uniform(*units);
    return s;
}


// Producer thread: the TMA loads of one unit of schedule s. DEPS = 1 (megakernels):
// a GEMM's dependency wait sits here, once, between the two halves of the unit's loads.
// NOTE: DEPS = 0 keeps the wait out of one-GEMM dispatch kernels, whose producer runs
// under a 40-register setmaxnreg budget (the wait path spilled there).
// ONE: the layer is one K chunk (callers whose pick has CHUNKS = 0): the unit's coordinates
// skip the chunk and split arithmetic, as in the shipped one-chunk kernels (v34).
// NP: producer threads sharing the ring (mkg_ring_mine): 1 or 2. PER_ROW: a row takes at most
// its mkg_shape::PRODUCERS of them and the other producers leave the unit at once (one-layer
// kernels only: their ring state no longer follows the first producer's); without it every
// producer takes part in every row (multi-task kernels). With DEPS and NP > 1, only the first
// producer polls the input's counters and then publishes how many units' inputs it has seen
// ready (sm->dep, a monotone count: a producer that falls behind by several units cannot miss
// one, as it could a parity phase); the others wait until the count reaches theirs.
template <int DT, int DEPS = 0, bool ONE = false, int NP = 1, bool PER_ROW = false>
static __device__ __forceinline__ void mkg_dispatch_produce(const mkg_gemm_params *p, int s, int m, int unit,
                                                            mkg_ring *r, const mkg_smem *sm)
{
    static_assert(!(DEPS && PER_ROW), "dependency waits keep every producer on every row");
    int pre = 0;
    if (DEPS && p->deps.wait) {
        int row0 = 0, row1 = 0;
        const uint64_t t_reached = mkg_gemm_stamp_reached(p);
        switch (s) {
#define MKG_X_B_FIRST(name, tm, tn, tk, st, raster, group, swap, split, cl, pp)                       \
    case MKG_SCHED_##name:                                                                     \
        if constexpr (mkg_dispatch_row(cl, pp, tm, tn, st) && !pp)                             \
            pre = mkg_gemm_produce_b_first<tm, tn, mkg_dispatch_sub(DT), st, swap, ONE, tk / 64, NP>( \
                p, m, unit, raster, group, split, r, sm, &row0, &row1);                        \
        break;
            MKG_SCHEDULE_LIST(MKG_X_B_FIRST)
#undef MKG_X_B_FIRST
        default: break;
        }
        ++r->dep;
        if (NP > 1 && mkg_producer_rank<NP>() != 0) {
            // The first producer saw this unit's rows ready (its wait is bounded, and it
            // publishes the count after a stall too).
            while ((int)(mkg_ld_acquire_cta_shared_u32(sm->dep) - r->dep) < 0)
                __nanosleep(32);
            mkg_fence_proxy_async_global();
        } else {
            mkg_gemm_wait_a_rows(p, m, row0, row1, unit, t_reached);
            if (NP > 1)
                mkg_st_release_cta_shared_u32(sm->dep, r->dep);
        }
    }
    switch (s) {
#define MKG_X_PRODUCE(name, tm, tn, tk, st, raster, group, swap, split, cl, pp)                       \
    case MKG_SCHED_##name:                                                                     \
        if constexpr (mkg_dispatch_row(cl, pp, tm, tn, st) && !(DEPS && pp)) {                 \
            constexpr int RP = mkg_shape<tm, tn, MKG_DISPATCH_TK, st, swap, tk / 64>::PRODUCERS; \
            constexpr int NPR = PER_ROW && RP < NP ? RP : NP;                                  \
            if (PER_ROW && mkg_producer_rank<NP>() >= NPR)                                     \
                break;                                                                         \
            constexpr bool PFM = MKG_DISPATCH_MAP_PREFETCH != 0;                                \
            mkg_gemm_produce_rest<tm, tn, mkg_dispatch_sub(DT), st, swap, 1, ONE, tk / 64, NPR, PFM>( \
                p, m, unit, raster, group, split, r, sm, pre);                                 \
        }                                                                                      \
        break;
        MKG_SCHEDULE_LIST(MKG_X_PRODUCE)
#undef MKG_X_PRODUCE
    default: break;
    }
}

// Megakernel producer thread: unit `unit` of schedule s with its weights only, A left to a warp
// of the CTA that writes it into each stage (mkg_gemm_produce_b_for_a; the stages go to it tagged
// `tag`). No dependency wait: the writer waits for its rows. Chunk-capable rows only, the ones
// the megakernel's consumers run (mkg_dispatch_consume_units). The unit's arrival is stamped for the
// timeline (deps.stamps); the writer stamps when its input was ready.
template <int DT>
static __device__ __forceinline__ void mkg_dispatch_produce_b_for_a(const mkg_gemm_params *p, int s, int m, int unit,
                                                                    mkg_ring *r, const mkg_smem *sm, uint32_t tag)
{
    if (p->deps.stamps)
        p->deps.stamps[2 * unit] = mkg_globaltimer();
    ++r->dep;
    switch (s) {
#define MKG_X_B_FOR_A(name, tm, tn, tk, st, raster, group, swap, split, cl, pp)                                 \
    case MKG_SCHED_##name:                                                                               \
        if constexpr (mkg_dispatch_capable_row<tm, tn, tk, st, swap, pp>() && mkg_dispatch_row(cl, pp, tm, tn, st)) \
            mkg_gemm_produce_b_for_a<tm, tn, mkg_dispatch_sub(DT), st, swap, tk / 64>(p, m, unit, raster, group, \
                                                                                    split, r, sm, tag);    \
        break;
        MKG_SCHEDULE_LIST(MKG_X_B_FOR_A)
#undef MKG_X_B_FOR_A
    default: break;
    }
}

// Consumer warpgroup wg, a layer of one K chunk (a CHUNKS = 0 pick): this CTA's units first,
// first + stride, ... < units of schedule s, each with its epilogue. Cooperative rows split each
// unit between the two consumer warpgroups; ping-pong rows run alternate units on alternate
// warpgroups (mkg_gemm_consume_pp_units: named barriers MKG_LAUNCH_BAR_PP and the next, which the
// caller must leave free). The loop sits inside the switch, so only the picked row's
// accumulators are live in it. OT >= 0: C is of type OT with a plain store (the pick checked
// it), and only that epilogue is compiled. first, stride and units: warp-uniform values
// (the CTA's rank, gridDim, mkg_dispatch_begin*), so that the loops stay on the uniform datapath.
// A one-CTA-per-SM kernel that picks through a slot (mkg_dispatch_pick_warp) should take
// first = mkg_cta_rank_for_row(blockIdx.x, gridDim.x, slot.spread), and its producer the same:
// a decode row (at most 64 rows, or one tile along M) with fewer units than SMs then runs one
// unit per TPC (v71 in bench/NOTES.md: up to 1.3x faster than with first = blockIdx.x), and a
// row of more than 64 rows with several M tiles puts consecutive units, which share a tile, on
// one TPC (v82-v83: 1B down M = 512 39.2 -> 33.1 us). A caller of mkg_dispatch_begin (no slot)
// does not learn the row's M tiles: first = mkg_cta_rank_spread(blockIdx.x, gridDim.x) for every
// row is its choice (v71's order, what the README's snippet shows).
template <int DT, int TM, int TN, int KH, int ST, int SWAP, int SPLIT, int PP, int OT>
static __device__ __forceinline__ void mkg_dispatch_one_loop(const mkg_gemm_params *p, int m, int first, int stride,
                                                             int units, int raster, int group, mkg_ring *r,
                                                             const mkg_smem *sm, int wg)
{
    if constexpr (PP) {
        mkg_gemm_consume_pp_units<DT, TM, TN, mkg_dispatch_sub(DT), ST, OT, false>(p, m, first, stride, units, raster,
                                                                             group, r, sm, wg);
    } else {
        float d[mkg_shape<TM, TN, MKG_DISPATCH_TK, ST, SWAP>::WN / 2], tot[1];
        for (int u = first; u < units; u += stride)
            mkg_gemm_consume_step<DT, TM, TN, mkg_dispatch_sub(DT), ST, SWAP, true, 1, false, OT, KH>(
                p, m, u, 0, raster, group, SPLIT, r, sm, wg, d, tot);
    }
}

template <int DT, int OT = -1>
static __device__ __forceinline__ void mkg_dispatch_consume_units_one(const mkg_gemm_params *p, int s, int m,
                                                                      int first, int stride, int units, mkg_ring *r,
                                                                      const mkg_smem *sm, int wg)
{
    switch (s) {
#define MKG_X_CONSUME(name, tm, tn, tk, st, raster, group, swap, split, cl, pp)                               \
    case MKG_SCHED_##name:                                                                             \
        if constexpr (mkg_dispatch_row(cl, pp, tm, tn, st))                                             \
            mkg_dispatch_one_loop<DT, tm, tn, tk / 64, st, swap, split, pp, OT>(p, m, first, stride, units, \
                                                                              raster, group, r, sm, wg);  \
        break;
        MKG_SCHEDULE_LIST(MKG_X_CONSUME)
#undef MKG_X_CONSUME
    default: break;
    }
}

// Consumer warpgroup wg: chunk c of unit `unit` of a chunk-capable schedule s (one step
// of a flat (unit, chunk) loop, see mkg_gemm_consume_step). d and tot hold
// MKG_CHUNKED_MAX_WN / 2 floats each; a schedule uses the first WN / 2.
template <int DT>
static __device__ __forceinline__ void mkg_dispatch_consume_step(const mkg_gemm_params *p, int s, int m, int unit,
                                                                 int c, mkg_ring *r, const mkg_smem *sm, int wg,
                                                                 float *d, float *tot)
{
    switch (s) {
#define MKG_X_STEP(name, tm, tn, tk, st, raster, group, swap, split, cl, pp)                                            \
    case MKG_SCHED_##name:                                                                                       \
        if constexpr (mkg_shape<tm, tn, MKG_DISPATCH_TK, st, swap>::CHUNKED && mkg_dispatch_row(cl, pp, tm, tn, st) && \
                      !pp)                                                                                       \
            mkg_gemm_consume_step<DT, tm, tn, mkg_dispatch_sub(DT), st, swap, false, 1, false, -1, tk / 64>(      \
                p, m, unit, c, raster, group, split, r, sm, wg, d, tot);                                        \
        break;
        MKG_SCHEDULE_LIST(MKG_X_STEP)
#undef MKG_X_STEP
    default: break;
    }
}

// Consumer warpgroup wg of a chunk-stepping caller (a CHUNKS = 1 pick): units u0, u0 + stride, ...
// < units of schedule s, each as its chunk steps in one flat loop (see mkg_gemm_consume_step), block
// scales applied per chunk where the layer has them. The switch sits outside the loop, so only the
// picked row's accumulators (WN / 2 floats of d and of the fold) are live in it; with caller-owned
// arrays sized for the widest row, as before, the megakernel kept MKG_CHUNKED_MAX_WN floats live
// through every task's loop. HOOK: mkg_unit_done(on_unit, u) runs after each unit's last step, a free
// function the caller defines for its hook struct F (the megakernel's timeline stamp; found at
// instantiation); without HOOK on_unit is not touched. FIP: the chunk fold adds in place from -0.0f
// (mkg_gemm_consume_step; the one-layer kernels), else it selects on the unit's first chunk.
template <int DT, int TM, int TN, int TK, int ST, int SWAP, int SPLIT, int KH, bool HOOK, bool FIP, class F>
static __device__ __forceinline__ void mkg_dispatch_consume_loop(const mkg_gemm_params *p, int m, int u, int stride,
                                                                 int units, int raster, int group, mkg_ring *r,
                                                                 const mkg_smem *sm, int wg, F *on_unit)
{
    constexpr int H = mkg_shape<TM, TN, TK, ST, SWAP>::WN / 2;
    float d[H], tot[H];
#pragma unroll
    for (int i = 0; i < H; ++i) {
        d[i] = 0.0f;
        tot[i] = FIP ? -0.0f : 0.0f;                 // FIP: the in-place fold's start (mkg_fold_reset)
    }
    // The loop's bounds uniform to ptxas (mkg_warp_uniform): its exit is then not a divergent one,
    // and the ring state it carries stays in uniform registers.
    u = mkg_warp_uniform(u);
    units = mkg_warp_uniform(units);
    if constexpr (DT == MKG_DTYPE_E4M3) {
        // NOTE: e4m3 chunks can be one stage deep (block scales: kc = 128), so the loop keeps the
        // unit's coordinates across its steps and carries the next chunk's block scales, as the
        // shipped kernel does (v23: per step, the unit's divisions cost more than the chunk's wgmma,
        // and scales loaded at the step's start doubled it).
        mkg_unit uu{};
        mkg_bscale_in<mkg_shape<TM, TN, TK, ST, SWAP>::WN, SWAP> bs{};
        int c = 0;
        if (u < units) {
            uu = mkg_unit_of<TM, TN, TK, 1, false, KH>(p, m, u, raster, group, SPLIT);
            c = mkg_warp_uniform(uu.c0);
        }
        while (u < units) {
            mkg_gemm_consume_step<DT, TM, TN, TK, ST, SWAP, false, 1, false, -1, KH, 1, FIP>(
                p, m, u, c, raster, group, SPLIT, r, sm, wg, d, tot, &uu, &bs);
            if (++c == mkg_warp_uniform(uu.c1)) {
                if constexpr (HOOK)
                    mkg_unit_done(on_unit, u);
                u += stride;
                if (u < units) {
                    uu = mkg_unit_of<TM, TN, TK, 1, false, KH>(p, m, u, raster, group, SPLIT);
                    c = mkg_warp_uniform(uu.c0);
                }
            }
        }
        return;
    }
    int c = 0, c_end = 0;
    if (u < units) {
        mkg_unit_chunk_range(p, u, SPLIT, &c, &c_end);
        c = mkg_warp_uniform(c);
        c_end = mkg_warp_uniform(c_end);
    }
    while (u < units) {
        mkg_gemm_consume_step<DT, TM, TN, TK, ST, SWAP, false, 1, false, -1, KH, 1, FIP>(p, m, u, c, raster, group,
                                                                                      SPLIT, r, sm, wg, d, tot);
        if (++c == c_end) {
            if constexpr (HOOK)
                mkg_unit_done(on_unit, u);
            u += stride;
            if (u < units) {
                mkg_unit_chunk_range(p, u, SPLIT, &c, &c_end);
                c = mkg_warp_uniform(c);
                c_end = mkg_warp_uniform(c_end);
            }
        }
    }
}

// The same for a row with wgmma N > MKG_CHUNKED_MAX_WN on a layer of one K chunk (MKG_DISPATCH_WIDE,
// mkg_dispatch_wide_ok): one step per unit, its epilogue straight from d (no fold registers).
template <int DT, int TM, int TN, int TK, int ST, int SWAP, int SPLIT, int KH, bool HOOK, class F>
static __device__ __forceinline__ void mkg_dispatch_wide_loop(const mkg_gemm_params *p, int m, int u, int stride,
                                                              int units, int raster, int group, mkg_ring *r,
                                                              const mkg_smem *sm, int wg, F *on_unit)
{
    float d[mkg_shape<TM, TN, TK, ST, SWAP>::WN / 2], tot[1];
    u = mkg_warp_uniform(u);
    units = mkg_warp_uniform(units);
    for (; u < units; u += stride) {
        mkg_gemm_consume_step<DT, TM, TN, TK, ST, SWAP, true, 1, false, -1, KH>(p, m, u, 0, raster, group, SPLIT, r, sm,
                                                                             wg, d, tot);
        if constexpr (HOOK)
            mkg_unit_done(on_unit, u);
    }
}

template <int DT, bool HOOK, bool FIP, class F>
static __device__ __forceinline__ void mkg_dispatch_consume_switch(const mkg_gemm_params *p, int s, int m, int u0,
                                                                   int stride, int units, mkg_ring *r,
                                                                   const mkg_smem *sm, int wg, F *on_unit)
{
    switch (s) {
#define MKG_X_LOOP(name, tm, tn, tk, st, raster, group, swap, split, cl, pp)                                       \
    case MKG_SCHED_##name:                                                                                  \
        if constexpr (mkg_shape<tm, tn, MKG_DISPATCH_TK, st, swap>::CHUNKED && mkg_dispatch_row(cl, pp, tm, tn, st) && \
                      !pp)                                                                                       \
            mkg_dispatch_consume_loop<DT, tm, tn, mkg_dispatch_sub(DT), st, swap, split, tk / 64, HOOK, FIP>(     \
                p, m, u0, stride, units, raster, group, r, sm, wg, on_unit);                                    \
        else if constexpr (MKG_DISPATCH_WIDE && mkg_dispatch_row(cl, pp, tm, tn, st) && !pp)                        \
            mkg_dispatch_wide_loop<DT, tm, tn, mkg_dispatch_sub(DT), st, swap, split, tk / 64, HOOK>(             \
                p, m, u0, stride, units, raster, group, r, sm, wg, on_unit);                                    \
        break;
        MKG_SCHEDULE_LIST(MKG_X_LOOP)
#undef MKG_X_LOOP
    default: break;
    }
    mkg_epilogue_flush(r);                       // the task's last deferred count (MKG_EPI_DEFER_COUNT)
}

// The chunk-stepping consumer loop with mkg_unit_done(on_unit, u) after each unit (a persistent
// megakernel task; F is the caller's plain hook struct). NOTE: the fold selects (FIP = false): the
// in-place fold keeps tot live between units, which raised the megakernel's spill stores 1932 -> 3312 B.
template <int DT, class F>
static __device__ __forceinline__ void mkg_dispatch_consume_units(const mkg_gemm_params *p, int s, int m, int u0,
                                                                  int stride, int units, mkg_ring *r,
                                                                  const mkg_smem *sm, int wg, F *on_unit)
{
    mkg_dispatch_consume_switch<DT, true, false>(p, s, m, u0, stride, units, r, sm, wg, on_unit);
}

// The same without a per-unit hook: the consumers of a one-layer or test kernel whose pick has
// CHUNKS = 1 (chunked or block-scaled layers). The producer runs mkg_dispatch_produce<DT> (ONE =
// false) over the same units.
template <int DT>
static __device__ __forceinline__ void mkg_dispatch_consume_chunked(const mkg_gemm_params *p, int s, int m, int u0,
                                                                    int stride, int units, mkg_ring *r,
                                                                    const mkg_smem *sm, int wg)
{
    // The in-place fold for e4m3 only: block-scaled chunks are one stage deep, so the fold's FSEL was a
    // third of their FP32 work (v93). NOTE: for bf16 it made the bench's dispatch kernel spill
    // (0 -> 1376 B stores, 184 B stack), tot being live between units; bf16 chunks span several stages.
    mkg_dispatch_consume_switch<DT, false, DT == MKG_DTYPE_E4M3, int>(p, s, m, u0, stride, units, r, sm, wg, nullptr);
}

// Split count of schedule s (the SPLIT column).
static __device__ __forceinline__ int mkg_dispatch_split(int s)
{
    switch (s) {
#define MKG_X_SPLIT(name, tm, tn, tk, st, raster, group, swap, split, cl, pp) \
    case MKG_SCHED_##name: return split;
        MKG_SCHEDULE_LIST(MKG_X_SPLIT)
#undef MKG_X_SPLIT
    default: return 1;
    }
}

#endif /* MKG_DISPATCH_SM90_CUH */
