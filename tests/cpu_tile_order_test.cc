// cpu_tile_order_test.cc - the unit -> tile mapping covers every tile exactly
// once for every raster, group and swap setting, on ragged tile grids.
#include <gtest/gtest.h>

#include <algorithm>
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

// Cluster rows: cluster unit u, CTA rank r; tiles past tiles_m are the odd last row.
void expect_each_cluster_tile_once(int tiles_m, int tiles_n, int cl, int raster, int group)
{
    std::vector<int> hits(static_cast<size_t>(tiles_m) * tiles_n, 0);
    const int units = mkg_ceil_div(tiles_m, cl) * tiles_n;
    for (int u = 0; u < units; ++u) {
        const mkg_tile t0 = mkg_tile_of_cluster_unit(u, 0, cl, tiles_m, tiles_n, raster, group);
        for (int r = 0; r < cl; ++r) {
            const mkg_tile t = mkg_tile_of_cluster_unit(u, r, cl, tiles_m, tiles_n, raster, group);
            ASSERT_EQ(t.n, t0.n) << "a cluster shares one B tile column";
            ASSERT_EQ(t.m, t0.m + r);
            ASSERT_EQ(t0.m % cl, 0);
            ASSERT_GE(t.n, 0);
            ASSERT_LT(t.n, tiles_n);
            if (t.m < tiles_m)
                ++hits[static_cast<size_t>(t.m) * tiles_n + t.n];
            else
                ASSERT_EQ(t.m / cl, (tiles_m - 1) / cl) << "only the last cluster row reaches past M";
        }
    }
    for (size_t i = 0; i < hits.size(); ++i)
        ASSERT_EQ(hits[i], 1) << "tile " << i / tiles_n << "," << i % tiles_n << " of " << tiles_m << "x"
                              << tiles_n << " cluster " << cl << " raster " << raster << " group " << group;
}

}  // namespace

TEST(TileOrder, ClusterUnitsCoverEveryTileOnce)
{
    for (int raster : {MKG_RASTER_M, MKG_RASTER_N})
        for (int g : {0, 1, 3, 8, 16})
            for (int tm = 1; tm <= 21; ++tm)
                for (int tn = 1; tn <= 19; ++tn)
                    expect_each_cluster_tile_once(tm, tn, 2, raster, g);
}

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
                if (mkg_schedule_cluster_k(s) > 1) {      // cluster split-K: CL CTAs per tile
                    EXPECT_EQ(mkg_schedule_units(s, m, n, 4096, 0), tiles_m * tiles_n * i->cluster) << i->name;
                    expect_each_tile_once(tiles_m, tiles_n, i->raster, i->group);
                    // Rank r of a cluster runs split r of the tile's chunks (unit t * CL + r): for every
                    // chunk count the row runs (>= CL), the CL splits cover each chunk once, none empty,
                    // in increasing chunk order with the rank (rank 0's fold walks them in that order).
                    for (int chunks = i->cluster; chunks <= 64; ++chunks) {
                        ASSERT_EQ(mkg_split_count(i->split, chunks), i->cluster) << i->name;
                        int next = 0;
                        for (int r = 0; r < i->cluster; ++r) {
                            int c0, c1;
                            mkg_split_range(r, i->cluster, chunks, &c0, &c1);
                            EXPECT_EQ(c0, next) << i->name << " chunks " << chunks << " rank " << r;
                            EXPECT_GT(c1, c0) << i->name << " chunks " << chunks << " rank " << r;
                            next = c1;
                        }
                        EXPECT_EQ(next, chunks) << i->name << " chunks " << chunks;
                    }
                    continue;
                }
                if (i->cluster > 1) {
                    const int cl = i->cluster;
                    EXPECT_EQ(mkg_schedule_units(s, m, n, 4096, 0), mkg_ceil_div(tiles_m, cl) * cl * tiles_n)
                        << i->name;
                    expect_each_cluster_tile_once(tiles_m, tiles_n, cl, i->raster, i->group);
                    continue;
                }
                EXPECT_EQ(mkg_schedule_units(s, m, n, 4096, 0), tiles_m * tiles_n) << i->name;
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

