// cpu_megakernel_graph_test.cc - the megakernel's task list without a GPU: topological
// order, dependency widths, and a simulation that runs the list on N virtual SMs in
// random interleavings (each SM takes its items in order, as the kernel deals them) and
// checks it never deadlocks and never starts an item before every writer of the rows it
// reads has finished (so "counter reached rows x columns" really means "rows complete").
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "mkg_megakernel.h"
#include "mkg_mk_graph.h"
#include "mkgemm.h"

namespace {

mkg_model_config small_config(int layers)
{
    mkg_model_config c = mkg_model_config_llama32_1b();
    c.layers = layers;
    return c;
}

// K of the GEMM a table row describes (what its A operand's width must be).
int gemm_k(const mkg_model_config &c, int row)
{
    if (row == MKG_MK_GEMMS_PER_LAYER * c.layers)
        return c.hidden;
    switch (row % MKG_MK_GEMMS_PER_LAYER) {
    case MKG_MK_O: return c.q_heads * c.head_dim;
    case MKG_MK_DOWN: return c.ffn;
    default: return c.hidden;
    }
}

int gemm_n(const mkg_model_config &c, int row)
{
    if (row == MKG_MK_GEMMS_PER_LAYER * c.layers)
        return c.vocab;
    switch (row % MKG_MK_GEMMS_PER_LAYER) {
    case MKG_MK_QKV: return mkg_model_qkv_n(&c);
    case MKG_MK_GATE_UP: return 2 * c.ffn;
    default: return c.hidden;
    }
}

struct item {
    int task, index;
    int r0, r1;                         // input rows read (of the dep task's output)
    int p0 = 0, p1 = 0;                 // more input rows read (a folded attention item's partner block)
    int partner = -1;                   // folded attention: the item whose keys this one appends and flags
    bool appended = false;              // folded attention: its keys were appended by its CTA's first item
    std::vector<std::pair<int, unsigned>> writes;   // (row block, elements)
    std::vector<std::pair<int, int>> write_rows;    // [r0, r1) written
};

// Every item of every task at step size m, GEMMs cut by schedule sched[task]; fused: the step runs
// its norms inside the GEMMs (mkg_mk_norm_in_gemm_step), so those norms have no items.
// fold_grid > 0: MKG_MK_OPT_ATTN_FOLD with ROPE_ONCE on that many CTAs: a prefill attention item reads
// QKV rows of its own row block only (the earlier blocks' keys come behind their flags), and item d of
// the task's list is the one at deal position d (mkg_mk_attn_fold), with its partner's block read too.
std::vector<std::vector<item>> enumerate(const mkg_model_config &c, const std::vector<mkg_mk_op> &ops, int m,
                                         int prefill, const std::vector<int> &sched, int fused = 0, int norm_rows = 64,
                                         int fold_grid = 0)
{
    std::vector<std::vector<item>> all(ops.size());
    for (size_t t = 0; t < ops.size(); ++t) {
        const mkg_mk_op &op = ops[t];
        if (op.kind == MKG_MK_GEMM) {
            const mkg_schedule_info *s = mkg_schedule_get(sched[t]);
            const int n = gemm_n(c, op.table_row);
            const int tm = (m + s->tile_m - 1) / s->tile_m, tn = (n + s->tile_n - 1) / s->tile_n;
            for (int u = 0; u < tm * tn; ++u) {
                const mkg_tile tl = mkg_tile_of_unit(u, tm, tn, s->raster, s->group);
                item it{(int)t, u, tl.m * s->tile_m, std::min(m, tl.m * s->tile_m + s->tile_m)};
                int cols = std::min(n, tl.n * s->tile_n + s->tile_n) - tl.n * s->tile_n;
                if (op.out_cols * 2 == n)       // SiLU-mul: half the columns
                    cols /= 2;
                for (int r = it.r0; r < it.r1; r = (r / 64 + 1) * 64) {
                    const int re = std::min(it.r1, (r / 64 + 1) * 64);
                    it.writes.push_back({r / 64, (unsigned)((re - r) * cols)});
                }
                it.write_rows.push_back({it.r0, it.r1});
                all[t].push_back(it);
            }
        } else {
            const int split = mkg_mk_attn_split(&c, m, prefill);
            const bool none = mkg_mk_norm_fused(ops.data(), (int)ops.size(), (int)t, fused);
            const int items = none ? 0 : mkg_mk_items(&op, &c, m, prefill, split, norm_rows);
            for (int d = 0; d < items; ++d) {
                const bool fold = prefill && fold_grid > 0 && op.kind == MKG_MK_ATTN;
                const int i = fold ? mkg_mk_attn_fold(items, fold_grid, d) : d;
                item it{(int)t, i, 0, 0};
                int out_rb;
                if (op.kind == MKG_MK_NORM) {
                    mkg_mk_norm_rows(m, norm_rows, i, &it.r0, &it.r1);
                    out_rb = it.r0 / 64;
                    it.writes.push_back({out_rb, (unsigned)((it.r1 - it.r0) * op.out_cols)});
                    it.write_rows.push_back({it.r0, it.r1});
                } else {
                    mkg_mk_attn_rows(&c, m, prefill, split, i, &it.r0, &it.r1, &out_rb);
                    if (fold) {
                        it.r0 = 64 * out_rb;
                        it.partner = mkg_mk_attn_partner(items, fold_grid, d);
                        it.appended = mkg_mk_attn_appended(items, fold_grid, d) != 0;
                        if (it.partner >= 0) {
                            it.p0 = 64 * (it.partner / c.kv_heads);
                            it.p1 = std::min(m, it.p0 + 64);
                        }
                    }
                    it.writes.push_back({out_rb, mkg_mk_attn_elems(&c, m, prefill, split, i)});
                    const int w0 = prefill ? 64 * (i / c.kv_heads) : i / split / c.kv_heads;
                    const int w1 = prefill ? std::min(m, w0 + 64) : w0 + 1;
                    it.write_rows.push_back({w0, w1});
                }
                all[t].push_back(it);
            }
        }
    }
    return all;
}

} // namespace

