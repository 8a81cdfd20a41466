/* mkg_schedules.c - host metadata of the schedule table (expanded from the X-macro). */
#include <string.h>

#include "mkg_schedules.h"
#include "mkg_tile_order.h"

static const mkg_schedule_info mkg_schedule_table[MKG_SCHED_COUNT] = {
#define MKG_X_INFO(name, tm, tn, tk, st, raster, group, swap) {#name, tm, tn, tk, st, raster, group, swap},
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

int mkg_schedule_units(int s, int m, int n)
{
    const mkg_schedule_info *i = mkg_schedule_get(s);
    if (!i || m < 1 || n < 1)
        return 0;
    return mkg_ceil_div(m, i->tile_m) * mkg_ceil_div(n, i->tile_n);
}
