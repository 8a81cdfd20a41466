// gpu_gemm_test.cc - every schedule on the GPU against an FP64 reference, and
// the bitwise contract: identical bits across schedules, M prefixes (batch
// invariance), repeated runs and grid sizes. Skipped with the reason when no
// compute-capability-9.0 GPU is present.
//
// Error bounds (max |C - R| / max |R| and ||C - R||_F / ||R||_F), inputs uniform
// in [-1, 1) rounded to the input dtype, FP32 accumulation. One rounding to p
// significant bits is at most 2^-p relative per element, so both measures stay
// under u = 2^-p plus the accumulation part (2e-5, the fp32-output bound):
//   fp32 out: 2e-5 / 1e-5
//   bf16 out: 2^-8  + 2e-5 (8 significant bits)
//   fp16 out: 2^-11 + 2e-5 (11 significant bits)
// e4m3 inputs (per-tensor scales 0.5 and 0.25) add the FP8 tensor cores' accumulation: they
// keep fewer bits than FP32 across k32 steps, so the bound adds 2^-11 per k32 step:
// u(out) + 2^-11 K / 32. Measured on the H200 at K = 64, fp32 out (two k32 steps): 1.48e-4
// (6e56681) and 2.90e-4 (8055487, another seed), i.e. up to 1.2 x 2^-13 per step relative to
// max(max|R|, sqrt(K) / 3). A k32 step adds 32 products and the accumulator aligned to the
// largest of them and truncated to about 13 fraction bits, so its error is a few units of
// 2^-13 of the step's largest magnitude; 2^-11 (four units) holds the measured worst with 3x
// to spare at K = 64 (2^-14 and then 2^-13, fitted to one seed each, did not).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "mkg_plan.h"
#include "mkg_test_shims.h"

