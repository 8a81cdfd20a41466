/* mkg_megakernel.cu - the sample megakernel: a whole decoder step in one persistent
 * launch (one CTA per SM, mkgemm's launch shape: 1 producer + 2 consumer warpgroups).
 *
 * Every CTA walks the task list (mkg_mk_graph.h) in order and runs the items dealt to
 * it. GEMM tasks go through the device dispatcher (schedule by the step's M, X-macro
 * switch); their producer thread streams weight tiles before the activation rows are
 * ready (mkg_gemm_deps) and their epilogues count finished rows. Norm and attention
 * tasks run on the two consumer warpgroups (256 threads, named barrier MKG_MK_BAR,
 * the 32 KB epilogue staging area as scratch: megakernel GEMMs store directly), while
 * the producer thread runs ahead into the next GEMM. Waits are bounded (mkg_deps_sm90.cuh).
 */
#include <cuda_bf16.h>

#ifdef MKG_MK_PHASES
// Diagnostic build (CMake -DMKG_MK_PHASES=ON, off by default): a GEMM unit's timeline entry
// gets phase stamps (phase_us) from the consumer K loop's probe hooks, taken by thread 128
// (warpgroup 0's first thread): [0] its first stage of the unit landed, [1] its last stage
// landed, [2] its last wgmma retired, [3] its direct epilogue stores issued (0 when the
// epilogue did not go direct); the entry's end follows the epilogue and the count.
// A decode attention item's entry gets thread 0's stamps before its wait instead of its op's
// steps (mkg_mk_pre_stamp): [0] its pos loaded, [1] its L2 prefetch issued, [2] its RoPE cos /
// sin done; its ready stamp is the counter read's return, [3] the item barrier after it.
// Declared before the device headers, whose templates name the hooks.
static __device__ __forceinline__ void mkg_mk_phase_stage(int event, int kt);
static __device__ __forceinline__ void mkg_mk_phase_mark(int point);
#define MKG_PROBE_STAGE(event, kt) mkg_mk_phase_stage(event, kt)
#define MKG_PROBE(point) mkg_mk_phase_mark(point)
#define MKG_PROBE_EPI() mkg_mk_phase_mark(-1)
#endif

// The megakernel's GEMM paths (device/mkg_epilogue_sm90.cuh): rows with wgmma N > 128 on layers of
// one K chunk (v101), staged fused and counted epilogues (v102), each count deferred to the
// warpgroup's next epilogue or the task's end (v102b).
#define MKG_DISPATCH_WIDE 1
#define MKG_EPI_STAGED_FUSED 1
#define MKG_EPI_DEFER_COUNT 1
#define MKG_EPI_OT_ONLY MKG_DTYPE_BF16      // every megakernel GEMM stores bf16 (mkg_megakernel_host.c)

#include "mkg_deps_sm90.cuh"
#include "mkg_dispatch_sm90.cuh"
#include "mkg_megakernel.h"
#include "mkg_mk_norm.cuh"
#include "mkg_mk_ops.cuh"

#define MKG_MK_BAR 3                    /* named barrier of the 256 consumer threads (1, 2: epilogues) */
#define MKG_MK_WRITER_BAR 8             /* named barrier of the two row makers (warps 1 and 3, 64 threads) */
#define MKG_MK_PRODUCER_REGS 56
#define MKG_MK_CONSUMER_REGS 224

static_assert(128 * MKG_MK_PRODUCER_REGS + 256 * MKG_MK_CONSUMER_REGS <= 65536, "register split exceeds the file");

static_assert(MKG_OP_THREADS == 128 * MKG_LAUNCH_CONSUMERS, "ops run on the consumer warpgroups");
static_assert(MKG_OP_PREFILL_SCRATCH_BYTES + 48 <= MKG_LAUNCH_EPI_BYTES, "op scratch, norm sums and flag fit the staging area");
static_assert(MKG_OP_DECODE_SCRATCH_BYTES + 48 <= MKG_LAUNCH_EPI_BYTES, "decode scratch, phase stamps and flag fit");
static_assert(MKG_MK_ATTN_PARTS == MKG_OP_DECODE_GROUPS, "a split decode attention item runs one group of key ranges");
static_assert(MKG_MK_ATTN_WS_FLOATS == MKG_OP_DECODE_WS_FLOATS, "the host sizes the ops' workspace");

// Scratch words past the ops' own: [-48, -16) norm sums (decode attention: its 3 phase stamps
// at [-48, -24), timeline; the phases build's 4 at [-48, -16)), [-16, -12) the item flag, [-8, 0)
// the item's ready stamp (timeline).
#define MKG_MK_READY_AT (MKG_LAUNCH_EPI_BYTES - 8)
#define MKG_MK_PHASE_AT (MKG_LAUNCH_EPI_BYTES - 48)
#ifdef MKG_MK_PHASES
#define MKG_MK_ATTN_PHASES 4
#else
#define MKG_MK_ATTN_PHASES 3
#endif

// First item of a task on the CTA of rank `me` (its blockIdx, or with MKG_MK_OPT_TPC_SPREAD its
// mkg_cta_rank_spread), when the task's items start at rank `base`.
static __device__ __forceinline__ int mkg_mk_first(int me, int base)
{
    return (me - base + (int)gridDim.x) % (int)gridDim.x;
}

// Timeline entry {task << 32 | item, start, ready, end, phase 0..2}; ready: when the item's
// input was complete (0 for GEMM units, whose producer stamps it in deps.stamps); phases: the
// decode attention op's step ends (0 otherwise).
static __device__ __forceinline__ void mkg_mk_stamp(const mkg_mk_args *a, int *k, int task, int item, uint64_t t0,
                                                    uint64_t t_ready,
                                                    const volatile unsigned long long *phase = nullptr, int phases = 3)
{
    if (a->timeline && *k < a->timeline_cap) {
        unsigned long long *e = a->timeline + ((size_t)blockIdx.x * a->timeline_cap + *k) * MKG_MK_STAMP_WORDS;
        e[0] = ((unsigned long long)task << 32) | (unsigned int)item;
        e[1] = t0;
        e[2] = t_ready;
        e[3] = mkg_globaltimer();
        for (int i = 0; i < 4; ++i)
            e[4 + i] = phase && i < phases ? phase[i] : 0;
        ++*k;
    }
}