TEST(MegakernelGraph, TopologicalOrderAndDependencyWidths)
{
    const mkg_model_config c = small_config(16);
    std::vector<mkg_mk_op> ops(mkg_mk_op_count(&c));
    mkg_mk_graph_build(&c, nullptr, ops.data());
    int gemms = 0;
    for (size_t t = 0; t < ops.size(); ++t) {
        const mkg_mk_op &op = ops[t];
        ASSERT_LT(op.dep, (int)t) << "task " << t << " reads a later task";
        if (t == 0)
            EXPECT_EQ(op.dep, -1) << "the first norm reads the step input";
        else
            ASSERT_GE(op.dep, 0) << "task " << t << " has no producer";
        if (op.dep < 0)
            continue;
        const int in_cols = ops[op.dep].out_cols;
        if (op.kind == MKG_MK_GEMM) {
            EXPECT_EQ(in_cols, gemm_k(c, op.table_row)) << "task " << t;
            EXPECT_EQ(op.table_row, gemms++) << "GEMM tasks use table rows in order";
        } else if (op.kind == MKG_MK_NORM) {
            EXPECT_EQ(in_cols, c.hidden) << "task " << t;
        } else {
            EXPECT_EQ(in_cols, mkg_model_qkv_n(&c)) << "task " << t;
            EXPECT_EQ(op.out_cols, c.q_heads * c.head_dim);
        }
    }
    EXPECT_EQ(gemms, mkg_mk_table_rows(&c));
}

