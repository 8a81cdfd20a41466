// cpu_validate_test.cc - every bad descriptor returns its own status, and the
// API returns it before touching CUDA (on a machine without a GPU a call that
// reached CUDA would answer MKG_ERR_NO_DEVICE instead).
#include <gtest/gtest.h>

#include <cmath>

#include <set>

#include "mkgemm.h"

namespace {

// A valid descriptor whose pointers are aligned fakes: validation never dereferences them.
mkg_gemm_desc valid_desc()
{
    mkg_gemm_desc d = {};
    d.m = 100;
    d.n = 200;
    d.k = 64;
    d.a_type = MKG_DTYPE_BF16;
    d.b_type = MKG_DTYPE_BF16;
    d.c_type = MKG_DTYPE_BF16;
    d.a = reinterpret_cast<const void *>(0x10000);
    d.b = reinterpret_cast<const void *>(0x20000);
    d.c = reinterpret_cast<void *>(0x30000);
    d.lda = 64;
    d.ldb = 64;
    d.ldc = 200;
    d.epilogue = MKG_EPI_STORE;
    return d;
}

// e4m3 with valid block scales (fakes: validation never dereferences them).
void set_block_scaled(mkg_gemm_desc *d)
{
    d->a_type = d->b_type = MKG_DTYPE_E4M3;
    d->a_scale = d->b_scale = 1.0f;
    d->k = 512;
    d->lda = d->ldb = 512;
    d->kc = 128;
    d->a_block_scales = reinterpret_cast<const float *>(0x40000);
    d->ld_a_block_scales = d->m;
    d->b_block_scales = reinterpret_cast<const float *>(0x50000);
}

struct BadCase {
    const char *what;
    void (*mutate)(mkg_gemm_desc *);
    mkg_status expect;
};

const BadCase kBad[] = {
    {"M = 0", [](mkg_gemm_desc *d) { d->m = 0; }, MKG_ERR_BAD_M},
    {"M < 0", [](mkg_gemm_desc *d) { d->m = -3; }, MKG_ERR_BAD_M},
    {"N = 0", [](mkg_gemm_desc *d) { d->n = 0; }, MKG_ERR_BAD_N},
    {"K = 0", [](mkg_gemm_desc *d) { d->k = 0; }, MKG_ERR_BAD_K},
    {"K < 0", [](mkg_gemm_desc *d) { d->k = -8; }, MKG_ERR_BAD_K},
    {"K = 60 (not a multiple of 8)", [](mkg_gemm_desc *d) { d->k = 60; d->lda = d->ldb = 64; }, MKG_ERR_K_ALIGN},
    {"A fp32, B bf16", [](mkg_gemm_desc *d) { d->a_type = MKG_DTYPE_FP32; }, MKG_ERR_DTYPE_MISMATCH},
    {"A dtype out of range", [](mkg_gemm_desc *d) { d->a_type = (mkg_dtype)77; }, MKG_ERR_BAD_IN_DTYPE},
    {"A bf16, B fp16", [](mkg_gemm_desc *d) { d->b_type = MKG_DTYPE_FP16; }, MKG_ERR_DTYPE_MISMATCH},
    {"C dtype out of range", [](mkg_gemm_desc *d) { d->c_type = (mkg_dtype)9; }, MKG_ERR_BAD_OUT_DTYPE},
    {"epilogue out of range", [](mkg_gemm_desc *d) { d->epilogue = (mkg_epilogue)5; }, MKG_ERR_BAD_EPILOGUE},
    {"lda > 2^31-1", [](mkg_gemm_desc *d) { d->lda = 1LL << 33; }, MKG_ERR_DIM_TOO_LARGE},
    {"A NULL", [](mkg_gemm_desc *d) { d->a = nullptr; }, MKG_ERR_NULL_A},
    {"B NULL", [](mkg_gemm_desc *d) { d->b = nullptr; }, MKG_ERR_NULL_B},
    {"C NULL", [](mkg_gemm_desc *d) { d->c = nullptr; }, MKG_ERR_NULL_C},
    {"A misaligned", [](mkg_gemm_desc *d) { d->a = reinterpret_cast<const void *>(0x10008); }, MKG_ERR_MISALIGNED_A},
    {"B misaligned", [](mkg_gemm_desc *d) { d->b = reinterpret_cast<const void *>(0x20002); }, MKG_ERR_MISALIGNED_B},
    {"C misaligned", [](mkg_gemm_desc *d) { d->c = reinterpret_cast<void *>(0x30004); }, MKG_ERR_MISALIGNED_C},
    {"lda < K", [](mkg_gemm_desc *d) { d->lda = 56; }, MKG_ERR_LDA_TOO_SMALL},
    {"lda not 16-byte multiple", [](mkg_gemm_desc *d) { d->lda = 68; }, MKG_ERR_LDA_ALIGN},
    {"ldb < K", [](mkg_gemm_desc *d) { d->ldb = 8; }, MKG_ERR_LDB_TOO_SMALL},
    {"ldb not 16-byte multiple", [](mkg_gemm_desc *d) { d->ldb = 65; }, MKG_ERR_LDB_ALIGN},
    {"ldc < N", [](mkg_gemm_desc *d) { d->ldc = 199; }, MKG_ERR_LDC_TOO_SMALL},
    {"ldc not 16-byte multiple (bf16)", [](mkg_gemm_desc *d) { d->ldc = 204; }, MKG_ERR_LDC_ALIGN},
    {"ldc not 16-byte multiple (fp32)", [](mkg_gemm_desc *d) { d->c_type = MKG_DTYPE_FP32; d->ldc = 202; },
     MKG_ERR_LDC_ALIGN},
    {"tf32: K = 6 (24 bytes)", [](mkg_gemm_desc *d) { d->a_type = d->b_type = MKG_DTYPE_FP32; d->k = 6; },
     MKG_ERR_K_ALIGN},
    {"tf32: lda 66 (264 bytes)", [](mkg_gemm_desc *d) { d->a_type = d->b_type = MKG_DTYPE_FP32; d->lda = 66; },
     MKG_ERR_LDA_ALIGN},
    {"kc < 0", [](mkg_gemm_desc *d) { d->kc = -64; }, MKG_ERR_BAD_KC},
    {"kc not a multiple of 64", [](mkg_gemm_desc *d) { d->k = 256; d->lda = d->ldb = 256; d->kc = 100; },
     MKG_ERR_BAD_KC},
    {"e4m3: K = 8 (8 bytes)",
     [](mkg_gemm_desc *d) { d->a_type = d->b_type = MKG_DTYPE_E4M3; d->a_scale = d->b_scale = 1.0f; d->k = 8; },
     MKG_ERR_K_ALIGN},
    {"e4m3: lda 72 (72 bytes)",
     [](mkg_gemm_desc *d) { d->a_type = d->b_type = MKG_DTYPE_E4M3; d->a_scale = d->b_scale = 1.0f; d->lda = 72; },
     MKG_ERR_LDA_ALIGN},
    {"e4m3: kc 64 (half a 128-element stage)",
     [](mkg_gemm_desc *d) {
         d->a_type = d->b_type = MKG_DTYPE_E4M3;
         d->a_scale = d->b_scale = 1.0f;
         d->k = 256;
         d->lda = d->ldb = 256;
         d->kc = 64;
     },
     MKG_ERR_BAD_KC},
    {"e4m3: a_scale 0 (left unset)", [](mkg_gemm_desc *d) { d->a_type = d->b_type = MKG_DTYPE_E4M3; d->b_scale = 1.0f; },
     MKG_ERR_BAD_SCALE},
    {"e4m3: b_scale NaN",
     [](mkg_gemm_desc *d) { d->a_type = d->b_type = MKG_DTYPE_E4M3; d->a_scale = 1.0f; d->b_scale = NAN; },
     MKG_ERR_BAD_SCALE},
    {"e4m3: b_scale Inf",
     [](mkg_gemm_desc *d) { d->a_type = d->b_type = MKG_DTYPE_E4M3; d->a_scale = 1.0f; d->b_scale = INFINITY; },
     MKG_ERR_BAD_SCALE},
    {"e4m3: scale product overflows",
     [](mkg_gemm_desc *d) { d->a_type = d->b_type = MKG_DTYPE_E4M3; d->a_scale = 1e30f; d->b_scale = 1e30f; },
     MKG_ERR_BAD_SCALE},
    {"C e4m3 (fp8 is an input dtype only)", [](mkg_gemm_desc *d) { d->c_type = MKG_DTYPE_E4M3; },
     MKG_ERR_BAD_OUT_DTYPE},
    {"block scales on bf16 inputs",
     [](mkg_gemm_desc *d) {
         set_block_scaled(d);
         d->a_type = d->b_type = MKG_DTYPE_BF16;
     },
     MKG_ERR_BAD_BLOCK_SCALES},
    {"block scales: only the activation scales", [](mkg_gemm_desc *d) { set_block_scaled(d); d->b_block_scales = nullptr; },
     MKG_ERR_BAD_BLOCK_SCALES},
    {"block scales: only the weight scales", [](mkg_gemm_desc *d) { set_block_scaled(d); d->a_block_scales = nullptr; },
     MKG_ERR_BAD_BLOCK_SCALES},
    {"block scales: activation scales misaligned",
     [](mkg_gemm_desc *d) {
         set_block_scaled(d);
         d->a_block_scales = reinterpret_cast<const float *>(0x40002);
     },
     MKG_ERR_BAD_BLOCK_SCALES},
    {"block scales: ld_a_block_scales < M", [](mkg_gemm_desc *d) { set_block_scaled(d); d->ld_a_block_scales = d->m - 1; },
     MKG_ERR_BAD_BLOCK_SCALES},
    {"block scales: kc 256 (the K block is 128)", [](mkg_gemm_desc *d) { set_block_scaled(d); d->kc = 256; },
     MKG_ERR_BAD_BLOCK_SCALES},
    {"block scales: kc 0 (one chunk)", [](mkg_gemm_desc *d) { set_block_scaled(d); d->kc = 0; },
     MKG_ERR_BAD_BLOCK_SCALES},
    {"block scales with a dependency wait (scales are read before it)",
     [](mkg_gemm_desc *d) {
         set_block_scaled(d);
         d->deps.wait = reinterpret_cast<const unsigned int *>(0x60000);
         d->deps.stall = reinterpret_cast<unsigned int *>(0x70000);
     },
     MKG_ERR_BAD_BLOCK_SCALES},
    {"deps.flags: a bit that is not an MKG_DEPS_*", [](mkg_gemm_desc *d) { d->deps.flags = 32u; },
     MKG_ERR_DEPS_FLAGS},
    {"deps.flags: a bit above the L2-tail field", [](mkg_gemm_desc *d) { d->deps.flags = 0x1000000u; },
     MKG_ERR_DEPS_FLAGS},
};

// Rows that run one K chunk with a plain store only: cluster rows (a cluster launch) and
// ping-pong rows (cooperative consumers fold chunks).
bool one_chunk_only(int s)
{
    return mkg_schedule_shipped_only(s) || mkg_schedule_get(s)->pingpong;
}

}  // namespace

