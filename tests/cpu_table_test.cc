// cpu_table_test.cc - layer-list validation, per-bucket plans, and the table file:
// round trip, and a clear status for a missing, corrupt, truncated, foreign-GPU,
// other-version or other-layer-list file (plans untouched on every failure).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "mkgemm.h"

namespace {

std::vector<mkg_layer_desc> layers()
{
    std::vector<mkg_layer_desc> v;
    const int shapes[][3] = {{3072, 2048, 64}, {2048, 2048, 512}, {16384, 2048, 8192}, {2048, 8192, 8192}};
    for (const auto &sh : shapes) {
        mkg_layer_desc l = {};
        l.n = sh[0];
        l.k = sh[1];
        l.m_max = sh[2];
        l.in_type = l.c_type = MKG_DTYPE_BF16;
        l.a = reinterpret_cast<const void *>(0x10000);
        l.b = reinterpret_cast<const void *>(0x20000);
        l.c = reinterpret_cast<void *>(0x30000);
        l.lda = l.ldb = l.k;
        l.ldc = l.n;
        l.epilogue = MKG_EPI_STORE;
        l.mode = MKG_MODE_INVARIANT;
        v.push_back(l);
    }
    // The other input dtypes: an e4m3 layer (per-tensor scales, bf16 C) and a tf32 one.
    mkg_layer_desc fp8 = v[0];
    fp8.n = fp8.k = 4096;
    fp8.m_max = 1024;
    fp8.in_type = MKG_DTYPE_E4M3;
    fp8.a_scale = 0.5f;
    fp8.b_scale = 0.25f;
    fp8.lda = fp8.ldb = fp8.ldc = 4096;
    v.push_back(fp8);
    mkg_layer_desc tf32 = v[0];
    tf32.n = tf32.k = 1024;
    tf32.m_max = 256;
    tf32.in_type = tf32.c_type = MKG_DTYPE_FP32;
    tf32.lda = tf32.ldb = tf32.ldc = 1024;
    v.push_back(tf32);
    // A block-scaled e4m3 layer (1 x 128 and 128 x 128 scales; kc 0 means their 128-deep block).
    mkg_layer_desc fp8b = v[4];
    fp8b.n = 2048;
    fp8b.ldc = 2048;
    fp8b.m_max = 512;
    fp8b.a_scale = fp8b.b_scale = 1.0f;
    fp8b.a_block_scales = reinterpret_cast<const float *>(0x40000);
    fp8b.ld_a_block_scales = 512;
    fp8b.b_block_scales = reinterpret_cast<const float *>(0x50000);
    v.push_back(fp8b);
    return v;
}

// Index of the block-scaled layer in layers().
constexpr int kBlockScaled = 6;

// Turns l into a valid block-scaled e4m3 layer (bf16 C, 1 x 128 / 128 x 128 scales, rows for m_max).
void make_block_scaled(mkg_layer_desc *l)
{
    l->in_type = MKG_DTYPE_E4M3;
    l->c_type = MKG_DTYPE_BF16;
    l->a_scale = l->b_scale = 1.0f;
    l->a_block_scales = l->b_block_scales = reinterpret_cast<const float *>(0x40000);
    l->ld_a_block_scales = l->m_max;
}

mkg_gpu_info h200()
{
    mkg_gpu_info g = {};
    snprintf(g.name, sizeof g.name, "NVIDIA H200");
    g.sms = 132;
    return g;
}

std::string path_for(const char *name)
{
    return ::testing::TempDir() + "mkg_table_" + name + ".txt";
}

std::string slurp(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

void spit(const std::string &path, const std::string &text)
{
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << text;
}

// Re-signs an edited table so that only the edit, not the checksum, is wrong.
std::string resign(std::string text)
{
    const size_t at = text.rfind("checksum ");
    std::string body = text.substr(0, at);
    uint64_t h = 1469598103934665603ull;
    for (unsigned char ch : body)
        h = (h ^ ch) * 1099511628211ull;
    char tail[64];
    snprintf(tail, sizeof tail, "checksum %016llx\n", static_cast<unsigned long long>(h));
    return body + tail;
}

class Table : public ::testing::Test {
protected:
    void SetUp() override
    {
        ls_ = layers();
        g_ = h200();
        cm_ = mkg_cost_model_h200();
        plans_.resize(ls_.size());
        ASSERT_EQ(mkg_layers_plan(&cm_, ls_.data(), static_cast<int>(ls_.size()), &g_, plans_.data()), MKG_OK);
        path_ = path_for(::testing::UnitTest::GetInstance()->current_test_info()->name());
        ASSERT_EQ(mkg_table_save(path_.c_str(), &g_, ls_.data(), plans_.data(), static_cast<int>(ls_.size())),
                  MKG_OK);
    }
    // Loads `text` into a sentinel-filled plan array; checks the status and that a failure wrote nothing.
    void expect_load(const std::string &text, mkg_status want)
    {
        spit(path_, text);
        std::vector<mkg_layer_plan> got(ls_.size());
        memset(got.data(), 0x5A, got.size() * sizeof got[0]);
        std::vector<mkg_layer_plan> sentinel = got;
        EXPECT_EQ(mkg_table_load(path_.c_str(), &g_, ls_.data(), got.data(), static_cast<int>(ls_.size())), want)
            << "got " << mkg_status_name(mkg_table_load(path_.c_str(), &g_, ls_.data(), got.data(),
                                                           static_cast<int>(ls_.size())));
        if (want != MKG_OK)
            EXPECT_EQ(memcmp(got.data(), sentinel.data(), got.size() * sizeof got[0]), 0) << "plans were touched";
    }
    std::vector<mkg_layer_desc> ls_;
    std::vector<mkg_layer_plan> plans_;
    mkg_gpu_info g_;
    mkg_cost_model cm_;
    std::string path_;
};

}  // namespace

TEST_F(Table, PlansCoverEveryBucketWithEligibleSchedules)
{
    for (size_t i = 0; i < ls_.size(); ++i) {
        EXPECT_EQ(plans_[i].buckets, mkg_bucket_count(ls_[i].m_max));
        EXPECT_EQ(plans_[i].kc, ls_[i].a_block_scales ? MKG_BLOCK_SCALE_K : mkg_plan_kc(ls_[i].n, ls_[i].k, g_.sms));
        EXPECT_EQ(plans_[i].kc, mkg_layer_kc(&ls_[i], g_.sms));
        mkg_layer_desc lk = ls_[i];
        lk.kc = plans_[i].kc;
        for (int b = 0; b < plans_[i].buckets; ++b)
            EXPECT_TRUE(mkg_plan_eligible(&lk, plans_[i].schedule[b])) << "layer " << i << " bucket " << b;
    }
    // The block-scaled layer's picks fold its 32 chunks: chunk-capable rows only.
    for (int b = 0; b < plans_[kBlockScaled].buckets; ++b) {
        const int s = plans_[kBlockScaled].schedule[b];
        EXPECT_LE(mkg_schedule_wgmma_n(s), MKG_CHUNKED_MAX_WN) << mkg_schedule_get(s)->name;
        EXPECT_EQ(mkg_schedule_get(s)->pingpong, 0) << mkg_schedule_get(s)->name;
    }
}

TEST_F(Table, RoundTrip)
{
    std::vector<mkg_layer_plan> got(ls_.size());
    ASSERT_EQ(mkg_table_load(path_.c_str(), &g_, ls_.data(), got.data(), static_cast<int>(ls_.size())), MKG_OK);
    for (size_t i = 0; i < ls_.size(); ++i) {
        EXPECT_EQ(got[i].kc, plans_[i].kc);
        ASSERT_EQ(got[i].buckets, plans_[i].buckets);
        for (int b = 0; b < got[i].buckets; ++b)
            EXPECT_EQ(got[i].schedule[b], plans_[i].schedule[b]);
    }
}

TEST_F(Table, MissingFile)
{
    std::vector<mkg_layer_plan> got(ls_.size());
    EXPECT_EQ(mkg_table_load((path_ + ".absent").c_str(), &g_, ls_.data(), got.data(),
                             static_cast<int>(ls_.size())),
              MKG_ERR_TABLE_MISSING);
}

TEST_F(Table, CorruptBytesFailTheChecksum)
{
    std::string text = slurp(path_);
    const size_t at = text.find("m1");
    ASSERT_NE(at, std::string::npos);
    text[at + 1] = '6';                                   // m128... -> m628...
    expect_load(text, MKG_ERR_TABLE_CORRUPT);
}

TEST_F(Table, SignedButMalformedContentIsCorrupt)
{
    const std::string saved = slurp(path_);             // expect_load overwrites the file
    std::string text = saved;
    const size_t at = text.find("m1");
    text.replace(at, 4, "zzzz");                           // an unknown schedule name, correctly signed
    expect_load(resign(text), MKG_ERR_TABLE_CORRUPT);
    expect_load(resign("mkgemm-schedule-table one\nchecksum 0\n"), MKG_ERR_TABLE_CORRUPT);
    text = saved;
    const size_t flag = text.find(" bscales 1 ");
    ASSERT_NE(flag, std::string::npos) << "the block-scaled layer's line";
    text.replace(flag, 11, " bscales 2 ");                 // neither 0 nor 1
    expect_load(resign(text), MKG_ERR_TABLE_CORRUPT);
}

TEST_F(Table, TruncatedFiles)
{
    const std::string text = slurp(path_);
    for (size_t cut : {text.size() / 3, text.size() / 2, text.size() - 10, text.size() - 1, size_t(0)})
        expect_load(text.substr(0, cut), MKG_ERR_TABLE_TRUNCATED);
}

TEST_F(Table, AnotherGpuOrSmCount)
{
    const std::string text = slurp(path_);
    std::string other = text;
    other.replace(other.find("NVIDIA H200"), 11, "NVIDIA H100");
    expect_load(resign(other), MKG_ERR_TABLE_GPU);
    other = text;
    other.replace(other.find("sms 132"), 7, "sms 114");
    expect_load(resign(other), MKG_ERR_TABLE_GPU);
}

TEST_F(Table, AnotherLibraryOrFormatVersion)
{
    const std::string text = slurp(path_);
    std::string other = text;
    other.replace(other.find(MKG_VERSION_STRING), strlen(MKG_VERSION_STRING), "9.9.9");
    expect_load(resign(other), MKG_ERR_TABLE_VERSION);
    other = text;
    other.replace(other.find("mkgemm-schedule-table 2"), 23, "mkgemm-schedule-table 3");
    expect_load(resign(other), MKG_ERR_TABLE_VERSION);
    // A format-1 file (before the bscales field) is another version, not a corrupt one.
    other = text;
    other.replace(other.find("mkgemm-schedule-table 2"), 23, "mkgemm-schedule-table 1");
    for (size_t at = other.find(" bscales "); at != std::string::npos; at = other.find(" bscales "))
        other.erase(at, 10);
    expect_load(resign(other), MKG_ERR_TABLE_VERSION);
}

TEST_F(Table, AnotherLayerList)
{
    std::vector<mkg_layer_plan> got(ls_.size());
    std::vector<mkg_layer_desc> changed = ls_;
    changed[1].n = 4096;
    changed[1].ldc = 4096;
    EXPECT_EQ(mkg_table_load(path_.c_str(), &g_, changed.data(), got.data(), static_cast<int>(changed.size())),
              MKG_ERR_TABLE_LAYER);
    changed = ls_;
    changed[2].m_max = 4096;
    EXPECT_EQ(mkg_table_load(path_.c_str(), &g_, changed.data(), got.data(), static_cast<int>(changed.size())),
              MKG_ERR_TABLE_LAYER);
    EXPECT_EQ(mkg_table_load(path_.c_str(), &g_, ls_.data(), got.data(), static_cast<int>(ls_.size()) - 1),
              MKG_ERR_TABLE_LAYER);
    // The same e4m3 layer with per-tensor scales and the same kc (128): only bscales differs.
    changed = ls_;
    changed[kBlockScaled].a_block_scales = changed[kBlockScaled].b_block_scales = nullptr;
    changed[kBlockScaled].kc = MKG_BLOCK_SCALE_K;
    ASSERT_EQ(mkg_layers_validate(changed.data(), static_cast<int>(changed.size()), nullptr), MKG_OK);
    EXPECT_EQ(mkg_table_load(path_.c_str(), &g_, changed.data(), got.data(), static_cast<int>(changed.size())),
              MKG_ERR_TABLE_LAYER);
}

// A caller's plans may use another chunk than the planner's on a layer that leaves kc to the
// library (one chunk as kc 0, or a deeper chunk): mkg_table_create takes them, so the file that
// mkg_table_save writes from them loads back with the same kc. A layer that names its own kc keeps
// it: a file with another is another layer list, and so is a chunk the layer cannot have.
TEST_F(Table, CallerPlansWithTheirOwnChunkRoundTrip)
{
    std::vector<mkg_layer_desc> pinned = ls_;
    pinned[0].kc = pinned[0].k;                                 // one chunk
    pinned[3].kc = 4096;                                        // K = 8192 in two chunks
    ASSERT_NE(mkg_layer_kc(&ls_[3], g_.sms), 4096) << "the planner's own chunk would not test anything";
    std::vector<mkg_layer_plan> plans(ls_.size());
    ASSERT_EQ(mkg_layers_plan(&cm_, pinned.data(), static_cast<int>(pinned.size()), &g_, plans.data()), MKG_OK);
    plans[0].kc = 0;                                            // one chunk, as a caller may write it
    ASSERT_EQ(mkg_table_save(path_.c_str(), &g_, ls_.data(), plans.data(), static_cast<int>(ls_.size())), MKG_OK);
    std::vector<mkg_layer_plan> got(ls_.size());
    ASSERT_EQ(mkg_table_load(path_.c_str(), &g_, ls_.data(), got.data(), static_cast<int>(ls_.size())), MKG_OK);
    for (size_t i = 0; i < ls_.size(); ++i) {
        EXPECT_EQ(got[i].kc, plans[i].kc) << "layer " << i;
        ASSERT_EQ(got[i].buckets, plans[i].buckets);
        for (int b = 0; b < got[i].buckets; ++b)
            EXPECT_EQ(got[i].schedule[b], plans[i].schedule[b]) << "layer " << i << " bucket " << b;
    }
    // The layer list naming kc 2048 for layer 3 refuses the file's 4096.
    std::vector<mkg_layer_desc> other = ls_;
    other[3].kc = 2048;
    EXPECT_EQ(mkg_table_load(path_.c_str(), &g_, other.data(), got.data(), static_cast<int>(other.size())),
              MKG_ERR_TABLE_LAYER);
    // A chunk that is not a whole number of 64-element stage rows, correctly signed.
    std::string text = slurp(path_);
    const size_t at = text.find(" kc 4096 ");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 9, " kc 4000 ");
    expect_load(resign(text), MKG_ERR_TABLE_LAYER);
}