// For every (task, row block): the elements all its items write sum to rows x out_cols, with norm
// items of 64 rows and of 16 (MKG_MK_OPT_NORM_ROWS_16: four to a block's counter).
TEST(MegakernelGraph, DependencyCountsMatchTheirProducers)
{
    const mkg_model_config c = small_config(2);
    std::vector<mkg_mk_op> ops(mkg_mk_op_count(&c));
    mkg_mk_graph_build(&c, nullptr, ops.data());
    for (int norm_rows : {64, mkg_mk_norm_item_rows(MKG_MK_OPT_NORM_ROWS_16)}) {
        for (int prefill = 0; prefill < 2; ++prefill)
            for (int m : {1, 7, 17, 64, 65, 200, 512}) {
                if (!prefill && m > c.max_batch)
                    continue;
                for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
                    std::vector<int> sched(ops.size(), s);
                    const auto all = enumerate(c, ops, m, prefill, sched, 0, norm_rows);
                    for (size_t t = 0; t < ops.size(); ++t) {
                        std::map<int, unsigned long long> sum;
                        for (const item &it : all[t])
                            for (auto w : it.writes)
                                sum[w.first] += w.second;
                        for (int rb = 0; rb < mkg_mk_row_blocks(m); ++rb)
                            ASSERT_EQ(sum[rb], (unsigned long long)mkg_mk_block_rows(m, rb) * ops[t].out_cols)
                                << "task " << t << " rb " << rb << " m " << m << " prefill " << prefill
                                << " sched " << s << " norm rows " << norm_rows;
                    }
                }
            }
    }
}

// The norms run inside the GEMMs (MKG_MK_OPT_NORM_IN_GEMM) at decode steps of one token only; then
// every norm that feeds the GEMM right after it has no items, that GEMM waits for the norm's own
// input, and a final norm without the LM head after it keeps its task.
TEST(MegakernelGraph, NormsRunInsideTheGemmsOnlyAtOneTokenDecode)
{
    const mkg_model_config c = small_config(3);
    EXPECT_TRUE(mkg_mk_norm_in_gemm_step(&c, 1, 0, 1));
    EXPECT_FALSE(mkg_mk_norm_in_gemm_step(&c, 1, 0, 0)) << "off unless asked for";
    EXPECT_FALSE(mkg_mk_norm_in_gemm_step(&c, 2, 0, 1)) << "one token only";
    EXPECT_FALSE(mkg_mk_norm_in_gemm_step(&c, 1, 1, 1)) << "not in prefill";
    mkg_model_config wide = c;
    wide.hidden = 4096;
    EXPECT_FALSE(mkg_mk_norm_in_gemm_step(&wide, 1, 0, 1)) << "the writer holds at most 256 chunks of a row";
    std::vector<mkg_mk_op> ops(mkg_mk_op_count(&c));
    mkg_mk_graph_build(&c, nullptr, ops.data());
    for (int run = (int)ops.size() - 1; run <= (int)ops.size(); ++run) {     // without and with the LM head
        int fused_norms = 0;
        for (int t = 0; t < run; ++t) {
            const mkg_mk_op &op = ops[t];
            EXPECT_EQ(mkg_mk_wait_op(ops.data(), run, t, 0), op.dep) << "off: every op waits on its dep";
            if (mkg_mk_norm_fused(ops.data(), run, t, 1)) {
                ++fused_norms;
                EXPECT_EQ(ops[t + 1].kind, MKG_MK_GEMM);
                EXPECT_EQ(mkg_mk_wait_op(ops.data(), run, t + 1, 1), op.dep) << "task " << t + 1;
            } else if (op.kind == MKG_MK_GEMM && !mkg_mk_norm_fused(ops.data(), run, op.dep, 1)) {
                EXPECT_EQ(mkg_mk_wait_op(ops.data(), run, t, 1), op.dep) << "a GEMM not after a norm: task " << t;
            }
            if (op.kind == MKG_MK_NORM && t + 1 == run)
                EXPECT_FALSE(mkg_mk_norm_fused(ops.data(), run, t, 1)) << "a last norm keeps its task";
        }
        EXPECT_EQ(fused_norms, 2 * c.layers + (run == (int)ops.size() ? 1 : 0));
    }
}