namespace {

struct Bound {
    double max_rel, norm_rel;
};

Bound bound_for(mkg_dtype out)
{
    switch (out) {
    case MKG_DTYPE_FP32: return {2e-5, 1e-5};     // 16-bit inputs: k16 wgmma steps
    case MKG_DTYPE_BF16: return {std::ldexp(1.0, -8) + 2e-5, std::ldexp(1.0, -8) + 2e-5};
    default:             return {std::ldexp(1.0, -11) + 2e-5, std::ldexp(1.0, -11) + 2e-5};
    }
}

const char *sched_name(int s)
{
    return mkg_schedule_get(s)->name;
}

class Gpu : public ::testing::Test {
protected:
    void SetUp() override
    {
        const char *why = mkg_shim_gpu_skip_reason();
        if (*why)
            GTEST_SKIP() << why;
        seed_ = mkg_shim_seed();
        std::printf("[ seed     ] MKG_TEST_SEED=%llu\n", seed_);
    }
    unsigned long long seed_ = 0;
};

std::string shape_str(int m, int n, int k)
{
    return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

// MKG_TEST_SCHEDULES=sub1,sub2 (used under compute-sanitizer to spend its time on new
// rows) runs schedule 0, the bitwise anchor, and the rows whose name contains a listed
// substring; unset, every row runs.
bool schedule_selected(int s)
{
    const char *f = std::getenv("MKG_TEST_SCHEDULES");
    if (s == 0 || !f || !*f)
        return true;
    const std::string name = sched_name(s), list = f;
    size_t at = 0;
    while (at <= list.size()) {
        const size_t end = std::min(list.find(',', at), list.size());
        const std::string sub = list.substr(at, end - at);
        if (!sub.empty() && name.find(sub) != std::string::npos)
            return true;
        at = end + 1;
    }
    return false;
}

// tf32 inputs with an fp32 output: k8 wgmma steps, so twice the accumulator roundings of
// k16 (and the tensor cores may truncate them); the bound grows with K. The max error is
// taken relative to max(max|R|, sqrt(K) / 3), the typical |R| of these random inputs, so a
// tiny block whose largest |R| happens to be small does not decide the check.
// The FP8 tensor cores' accumulation allowance of a K-deep sum (see the header comment).
double fp8_acc_bound(int k)
{
    return std::ldexp(1.0, -11) * std::ceil(k / 32.0);
}

bool tf32_fp32(const mkg_case *c)
{
    return c->in == MKG_DTYPE_FP32 && c->out == MKG_DTYPE_FP32;
}

Bound bound_for_case(const mkg_case *c)
{
    if (c->in == MKG_DTYPE_E4M3) {
        const Bound u = bound_for(c->out);
        const double acc = fp8_acc_bound(c->k);
        return {u.max_rel + acc, u.norm_rel + acc};
    }
    if (!tf32_fp32(c))
        return bound_for(c->out);
    const double v = std::max(2e-5, std::ldexp(1.0, -23) * c->k / 8.0);
    return {v, v};
}

// e4m3 inputs: the accumulation error follows the partial sums, not the final R, so the max
// error is taken relative to max(max|R|, alpha sqrt(K) / 3) as for tf32 (alpha: the scales).
bool floor_rel(const mkg_case *c)
{
    return tf32_fp32(c) || c->in == MKG_DTYPE_E4M3;
}

double max_rel_for_case(const mkg_case *c, const mkg_err_stats &e)
{
    if (!floor_rel(c))
        return e.max_rel_err;
    const double alpha = c->in == MKG_DTYPE_E4M3 ? (double)MKG_SHIM_FP8_A_SCALE * MKG_SHIM_FP8_B_SCALE : 1.0;
    return e.max_abs_err / std::max(e.max_abs_ref, alpha * std::sqrt(static_cast<double>(c->k)) / 3.0);
}

// Cluster split-K rows (mkg_schedule_cluster_k > 1) need a K chunk per CTA of the cluster, so the
// tests that run every row on a one-chunk layer run them at KC = K / CL instead, against the first
// other row that runs that KC (the bits depend on KC, never on the row): this sets the case's KC,
// runs that row on all M rows, keeps its C and returns it (-1 if no row runs that KC).
int keep_cluster_k_reference(mkg_case *c, int s)
{
    if (mkg_case_set_kc(c, c->k / mkg_schedule_cluster_k(s)) != MKG_OK)
        return -1;
    for (int r = 0; r < MKG_SCHED_COUNT; ++r) {
        const mkg_gemm_desc d = mkg_case_desc(c, c->m);
        if (mkg_schedule_cluster_k(r) > 1 || mkg_schedule_check(&d, r) != MKG_OK)
            continue;
        if (mkg_case_run(c, r, 0, c->m) != MKG_OK || mkg_case_keep(c) != MKG_OK)
            return -1;
        return r;
    }
    return -1;
}

// Runs every schedule on one case; checks accuracy, writes outside M x N and
// bitwise equality with schedule 0. Appends the schedules whose bits differ.
void check_all_schedules(mkg_case *c, double *worst_rel, std::vector<int> *differ)
{
    const Bound b = bound_for_case(c);
    const std::string where = shape_str(c->m, c->n, c->k) + " " + mkg_dtype_name(c->in) + "->" +
                              mkg_dtype_name(c->out);
    EXPECT_EQ(mkg_case_reference(c), MKG_OK);
    int first = -1;
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        const mkg_gemm_desc d = mkg_case_desc(c, c->m);
        if (mkg_schedule_check(&d, s) != MKG_OK || !schedule_selected(s))
            continue;                                  // e.g. wgmma N 256 rows on a chunked K
        ASSERT_EQ(mkg_case_run(c, s, 0, c->m), MKG_OK) << where << " " << sched_name(s);
        mkg_err_stats e;
        ASSERT_EQ(mkg_case_errors(c, c->m, &e), MKG_OK);
        EXPECT_EQ(e.nonfinite, 0) << where << " " << sched_name(s) << ": non-finite outputs (unwritten or NaN)";
        const double max_rel = max_rel_for_case(c, e);
        EXPECT_LE(max_rel, b.max_rel) << where << " " << sched_name(s);
        if (!floor_rel(c) || static_cast<long long>(c->m) * c->n >= 64)
            EXPECT_LE(e.norm_rel_err, b.norm_rel) << where << " " << sched_name(s);
        if (max_rel > *worst_rel)
            *worst_rel = max_rel;
        EXPECT_EQ(mkg_case_outside_writes(c, c->m), 0) << where << " " << sched_name(s) << ": wrote outside M x N";
        if (first < 0) {
            first = s;
            EXPECT_EQ(mkg_case_keep(c), MKG_OK);
        } else if (mkg_case_mismatch_vs_keep(c, c->m) != 0) {
            differ->push_back(s);
        }
    }
}

// MKG_TEST_QUICK=1 (used under compute-sanitizer, which slows kernels ~100x)
// keeps the ragged sizes but drops the large ones.
bool quick()
{
    const char *q = std::getenv("MKG_TEST_QUICK");
    return q && *q && *q != '0';
}

void sweep(unsigned long long seed, mkg_dtype in, mkg_dtype out)
{
    const std::vector<int> sizes = quick() ? std::vector<int>{1, 7, 65, 129}
                                           : std::vector<int>{1, 7, 63, 65, 127, 129, 1000, 4097};
    // K: the smallest (16 bytes), one stage, one stage and a ragged part, many stages.
    const std::vector<int> ks = in == MKG_DTYPE_E4M3 ? (quick() ? std::vector<int>{16, 144}
                                                                : std::vector<int>{16, 128, 144, 4096})
                                : quick() ? std::vector<int>{8, 72}
                                          : std::vector<int>{8, 64, 72, 4096};
    double worst = 0.0;
    int shapes = 0;
    std::vector<int> differ_count(MKG_SCHED_COUNT, 0);
    for (int k : ks)
        for (int m : sizes)
            for (int n : sizes) {
                mkg_case c;
                ASSERT_EQ(mkg_case_init(&c, m, n, k, in, out, seed + shapes), MKG_OK);
                std::vector<int> differ;
                check_all_schedules(&c, &worst, &differ);
                for (int s : differ) {
                    ++differ_count[s];
                    ADD_FAILURE() << shape_str(m, n, k) << ": " << sched_name(s) << " differs bitwise from "
                                  << sched_name(0);
                }
                mkg_case_free(&c);
                ++shapes;
                if (::testing::Test::HasFatalFailure())
                    return;
            }
    if (in == MKG_DTYPE_FP32 && out == MKG_DTYPE_FP32)
        std::printf("[ report   ] tf32->fp32: %d shapes x %d schedules, worst max_rel_err %.3g (bound max(2e-5, "
                    "2^-23 K / 8), relative to max(max|R|, sqrt(K) / 3))\n",
                    shapes, MKG_SCHED_COUNT, worst);
    else if (in == MKG_DTYPE_E4M3)
        std::printf("[ report   ] %s->%s: %d shapes x %d schedules, worst max_rel_err %.3g (bound %.3g + 2^-11 K "
                    "/ 32)\n",
                    mkg_dtype_name(in), mkg_dtype_name(out), shapes, MKG_SCHED_COUNT, worst, bound_for(out).max_rel);
    else
        std::printf("[ report   ] %s->%s: %d shapes x %d schedules, worst max_rel_err %.3g (bound %.3g)\n",
                    mkg_dtype_name(in), mkg_dtype_name(out), shapes, MKG_SCHED_COUNT, worst, bound_for(out).max_rel);
    for (int s = 0; s < MKG_SCHED_COUNT; ++s)
        std::printf("[ bitwise  ] %-28s %s\n", sched_name(s),
                    !schedule_selected(s) ? "not run (MKG_TEST_SCHEDULES)"
                    : differ_count[s]     ? "DIFFERS from schedule 0"
                                          : "identical to schedule 0 on every shape");
}

}  // namespace

