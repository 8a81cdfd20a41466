/* mkg_mk_graph.h - the megakernel's task list: ops in topological order, the work
 * items of each op at a given step size, and the dependency rule between them.
 *
 * One decoder step is a list of ops (per layer: attention norm, QKV GEMM, attention,
 * O GEMM + residual, FFN norm, gate/up GEMM + SiLU-mul, down GEMM + residual; then
 * the final norm and the LM head). The host builds the list once at startup and
 * uploads it. At run time every CTA walks the whole list; op o's work items are dealt
 * round-robin, item i to CTA (base_o + i) mod grid, where base_o is the running item
 * count mod grid, so consecutive ops start on different SMs. There is no grid barrier:
 * each op's output has one counter per block of 64 rows, and an item waits only for
 * the row blocks of its input that it reads (an op depends on exactly one earlier op).
 * An output row block is complete when its counter reaches rows x out_cols. Both the
 * device code and the CPU simulation test use the rules below.
 */
#ifndef MKG_MK_GRAPH_H
#define MKG_MK_GRAPH_H

#include "mkg_model.h"
#include "mkg_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mkg_mk_kind {
    MKG_MK_NORM = 0,            /* RMSNorm of row blocks: src (x) -> dst (xn) with weight */
    MKG_MK_GEMM = 1,            /* one dispatch-table row, run by the device dispatcher */
    MKG_MK_ATTN = 2             /* RoPE + KV-cache append + attention, per (tokens, kv head) */
} mkg_mk_kind;

typedef enum mkg_mk_gemm_id {
    MKG_MK_QKV = 0, MKG_MK_O = 1, MKG_MK_GATE_UP = 2, MKG_MK_DOWN = 3, MKG_MK_GEMMS_PER_LAYER = 4
} mkg_mk_gemm_id;

typedef struct mkg_mk_op {
    int kind;                   /* mkg_mk_kind */
    int layer;                  /* model layer; cfg.layers for the final norm and the LM head */
    int table_row;              /* GEMM: row in the dispatch table */
    int dep;                    /* the op whose output this op reads; -1: the step's input x */
    int out_cols;               /* columns of the output: a row block is complete at rows x out_cols */
    const void *src;            /* NORM: x */
    const void *weight;         /* NORM: g */
    void *dst;                  /* NORM: xn */
} mkg_mk_op;

/* Ops of one step: 7 per layer + final norm + LM head. */
static MKG_HD int mkg_mk_op_count(const mkg_model_config *c)
{
    return 7 * c->layers + 2;
}

/* Table rows: 4 GEMMs per layer + the LM head (row 4 * layers). */
static MKG_HD int mkg_mk_table_rows(const mkg_model_config *c)
{
    return MKG_MK_GEMMS_PER_LAYER * c->layers + 1;
}

/* Row blocks (counters) per op output. */
static MKG_HD int mkg_mk_row_blocks(int m)
{
    return (m + 63) / 64;
}

/* Fills ops[mkg_mk_op_count(c)] for model md (pointers into its buffers). */
void mkg_mk_graph_build(const mkg_model_config *c, const mkg_model *md, mkg_mk_op *ops);

/* Decode attention: an item of (token, KV head) runs as MKG_MK_ATTN_PARTS items (one group of
 * its key ranges each, mkg_op_attention_decode's part; the last to finish folds and stores)
 * when the step has at most MKG_MK_ATTN_SPLIT_PAIRS (token, KV head) pairs, so a small batch's
 * attention spreads over the GPU. The bits are the same either way. */
#define MKG_MK_ATTN_PARTS 8
#define MKG_MK_ATTN_SPLIT_PAIRS 32
/* Workspace floats of one split (token, KV head): 8 groups x 4 heads x (64 o + m + l). */
#define MKG_MK_ATTN_WS_FLOATS (MKG_MK_ATTN_PARTS * 4 * 66)

/* Parts per (token, KV head) of a step of m tokens (1: no split). */
static MKG_HD int mkg_mk_attn_split(const mkg_model_config *c, int m, int prefill)
{
    return !prefill && m * c->kv_heads <= MKG_MK_ATTN_SPLIT_PAIRS ? MKG_MK_ATTN_PARTS : 1;
}

/* Rows [r0, r1) of norm item `item` of `rows` rows (64, one counter block, or 16: mkg_mk_norm_item_rows)
 * at step size m. Items of 16 rows add their elements to their block's one counter, four to a block,
 * which then holds the same total. */
static MKG_HD void mkg_mk_norm_rows(int m, int rows, int item, int *r0, int *r1)
{
    *r0 = rows * item;
    *r1 = m < *r0 + rows ? m : *r0 + rows;
}

/* Work items of a non-GEMM op at step size m (GEMMs: the dispatched schedule's units); split:
 * decode attention's parts per (token, KV head), 1 or mkg_mk_attn_split; norm_rows: rows of a norm
 * item (mkg_mk_norm_rows). */
static MKG_HD int mkg_mk_items(const mkg_mk_op *op, const mkg_model_config *c, int m, int prefill, int split,
                               int norm_rows)
{
    if (op->kind == MKG_MK_NORM)
        return (m + norm_rows - 1) / norm_rows;
    if (op->kind == MKG_MK_ATTN)
        return (prefill ? mkg_mk_row_blocks(m) : m * split) * c->kv_heads;
    return 0;
}

