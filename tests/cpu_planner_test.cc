// cpu_planner_test.cc - M buckets, the cost model's properties, eligibility of
// the picks, and the explain output.
#include <gtest/gtest.h>

#include <string>

#include "mkgemm.h"

namespace {

mkg_layer_desc layer(int n, int k, int kc = 0, mkg_dtype in = MKG_DTYPE_BF16)
{
    mkg_layer_desc l = {};
    l.n = n;
    l.k = k;
    l.in_type = in;
    l.c_type = in == MKG_DTYPE_E4M3 ? MKG_DTYPE_BF16 : in;
    l.a_scale = l.b_scale = 1.0f;
    l.a = reinterpret_cast<const void *>(0x10000);
    l.b = reinterpret_cast<const void *>(0x20000);
    l.c = reinterpret_cast<void *>(0x30000);
    l.lda = l.ldb = k;
    l.ldc = n;
    l.epilogue = MKG_EPI_STORE;
    l.m_max = 8192;
    l.mode = MKG_MODE_INVARIANT;
    l.kc = kc;
    return l;
}

mkg_gpu_info h200()
{
    mkg_gpu_info g = {};
    snprintf(g.name, sizeof g.name, "NVIDIA H200");
    g.sms = 132;
    return g;
}

}  // namespace

TEST(Buckets, EveryBoundary)
{
    EXPECT_EQ(mkg_bucket_of(1), 0);
    EXPECT_EQ(mkg_bucket_upper(0), 1);
    int prev = -1;
    for (int m = 1; m <= 300000; ++m) {
        const int b = mkg_bucket_of(m);
        ASSERT_GE(mkg_bucket_upper(b), m) << m;
        if (b > 0)
            ASSERT_LT(mkg_bucket_upper(b - 1), m) << "bucket " << b << " is the smallest holding " << m;
        ASSERT_TRUE(b == prev || b == prev + 1) << "buckets are contiguous at M=" << m;
        prev = b;
    }
    // Finer at small M: every M up to 4 has its own bucket, then powers of two and midpoints.
    const int uppers[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512};
    for (int b = 0; b < static_cast<int>(sizeof uppers / sizeof uppers[0]); ++b)
        EXPECT_EQ(mkg_bucket_upper(b), uppers[b]);
    EXPECT_EQ(mkg_bucket_count(8192), mkg_bucket_of(8192) + 1);
    EXPECT_LE(mkg_bucket_count(1 << 20), MKG_MAX_BUCKETS);
}

TEST(CostModel, PredictionsAreMonotoneInMAndAboveTheFloors)
{
    const mkg_cost_model cm = mkg_cost_model_h200();
    const int shapes[][2] = {{28672, 4096}, {2048, 2048}, {4096, 14336}, {768, 768}};
    for (const auto &sh : shapes)
        for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
            double prev = 0.0;
            for (int m = 1; m <= 8192; m = m < 8 ? m + 1 : m * 2) {
                const double us = mkg_cost_predict_us(&cm, s, m, sh[0], sh[1], 0, MKG_DTYPE_BF16, MKG_DTYPE_BF16, 132);
                ASSERT_GT(us, 0.0);
                EXPECT_GE(us, prev - 1e-9) << mkg_schedule_get(s)->name << " M=" << m;
                prev = us;
                // Never faster than the chip's MMA rate or than reading the weights once.
                const double flop_us = 2.0 * m * sh[0] * sh[1] / (132 * cm.sm_tflops * 1e6);
                const double weight_us = 2.0 * sh[0] * sh[1] / (cm.dram_tbps * 1e6);
                EXPECT_GE(us, flop_us) << mkg_schedule_get(s)->name;
                EXPECT_GE(us, weight_us) << mkg_schedule_get(s)->name;
            }
        }
    EXPECT_LT(mkg_cost_predict_us(&cm, -1, 1, 1, 1, 0, MKG_DTYPE_BF16, MKG_DTYPE_BF16, 132), 0.0);
}