// mkg_mk_step_opts: two producers only in prefill steps, WARM only in steps of one token, and
// nothing changed without the per-step bits; the norm-in-GEMM choice follows the resolved bits.
TEST(MegakernelGraph, StepOptionsResolvePerStep)
{
    const unsigned int base = MKG_MK_OPT_ATTN_PREFETCH | MKG_MK_OPT_WARM | MKG_MK_OPT_NORM_IN_GEMM;
    const unsigned int per_step = base | MKG_MK_OPT_STEP_BITS;
    for (int prefill = 0; prefill < 2; ++prefill)
        for (int m : {1, 2, 8, 64, 512}) {
            EXPECT_EQ(mkg_mk_step_opts(base, m, prefill), base) << "without the per-step bits: unchanged";
            const unsigned int o = mkg_mk_step_opts(per_step, m, prefill);
            EXPECT_EQ((o & MKG_MK_OPT_TWO_PRODUCERS) != 0, prefill != 0) << m << " tokens, prefill " << prefill;
            EXPECT_EQ((o & MKG_MK_OPT_WARM) != 0, m == 1) << m << " tokens, prefill " << prefill;
            EXPECT_EQ(o & ~(MKG_MK_OPT_TWO_PRODUCERS | MKG_MK_OPT_WARM), per_step & ~MKG_MK_OPT_WARM)
                << "no other bit moves";
            EXPECT_EQ(mkg_mk_opts_norm_in_gemm(o) != 0, prefill == 0) << "norms in the GEMMs need one producer";
        }
    EXPECT_EQ(mkg_mk_step_opts(MKG_MK_OPT_TWO_PRODUCERS, 1, 0) & MKG_MK_OPT_TWO_PRODUCERS, MKG_MK_OPT_TWO_PRODUCERS)
        << "TWO_PRODUCERS alone still means every step";
    EXPECT_EQ(MKG_MK_OPT_DEFAULT & MKG_MK_OPT_STEP_BITS, MKG_MK_OPT_STEP_BITS) << "v115's default";
    EXPECT_EQ(MKG_MK_OPT_STEP_BITS & MKG_MK_OPT_TABLE_BITS, 0u) << "launch bits, not table bits";
}

