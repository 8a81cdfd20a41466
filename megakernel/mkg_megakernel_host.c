/* mkg_megakernel_host.c - host side of the sample megakernel: the model's GEMMs as a
 * dispatch table, the task list, counters and stall words, and one enqueue per step.
 *
 * The table has 4 rows per layer (QKV, O + residual, gate/up + SiLU-mul, down +
 * residual) and the LM head; each row's deps point at the counters of the task it
 * reads (wait) and of its own task (done). Everything is allocated and uploaded in
 * mkg_mk_create; a step only zeroes counters, copies M and launches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mkg_megakernel.h"
#include "mkg_nvtx.h"
#include "mkg_plan.h"

struct mkg_mk {
    mkg_model *md;
    mkg_model_config cfg;
    int ops, rows, rb_max, sms;
    mkg_mk_op *ops_h, *ops_d;
    mkg_layer_desc *layers;
    mkg_layer_plan *plans;
    mkg_table *table;
    unsigned int *counters;         /* (ops, rb_max), then decode attention's (layers, MKG_MK_ATTN_SPLIT_PAIRS) */
    float *attn_ws;                 /* (MKG_MK_ATTN_SPLIT_PAIRS, MKG_MK_ATTN_WS_FLOATS) */
    unsigned int *stall;            /* 4 words */
    void *qkv;                      /* (layers, max_tokens, qkv_n) */
    void *a_rows;                   /* zeros, then two rows per CTA (mkg_mk_args.a_rows) */
    int *m_host;                    /* pinned: M of every table row */
    unsigned long long *timeline;
    int timeline_cap;
    unsigned long long *unit_stamps;    /* timeline on: (rows, stamp_units, 2) producer stamps */
    int stamp_units;
    double timeout_ms;
    unsigned int opts;                  /* MKG_MK_OPT_* */
    unsigned int pre_stages;            /* MKG_MK_PRE_STAGES knob: B stages before a GEMM's wait (0: the ring) */
    unsigned int tail_tiles;            /* MKG_MK_L2_TAIL_TILES knob: K tiles of a unit's L2 tail (0: all) */
    int force_task;
    unsigned int force_extra;
    int last_ops_run, last_fused;       /* the last step's ops and mkg_mk_norm_in_gemm_step (for its trace) */
};

// The task counters and, after them, decode attention's split counters and prefill attention's
// rotate-once flags (one allocation, one memset per step).
static size_t mkg_mk_counter_bytes(const mkg_mk *mk)
{
    return ((size_t)mk->ops * mk->rb_max + (size_t)mk->cfg.layers * MKG_MK_ATTN_SPLIT_PAIRS +
            (size_t)mk->cfg.layers * mk->rb_max * mk->cfg.kv_heads) *
           sizeof(unsigned int);
}

// The planner's model for the megakernel's layers: the library's, with half a tile's time of tail past
// the waves where a step's input lands by more than four 64-row blocks (mkg_cost_model.tail_units and
// tail_per_tile, v105).
// MKG_MK_TAIL_UNITS, MKG_MK_TAIL_PER_TILE (environment, experiment knobs): another tail; a split
// row's tail charged per tile.
static mkg_cost_model mkg_mk_cost_model(void)
{
    mkg_cost_model cm = mkg_cost_model_h200();
    const char *env = getenv("MKG_MK_TAIL_UNITS");
    cm.tail_units = env && *env ? atof(env) : 0.5;
    env = getenv("MKG_MK_TAIL_PER_TILE");
    cm.tail_per_tile = env && *env ? atoi(env) : 1;
    return cm;
}

static const char *const mkg_mk_gemm_names[MKG_MK_GEMMS_PER_LAYER] = {"qkv", "o+res", "gate_up+silu", "down+res"};

static mkg_layer_desc mkg_mk_layer(int n, int k, const void *a, long long lda, const void *b, void *c, long long ldc,
                                   mkg_epilogue epi, int m_max, int sms)
{
    mkg_layer_desc l;
    memset(&l, 0, sizeof l);
    l.n = n;
    l.k = k;
    l.in_type = l.c_type = MKG_DTYPE_BF16;
    l.a = a;
    l.lda = lda;
    l.b = b;
    l.ldb = k;
    l.c = c;
    l.ldc = ldc;
    l.epilogue = epi;
    if (epi == MKG_EPI_RESIDUAL) {
        l.aux = c;                                  /* x += A . B^T, in place */
        l.ld_aux = ldc;
    }
    l.m_max = m_max;
    l.mode = MKG_MODE_INVARIANT;
    /* NOTE: the planner's decode chunk (from N and K only, so the bits do not depend on M
     * or the schedule): K chunks where N / 128 tiles leave most SMs idle at decode (the
     * 1B down layer: 4 chunks of 2048), one chunk otherwise. Fixed chunks of 512 / 1024
     * (sessions 3-14) bought no decode split on the K = 2048 layers (the planner ran them
     * unsplit) and cost every prefill tile a chunk fold per 512 of K (mk-v5 in NOTES). */
    l.kc = mkg_plan_kc_decode(n, k, sms);
    return l;
}