TEST(Validate, ValidDescriptorPasses)
{
    mkg_gemm_desc d = valid_desc();
    EXPECT_EQ(mkg_gemm_validate(&d), MKG_OK);
    d.c_type = MKG_DTYPE_FP32;
    d.ldc = 204;                               // 816 bytes: a 16-byte multiple for fp32
    EXPECT_EQ(mkg_gemm_validate(&d), MKG_OK);
    d.a_type = d.b_type = MKG_DTYPE_FP16;
    d.k = 8;                                   // smallest K: 16 bytes
    EXPECT_EQ(mkg_gemm_validate(&d), MKG_OK);
    d.a_type = d.b_type = MKG_DTYPE_FP32;      // tf32 math
    d.k = 4;                                   // smallest fp32 K: 16 bytes
    EXPECT_EQ(mkg_gemm_validate(&d), MKG_OK);
    d.a_type = d.b_type = MKG_DTYPE_E4M3;      // FP8 with per-tensor scales
    d.a_scale = 0.5f;
    d.b_scale = -3.0f;
    d.k = 16;                                  // smallest e4m3 K: 16 bytes
    d.kc = 0;
    EXPECT_EQ(mkg_gemm_validate(&d), MKG_OK);
    d.k = 512;
    d.lda = d.ldb = 528;
    d.kc = 256;                                // two 128-element stages
    EXPECT_EQ(mkg_gemm_validate(&d), MKG_OK);
    set_block_scaled(&d);                      // FP8 block scales, kc = 128
    EXPECT_EQ(mkg_gemm_validate(&d), MKG_OK);
    d.k = d.lda = d.ldb = 64;                  // one K block, shorter than 128
    EXPECT_EQ(mkg_gemm_validate(&d), MKG_OK);
    d = valid_desc();                          // every known dependency flag, the pre-stage and tail fields full
    d.deps.flags = MKG_DEPS_KNOWN;
    EXPECT_EQ(mkg_gemm_validate(&d), MKG_OK);
}

