// gpu_dispatch_test.cc - device-side dispatch from the uploaded layer table: several
// layers of different shapes run back to back in one persistent launch, each by its
// current M (changed between launches without re-uploading the table), checked
// bitwise against the host-launched GEMM (bits do not depend on the schedule) and
// against writes outside M x N; a corrupted entry sets the error word and the
// kernel returns. The same for tf32 and e4m3 layers through their own kernels (DispatchDtype),
// and for chunked bf16 and block-scaled e4m3 layers through the chunk-stepping kernels
// (DispatchChunked).
// Skipped with the reason unless a compute-capability-9.0 GPU is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "mkg_test_shims.h"

namespace {

struct Layer {
    mkg_case big;               // buffers sized for m_max; the table points at them
    mkg_layer_desc desc;
};

// An N x K layer of input dtype `in`, its buffers sized for m_max rows and its descriptor (plain
// store, invariant mode, mkg_case_run's per-tensor scales for e4m3) pointing at them.
mkg_status layer_init(Layer *l, int n, int k, int m_max, mkg_dtype in, mkg_dtype out, unsigned long long seed)
{
    const mkg_status st = mkg_case_init(&l->big, m_max, n, k, in, out, seed);
    memset(&l->desc, 0, sizeof l->desc);
    l->desc.n = n;
    l->desc.k = k;
    l->desc.in_type = in;
    l->desc.c_type = out;
    l->desc.a = l->big.a;
    l->desc.b = l->big.b;
    l->desc.c = l->big.c;
    l->desc.lda = l->big.lda;
    l->desc.ldb = l->big.ldb;
    l->desc.ldc = l->big.ldc;
    l->desc.epilogue = MKG_EPI_STORE;
    l->desc.m_max = m_max;
    l->desc.mode = MKG_MODE_INVARIANT;
    l->desc.a_scale = MKG_SHIM_FP8_A_SCALE;
    l->desc.b_scale = MKG_SHIM_FP8_B_SCALE;
    return st;
}

// Uploads the layers' table (cost-model plans) and the run order 0, 1, ... to device memory.
void upload(const std::vector<Layer> &layers, mkg_table **table, int **order)
{
    std::vector<mkg_layer_desc> descs;
    std::vector<int> ord;
    for (const Layer &l : layers) {
        ord.push_back(static_cast<int>(descs.size()));
        descs.push_back(l.desc);
    }
    ASSERT_EQ(mkg_table_create(descs.data(), static_cast<int>(descs.size()), nullptr, table), MKG_OK);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void **>(order), ord.size() * sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(*order, ord.data(), ord.size() * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
}

// Layers of the given {N, K, m_max} shapes and dtypes, their table and run order (the fixtures'
// SetUp); layers are kept even when one fails to initialise, so that layers_destroy frees them all.
void layers_create(const int (*shapes)[3], int count, mkg_dtype in, mkg_dtype out, unsigned long long seed,
                   std::vector<Layer> *layers, mkg_table **table, int **order)
{
    for (int i = 0; i < count; ++i) {
        Layer l;
        const mkg_status st = layer_init(&l, shapes[i][0], shapes[i][1], shapes[i][2], in, out, seed + shapes[i][0]);
        layers->push_back(l);
        ASSERT_EQ(st, MKG_OK);
    }
    ASSERT_NO_FATAL_FAILURE(upload(*layers, table, order));
}

void layers_destroy(std::vector<Layer> *layers, mkg_table *table, int *order)
{
    mkg_table_destroy(table);
    cudaFree(order);
    for (Layer &l : *layers)
        mkg_case_free(&l.big);
}

// Layer `i`'s dispatched C (its first m rows) against the host-launched schedule s (0 by default):
// nothing written outside M x N, and the same bits.
void expect_host_bits(mkg_case *c, int m, int i, int s = 0)
{
    EXPECT_EQ(mkg_case_outside_writes(c, m), 0) << "layer " << i << " M=" << m;
    ASSERT_EQ(mkg_case_keep(c), MKG_OK);               // keep = the dispatched result
    ASSERT_EQ(mkg_case_run(c, s, 0, m), MKG_OK);       // C = host-launched schedule s
    EXPECT_EQ(mkg_case_mismatch_vs_keep(c, m), 0) << "layer " << i << " M=" << m;
}

class Dispatch : public ::testing::Test {
protected:
    void SetUp() override
    {
        const char *why = mkg_shim_gpu_skip_reason();
        if (*why)
            GTEST_SKIP() << why;
        seed_ = mkg_shim_seed();
        const int shapes[][3] = {{3072, 2048, 512}, {2048 + 8, 2048, 512}, {1000, 4096, 300}};
        ASSERT_NO_FATAL_FAILURE(
            layers_create(shapes, 3, MKG_DTYPE_BF16, MKG_DTYPE_BF16, seed_, &layers_, &table_, &order_));
    }
    void TearDown() override { layers_destroy(&layers_, table_, order_); }
    // Poisons every layer's C, runs layer i at M = ms[i] in one launch of `grid` CTAs (plain = 1:
    // the dispatch kernel compiled for plain bf16 stores) and takes the error word; the kernel
    // must return whatever the table holds.
    void launch(const std::vector<int> &ms, int grid, int plain, unsigned int *err)
    {
        for (size_t i = 0; i < layers_.size(); ++i) {
            ASSERT_EQ(mkg_case_poison(&layers_[i].big), MKG_OK);
            ASSERT_EQ(mkg_table_set_m(table_, static_cast<int>(i), ms[i], 0), MKG_OK);
        }
        ASSERT_EQ(mkg_test_run_layers(mkg_table_rows(table_), mkg_table_count(table_), mkg_table_m(table_),
                                      mkg_table_error(table_), order_, static_cast<int>(layers_.size()), grid,
                                      plain, 0),
                  cudaSuccess);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "the kernel must return, not fault or hang";
        ASSERT_EQ(mkg_table_take_error(table_, err, 0), MKG_OK);
    }
    // Runs every layer at its M in one launch; then checks each against mkg_gemm at that M.
    void run_and_check(const std::vector<int> &ms, int grid, int plain = 0)
    {
        unsigned int err = 1;
        ASSERT_NO_FATAL_FAILURE(launch(ms, grid, plain, &err));
        EXPECT_EQ(err, 0u);
        for (size_t i = 0; i < layers_.size(); ++i)
            ASSERT_NO_FATAL_FAILURE(expect_host_bits(&layers_[i].big, ms[i], static_cast<int>(i)));
    }
    std::vector<Layer> layers_;
    mkg_table *table_ = nullptr;
    int *order_ = nullptr;
    unsigned long long seed_ = 0;
};

}  // namespace

TEST_F(Dispatch, LayersBackToBackWithMChangingBetweenLaunches)
{
    const std::vector<std::vector<int>> steps = {
        {1, 1, 1}, {7, 64, 300}, {512, 17, 8}, {64, 512, 129}, {300, 3, 300}};
    for (const auto &ms : steps)
        run_and_check(ms, 132);
    run_and_check({100, 200, 50}, 66);
}

TEST_F(Dispatch, CorruptedEntrySetsTheErrorWordAndReturns)
{
    // Layer 1's bucket for M = 64 names a schedule this build does not have.
    const int m = 64, b = mkg_bucket_of(m);
    const unsigned char bad = 250;
    char *row1 = reinterpret_cast<char *>(const_cast<mkg_layer_dev *>(mkg_table_rows(table_)) + 1);
    ASSERT_EQ(cudaMemcpy(row1 + offsetof(mkg_layer_dev, schedule) + b, &bad, 1, cudaMemcpyHostToDevice), cudaSuccess);
    unsigned int err = 0;
    ASSERT_NO_FATAL_FAILURE(launch({m, m, m}, 132, 0, &err));
    EXPECT_EQ(err, (2u << 8) | MKG_DISPATCH_BAD_SCHEDULE);
    EXPECT_EQ(mkg_case_outside_writes(&layers_[1].big, 0), 0) << "the bad layer was skipped";
    EXPECT_EQ(mkg_case_outside_writes(&layers_[0].big, m), 0);
    // The other layers still ran.
    ASSERT_EQ(mkg_case_keep(&layers_[2].big), MKG_OK);
    ASSERT_EQ(mkg_case_run(&layers_[2].big, 0, 0, m), MKG_OK);
    EXPECT_EQ(mkg_case_mismatch_vs_keep(&layers_[2].big, m), 0);
}

// The variant compiled for plain bf16 stores (the one-chunk producer path, only the plain
// epilogue in its consumers) writes the same bits as the host-launched GEMM.
TEST_F(Dispatch, PlainStoreKernelLayersBackToBack)
{
    const std::vector<std::vector<int>> steps = {{1, 1, 1}, {7, 64, 300}, {512, 17, 8}, {300, 3, 300}};
    for (const auto &ms : steps)
        run_and_check(ms, 132, 1);
    run_and_check({100, 200, 50}, 66, 1);
}

// A layer the plain variant has no code for (here: layer 1 turned into a residual epilogue
// in device memory) is reported as MKG_DISPATCH_NOT_PLAIN and skipped; the others run.
TEST_F(Dispatch, PlainStoreKernelReportsOtherEpilogues)
{
    const int m = 64;
    const int residual = MKG_EPI_RESIDUAL;
    char *row1 = reinterpret_cast<char *>(const_cast<mkg_layer_dev *>(mkg_table_rows(table_)) + 1);
    ASSERT_EQ(cudaMemcpy(row1 + offsetof(mkg_layer_dev, params) + offsetof(mkg_gemm_params, epilogue), &residual,
                         sizeof residual, cudaMemcpyHostToDevice),
              cudaSuccess);
    unsigned int err = 0;
    ASSERT_NO_FATAL_FAILURE(launch({m, m, m}, 132, 1, &err));
    EXPECT_EQ(err, (2u << 8) | MKG_DISPATCH_NOT_PLAIN);
    EXPECT_EQ(mkg_case_outside_writes(&layers_[1].big, 0), 0) << "the layer was skipped";
    for (int i : {0, 2})
        ASSERT_NO_FATAL_FAILURE(expect_host_bits(&layers_[i].big, m, i));
}

// The plain variant's warp pick reads the schedule byte of M's bucket out of the row's
// words: a bad byte at each of the four positions of a word (buckets 0, 5, 11 and 16 for
// M = 1, 7, 64 and 300) is found, reported for its layer, and that layer alone is skipped.
TEST_F(Dispatch, PlainStoreKernelReportsACorruptedEntryAtEveryBytePosition)
{
    char *row1 = reinterpret_cast<char *>(const_cast<mkg_layer_dev *>(mkg_table_rows(table_)) + 1);
    for (int m : {1, 7, 64, 300}) {
        const int b = mkg_bucket_of(m);
        unsigned char keep = 0;
        const unsigned char bad = 250;
        char *at = row1 + offsetof(mkg_layer_dev, schedule) + b;
        ASSERT_EQ(cudaMemcpy(&keep, at, 1, cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(at, &bad, 1, cudaMemcpyHostToDevice), cudaSuccess);
        unsigned int err = 0;
        ASSERT_NO_FATAL_FAILURE(launch({m, m, m}, 132, 1, &err));
        EXPECT_EQ(err, (2u << 8) | MKG_DISPATCH_BAD_SCHEDULE) << "M=" << m << " (bucket " << b << ")";
        EXPECT_EQ(mkg_case_outside_writes(&layers_[1].big, 0), 0) << "M=" << m << ": the bad layer was skipped";
        for (int i : {0, 2})
            ASSERT_NO_FATAL_FAILURE(expect_host_bits(&layers_[i].big, m, i)) << "bucket " << b;
        ASSERT_EQ(cudaMemcpy(at, &keep, 1, cudaMemcpyHostToDevice), cudaSuccess);
    }
    run_and_check({300, 3, 300}, 132, 1);   // the restored table runs again
}

// Ping-pong rows from the table (the planner puts them in where their hidden epilogues pay): every
// bucket of layers 0 and 2 set to one ping-pong row with layer 1 on its planned cooperative rows,
// then all three layers on it, in both kernel variants, on grids where a CTA runs one unit, many,
// an odd or an even number (132, 7, 2), with ragged N (2056, 1000) and M (300, 129): each layer
// bitwise equal to the host-launched schedule 0 and nothing written outside M x N. Layers follow
// one another on the same ring in one launch, so each layer's hand-offs must balance before the
// next layer starts.
TEST_F(Dispatch, PingPongRowsFromTheTable)
{
    std::vector<int> pp;
    for (int s = 0; s < MKG_SCHED_COUNT; ++s)
        if (mkg_schedule_get(s)->pingpong)
            pp.push_back(s);
    ASSERT_FALSE(pp.empty()) << "the schedule table has no ping-pong row";
    char *rows = reinterpret_cast<char *>(const_cast<mkg_layer_dev *>(mkg_table_rows(table_)));
    for (int s : pp) {
        const std::vector<unsigned char> all(MKG_MAX_BUCKETS, static_cast<unsigned char>(s));
        for (const std::vector<int> &set : {std::vector<int>{0, 2}, std::vector<int>{1}}) {
            for (int i : set)
                ASSERT_EQ(cudaMemcpy(rows + i * sizeof(mkg_layer_dev) + offsetof(mkg_layer_dev, schedule), all.data(),
                                     all.size(), cudaMemcpyHostToDevice),
                          cudaSuccess);
            for (int plain : {0, 1})
                for (int grid : {132, 7, 2}) {
                    SCOPED_TRACE(std::string(mkg_schedule_get(s)->name) + (set.size() == 2 ? " on layers 0, 2" : " on all") +
                                 " plain=" + std::to_string(plain) + " grid=" + std::to_string(grid));
                    run_and_check({512, 300, 129}, grid, plain);
                }
        }
    }
}

// The device computes buckets with a count-leading-zeros path, the host with a loop.
TEST_F(Dispatch, DeviceBucketsMatchTheHost)
{
    const int n = 1 << 20;
    std::vector<int> dev(n);
    ASSERT_EQ(mkg_test_device_buckets(n, dev.data()), 0);
    int bad = 0;
    for (int m = 1; m <= n; ++m)
        bad += dev[m - 1] != mkg_bucket_of(m);
    EXPECT_EQ(bad, 0);
}

TEST_F(Dispatch, HostRefusesMOutsideTheTable)
{
    EXPECT_EQ(mkg_table_set_m(table_, 0, 0, 0), MKG_ERR_BAD_M);
    EXPECT_EQ(mkg_table_set_m(table_, 2, 301, 0), MKG_ERR_M_EXCEEDS_M_MAX);
    EXPECT_EQ(mkg_table_set_m(table_, 3, 1, 0), MKG_ERR_BAD_LAYER);
    EXPECT_EQ(mkg_table_set_m(nullptr, 0, 1, 0), MKG_ERR_TABLE_NOT_UPLOADED);
}

// ---- tf32 and e4m3 layers ------------------------------------------------------------------

namespace {

// Two layers of one input dtype (ragged N, K of several stages, m_max 300) in one table, run by
// that dtype's plain-store dispatch kernel (mkg_test_run_layers_e4m3 / _tf32).
class DispatchDtype : public ::testing::TestWithParam<mkg_dtype> {
protected:
    void SetUp() override
    {
        const char *why = mkg_shim_gpu_skip_reason();
        if (*why)
            GTEST_SKIP() << why;
        in_ = GetParam();
        out_ = in_ == MKG_DTYPE_E4M3 ? MKG_DTYPE_BF16 : MKG_DTYPE_FP32;
        const unsigned long long seed = mkg_shim_seed() + 500 + static_cast<unsigned>(in_);
        const int shapes[][3] = {{1000, 2048, 300}, {3072 + 8, 1024, 300}};
        ASSERT_NO_FATAL_FAILURE(layers_create(shapes, 2, in_, out_, seed, &layers_, &table_, &order_));
    }
    void TearDown() override { layers_destroy(&layers_, table_, order_); }
    cudaError_t run(const mkg_table *t, int steps, int grid, mkg_dtype kernel)
    {
        return kernel == MKG_DTYPE_E4M3
                   ? mkg_test_run_layers_e4m3(mkg_table_rows(t), mkg_table_count(t), mkg_table_m(t),
                                              mkg_table_error(t), order_, steps, grid, 0)
                   : mkg_test_run_layers_tf32(mkg_table_rows(t), mkg_table_count(t), mkg_table_m(t),
                                              mkg_table_error(t), order_, steps, grid, 0);
    }
    // Every layer at M = m in one launch; each must equal the host-launched schedule 0 bitwise.
    void run_and_check(int m, int grid)
    {
        for (size_t i = 0; i < layers_.size(); ++i) {
            ASSERT_EQ(mkg_case_poison(&layers_[i].big), MKG_OK);
            ASSERT_EQ(mkg_table_set_m(table_, static_cast<int>(i), m, 0), MKG_OK);
        }
        ASSERT_EQ(run(table_, static_cast<int>(layers_.size()), grid, in_), cudaSuccess);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "the kernel must return, not fault or hang";
        unsigned int err = 1;
        ASSERT_EQ(mkg_table_take_error(table_, &err, 0), MKG_OK);
        EXPECT_EQ(err, 0u) << "M=" << m;
        for (size_t i = 0; i < layers_.size(); ++i)
            ASSERT_NO_FATAL_FAILURE(expect_host_bits(&layers_[i].big, m, static_cast<int>(i)));
    }
    mkg_dtype in_ = MKG_DTYPE_BF16, out_ = MKG_DTYPE_BF16;
    std::vector<Layer> layers_;
    mkg_table *table_ = nullptr;
    int *order_ = nullptr;
};

std::string dtype_param_name(const ::testing::TestParamInfo<mkg_dtype> &info)
{
    return mkg_dtype_name(info.param);
}

}  // namespace

// The cost model's table at the first and last M of every bucket up to m_max, on 132 CTAs, and
// a few Ms on 66: the dispatched C equals the host-launched bits.
TEST_P(DispatchDtype, CostModelTableAtEveryBucket)
{
    for (int b = 0; b < mkg_bucket_count(300); ++b) {
        const int lo = b == 0 ? 1 : mkg_bucket_upper(b - 1) + 1, hi = std::min(mkg_bucket_upper(b), 300);
        for (int m : {lo, hi})
            ASSERT_NO_FATAL_FAILURE(run_and_check(m, 132)) << "bucket " << b;
    }
    for (int m : {1, 100, 300})
        ASSERT_NO_FATAL_FAILURE(run_and_check(m, 66));
}

// Every row the dispatcher runs, forced into every bucket of each layer it is eligible for: each
// row's dispatch code for this dtype (stage rows of 128 e4m3 or 32 fp32 elements) writes the
// host-launched bits.
TEST_P(DispatchDtype, EveryEligibleRowFromTheTable)
{
    char *rows = reinterpret_cast<char *>(const_cast<mkg_layer_dev *>(mkg_table_rows(table_)));
    int ran = 0;
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        if (mkg_schedule_shipped_only(s))
            continue;
        int forced = 0;
        for (size_t i = 0; i < layers_.size(); ++i) {
            mkg_layer_desc lk = layers_[i].desc;
            lk.kc = lk.k;
            if (!mkg_plan_eligible(&lk, s))
                continue;
            const std::vector<unsigned char> all(MKG_MAX_BUCKETS, static_cast<unsigned char>(s));
            ASSERT_EQ(cudaMemcpy(rows + i * sizeof(mkg_layer_dev) + offsetof(mkg_layer_dev, schedule), all.data(),
                                 all.size(), cudaMemcpyHostToDevice),
                      cudaSuccess);
            ++forced;
        }
        if (!forced)
            continue;
        ++ran;
        SCOPED_TRACE(mkg_schedule_get(s)->name);
        for (int m : {7, 300})
            ASSERT_NO_FATAL_FAILURE(run_and_check(m, 132));
    }
    EXPECT_GE(ran, MKG_SCHED_COUNT / 2) << "most rows run " << mkg_dtype_name(in_) << " layers";
}

// A kernel built for the other input dtype reports the layer (MKG_DISPATCH_BAD_DTYPE) and skips it.
TEST_P(DispatchDtype, KernelOfAnotherDtypeReportsTheLayer)
{
    const mkg_dtype other = in_ == MKG_DTYPE_E4M3 ? MKG_DTYPE_FP32 : MKG_DTYPE_E4M3;
    for (size_t i = 0; i < layers_.size(); ++i) {
        ASSERT_EQ(mkg_case_poison(&layers_[i].big), MKG_OK);
        ASSERT_EQ(mkg_table_set_m(table_, static_cast<int>(i), 64, 0), MKG_OK);
    }
    ASSERT_EQ(run(table_, static_cast<int>(layers_.size()), 132, other), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    unsigned int err = 0;
    ASSERT_EQ(mkg_table_take_error(table_, &err, 0), MKG_OK);
    EXPECT_EQ(err, (1u << 8) | MKG_DISPATCH_BAD_DTYPE);
    for (size_t i = 0; i < layers_.size(); ++i)
        EXPECT_EQ(mkg_case_outside_writes(&layers_[i].big, 0), 0) << "layer " << i << " was skipped";
}

INSTANTIATE_TEST_SUITE_P(Tf32AndE4m3, DispatchDtype, ::testing::Values(MKG_DTYPE_FP32, MKG_DTYPE_E4M3),
                         dtype_param_name);

// ---- chunked and block-scaled layers: the chunk-stepping kernels ----------------------------

namespace {

// Three layers of one input dtype with several K chunks each, run by that dtype's chunk-stepping
// dispatch kernel (mkg_test_run_layers_chunked / _chunked_e4m3): bf16 layers with kc = 512 (K of
// 4, 2 and 3 chunks), e4m3 layers with 1 x 128 / 128 x 128 block scales in [1/8, 8) (kc = 128:
// 16, 8 and 1 chunks). The e4m3 layer of K = 128
// is one chunk, which the one-chunk kernels must still refuse for its scales. The bitwise reference
// is the host-launched chunk-folding row MKG_SCHED_m128n128k64_s6_rn_g8 at the same kc, whose own
// FP64 checks are in gpu_gemm_test.cc (BlockScaledE4m3AcrossSchedulesSplitsAndPrefixes, the
// chunked-K tests). The bf16 kernel picks per role (mkg_dispatch_begin<DT, 1>), the e4m3 one by warp.
class DispatchChunked : public ::testing::TestWithParam<mkg_dtype> {
protected:
    static constexpr int kRef = MKG_SCHED_m128n128k64_s6_rn_g8;
    static constexpr int kKc = 512;                     // bf16 layers' chunk
    void SetUp() override
    {
        const char *why = mkg_shim_gpu_skip_reason();
        if (*why)
            GTEST_SKIP() << why;
        in_ = GetParam();
        const unsigned long long seed = mkg_shim_seed() + 900 + static_cast<unsigned>(in_);
        const int k2 = in_ == MKG_DTYPE_E4M3 ? 128 : 1536;
        const int shapes[][3] = {{1000, 2048, 300}, {3072 + 8, 1024, 300}, {640, k2, 300}};
        for (const auto &sh : shapes) {
            Layer l;
            mkg_status st = layer_init(&l, sh[0], sh[1], sh[2], in_, MKG_DTYPE_BF16, seed + sh[0]);
            if (st == MKG_OK && in_ == MKG_DTYPE_E4M3) {
                st = mkg_case_set_block_scales(&l.big, seed ^ static_cast<unsigned>(sh[0]), 0.125f, 8.0f);
                l.desc.a_block_scales = l.big.bsa;
                l.desc.ld_a_block_scales = l.big.ld_bsa;
                l.desc.b_block_scales = l.big.bsb;          // kc 0: the 128-deep block
            } else if (st == MKG_OK) {
                st = mkg_case_set_kc(&l.big, kKc);
                l.desc.kc = kKc;
            }
            layers_.push_back(l);
            ASSERT_EQ(st, MKG_OK);
        }
        ASSERT_NO_FATAL_FAILURE(upload(layers_, &table_, &order_));
    }
    void TearDown() override { layers_destroy(&layers_, table_, order_); }
    std::vector<mkg_layer_desc> descs() const
    {
        std::vector<mkg_layer_desc> v;
        for (const Layer &l : layers_)
            v.push_back(l.desc);
        return v;
    }
    // Poisons every layer's C, sets every layer's M in table t, runs `steps` layers of `order` in one
    // launch of the chunk-stepping kernel (or, chunked = false, of this dtype's plain one-chunk
    // kernel) and takes the error word.
    void launch(mkg_table *t, const int *order, int steps, int m, int grid, bool chunked, unsigned int *err)
    {
        for (size_t i = 0; i < layers_.size(); ++i) {
            ASSERT_EQ(mkg_case_poison(&layers_[i].big), MKG_OK);
            ASSERT_EQ(mkg_table_set_m(t, static_cast<int>(i), m, 0), MKG_OK);
        }
        const mkg_layer_dev *rows = mkg_table_rows(t);
        const int count = mkg_table_count(t);
        cudaError_t e;
        if (chunked)
            e = in_ == MKG_DTYPE_E4M3
                    ? mkg_test_run_layers_chunked_e4m3(rows, count, mkg_table_m(t), mkg_table_error(t), order, steps,
                                                       grid, 0)
                    : mkg_test_run_layers_chunked(rows, count, mkg_table_m(t), mkg_table_error(t), order, steps, grid,
                                                  0);
        else
            e = in_ == MKG_DTYPE_E4M3
                    ? mkg_test_run_layers_e4m3(rows, count, mkg_table_m(t), mkg_table_error(t), order, steps, grid, 0)
                    : mkg_test_run_layers(rows, count, mkg_table_m(t), mkg_table_error(t), order, steps, grid, 1, 0);
        ASSERT_EQ(e, cudaSuccess);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "the kernel must return, not fault or hang";
        ASSERT_EQ(mkg_table_take_error(t, err, 0), MKG_OK);
    }
    // Every layer of table t at M = m in one launch; each must equal the host-launched bits.
    void run_and_check(mkg_table *t, int m, int grid)
    {
        unsigned int err = 1;
        ASSERT_NO_FATAL_FAILURE(launch(t, order_, static_cast<int>(layers_.size()), m, grid, true, &err));
        EXPECT_EQ(err, 0u) << "M=" << m;
        for (size_t i = 0; i < layers_.size(); ++i)
            ASSERT_NO_FATAL_FAILURE(expect_host_bits(&layers_[i].big, m, static_cast<int>(i), kRef));
    }
    mkg_dtype in_ = MKG_DTYPE_BF16;
    std::vector<Layer> layers_;
    mkg_table *table_ = nullptr;
    int *order_ = nullptr;
};

}  // namespace

// The cost model's table at the first and last M of every bucket up to m_max on 132 CTAs, and a few
// Ms on 66 and 7: the dispatched C equals the host-launched bits.
TEST_P(DispatchChunked, CostModelTableAtEveryBucket)
{
    for (int b = 0; b < mkg_bucket_count(300); ++b) {
        const int lo = b == 0 ? 1 : mkg_bucket_upper(b - 1) + 1, hi = std::min(mkg_bucket_upper(b), 300);
        for (int m : {lo, hi})
            ASSERT_NO_FATAL_FAILURE(run_and_check(table_, m, 132)) << "bucket " << b;
    }
    for (int grid : {66, 7})
        for (int m : {1, 100, 300})
            ASSERT_NO_FATAL_FAILURE(run_and_check(table_, m, grid)) << "grid " << grid;
}

// Every row the chunk-stepping kernel runs, planned by the caller into every bucket of each layer
// it is eligible for (mkg_table_create then sizes the split rows' workspace; the others keep their
// cost-model rows): the split rows' partials meet in chunk order, and each row writes the
// host-launched bits. The e4m3 plans say kc 0, which a block-scaled layer reads as its 128-deep
// block (the workspace must be sized for that, not for one chunk).
TEST_P(DispatchChunked, EveryEligibleRowFromCallerPlans)
{
    const std::vector<mkg_layer_desc> ds = descs();
    const mkg_cost_model cm = mkg_cost_model_h200();
    int dev = 0, sms = 0;
    ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
    ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), cudaSuccess);
    mkg_gpu_info g = {};
    g.sms = sms;
    std::vector<mkg_layer_plan> cost(ds.size());
    ASSERT_EQ(mkg_layers_plan(&cm, ds.data(), static_cast<int>(ds.size()), &g, cost.data()), MKG_OK);
    for (size_t i = 0; i < ds.size() && in_ == MKG_DTYPE_E4M3; ++i) {
        ASSERT_EQ(cost[i].kc, MKG_BLOCK_SCALE_K);
        cost[i].kc = 0;
    }
    int ran = 0, split = 0;
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        std::vector<mkg_layer_plan> plans = cost;
        int forced = 0;
        for (size_t i = 0; i < ds.size(); ++i) {
            mkg_layer_desc lk = ds[i];
            lk.kc = mkg_layer_kc(&ds[i], sms);
            if (!mkg_plan_eligible(&lk, s))
                continue;
            memset(plans[i].schedule, s, sizeof plans[i].schedule);
            ++forced;
        }
        if (!forced)
            continue;
        ++ran;
        split += mkg_schedule_get(s)->split > 1;
        SCOPED_TRACE(mkg_schedule_get(s)->name);
        mkg_table *t = nullptr;
        ASSERT_EQ(mkg_table_create(ds.data(), static_cast<int>(ds.size()), plans.data(), &t), MKG_OK);
        for (int m : {7, 300}) {
            run_and_check(t, m, 132);
            if (HasFatalFailure())
                break;
        }
        mkg_table_destroy(t);
        if (HasFatalFailure())
            return;
    }
    EXPECT_GE(ran, 8) << "chunk-folding rows run " << mkg_dtype_name(in_) << " chunked layers";
    EXPECT_GT(split, 0) << "a split row ran";
}