void *mkg_mk_qkv(const mkg_mk *mk, int layer)
{
    const mkg_model_config *c = &mk->cfg;
    return (unsigned short *)mk->qkv + (size_t)layer * c->max_tokens * mkg_model_qkv_n(c);
}

// Table rows of every GEMM, their dependencies wired to the task counters.
static void mkg_mk_describe(mkg_mk *mk)
{
    const mkg_model_config *c = &mk->cfg;
    const mkg_model *md = mk->md;
    const int H = c->hidden, F = c->ffn, QD = c->q_heads * c->head_dim, T = c->max_tokens;
    for (int l = 0; l < c->layers; ++l) {
        const mkg_layer_weights *w = &md->layer[l];
        mkg_layer_desc *r = mk->layers + MKG_MK_GEMMS_PER_LAYER * l;
        r[MKG_MK_QKV] = mkg_mk_layer(mkg_model_qkv_n(c), H, md->xn, H, w->wqkv, mkg_mk_qkv(mk, l), mkg_model_qkv_n(c),
                                     MKG_EPI_STORE, T, mk->sms);
        r[MKG_MK_O] = mkg_mk_layer(H, QD, md->attn, QD, w->wo, md->x, H, MKG_EPI_RESIDUAL, T, mk->sms);
        r[MKG_MK_GATE_UP] = mkg_mk_layer(2 * F, H, md->xn, H, w->wgu, md->act, F, MKG_EPI_SILU_MUL, T, mk->sms);
        r[MKG_MK_DOWN] = mkg_mk_layer(H, F, md->act, F, w->wd, md->x, H, MKG_EPI_RESIDUAL, T, mk->sms);
    }
    mk->layers[mk->rows - 1] =
        mkg_mk_layer(c->vocab, H, md->xn, H, md->lm_head, md->logits, c->vocab, MKG_EPI_STORE, T, mk->sms);
    for (int t = 0; t < mk->ops; ++t) {
        const mkg_mk_op *op = mk->ops_h + t;
        if (op->kind != MKG_MK_GEMM)
            continue;
        mkg_gemm_deps *d = &mk->layers[op->table_row].deps;
        d->wait = mk->counters + (size_t)op->dep * mk->rb_max;
        d->wait_per_row = (unsigned int)mk->ops_h[op->dep].out_cols;
        d->done = mk->counters + (size_t)t * mk->rb_max;
        d->stall = mk->stall;
        d->tag = (unsigned int)t;
        d->timeout_ns = (unsigned long long)(mk->timeout_ms * 1e6);
        const mkg_layer_desc *l = mk->layers + op->table_row;
        const double weight_bytes = (double)l->n * l->k * 2.0;
        const int gate_up = op->table_row < mk->rows - 1 && op->table_row % MKG_MK_GEMMS_PER_LAYER == MKG_MK_GATE_UP;
        d->flags = ((mk->opts & MKG_MK_OPT_GEMM_L2_ALL) ||
                    ((mk->opts & MKG_MK_OPT_GEMM_L2_TAIL) && weight_bytes <= 48.0 * 1024 * 1024) ||
                    ((mk->opts & MKG_MK_OPT_L2_TAIL_GATE_UP) && gate_up)
                        ? MKG_DEPS_L2_TAIL
                        : 0u) |
                   ((mk->opts & MKG_MK_OPT_B_EVICT_FIRST) ? MKG_DEPS_B_EVICT_FIRST : 0u) |
                   ((mk->opts & MKG_MK_OPT_A_MAP_PREFETCH) ? MKG_DEPS_A_MAP_PREFETCH : 0u) |
                   ((mk->opts & MKG_MK_OPT_READY_IN_ORDER) ? MKG_DEPS_READY_IN_ORDER : 0u) |
                   (mk->pre_stages & 0xffu) << MKG_DEPS_PRE_SHIFT | (mk->tail_tiles & 0xffu) << MKG_DEPS_TAIL_SHIFT;
    }
}