TEST(Validate, NullDescriptor)
{
    EXPECT_EQ(mkg_gemm_validate(nullptr), MKG_ERR_NULL_DESC);
    EXPECT_EQ(mkg_gemm(nullptr, 0, 0), MKG_ERR_NULL_DESC);
}

TEST(Validate, EveryBadInputHasItsOwnStatus)
{
    std::set<int> seen;
    for (const BadCase &c : kBad) {
        mkg_gemm_desc d = valid_desc();
        c.mutate(&d);
        EXPECT_EQ(mkg_gemm_validate(&d), c.expect)
            << c.what << ": got " << mkg_status_name(mkg_gemm_validate(&d));
        seen.insert(c.expect);
    }
    // Every validation status above is distinct from the others and from MKG_OK.
    EXPECT_EQ(seen.count(MKG_OK), 0u);
    EXPECT_EQ(seen.size(), 25u);    // 25 distinct reasons
}

TEST(Validate, ApiReturnsValidationStatusBeforeTouchingCuda)
{
    for (const BadCase &c : kBad) {
        mkg_gemm_desc d = valid_desc();
        c.mutate(&d);
        EXPECT_EQ(mkg_gemm(&d, MKG_SCHED_m128n256k64_s4_rm_g8, 0), c.expect) << c.what;
        mkg_gemm_op *op = reinterpret_cast<mkg_gemm_op *>(0x1);
        EXPECT_EQ(mkg_gemm_create(&d, &op), c.expect) << c.what;
        EXPECT_EQ(op, nullptr) << c.what;
        mkg_gemm_params p;
        EXPECT_EQ(mkg_gemm_encode_params(&d, &p), c.expect) << c.what;
    }
}

