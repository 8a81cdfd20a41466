// gpu_megakernel_test.cc - the sample megakernel on the GPU against its reference path
// (cuBLAS + plain kernels, same weights): hidden states and logits after 1 and 16
// layers, decode and prefill, within a stated bf16 tolerance; repeated runs bitwise
// equal; batch invariance of the logits (sequence 0 alone vs inside a batch of 8);
// and a forced stall that must come back as a clean error within a second. The prefill
// attention op (shared by both paths) is checked on its own against FP64 attention.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mkg_mk_runner.h"
#include "mkg_mk_test_shims.h"
#include "mkg_schedules.h"
#include "mkg_test_shims.h"

namespace {

// NOTE: bf16 activations with FP32 accumulation; cuBLAS and mkgemm sum K in different
// orders, so intermediate tensors differ by about one bf16 ulp (2^-8 relative) and the
// difference is carried through the layers. Bounds are normwise: max |diff| / max |ref|.
constexpr double kTol1Layer = 2e-2;
constexpr double kTol16Layers = 5e-2;

mkg_model_config test_config(int layers)
{
    mkg_model_config c = mkg_model_config_llama32_1b();
    c.layers = layers;
    c.max_ctx = 2048;
    c.max_batch = 64;
    c.max_tokens = 512;
    return c;
}

class Megakernel : public ::testing::Test {
protected:
    void SetUp() override
    {
        const char *why = mkg_shim_gpu_skip_reason();
        if (*why)
            GTEST_SKIP() << why;
    }
};

void run_cases(int layers, double tol)
{
    const mkg_model_config c = test_config(layers);
    mkg_mk_runner *r = nullptr;
    ASSERT_EQ(mkg_mk_runner_create(&c, &r), 0);
    const mkg_mk_case cases[] = {
        {"decode", 1, 1000, 1}, {"decode", 8, 300, 1}, {"decode", 64, 200, 1}, {"prefill", 100, 0, 1},
        {"prefill", 512, 64, 0}};
    for (const mkg_mk_case &k : cases) {
        mkg_mk_result res;
        ASSERT_EQ(mkg_mk_runner_case(r, &k, 0, &res), 0);
        ASSERT_EQ(res.status, MKG_OK) << k.phase << " " << k.tokens << ": " << mkg_status_name(res.status)
                                      << " stall task " << (int)res.stall[0] - 1 << " dispatch " << res.dispatch_err;
        EXPECT_LT(res.x_rel_err, tol) << k.phase << " " << k.tokens << " hidden states";
        EXPECT_LT(res.logits_rel_err, tol) << k.phase << " " << k.tokens << " logits";
        EXPECT_TRUE(res.repeat_bitexact) << k.phase << " " << k.tokens << ": repeated runs differ";
        printf("[ report   ] %d layer(s) %s %d tokens: hidden rel err %.2e, logits rel err %.2e, repeat %s\n",
               layers, k.phase, k.tokens, res.x_rel_err, res.logits_rel_err,
               res.repeat_bitexact ? "bitwise" : "DIFFERS");
    }
    mkg_mk_runner_destroy(r);
}

// One megakernel step of case k from the inputs of `seed` (mkg_mk_runner_inputs sets the step's
// logits to NaN first), then logits rows rows[0 .. n) to out[0 .. n), each c.vocab values.
void step_logits(mkg_mk_runner *r, const mkg_mk_case &k, unsigned long long seed, const int *rows, int n,
                 std::vector<unsigned short> *out)
{
    mkg_mk *mk = mkg_mk_runner_mk(r);
    cudaStream_t s = mkg_mk_runner_stream(r);
    const int prefill = k.phase[0] == 'p';
    ASSERT_EQ(mkg_mk_runner_inputs(r, &k, seed), 0);
    ASSERT_EQ(mkg_mk_step(mk, k.tokens, prefill, prefill ? k.pos : 0, k.lm_head, s), MKG_OK);
    unsigned int stall[4], derr;
    ASSERT_EQ(mkg_mk_check(mk, s, stall, &derr), MKG_OK)
        << k.phase << " " << k.tokens << ": stall task " << (int)stall[0] - 1 << " dispatch " << derr;
    for (int i = 0; i < n; ++i) {
        out[i].resize(mkg_mk_runner_model(r)->cfg.vocab);
        ASSERT_EQ(mkg_mk_runner_logits_row(r, rows[i], out[i].data()), 0);
    }
}

// A launch option (mkg_mk_set_launch_opts) that must change no bit: decode at batch 1 and 8 and a
// prefill step (or the n steps of `cases`), without `bits`, twice with them and once more without,
// give equal logits in every row (the last run checks that the reference repeats). The runs
// without `bits` also leave out the per-step bits (MKG_MK_OPT_STEP_BITS), so that an option such
// as TWO_PRODUCERS is compared with a run that really lacks it in every step.
void expect_launch_option_keeps_the_bits(unsigned int bits, const char *what, const mkg_mk_case *cases = nullptr,
                                         int n = 0, int max_tokens = 512)
{
    mkg_model_config c = test_config(2);
    c.max_tokens = max_tokens;
    mkg_mk_runner *r = nullptr;
    ASSERT_EQ(mkg_mk_runner_create(&c, &r), 0);
    mkg_mk *mk = mkg_mk_runner_mk(r);
    const unsigned int saved = mkg_mk_opts(mk), base = saved & ~bits & ~MKG_MK_OPT_STEP_BITS;
    const mkg_mk_case standard[] = {{"decode", 1, 300, 1}, {"decode", 8, 40, 1}, {"prefill", 100, 0, 1}};
    if (!cases) {
        cases = standard;
        n = 3;
    }
    for (int ki = 0; ki < n; ++ki) {
        const mkg_mk_case &k = cases[ki];
        const int rows[] = {0, k.tokens - 1};
        std::vector<unsigned short> want[2], got[2];
        const unsigned int runs[] = {base, base | bits, base | bits, base};
        for (int run = 0; run < 4; ++run) {
            mkg_mk_set_launch_opts(mk, runs[run]);
            ASSERT_NO_FATAL_FAILURE(step_logits(r, k, 5, rows, 2, run == 0 ? want : got));
            for (int i = 0; i < 2; ++i) {
                if (run == 0) {             // the NaN poison left in place would compare equal too
                    const unsigned short poison = 0xFFFFu;
                    EXPECT_EQ(std::count(want[i].begin(), want[i].end(), poison), 0)
                        << k.phase << " " << k.tokens << " tokens: logits row " << rows[i] << " not written";
                    continue;
                }
                EXPECT_EQ(memcmp(want[i].data(), got[i].data(), got[i].size() * 2), 0)
                    << k.phase << " " << k.tokens << " tokens, logits row " << rows[i] << ", run " << run << ": "
                    << (runs[run] & bits ? what : "the reference does not repeat");
            }
        }
    }
    mkg_mk_set_launch_opts(mk, saved);
    mkg_mk_runner_destroy(r);
}

} // namespace