// Plans a caller hands to mkg_table_create are checked per bucket before any device work (so
// this runs without a GPU): a two-sub-tile row on K = 192 (three 64-deep tiles) is refused with
// its own status, and a row that cannot fold the layer's chunks as ineligible.
TEST(Layers, TableCreateChecksTheCallersPlans)
{
    std::vector<mkg_layer_desc> ls = layers();
    ls[1].k = ls[1].lda = ls[1].ldb = 192;
    std::vector<mkg_layer_plan> plans(ls.size());
    const mkg_gpu_info g = h200();
    const mkg_cost_model cm = mkg_cost_model_h200();
    ASSERT_EQ(mkg_layers_plan(&cm, ls.data(), static_cast<int>(ls.size()), &g, plans.data()), MKG_OK);
    const int deep = mkg_schedule_find("m16n64k128_s8_swap_rn_g8");
    const int wide = mkg_schedule_find("m128n256k64_s4_rm_g8");
    ASSERT_GE(deep, 0);
    ASSERT_GE(wide, 0);
    mkg_table *t = nullptr;
    std::vector<mkg_layer_plan> bad = plans;
    bad[1].schedule[0] = static_cast<unsigned char>(deep);
    EXPECT_EQ(mkg_table_create(ls.data(), static_cast<int>(ls.size()), bad.data(), &t), MKG_ERR_SCHEDULE_K_DEPTH);
    EXPECT_EQ(t, nullptr);
    bad = plans;
    bad[3].kc = 2048;                                         // K = 8192 in four chunks
    bad[3].schedule[0] = static_cast<unsigned char>(wide);    // wgmma N 256 cannot fold them
    EXPECT_EQ(mkg_table_create(ls.data(), static_cast<int>(ls.size()), bad.data(), &t), MKG_ERR_SCHEDULE_INELIGIBLE);
    EXPECT_EQ(t, nullptr);
}

