// cpu_tile_order_test.cc - the unit -> tile mapping covers every tile exactly
// once for every raster, group and swap setting, on ragged tile grids.
#include <gtest/gtest.h>

#include <vector>

#include "mkgemm.h"

namespace {

void expect_each_tile_once(int tiles_m, int tiles_n, int raster, int group)
{
    std::vector<int> hits(static_cast<size_t>(tiles_m) * tiles_n, 0);
    const int units = tiles_m * tiles_n;
    for (int u = 0; u < units; ++u) {
        const mkg_tile t = mkg_tile_of_unit(u, tiles_m, tiles_n, raster, group);
        ASSERT_GE(t.m, 0);
        ASSERT_LT(t.m, tiles_m) << "unit " << u << " raster " << raster << " group " << group;
        ASSERT_GE(t.n, 0);
        ASSERT_LT(t.n, tiles_n) << "unit " << u << " raster " << raster << " group " << group;
        ++hits[static_cast<size_t>(t.m) * tiles_n + t.n];
    }
    for (size_t i = 0; i < hits.size(); ++i)
        ASSERT_EQ(hits[i], 1) << "tile " << i / tiles_n << "," << i % tiles_n << " of " << tiles_m << "x"
                              << tiles_n << " raster " << raster << " group " << group;
}

}  // namespace

TEST(TileOrder, EveryTileOnceOnRaggedGrids)
{
    const int groups[] = {0, 1, 2, 3, 4, 7, 8, 16, 64};
    for (int raster : {MKG_RASTER_M, MKG_RASTER_N})
        for (int g : groups)
            for (int tm = 1; tm <= 21; ++tm)
                for (int tn = 1; tn <= 19; ++tn)
                    expect_each_tile_once(tm, tn, raster, g);
}

TEST(TileOrder, EveryScheduleRowOnRaggedShapes)
{
    const int sizes[] = {1, 7, 63, 65, 127, 129, 1000, 4097};
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        const mkg_schedule_info *i = mkg_schedule_get(s);
        for (int m : sizes)
            for (int n : sizes) {
                const int tiles_m = mkg_ceil_div(m, i->tile_m), tiles_n = mkg_ceil_div(n, i->tile_n);
                EXPECT_EQ(mkg_schedule_units(s, m, n), tiles_m * tiles_n) << i->name;
                expect_each_tile_once(tiles_m, tiles_n, i->raster, i->group);
            }
    }
}

TEST(TileOrder, RasterMWalksDownMInsideABand)
{
    // 10 x 6 tiles, bands of 4 tile rows: the first units sweep m = 0..3 at n = 0.
    for (int u = 0; u < 4; ++u) {
        const mkg_tile t = mkg_tile_of_unit(u, 10, 6, MKG_RASTER_M, 4);
        EXPECT_EQ(t.m, u);
        EXPECT_EQ(t.n, 0);
    }
    const mkg_tile t4 = mkg_tile_of_unit(4, 10, 6, MKG_RASTER_M, 4);
    EXPECT_EQ(t4.m, 0);
    EXPECT_EQ(t4.n, 1);
    // The last band has 2 rows (8, 9).
    const mkg_tile last = mkg_tile_of_unit(59, 10, 6, MKG_RASTER_M, 4);
    EXPECT_EQ(last.m, 9);
    EXPECT_EQ(last.n, 5);
}

TEST(TileOrder, RasterNWalksAlongNInsideABand)
{
    for (int u = 0; u < 3; ++u) {
        const mkg_tile t = mkg_tile_of_unit(u, 5, 7, MKG_RASTER_N, 3);
        EXPECT_EQ(t.n, u);
        EXPECT_EQ(t.m, 0);
    }
    const mkg_tile t3 = mkg_tile_of_unit(3, 5, 7, MKG_RASTER_N, 3);
    EXPECT_EQ(t3.n, 0);
    EXPECT_EQ(t3.m, 1);
}