TEST(CostModel, OneFullWaveIsNeverSlowerThanAPaddedSecondWave)
{
    // With the same schedule, tiles that fit in one wave cost no more than one more tile
    // spilling into a second wave.
    const mkg_cost_model cm = mkg_cost_model_h200();
    const int s = MKG_SCHED_m128n128k64_s6_rm_g8;
    const int n = 128 * 132;                      // one row of tiles = exactly one wave
    const double one = mkg_cost_predict_us(&cm, s, 128, n, 4096, 0, MKG_DTYPE_BF16, MKG_DTYPE_BF16, 132);
    const double two = mkg_cost_predict_us(&cm, s, 129, n, 4096, 0, MKG_DTYPE_BF16, MKG_DTYPE_BF16, 132);
    EXPECT_LT(one, two);
    EXPECT_GT(two, 1.2 * one) << "the padded second wave is a real cost, not noise";
}

TEST(Planner, PicksOnlyEligibleSchedules)
{
    const mkg_cost_model cm = mkg_cost_model_h200();
    const mkg_gpu_info g = h200();
    for (int kc : {0, 1024, 512}) {
        const mkg_layer_desc l = layer(2048, 8192, kc);
        for (int m = 1; m <= 8192; m *= 2) {
            int s = -1;
            ASSERT_EQ(mkg_plan_pick(&cm, &l, &g, m, &s), MKG_OK);
            mkg_layer_desc lk = l;
            lk.kc = kc ? kc : mkg_plan_kc(l.n, l.k, g.sms);
            EXPECT_TRUE(mkg_plan_eligible(&lk, s)) << mkg_schedule_get(s)->name << " kc=" << kc;
            if (kc && kc < l.k)
                EXPECT_LE(mkg_schedule_wgmma_n(s), MKG_CHUNKED_MAX_WN);
        }
    }
}

TEST(Planner, SmallMPrefersNarrowTokenTilesLargeMTheLargestTile)
{
    const mkg_cost_model cm = mkg_cost_model_h200();
    const mkg_gpu_info g = h200();
    const mkg_layer_desc l = layer(8192, 8192);
    int s = -1;
    ASSERT_EQ(mkg_plan_pick(&cm, &l, &g, 8192, &s), MKG_OK);
    EXPECT_GE(mkg_schedule_get(s)->tile_m * mkg_schedule_get(s)->tile_n, 128 * 128) << mkg_schedule_get(s)->name;
    ASSERT_EQ(mkg_plan_pick(&cm, &l, &g, 1, &s), MKG_OK);
    EXPECT_LE(mkg_schedule_get(s)->tile_m, 64) << mkg_schedule_get(s)->name;
}

TEST(Planner, ExplainListsEverySchedulePredictionAndTheReason)
{
    const mkg_cost_model cm = mkg_cost_model_h200();
    const mkg_gpu_info g = h200();
    const mkg_layer_desc l = layer(28672, 4096);
    char buf[16384];
    const int len = mkg_plan_explain(&cm, &l, &g, 512, buf, sizeof buf);
    ASSERT_GT(len, 0);
    ASSERT_LT(len, static_cast<int>(sizeof buf));
    const std::string text(buf);
    for (int s = 0; s < MKG_SCHED_COUNT; ++s)
        EXPECT_NE(text.find(mkg_schedule_get(s)->name), std::string::npos) << mkg_schedule_get(s)->name;
    EXPECT_NE(text.find("<- chosen"), std::string::npos);
    EXPECT_NE(text.find("beats"), std::string::npos);
    int s = -1;
    ASSERT_EQ(mkg_plan_pick(&cm, &l, &g, 512, &s), MKG_OK);
    EXPECT_NE(text.find(std::string("chosen ") + mkg_schedule_get(s)->name), std::string::npos);
    // A short buffer truncates but reports the full length, snprintf style.
    char small[32];
    EXPECT_EQ(mkg_plan_explain(&cm, &l, &g, 512, small, sizeof small), len);
}