// ---- experiment knobs (environment; unset or empty: the planner's choices) ---------------
//   MKG_MK_KC="kind:kc,..."             the K chunk of every layer of that kind
//   MKG_MK_FORCE="kind:schedule[@m],..." that schedule in every M bucket that holds an M <= m
//                                        (default 64; whole buckets: @10 also forces M 11, 12)
//   MKG_MK_PRE_STAGES=n                  at most n weight stages of a GEMM unit before its input is
//                                        ready (MKG_DEPS_PRE_SHIFT; default: as many as the ring holds)
//   MKG_MK_L2_TAIL_TILES=n               at most n K tiles of a unit's L2 tail (MKG_DEPS_TAIL_SHIFT;
//                                        default: the whole unit past its first stages)
// kind: qkv, o, gate_up, down, lm_head. A K chunk changes the layer's bits, the same for every M
// and schedule (batch invariance holds); a forced schedule must be one the megakernel runs
// (a chunk-capable dispatch row), or the step reports MKG_ERR_DISPATCH. Both are for A/B runs
// of the demo without a rebuild (bench/NOTES.md, session 17). Unknown kinds or schedules: a
// message on stderr, the entry is ignored.

static int mkg_mk_kind_of(const char *name)
{
    static const char *const kinds[MKG_MK_GEMMS_PER_LAYER + 1] = {"qkv", "o", "gate_up", "down", "lm_head"};
    for (int i = 0; i <= MKG_MK_GEMMS_PER_LAYER; ++i)
        if (!strcmp(name, kinds[i]))
            return i;
    return -1;
}

// Kind of table row r (MKG_MK_GEMMS_PER_LAYER: the LM head).
static int mkg_mk_row_kind(const mkg_mk *mk, int r)
{
    return r == mk->rows - 1 ? MKG_MK_GEMMS_PER_LAYER : r % MKG_MK_GEMMS_PER_LAYER;
}

// Calls f(mk, kind, value, m) for every "kind:value[@m]" entry of the variable's list.
static void mkg_mk_knob_each(mkg_mk *mk, const char *var, void (*f)(mkg_mk *, int, const char *, int))
{
    const char *env = getenv(var);
    if (!env || !*env)
        return;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", env);
    char *save = NULL;
    for (char *e = strtok_r(buf, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(e, ':');
        if (!colon) {
            fprintf(stderr, "%s: entry '%s' is not kind:value, ignored\n", var, e);
            continue;
        }
        *colon = '\0';
        int m = 64;
        char *at = strchr(colon + 1, '@');
        if (at) {
            *at = '\0';
            m = atoi(at + 1);
        }
        const int kind = mkg_mk_kind_of(e);
        if (kind < 0) {
            fprintf(stderr, "%s: unknown kind '%s' (qkv, o, gate_up, down, lm_head), ignored\n", var, e);
            continue;
        }
        f(mk, kind, colon + 1, m);
    }
}

static void mkg_mk_knob_kc(mkg_mk *mk, int kind, const char *value, int m)
{
    (void)m;
    const int kc = atoi(value);
    for (int r = 0; r < mk->rows; ++r)
        if (mkg_mk_row_kind(mk, r) == kind)
            mk->layers[r].kc = kc;
}

// Whether schedule s can run table row r at the K chunk its plan holds (mkg_plan_eligible).
static int mkg_mk_row_can_run(const mkg_mk *mk, int r, int s)
{
    mkg_layer_desc lk = mk->layers[r];
    lk.kc = mk->plans[r].kc;
    return mkg_plan_eligible(&lk, s);
}

static void mkg_mk_knob_force(mkg_mk *mk, int kind, const char *value, int m_top)
{
    const int s = mkg_schedule_find(value);
    if (s < 0) {
        fprintf(stderr, "MKG_MK_FORCE: unknown schedule '%s', ignored\n", value);
        return;
    }
    for (int r = 0; r < mk->rows; ++r) {
        if (mkg_mk_row_kind(mk, r) != kind)
            continue;
        if (!mkg_mk_row_can_run(mk, r, s)) {
            fprintf(stderr, "MKG_MK_FORCE: '%s' cannot run table row %d (N %d, K %d, KC %d), ignored there\n", value, r,
                    mk->layers[r].n, mk->layers[r].k, mk->plans[r].kc);
            continue;
        }
        for (int m = 1; m <= m_top && m <= mk->layers[r].m_max; ++m)
            mk->plans[r].schedule[mkg_bucket_of(m)] = (unsigned char)s;
    }
}

// The megakernel's own picks where the cost model's differ from what the megakernel measures
// (the model prices a launch of its own; the megakernel's rings are fed ahead of the input):
// gate_up at M = 7..8 (bucket 5) on the 256-unit m16n64k128_s8 row instead of the model's 128-unit
// m8n128k128_s5 (v116: decode b8 -1.3 to -1.5% on the H100; b1 flat on it; M = 2..6 not measured).
// Any schedule gives the same bits (the determinism contract), so a pick changes time only.
static void mkg_mk_plan_adjust(mkg_mk *mk)
{
    const int s = mkg_schedule_find("m16n64k128_s8_swap_rn_g8"), b = mkg_bucket_of(8);
    for (int r = 0; s >= 0 && r < mk->rows; ++r)
        if (mkg_mk_row_kind(mk, r) == MKG_MK_GATE_UP && b < mkg_bucket_count(mk->layers[r].m_max) &&
            mkg_mk_row_can_run(mk, r, s))
            mk->plans[r].schedule[b] = (unsigned char)s;
}

static void mkg_mk_gpu(mkg_gpu_info *g)
{
    struct cudaDeviceProp prop;
    int dev = 0;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess) {
        snprintf(g->name, sizeof g->name, "%.95s", prop.name);
        g->sms = prop.multiProcessorCount;
    } else {
        snprintf(g->name, sizeof g->name, "NVIDIA H200 (planned without a GPU)");
        g->sms = 132;
    }
}

