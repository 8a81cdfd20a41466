/* mkg_plan.c - host planner decisions (see mkg_plan.h). */
#include "mkg_plan.h"
#include "mkg_tile_order.h"

int mkg_plan_kc(int n, int k, int sms)
{
    (void)n;
    (void)sms;
    return k;
}

int mkg_plan_kc_decode(int n, int k, int sms)
{
    return mkg_plan_kc_decode_min(n, k, sms, MKG_PLAN_MIN_KC);
}

int mkg_plan_kc_decode_min(int n, int k, int sms, int min_kc)
{
    const int tiles = mkg_ceil_div(n, MKG_PLAN_DECODE_ROWS);
    /* Enough tiles to keep a quarter of the SMs streaming weights, or K too short to
     * cut into three long chunks: no chunking, no fold cost. NOTE: two chunks lost to one
     * once the decode rows ran two producers (v57 in bench/NOTES.md: 8B o, K 4096, M = 1
     * 13.2 us at KC 2048 against 11.1 us unchunked); 1B and 8B down (4 chunks) still gain. */
    if (4 * tiles >= sms || k < 3 * min_kc)
        return k;
    /* NOTE: at most one wave of split units. Rounding the chunk count up (v13) gave 8B down
     * 5 chunks x 32 tiles = 160 units on 132 SMs, and the 28 units of the second wave
     * streamed alone (M = 1: 44 us, against 40 with one chunk). */
    const int chunks = sms / tiles;
    /* A whole number of 128-byte stage rows for every input dtype (128 e4m3 elements). */
    int kc = mkg_ceil_div(mkg_ceil_div(k, chunks), 128) * 128;
    if (kc < min_kc)
        kc = min_kc;
    return kc >= k ? k : kc;
}

int mkg_plan_kc_cluster(int n, int k, int sms)
{
    const int tiles = mkg_ceil_div(n, MKG_PLAN_DECODE_ROWS);
    for (int chunks = 4; chunks >= 2; chunks /= 2) {
        /* NOTE: K in exactly `chunks` chunks, so that no rank of a cluster runs a short last chunk
         * while the others wait for it; each a multiple of 256, so that the 128-deep rows (the
         * cluster split-K rows among them) take it in every input dtype (e4m3: an even number of
         * 128-element stage rows per chunk, mkg_schedule_check). */
        if (tiles * chunks > sms || k % (256 * chunks) != 0 || k / chunks < MKG_PLAN_CLUSTER_MIN_KC)
            continue;
        return k / chunks;
    }
    return k;
}