TEST_F(Gpu, ReferenceGpuMatchesCpu)
{
    const int m = 37, n = 29, k = 72;
    std::vector<uint16_t> a(m * k), b(n * k);
    srand(static_cast<unsigned>(seed_));
    for (auto &v : a)
        v = mkg_float_to_bf16_bits(static_cast<float>(rand()) / RAND_MAX * 2.0f - 1.0f);
    for (auto &v : b)
        v = mkg_float_to_bf16_bits(static_cast<float>(rand()) / RAND_MAX * 2.0f - 1.0f);
    mkg_case c;
    ASSERT_EQ(mkg_case_init(&c, m, n, k, MKG_DTYPE_BF16, MKG_DTYPE_FP32, seed_), MKG_OK);
    ASSERT_EQ(mkg_case_upload(&c, a.data(), b.data()), MKG_OK);
    ASSERT_EQ(mkg_case_reference(&c), MKG_OK);
    std::vector<double> want(m * n), got(m * n);
    mkg_ref_gemm_cpu(a.data(), b.data(), MKG_DTYPE_BF16, m, n, k, k, k, want.data(), n);
    ASSERT_EQ(cudaMemcpy(got.data(), c.ref, got.size() * sizeof(double), cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < m * n; ++i)
        EXPECT_NEAR(got[i], want[i], 1e-12 * (1.0 + std::fabs(want[i]))) << i;
    mkg_case_free(&c);
}

TEST_F(Gpu, EveryScheduleRaggedShapesBf16)
{
    sweep(seed_, MKG_DTYPE_BF16, MKG_DTYPE_BF16);
}

TEST_F(Gpu, EveryScheduleRaggedShapesFp16)
{
    sweep(seed_ + 1000, MKG_DTYPE_FP16, MKG_DTYPE_FP16);
}

// fp32 operands run as tf32; the random inputs are tf32-exact (mkg_fill_random), so the
// FP64 reference sees exactly what the tensor cores do and the fp32 bound applies.
TEST_F(Gpu, EveryScheduleRaggedShapesTf32)
{
    sweep(seed_ + 2000, MKG_DTYPE_FP32, MKG_DTYPE_FP32);
}

// FP8 e4m3 operands with per-tensor scales, bf16 C (the FP8 inference case): every row,
// against the scaled FP64 reference, bitwise equal across rows.
TEST_F(Gpu, EveryScheduleRaggedShapesE4m3)
{
    sweep(seed_ + 3000, MKG_DTYPE_E4M3, MKG_DTYPE_BF16);
}

TEST_F(Gpu, EveryOutputDtype)
{
    const int shapes[][3] = {{129, 1000, 4096}, {7, 4097, 72}, {1000, 63, 64}, {65, 129, 4096}};
    double worst = 0.0;
    for (mkg_dtype in : {MKG_DTYPE_BF16, MKG_DTYPE_FP16, MKG_DTYPE_FP32, MKG_DTYPE_E4M3})
        for (mkg_dtype out : {MKG_DTYPE_BF16, MKG_DTYPE_FP16, MKG_DTYPE_FP32})
            for (const auto &sh : shapes) {
                if (in == MKG_DTYPE_E4M3 && sh[2] % 16 != 0)
                    continue;                              // e4m3 rows need K a multiple of 16
                mkg_case c;
                ASSERT_EQ(mkg_case_init(&c, sh[0], sh[1], sh[2], in, out, seed_ + sh[0]), MKG_OK);
                std::vector<int> differ;
                check_all_schedules(&c, &worst, &differ);
                for (int s : differ)
                    ADD_FAILURE() << shape_str(sh[0], sh[1], sh[2]) << " " << mkg_dtype_name(in) << "->"
                                  << mkg_dtype_name(out) << ": " << sched_name(s) << " differs bitwise";
                mkg_case_free(&c);
            }
}

// A plain store in the input's natural output type runs the kernel compiled for only that
// epilogue (MKG_KV_STORE, or MKG_KV_CHUNKED_STORE for a chunked K); the run-time-epilogue kernel
// must write the same bits, ragged edges (direct stores) included, on every row, with one K chunk
// and with several (the last shapes: KC 1024 and 512, split and cluster split-K rows included).
TEST_F(Gpu, PlainStoreKernelMatchesGenericKernel)
{
    const int shapes[][4] = {{129, 1000, 4096, 0}, {1000, 63, 64, 0}, {65, 129, 144, 0}, {4097, 7, 16, 0},
                             {129, 1000, 4096, 1024}, {7, 2048 + 24, 2048, 512}};
    for (mkg_dtype in : {MKG_DTYPE_BF16, MKG_DTYPE_FP16, MKG_DTYPE_FP32, MKG_DTYPE_E4M3})
        for (const auto &sh : shapes) {
            const mkg_dtype out = in == MKG_DTYPE_E4M3 ? MKG_DTYPE_BF16 : in;
            mkg_case c;
            ASSERT_EQ(mkg_case_init(&c, sh[0], sh[1], sh[2], in, out, seed_ + 17 * sh[0]), MKG_OK);
            if (sh[3])
                ASSERT_EQ(mkg_case_set_kc(&c, sh[3]), MKG_OK);
            ASSERT_EQ(mkg_case_reference(&c), MKG_OK);
            const std::string where = shape_str(sh[0], sh[1], sh[2]) + " kc=" + std::to_string(sh[3]) + " " +
                                      mkg_dtype_name(in);
            int runs = 0;
            for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
                const mkg_gemm_desc d = mkg_case_desc(&c, c.m);
                if (mkg_schedule_check(&d, s) != MKG_OK || !schedule_selected(s))
                    continue;
                ASSERT_EQ(mkg_case_run_flags(&c, s, 0, c.m, MKG_LAUNCH_FLAG_GENERIC_EPILOGUE), MKG_OK)
                    << where << " " << sched_name(s);
                mkg_err_stats e;
                ASSERT_EQ(mkg_case_errors(&c, c.m, &e), MKG_OK);
                EXPECT_EQ(e.nonfinite, 0) << where << " " << sched_name(s) << " (generic)";
                ASSERT_EQ(mkg_case_keep(&c), MKG_OK);
                ASSERT_EQ(mkg_case_run(&c, s, 0, c.m), MKG_OK) << where << " " << sched_name(s);
                EXPECT_EQ(mkg_case_mismatch_vs_keep(&c, c.m), 0)
                    << where << " " << sched_name(s) << ": plain-store kernel differs from the generic one";
                // The plain-store run against the FP64 reference, with check_all_schedules' bounds.
                ASSERT_EQ(mkg_case_errors(&c, c.m, &e), MKG_OK);
                EXPECT_EQ(e.nonfinite, 0) << where << " " << sched_name(s) << " (plain)";
                const Bound b = bound_for_case(&c);
                EXPECT_LE(max_rel_for_case(&c, e), b.max_rel) << where << " " << sched_name(s) << " (plain)";
                if (!floor_rel(&c) || static_cast<long long>(c.m) * c.n >= 64)
                    EXPECT_LE(e.norm_rel_err, b.norm_rel) << where << " " << sched_name(s) << " (plain)";
                EXPECT_EQ(mkg_case_outside_writes(&c, c.m), 0) << where << " " << sched_name(s);
                ++runs;
            }
            EXPECT_GT(runs, 0) << where;
            mkg_case_free(&c);
        }
}

