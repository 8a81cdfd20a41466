/* mkg_schedules.c - host metadata of the schedule table (expanded from the X-macro). */
#include <string.h>

#include "mkg_gemm.h"
#include "mkg_schedules.h"
#include "mkg_tile_order.h"

static const mkg_schedule_info mkg_schedule_table[MKG_SCHED_COUNT] = {
#define MKG_X_INFO(name, tm, tn, tk, st, raster, group, swap, split, cl, pp) \
    {#name, tm, tn, tk, st, raster, group, swap, split, cl, pp},
    MKG_SCHEDULE_LIST(MKG_X_INFO)
#undef MKG_X_INFO
};

const mkg_schedule_info *mkg_schedule_get(int s)
{
    if (s < 0 || s >= MKG_SCHED_COUNT)
        return NULL;
    return &mkg_schedule_table[s];
}

int mkg_schedule_find(const char *name)
{
    if (!name)
        return -1;
    for (int s = 0; s < MKG_SCHED_COUNT; ++s)
        if (strcmp(mkg_schedule_table[s].name, name) == 0)
            return s;
    return -1;
}

int mkg_schedule_units(int s, int m, int n, int k, int kc)
{
    const mkg_schedule_info *i = mkg_schedule_get(s);
    if (!i || m < 1 || n < 1 || k < 1)
        return 0;
    if (i->cluster > 1 && i->swap_ab) /* cluster split-K: CL CTAs per tile */
        return mkg_ceil_div(m, i->tile_m) * mkg_ceil_div(n, i->tile_n) * i->cluster;
    if (i->cluster > 1) /* CTAs: whole clusters of cluster-tile rows */
        return mkg_ceil_div(m, i->tile_m * i->cluster) * i->cluster * mkg_ceil_div(n, i->tile_n);
    return mkg_ceil_div(m, i->tile_m) * mkg_ceil_div(n, i->tile_n) *
           mkg_split_count(i->split, mkg_chunk_count(k, kc));
}

size_t mkg_workspace_counter_bytes(int m, int n)
{
    size_t bytes = 0;
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        const mkg_schedule_info *i = &mkg_schedule_table[s];
        const size_t b = (size_t)mkg_ceil_div(m, i->tile_m) * (size_t)mkg_ceil_div(n, i->tile_n) * 2 *
                         sizeof(unsigned int);
        if (i->split > 1 && i->cluster == 1 && b > bytes)
            bytes = b;
    }
    return (bytes + 255) / 256 * 256;
}

size_t mkg_schedule_workspace_bytes(int s, int m, int n, int k, int kc)
{
    const mkg_schedule_info *i = mkg_schedule_get(s);
    if (!i || m < 1 || n < 1 || k < 1)
        return 0;
    const int chunks = mkg_chunk_count(k, kc);
    if (mkg_split_count(i->split, chunks) < 2 || i->cluster > 1) /* cluster split-K: shared memory */
        return 0;
    const size_t tiles = (size_t)mkg_ceil_div(m, i->tile_m) * (size_t)mkg_ceil_div(n, i->tile_n);
    return mkg_workspace_counter_bytes(m, n) +
           tiles * (size_t)chunks * (size_t)i->tile_m * (size_t)i->tile_n * sizeof(float);
}

size_t mkg_gemm_workspace_bytes(const mkg_gemm_desc *d)
{
    size_t bytes = 0;
    if (!d)
        return 0;
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        const size_t b = mkg_schedule_workspace_bytes(s, d->m, d->n, d->k, d->kc);
        if (b > bytes)
            bytes = b;
    }
    return bytes;
}

int mkg_schedule_shipped_only(int s)
{
    const mkg_schedule_info *i = mkg_schedule_get(s);
    return i && i->cluster > 1;
}

int mkg_schedule_cluster_k(int s)
{
    const mkg_schedule_info *i = mkg_schedule_get(s);
    return i && i->cluster > 1 && i->swap_ab ? i->cluster : 1;
}

int mkg_schedule_wgmma_n(int s)
{
    const mkg_schedule_info *i = mkg_schedule_get(s);
    if (!i)
        return 0;
    const int p = i->swap_ab ? i->tile_n : i->tile_m;
    const int q = i->swap_ab ? i->tile_m : i->tile_n;
    return p == 128 ? q : q / 2;
}