TEST(Validate, UnknownScheduleIsRejectedBeforeCuda)
{
    mkg_gemm_desc d = valid_desc();
    EXPECT_EQ(mkg_schedule_check(&d, -1), MKG_ERR_UNKNOWN_SCHEDULE);
    EXPECT_EQ(mkg_schedule_check(&d, MKG_SCHED_COUNT), MKG_ERR_UNKNOWN_SCHEDULE);
    EXPECT_EQ(mkg_gemm(&d, MKG_SCHED_COUNT, 0), MKG_ERR_UNKNOWN_SCHEDULE);
    EXPECT_EQ(mkg_gemm(&d, -7, 0), MKG_ERR_UNKNOWN_SCHEDULE);
    d.k = d.lda = d.ldb = 128;                 // two 64-deep K tiles: every row runs it, but one chunk
    for (int s = 0; s < MKG_SCHED_COUNT; ++s)  // is too few for the cluster split-K rows
        EXPECT_EQ(mkg_schedule_check(&d, s), mkg_schedule_cluster_k(s) > 1 ? MKG_ERR_SCHEDULE_INELIGIBLE : MKG_OK)
            << mkg_schedule_get(s)->name;
}

// Rows with two K sub-tiles per stage run K in an even number of 128-byte K tiles only (the
// same k16 steps as the one-sub-tile rows, zero padding included); anything else gets its own
// status. bf16 and e4m3 (the sub-tile is 128 bytes of K for every dtype).
TEST(Validate, TwoSubTileRowsNeedAnEvenNumberOfKTiles)
{
    int deep = 0;
    for (const mkg_dtype t : {MKG_DTYPE_BF16, MKG_DTYPE_E4M3}) {
        const int per_tile = t == MKG_DTYPE_E4M3 ? 128 : 64;
        mkg_gemm_desc d = valid_desc();
        d.a_type = d.b_type = t;
        if (t == MKG_DTYPE_E4M3)
            d.a_scale = d.b_scale = 1.0f;
        for (int tiles_x8 : {1, 8, 9, 16, 17, 24, 25, 512, 513}) {   // K in eighths of a tile
            d.k = tiles_x8 * per_tile / 8;
            d.lda = d.ldb = (d.k + 15) / 16 * 16;
            ASSERT_EQ(mkg_gemm_validate(&d), MKG_OK) << "K=" << d.k;
            const bool even = ((d.k + per_tile - 1) / per_tile) % 2 == 0;
            for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
                const bool two = mkg_schedule_get(s)->tile_k == 128;
                deep += two && tiles_x8 == 1;
                // One chunk: cluster split-K rows need a chunk per CTA of the cluster.
                const mkg_status ok = mkg_schedule_cluster_k(s) > 1 ? MKG_ERR_SCHEDULE_INELIGIBLE : MKG_OK;
                EXPECT_EQ(mkg_schedule_check(&d, s), two && !even ? MKG_ERR_SCHEDULE_K_DEPTH : ok)
                    << mkg_schedule_get(s)->name << " K=" << d.k;
            }
        }
    }
    EXPECT_GT(deep, 0) << "the table has no two-sub-tile row";
}