TEST_F(Megakernel, OneLayerMatchesReference)
{
    run_cases(1, kTol1Layer);
}

TEST_F(Megakernel, SixteenLayersMatchReference)
{
    run_cases(16, kTol16Layers);
}

// Prefill attention (mkg_op_attention_prefill, tensor cores) against causal attention in FP64:
// RoPE, the KV-cache append and the softmax over the cache and the step's keys, on steps that
// start at position 0 and later in the context, with a partial query block (tokens % 64 != 0)
// and a pos0 that is no multiple of a key tile. Bound: q, P and the output enter or leave in
// bf16 (2^-9 relative each), so 1e-2 normwise; the appended k is one bf16 rounding of the
// rotated value; v is copied.
TEST_F(Megakernel, PrefillAttentionMatchesFp64)
{
    const int cases[][2] = {{100, 0}, {130, 45}, {200, 700}, {64, 31}};
    for (const auto &k : cases) {
        mkg_attn_check r;
        ASSERT_EQ(mkg_shim_prefill_attention_check(k[0], k[1], 17 + k[1], &r), 0);
        printf("[ report   ] prefill attention, %d tokens at %d: attn err %.2e, appended k err %.2e\n", k[0], k[1],
               r.attn_err, r.k_err);
        EXPECT_LT(r.attn_err, 1e-2) << k[0] << " tokens at " << k[1];
        EXPECT_LT(r.k_err, 1e-2) << k[0] << " tokens at " << k[1];
        EXPECT_TRUE(r.v_exact) << k[0] << " tokens at " << k[1];
        EXPECT_TRUE(r.others_untouched) << k[0] << " tokens at " << k[1];
    }
}