// The one-chunk kernels report a chunked or block-scaled layer (MKG_DISPATCH_CHUNKED) and skip it,
// including the block-scaled layer of one 128-deep chunk, which they would otherwise run without
// its scales.
TEST_P(DispatchChunked, OneChunkKernelReportsChunkedAndBlockScaledLayers)
{
    unsigned int err = 0;
    ASSERT_NO_FATAL_FAILURE(launch(table_, order_, static_cast<int>(layers_.size()), 64, 132, false, &err));
    EXPECT_EQ(err, (1u << 8) | MKG_DISPATCH_CHUNKED);
    for (int i : {0, 1})
        EXPECT_EQ(mkg_case_outside_writes(&layers_[i].big, 0), 0) << "layer " << i << " was skipped";
    int *last = nullptr;
    const int two = 2;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void **>(&last), sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(last, &two, sizeof two, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_NO_FATAL_FAILURE(launch(table_, last, 1, 64, 132, false, &err));
    cudaFree(last);
    // e4m3: K = 128 with block scales is one chunk, and still refused; bf16: three chunks.
    EXPECT_EQ(err, (3u << 8) | MKG_DISPATCH_CHUNKED);
    EXPECT_EQ(mkg_case_outside_writes(&layers_[2].big, 0), 0) << "layer 2 was skipped";
}

INSTANTIATE_TEST_SUITE_P(Bf16AndBlockScaledE4m3, DispatchChunked, ::testing::Values(MKG_DTYPE_BF16, MKG_DTYPE_E4M3),
                         dtype_param_name);