void mkg_mk_destroy(mkg_mk *mk)
{
    if (!mk)
        return;
    mkg_table_destroy(mk->table);
    cudaFree(mk->ops_d);
    cudaFree(mk->counters);
    cudaFree(mk->attn_ws);
    cudaFree(mk->stall);
    cudaFree(mk->qkv);
    cudaFree(mk->a_rows);
    cudaFree(mk->timeline);
    cudaFree(mk->unit_stamps);
    cudaFreeHost(mk->m_host);
    free(mk->ops_h);
    free(mk->layers);
    free(mk->plans);
    free(mk);
}

mkg_status mkg_mk_create(mkg_model *md, const mkg_layer_plan *plans, mkg_mk **out)
{
    if (!md || !out)
        return MKG_ERR_NULL_OUT;
    *out = NULL;
    mkg_nvtx_push("mkg_mk_create");
    mkg_mk *mk = (mkg_mk *)calloc(1, sizeof *mk);
    if (!mk) {
        mkg_nvtx_pop();
        return MKG_ERR_OUT_OF_MEMORY;
    }
    mk->md = md;
    mk->cfg = md->cfg;
    mk->ops = mkg_mk_op_count(&mk->cfg);
    mk->rows = mkg_mk_table_rows(&mk->cfg);
    mk->rb_max = mkg_mk_row_blocks(mk->cfg.max_tokens);
    mk->timeout_ms = 1000.0;
    mk->opts = MKG_MK_OPT_DEFAULT;
    const char *opts = getenv("MKG_MK_OPTS");
    if (opts && *opts)
        mk->opts = (unsigned int)strtoul(opts, NULL, 0);
    mk->force_task = -1;
    const char *pre = getenv("MKG_MK_PRE_STAGES");
    mk->pre_stages = pre && *pre ? (unsigned int)strtoul(pre, NULL, 0) : 0u;
    if (mk->pre_stages > 255u)
        mk->pre_stages = 255u;                    /* the flags hold 8 bits; the ring's depth caps it anyway */
    const char *tail = getenv("MKG_MK_L2_TAIL_TILES");
    mk->tail_tiles = tail && *tail ? (unsigned int)strtoul(tail, NULL, 0) : 0u;
    if (mk->tail_tiles > 255u)
        mk->tail_tiles = 255u;                    /* 8 bits of flags, as the pre-stage field */
    mkg_gpu_info g;
    mkg_mk_gpu(&g);
    mk->sms = g.sms;
    mk->ops_h = (mkg_mk_op *)calloc((size_t)mk->ops, sizeof(mkg_mk_op));
    mk->layers = (mkg_layer_desc *)calloc((size_t)mk->rows, sizeof(mkg_layer_desc));
    mk->plans = (mkg_layer_plan *)calloc((size_t)mk->rows, sizeof(mkg_layer_plan));
    mkg_status st = MKG_OK;
    const size_t qkv_bytes = (size_t)mk->cfg.layers * mk->cfg.max_tokens * mkg_model_qkv_n(&mk->cfg) * 2;
    const size_t a_rows_bytes = MKG_MK_A_ZERO_BYTES + (size_t)mk->sms * mkg_mk_a_cta_bytes(mk->cfg.hidden);
    if (!mk->ops_h || !mk->layers || !mk->plans ||
        cudaMalloc((void **)&mk->counters, mkg_mk_counter_bytes(mk)) != cudaSuccess ||
        cudaMalloc((void **)&mk->attn_ws, (size_t)MKG_MK_ATTN_SPLIT_PAIRS * MKG_MK_ATTN_WS_FLOATS * sizeof(float)) !=
            cudaSuccess ||
        cudaMalloc((void **)&mk->stall, 16) != cudaSuccess || cudaMalloc(&mk->qkv, qkv_bytes) != cudaSuccess ||
        cudaMalloc(&mk->a_rows, a_rows_bytes) != cudaSuccess ||
        cudaMalloc((void **)&mk->ops_d, (size_t)mk->ops * sizeof(mkg_mk_op)) != cudaSuccess ||
        cudaMallocHost((void **)&mk->m_host, (size_t)mk->rows * sizeof(int)) != cudaSuccess)
        st = MKG_ERR_OUT_OF_MEMORY;
    if (st == MKG_OK) {
        mkg_mk_graph_build(&mk->cfg, md, mk->ops_h);
        mkg_mk_describe(mk);
        mkg_mk_knob_each(mk, "MKG_MK_KC", mkg_mk_knob_kc);
        if (plans) {
            memcpy(mk->plans, plans, (size_t)mk->rows * sizeof *plans);
        } else {
            const mkg_cost_model cm = mkg_mk_cost_model();
            st = mkg_layers_plan(&cm, mk->layers, mk->rows, &g, mk->plans);
            if (st == MKG_OK)
                mkg_mk_plan_adjust(mk);
        }
        if (st == MKG_OK)
            mkg_mk_knob_each(mk, "MKG_MK_FORCE", mkg_mk_knob_force);
    }
    if (st == MKG_OK)
        st = mkg_table_create(mk->layers, mk->rows, mk->plans, &mk->table);
    if (st == MKG_OK &&
        (cudaMemcpy(mk->ops_d, mk->ops_h, (size_t)mk->ops * sizeof(mkg_mk_op), cudaMemcpyHostToDevice) != cudaSuccess ||
         cudaMemset(mk->qkv, 0, qkv_bytes) != cudaSuccess || cudaMemset(mk->a_rows, 0, a_rows_bytes) != cudaSuccess ||
         mkg_mk_kernel_init() != cudaSuccess))
        st = MKG_ERR_CUDA;
    mkg_nvtx_pop();
    if (st != MKG_OK) {
        mkg_mk_destroy(mk);
        return st;
    }
    *out = mk;
    return MKG_OK;
}