// Sequence 0 decoded alone and as row 0 of a batch of 3 or 8 gives bitwise-equal logits.
TEST_F(Megakernel, LogitsAreBatchInvariant)
{
    const mkg_model_config c = test_config(2);
    mkg_mk_runner *r = nullptr;
    ASSERT_EQ(mkg_mk_runner_create(&c, &r), 0);
    std::vector<unsigned short> alone, batched;
    const int row0 = 0;
    // Batches 1 and 3 split decode attention over CTAs, batch 8 does not (mkg_mk_attn_split).
    // Positions: 0 and 16 (one or two key blocks: 63 or 62 of the 64 key ranges empty), 777 (49
    // blocks: ranges of 0 or 1 block), 1500 and 1990 (94 and 125 blocks: ranges of 1 or 2 blocks).
    for (int pos : {777, 0, 16, 1500, 1990})
        for (int batch : {1, 8, 3}) {
            const mkg_mk_case k = {"decode", batch, pos, 1};
            ASSERT_NO_FATAL_FAILURE(step_logits(r, k, 99, &row0, 1, batch == 1 ? &alone : &batched));
            if (batch != 1)
                EXPECT_EQ(memcmp(alone.data(), batched.data(), alone.size() * 2), 0)
                    << "logits of sequence 0 at position " << pos << " differ between batch 1 and batch " << batch;
        }
    mkg_mk_runner_destroy(r);
}

// Rows with wgmma N > 128 on the one-chunk layers (MKG_DISPATCH_WIDE: one unit per step, the
// epilogue straight from the accumulators, no chunk fold), with their fused epilogues (SiLU-mul,
// residual) and dependency counts: forced on qkv, o and gate_up in every M bucket, prefill and
// decode steps give the same logits, bit for bit, as the planner's rows.
TEST_F(Megakernel, WideRowsKeepTheBits)
{
    const mkg_model_config c = test_config(2);
    mkg_mk_runner *base = nullptr, *wide = nullptr;
    ASSERT_EQ(mkg_mk_runner_create(&c, &base), 0);
    setenv("MKG_MK_FORCE",
           "qkv:m128n192k64_s4_rm_g8@4096,o:m128n256k64_s4_rm_g8@4096,gate_up:m128n256k64_s4_rm_g8@4096", 1);
    const int made = mkg_mk_runner_create(&c, &wide);
    unsetenv("MKG_MK_FORCE");
    ASSERT_EQ(made, 0);
    const mkg_layer_plan *plans = mkg_mk_plans(mkg_mk_runner_mk(wide));
    for (int row = 0; row < 3; ++row)               // layer 0's qkv, o, gate_up (mkg_mk_graph.h)
        for (int m : {1, 8, 100, 512})
            EXPECT_GT(mkg_schedule_wgmma_n(plans[row].schedule[mkg_bucket_of(m)]), MKG_CHUNKED_MAX_WN)
                << "table row " << row << " M " << m << ": the forced wide row did not take (not one K chunk?)";
    const mkg_mk_case cases[] = {{"prefill", 512, 0, 1}, {"prefill", 100, 64, 1}, {"decode", 8, 40, 1}};
    for (const mkg_mk_case &k : cases) {
        const int rows[] = {0, k.tokens - 1};
        std::vector<unsigned short> want[2], got[2];
        ASSERT_NO_FATAL_FAILURE(step_logits(base, k, 7, rows, 2, want));
        ASSERT_NO_FATAL_FAILURE(step_logits(wide, k, 7, rows, 2, got));
        for (int i = 0; i < 2; ++i) {
            EXPECT_EQ(std::count(want[i].begin(), want[i].end(), (unsigned short)0xFFFFu), 0)
                << k.phase << " " << k.tokens << " tokens: logits row " << rows[i] << " not written";
            EXPECT_EQ(memcmp(want[i].data(), got[i].data(), got[i].size() * 2), 0)
                << k.phase << " " << k.tokens << " tokens, logits row " << rows[i] << ": wide rows differ";
        }
    }
    mkg_mk_runner_destroy(wide);
    mkg_mk_runner_destroy(base);
}