TEST_F(Gpu, BatchInvarianceMPrefixes)
{
    // Rows of runs with M = 1..64 equal the same rows of an M = 4096 run, bitwise,
    // for every schedule against schedule 0's large run.
    mkg_case c;
    ASSERT_EQ(mkg_case_init(&c, 4096, 1031, 4096, MKG_DTYPE_BF16, MKG_DTYPE_BF16, seed_), MKG_OK);
    ASSERT_EQ(mkg_case_run(&c, 0, 0, 4096), MKG_OK);
    ASSERT_EQ(mkg_case_keep(&c), MKG_OK);
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        if (mkg_schedule_cluster_k(s) > 1)
            continue;                                  // below, at KC = K / CL
        for (int m = 1; m <= 64; ++m) {
            ASSERT_EQ(mkg_case_run(&c, s, 0, m), MKG_OK);
            EXPECT_EQ(mkg_case_mismatch_vs_keep(&c, m), 0) << sched_name(s) << " M=" << m;
            EXPECT_EQ(mkg_case_outside_writes(&c, m), 0) << sched_name(s) << " M=" << m;
        }
    }
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        if (mkg_schedule_cluster_k(s) == 1)
            continue;
        const int ref = keep_cluster_k_reference(&c, s);
        ASSERT_GE(ref, 0) << sched_name(s) << ": no row runs KC = K / CL";
        for (int m : {1, 2, 7, 8, 9, 16, 17, 31, 32, 33, 63, 64, 4096}) {
            ASSERT_EQ(mkg_case_run(&c, s, 0, m), MKG_OK) << sched_name(s);
            EXPECT_EQ(mkg_case_mismatch_vs_keep(&c, m), 0) << sched_name(s) << " M=" << m << " vs " << sched_name(ref);
            EXPECT_EQ(mkg_case_outside_writes(&c, m), 0) << sched_name(s) << " M=" << m;
        }
    }
    mkg_case_free(&c);
}