TEST(MegakernelGraph, RandomInterleavingsNeverDeadlockNorRunEarly)
{
    const mkg_model_config c = small_config(3);
    std::vector<mkg_mk_op> ops(mkg_mk_op_count(&c));
    mkg_mk_graph_build(&c, nullptr, ops.data());
    std::mt19937 rng(12345);
    int runs = 0;
    for (int prefill = 0; prefill < 2; ++prefill)
        for (int m : {1, 8, 64, 300}) {
            if (!prefill && m > c.max_batch)
                continue;
            for (int sms : {1, 7, 23, 132}) {   // 7 and 23 fold prefill attention (m 64, 300)
                for (int rep = 0; rep < 6; ++rep, ++runs) {
                    // Odd repetitions run the norms inside the GEMMs where the step allows it; repetitions
                    // 2, 3 deal norm items of 16 rows (MKG_MK_OPT_NORM_ROWS_16).
                    const int fused = mkg_mk_norm_in_gemm_step(&c, m, prefill, rep & 1);
                    const int norm_rows = mkg_mk_norm_item_rows((rep & 2) ? MKG_MK_OPT_NORM_ROWS_16 : 0u);
                    // Repetitions 0, 1, 3, 4: MKG_MK_OPT_ROPE_ONCE. A prefill attention item (row block t,
                    // KV head g) also waits for the flags of blocks 0 .. t - 1 of head g, which those
                    // items set. The item is modelled whole (its flag set when it completes); on the GPU
                    // it sets its flag before it waits, so this model is the stricter one.
                    const bool rope_once = prefill && rep % 3 != 2;
                    // Odd repetitions of a prefill step with rope_once: MKG_MK_OPT_ATTN_FOLD (the attention
                    // items dealt by mkg_mk_attn_fold, each reading its own QKV row block, a first item also its
                    // partner's, whose flag it sets too; an appended item sets none).
                    const bool fold = rope_once && (rep & 1);
                    std::vector<std::vector<char>> rope_flag(ops.size(), std::vector<char>(64 * c.kv_heads, 0));
                    std::vector<int> sched(ops.size());
                    for (auto &s : sched)
                        s = (int)(rng() % MKG_SCHED_COUNT);
                    const auto all = enumerate(c, ops, m, prefill, sched, fused, norm_rows, fold ? sms : 0);
                    // Deal items to SMs exactly as the kernel does.
                    std::vector<std::vector<const item *>> queue(sms);
                    int base = 0;
                    for (size_t t = 0; t < ops.size(); ++t) {
                        for (size_t i = 0; i < all[t].size(); ++i)   // folded: already in deal order
                            queue[(base + i) % sms].push_back(&all[t][i]);
                        base = (int)((base + all[t].size()) % sms);
                    }
                    std::vector<unsigned long long> counter(ops.size() * 64, 0);
                    // Writers of each output row, counted from the items (independent of the counters).
                    std::vector<std::vector<int>> writers(ops.size(), std::vector<int>(m, 0));
                    std::vector<std::vector<int>> written(ops.size(), std::vector<int>(m, 0));
                    for (size_t t = 0; t < ops.size(); ++t)
                        for (const item &it : all[t])
                            for (auto wr : it.write_rows)
                                for (int r = wr.first; r < wr.second; ++r)
                                    ++writers[t][r];
                    std::vector<size_t> next(sms, 0);
                    size_t left = 0;
                    for (auto &q : queue)
                        left += q.size();
                    while (left) {
                        std::vector<int> ready;
                        for (int s = 0; s < sms; ++s) {
                            if (next[s] == queue[s].size())
                                continue;
                            const item *it = queue[s][next[s]];
                            const int dep = mkg_mk_wait_op(ops.data(), (int)ops.size(), it->task, fused);
                            bool ok = true;
                            for (int rb = it->r0 / 64; dep >= 0 && ok && rb * 64 < it->r1; ++rb)
                                ok = counter[dep * 64 + rb] >=
                                     (unsigned long long)mkg_mk_block_rows(m, rb) * ops[dep].out_cols;
                            for (int rb = it->p0 / 64; dep >= 0 && ok && rb * 64 < it->p1; ++rb)
                                ok = counter[dep * 64 + rb] >=
                                     (unsigned long long)mkg_mk_block_rows(m, rb) * ops[dep].out_cols;
                            if (rope_once && ops[it->task].kind == MKG_MK_ATTN)
                                for (int b = 0; ok && b < it->index / c.kv_heads; ++b)
                                    ok = rope_flag[it->task][b * c.kv_heads + it->index % c.kv_heads] != 0;
                            if (ok)
                                ready.push_back(s);
                        }
                        ASSERT_FALSE(ready.empty())
                            << "deadlock: m " << m << " prefill " << prefill << " sms " << sms << " rows " << norm_rows;
                        const int s = ready[rng() % ready.size()];
                        const item *it = queue[s][next[s]++];
                        const int dep = mkg_mk_wait_op(ops.data(), (int)ops.size(), it->task, fused);
                        // Every row it reads has had all of its writers finish.
                        for (int r = it->r0; dep >= 0 && r < it->r1; ++r)
                            ASSERT_EQ(written[dep][r], writers[dep][r])
                                << "task " << it->task << " item " << it->index << " ran before row " << r
                                << " of task " << dep << " was complete (fused " << fused << ")";
                        for (int r = it->p0; dep >= 0 && r < it->p1; ++r)
                            ASSERT_EQ(written[dep][r], writers[dep][r])
                                << "task " << it->task << " item " << it->index << " appended its partner's row "
                                << r << " before it was complete";
                        if (rope_once && ops[it->task].kind == MKG_MK_ATTN) {   // index = block * kv_heads + head
                            if (!it->appended)
                                rope_flag[it->task][it->index] = 1;
                            if (it->partner >= 0)
                                rope_flag[it->task][it->partner] = 1;
                        }
                        for (auto w : it->writes)
                            counter[it->task * 64 + w.first] += w.second;
                        for (auto wr : it->write_rows)
                            for (int r = wr.first; r < wr.second; ++r)
                                ++written[it->task][r];
                        --left;
                    }
                }
            }
        }
    EXPECT_GT(runs, 80);
}