// MKG_MK_OPT_TWO_PRODUCERS (two threads fill alternate ring slots, one of them polls the
// inputs). Its ring drain on a layout change (gate_up -> down at M = 1 and 8) is the path session
// 23's review fixed.
TEST_F(Megakernel, TwoProducerOptionKeepsTheBits)
{
    expect_launch_option_keeps_the_bits(MKG_MK_OPT_TWO_PRODUCERS, "two producers differ from one");
}

// MKG_MK_OPT_STEP_BITS (options chosen per step, mkg_mk_step_opts): two producers in the prefill
// step only and WARM at batch 1 only, against one producer and WARM in every step.
TEST_F(Megakernel, StepOptionsKeepTheBits)
{
    expect_launch_option_keeps_the_bits(MKG_MK_OPT_STEP_BITS, "the options chosen per step differ from fixed ones");
}

// MKG_MK_OPT_RING_BY_GEOMETRY: the ring keyed by stage geometry (down -> qkv without a drain at M = 1
// and 8). MKG_MK_OPT_RING_HANDOVER: a layout change that waits per new slot for the old stages
// under it (gate_up's 5 x 34 KB -> down's 8 x 20 KB at M = 1 and 8, the prefill rows' rings at 100
// tokens) in a build with MKG_MK_RING_GATES=ON, else the same as by geometry; with two
// producers it keys and starts the same way and drains the whole ring.
TEST_F(Megakernel, RingLayoutOptionsKeepTheBits)
{
    expect_launch_option_keeps_the_bits(MKG_MK_OPT_RING_BY_GEOMETRY,
                                        "the ring keyed by geometry differs from the run without");
    expect_launch_option_keeps_the_bits(MKG_MK_OPT_RING_HANDOVER, "the ring handover differs from the run without");
    expect_launch_option_keeps_the_bits(MKG_MK_OPT_RING_HANDOVER | MKG_MK_OPT_TWO_PRODUCERS,
                                        "the ring handover with two producers differs from the run without");
}

// MKG_MK_OPT_READY_IN_ORDER is a table bit (fixed at mkg_mk_create, from MKG_MK_OPTS): models
// created without it and with it must give the same logits bit for bit (same seed, same inputs).
TEST_F(Megakernel, ReadyInOrderOptionKeepsTheBits)
{
    const mkg_model_config c = test_config(2);
    const char *env = getenv("MKG_MK_OPTS");
    const std::string saved = env ? env : "";
    const unsigned int base =
        (env && *env ? (unsigned int)strtoul(env, nullptr, 0) : MKG_MK_OPT_DEFAULT) &
        ~(MKG_MK_OPT_TWO_PRODUCERS | MKG_MK_OPT_TWO_PRODUCERS_PREFILL);
    const mkg_mk_case cases[] = {{"decode", 1, 300, 1}, {"decode", 8, 40, 1}, {"prefill", 100, 0, 1}};
    constexpr int kCases = 3;
    std::vector<unsigned short> logits[2][kCases][2];
    unsigned int opts[2] = {0u, 0u};
    for (int v = 0; v < 2; ++v) {
        char buf[32];
        snprintf(buf, sizeof buf, "%u", v ? base | MKG_MK_OPT_READY_IN_ORDER : base & ~MKG_MK_OPT_READY_IN_ORDER);
        setenv("MKG_MK_OPTS", buf, 1);
        mkg_mk_runner *r = nullptr;
        const int rc = mkg_mk_runner_create(&c, &r);
        if (env)
            setenv("MKG_MK_OPTS", saved.c_str(), 1);
        else
            unsetenv("MKG_MK_OPTS");
        ASSERT_EQ(rc, 0);
        opts[v] = mkg_mk_opts(mkg_mk_runner_mk(r));
        for (int i = 0; i < kCases; ++i) {
            const int rows[] = {0, cases[i].tokens - 1};
            ASSERT_NO_FATAL_FAILURE(step_logits(r, cases[i], 5, rows, 2, logits[v][i]));
        }
        mkg_mk_runner_destroy(r);
    }
    ASSERT_EQ(opts[0] & MKG_MK_OPT_READY_IN_ORDER, 0u) << "the option stayed on";
    ASSERT_NE(opts[1] & MKG_MK_OPT_READY_IN_ORDER, 0u) << "the option did not take";
    for (int i = 0; i < kCases; ++i)
        for (int j = 0; j < 2; ++j) {
            const unsigned short poison = 0xFFFFu;
            EXPECT_EQ(std::count(logits[0][i][j].begin(), logits[0][i][j].end(), poison), 0)
                << cases[i].phase << " " << cases[i].tokens << " tokens: logits row " << j << " not written";
            EXPECT_EQ(memcmp(logits[0][i][j].data(), logits[1][i][j].data(), logits[0][i][j].size() * 2), 0)
                << cases[i].phase << " " << cases[i].tokens << " tokens, logits row " << j
                << ": the in-order loads differ from weights first";
        }
}