// Units dealt by rank (mkg_cta_rank_spread): every grid's ranks are a permutation of the CTAs,
// and the first ceil(grid / 2) ranks are the even CTAs, so up to that many units run on CTAs
// that never share a TPC (CTAs 2i and 2i + 1 do) and every unit runs exactly once.
TEST(TileOrder, RankSpreadIsAPermutationEvenCtasFirst)
{
    for (int grid = 1; grid <= 300; ++grid) {
        std::vector<int> seen(static_cast<size_t>(grid), 0);
        for (int b = 0; b < grid; ++b) {
            const int r = mkg_cta_rank_spread(b, grid);
            ASSERT_GE(r, 0) << "grid " << grid << " cta " << b;
            ASSERT_LT(r, grid) << "grid " << grid << " cta " << b;
            ++seen[static_cast<size_t>(r)];
            EXPECT_EQ(r < (grid + 1) / 2, b % 2 == 0) << "grid " << grid << " cta " << b;
        }
        for (int r = 0; r < grid; ++r)
            ASSERT_EQ(seen[static_cast<size_t>(r)], 1) << "grid " << grid << " rank " << r;
        // Units u = rank, rank + grid, ... on each CTA: each of 3 * grid + 5 units exactly once.
        const int units = 3 * grid + 5;
        std::vector<int> ran(static_cast<size_t>(units), 0);
        for (int b = 0; b < grid; ++b)
            for (int u = mkg_cta_rank_spread(b, grid); u < units; u += grid)
                ++ran[static_cast<size_t>(u)];
        for (int u = 0; u < units; ++u)
            ASSERT_EQ(ran[static_cast<size_t>(u)], 1) << "grid " << grid << " unit " << u;
    }
    // 64 units on the H200's 132 CTAs: CTAs 0, 2, ..., 126, one per TPC.
    for (int u = 0; u < 64; ++u) {
        int cta = -1;
        for (int b = 0; b < 132; ++b)
            if (mkg_cta_rank_spread(b, 132) == u)
                cta = b;
        EXPECT_EQ(cta, 2 * u);
    }
}

// The dispatch kernel's default unit order (mkg_cta_rank_for_row of mkg_row_spreads): a
// permutation for every grid; rows of at most 64 rows or one M tile in the spread order, longer
// rows with several M tiles in CTA order, so the two CTAs of a TPC (2i, 2i + 1) run consecutive
// units.
TEST(TileOrder, RankForRowSpreadsDecodeRowsOnly)
{
    for (int grid = 1; grid <= 300; ++grid) {
        for (int spread : {0, 1}) {
            std::vector<int> seen(static_cast<size_t>(grid), 0);
            for (int b = 0; b < grid; ++b) {
                const int r = mkg_cta_rank_for_row(b, grid, spread);
                ASSERT_GE(r, 0) << "grid " << grid << " spread " << spread << " cta " << b;
                ASSERT_LT(r, grid) << "grid " << grid << " spread " << spread << " cta " << b;
                ++seen[static_cast<size_t>(r)];
                EXPECT_EQ(r, spread ? mkg_cta_rank_spread(b, grid) : b)
                    << "grid " << grid << " spread " << spread << " cta " << b;
            }
            for (int r = 0; r < grid; ++r)
                ASSERT_EQ(seen[static_cast<size_t>(r)], 1) << "grid " << grid << " spread " << spread << " rank " << r;
        }
    }
    // Rows of at most 64 rows spread whatever their tiles (v82: 1B down M = 32 on two m16 tiles
    // lost 12% in CTA order); longer rows only when they have one M tile (or none: a skipped row).
    for (int m : {0, 1, 16, 32, 64})
        for (int tiles_m : {0, 1, 2, 4, 8})
            EXPECT_TRUE(mkg_row_spreads(m, tiles_m)) << "m " << m << " tiles_m " << tiles_m;
    EXPECT_TRUE(mkg_row_spreads(128, 1));
    EXPECT_TRUE(mkg_row_spreads(512, 1));
    EXPECT_FALSE(mkg_row_spreads(65, 2));
    EXPECT_FALSE(mkg_row_spreads(128, 2));
    EXPECT_FALSE(mkg_row_spreads(512, 4));
    // 1B down M = 512 on m128n64 (4 M tiles, 128 units) on the H200's 132 CTAs: units 2i and
    // 2i + 1 on one TPC; a decode row's 64 units one per TPC.
    EXPECT_EQ(mkg_cta_rank_for_row(6, 132, mkg_row_spreads(512, 4)), 6);
    EXPECT_EQ(mkg_cta_rank_for_row(7, 132, mkg_row_spreads(512, 4)), 7);
    EXPECT_EQ(mkg_cta_rank_for_row(6, 132, mkg_row_spreads(1, 1)), 3);
    EXPECT_EQ(mkg_cta_rank_for_row(7, 132, mkg_row_spreads(32, 2)), 69);
}