// MKG_MK_OPT_ATTN_FOLD's deal: a permutation of the items; with grid < n <= 2 grid each CTA's two items
// sum to n - 1 (the shortest left with the longest left), the first round keeps the first grid items
// in order, and a first item's partner is its CTA's second; otherwise the identity and no partners.
TEST(MegakernelGraph, AttentionFoldPairsShortWithLong)
{
    for (int grid : {1, 7, 66, 132})
        for (int n : {1, 6, 7, 8, 13, 14, 15, 64, 131, 132, 133, 200, 256, 264, 265, 512}) {
            std::vector<int> seen(n, 0);
            for (int d = 0; d < n; ++d) {
                const int i = mkg_mk_attn_fold(n, grid, d);
                ASSERT_GE(i, 0);
                ASSERT_LT(i, n);
                ++seen[i];
                const bool folds = n > grid && n <= 2 * grid;
                EXPECT_EQ(mkg_mk_attn_folds(n, grid), folds ? 1 : 0);
                if (!folds || d < grid)
                    EXPECT_EQ(i, d) << "n " << n << " grid " << grid;
                else
                    EXPECT_EQ(i + mkg_mk_attn_fold(n, grid, d - grid), n - 1) << "n " << n << " grid " << grid;
                // The partner is the CTA's second item; it is marked appended, and nothing else is.
                const int partner = mkg_mk_attn_partner(n, grid, d);
                EXPECT_EQ(partner, folds && d + grid < n ? mkg_mk_attn_fold(n, grid, d + grid) : -1);
                EXPECT_EQ(mkg_mk_attn_appended(n, grid, d), folds && d >= grid ? 1 : 0);
            }
            for (int i = 0; i < n; ++i)
                ASSERT_EQ(seen[i], 1) << "item " << i << " n " << n << " grid " << grid;
        }
}

// The printed plan is the one the megakernel runs: its layers are described with the SM count
// the planner's K chunks depend on (mkg_plan_kc_decode), so the 1B down layer (K 8192, 32
// decode units of 64 rows) is cut into chunks and planned split at M = 1 (before the fix the plan print
// described the layers with 0 SMs, got one chunk and printed an unsplit row).
TEST(MegakernelGraph, PrintedPlanSplitsTheDownLayerAtDecode)
{
    mkg_model_config c = mkg_model_config_llama32_1b();
    c.layers = 1;
    c.max_tokens = 64;
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ASSERT_NE(f, nullptr);
    const int ms[] = {1};
    ASSERT_EQ(mkg_mk_plan_print(&c, ms, 1, f), MKG_OK);
    fclose(f);
    const std::string out(buf, len);
    free(buf);
    const size_t down = out.find("down+res");
    ASSERT_NE(down, std::string::npos) << out;
    const std::string line = out.substr(down, out.find('\n', down) - down);
    EXPECT_NE(line.find("_sk"), std::string::npos) << "M = 1 down layer planned unsplit: " << line;
}

// The line of GEMM `kind` in the megakernel's printed plan at M = m (1B shape, one layer).
std::string planned_line(int m, const char *kind)
{
    mkg_model_config c = mkg_model_config_llama32_1b();
    c.layers = 1;
    c.max_tokens = m;
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(mkg_mk_plan_print(&c, &m, 1, f), MKG_OK);
    fclose(f);
    const std::string out(buf, len);
    free(buf);
    const size_t at = out.find(kind);
    return at == std::string::npos ? out : out.substr(at, out.find('\n', at) - at);
}

// v105: the megakernel plans with half a tile's time of tail past the waves where the input lands
// by more than four row blocks (mkg_cost_model.tail_units, tail_per_tile), which puts 1B o at
// prefill 2048 on m128n128 (measured 2.6% faster than the waves' pick m128n256) and down at 512
// unsplit (10% faster than the waves' sk4), and changes no pick at M <= 256.
TEST(MegakernelGraph, PrefillTailPutsTheOLayerOnNarrowerRows)
{
    ASSERT_EQ(unsetenv("MKG_MK_TAIL_UNITS"), 0);
    EXPECT_NE(planned_line(2048, "o+res").find("m128n128k64"), std::string::npos) << planned_line(2048, "o+res");
    EXPECT_EQ(planned_line(512, "down+res").find("_sk"), std::string::npos) << planned_line(512, "down+res");
    ASSERT_EQ(setenv("MKG_MK_TAIL_UNITS", "0", 1), 0);
    EXPECT_NE(planned_line(2048, "o+res").find("m128n256k64"), std::string::npos) << planned_line(2048, "o+res");
    EXPECT_NE(planned_line(512, "down+res").find("_sk"), std::string::npos) << planned_line(512, "down+res");
    const char *kinds[] = {"qkv", "o+res", "gate_up+silu", "down+res"};
    for (int m : {1, 8, 64, 256})
        for (const char *k : kinds) {
            ASSERT_EQ(setenv("MKG_MK_TAIL_UNITS", "0", 1), 0);
            const std::string off = planned_line(m, k);
            ASSERT_EQ(unsetenv("MKG_MK_TAIL_UNITS"), 0);
            EXPECT_EQ(planned_line(m, k), off) << "M = " << m;
        }
    ASSERT_EQ(unsetenv("MKG_MK_TAIL_UNITS"), 0);
}

