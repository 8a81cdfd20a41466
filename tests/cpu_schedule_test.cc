// cpu_schedule_test.cc - the schedule table: names, metadata, coverage of the
// tile shapes the product needs, and the launch-wide shared-memory budget.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "mkg_plan.h"
#include "mkgemm.h"

TEST(Schedules, NamesAreUniqueAndFindable)
{
    std::set<std::string> names;
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        const mkg_schedule_info *i = mkg_schedule_get(s);
        ASSERT_NE(i, nullptr);
        EXPECT_TRUE(names.insert(i->name).second) << i->name;
        EXPECT_EQ(mkg_schedule_find(i->name), s);
    }
    EXPECT_EQ(mkg_schedule_get(-1), nullptr);
    EXPECT_EQ(mkg_schedule_get(MKG_SCHED_COUNT), nullptr);
    EXPECT_EQ(mkg_schedule_find("no_such_schedule"), -1);
    EXPECT_EQ(mkg_schedule_find(nullptr), -1);
}

TEST(Schedules, NameSpellsOutTheParameters)
{
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        const mkg_schedule_info *i = mkg_schedule_get(s);
        std::string want = "m" + std::to_string(i->tile_m) + "n" + std::to_string(i->tile_n) + "k" +
                           std::to_string(i->tile_k) + "_s" + std::to_string(i->stages) +
                           (i->swap_ab ? "_swap" : "") + (i->raster == MKG_RASTER_M ? "_rm" : "_rn") + "_g" +
                           std::to_string(i->group) + (i->split > 1 ? "_sk" + std::to_string(i->split) : "") +
                           (i->cluster > 1 ? "_c" + std::to_string(i->cluster) : "") + (i->pingpong ? "_pp" : "");
        EXPECT_EQ(want, i->name);
    }
}

TEST(Schedules, EveryRowFitsTheLaunchShape)
{
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        const mkg_schedule_info *i = mkg_schedule_get(s);
        const int stage_bytes = (i->tile_m + i->tile_n) * i->tile_k * 2;
        EXPECT_LE(i->stages * stage_bytes, MKG_LAUNCH_RING_BYTES) << i->name;
        EXPECT_GE(i->stages, 3) << i->name;
        EXPECT_LE(i->stages, MKG_LAUNCH_MAX_STAGES) << i->name;
        EXPECT_TRUE(i->tile_k == 64 || i->tile_k == 128) << i->name << ": one or two 128-byte K sub-tiles";
        const bool ck = mkg_schedule_cluster_k(s) > 1;     // cluster split-K row
        if (i->tile_k == 128) {
            EXPECT_TRUE(i->cluster == 1 || ck) << i->name << ": no multicast cluster";
            EXPECT_EQ(i->pingpong, 0) << i->name;
            if (!ck)
                EXPECT_FALSE(mkg_schedule_shipped_only(s)) << i->name << ": dispatch tables and megakernels run them";
        }
        EXPECT_GE(mkg_box_class(i->tile_m), 0) << i->name;
        EXPECT_GE(mkg_box_class(i->tile_n), 0) << i->name;
        const int p = i->swap_ab ? i->tile_n : i->tile_m;
        EXPECT_TRUE(p == 64 || p == 128) << i->name;
        if (i->split > 1)
            EXPECT_LE(mkg_schedule_wgmma_n(s), MKG_CHUNKED_MAX_WN) << i->name << ": a split row must handle chunks";
        EXPECT_GE(i->cluster, 1) << i->name;
        EXPECT_LE(i->cluster, MKG_LAUNCH_MAX_CLUSTER) << i->name;
        if (ck) {
            EXPECT_EQ(i->swap_ab, 1) << i->name;
            EXPECT_EQ(i->split, i->cluster) << i->name << ": one split per CTA of the cluster";
            EXPECT_EQ(i->pingpong, 0) << i->name;
            EXPECT_TRUE(mkg_schedule_shipped_only(s)) << i->name << ": a cluster launch";
            // Rank > 0 keeps a chunk's partial (2 warpgroups x 64 x WN fp32) past its ring.
            const int ring = i->stages * stage_bytes;
            EXPECT_LE(ring + 2 * 64 * mkg_schedule_wgmma_n(s) * 4, MKG_LAUNCH_RING_BYTES + MKG_LAUNCH_EPI_BYTES)
                << i->name;
        } else if (i->cluster > 1) {
            EXPECT_EQ(i->split, 1) << i->name;
            EXPECT_EQ(i->swap_ab, 0) << i->name;
            EXPECT_EQ(i->tile_n % (8 * i->cluster), 0) << i->name << ": each CTA multicasts whole swizzle atoms";
            EXPECT_GE(mkg_box_class(i->tile_n / i->cluster), 0) << i->name << ": B box of TN / CL rows";
        }
        EXPECT_TRUE(i->pingpong == 0 || i->pingpong == 1) << i->name;
        if (i->pingpong) {
            EXPECT_EQ(i->tile_m, 128) << i->name << ": a ping-pong warpgroup covers both m64 halves";
            EXPECT_EQ(i->swap_ab, 0) << i->name;
            EXPECT_EQ(i->split, 1) << i->name;
            EXPECT_EQ(i->cluster, 1) << i->name;
            EXPECT_FALSE(mkg_schedule_shipped_only(s)) << i->name << ": one-chunk dispatch kernels run them";
            // TN accumulators per thread (two m64 halves of TN / 2 each): 192 is the most that
            // ptxas fits in the 232-register consumers without spilling (n192 ping-pong: 0 bytes).
            EXPECT_LE(i->tile_n, 192) << i->name << ": TN accumulators per thread";
        }
    }
    EXPECT_LE(MKG_LAUNCH_SMEM_BYTES, 227 * 1024);
}