#ifdef MKG_MK_PHASES
#define MKG_MK_PHASE_CTAS 1024
// Per CTA; written and read only by thread 128, in program order.
__device__ unsigned long long mkg_mk_phase_buf[MKG_MK_PHASE_CTAS][4];

static __device__ __forceinline__ void mkg_mk_phase_stage(int event, int kt)
{
    (void)kt;
    if (event == 2 && threadIdx.x == 128 && blockIdx.x < MKG_MK_PHASE_CTAS)
        mkg_mk_phase_buf[blockIdx.x][1] = mkg_globaltimer();
}

static __device__ __forceinline__ void mkg_mk_phase_mark(int point)
{
    if (threadIdx.x != 128 || blockIdx.x >= MKG_MK_PHASE_CTAS)
        return;
    const unsigned long long t = mkg_globaltimer();       // before the slot's read (not late by it)
    if (point == 3 && mkg_mk_phase_buf[blockIdx.x][0] == 0)  // a unit's first chunk (on_unit clears it)
        mkg_mk_phase_buf[blockIdx.x][0] = t;
    else if (point == 4)
        mkg_mk_phase_buf[blockIdx.x][2] = t;
    else if (point == -1)
        mkg_mk_phase_buf[blockIdx.x][3] = t;
}

#endif

// Phases build: thread 0 stamps scratch phase word i after value v is in its register (the
// shared store of v waits for it; the globaltimer read follows the store).
static __device__ __forceinline__ void mkg_mk_pre_stamp(unsigned char *scratch, int tid, int i, unsigned int v)
{
#ifdef MKG_MK_PHASES
    if (tid == 0) {
        volatile unsigned long long *w = (volatile unsigned long long *)(scratch + MKG_MK_PHASE_AT);
        w[i] = v;
        w[i] = mkg_globaltimer();
    }
#else
    (void)scratch, (void)tid, (void)i, (void)v;
#endif
}

// ---- norm and attention items (256 consumer threads) ---------------------------------------

// Thread 0's wait for the item's input (rows r0 .. r1 - 1 of op->dep's output, and a folded
// first item's partner's row block p0: -1 none) and the forced-stall test hook; the flag hands
// the outcome to the item's threads. Timeline on: when it returned goes to MKG_MK_READY_AT.
static __device__ __forceinline__ bool mkg_mk_item_wait(const mkg_mk_args *a, int task, const mkg_mk_op *op, int r0,
                                                        int r1, int p0, unsigned char *scratch, int tid)
{
    volatile unsigned int *flag = (volatile unsigned int *)(scratch + MKG_LAUNCH_EPI_BYTES - 16);
    if (tid == 0) {
        bool w = true;
        if (op->dep >= 0) {
            const unsigned int per_row = (unsigned int)a->ops[op->dep].out_cols;
            const unsigned int *ctr = a->counters + (size_t)op->dep * a->rb_max;
            if (task == a->force_task && a->force_extra)
                w = mkg_dep_wait(ctr + r0 / 64, mkg_dep_rows(a->m, r0 / 64) * per_row + a->force_extra, a->stall,
                                 (unsigned int)task, (unsigned int)(r0 / 64), a->timeout_ns);
            if (w)
                w = mkg_dep_wait_rows(ctr, per_row, a->m, r0, r1, a->stall, (unsigned int)task, a->timeout_ns);
            if (w && p0 >= 0)
                w = mkg_dep_wait_rows(ctr, per_row, a->m, p0, p0 + 64, a->stall, (unsigned int)task, a->timeout_ns);
        }
        *flag = w ? 1u : 0u;
        if (a->timeline)
            *(volatile unsigned long long *)(scratch + MKG_MK_READY_AT) = mkg_globaltimer();
    }
    mkg_bar_sync_any(MKG_MK_BAR, MKG_OP_THREADS);
    if (op->kind == MKG_MK_ATTN && !a->prefill)
        mkg_mk_pre_stamp(scratch, tid, 3, 0u);
    return *flag != 0;
}

// The item's end: every thread's stores (and flag reads) are done before the count and the next item.
static __device__ __forceinline__ void mkg_mk_item_done(const mkg_mk_args *a, int task, int out_rb, unsigned int elems,
                                                        bool count, int tid)
{
    mkg_bar_sync_any(MKG_MK_BAR, MKG_OP_THREADS);
    if (tid == 0 && count)
        mkg_dep_signal(a->counters + (size_t)task * a->rb_max, out_rb, elems);
}