TEST_F(Gpu, RepeatedRunsAndGridSizesAreBitwiseEqual)
{
    mkg_case c;
    ASSERT_EQ(mkg_case_init(&c, 2048, 3072 + 5, 4096, MKG_DTYPE_FP16, MKG_DTYPE_FP32, seed_), MKG_OK);
    ASSERT_EQ(mkg_case_run(&c, 0, 0, c.m), MKG_OK);
    ASSERT_EQ(mkg_case_keep(&c), MKG_OK);
    // Cluster split-K rows last: their reference re-keeps C at KC = K / CL.
    for (int pass = 0; pass < 2; ++pass)
        for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
            if ((mkg_schedule_cluster_k(s) > 1) != (pass == 1))
                continue;
            if (pass == 1)
                ASSERT_GE(keep_cluster_k_reference(&c, s), 0) << sched_name(s) << ": no row runs KC = K / CL";
            for (int rep = 0; rep < 3; ++rep) {
                ASSERT_EQ(mkg_case_run(&c, s, 0, c.m), MKG_OK) << sched_name(s);
                EXPECT_EQ(mkg_case_mismatch_vs_keep(&c, c.m), 0) << sched_name(s) << " run " << rep;
            }
            for (int grid : {1, 7, 66, 131, 132}) {
                ASSERT_EQ(mkg_case_run(&c, s, grid, c.m), MKG_OK) << sched_name(s);
                EXPECT_EQ(mkg_case_mismatch_vs_keep(&c, c.m), 0) << sched_name(s) << " grid " << grid;
            }
        }
    mkg_case_free(&c);
}

// Ping-pong rows: the consumer warpgroups take alternate units of a CTA and hand the ring
// over through named barriers, so the risky cases are many units per CTA (small grids, odd
// and even counts) with K tiles per unit below, at and above the stage count (6), and K
// tiles that are not a multiple of it. Each run must match the cooperative 128x128 row
// bitwise (and so the FP64 reference) and write nothing outside M x N.
TEST_F(Gpu, PingPongHandOffAcrossKTilesAndGrids)
{
    struct KCase {
        mkg_dtype in;
        int k;                                     // K tiles per unit: K / 64 (16-bit), K / 32 (tf32)
    };
    const std::vector<KCase> ks = {{MKG_DTYPE_BF16, 64},  {MKG_DTYPE_BF16, 320}, {MKG_DTYPE_BF16, 384},
                                   {MKG_DTYPE_BF16, 448}, {MKG_DTYPE_BF16, 776}, {MKG_DTYPE_FP16, 1536},
                                   {MKG_DTYPE_FP32, 192}, {MKG_DTYPE_FP32, 232}};
    std::vector<int> pp;                           // every ping-pong row
    for (int s = 0; s < MKG_SCHED_COUNT; ++s)
        if (mkg_schedule_get(s)->pingpong)
            pp.push_back(s);
    ASSERT_FALSE(pp.empty());
    int runs = 0;
    for (const KCase &kc : ks) {
        const int m = 515, n = 520;                // 5 x 5 tiles of 128 x 128 (5 x 3 of 128 x 192), ragged
        mkg_case c;
        ASSERT_EQ(mkg_case_init(&c, m, n, kc.k, kc.in, kc.in, seed_ + kc.k), MKG_OK);
        const std::string where = shape_str(m, n, kc.k) + " " + mkg_dtype_name(kc.in);
        ASSERT_EQ(mkg_case_reference(&c), MKG_OK);
        ASSERT_EQ(mkg_case_run(&c, MKG_SCHED_m128n128k64_s6_rn_g8, 0, m), MKG_OK);
        mkg_err_stats e;
        ASSERT_EQ(mkg_case_errors(&c, m, &e), MKG_OK);
        EXPECT_EQ(e.nonfinite, 0) << where;
        EXPECT_LE(max_rel_for_case(&c, e), bound_for_case(&c).max_rel) << where;
        ASSERT_EQ(mkg_case_keep(&c), MKG_OK);
        for (int s : pp)
            for (int grid : {1, 2, 3, 4, 7, 13, 132}) {
                ASSERT_EQ(mkg_case_run(&c, s, grid, m), MKG_OK) << where << " " << sched_name(s);
                EXPECT_EQ(mkg_case_mismatch_vs_keep(&c, m), 0) << where << " " << sched_name(s) << " grid " << grid;
                EXPECT_EQ(mkg_case_outside_writes(&c, m), 0) << where << " " << sched_name(s) << " grid " << grid;
                ++runs;
            }
        mkg_case_free(&c);
    }
    std::printf("[ pingpong ] %d runs (K tiles per unit 1..24, grids 1..132) bitwise equal to %s\n", runs,
                sched_name(MKG_SCHED_m128n128k64_s6_rn_g8));
}