const mkg_layer_desc *mkg_mk_layers(const mkg_mk *mk)
{
    return mk->layers;
}

const mkg_layer_plan *mkg_mk_plans(const mkg_mk *mk)
{
    return mk->plans;
}

void mkg_mk_print_plan(const mkg_mk *mk, int m, FILE *f)
{
    const int b = mkg_bucket_of(m);
    fprintf(f, "M = %d (bucket %d, up to M = %d):\n", m, b, mkg_bucket_upper(b));
    for (int r = 0; r < mk->rows; ++r) {
        const mkg_layer_desc *l = mk->layers + r;
        const int last = r == mk->rows - 1;
        const mkg_schedule_info *s = mkg_schedule_get(mk->plans[r].schedule[b]);
        fprintf(f, "  %-6s %-13s N %6d K %5d KC %5d  %s\n", last ? "head" : "",
                last ? "lm_head" : mkg_mk_gemm_names[r % 4], l->n, l->k,
                mk->plans[r].kc < l->k ? mk->plans[r].kc : l->k,
                s ? s->name : "?");
        if (r == MKG_MK_GEMMS_PER_LAYER - 1 && mk->rows > MKG_MK_GEMMS_PER_LAYER + 1)
            fprintf(f, "  (layers 1 .. %d: the same shapes, the same schedules)\n", mk->cfg.layers - 1);
        if (r == MKG_MK_GEMMS_PER_LAYER - 1)
            r = mk->rows - 2;
    }
}

// Most work units any table row has at any M up to m_max (its bucket's schedule).
static int mkg_mk_max_units(const mkg_mk *mk)
{
    int most = 1;
    for (int r = 0; r < mk->rows; ++r) {
        const mkg_layer_desc *l = mk->layers + r;
        for (int m = 1; m <= l->m_max; ++m) {
            const int u = mkg_schedule_units(mk->plans[r].schedule[mkg_bucket_of(m)], m, l->n, l->k, mk->plans[r].kc);
            most = u > most ? u : most;
        }
    }
    return most;
}

// Points every table row's deps.stamps at its slice of unit_stamps (or NULL).
static mkg_status mkg_mk_point_stamps(mkg_mk *mk)
{
    for (int r = 0; r < mk->rows; ++r) {
        unsigned long long *at = mk->unit_stamps ? mk->unit_stamps + (size_t)r * mk->stamp_units * 2 : NULL;
        mkg_layer_dev *row = (mkg_layer_dev *)mkg_table_rows(mk->table) + r;
        if (cudaMemcpy(&row->params.deps.stamps, &at, sizeof at, cudaMemcpyHostToDevice) != cudaSuccess)
            return MKG_ERR_CUDA;
    }
    return MKG_OK;
}