// A prefill attention item at deal place `deal` of `items`; returns the item run. Its own function
// (v109 in bench/NOTES.md): the fold's facts held in mkg_mk_run_item cost the decode path there,
// which shares that function's registers (v108: decode b1 +1.5%).
// MKG_MK_OPT_ATTN_FOLD with ROPE_ONCE: the item is mkg_mk_attn_fold's, and it waits for its own
// QKV row block only (the keys of earlier blocks come from the cache behind their flags, each set
// after its item's wait for that block); in a folded deal a first item also waits for, appends and
// flags the keys of its CTA's second item (partner), which then appends nothing.
static __device__ __noinline__ int mkg_mk_run_prefill_attn(const mkg_mk_args *a, int task, const mkg_mk_op *op,
                                                           int deal, int items, unsigned char *scratch, int tid)
{
    const mkg_model_config *c = &a->cfg;
    const int grid = (int)gridDim.x;
    const bool once_on = (a->opts & MKG_MK_OPT_ROPE_ONCE) != 0;
    const bool fold = once_on && (a->opts & MKG_MK_OPT_ATTN_FOLD);
    const int item = fold ? mkg_mk_attn_fold(items, grid, deal) : deal;
    const int partner = fold ? mkg_mk_attn_partner(items, grid, deal) : -1;
    int r0, r1, out_rb;
    mkg_mk_attn_rows(c, a->m, 1, a->attn_split, item, &r0, &r1, &out_rb);
    if (fold)
        r0 = 64 * out_rb;
    const unsigned int elems = mkg_mk_attn_elems(c, a->m, 1, 1, item);
    const bool ok = mkg_mk_item_wait(a, task, op, r0, r1, partner >= 0 ? 64 * (partner / c->kv_heads) : -1, scratch,
                                     tid);
    if (ok) {
        const int qkv_n = mkg_model_qkv_n(c);
        const __nv_bfloat16 *qkv = (const __nv_bfloat16 *)a->qkv + (size_t)op->layer * c->max_tokens * qkv_n;
        const int g = item % c->kv_heads, t = item / c->kv_heads;
        mkg_op_rope_once once;
        once.flags = a->rope_ctr + (size_t)op->layer * a->rb_max * c->kv_heads;
        once.kvh = c->kv_heads;
        once.pair = partner;
        once.pair_rows = (int)mkg_mk_block_rows(a->m, partner / c->kv_heads);
        once.appended = fold && mkg_mk_attn_appended(items, grid, deal);
        once.stall = a->stall;
        once.tag = (unsigned int)task;
        once.timeout_ns = a->timeout_ns;
        // NOTE: two copies of the op, so that neither tests `once` in its key loop: one copy with a
        // run-time null (v109's first form) kept the loop's predicates as bits of a register, and
        // the items ran 15% longer.
        if (once_on)
            mkg_op_attention_prefill(c, op->layer, qkv, 64 * t, r1 - 64 * t, a->pos0, g, (__nv_bfloat16 *)a->k_cache,
                                     (__nv_bfloat16 *)a->v_cache, (__nv_bfloat16 *)a->attn, scratch, tid, MKG_MK_BAR,
                                     &once);
        else
            mkg_op_attention_prefill(c, op->layer, qkv, 64 * t, r1 - 64 * t, a->pos0, g, (__nv_bfloat16 *)a->k_cache,
                                     (__nv_bfloat16 *)a->v_cache, (__nv_bfloat16 *)a->attn, scratch, tid, MKG_MK_BAR);
    }
    mkg_mk_item_done(a, task, out_rb, elems, ok, tid);
    return item;
}

// A norm item (attn false) or a decode attention item (attn true: a literal at both call sites, so
// each function below holds one op's code and values), the item at deal place `item` of `items`
// (these are dealt in order). Returns the item run.
// Thread 0, timeline on: when the item's input was complete goes to the scratch word at
// MKG_MK_READY_AT (in shared memory: a register held across the op spilled); after a dry pass
// that is when the wait after it returned, so input that landed during the dry pass reads late.
// lone: the task has no more items than the grid has CTAs, so this is the CTA's only item of
// it, usually reached while its input is still being made (see "Warm" below).
static __device__ __forceinline__ int mkg_mk_item_of(const mkg_mk_args *a, int task, const mkg_mk_op *op, int item,
                                                     int items, unsigned char *scratch, int tid, bool attn)
{
    const bool lone = items <= (int)gridDim.x;
    const mkg_model_config *c = &a->cfg;
    volatile unsigned int *flag = (volatile unsigned int *)(scratch + MKG_LAUNCH_EPI_BYTES - 16);
    int r0, r1, out_rb;
    unsigned int elems;
    if (!attn) {
        mkg_mk_norm_rows(a->m, mkg_mk_norm_item_rows(a->opts), item, &r0, &r1);
        out_rb = r0 / 64;
        elems = (unsigned int)(r1 - r0) * (unsigned int)op->out_cols;
    } else {
        mkg_mk_attn_rows(c, a->m, 0, a->attn_split, item, &r0, &r1, &out_rb);
    }
    // Decode attention: part of (token t, KV head g); -1: the item is not split. The part that
    // stores signals the whole (token, KV head): the elements of its unsplit item.
    const int split = a->attn_split;
    const int pair = item / split, part = split > 1 ? item % split : -1;
    if (attn)
        elems = mkg_mk_attn_elems(c, a->m, 0, 1, pair);
    // Before the input is ready: what only depends on earlier launches or the weights.
    float2 rope = make_float2(0.0f, 0.0f);
    if (!attn) {
        if (a->opts & MKG_MK_OPT_NORM_PREFETCH)
            mkg_norm_prefetch_weight((const __nv_bfloat16 *)op->weight, c->hidden, tid);
    } else {
        const int t = pair / c->kv_heads;
        const int pos = __ldg(a->pos + t);
        mkg_mk_pre_stamp(scratch, tid, 0, (unsigned int)pos);
        if (a->opts & MKG_MK_OPT_ATTN_PREFETCH)
            mkg_op_attention_decode_prefetch(c, op->layer, t, pos, pair % c->kv_heads,
                                             (const __nv_bfloat16 *)a->k_cache, (const __nv_bfloat16 *)a->v_cache,
                                             tid, part);
        mkg_mk_pre_stamp(scratch, tid, 1, 0u);
        if (a->opts & MKG_MK_OPT_ROPE_EARLY)
            mkg_op_rope_cs(pos, tid & 31, c->rope_theta, &rope.x, &rope.y);
        mkg_mk_pre_stamp(scratch, tid, 2, __float_as_uint(rope.x + rope.y));
    }
    // Warm (decode attention and norms of <= 8 rows, a lone item, MKG_MK_OPT_WARM): the
    // GEMMs in between have pushed this code out of the SM's instruction cache (measured: the
    // attention op's phases run ~2 us shorter after a dry pass). If the input is not complete yet, pass 0 runs the op dry (no global
    // stores) while it would only wait, and pass 1 waits and runs it; if it is complete, pass 1
    // runs it at once without a second look. One copy of the op's code serves both passes.
    // Thread 0 rewrites the flag after pass 0 only because both ops hold group barriers that
    // every thread passes after reading it. A forced-stall item (a test hook) never counts as
    // ready, so where it warms, Megakernel.ForcedStallIsACleanErrorWithinASecond runs a dry pass
    // before the stall.
    // NOTE: only where the dry pass is short: with every CTA on its first of ~4 items (decode
    // batch 64) or a 64-row norm, the input came ready during the dry pass and the step got 16%
    // slower (bench/NOTES.md, mk-v11).
    const bool forced = task == a->force_task && a->force_extra;
    const bool warm = lone && (a->opts & MKG_MK_OPT_WARM) && op->dep >= 0 &&
                      (attn || r1 - r0 <= 8);
    const unsigned int per_row = op->dep >= 0 ? (unsigned int)a->ops[op->dep].out_cols : 0u;
    const unsigned int *ctr = op->dep >= 0 ? a->counters + (size_t)op->dep * a->rb_max : nullptr;
    int pass = 1;
    bool wait = true;
    if (warm) {
        if (tid == 0) {
            const bool ready = !forced && mkg_dep_ready_rows(ctr, per_row, a->m, r0, r1);
            *flag = ready ? 2u : 0u;
            if (ready && a->timeline)
                *(volatile unsigned long long *)(scratch + MKG_MK_READY_AT) = mkg_globaltimer();
        }
        mkg_bar_sync_any(MKG_MK_BAR, MKG_OP_THREADS);
        if (*flag == 2u)
            wait = false;
        else
            pass = 0;
    }
    bool ok = !wait, stored = true;      // stored: false for a split part that is not the last
#pragma unroll 1
    for (; pass < 2; ++pass) {
        const bool dry = pass == 0;
        if (!dry && wait)
            ok = mkg_mk_item_wait(a, task, op, r0, r1, -1, scratch, tid);
        if (!ok && !dry)
            continue;
        if (!attn) {
            mkg_op_rmsnorm_rows((const __nv_bfloat16 *)op->src, (const __nv_bfloat16 *)op->weight,
                                (__nv_bfloat16 *)op->dst, r0, r1 - r0, c->hidden, c->norm_eps,
                                (float *)(scratch + MKG_LAUNCH_EPI_BYTES - 48), tid, MKG_MK_BAR, dry);
        } else {
            const int qkv_n = mkg_model_qkv_n(c);
            const __nv_bfloat16 *qkv = (const __nv_bfloat16 *)a->qkv + (size_t)op->layer * c->max_tokens * qkv_n;
            const int g = pair % c->kv_heads, t = pair / c->kv_heads;
            stored = mkg_op_attention_decode(
                c, op->layer, qkv, t, t, __ldg(a->pos + t), g, (__nv_bfloat16 *)a->k_cache,
                (__nv_bfloat16 *)a->v_cache, (__nv_bfloat16 *)a->attn, scratch, tid, MKG_MK_BAR,
                (a->opts & MKG_MK_OPT_ATTN_PREFETCH) != 0,
#ifdef MKG_MK_PHASES
                nullptr,    // the pre-wait stamps hold the phase words
#else
                a->timeline && !dry ? (volatile unsigned long long *)(scratch + MKG_MK_PHASE_AT) : nullptr,
#endif
                (a->opts & MKG_MK_OPT_ROPE_EARLY) ? &rope : nullptr, part,
                part < 0 ? nullptr : a->attn_ws + (size_t)pair * MKG_OP_DECODE_WS_FLOATS,
                part < 0 ? nullptr : a->attn_ctr + (size_t)op->layer * MKG_MK_ATTN_SPLIT_PAIRS + pair, dry);
        }
    }
    mkg_mk_item_done(a, task, out_rb, elems, ok && stored, tid);
    return item;
}