TEST(ChunkSplit, EveryKCoveredExactlyOnceForEverySplit)
{
    const int ks[] = {8, 64, 72, 1000, 2048, 4096, 4160, 8192, 14336};
    const int kcs[] = {0, 64, 256, 512, 1024, 1408, 2880, 100000};
    const int splits[] = {1, 2, 3, 4, 8, 16, 64};
    for (int k : ks)
        for (int kc : kcs)
            for (int split : splits) {
                const int chunks = mkg_chunk_count(k, kc);
                const int kct = mkg_chunk_ktiles(k, kc, 64);
                const int kt = mkg_ceil_div(k, 64);
                const int n_splits = mkg_split_count(split, chunks);
                ASSERT_GE(n_splits, 1);
                ASSERT_LE(n_splits, chunks);
                std::vector<int> chunk_hits(chunks, 0), ktile_hits(kt, 0);
                int expect_c0 = 0;
                for (int s = 0; s < n_splits; ++s) {
                    int c0, c1;
                    mkg_split_range(s, n_splits, chunks, &c0, &c1);
                    ASSERT_EQ(c0, expect_c0) << "splits are contiguous and in chunk order";
                    ASSERT_GT(c1, c0) << "no split is empty";
                    expect_c0 = c1;
                    for (int c = c0; c < c1; ++c) {
                        ++chunk_hits[c];
                        for (int t = c * kct; t < std::min((c + 1) * kct, kt); ++t)
                            ++ktile_hits[t];
                    }
                }
                ASSERT_EQ(expect_c0, chunks);
                for (int h : chunk_hits)
                    ASSERT_EQ(h, 1) << "k=" << k << " kc=" << kc << " split=" << split;
                for (int t = 0; t < kt; ++t)
                    ASSERT_EQ(ktile_hits[t], 1) << "k tile " << t << " k=" << k << " kc=" << kc;
                // Every chunk but the last is exactly kc long; one chunk covers all of K.
                if (chunks == 1)
                    ASSERT_EQ(kct, kt);
                else
                    ASSERT_EQ(kct * 64, kc);
            }
}

TEST(ChunkSplit, MultiplyHighDivisionMatchesDivision)
{
    // mkg_div_split replaces n / d (d = 2 .. MKG_MAX_SPLIT) on the device: every n below 2^21 (units of
    // a grid, split index times chunks), then samples up to its stated bound 2^27.
    for (int d = 2; d <= MKG_MAX_SPLIT; ++d) {
        for (int n = 0; n < (1 << 21); ++n)
            ASSERT_EQ(mkg_div_split(n, d), n / d) << "n=" << n << " d=" << d;
        for (int n = (1 << 21); n < (1 << 27); n += 4093)
            ASSERT_EQ(mkg_div_split(n, d), n / d) << "n=" << n << " d=" << d;
        ASSERT_EQ(mkg_div_split((1 << 27) - 1, d), ((1 << 27) - 1) / d);
    }
}

TEST(ChunkSplit, UnitsCountTilesTimesSplits)
{
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        const mkg_schedule_info *i = mkg_schedule_get(s);
        if (mkg_schedule_cluster_k(s) > 1) {
            // Cluster split-K: CL CTAs per tile whatever the chunks (a layer with fewer chunks than
            // CL is not eligible, mkg_schedule_check), and no workspace: partials meet in shared memory.
            const int t = mkg_ceil_div(1000, i->tile_m) * mkg_ceil_div(2048, i->tile_n);
            EXPECT_EQ(mkg_schedule_units(s, 1000, 2048, 4096, 512), t * i->cluster) << i->name;
            EXPECT_EQ(mkg_schedule_workspace_bytes(s, 1000, 2048, 4096, 512), 0u) << i->name;
            continue;
        }
        const int tiles = mkg_ceil_div(1000, i->tile_m * i->cluster) * i->cluster * mkg_ceil_div(2048, i->tile_n);
        EXPECT_EQ(mkg_schedule_units(s, 1000, 2048, 4096, 0), tiles) << i->name;
        if (i->cluster == 1)
            EXPECT_EQ(mkg_schedule_units(s, 1000, 2048, 4096, 512), tiles * std::min(i->split, 8)) << i->name;
        if (i->split > 1) {
            EXPECT_EQ(mkg_schedule_workspace_bytes(s, 1000, 2048, 4096, 0), 0u) << "one chunk: no split";
            EXPECT_GE(mkg_schedule_workspace_bytes(s, 1000, 2048, 4096, 512),
                      static_cast<size_t>(tiles) * 8 * i->tile_m * i->tile_n * sizeof(float));
        } else {
            EXPECT_EQ(mkg_schedule_workspace_bytes(s, 1000, 2048, 4096, 512), 0u) << i->name;
        }
    }
}