TEST(Validate, ChunkedKNeedsAChunkCapableSchedule)
{
    mkg_gemm_desc d = valid_desc();
    d.k = 4096;
    d.lda = d.ldb = 4096;
    d.kc = 4096;                               // one chunk: every row runs it but the cluster split-K
    for (int s = 0; s < MKG_SCHED_COUNT; ++s)  // rows, which need a chunk per CTA
        EXPECT_EQ(mkg_schedule_check(&d, s), mkg_schedule_cluster_k(s) > 1 ? MKG_ERR_SCHEDULE_INELIGIBLE : MKG_OK)
            << mkg_schedule_get(s)->name;
    d.kc = 1024;                               // four chunks: rows with wgmma N > 128 cannot fold them,
    for (int s = 0; s < MKG_SCHED_COUNT; ++s)  // and cluster and ping-pong rows run one chunk, but cluster split-K
        EXPECT_EQ(mkg_schedule_check(&d, s),
                  mkg_schedule_cluster_k(s) == 1 &&
                          (mkg_schedule_wgmma_n(s) > MKG_CHUNKED_MAX_WN || one_chunk_only(s))
                      ? MKG_ERR_SCHEDULE_INELIGIBLE
                      : MKG_OK)
            << mkg_schedule_get(s)->name;
    // Chunks of three 64-deep tiles: a two-sub-tile stage would straddle every other chunk edge.
    int deep = 0;
    d.kc = 192;
    ASSERT_EQ(mkg_gemm_validate(&d), MKG_OK);
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        const bool two = mkg_schedule_get(s)->tile_k == 128;
        deep += two;
        EXPECT_EQ(mkg_schedule_check(&d, s),
                  two ? MKG_ERR_SCHEDULE_K_DEPTH
                  : mkg_schedule_wgmma_n(s) > MKG_CHUNKED_MAX_WN || one_chunk_only(s)
                      ? MKG_ERR_SCHEDULE_INELIGIBLE
                      : MKG_OK)
            << mkg_schedule_get(s)->name << " kc=192";
    }
    EXPECT_GT(deep, 0) << "the table has no two-sub-tile row";
    d.kc = 64;
    EXPECT_EQ(mkg_gemm_validate(&d), MKG_OK);
    d.kc = 8192;                               // >= K: one chunk
    EXPECT_EQ(mkg_gemm_validate(&d), MKG_OK);
    set_block_scaled(&d);                      // block scales: chunk-capable rows only, even at one chunk
    d.k = d.lda = d.ldb = 128;
    ASSERT_EQ(mkg_gemm_validate(&d), MKG_OK);
    // One 128-deep e4m3 tile: an odd count of K tiles for the two-sub-tile rows.
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        const bool chunk_row = mkg_schedule_wgmma_n(s) <= MKG_CHUNKED_MAX_WN && !one_chunk_only(s);
        const mkg_status want = mkg_schedule_get(s)->tile_k == 128 ? MKG_ERR_SCHEDULE_K_DEPTH
                                : chunk_row                        ? MKG_OK
                                                                   : MKG_ERR_SCHEDULE_INELIGIBLE;
        EXPECT_EQ(mkg_schedule_check(&d, s), want) << mkg_schedule_get(s)->name << " with block scales";
    }
}