// Canonical K chunks (SPEC section 5): for layers whose KC < K, every eligible
// schedule, split or not, gives the same bits; M prefixes, grid sizes and repeats too.
// The split-K workspace starts as NaN, so reading a partial before it is written fails.
TEST_F(Gpu, ChunkedKBitwiseAcrossSchedulesSplitsPrefixesAndGrids)
{
    const std::vector<int> ks = quick() ? std::vector<int>{2048} : std::vector<int>{2048, 4096, 8192, 14336};
    for (int k : ks) {
        // Ragged N of 32 decode units (MKG_PLAN_DECODE_ROWS), few enough to be chunked at K >= 6144.
        const int n = 2048 - 24, m = 300;
        // The decode-parallel chunk for this layer (K itself for K < 6144) and a short one.
        const int kc = mkg_plan_kc_decode(n, k, 132);
        for (int kc_try : {kc, 512}) {
            mkg_case c;
            ASSERT_EQ(mkg_case_init(&c, m, n, k, MKG_DTYPE_BF16, MKG_DTYPE_BF16, seed_ + k + kc_try), MKG_OK);
            ASSERT_EQ(mkg_case_set_kc(&c, kc_try), MKG_OK);
            const std::string where = shape_str(m, n, k) + " kc=" + std::to_string(kc_try);
            double worst = 0.0;
            std::vector<int> differ;
            check_all_schedules(&c, &worst, &differ);
            for (int s : differ)
                ADD_FAILURE() << where << ": " << sched_name(s) << " differs bitwise";
            // keep holds the first eligible schedule's full run: prefixes, grids and repeats match it.
            for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
                const mkg_gemm_desc d = mkg_case_desc(&c, m);
                if (mkg_schedule_check(&d, s) != MKG_OK)
                    continue;
                for (int mp : {1, 7, 16, 64}) {
                    ASSERT_EQ(mkg_case_run(&c, s, 0, mp), MKG_OK);
                    EXPECT_EQ(mkg_case_mismatch_vs_keep(&c, mp), 0) << where << " " << sched_name(s) << " M=" << mp;
                    EXPECT_EQ(mkg_case_outside_writes(&c, mp), 0) << where << " " << sched_name(s) << " M=" << mp;
                }
                for (int grid : {66, 132, 66}) {
                    ASSERT_EQ(mkg_case_run(&c, s, grid, m), MKG_OK);
                    EXPECT_EQ(mkg_case_mismatch_vs_keep(&c, m), 0) << where << " " << sched_name(s) << " grid " << grid;
                }
            }
            std::printf("[ chunked  ] %s: worst max_rel_err %.3g, %zu schedules differ\n", where.c_str(), worst,
                        differ.size());
            mkg_case_free(&c);
        }
    }
}

// FP8 through the chunk fold: the per-tensor scale multiplies the folded FP32 sum once, so
// split and non-split rows still give the same bits (KC = 512: 4 stages of 128 elements).
TEST_F(Gpu, ChunkedKE4m3BitwiseAcrossSchedulesAndSplits)
{
    const int m = 300, n = 2048 + 24, k = quick() ? 2048 : 4096;
    mkg_case c;
    ASSERT_EQ(mkg_case_init(&c, m, n, k, MKG_DTYPE_E4M3, MKG_DTYPE_BF16, seed_ + 77), MKG_OK);
    ASSERT_EQ(mkg_case_set_kc(&c, 512), MKG_OK);
    double worst = 0.0;
    std::vector<int> differ;
    check_all_schedules(&c, &worst, &differ);
    for (int s : differ)
        ADD_FAILURE() << shape_str(m, n, k) << " e4m3 kc=512: " << sched_name(s) << " differs bitwise";
    std::printf("[ chunked  ] e4m3 %s kc=512: worst max_rel_err %.3g, %zu schedules differ\n",
                shape_str(m, n, k).c_str(), worst, differ.size());
    mkg_case_free(&c);
}

