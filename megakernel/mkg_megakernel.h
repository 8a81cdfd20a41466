/* mkg_megakernel.h - the sample megakernel: one persistent launch per decoder step.
 *
 * mkg_mk_create() describes the model's 4 GEMMs per layer (+ LM head) as layers of
 * an mkgemm dispatch table (epilogues: plain, residual, SiLU-mul), plans them (cost
 * model, or a loaded table file), uploads the table and the task list once. A step
 * is then: zero the dependency counters, set the step's M in device memory, launch
 * mkg_megakernel_sm90 (one CTA per SM). Nothing else runs on the host per step.
 * Errors: a dispatch error word (layer, reason) and a stall record (task, row block,
 * target, value seen) are read back by mkg_mk_check.
 */
#ifndef MKG_MEGAKERNEL_H
#define MKG_MEGAKERNEL_H

#include <stdio.h>

#include <cuda_runtime_api.h>

#include "mkg_layer.h"
#include "mkg_mk_graph.h"
#include "mkg_model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MKG_MK_STAMP_WORDS 8         /* words per timeline entry */

/* What a task does before its input is ready (mkg_mk_args::opts; MKG_MK_OPTS in the
 * environment of mkg_mk_create overrides MKG_MK_OPT_DEFAULT). */
#define MKG_MK_OPT_ATTN_PREFETCH 1u  /* decode attention: the cache rows < pos into L2 */
#define MKG_MK_OPT_NORM_PREFETCH 2u  /* RMSNorm: its weight into L2 */
#define MKG_MK_OPT_GEMM_L2_TAIL 4u   /* GEMMs of <= 48 MB of weights: MKG_DEPS_L2_TAIL (unit's B past the ring) */
#define MKG_MK_OPT_GEMM_L2_ALL 8u    /* MKG_DEPS_L2_TAIL on every GEMM */
/* 16: was ld.global.cg cache reads in decode attention; measured neutral twice (mk-v9), removed */
#define MKG_MK_OPT_B_EVICT_FIRST 32u /* GEMM weights with an L2 evict-first hint (MKG_DEPS_B_EVICT_FIRST) */
#define MKG_MK_OPT_ROPE_EARLY 64u    /* decode attention: the RoPE cos / sin of pos before the wait */
#define MKG_MK_OPT_ATTN_SPLIT 128u   /* decode attention of small steps in MKG_MK_ATTN_PARTS parts (mkg_mk_graph.h) */
/* Bits 256, 512 (a weight-prefetch gate) and 1024 (a first-block preload) were session-20
 * experiments, measured slower or flat and removed (bench/NOTES.md, mk-v11); they are ignored. */
#define MKG_MK_OPT_WARM 2048u       /* decode attention, small norms: lone items run dry before the wait when the input is not ready */
#define MKG_MK_OPT_TWO_PRODUCERS 4096u /* GEMM units: lanes 0 of warps 0 and 1 fill alternate ring slots (v57; off by
                                          default: within the run-to-run spread of one in v57, v57b and v58) */
/* 8192 (four producers) was a v57b trial, within the run-to-run spread of two; it is ignored. */
#define MKG_MK_OPT_JOIN_EXIT 16384u  /* all 384 threads meet at a CTA barrier before exit (the producer warps' idle
                                        threads exit at once otherwise); a compute-sanitizer racecheck experiment */
#define MKG_MK_OPT_A_MAP_PREFETCH 32768u /* GEMMs: A's tensor map prefetched right before the wait (MKG_DEPS_A_MAP_PREFETCH) */
#define MKG_MK_OPT_TPC_SPREAD 65536u /* items dealt to CTAs in mkg_cta_rank_spread order (even CTAs first: one SM per
                                        TPC while a task has fewer items than SMs) instead of blockIdx order */
#define MKG_MK_OPT_READY_IN_ORDER 131072u /* GEMMs: a unit whose input is complete when its producer reaches it
                                            loads in stage order, not weights first (MKG_DEPS_READY_IN_ORDER; with
                                            one producer) */