mkg_status mkg_mk_set_timeline(mkg_mk *mk, int cap)
{
    cudaFree(mk->timeline);
    cudaFree(mk->unit_stamps);
    mk->timeline = NULL;
    mk->unit_stamps = NULL;
    mk->timeline_cap = mk->stamp_units = 0;
    if (cap <= 0)
        return mkg_mk_point_stamps(mk);
    const size_t bytes = (size_t)mk->sms * cap * MKG_MK_STAMP_WORDS * sizeof(unsigned long long);
    const int units = mkg_mk_max_units(mk);
    if (cudaMalloc((void **)&mk->timeline, bytes) != cudaSuccess ||
        cudaMalloc((void **)&mk->unit_stamps, (size_t)mk->rows * units * 2 * sizeof(unsigned long long)) !=
            cudaSuccess) {
        mkg_mk_set_timeline(mk, 0);
        return MKG_ERR_OUT_OF_MEMORY;
    }
    mk->timeline_cap = cap;
    mk->stamp_units = units;
    const mkg_status st = mkg_mk_point_stamps(mk);
    if (st != MKG_OK)
        mkg_mk_set_timeline(mk, 0);
    return st;
}

unsigned int mkg_mk_opts(const mkg_mk *mk)
{
    return mk->opts;
}

void mkg_mk_set_launch_opts(mkg_mk *mk, unsigned int opts)
{
    mk->opts = (opts & ~MKG_MK_OPT_TABLE_BITS) | (mk->opts & MKG_MK_OPT_TABLE_BITS);
}

void mkg_mk_set_timeout_ms(mkg_mk *mk, double ms)
{
    mk->timeout_ms = ms;
    const unsigned long long ns = (unsigned long long)(ms * 1e6);
    /* the GEMM rows carry their own copy: rewrite it in the uploaded table */
    for (int r = 0; r < mk->rows; ++r) {
        mkg_layer_dev *row = (mkg_layer_dev *)mkg_table_rows(mk->table) + r;
        cudaMemcpy(&row->params.deps.timeout_ns, &ns, sizeof ns, cudaMemcpyHostToDevice);
    }
}

void mkg_mk_force_stall(mkg_mk *mk, int task, unsigned int extra)
{
    mk->force_task = task;
    mk->force_extra = extra;
}

mkg_status mkg_mk_step(mkg_mk *mk, int m, int prefill, int pos0, int lm_head, cudaStream_t s)
{
    const mkg_model_config *c = &mk->cfg;
    if (m < 1 || m > c->max_tokens || (!prefill && m > c->max_batch))
        return MKG_ERR_M_EXCEEDS_M_MAX;
    if (prefill && (pos0 < 0 || pos0 + m > c->max_ctx))
        return MKG_ERR_BAD_M;
    for (int r = 0; r < mk->rows; ++r)
        mk->m_host[r] = m;
    mkg_mk_args a;
    memset(&a, 0, sizeof a);
    a.ops = mk->ops_d;
    a.ops_run = lm_head ? mk->ops : mk->ops - 1;
    a.rows = mkg_table_rows(mk->table);
    a.row_count = mk->rows;
    a.m_cur = mkg_table_m(mk->table);
    a.dispatch_err = mkg_table_error(mk->table);
    a.counters = mk->counters;
    a.rb_max = mk->rb_max;
    a.stall = mk->stall;
    a.timeout_ns = (unsigned long long)(mk->timeout_ms * 1e6);
    a.cfg = *c;
    a.qkv = mk->qkv;
    a.attn = mk->md->attn;
    a.k_cache = mk->md->k_cache;
    a.v_cache = mk->md->v_cache;
    a.pos = mk->md->pos;
    a.m = m;
    a.prefill = prefill;
    a.pos0 = pos0;
    a.timeline = mk->timeline;
    a.timeline_cap = mk->timeline_cap;
    a.opts = mkg_mk_step_opts(mk->opts, m, prefill);
    a.attn_split = (a.opts & MKG_MK_OPT_ATTN_SPLIT) ? mkg_mk_attn_split(c, m, prefill) : 1;
    a.attn_ws = mk->attn_ws;
    a.attn_ctr = mk->counters + (size_t)mk->ops * mk->rb_max;
    a.rope_ctr = a.attn_ctr + (size_t)c->layers * MKG_MK_ATTN_SPLIT_PAIRS;
    a.force_task = mk->force_task;
    a.force_extra = mk->force_extra;
    a.a_rows = mk->a_rows;
    mk->last_ops_run = a.ops_run;
    mk->last_fused = mkg_mk_norm_in_gemm_step(c, m, prefill, mkg_mk_opts_norm_in_gemm(a.opts));
    if (cudaMemsetAsync(mk->counters, 0, mkg_mk_counter_bytes(mk), s) != cudaSuccess ||
        cudaMemsetAsync(mk->stall, 0, 16, s) != cudaSuccess ||
        cudaMemsetAsync(a.dispatch_err, 0, 4, s) != cudaSuccess ||
        (mk->timeline &&
         (cudaMemsetAsync(mk->timeline, 0,
                          (size_t)mk->sms * mk->timeline_cap * MKG_MK_STAMP_WORDS * sizeof(unsigned long long),
                          s) != cudaSuccess ||
          cudaMemsetAsync(mk->unit_stamps, 0, (size_t)mk->rows * mk->stamp_units * 2 * sizeof(unsigned long long),
                          s) != cudaSuccess)) ||
        cudaMemcpyAsync(mkg_table_m(mk->table), mk->m_host, (size_t)mk->rows * sizeof(int), cudaMemcpyHostToDevice, s) != cudaSuccess ||
        mkg_mk_launch(&a, mk->sms, s) != cudaSuccess)
        return MKG_ERR_CUDA;
    return MKG_OK;
}