// FP8 block scales (1 x 128 activations, 128 x 128 weights; kc = 128, the block): every
// schedule that runs them (chunk-capable rows) against the FP64 reference on dequantized
// operands, bitwise equal to each other and across split counts (the sk rows), M prefixes
// equal to the full run's rows, no writes outside M x N. The activation scales carry a NaN pad
// past M, so a stored row that read its scale with the wrong stride shows up (rows past M read
// a clamped index and are never stored). Scales: log-uniform in [1/8, 8); then every scale 2^-60 (a tiny factor,
// 2^-120, still a normal float); then the weight scales 0 (C must be exactly 0).
// Bound: as for per-tensor e4m3, u(out) + 2^-11 K / 32, relative to max |R| (the scales change
// the magnitudes, so no sqrt(K) floor).
TEST_F(Gpu, BlockScaledE4m3AcrossSchedulesSplitsAndPrefixes)
{
    struct Shape {
        int m, n, k;
        float lo, hi;
    };
    const Shape shapes[] = {{300, 520, 1040, 0.125f, 8.0f}, {77, 200, 384, 0.125f, 8.0f},
                            {1, 136, 256, 0.125f, 8.0f},    {129, 264, 128, 0.125f, 8.0f},
                            {65, 130, 640, 0x1p-60f, 0x1p-60f}};
    int checked = 0;
    for (const Shape &sh : shapes) {
        for (mkg_dtype out : {MKG_DTYPE_BF16, MKG_DTYPE_FP32}) {
            mkg_case c;
            ASSERT_EQ(mkg_case_init(&c, sh.m, sh.n, sh.k, MKG_DTYPE_E4M3, out, seed_ + 91 + (unsigned)sh.k), MKG_OK);
            ASSERT_EQ(mkg_case_set_block_scales(&c, seed_ + 13 * (unsigned)sh.n, sh.lo, sh.hi), MKG_OK);
            ASSERT_EQ(mkg_case_reference(&c), MKG_OK);
            const Bound ub = bound_for(out);
            const double bound = ub.max_rel + fp8_acc_bound(sh.k);
            const std::string what = shape_str(sh.m, sh.n, sh.k) + (out == MKG_DTYPE_BF16 ? " ->bf16" : " ->fp32");
            int first = -1;
            double worst = 0.0;
            for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
                const mkg_gemm_desc d = mkg_case_desc(&c, sh.m);
                if (mkg_schedule_check(&d, s) != MKG_OK)
                    continue;                 // rows that cannot fold chunks (wgmma N > 128, multicast cluster,
                                              // ping-pong) or need more chunks (cluster split-K)
                ASSERT_EQ(mkg_case_run(&c, s, 0, sh.m), MKG_OK) << what << " " << sched_name(s);
                mkg_err_stats e;
                ASSERT_EQ(mkg_case_errors(&c, sh.m, &e), MKG_OK);
                EXPECT_EQ(e.nonfinite, 0) << what << " " << sched_name(s);
                EXPECT_LE(e.max_rel_err, bound) << what << " " << sched_name(s);
                EXPECT_EQ(mkg_case_outside_writes(&c, sh.m), 0) << what << " " << sched_name(s);
                worst = std::max(worst, e.max_rel_err);
                if (first < 0) {
                    first = s;
                    ASSERT_EQ(mkg_case_keep(&c), MKG_OK);
                } else {
                    EXPECT_EQ(mkg_case_mismatch_vs_keep(&c, sh.m), 0)
                        << what << " " << sched_name(s) << " differs bitwise from " << sched_name(first);
                }
                ++checked;
            }
            ASSERT_GE(first, 0) << what << ": no schedule runs block scales";
            // M prefixes: the first rows of a smaller run equal the full run's.
            for (int mp : {1, 7, 64}) {
                if (mp >= sh.m)
                    continue;
                ASSERT_EQ(mkg_case_run(&c, first, 0, mp), MKG_OK);
                EXPECT_EQ(mkg_case_mismatch_vs_keep(&c, mp), 0) << what << " M prefix " << mp;
            }
            std::printf("[ blockfp8 ] %s scales [%g, %g): worst max_rel_err %.3g (bound %.3g)\n", what.c_str(),
                        (double)sh.lo, (double)sh.hi, worst, bound);
            // Zero weight scales: C is exactly zero.
            const long long kb = (sh.k + 127) / 128, nb = (sh.n + 127) / 128;
            ASSERT_EQ(cudaMemset(c.bsb, 0, (size_t)(kb * nb) * sizeof(float)), cudaSuccess);
            ASSERT_EQ(mkg_case_reference(&c), MKG_OK);
            ASSERT_EQ(mkg_case_run(&c, first, 0, sh.m), MKG_OK);
            mkg_err_stats z;
            ASSERT_EQ(mkg_case_errors(&c, sh.m, &z), MKG_OK);
            EXPECT_EQ(z.max_abs_err, 0.0) << what << ": zero scales";
            EXPECT_EQ(z.nonfinite, 0) << what << ": zero scales";
            mkg_case_free(&c);
        }
    }
    EXPECT_GT(checked, 0);
}

// Programmatic dependent launch: a GEMM that consumes the previous GEMM's output and is
// launched with MKG_LAUNCH_FLAG_PDL must not read it early, and one that overwrites an
// input the previous GEMM still reads must not write it early (griddepcontrol.wait), on a
// plain n256, a chunk-capable n128, a cluster, a ping-pong, a swap and a 128-deep swap row;
// unknown flag bits are refused.
TEST_F(Gpu, PdlLaunchedChainMatchesPlainLaunches)
{
    const int rows[] = {MKG_SCHED_m128n256k64_s4_rm_g8,     MKG_SCHED_m128n128k64_s6_rn_g8,
                        MKG_SCHED_m128n256k64_s4_rn_g8_c2,  MKG_SCHED_m128n128k64_s6_rm_g8_pp,
                        MKG_SCHED_m16n128k64_s8_swap_rn_g8, MKG_SCHED_m16n64k128_s8_swap_rn_g8};
    for (int s : rows) {
        for (int m : {16, 1000}) {
            long long mismatch = -1;
            mkg_status bad = MKG_OK;
            ASSERT_EQ(mkg_shim_pdl_chain(s, m, 1024, 512, 768, 8, seed_ + (unsigned)m, &mismatch, &bad), MKG_OK)
                << sched_name(s);
            EXPECT_EQ(mismatch, 0) << sched_name(s) << " M=" << m << ": the PDL-launched chain differs";
            EXPECT_EQ(bad, MKG_ERR_BAD_FLAGS);
        }
    }
}