// MKG_MK_OPT_NORM_IN_GEMM: at decode batch 1 each RMSNorm runs inside the GEMM that reads it (a
// warp writes the normalised row into the stages as A) with the norm op's arithmetic, so the logits
// must not change by a bit; batch 8 and prefill do not use it and must not change either.
TEST_F(Megakernel, NormInGemmOptionKeepsTheBits)
{
    expect_launch_option_keeps_the_bits(MKG_MK_OPT_NORM_IN_GEMM, "the norms inside the GEMMs differ from norm tasks");
}

// MKG_MK_OPT_ROPE_ONCE: prefill attention items rotate and append only their own tokens' keys and
// read the others' from the cache after their flags, with mkg_op_prefill_convert's arithmetic, so
// no bit may change: steps of 100 tokens at position 0 and of 200 at 45 (four row blocks, keys
// from earlier steps in the cache, a start inside a key tile), and a decode step (unaffected).
TEST_F(Megakernel, RopeOnceOptionKeepsTheBits)
{
    const mkg_mk_case cases[] = {{"prefill", 100, 0, 1}, {"prefill", 200, 45, 1}, {"decode", 8, 40, 1}};
    expect_launch_option_keeps_the_bits(MKG_MK_OPT_ROPE_ONCE, "rotate-once prefill attention differs", cases, 3);
}

// MKG_MK_OPT_ATTN_FOLD (with ROPE_ONCE: each item waits for its own QKV row block; folded, a CTA's
// second item is the longest left and its first item appends and flags the second's keys) moves only
// who appends which keys and when items start and wait: no bit may change. Steps of 2048 tokens at
// position 0 (256 items on 132 SMs: folded), of 1100 at 45 (144 items; a start inside a key tile) and
// of 200 at 0 (32 items: not folded, the narrowed wait only).
TEST_F(Megakernel, AttentionFoldOptionKeepsTheBits)
{
    const mkg_mk_case cases[] = {{"prefill", 2048, 0, 1}, {"prefill", 1100, 45, 1}, {"prefill", 200, 0, 1}};
    expect_launch_option_keeps_the_bits(MKG_MK_OPT_ATTN_FOLD, "the folded deal with partner keys differs", cases, 3,
                                        2048);
}