// Norm items and decode attention items in functions of their own (v120 in bench/NOTES.md), as
// prefill attention is (v109): neither holds the other's values, and a change to one op's code
// leaves the other's registers as they were.
static __device__ __noinline__ int mkg_mk_run_norm_item(const mkg_mk_args *a, int task, const mkg_mk_op *op, int item,
                                                        int items, unsigned char *scratch, int tid)
{
    return mkg_mk_item_of(a, task, op, item, items, scratch, tid, false);
}

static __device__ __noinline__ int mkg_mk_run_decode_attn(const mkg_mk_args *a, int task, const mkg_mk_op *op,
                                                          int item, int items, unsigned char *scratch, int tid)
{
    return mkg_mk_item_of(a, task, op, item, items, scratch, tid, true);
}

// Item `item` of `items` of a norm or attention op, by its function.
static __device__ __forceinline__ int mkg_mk_run_item(const mkg_mk_args *a, int task, const mkg_mk_op *op, int item,
                                                      int items, unsigned char *scratch, int tid)
{
    if (op->kind == MKG_MK_NORM)
        return mkg_mk_run_norm_item(a, task, op, item, items, scratch, tid);
    if (a->prefill)
        return mkg_mk_run_prefill_attn(a, task, op, item, items, scratch, tid);
    return mkg_mk_run_decode_attn(a, task, op, item, items, scratch, tid);
}

// ---- norms inside the GEMMs (MKG_MK_OPT_NORM_IN_GEMM) ---------------------------------------

// Work items of op o (the caller's copy in op) in this step: a norm run inside its GEMM has none.
// Only a norm in a fused step looks at the op after it in the list.
static __device__ __forceinline__ int mkg_mk_items_run(const mkg_mk_args *a, const mkg_mk_op *op, int o, int fused)
{
    const bool none = fused && op->kind == MKG_MK_NORM && mkg_mk_norm_fused(a->ops, a->ops_run, o, fused);
    return none ? 0 : mkg_mk_items(op, &a->cfg, a->m, a->prefill, a->attn_split, mkg_mk_norm_item_rows(a->opts));
}

// The next fused GEMM op, which the row makers read ahead (mkg_mk_row_maker): the op (-1: none), its
// norm op, the norm's input op (-1: the step's input) and the GEMM's table row. Finding them is a
// chain of dependent global loads through the op table, ~3.5 us under load (v97c), so the row
// makers do it right after the row before, while they would only wait for the op's input.
struct mkg_mk_wnext {
    int o, nt, d, row;
};