TEST(Schedules, TableCoversTheRequiredShapes)
{
    std::set<int> tm, tn, stages, rasters, swap_widths;
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        const mkg_schedule_info *i = mkg_schedule_get(s);
        tm.insert(i->tile_m);
        tn.insert(i->tile_n);
        stages.insert(i->stages);
        rasters.insert(i->raster);
        if (i->swap_ab)
            swap_widths.insert(i->tile_m);
    }
    EXPECT_GE(MKG_SCHED_COUNT, 8);
    for (int v : {64, 128})
        EXPECT_TRUE(tm.count(v)) << "TILE_M " << v;
    for (int v : {64, 128, 192, 256})
        EXPECT_TRUE(tn.count(v)) << "TILE_N " << v;
    for (int v : {3, 4, 5, 6})
        EXPECT_TRUE(stages.count(v)) << "STAGES " << v;
    EXPECT_EQ(rasters.size(), 2u);
    for (int v : {8, 16, 32, 64})
        EXPECT_TRUE(swap_widths.count(v)) << "swap_ab token width " << v;
}

TEST(Schedules, BoxClassesRoundTrip)
{
    for (int c = 0; c < MKG_BOX_CLASSES; ++c)
        EXPECT_EQ(mkg_box_class(mkg_box_rows(c)), c);
    EXPECT_EQ(mkg_box_class(48), -1);
}

TEST(Planner, KcDependsOnNAndKOnlyAndIsAValidChunk)
{
    // The public LLM layers (N, K): every KC is K or a multiple of 128 of at least
    // MKG_PLAN_MIN_KC; narrow, long layers are chunked, the rest keep one chunk.
    const int layers[][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}, {3072, 2048},
                             {2048, 2048}, {16384, 2048}, {2048, 8192}, {768, 768}, {8192, 8192}};
    for (const auto &l : layers) {
        const int n = l[0], k = l[1];
        EXPECT_EQ(mkg_plan_kc(n, k, 132), k) << "invariant mode keeps one chunk (see mkg_plan.h)";
        const int kc = mkg_plan_kc_decode(n, k, 132);
        // A multiple of 128: a whole 128-byte stage row for every input dtype (128 e4m3 elements).
        EXPECT_TRUE(kc == k || (kc % 128 == 0 && kc >= MKG_PLAN_MIN_KC && kc < k)) << n << "x" << k << " kc " << kc;
        const int tiles = mkg_ceil_div(n, MKG_PLAN_DECODE_ROWS);
        if (4 * tiles >= 132 || k < 3 * MKG_PLAN_MIN_KC)
            EXPECT_EQ(kc, k) << "wide or short layers keep one chunk";
        else
            EXPECT_GE(mkg_chunk_count(k, kc), 2) << n << "x" << k << " narrow long layers are chunked";
    }
}

TEST(Planner, ClusterKcSplitsNarrowLayersIntoTwoOrFourWholeChunksInOneWave)
{
    // (N, K, want KC) on 132 SMs: tiles of MKG_PLAN_DECODE_ROWS weight rows times chunks fit one
    // wave, chunks at least MKG_PLAN_CLUSTER_MIN_KC deep and dividing K; four before two.
    const int layers[][3] = {{3072, 2048, 1024},  {2048, 2048, 1024}, {2048, 8192, 2048}, {4096, 4096, 2048},
                             {4096, 14336, 7168}, {6144, 4096, 4096}, {28672, 4096, 4096}, {16384, 2048, 2048},
                             {2048, 1024, 1024},  {2048, 1000, 1000}, {64, 4096, 1024},  {2048, 4608, 2304}};
    for (const auto &l : layers) {
        const int n = l[0], k = l[1];
        const int kc = mkg_plan_kc_cluster(n, k, 132);
        EXPECT_EQ(kc, l[2]) << n << "x" << k;
        const int chunks = mkg_chunk_count(k, kc);
        EXPECT_TRUE(chunks == 1 || chunks == 2 || chunks == 4) << n << "x" << k;
        if (chunks > 1) {
            EXPECT_EQ(k % kc, 0) << n << "x" << k << ": whole chunks, none short";
            EXPECT_EQ(kc % 256, 0) << n << "x" << k << ": an even number of 128-element e4m3 stage rows";
            EXPECT_GE(kc, MKG_PLAN_CLUSTER_MIN_KC) << n << "x" << k;
            EXPECT_LE(mkg_ceil_div(n, MKG_PLAN_DECODE_ROWS) * chunks, 132) << n << "x" << k << ": one wave";
        }
    }
    // Half the SMs: fewer layers fit two or four chunks in one wave.
    const int half[][3] = {{3072, 2048, 2048}, {2048, 2048, 1024}, {2048, 8192, 4096}, {4096, 4096, 4096},
                           {1024, 8192, 2048}, {2048, 4608, 2304}};
    for (const auto &l : half)
        EXPECT_EQ(mkg_plan_kc_cluster(l[0], l[1], 66), l[2]) << l[0] << "x" << l[1] << " on 66 SMs";
}