#define MKG_MK_OPT_RING_HANDOVER 262144u /* GEMMs: as RING_BY_GEOMETRY, and a change of layout starts where the old
                                            stages are released first, each new slot waiting for the old stages
                                            under it only (MKG_RING_HANDOVER), not the whole ring. Needs a build with
                                            CMake MKG_MK_RING_GATES=ON (else as RING_BY_GEOMETRY); measured slower
                                            (v75 in bench/NOTES.md) */
#define MKG_MK_OPT_RING_BY_GEOMETRY 524288u /* GEMMs: the ring's layout keyed by stage geometry (MKG_RING_KEYED): rows
                                               of one stage count and size follow each other without a drain (down ->
                                               qkv at decode); off: measured +5-10 us at decode b1 (v76) */
#define MKG_MK_OPT_L2_TAIL_GATE_UP 1048576u /* gate/up GEMMs only: MKG_DEPS_L2_TAIL, at most MKG_MK_L2_TAIL_TILES K
                                               tiles of each unit (0 or unset: all). gate/up's producers reach their
                                               units ~25 us before the input, while attention and O leave DRAM idle;
                                               off: 3 tiles flat at decode b1 and +35 us at b8, the whole tail +105 us
                                               (v77) */
#define MKG_MK_OPT_NORM_IN_GEMM 4194304u /* decode steps of one token: each RMSNorm inside the GEMM that reads it
                                           (mkg_mk_norm_in_gemm_step in mkg_mk_graph.h: two warps of the producer
                                           warpgroup make the normalised row ahead, and a third one's bulk copies
                                           bring it into the stages as A, same bits);
                                           ignored with TWO_PRODUCERS; v97f was +9 us at decode b1 (H100) and
                                           off by default; in the default since v117 (-0.8% at b1, H100) */
#define MKG_MK_OPT_NORM_ROWS_16 8388608u /* norm items of 16 rows instead of 64 (mkg_mk_norm_item_rows): a 64-row
                                           norm runs on four CTAs (v99; off: decode b64 +9%, prefill 512 +7%) */
#define MKG_MK_OPT_ROPE_ONCE 16777216u /* prefill attention: each item rotates and appends its own tokens' keys
                                        once and flags them; the others read them from the cache (the same bits;
                                        mkg_op_attention_prefill's rotate-once mode, v104) */
#define MKG_MK_OPT_ATTN_FOLD 33554432u /* prefill attention with ROPE_ONCE (ignored without): each item waits
                                          for its own QKV row block only; with more items than CTAs but at most
                                          twice as many, a CTA's second item is the longest left and its first
                                          item appends and flags the second's keys too (mkg_mk_attn_fold,
                                          mkg_mk_attn_partner), so each CTA attends about as many keys (v108) */
#define MKG_MK_OPT_TWO_PRODUCERS_PREFILL 67108864u /* prefill steps only: as TWO_PRODUCERS (mkg_mk_step_opts;
                                                   v115: two producers everywhere gave prefill 2048 -3.2% and
                                                   512 -3 to -6%, but decode b8 +1.2%, on the H100) */
#define MKG_MK_OPT_WARM_SINGLE 134217728u /* WARM at steps of one token only (mkg_mk_step_opts; v115: WARM off
                                            gave decode b8 -1.7%, b1 within the spread, on the H100) */
/* The bits that choose other bits per step (mkg_mk_step_opts). */
#define MKG_MK_OPT_STEP_BITS (MKG_MK_OPT_TWO_PRODUCERS_PREFILL | MKG_MK_OPT_WARM_SINGLE)
/* Bits the GEMM rows of the dispatch table take at mkg_mk_create (deps.flags). */
#define MKG_MK_OPT_TABLE_BITS                                                                          \
    (MKG_MK_OPT_GEMM_L2_TAIL | MKG_MK_OPT_GEMM_L2_ALL | MKG_MK_OPT_B_EVICT_FIRST | MKG_MK_OPT_A_MAP_PREFETCH | \
     MKG_MK_OPT_READY_IN_ORDER | MKG_MK_OPT_L2_TAIL_GATE_UP)