// The first GEMM op after op o whose A the writers fill, read ahead; g goes into the L2.
static __device__ __forceinline__ mkg_mk_wnext mkg_mk_writer_next(const mkg_mk_args *a, int o, int fused, int lane,
                                                                  int h)
{
    mkg_mk_wnext n = {-1, 0, -1, 0};
    for (int k = o + 1; k < a->ops_run; ++k)
        if (a->ops[k].kind == MKG_MK_GEMM && mkg_mk_wait_op(a->ops, a->ops_run, k, fused) != a->ops[k].dep) {
            n.o = k;
            break;
        }
    if (n.o < 0)
        return n;
    n.nt = a->ops[n.o].dep;
    n.d = a->ops[n.nt].dep;
    n.row = a->ops[n.o].table_row;
    const uint4 *g = (const uint4 *)a->ops[n.nt].weight;
    const int chunks = a->cfg.hidden >> 3, c0 = lane + 128 * h;
#pragma unroll
    for (int i = 0; i < 4; ++i)
        if ((lane & 7) == 0 && c0 + 32 * i < chunks)   // one 128-byte line per 8 lanes
            mkg_prefetch_l2(g + c0 + 32 * i);
    return n;
}

// What the row makers need of fused op n.o; every load here depends only on n, so
// they go out together (one round trip).
struct mkg_mk_wop {
    const uint4 *x, *g;             // the norm's input row 0 and weight
    const unsigned int *ctr;        // the counters of the norm's input op (nullptr: the step's input)
    unsigned long long *stamps;     // the GEMM's deps.stamps (timeline on, warp 2 only), else nullptr
    unsigned int per_row, force;    // elements per input row; the forced-stall test's extra count
    int nt;                         // the norm op (the stall record names it)
};

static __device__ __forceinline__ mkg_mk_wop mkg_mk_writer_op(const mkg_mk_args *a, const mkg_mk_wnext *n, int h)
{
    mkg_mk_wop w;
    w.nt = n->nt;
    w.x = (const uint4 *)a->ops[n->nt].src;
    w.g = (const uint4 *)a->ops[n->nt].weight;
    w.ctr = n->d >= 0 ? a->counters + (size_t)n->d * a->rb_max : nullptr;
    w.per_row = n->d >= 0 ? (unsigned int)a->ops[n->d].out_cols : 0u;
    w.force = n->nt == a->force_task ? a->force_extra : 0u;
    w.stamps = a->timeline && h == 0 ? a->rows[n->row].params.deps.stamps : nullptr;
    return w;
}

// The row makers (warps 1 and 3 of the producer warpgroup, h = 0, 1), at a fused GEMM op:
// each waits (lane 0, bounded) for row 0 of the norm's input and leaves in y its half of the
// normalised row, lane l holding chunks l + 32 (4 h + i), i = 0..3 (zeros past the row). The
// arithmetic of mkg_op_rmsnorm_rows for rows < 8 and at most 256 chunks: virtual warp v's butterfly
// sum (v = 4 h + i), the 8 sums added v = 0, 1, ... (they meet in the exchange words at xs), the same
// rsqrt and scale. Two warps so that the row stays in registers under the producers' cap (one warp
// holding all of it and g spilled ~540 bytes a lane, v97b). g is read beside x, after the wait (an L2
// prefetch went out when the op was found). On a stall of either warp the row is zeros (the stages still
// complete; the step reports it). Returns when the input was seen complete (globaltimer), for the
// timeline.
static __device__ __forceinline__ uint64_t mkg_mk_norm_row(const mkg_mk_args *a, const mkg_mk_wop *w, uint32_t xs,
                                                           uint4 y[4], int lane, int h, int hidden, float eps)
{
    const int chunks = hidden >> 3, c0 = lane + 128 * h;
    const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
    bool ok = true;
    uint64_t t_ready = 0;
    if (lane == 0) {
        if (w->ctr) {
            if (w->force)
                ok = mkg_dep_wait(w->ctr, w->per_row + w->force, a->stall, (unsigned int)w->nt, 0u, a->timeout_ns);
            if (ok)
                ok = mkg_dep_wait_rows(w->ctr, w->per_row, a->m, 0, 1, a->stall, (unsigned int)w->nt, a->timeout_ns);
        }
        t_ready = w->stamps ? mkg_globaltimer() : 0;
    }
    ok = __shfl_sync(0xFFFFFFFFu, ok ? 1 : 0, 0) != 0;
    __syncwarp();                                       // lane 0's acquire before every lane's reads of x
    uint4 gv[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const bool in = c0 + 32 * i < chunks;
        y[i] = ok && in ? __ldcg(w->x + c0 + 32 * i) : zero;
        gv[i] = in ? __ldg(w->g + c0 + 32 * i) : zero;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float s = mkg_norm_butterfly(c0 + 32 * i < chunks ? mkg_norm_ss8(y[i], 0.0f) : 0.0f);
        if (lane == 0)
            mkg_st_shared_b32(xs + 4u * (uint32_t)(4 * h + i), __float_as_uint(s));
    }
    if (lane == 0)
        mkg_st_shared_b32(xs + 32u + 4u * (uint32_t)h, ok ? 1u : 0u);
    mkg_bar_sync_any(MKG_MK_WRITER_BAR, 64);   // not .aligned: lanes may arrive apart
    float ss = __uint_as_float(mkg_ld_shared_b32(xs));
#pragma unroll
    for (int v = 1; v < 8; ++v)
        ss += __uint_as_float(mkg_ld_shared_b32(xs + 4u * (uint32_t)v));
    ok = mkg_ld_shared_b32(xs + 32u) != 0u && mkg_ld_shared_b32(xs + 36u) != 0u;
    const float rs = rsqrtf(ss / (float)hidden + eps);
#pragma unroll
    for (int i = 0; i < 4; ++i)
        y[i] = ok && c0 + 32 * i < chunks ? mkg_norm_scale8(y[i], gv[i], rs) : zero;
    return t_ready;
}

// The A writers' rows in a->a_rows for this CTA: two rows (fused ops alternate between them), then
// each row's input-ready time (timeline on), MKG_MK_A_ZERO_BYTES of zeros before the first CTA's.
static __device__ __forceinline__ unsigned char *mkg_mk_a_cta(const mkg_mk_args *a)
{
    return (unsigned char *)a->a_rows + MKG_MK_A_ZERO_BYTES + (size_t)blockIdx.x * mkg_mk_a_cta_bytes(a->cfg.hidden);
}