TEST(CostModel, OtherInputDtypesAreTheSixteenBitGemmOfTheSameKBytes)
{
    // e4m3 moves half the bytes of bf16 and runs wgmma at twice the rate per element; tf32 the
    // reverse. So an e4m3 layer at K costs what a bf16 layer at K / 2 costs, a tf32 one at 2 K.
    const mkg_cost_model cm = mkg_cost_model_h200();
    const int shapes[][2] = {{28672, 4096}, {2048, 8192}, {768, 768}};
    for (const auto &sh : shapes)
        for (int s = 0; s < MKG_SCHED_COUNT; ++s)
            for (int m : {1, 64, 512, 8192}) {
                const int n = sh[0], k = sh[1];
                EXPECT_DOUBLE_EQ(mkg_cost_predict_us(&cm, s, m, n, k, k, MKG_DTYPE_E4M3, MKG_DTYPE_BF16, 132),
                                 mkg_cost_predict_us(&cm, s, m, n, k / 2, k / 2, MKG_DTYPE_BF16, MKG_DTYPE_BF16, 132))
                    << mkg_schedule_get(s)->name;
                EXPECT_DOUBLE_EQ(mkg_cost_predict_us(&cm, s, m, n, k, k, MKG_DTYPE_FP32, MKG_DTYPE_FP32, 132),
                                 mkg_cost_predict_us(&cm, s, m, n, 2 * k, 2 * k, MKG_DTYPE_BF16, MKG_DTYPE_FP32, 132))
                    << mkg_schedule_get(s)->name;
                // Strictly ordered where the work is more than the fixed costs.
                if (m >= 512)
                    EXPECT_LT(mkg_cost_predict_us(&cm, s, m, n, k, k, MKG_DTYPE_E4M3, MKG_DTYPE_BF16, 132),
                              mkg_cost_predict_us(&cm, s, m, n, k, k, MKG_DTYPE_BF16, MKG_DTYPE_BF16, 132));
            }
    // A chunked layer: the chunk converts with K (e4m3 K 8192 in chunks of 2048 = bf16 4096 in 1024).
    for (int s = 0; s < MKG_SCHED_COUNT; ++s)
        EXPECT_DOUBLE_EQ(mkg_cost_predict_us(&cm, s, 16, 2048, 8192, 2048, MKG_DTYPE_E4M3, MKG_DTYPE_BF16, 132),
                         mkg_cost_predict_us(&cm, s, 16, 2048, 4096, 1024, MKG_DTYPE_BF16, MKG_DTYPE_BF16, 132))
            << mkg_schedule_get(s)->name;
    EXPECT_LT(mkg_cost_predict_us(&cm, 0, 1, 1, 1, 0, MKG_DTYPE_COUNT, MKG_DTYPE_BF16, 132), 0.0);
    EXPECT_LT(mkg_cost_predict_us(&cm, 0, 1, 1, 1 << 30, 0, MKG_DTYPE_FP32, MKG_DTYPE_FP32, 132), 0.0)
        << "2^31 16-bit elements of K do not fit the model's int";
}