mkg_status mkg_mk_check(mkg_mk *mk, cudaStream_t s, unsigned int stall[4], unsigned int *dispatch_err)
{
    unsigned int st[4] = {0, 0, 0, 0}, de = 0;
    if (cudaStreamSynchronize(s) != cudaSuccess || cudaMemcpy(st, mk->stall, 16, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(&de, mkg_table_error(mk->table), 4, cudaMemcpyDeviceToHost) != cudaSuccess)
        return MKG_ERR_CUDA;
    if (stall)
        memcpy(stall, st, sizeof st);
    if (dispatch_err)
        *dispatch_err = de;
    if (de)
        return MKG_ERR_DISPATCH;
    return st[0] ? MKG_ERR_STALLED : MKG_OK;
}

static const char *mkg_mk_task_name(const mkg_mk *mk, int t, char *buf, size_t size)
{
    static const char *const per_layer[7] = {"attn_norm", "qkv", "attention", "o+res", "ffn_norm", "gate_up+silu",
                                             "down+res"};
    const int layers = mk->cfg.layers;
    if (t >= 7 * layers)
        snprintf(buf, size, "%s", t == 7 * layers ? "final_norm" : "lm_head");
    else
        snprintf(buf, size, "L%d %s", t / 7, per_layer[t % 7]);
    return buf;
}

mkg_status mkg_mk_write_trace(mkg_mk *mk, const char *path)
{
    if (!mk->timeline)
        return MKG_ERR_NULL_OUT;
    const size_t count = (size_t)mk->sms * mk->timeline_cap;
    const size_t words = count * MKG_MK_STAMP_WORDS, stamp_words = (size_t)mk->rows * mk->stamp_units * 2;
    unsigned long long *e = (unsigned long long *)malloc((words + stamp_words) * sizeof *e);
    if (!e)
        return MKG_ERR_OUT_OF_MEMORY;
    unsigned long long *st = e + words;
    if (cudaMemcpy(e, mk->timeline, words * sizeof *e, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(st, mk->unit_stamps, stamp_words * sizeof *e, cudaMemcpyDeviceToHost) != cudaSuccess) {
        free(e);
        return MKG_ERR_CUDA;
    }
    unsigned long long t_min = ~0ull;
    for (size_t i = 0; i < count; ++i)
        if (e[MKG_MK_STAMP_WORDS * i + 3] && e[MKG_MK_STAMP_WORDS * i + 1] < t_min)
            t_min = e[MKG_MK_STAMP_WORDS * i + 1];
    for (size_t i = 0; i < stamp_words; ++i)
        if (st[i] && st[i] < t_min)
            t_min = st[i];
    FILE *f = fopen(path, "w");
    if (!f) {
        free(e);
        return MKG_ERR_TABLE_MISSING;
    }
    /* ts / dur: the item on its CTA (consumers); args: the task it waited for (dep: mkg_mk_wait_op), when its
     * input was complete (ready_us) and, for a GEMM unit, when its producer reached it
     * (reached_us: the weight tiles before the wait start then); decode attention items: the
     * ends of their RoPE, block loop and merge steps (phase_us). */
    fprintf(f, "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
    int first = 1;
    char name[64];
    for (size_t i = 0; i < count; ++i) {
        const unsigned long long *x = e + MKG_MK_STAMP_WORDS * i;
        if (!x[3])
            continue;
        const int task = (int)(x[0] >> 32), item = (int)(x[0] & 0xffffffffu);
        const mkg_mk_op *op = mk->ops_h + task;
        unsigned long long reached = 0, ready = x[2];
        if (op->kind == MKG_MK_GEMM && item < mk->stamp_units) {
            reached = st[((size_t)op->table_row * mk->stamp_units + item) * 2];
            ready = st[((size_t)op->table_row * mk->stamp_units + item) * 2 + 1];
        }
        char phases[128] = "";
        /* phase stamps only from an item that ran its op (a stalled item leaves the scratch
         * words of an earlier one): in order, between its start and its end; a GEMM unit's
         * fourth (its direct stores issued) where its epilogue went direct */
        if (x[1] <= x[4] && x[4] <= x[5] && x[5] <= x[6] && x[6] <= x[3]) {
            const int n = snprintf(phases, sizeof phases, ", \"phase_us\": [%.3f, %.3f, %.3f",
                                   (double)(x[4] - t_min) / 1000.0, (double)(x[5] - t_min) / 1000.0,
                                   (double)(x[6] - t_min) / 1000.0);
            if (x[6] <= x[7] && x[7] <= x[3])
                snprintf(phases + n, sizeof phases - (size_t)n, ", %.3f]", (double)(x[7] - t_min) / 1000.0);
            else
                snprintf(phases + n, sizeof phases - (size_t)n, "]");
        }
        fprintf(f, "%s{\"name\": \"%s\", \"ph\": \"X\", \"pid\": 0, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, "
                   "\"args\": {\"task\": %d, \"item\": %d, \"dep\": %d, \"ready_us\": %.3f, \"reached_us\": %.3f%s}}",
                first ? "" : ",\n", mkg_mk_task_name(mk, task, name, sizeof name), (int)(i / mk->timeline_cap),
                (double)(x[1] - t_min) / 1000.0, (double)(x[3] - x[1]) / 1000.0, task, item,
                mkg_mk_wait_op(mk->ops_h, mk->last_ops_run, task, mk->last_fused),
                ready ? (double)(ready - t_min) / 1000.0 : -1.0, reached ? (double)(reached - t_min) / 1000.0 : -1.0,
                phases);
        first = 0;
    }
    fprintf(f, "\n]}\n");
    fclose(f);
    free(e);
    return MKG_OK;
}

mkg_status mkg_mk_plan_print(const mkg_model_config *c, const int *ms, int count, FILE *f)
{
    /* Placeholder addresses (16-byte aligned, never dereferenced): planning needs shapes only. */
    static const unsigned char placeholder[16] __attribute__((aligned(16))) = {0};
    void *p = (void *)placeholder;
    mkg_model md;
    memset(&md, 0, sizeof md);
    md.cfg = *c;
    md.layer = (mkg_layer_weights *)calloc((size_t)c->layers, sizeof(mkg_layer_weights));
    mkg_mk mk;
    memset(&mk, 0, sizeof mk);
    mk.md = &md;
    mk.cfg = *c;
    mk.ops = mkg_mk_op_count(c);
    mk.rows = mkg_mk_table_rows(c);
    mk.rb_max = mkg_mk_row_blocks(c->max_tokens);
    mk.counters = (unsigned int *)p;
    mk.stall = (unsigned int *)p;
    mk.qkv = p;
    mk.ops_h = (mkg_mk_op *)calloc((size_t)mk.ops, sizeof(mkg_mk_op));
    mk.layers = (mkg_layer_desc *)calloc((size_t)mk.rows, sizeof(mkg_layer_desc));
    mk.plans = (mkg_layer_plan *)calloc((size_t)mk.rows, sizeof(mkg_layer_plan));
    mkg_status st = MKG_ERR_OUT_OF_MEMORY;
    if (md.layer && mk.ops_h && mk.layers && mk.plans) {
        md.x = md.xn = md.attn = md.act = md.logits = md.final_norm = md.lm_head = p;
        for (int l = 0; l < c->layers; ++l)
            md.layer[l] = (mkg_layer_weights){p, p, p, p, p, p};
        mkg_gpu_info g;
        mkg_mk_gpu(&g);
        mk.sms = g.sms;                              /* the layers' K chunks depend on it */
        mkg_mk_graph_build(c, &md, mk.ops_h);
        mkg_mk_describe(&mk);
        mkg_mk_knob_each(&mk, "MKG_MK_KC", mkg_mk_knob_kc);
        const mkg_cost_model cm = mkg_mk_cost_model();
        st = mkg_layers_plan(&cm, mk.layers, mk.rows, &g, mk.plans);
        if (st == MKG_OK) {
            mkg_mk_plan_adjust(&mk);
            mkg_mk_knob_each(&mk, "MKG_MK_FORCE", mkg_mk_knob_force);
        }
        for (int i = 0; st == MKG_OK && i < count; ++i)
            mkg_mk_print_plan(&mk, ms[i], f);
    }
    free(md.layer);
    free(mk.ops_h);
    free(mk.layers);
    free(mk.plans);
    return st;
}