// The row makers (warps 1 and 3 of the producer warpgroup, h = 0, 1; MKG_MK_OPT_NORM_IN_GEMM): for every
// fused GEMM op of the step in order, whether or not this CTA has a unit of it, find it (reading the
// op table ahead, mkg_mk_writer_next), wait for its input and make the token's normalised row
// (mkg_mk_norm_row), store it into row b of this CTA (b alternating), fence it towards the async
// proxy (the A copier's bulk copies) and meet; then lane 0 of warp 1 publishes the op in row b's
// word of the exchange (release), which the copier waits for. They run ahead of the producer: a
// CTA whose producer reaches the op late (after an O unit's loads) finds its row made (v97c-v97e made
// it at the op's first queue entry: ~3.5 us of op-table loads and the wait after the producer came).
// NOTE: row b is rewritten (op k + 2) only once op k + 2's input is complete, which comes after every
// unit of op k, this CTA's included, and so after its copies landed (in the decoder graph each fused
// op's input depends on the fused op before it; on a stall the step has already failed, and the
// copier stops waiting for its row).
static __device__ __noinline__ void mkg_mk_row_maker(const mkg_mk_args *a, uint32_t xs, int h, int fused)
{
    const int lane = (int)threadIdx.x & 31, hidden = a->cfg.hidden, chunks = hidden >> 3, c0 = lane + 128 * h;
    unsigned char *cta = mkg_mk_a_cta(a);
    const size_t row_bytes = mkg_mk_a_row_bytes(hidden);
    mkg_mk_wnext next = mkg_mk_writer_next(a, -1, fused, lane, h);
    for (uint32_t b = 0; next.o >= 0; b ^= 1u) {
        const mkg_mk_wop w = mkg_mk_writer_op(a, &next, h);
        uint4 y[4];
        const uint64_t t_ready = mkg_mk_norm_row(a, &w, xs, y, lane, h, hidden, a->cfg.norm_eps);
        uint4 *row = (uint4 *)(cta + b * row_bytes);
#pragma unroll
        for (int i = 0; i < 4; ++i)
            if (c0 + 32 * i < chunks)
                row[c0 + 32 * i] = y[i];
        mkg_fence_proxy_async_global();
        mkg_bar_sync_any(MKG_MK_WRITER_BAR, 64);   // not .aligned: lanes may arrive apart
        if (h == 0 && lane == 0) {
            if (w.stamps)
                ((unsigned long long *)(cta + 2 * row_bytes))[b] = t_ready;
            mkg_st_release_cta_shared_u32(xs + 40u + 4u * b, (uint32_t)next.o);
        }
        next = mkg_mk_writer_next(a, next.o, fused, lane, h);
    }
}

// The A copier (lane 0 of warp 2; MKG_MK_OPT_NORM_IN_GEMM) for the stages that the producer thread
// armed with B only (mkg_gemm_produce_b_for_a), in the order it pushed them. At a new op it waits
// for a row maker to publish the op's row (mkg_mk_row_maker). Per entry it copies each K sub-tile's
// A in with bulk copies that complete on the stage's full barrier, as a TMA load of A would: row 0
// from the row (the 128-byte swizzle leaves row 0 in place: chunk j at byte 16 j) and rows 1 .. TM - 1
// from the zeros (a one-token step's TMA load leaves the buffer's rows there, any values: a padded
// row's products land in that token's own columns of C, which the epilogue does not store), and
// arrives on the barrier, the one arrival the phase waits for beside the stage's bytes
// (mkg_gemm_produce_b_for_a expects them all). End at the producer's MKG_AQ_END.
// v97-v97d wrote A with st.shared and a fence.proxy.async per entry (MEMBAR.ALL.CTA in the SASS);
// v97e's bulk copies took QKV from +6.3 to +4.1 us of work a layer against the unfused step.
// NOTE: an entry is read before its stage can complete (the arrival follows the read), which keeps
// mkg_aq_push's bound on unread entries.
static __device__ __noinline__ void mkg_mk_a_copier(const mkg_mk_args *a, uint32_t q, uint32_t full, uint32_t ring)
{
    const uint32_t xs = q + 8u + 8u * MKG_AQ_ENTRIES;           // mkg_aq_xchg
    const unsigned char *zeros = (const unsigned char *)a->a_rows, *cta = mkg_mk_a_cta(a);
    const size_t row_bytes = mkg_mk_a_row_bytes(a->cfg.hidden);
    const uint4 *row = nullptr;
    unsigned long long *stamps = nullptr;     // the op's deps.stamps (timeline on)
    uint32_t popped = 0;
    int op_cur = -1, unit_cur = -1;
    uint64_t t_ready = 0;
    for (;;) {
        // The next entry, once it carries this round's tag (mkg_aq_push).
        const uint32_t at = q + 8u + 8u * (popped % MKG_AQ_ENTRIES), tag = mkg_aq_round_tag(popped);
        uint64_t v = mkg_ld_relaxed_cta_shared_b64(at);
        while ((uint32_t)v >> MKG_AQ_ROUND_SHIFT != tag) {
            __nanosleep(32);
            v = mkg_ld_relaxed_cta_shared_b64(at);
        }
        const uint2 e = make_uint2((uint32_t)v, (uint32_t)(v >> 32));
        ++popped;
        if ((e.x & MKG_AQ_END) == MKG_AQ_END)
            break;
        const int o = (int)((e.y >> 8) & 0x3ffu), unit = (int)(e.y >> 18);
        bool first = false;
        if (o != op_cur) {
            // Rows are made in op order into two rows, so op o's is in one of them (or comes next).
            // After a stall the row makers' waits return at once and they may run past op o: once
            // the step has failed (a->stall, looked at every 128 rounds), any row will do.
            uint32_t b = 0;
            for (uint32_t n = 1; mkg_ld_acquire_cta_shared_u32(xs + 40u + 4u * b) != (uint32_t)o; ++n) {
                if ((n & 127u) == 0 && *(volatile unsigned int *)a->stall != 0u)
                    break;
                if (b == 1u)
                    __nanosleep(32);
                b ^= 1u;
            }
            row = (const uint4 *)(cta + b * row_bytes);
            if (a->timeline) {
                stamps = a->rows[a->ops[o].table_row].params.deps.stamps;
                t_ready = __ldcg((const unsigned long long *)(cta + 2 * row_bytes) + b);
            }
            op_cur = o;
            first = true;
        }
        const bool stamp = stamps && (unit != unit_cur || first);   // the unit's ready stamp
        const uint64_t t_stamp = !stamp ? 0 : first ? t_ready : mkg_globaltimer();
        unit_cur = unit;
        const uint32_t bar = full + 8u * ((e.x >> 9) & 15u), stage = ring + (e.x & 0x1ffu) * 1024u;
        const uint32_t kh = ((e.x >> 13) & 1u) + 1u, a_bytes = ((e.x >> 14) & 31u) * 1024u;
        const uint32_t sub = ((e.x >> 19) & 127u) * 1024u, q0 = e.y & 0xffu;
        for (uint32_t i = 0; i < kh; ++i) {
            mkg_bulk_load(stage + i * sub, row + 8u * (q0 + i), 128u, bar);   // K sub-tile q0 + i: 8 chunks
            mkg_bulk_load(stage + i * sub + 128u, zeros, a_bytes - 128u, bar);
        }
        mkg_mbarrier_arrive(bar);
        if (stamp)
            stamps[2 * unit + 1] = t_stamp;
    }
}