TEST(Planner, PicksEligibleSchedulesForTf32AndE4m3Layers)
{
    const mkg_cost_model cm = mkg_cost_model_h200();
    const mkg_gpu_info g = h200();
    // K = 4224: 66 128-byte stage rows in bf16, 33 in e4m3, 132 in fp32. The 128-deep rows (two
    // sub-tiles per stage) need an even number, so eligibility must follow the dtype: e4m3 may
    // never get one, bf16 must at the decode Ms where the model prefers them.
    int deep_bf16 = 0;
    for (mkg_dtype in : {MKG_DTYPE_BF16, MKG_DTYPE_FP32, MKG_DTYPE_E4M3}) {
        const mkg_layer_desc l = layer(4096, 4224, 0, in);
        for (int m = 1; m <= 8192; m *= 2) {
            int s = -1;
            ASSERT_EQ(mkg_plan_pick(&cm, &l, &g, m, &s), MKG_OK) << mkg_dtype_name(in) << " M=" << m;
            ASSERT_GE(s, 0);
            if (in == MKG_DTYPE_E4M3)
                EXPECT_NE(mkg_schedule_get(s)->tile_k, 128) << mkg_schedule_get(s)->name << " M=" << m;
            deep_bf16 += in == MKG_DTYPE_BF16 && mkg_schedule_get(s)->tile_k == 128;
        }
    }
    EXPECT_GT(deep_bf16, 0) << "the 128-deep rows are picked for bf16 at K = 4224 (else the e4m3 check proves nothing)";
    for (mkg_dtype in : {MKG_DTYPE_FP32, MKG_DTYPE_E4M3}) {
        const mkg_layer_desc l = layer(4096, 4096, 0, in);
        char buf[16384];
        const int len = mkg_plan_explain(&cm, &l, &g, 512, buf, sizeof buf);
        ASSERT_GT(len, 0);
        EXPECT_NE(std::string(buf).find("<- chosen"), std::string::npos) << mkg_dtype_name(in);
    }
}

// A block-scaled e4m3 layer: its chunk is the 128-deep scale block whatever K is (never from M),
// and every pick folds chunks (wgmma N <= MKG_CHUNKED_MAX_WN, no ping-pong) and is eligible; the
// 128-deep rows (two 128-element e4m3 sub-tiles per stage) cannot take a one-row chunk.
TEST(Planner, BlockScaledE4m3LayersTakeChunkFoldingRowsOnly)
{
    const mkg_cost_model cm = mkg_cost_model_h200();
    const mkg_gpu_info g = h200();
    for (const int k : {2048, 7168}) {
        mkg_layer_desc l = layer(4096, k, 0, MKG_DTYPE_E4M3);
        l.a_block_scales = l.b_block_scales = reinterpret_cast<const float *>(0x40000);
        l.ld_a_block_scales = l.m_max;
        ASSERT_EQ(mkg_layers_validate(&l, 1, nullptr), MKG_OK) << "K=" << k;
        EXPECT_EQ(mkg_layer_kc(&l, g.sms), MKG_BLOCK_SCALE_K);
        mkg_layer_desc lk = l;
        lk.kc = MKG_BLOCK_SCALE_K;
        for (int m = 1; m <= 8192; m *= 2) {
            int s = -1;
            ASSERT_EQ(mkg_plan_pick(&cm, &l, &g, m, &s), MKG_OK) << "K=" << k << " M=" << m;
            const mkg_schedule_info *i = mkg_schedule_get(s);
            EXPECT_TRUE(mkg_plan_eligible(&lk, s)) << i->name;
            EXPECT_LE(mkg_schedule_wgmma_n(s), MKG_CHUNKED_MAX_WN) << i->name << " M=" << m;
            EXPECT_EQ(i->pingpong, 0) << i->name;
            EXPECT_EQ(i->tile_k, 64) << i->name;
        }
        // The same layer with per-tensor scales and one chunk may take the wide and ping-pong rows.
        const mkg_layer_desc one = layer(4096, k, 0, MKG_DTYPE_E4M3);
        int s = -1;
        ASSERT_EQ(mkg_plan_pick(&cm, &one, &g, 8192, &s), MKG_OK);
        EXPECT_TRUE(mkg_schedule_wgmma_n(s) > MKG_CHUNKED_MAX_WN || mkg_schedule_get(s)->pingpong)
            << "at M = 8192 the one-chunk pick is a wide or ping-pong row (else the check above proves nothing): "
            << mkg_schedule_get(s)->name;
        char buf[16384];
        ASSERT_GT(mkg_plan_explain(&cm, &l, &g, 512, buf, sizeof buf), 0);
        EXPECT_NE(std::string(buf).find("kc=128"), std::string::npos) << buf;
    }
}