#define MKG_MK_OPT_DEFAULT 264374499u /* 1 2 32 64 128 2048 131072 (v73: decode b1 -2.2%) 8388608 (v99, norm items
                                       of 16 rows: b64 -9%, prefill 512 -7%, 2048 -2%) 16777216 (v104, rotate-once
                                       prefill attention) 33554432 (v108, the folded attention deal: prefill 2048
                                       -5% on the H200) 67108864 134217728 (v115, options per step) 4194304 (v117,
                                       the norms inside the GEMMs at decode b1); the L2 tail measured slower
                                       (bench/NOTES.md, mk-v7, mk-v9), and so did the ring by geometry (v76) */

/* The options a step of `m` tokens (`prefill`: a prefill step) launches with under launch options
 * `opts`: the per-step bits (MKG_MK_OPT_STEP_BITS) resolved into the bits they choose. */
static MKG_HD unsigned int mkg_mk_step_opts(unsigned int opts, int m, int prefill)
{
    if ((opts & MKG_MK_OPT_TWO_PRODUCERS_PREFILL) && prefill)
        opts |= MKG_MK_OPT_TWO_PRODUCERS;
    if ((opts & MKG_MK_OPT_WARM_SINGLE) && m > 1)
        opts &= ~MKG_MK_OPT_WARM;
    return opts;
}

/* Whether launch options `opts` run the norms inside the GEMMs where a step allows it
 * (mkg_mk_norm_in_gemm_step); the device and the trace writer ask the same. */
static MKG_HD int mkg_mk_opts_norm_in_gemm(unsigned int opts)
{
    return (opts & MKG_MK_OPT_NORM_IN_GEMM) && !(opts & MKG_MK_OPT_TWO_PRODUCERS);
}

/* Rows of a norm item under launch options `opts` (mkg_mk_norm_rows). */
static MKG_HD int mkg_mk_norm_item_rows(unsigned int opts)
{
    return (opts & MKG_MK_OPT_NORM_ROWS_16) ? 16 : 64;
}

/* Kernel arguments of one step (passed by value, __grid_constant__). */
typedef struct mkg_mk_args {
    const mkg_mk_op *ops;           /* device: the task list */
    int ops_run;                    /* ops of this step (a prefix: without the LM head when not wanted) */
    const mkg_layer_dev *rows;      /* device: the dispatch table */
    int row_count;
    const int *m_cur;               /* device: current M of every table row */
    unsigned int *dispatch_err;     /* device: (row + 1) << 8 | mkg_dispatch_error */
    unsigned int *counters;         /* device: (ops, rb_max) elements written per 64-row block */
    int rb_max;
    unsigned int *stall;            /* device: {task + 1, row block, target, seen} */
    unsigned long long timeout_ns;
    mkg_model_config cfg;
    void *qkv;                      /* (layers, max_tokens, qkv_n): one slice per layer */
    void *attn, *k_cache, *v_cache;
    const int *pos;
    int m, prefill, pos0;
    unsigned long long *timeline;   /* NULL, or (grid, timeline_cap, MKG_MK_STAMP_WORDS):
                                       {task << 32 | item, start, input ready (0: GEMM unit), end,
                                        decode attention's step ends x 3 (else 0), 0} */
    int timeline_cap;
    unsigned int opts;              /* MKG_MK_OPT_* bits */
    int attn_split;                 /* decode attention parts per (token, KV head): 1 or mkg_mk_attn_split */
    float *attn_ws;                 /* device: (MKG_MK_ATTN_SPLIT_PAIRS, MKG_MK_ATTN_WS_FLOATS) split partials,
                                       one set for all layers: a pair's attention in layer l + 1 waits
                                       (through qkv, the norms and o) for the fold that read layer l's */
    unsigned int *attn_ctr;         /* device: (layers, MKG_MK_ATTN_SPLIT_PAIRS) parts finished, zeroed per step */
    unsigned int *rope_ctr;         /* device: (layers, rb_max, kv_heads) prefill row blocks whose keys are in the
                                       cache (MKG_MK_OPT_ROPE_ONCE), zeroed per step */
    int force_task;                 /* test hook: this non-GEMM task waits for force_extra more than exists */
    unsigned int force_extra;
    void *a_rows;                   /* device: MKG_MK_A_ZERO_BYTES of zeros, then per CTA two normalised token
                                       rows and their input-ready times (mkg_mk_a_cta_bytes), which the A
                                       writers of a GEMM that runs its norm inside copy into the stages
                                       (MKG_MK_OPT_NORM_IN_GEMM) */
} mkg_mk_args;