// ---- the kernel ---------------------------------------------------------------------------

// Producer thread, at GEMM op o: asks the TMA unit for the tensor maps of every GEMM op in
// [ahead, o] not yet asked for and of the first GEMM op after o, so each GEMM's maps (in the
// global dispatch table) are fetched while the op before it still runs. Returns the new `ahead`.
static __device__ __forceinline__ int mkg_mk_prefetch_ahead(const mkg_mk_args *a, int o, int ahead)
{
    for (; ahead < a->ops_run; ++ahead) {
        if (a->ops[ahead].kind != MKG_MK_GEMM)
            continue;
        mkg_dispatch_prefetch_maps(a->rows, a->row_count, a->ops[ahead].table_row);
        if (ahead > o)
            return ahead + 1;
    }
    return ahead;
}

// The GEMM tasks' per-unit hook (mkg_dispatch_consume_units calls mkg_unit_done after each unit's
// last step): the unit's timeline entry, from t0 (the previous unit's end, or the task's start).
struct mkg_mk_unit_hook {
    const mkg_mk_args *a;
    int *stamps;                // the CTA's timeline entries so far
    int task, tid;
    uint64_t t0;
};

static __device__ __forceinline__ void mkg_unit_done(mkg_mk_unit_hook *h, int u)
{
    if (!h->a->timeline)
        return;
#ifdef MKG_MK_PHASES
    if (h->tid == 0) {
        volatile unsigned long long *ph = blockIdx.x < MKG_MK_PHASE_CTAS ? mkg_mk_phase_buf[blockIdx.x] : nullptr;
        mkg_mk_stamp(h->a, h->stamps, h->task, u, h->t0, 0, ph, 4);
        if (ph)
            ph[0] = ph[3] = 0;               // the next unit's first stage, its stores
    }
#else
    if (h->tid == 0)
        mkg_mk_stamp(h->a, h->stamps, h->task, u, h->t0, 0);
#endif
    h->t0 = mkg_globaltimer();
}

// How the GEMMs' ring changes layout under the launch options (mkg_ring_switch).
static __device__ __forceinline__ int mkg_mk_ring_mode(unsigned int opts)
{
    return (opts & MKG_MK_OPT_RING_HANDOVER)      ? MKG_RING_HANDOVER
           : (opts & MKG_MK_OPT_RING_BY_GEOMETRY) ? MKG_RING_KEYED
                                                  : MKG_RING_DRAIN;
}