// Rows with wgmma N > 128 do not fold chunks. A fused epilogue or a dependency count takes them
// only on a layer of one chunk without block scales that counts megakernel dependencies (the
// megakernel's dispatcher, built with MKG_DISPATCH_WIDE, runs those); ping-pong and cluster rows
// never.
TEST(Validate, WideRowsTakeFusedEpiloguesOnlyOnMegakernelLayersOfOneChunk)
{
    mkg_gemm_desc d = valid_desc();
    d.k = d.lda = d.ldb = 2048;
    d.kc = 2048;
    int wide = 0;
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        if (mkg_schedule_cluster_k(s) > 1)
            continue;                                  // cluster split-K: ClusterSplitK... below
        const bool is_wide = mkg_schedule_wgmma_n(s) > MKG_CHUNKED_MAX_WN;
        wide += is_wide && !one_chunk_only(s);
        const char *name = mkg_schedule_get(s)->name;
        d.kc = 2048;
        d.deps = mkg_gemm_deps{};
        d.epilogue = MKG_EPI_RESIDUAL;                 // fused, outside a megakernel
        d.aux = reinterpret_cast<const void *>(0x50000);
        d.ld_aux = d.ldc;
        ASSERT_EQ(mkg_gemm_validate(&d), MKG_OK);
        EXPECT_EQ(mkg_schedule_check(&d, s),
                  is_wide || one_chunk_only(s) ? MKG_ERR_SCHEDULE_INELIGIBLE : MKG_OK) << name << " residual";
        d.deps.done = reinterpret_cast<unsigned int *>(0x40000);   // the same in a megakernel
        EXPECT_EQ(mkg_schedule_check(&d, s), one_chunk_only(s) ? MKG_ERR_SCHEDULE_INELIGIBLE : MKG_OK)
            << name << " residual, counted";
        d.epilogue = MKG_EPI_STORE;                    // a plain store that counts
        d.aux = nullptr;
        d.ld_aux = 0;
        EXPECT_EQ(mkg_schedule_check(&d, s), one_chunk_only(s) ? MKG_ERR_SCHEDULE_INELIGIBLE : MKG_OK)
            << name << " counted";
        d.kc = 1024;                                   // two chunks: the fold rows only
        EXPECT_EQ(mkg_schedule_check(&d, s),
                  is_wide || one_chunk_only(s) ? MKG_ERR_SCHEDULE_INELIGIBLE : MKG_OK) << name << " two chunks";
    }
    EXPECT_GE(wide, 2) << "the table has cooperative rows with wgmma N > 128 (m128n256, m128n192)";
}