// v116 (mkg_mk_plan_adjust): gate_up at M = 7..8 runs the 256-unit m16n64k128_s8 row (measured
// in the megakernel: decode b8 -1.3%); M = 1 and 6 keep the cost model's m8n128k128_s5.
TEST(MegakernelGraph, GateUpAtEightRowsRunsTheWideUnitRow)
{
    ASSERT_EQ(unsetenv("MKG_MK_FORCE"), 0);
    const auto runs = [](int m, const std::string &row) {
        const std::string l = planned_line(m, "gate_up+silu");
        return l.size() >= row.size() && l.compare(l.size() - row.size(), row.size(), row) == 0;
    };
    EXPECT_TRUE(runs(8, " m16n64k128_s8_swap_rn_g8")) << planned_line(8, "gate_up+silu");
    EXPECT_TRUE(runs(7, " m16n64k128_s8_swap_rn_g8")) << planned_line(7, "gate_up+silu");
    for (int m : {1, 6})
        EXPECT_TRUE(runs(m, " m8n128k128_s5_swap_rn_g8"))
            << "M = " << m << " keeps the model's pick: " << planned_line(m, "gate_up+silu");
}

// The experiment knobs (MKG_MK_KC, MKG_MK_FORCE) reach the plan the megakernel runs: a K chunk
// per kind of layer, and a schedule per kind up to an M; entries with an unknown kind or
// schedule are ignored.
TEST(MegakernelGraph, KnobsSetTheChunkAndTheScheduleOfAKind)
{
    mkg_model_config c = mkg_model_config_llama32_1b();
    c.layers = 2;
    c.max_tokens = 64;
    const auto plan = [&](int m) {
        char *buf = nullptr;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        EXPECT_NE(f, nullptr);
        const int ms[] = {m};
        EXPECT_EQ(mkg_mk_plan_print(&c, ms, 1, f), MKG_OK);
        fclose(f);
        const std::string out(buf, len);
        free(buf);
        return out;
    };
    const auto line = [](const std::string &out, const char *kind) {
        const size_t at = out.find(kind);
        return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
    };
    const std::string before = plan(1);
    struct Unset {   // the variables never outlive the test, even when an ASSERT returns early
        ~Unset()
        {
            unsetenv("MKG_MK_KC");
            unsetenv("MKG_MK_FORCE");
        }
    };
    std::string m1, m16;
    {
        const Unset unset;
        ASSERT_EQ(setenv("MKG_MK_KC", "qkv:1024,bogus:512", 1), 0);
        ASSERT_EQ(setenv("MKG_MK_FORCE", "o:m16n128k64_s8_swap_rn_g8@8,down:no_such_row", 1), 0);
        m1 = plan(1);
        m16 = plan(16);
    }
    EXPECT_EQ(plan(1), before) << "the knobs must not outlive their variables";
    EXPECT_NE(line(m1, "qkv").find("KC  1024"), std::string::npos) << line(m1, "qkv");
    EXPECT_NE(line(before, "qkv").find("KC  2048"), std::string::npos) << line(before, "qkv");
    EXPECT_NE(line(m1, "o+res").find("m16n128k64_s8_swap_rn_g8"), std::string::npos) << line(m1, "o+res");
    EXPECT_EQ(line(m16, "o+res"), line(plan(16), "o+res")) << "forced only up to M = 8";
    EXPECT_EQ(line(m1, "down+res"), line(before, "down+res")) << "an unknown schedule is ignored";
}