// Block-scaled layers: every K chunk step loads and applies scales, and a swap row's thread loads
// the token scales of its wgmma N / 4 column pairs (2 + N / 4 loads, against 3 for the others). On
// the H200 (bench/results/gemm_e4m3_block_0f89b76.json) the swap rows the model used to pick
// measured well behind a non-swap row of the same size: 1B down M = 128 m64n64k64_s12_swap 40.8 us
// against m64n64k64_s6_rn 31.6 us, 1B gate_up M = 64 m64n128k64_s8_swap 20.3 us against
// m64n128k64_s5_rn 14.2 us (v91 in bench/NOTES.md).
TEST(CostModel, BlockScaledSwapRowsPayForTheirTokenScales)
{
    const mkg_cost_model cm = mkg_cost_model_h200();
    const mkg_gpu_info g = h200();
    const int shapes[2][3] = {{2048, 8192, 128}, {16384, 2048, 64}};   // N, K, M
    for (const auto &sh : shapes) {
        mkg_layer_desc l = layer(sh[0], sh[1], 0, MKG_DTYPE_E4M3);
        l.a_block_scales = l.b_block_scales = reinterpret_cast<const float *>(0x40000);
        l.ld_a_block_scales = l.m_max;
        int s = -1;
        ASSERT_EQ(mkg_plan_pick(&cm, &l, &g, sh[2], &s), MKG_OK);
        EXPECT_EQ(mkg_schedule_get(s)->swap_ab, 0) << mkg_schedule_get(s)->name << " N=" << sh[0] << " M=" << sh[2];
    }
}

// A split row stores every K chunk's FP32 partial (TM x TN floats per tile and chunk) and its fold
// reads them back: the model must charge that traffic. Block-scaled e4m3 1B down (N 2048, K 8192,
// kc = 128: 64 chunks) at M = 512 stores 268 MB of partials in m128n128 sk4, measured 264 us
// against 47 us for the unsplit m128n64 (bench/results/gemm_e4m3_block_v23.json); at decode, where
// the partials of a few chunks fit in L2, splitting stays the model's choice.
TEST(CostModel, SplitRowsPayForTheirChunkPartials)
{
    const mkg_cost_model cm = mkg_cost_model_h200();
    const mkg_gpu_info g = h200();
    const int sk4 = mkg_schedule_find("m128n128k64_s6_rn_g8_sk4"), one = mkg_schedule_find("m128n128k64_s6_rn_g8");
    ASSERT_GE(sk4, 0);
    ASSERT_GE(one, 0);
    const double split = mkg_cost_predict_us(&cm, sk4, 512, 2048, 8192, 128, MKG_DTYPE_E4M3, MKG_DTYPE_BF16, 132);
    const double whole = mkg_cost_predict_us(&cm, one, 512, 2048, 8192, 128, MKG_DTYPE_E4M3, MKG_DTYPE_BF16, 132);
    EXPECT_GT(split, 2.0 * whole) << "268 MB of partials written and read back";
    mkg_layer_desc l = layer(2048, 8192, 0, MKG_DTYPE_E4M3);
    l.a_block_scales = l.b_block_scales = reinterpret_cast<const float *>(0x40000);
    l.ld_a_block_scales = l.m_max;
    for (int m : {256, 512, 1024, 8192}) {
        int s = -1;
        ASSERT_EQ(mkg_plan_pick(&cm, &l, &g, m, &s), MKG_OK);
        EXPECT_EQ(mkg_schedule_get(s)->split, 1) << mkg_schedule_get(s)->name << " M=" << m;
    }
    // Decode with the decode chunk policy (1B down: four chunks of 2048): a split row still wins.
    const mkg_layer_desc d = layer(2048, 8192, mkg_plan_kc_decode(2048, 8192, g.sms));
    ASSERT_LT(d.kc, d.k);
    int s = -1;
    ASSERT_EQ(mkg_plan_pick(&cm, &d, &g, 1, &s), MKG_OK);
    EXPECT_GT(mkg_schedule_get(s)->split, 1) << mkg_schedule_get(s)->name;
}