__global__ void __launch_bounds__(MKG_LAUNCH_THREADS, 1) mkg_megakernel_sm90(const __grid_constant__ mkg_mk_args a)
{
    extern __shared__ __align__(1024) unsigned char mkg_dyn_smem[];
    const mkg_smem sm = mkg_smem_carve(mkg_dyn_smem);
    if (threadIdx.x == 0) {
        mkg_smem_init(&sm);
        for (uint32_t i = 0; i < MKG_AQ_BYTES; i += 8)  // the A writer's queue: nothing pushed
            mkg_st_shared_v2_b32(mkg_aq_at(&sm) + i, 0u, 0u);
    }
    __syncthreads();
    const int grid = (int)gridDim.x;
    const int me = (a.opts & MKG_MK_OPT_TPC_SPREAD) ? mkg_cta_rank_spread((int)blockIdx.x, grid) : (int)blockIdx.x;
    // Norms inside the GEMMs (mkg_mk_norm_in_gemm_step): every role deals the same items from it.
    const int fused = mkg_mk_norm_in_gemm_step(&a.cfg, a.m, a.prefill, mkg_mk_opts_norm_in_gemm(a.opts));
    mkg_ring ring = mkg_ring_start();
    // NOTE: the megakernel's own register split: its producer runs dependency waits,
    // which do not fit the library's 40-register producer budget (ptxas ignored it).
    if (threadIdx.x < 128) {
        mkg_setmaxnreg_dec<MKG_MK_PRODUCER_REGS>();
        // MKG_MK_OPT_TWO_PRODUCERS: lanes 0 of warps 0 and 1 walk the same tasks and fill alternate
        // ring slots of every GEMM unit (mkg_ring_mine); the first polls each unit's input, the
        // second waits on its word (mkg_dispatch_produce).
        const int np = (a.opts & MKG_MK_OPT_TWO_PRODUCERS) ? 2 : 1;
        const int mode = mkg_mk_ring_mode(a.opts);
        const int handover = mode == MKG_RING_HANDOVER && np == 2 ? MKG_RING_HANDOVER_DRAIN : mode;
        if ((threadIdx.x & 31) == 0 && (int)threadIdx.x < 32 * np) {
            int base = 0, ahead = 0;                     // ops before `ahead`: maps prefetched
            for (int o = 0; o < a.ops_run; ++o) {
                const mkg_mk_op op = a.ops[o];
                int items;
                if (op.kind == MKG_MK_GEMM) {
                    if (threadIdx.x == 0)
                        ahead = mkg_mk_prefetch_ahead(&a, o, ahead);
                    const mkg_gemm_params *p;
                    int m, units;
                    const int s = mkg_dispatch_begin<MKG_DTYPE_BF16, 1>(a.rows, a.row_count, a.m_cur, op.table_row,
                                                                        a.dispatch_err, &ring, &sm, 1, &p, &m, &units,
                                                                        handover);
                    items = s < 0 ? 0 : units;
                    // A GEMM that runs its norm inside: B only; the A writers (row makers in warps 1
                    // and 3, the copier in warp 2) bring A in.
                    const bool by_writer = mkg_mk_wait_op(a.ops, a.ops_run, o, fused) != op.dep;
                    for (int u = mkg_mk_first(me, base); u < items; u += grid)
                        if (by_writer)
                            mkg_dispatch_produce_b_for_a<MKG_DTYPE_BF16>(p, s, m, u, &ring, &sm, (uint32_t)o);
                        else if (np == 2)
                            mkg_dispatch_produce<MKG_DTYPE_BF16, 1, false, 2>(p, s, m, u, &ring, &sm);
                        else
                            mkg_dispatch_produce<MKG_DTYPE_BF16, 1>(p, s, m, u, &ring, &sm);
                } else {
                    items = mkg_mk_items_run(&a, &op, o, fused);
                }
                base = (base + items) % grid;
            }
            if (fused && threadIdx.x == 0)
                mkg_aq_push(&sm, MKG_AQ_END, 0u);
        } else if (fused && threadIdx.x / 32 == 2) {
            if ((threadIdx.x & 31) == 0)
                mkg_mk_a_copier(&a, mkg_aq_at(&sm), sm.full, sm.ring);
        } else if (fused && threadIdx.x >= 32) {     // warps 1 and 3 (warp 1 produces only with TWO_PRODUCERS)
            mkg_mk_row_maker(&a, mkg_aq_xchg(&sm), threadIdx.x / 32 == 3 ? 1 : 0, fused);
        }
    } else {
        mkg_setmaxnreg_inc<MKG_MK_CONSUMER_REGS>();
        const int wg = mkg_warp_uniform((int)threadIdx.x / 128) - 1, tid = threadIdx.x - 128;
        unsigned char *scratch = mkg_dyn_smem + (sm.epi - mkg_smem_addr(mkg_dyn_smem));
        int base = 0, stamps = 0;
        bool staged = false;    // a GEMM task ran since this CTA's last item (see the item loop)
#ifdef MKG_MK_PHASES
        if (tid == 0 && blockIdx.x < MKG_MK_PHASE_CTAS)
            mkg_mk_phase_buf[blockIdx.x][0] = mkg_mk_phase_buf[blockIdx.x][3] = 0;
#endif
        for (int o = 0; o < a.ops_run; ++o) {
            const mkg_mk_op op = a.ops[o];
            int items;
            if (mkg_warp_uniform(op.kind) == MKG_MK_GEMM) {   // uniform: see mkg_warp_uniform
                const mkg_gemm_params *p;
                int m, units;
                const int s = mkg_dispatch_begin<MKG_DTYPE_BF16, 1>(
                    a.rows, a.row_count, a.m_cur, op.table_row, a.dispatch_err, &ring, &sm, 0, &p, &m, &units,
                    mkg_mk_ring_mode(a.opts));
                items = s < 0 ? 0 : units;
                // One flat loop over (unit, chunk) steps per task (mkg_dispatch_consume_units), which
                // calls mkg_unit_done(&hook, u) after each unit's last step.
                mkg_mk_unit_hook hook = {&a, &stamps, o, tid, a.timeline ? mkg_globaltimer() : 0};
                if (s >= 0)
                    mkg_dispatch_consume_units<MKG_DTYPE_BF16>(p, s, m, mkg_mk_first(me, base), grid, items, &ring, &sm,
                                                               wg, &hook);
                staged = true;
            } else {
                items = mkg_warp_uniform(mkg_mk_items_run(&a, &op, o, fused));
                for (int i = mkg_mk_first(me, base); i < items; i += grid) {
                    // The items' scratch is the GEMM epilogue's staging area (sm.epi). After a GEMM
                    // task, each warpgroup's TMA stores may still be reading their staging buffers,
                    // and the other warpgroup may still be writing its own (the warpgroups leave a
                    // GEMM task apart, and thread 0 writes the item flag, inside warpgroup 1's last
                    // buffer, before the item's first group barrier): both drain and meet first.
                    if (staged) {
                        mkg_epilogue_drain();
                        mkg_bar_sync_any(MKG_MK_BAR, MKG_OP_THREADS);
                        staged = false;
                    }
                    const uint64_t t0 = a.timeline ? mkg_globaltimer() : 0;
                    const int ran = mkg_mk_run_item(&a, o, &op, i, items, scratch, tid);
                    if (tid == 0)
                        mkg_mk_stamp(&a, &stamps, o, ran, t0,
                                     *(volatile unsigned long long *)(scratch + MKG_MK_READY_AT),
                                     op.kind == MKG_MK_ATTN && !a.prefill
                                         ? (const volatile unsigned long long *)(scratch + MKG_MK_PHASE_AT)
                                         : nullptr,
                                     MKG_MK_ATTN_PHASES);
                }
            }
            base = (base + items) % grid;
        }
        mkg_epilogue_drain();
    }
    // Non-aligned form: lane 0 of a producer warp may arrive apart from its warp's idle lanes.
    if (a.opts & MKG_MK_OPT_JOIN_EXIT)
        mkg_bar_sync_any(0, MKG_LAUNCH_THREADS);
}

extern "C" cudaError_t mkg_mk_kernel_init(void)
{
    return cudaFuncSetAttribute((const void *)mkg_megakernel_sm90, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                MKG_LAUNCH_SMEM_BYTES);
}

extern "C" cudaError_t mkg_mk_launch(const mkg_mk_args *a, int grid, cudaStream_t s)
{
    mkg_megakernel_sm90<<<grid, MKG_LAUNCH_THREADS, MKG_LAUNCH_SMEM_BYTES, s>>>(*a);
    return cudaGetLastError();
}