TEST_F(Gpu, NanAndInfPropagate)
{
    // K = 512: four 128-deep chunks, so the cluster split-K rows (a chunk per CTA) run it too.
    const int m = 130, n = 136, k = 512;
    std::vector<float> a(m * k), b(n * k);
    srand(static_cast<unsigned>(seed_));
    for (auto &v : a)
        v = static_cast<float>(rand()) / RAND_MAX - 0.5f;
    for (auto &v : b)
        v = static_cast<float>(rand()) / RAND_MAX - 0.5f;
    a[5 * k + 17] = NAN;                         // row 5 of C: all NaN
    for (int i = 0; i < m; ++i)
        a[i * k + 33] = a[i * k + 40] = a[i * k + 41] = 1.0f;
    a[9 * k + 33] = -1.0f;
    b[7 * k + 33] = INFINITY;                    // column 7: +inf, row 9: -inf
    b[8 * k + 40] = INFINITY;                    // column 8: inf - inf = NaN
    b[8 * k + 41] = -INFINITY;
    for (mkg_dtype in : {MKG_DTYPE_BF16, MKG_DTYPE_FP16, MKG_DTYPE_FP32})
        for (mkg_dtype out : {MKG_DTYPE_BF16, MKG_DTYPE_FP16, MKG_DTYPE_FP32}) {
            std::vector<float> ah(m * k), bh(n * k);          // room for any input dtype
            for (int i = 0; i < m * k; ++i)
                mkg_store_float(ah.data(), in, i, a[i]);
            for (int i = 0; i < n * k; ++i)
                mkg_store_float(bh.data(), in, i, b[i]);
            // Expected classes from IEEE double arithmetic on the rounded inputs.
            std::vector<double> want(m * n);
            mkg_ref_gemm_cpu(ah.data(), bh.data(), in, m, n, k, k, k, want.data(), n);
            mkg_case c;
            ASSERT_EQ(mkg_case_init(&c, m, n, k, in, out, seed_), MKG_OK);
            ASSERT_EQ(mkg_case_upload(&c, ah.data(), bh.data()), MKG_OK);
            std::vector<unsigned char> host(static_cast<size_t>(m) * n * mkg_dtype_size(out));
            for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
                const int ck = mkg_schedule_cluster_k(s);
                ASSERT_EQ(mkg_case_set_kc(&c, ck > 1 ? k / ck : k), MKG_OK);
                ASSERT_EQ(mkg_case_run(&c, s, 0, m), MKG_OK) << sched_name(s) << " " << mkg_dtype_name(in);
                ASSERT_EQ(mkg_case_download(&c, host.data()), MKG_OK);
                int bad = 0;
                for (int i = 0; i < m * n && bad < 5; ++i) {
                    const float g = mkg_load_float(host.data(), out, i);
                    const double w = want[i];
                    const bool ok = std::isnan(w) ? std::isnan(g)
                                    : std::isinf(w) ? (std::isinf(g) && std::signbit(g) == std::signbit(w))
                                                    : std::isfinite(g);
                    if (!ok) {
                        ++bad;
                        ADD_FAILURE() << sched_name(s) << " " << mkg_dtype_name(in) << "->" << mkg_dtype_name(out)
                                      << " C[" << i / n << "][" << i % n << "] = " << g << ", expected class of "
                                      << w;
                    }
                }
            }
            EXPECT_TRUE(std::isnan(want[5 * n + 0]));
            EXPECT_TRUE(std::isinf(want[0 * n + 7]) && want[7] > 0);
            EXPECT_TRUE(std::isinf(want[9 * n + 7]) && want[9 * n + 7] < 0);
            EXPECT_TRUE(std::isnan(want[0 * n + 8]));
            mkg_case_free(&c);
        }
}

TEST_F(Gpu, InvalidInputLaunchesNothing)
{
    mkg_case c;
    ASSERT_EQ(mkg_case_init(&c, 100, 200, 64, MKG_DTYPE_BF16, MKG_DTYPE_BF16, seed_), MKG_OK);
    ASSERT_EQ(mkg_case_poison(&c), MKG_OK);
    mkg_gemm_desc d = mkg_case_desc(&c, 100);
    d.ldc = 199;
    EXPECT_EQ(mkg_gemm(&d, 0, 0), MKG_ERR_LDC_TOO_SMALL);
    d = mkg_case_desc(&c, 100);
    EXPECT_EQ(mkg_gemm(&d, MKG_SCHED_COUNT, 0), MKG_ERR_UNKNOWN_SCHEDULE);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(mkg_case_outside_writes(&c, 0), 0) << "C changed although nothing valid was launched";
    // The valid one-shot call then writes exactly M x N.
    EXPECT_EQ(mkg_gemm(&d, 0, 0), MKG_OK);
    EXPECT_EQ(mkg_case_outside_writes(&c, 100), 0);
    EXPECT_GT(mkg_case_outside_writes(&c, 0), 0);
    mkg_case_free(&c);
}