// Small steps for compute-sanitizer (memcheck, racecheck, synccheck): 2 layers, decode of 1
// token (the norms inside the GEMMs, WARM), of 4 and of 64 (more attention items than CTAs:
// several items a CTA), and prefill, with waits long enough for the instrumented run.
TEST_F(Megakernel, TwoLayerStepsForSanitizers)
{
    mkg_model_config c = test_config(2);
    c.max_tokens = 128;
    mkg_mk_runner *r = nullptr;
    ASSERT_EQ(mkg_mk_runner_create(&c, &r), 0);
    mkg_mk *mk = mkg_mk_runner_mk(r);
    cudaStream_t s = mkg_mk_runner_stream(r);
    mkg_mk_set_timeout_ms(mk, 120000.0);
    const mkg_mk_case cases[] = {{"decode", 1, 50, 1}, {"decode", 4, 50, 1}, {"decode", 64, 50, 1},
                                 {"prefill", 100, 0, 0}};
    for (const mkg_mk_case &k : cases) {
        ASSERT_EQ(mkg_mk_runner_inputs(r, &k, 3), 0);
        ASSERT_EQ(mkg_mk_step(mk, k.tokens, k.phase[0] == 'p', 0, k.lm_head, s), MKG_OK);
        unsigned int stall[4], derr;
        EXPECT_EQ(mkg_mk_check(mk, s, stall, &derr), MKG_OK) << k.phase << " stall task " << (int)stall[0] - 1;
    }
    mkg_mk_runner_destroy(r);
}

namespace {

// A dependency that never completes: layer 0's FFN norm (task 4, which waits on the O GEMM) waits
// for one element more than exists, in a decode step of `tokens` tokens under the model's options
// plus `add`. The kernel must record the stalled wait and exit within a second, and the next step
// run normally. may_be_next: the GEMM right after the norm may be the one whose wait runs out (its
// producer starts waiting first, while it prefetches weights); else the record names the norm.
void expect_forced_stall_is_clean(int tokens, unsigned int add, bool may_be_next)
{
    const mkg_model_config c = test_config(2);
    mkg_mk_runner *r = nullptr;
    ASSERT_EQ(mkg_mk_runner_create(&c, &r), 0);
    mkg_mk *mk = mkg_mk_runner_mk(r);
    cudaStream_t s = mkg_mk_runner_stream(r);
    const unsigned int saved = mkg_mk_opts(mk);
    mkg_mk_set_launch_opts(mk, saved | add);
    const int task = 4;
    mkg_mk_set_timeout_ms(mk, 200.0);
    mkg_mk_force_stall(mk, task, 1);
    const mkg_mk_case k = {"decode", tokens, 100, 1};
    ASSERT_EQ(mkg_mk_runner_inputs(r, &k, 5), 0);
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(mkg_mk_step(mk, tokens, 0, 0, 1, s), MKG_OK);
    unsigned int stall[4], derr = 0;
    EXPECT_EQ(mkg_mk_check(mk, s, stall, &derr), MKG_ERR_STALLED);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int who = (int)stall[0] - 1;
    EXPECT_TRUE(who == task || (may_be_next && who == task + 1)) << "the stall record names task " << who;
    EXPECT_EQ(stall[1], 0u) << "row block";
    EXPECT_EQ(stall[2], (unsigned int)tokens * c.hidden + (who == task ? 1u : 0u)) << "target";
    EXPECT_LT(stall[3], stall[2]) << "value seen";
    EXPECT_EQ(derr, 0u);
    EXPECT_LT(secs, 1.0) << "the kernel returned after " << secs << " s";
    printf("[ report   ] forced stall on task %u (%d tokens) came back in %.3f s (target %u, seen %u)\n",
           stall[0] - 1, tokens, secs, stall[2], stall[3]);
    mkg_mk_force_stall(mk, -1, 0);
    mkg_mk_set_timeout_ms(mk, 1000.0);
    ASSERT_EQ(mkg_mk_step(mk, tokens, 0, 0, 1, s), MKG_OK);
    EXPECT_EQ(mkg_mk_check(mk, s, nullptr, nullptr), MKG_OK);
    mkg_mk_set_launch_opts(mk, saved);
    mkg_mk_runner_destroy(r);
}

} // namespace

TEST_F(Megakernel, ForcedStallIsACleanErrorWithinASecond)
{
    expect_forced_stall_is_clean(8, 0u, true);
}

// The same with the FFN norm run inside the gate/up GEMM (MKG_MK_OPT_NORM_IN_GEMM, decode batch 1):
// the wait that never completes is the A writer's, which names the norm's task, still completes
// every stage (zeros), and lets the grid drain.
TEST_F(Megakernel, ForcedStallInsideAGemmIsACleanError)
{
    expect_forced_stall_is_clean(1, MKG_MK_OPT_NORM_IN_GEMM, false);
}