TEST(Layers, EveryBadLayerIsNamedWithItsIndex)
{
    struct Case {
        const char *what;
        void (*mutate)(mkg_layer_desc *);
        mkg_status expect;
    };
    const Case cases[] = {
        {"m_max 0", [](mkg_layer_desc *l) { l->m_max = 0; }, MKG_ERR_BAD_M_MAX},
        {"m_max beyond the buckets", [](mkg_layer_desc *l) { l->m_max = 1 << 30; }, MKG_ERR_BAD_M_MAX},
        {"mode", [](mkg_layer_desc *l) { l->mode = static_cast<mkg_mode>(7); }, MKG_ERR_BAD_MODE},
        {"K not 16 bytes", [](mkg_layer_desc *l) { l->k = 100; }, MKG_ERR_K_ALIGN},
        {"B NULL", [](mkg_layer_desc *l) { l->b = nullptr; }, MKG_ERR_NULL_B},
        {"ldc too small", [](mkg_layer_desc *l) { l->ldc = l->n - 8; }, MKG_ERR_LDC_TOO_SMALL},
        {"kc", [](mkg_layer_desc *l) { l->kc = 100; }, MKG_ERR_BAD_KC},
        {"input dtype out of range", [](mkg_layer_desc *l) { l->in_type = static_cast<mkg_dtype>(9); },
         MKG_ERR_BAD_IN_DTYPE},
        {"fp32 (tf32) layer: K not 16 bytes",
         [](mkg_layer_desc *l) {
             l->in_type = l->c_type = MKG_DTYPE_FP32;
             l->k = 2050;                                    // 8200 bytes
         },
         MKG_ERR_K_ALIGN},
        {"e4m3 (fp8) layer: a_scale left unset",
         [](mkg_layer_desc *l) {
             l->in_type = MKG_DTYPE_E4M3;
             l->c_type = MKG_DTYPE_BF16;
             l->b_scale = 1.0f;
         },
         MKG_ERR_BAD_SCALE},
        {"e4m3 (fp8) layer: kc not a whole 128-element stage row",
         [](mkg_layer_desc *l) {
             l->in_type = MKG_DTYPE_E4M3;
             l->c_type = MKG_DTYPE_BF16;
             l->a_scale = l->b_scale = 1.0f;
             l->kc = 64;
         },
         MKG_ERR_BAD_KC},
        {"e4m3 (fp8) layer: C e4m3",
         [](mkg_layer_desc *l) {
             l->in_type = l->c_type = MKG_DTYPE_E4M3;
             l->a_scale = l->b_scale = 1.0f;
         },
         MKG_ERR_BAD_OUT_DTYPE},
        {"block scales on a bf16 layer",
         [](mkg_layer_desc *l) {
             l->a_block_scales = l->b_block_scales = reinterpret_cast<const float *>(0x40000);
             l->ld_a_block_scales = l->m_max;
         },
         MKG_ERR_BAD_BLOCK_SCALES},
        {"e4m3 block scales: weight scales missing",
         [](mkg_layer_desc *l) {
             make_block_scaled(l);
             l->b_block_scales = nullptr;
         },
         MKG_ERR_BAD_BLOCK_SCALES},
        {"e4m3 block scales: activation scale rows shorter than m_max",
         [](mkg_layer_desc *l) {
             make_block_scaled(l);
             l->ld_a_block_scales = l->m_max - 1;
         },
         MKG_ERR_BAD_BLOCK_SCALES},
        {"e4m3 block scales: kc other than their 128-deep block",
         [](mkg_layer_desc *l) {
             make_block_scaled(l);
             l->kc = 256;
         },
         MKG_ERR_BAD_BLOCK_SCALES},
    };
    for (const Case &c : cases) {
        std::vector<mkg_layer_desc> ls = layers();
        c.mutate(&ls[2]);
        int bad = -1;
        EXPECT_EQ(mkg_layers_validate(ls.data(), static_cast<int>(ls.size()), &bad), c.expect) << c.what;
        EXPECT_EQ(bad, 2) << c.what;
    }
    std::vector<mkg_layer_desc> ok = layers();
    int bad = 7;
    EXPECT_EQ(mkg_layers_validate(ok.data(), static_cast<int>(ok.size()), &bad), MKG_OK);
    EXPECT_EQ(bad, -1);
    EXPECT_EQ(mkg_layers_validate(nullptr, 1, &bad), MKG_ERR_NULL_DESC);
}
