/* mkg_ring_handover.h - where a shared-memory ring of one stage geometry hands over to another.
 *
 * A persistent kernel that runs GEMMs of several schedules (the megakernel) keeps one operand
 * ring (mkg_pipeline_sm90.cuh) and lays it out per schedule: ST stages of S bytes each, slot s
 * at bytes [s S, (s + 1) S) with barrier pair s. A ring's geometry is its key (mkg_ring_key):
 * schedules with equal ST and S share a layout and need no change between them at all.
 *
 * When the geometry changes, a new slot may overlap any old slot's bytes, so the producer used
 * to wait until every old stage was released and restart at slot 0. But the consumers release
 * stages in the order they were filled (each consumer warpgroup walks the stages in order, and a
 * slot is free when both have released it), so once the old ring has been filled at least once
 * in the old layout (its last ST_old fills sit in all of its slots), the release of old slot i
 * implies the release of every fill before it. Then a new slot is free as soon as the most
 * recently filled old slot that overlaps its bytes is released (its gate), and its barrier pair
 * as soon as the old fill of that same pair is. The new layout starts at the slot whose first
 * fill waits least, so the next GEMM's first stages go out while the old GEMM's last stages are
 * still being consumed.
 *
 * Both roles derive the start slot from the same state (the old layout's next slot and the two
 * keys), so they agree on it. Host and device both call these (the CPU tests simulate a ring
 * through random layout changes with them and check that no fill overwrites a stage before
 * it is released).
 *
 * Measured (v75 in bench/NOTES.md): in the decode megakernel the handover made the step slower,
 * because the GEMM before the change is bandwidth-bound at its end and the early stages take DRAM
 * time from it; it stays an option (MKG_MK_OPT_RING_HANDOVER in a MKG_MK_RING_GATES=ON build).
 */
#ifndef MKG_RING_HANDOVER_H
#define MKG_RING_HANDOVER_H

#include "mkg_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A ring geometry: st stages (at most 31) of stage_bytes (a multiple of 1024) each. */
static MKG_HD int mkg_ring_key(int st, unsigned int stage_bytes)
{
    return st | (int)(stage_bytes >> 10) << 5;
}

static MKG_HD int mkg_ring_key_stages(int key)
{
    return key & 31;
}

/* Stage size in KB. */
static MKG_HD int mkg_ring_key_kb(int key)
{
    return key >> 5;
}

/* How recently old slot i was filled, p being the old ring's next slot (its oldest fill):
 * 0 for the oldest, st - 1 for the newest. */
static MKG_HD int mkg_ring_recency(int i, int p, int st)
{
    return i - p + (i < p ? st : 0);
}

/* NOTE: a handover runs on the critical path of every role at each layout change, so these
 * walk the slots once with running byte offsets and no division: written with `/` and `%`
 * (~2000 dependent instructions per change) the first version cost the decode step ~7 us per
 * layer (v75's first run, a11d0eb). */

/* The gate of a new slot spanning [lo, hi) KB: the most recently filled old slot that overlaps
 * it, old slot i (starting at i_lo KB) being the first that ends past lo; p (the oldest fill,
 * whose release implies that of every fill before the old layout) when none does. */
static MKG_HD int mkg_ring_gate_from(int i, int i_lo, int hi, int p, int sto, int so)
{
    int gate = p, best = -1;
    for (; i < sto && i_lo < hi; ++i, i_lo += so) {
        const int r = mkg_ring_recency(i, p, sto);
        if (r > best) {
            best = r;
            gate = i;
        }
    }
    return gate;
}

/* The new layout's first slot: the one whose first fill waits least, i.e. needs the least
 * recent old fill released (its gate's and, where j < ST_old, that of the old fill of its own
 * barrier pair); the lowest such slot. */
static MKG_HD int mkg_ring_handover_start(int old_key, int p, int new_key)
{
    const int sto = mkg_ring_key_stages(old_key), so = mkg_ring_key_kb(old_key);
    const int stn = mkg_ring_key_stages(new_key), sn = mkg_ring_key_kb(new_key);
    int start = 0, w_best = 1 << 30, i = 0, i_lo = 0;
    for (int j = 0, lo = 0; j < stn; ++j, lo += sn) {
        while (i_lo + so <= lo) {
            ++i;
            i_lo += so;
        }
        int w = mkg_ring_recency(mkg_ring_gate_from(i, i_lo, lo + sn, p, sto, so), p, sto);
        if (j < sto && mkg_ring_recency(j, p, sto) > w)
            w = mkg_ring_recency(j, p, sto);
        if (w < w_best) {
            w_best = w;
            start = j;
        }
    }
    return start;
}

/* The waits that first fills of the new layout need besides the one on their own barrier pair,
 * after a handover that starts at `start`: gate[j] = the old slot to wait for | the parity of
 * that wait (bit 7, from the producer's parity word) for each new slot j in the returned mask.
 * None where j's gate is the old fill of j's own pair, or of a pair whose first fill in the new
 * layout comes before j's (that fill already waited for it). The second case must be left out,
 * not only may: by the time j is filled, that pair may have completed its new fill's release
 * too, and a parity wait for the old release would then wait for a phase that only a later
 * fill can complete. */
static MKG_HD unsigned int mkg_ring_handover_gates(int old_key, int p, int new_key, int start, unsigned int parity,
                                                   unsigned char *gate)
{
    const int sto = mkg_ring_key_stages(old_key), so = mkg_ring_key_kb(old_key);
    const int stn = mkg_ring_key_stages(new_key), sn = mkg_ring_key_kb(new_key);
    unsigned int mask = 0;
    int i = 0, i_lo = 0;
    for (int j = 0, lo = 0; j < stn; ++j, lo += sn) {
        while (i_lo + so <= lo) {
            ++i;
            i_lo += so;
        }
        const int g = mkg_ring_gate_from(i, i_lo, lo + sn, p, sto, so);
        if (g == j || (g < stn && mkg_ring_recency(g, start, stn) < mkg_ring_recency(j, start, stn)))
            continue;
        gate[j] = (unsigned char)(g | (int)((((parity >> g) & 1u) ^ 1u) << 7));
        mask |= 1u << j;
    }
    return mask;
}

#ifdef __cplusplus
}
#endif

#endif /* MKG_RING_HANDOVER_H */