/* The A writers' rows (mkg_mk_args.a_rows): zeros for rows 1 .. TM - 1 of any A sub-tile (TM / 8 < 32,
 * the queue entry's field), then per CTA two rows of `hidden` bf16, 128-byte aligned, and 128 bytes
 * holding each row's input-ready time. */
#define MKG_MK_A_ZERO_BYTES (31 * 1024)
static MKG_HD size_t mkg_mk_a_row_bytes(int hidden)
{
    return ((size_t)hidden * 2 + 127) & ~(size_t)127;
}
static MKG_HD size_t mkg_mk_a_cta_bytes(int hidden)
{
    return 2 * mkg_mk_a_row_bytes(hidden) + 128;
}

typedef struct mkg_mk mkg_mk;

/* Plans (plans = NULL: cost model) and uploads everything for model md. */
mkg_status mkg_mk_create(mkg_model *md, const mkg_layer_plan *plans, mkg_mk **out);
void mkg_mk_destroy(mkg_mk *mk);

/* The layer descriptors of the table (mkg_mk_table_rows(cfg) of them), e.g. for table files. */
const mkg_layer_desc *mkg_mk_layers(const mkg_mk *mk);
const mkg_layer_plan *mkg_mk_plans(const mkg_mk *mk);

/* Plans config c with the cost model (no GPU or memory needed) and prints the
 * schedule of every GEMM at each step size ms[0..count-1]. */
mkg_status mkg_mk_plan_print(const mkg_model_config *c, const int *ms, int count, FILE *f);

/* Prints every GEMM's schedule at step size m. */
void mkg_mk_print_plan(const mkg_mk *mk, int m, FILE *f);

/* Optional per-item device timeline (cap items per CTA), with every GEMM unit's producer
 * stamps (reached, input ready) through deps.stamps; 0 turns it off. */
mkg_status mkg_mk_set_timeline(mkg_mk *mk, int cap);
/* Wait bound of every dependency spin (default 1 s). */
void mkg_mk_set_timeout_ms(mkg_mk *mk, double ms);
/* MKG_MK_OPT_* bits in force. */
unsigned int mkg_mk_opts(const mkg_mk *mk);
/* Sets the option bits read at each launch (for A/B runs and tests of one mk); the table
 * bits (MKG_MK_OPT_TABLE_BITS: GEMM L2 tail, evict-first, A map prefetch, in-order loads) were fixed at
 * create and stay. */
void mkg_mk_set_launch_opts(mkg_mk *mk, unsigned int opts);
/* Test hook: non-GEMM task `task` waits for `extra` more elements than its input ever has (0: off). */
void mkg_mk_force_stall(mkg_mk *mk, int task, unsigned int extra);

/* Enqueues one step on s: m tokens; decode (pos from md->pos) or prefill (positions pos0..). */
mkg_status mkg_mk_step(mkg_mk *mk, int m, int prefill, int pos0, int lm_head, cudaStream_t s);

/* After a step (synchronizes s): MKG_OK, or MKG_ERR_CUDA with *stall / *dispatch_err filled. */
mkg_status mkg_mk_check(mkg_mk *mk, cudaStream_t s, unsigned int stall[4], unsigned int *dispatch_err);

/* Writes the last step's timeline as Chrome trace JSON (Perfetto opens it). */
mkg_status mkg_mk_write_trace(mkg_mk *mk, const char *path);

/* The megakernel's qkv buffer of layer l (the reference path writes md->qkv instead). */
void *mkg_mk_qkv(const mkg_mk *mk, int layer);

/* The kernel (megakernel/mkg_megakernel.cu): one-time attributes, then launches. */
cudaError_t mkg_mk_kernel_init(void);
cudaError_t mkg_mk_launch(const mkg_mk_args *a, int grid, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif /* MKG_MEGAKERNEL_H */