// Cluster split-K rows: at least one chunk per CTA of the cluster, a peer's chunk partials fit
// past its ring (2 warpgroups x 64 x WN fp32 per chunk), and no megakernel dependencies.
TEST(Validate, ClusterSplitKNeedsAChunkPerCtaAndRoomForPartials)
{
    mkg_gemm_desc d = valid_desc();
    d.k = d.lda = d.ldb = 4096;
    int rows = 0;
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        const int cl = mkg_schedule_cluster_k(s);
        if (cl == 1)
            continue;
        ++rows;
        const mkg_schedule_info *i = mkg_schedule_get(s);
        const int ring = i->stages * (i->tile_m + i->tile_n) * i->tile_k * 2;
        const int room = (MKG_LAUNCH_RING_BYTES + MKG_LAUNCH_EPI_BYTES - ring) / (2 * 64 * mkg_schedule_wgmma_n(s) * 4);
        for (int chunks : {1, 2, 4, 8, 16, 32}) {
            d.kc = 4096 / chunks;
            d.deps = mkg_gemm_deps{};
            const bool fits = chunks >= cl && (chunks + cl - 1) / cl <= room;
            EXPECT_EQ(mkg_schedule_check(&d, s), fits ? MKG_OK : MKG_ERR_SCHEDULE_INELIGIBLE)
                << i->name << " chunks " << chunks << " room " << room;
        }
        d.kc = 1024;
        d.deps.done = reinterpret_cast<unsigned int *>(0x40000);
        EXPECT_EQ(mkg_schedule_check(&d, s), MKG_ERR_SCHEDULE_INELIGIBLE) << i->name << ": not in a megakernel";
        d.deps = mkg_gemm_deps{};
        d.deps.wait = reinterpret_cast<const unsigned int *>(0x60000);
        EXPECT_EQ(mkg_schedule_check(&d, s), MKG_ERR_SCHEDULE_INELIGIBLE) << i->name << ": no dependency wait";
        d.deps = mkg_gemm_deps{};
        EXPECT_EQ(mkg_schedule_check(&d, s), MKG_OK) << i->name;
    }
    EXPECT_GE(rows, 2) << "the table has cluster split-K rows of 2 and 4 CTAs";
    // No cluster row of either kind takes a dependency wait (the multicast rows' producer has none).
    d.kc = 1024;
    d.deps.wait = reinterpret_cast<const unsigned int *>(0x60000);
    for (int s = 0; s < MKG_SCHED_COUNT; ++s)
        if (mkg_schedule_get(s)->cluster > 1)
            EXPECT_EQ(mkg_schedule_check(&d, s), MKG_ERR_SCHEDULE_INELIGIBLE) << mkg_schedule_get(s)->name;
}

TEST(Validate, LaunchRejectsNullOpAndBadGrid)
{
    EXPECT_EQ(mkg_gemm_launch(nullptr, 0, 0, 0), MKG_ERR_NULL_DESC);
    mkg_gemm_desc d = valid_desc();
    EXPECT_EQ(mkg_gemm_create(&d, nullptr), MKG_ERR_NULL_OUT);
    EXPECT_EQ(mkg_gemm_encode_params(&d, nullptr), MKG_ERR_NULL_OUT);
}

TEST(Status, EveryCodeHasADistinctNameAndMessage)
{
    std::set<std::string> names, messages;
    for (int s = 0; s < MKG_STATUS_COUNT; ++s) {
        const char *n = mkg_status_name(static_cast<mkg_status>(s));
        const char *m = mkg_status_string(static_cast<mkg_status>(s));
        ASSERT_NE(n, nullptr);
        ASSERT_NE(m, nullptr);
        EXPECT_GT(std::string(m).size(), 4u);
        names.insert(n);
        messages.insert(m);
    }
    EXPECT_EQ(names.size(), static_cast<size_t>(MKG_STATUS_COUNT));
    EXPECT_EQ(messages.size(), static_cast<size_t>(MKG_STATUS_COUNT));
    EXPECT_STREQ(mkg_status_name(MKG_ERR_BAD_K), "MKG_ERR_BAD_K");
    EXPECT_STREQ(mkg_status_string(static_cast<mkg_status>(-1)), "unknown status");
    EXPECT_STREQ(mkg_status_string(MKG_STATUS_COUNT), "unknown status");
}