/* Norms inside the GEMMs (MKG_MK_OPT_NORM_IN_GEMM): a decode step of one token runs each RMSNorm
 * inside the GEMM that reads it (QKV, gate/up, LM head). Two warps of every CTA normalise the token's
 * row themselves, with the norm op's arithmetic (mkg_mk_norm.cuh: the same reduction order, so the same
 * bits), into one of the CTA's rows in mkg_mk_args.a_rows, and a third warp's bulk copies bring it into
 * the GEMM's stages as A; the norm op has no items, and the GEMM waits for the norm's input instead.
 * The row makers hold the row in registers: one row (m = 1) of at most 256 chunks of 8 (hidden <= 2048);
 * the queue tags a stage with the op (< 1024). */
static MKG_HD int mkg_mk_norm_in_gemm_step(const mkg_model_config *c, int m, int prefill, int on)
{
    return on && !prefill && m == 1 && c->hidden % 8 == 0 && c->hidden <= 8 * 256 && 7 * c->layers + 2 <= 1024;
}

/* 1 if op t of the step's first n ops is a norm run inside the GEMM right after it (fused: the
 * step's mkg_mk_norm_in_gemm_step). The last op run (a final norm without the LM head) keeps its task. */
static MKG_HD int mkg_mk_norm_fused(const mkg_mk_op *ops, int n, int t, int fused)
{
    return fused && ops[t].kind == MKG_MK_NORM && t + 1 < n && ops[t + 1].kind == MKG_MK_GEMM && ops[t + 1].dep == t;
}

/* The op whose output op t's items wait for: its dep, or for a GEMM that runs its norm inside
 * (mkg_mk_norm_fused of its dep), the norm's own input (-1: the step's input x). */
static MKG_HD int mkg_mk_wait_op(const mkg_mk_op *ops, int n, int t, int fused)
{
    const int d = ops[t].dep;
    return fused && d >= 0 && ops[t].kind == MKG_MK_GEMM && mkg_mk_norm_fused(ops, n, d, fused) ? ops[d].dep : d;
}

/* Rows [*r0, *r1) of the input that attention item i reads, and the row block it writes.
 * Decode item i is part i % split of (token, KV head) = (i / split / KVH, i / split % KVH). */
static MKG_HD void mkg_mk_attn_rows(const mkg_model_config *c, int m, int prefill, int split, int item, int *r0,
                                    int *r1, int *out_rb)
{
    if (prefill) {
        const int t = item / c->kv_heads;        /* 64-token block */
        *r0 = 0;                                 /* causal: keys of every earlier token of the step */
        *r1 = t * 64 + 64 < m ? t * 64 + 64 : m;
        *out_rb = t;
    } else {
        const int t = item / split / c->kv_heads;
        *r0 = t;
        *r1 = t + 1;
        *out_rb = t / 64;
    }
}

/* MKG_MK_OPT_ATTN_FOLD: whether n items dealt round robin over `grid` CTAs fold (two rounds). */
static MKG_HD int mkg_mk_attn_folds(int n, int grid)
{
    return n > grid && n <= 2 * grid;
}

/* MKG_MK_OPT_ATTN_FOLD: the attention item that deal position i of n (position i runs on the CTA of
 * position i - grid, after it) runs. Folded, a CTA's first item is the i-th (the i-th shortest:
 * prefill items grow with their row block) and its second the (n - 1 - (i - grid))-th, the longest
 * left; otherwise the identity. */
static MKG_HD int mkg_mk_attn_fold(int n, int grid, int i)
{
    return mkg_mk_attn_folds(n, grid) && i >= grid ? n - 1 - (i - grid) : i;
}

/* MKG_MK_OPT_ATTN_FOLD (with ROPE_ONCE): the item whose keys the item at deal position i appends and
 * flags besides its own, its CTA's second item (-1: none). So every row block's keys are flagged in
 * the first round, and an item waits only on first items: a first item on first items of earlier
 * blocks, a second one (which starts after its CTA's first) on any. No cycle, no deadlock. */
static MKG_HD int mkg_mk_attn_partner(int n, int grid, int i)
{
    return mkg_mk_attn_folds(n, grid) && i < grid && i + grid < n ? mkg_mk_attn_fold(n, grid, i + grid) : -1;
}

/* MKG_MK_OPT_ATTN_FOLD (with ROPE_ONCE): 1 if the item at deal position i had its keys appended by
 * its CTA's first item (mkg_mk_attn_partner). */
static MKG_HD int mkg_mk_attn_appended(int n, int grid, int i)
{
    return mkg_mk_attn_folds(n, grid) && i >= grid;
}

/* Elements attention item i adds to its output row block: a (token, KV head)'s G x 64, in
 * equal shares over its parts (the device's last part signals all of them at once, after all
 * parts finished: the same point at which the shares would complete the count). */
static MKG_HD unsigned int mkg_mk_attn_elems(const mkg_model_config *c, int m, int prefill, int split, int item)
{
    const int t = prefill ? item / c->kv_heads : item / split / c->kv_heads;
    const int rows = prefill ? (m - 64 * t < 64 ? m - 64 * t : 64) : 1;
    return (unsigned int)(rows * (c->q_heads / c->kv_heads) * c->head_dim / (prefill ? 1 : split));
}

/* Rows of row block rb in an m-row output. */
static MKG_HD unsigned int mkg_mk_block_rows(int m, int rb)
{
    return (unsigned int)(m - 64 * rb < 64 ? m - 64 * rb : 64);
}

#ifdef __cplusplus
}
#endif

#endif /* MKG_MK_GRAPH_H */
