/* mkg_dispatch_sm90.cuh - device-side dispatch: from (table, layer, current M) to a
 * schedule, and a switch generated from the schedule X-macro that runs that
 * schedule's inline unit routines. No host work per step, no function pointers.
 *
 * Every thread that takes part (the producer thread and all consumer threads) calls
 * mkg_dispatch_pick with the same arguments and gets the same answer, so on a bad
 * entry all of them skip the layer together; the first error is kept in the error
 * word as (layer + 1) << 8 | mkg_dispatch_error. The dispatcher runs layers of one
 * K chunk (the planner's choice today); a chunked layer is reported, not run.
 */
#ifndef MKG_DISPATCH_SM90_CUH
#define MKG_DISPATCH_SM90_CUH

#include "mkg_gemm_sm90.cuh"
#include "mkg_layer.h"

static __device__ __forceinline__ int mkg_dispatch_fail(unsigned int *err, int layer, int reason)
{
    atomicCAS(err, 0u, ((unsigned int)(layer + 1) << 8) | (unsigned int)reason);
    return -1;
}

// Schedule of `layer` at its current M (stored in *m), or -1 after recording why not.
template <int DT>
static __device__ __forceinline__ int mkg_dispatch_pick(const mkg_layer_dev *rows, int count, const int *m_cur,
                                                        int layer, unsigned int *err, int *m)
{
    if (layer < 0 || layer >= count)
        return mkg_dispatch_fail(err, layer, MKG_DISPATCH_BAD_LAYER);
    const mkg_layer_dev *r = rows + layer;
    if (!r->planned)
        return mkg_dispatch_fail(err, layer, MKG_DISPATCH_NOT_PLANNED);
    *m = m_cur[layer];
    if (*m < 1 || *m > r->m_max)
        return mkg_dispatch_fail(err, layer, MKG_DISPATCH_M_RANGE);
    if (r->params.in_type != DT)
        return mkg_dispatch_fail(err, layer, MKG_DISPATCH_BAD_DTYPE);
    if (mkg_chunk_count(r->params.k, r->params.kc) > 1)
        return mkg_dispatch_fail(err, layer, MKG_DISPATCH_CHUNKED);
    const int b = mkg_bucket_of(*m);
    if (b >= r->buckets || b >= MKG_MAX_BUCKETS)
        return mkg_dispatch_fail(err, layer, MKG_DISPATCH_M_RANGE);
    const int s = r->schedule[b];
    if (s >= MKG_SCHED_COUNT)
        return mkg_dispatch_fail(err, layer, MKG_DISPATCH_BAD_SCHEDULE);
    return s;
}

// Work units of schedule s at M.
static __device__ __forceinline__ int mkg_dispatch_units(const mkg_gemm_params *p, int s, int m);

// Starts `layer` for one role: picks its schedule, switches the ring to it and
// returns the schedule with its params, M and unit count; -1 when the layer is
// skipped (the error word says why).
template <int DT>
static __device__ __forceinline__ int mkg_dispatch_begin(const mkg_layer_dev *rows, int count, const int *m_cur,
                                                         int layer, unsigned int *err, mkg_ring *r,
                                                         const mkg_smem *sm, int producer,
                                                         const mkg_gemm_params **p, int *m, int *units)
{
    const int s = mkg_dispatch_pick<DT>(rows, count, m_cur, layer, err, m);
    if (s < 0)
        return -1;
    *p = &rows[layer].params;
    mkg_ring_switch(r, sm, s, producer);
    *units = mkg_dispatch_units(*p, s, *m);
    return s;
}

// Work units of schedule s at M.
static __device__ __forceinline__ int mkg_dispatch_units(const mkg_gemm_params *p, int s, int m)
{
    switch (s) {
#define MKG_X_UNITS(name, tm, tn, tk, st, raster, group, swap, split) \
    case MKG_SCHED_##name: return mkg_unit_count<tm, tn>(p, m, split);
        MKG_SCHEDULE_LIST(MKG_X_UNITS)
#undef MKG_X_UNITS
    default: return 0;
    }
}

// Producer thread: the TMA loads of one unit of schedule s. A megakernel GEMM's
// dependency wait sits here, once, between the two halves of the unit's loads.
static __device__ __forceinline__ void mkg_dispatch_produce(const mkg_gemm_params *p, int s, int m, int unit,
                                                            mkg_ring *r, const mkg_smem *sm)
{
    int pre = 0;
    if (p->deps.wait) {
        int row0 = 0, row1 = 0;
        switch (s) {
#define MKG_X_B_FIRST(name, tm, tn, tk, st, raster, group, swap, split)                                         \
    case MKG_SCHED_##name:                                                                                       \
        pre = mkg_gemm_produce_b_first<tm, tn, tk, st, swap>(p, m, unit, raster, group, split, r, sm, &row0, &row1); \
        break;
            MKG_SCHEDULE_LIST(MKG_X_B_FIRST)
#undef MKG_X_B_FIRST
        default: break;
        }
        mkg_gemm_wait_a_rows(p, m, row0, row1);
    }
    switch (s) {
#define MKG_X_PRODUCE(name, tm, tn, tk, st, raster, group, swap, split)                        \
    case MKG_SCHED_##name:                                                                      \
        mkg_gemm_produce_rest<tm, tn, tk, st, swap>(p, m, unit, raster, group, split, r, sm, pre); \
        break;
        MKG_SCHEDULE_LIST(MKG_X_PRODUCE)
#undef MKG_X_PRODUCE
    default: break;
    }
}

// Consumer warpgroup wg: wgmma mainloop and epilogue of one unit of schedule s.
template <int DT>
static __device__ __forceinline__ void mkg_dispatch_consume(const mkg_gemm_params *p, int s, int m, int unit,
                                                            mkg_ring *r, const mkg_smem *sm, int wg)
{
    switch (s) {
#define MKG_X_CONSUME(name, tm, tn, tk, st, raster, group, swap, split)                                    \
    case MKG_SCHED_##name: {                                                                                \
        float d[mkg_shape<tm, tn, tk, st, swap>::WN / 2], tot[1];                                          \
        mkg_gemm_consume_step<DT, tm, tn, tk, st, swap, true>(p, m, unit, 0, raster, group, split, r, sm, wg, \
                                                              d, tot);                                      \
        break;                                                                                              \
    }
        MKG_SCHEDULE_LIST(MKG_X_CONSUME)
#undef MKG_X_CONSUME
    default: break;
    }
}

#endif /* MKG_DISPATCH_SM90_CUH */
