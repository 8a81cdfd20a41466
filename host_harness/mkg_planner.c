/* mkg_planner.c - the analytic cost model, eligibility, the per-bucket pick and
 * its explanation.
 *
 * Predicted time of schedule s at M x N x K (all times in microseconds):
 *   units     = tiles_m * tiles_n * splits           (work units; splits = min(SPLIT, chunks))
 *   waves     = ceil(units / SMs)                    (the busiest SM runs `waves` units)
 *   t_unit    = max(MMA time, operand streaming time, stages x stage round trip) + epilogue
 *               + per-unit cost (a unit of small stages is held by its barrier round trips:
 *               128-deep stages, TK = 128, halve them)
 *               MMA time: 2 TM TN K_unit / (sm_tflops * efficiency(wgmma N, MMA rows))
 *               streaming: (TM + TN) * 128 B per K tile, at the lesser of the SM's share of
 *               L2 bandwidth and what ST stages in flight sustain over the memory latency
 *   t_compute = (waves + tail) * t_unit              (padding waste and last-wave fill included; tail:
 *               the megakernel's tail_units when M > 256, times the splits with tail_per_tile, else 0)
 *   t_memory  = DRAM bytes / dram_tbps, with A or B re-read once per raster band when it does
 *               not fit in L2 (the band of GROUP tiles keeps the other operand resident)
 *   t_parts   = split rows (workspace ones, not cluster split-K): every chunk's FP32 partial
 *               written and read back once (the fold adds them in chunk order, so a split unit
 *               cannot pre-sum its chunks), at L2 bandwidth when they fit in L2, else at DRAM
 *               bandwidth
 *   t_bscale  = block-scaled layers: every K chunk step of a unit loads and applies its scales,
 *               bscale_load_us per scale a consumer thread loads (swap rows: 2 + wgmma N / 4,
 *               the token scales of its columns; others 3), added to t_unit
 *   t         = (t_compute^p + (t_memory + t_parts)^p)^(1/p) + launch + split overhead
 *               (a soft maximum: at decode every schedule is DRAM-bound, and the one that
 *               streams with fewer bytes per unit and more in flight still measures faster)
 * K counts 16-bit elements; tf32 and e4m3 layers are modelled as the 16-bit GEMM of the same
 * K bytes (mkg_cost_eval). The constants live in mkg_cost_model_h200() and nowhere else.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mkg_layer.h"
#include "mkg_plan.h"
#include "mkg_tile_order.h"

mkg_cost_model mkg_cost_model_h200(void)
{
    /* NOTE: fitted to the per-schedule times of bench/results/gemm_{bf16,fp16}.json
     * (every public shape, every eligible schedule; refit in session 14 on df5dbae's run)
     * by tools/calibrate_cost_model.py; bench/NOTES.md records the fit and the
     * pick-vs-oracle result. */
    mkg_cost_model cm;
    cm.sm_tflops = 7.309;
    cm.dram_tbps = 4.024;
    cm.l2_tbps = 12.620;
    cm.l2_mb = 40.0;            /* not fitted: the H200's 50 MB L2 less what C and other data hold */
    cm.mem_latency_us = 1.219;
    cm.launch_us = 1.000;
    cm.unit_us = 1.690;
    cm.epi_gbps = 60.821;
    cm.eff_p64 = 1.000;
    cm.eff_wn[0] = 0.900;       /* wgmma N >= 256 */
    cm.eff_wn[1] = 0.911;       /* 192 */
    cm.eff_wn[2] = 0.989;       /* 128 */
    cm.eff_wn[3] = 0.637;       /* 64 */
    cm.eff_wn[4] = 0.495;       /* <= 32 */
    cm.split_us = 0.500;        /* not identified by the data: invariant-mode runs never split */
    cm.overlap_p = 1.632;
    cm.stage_us = 0.100;        /* not fitted: v52 measured ~0.09 us per stage saved (1B o and down, M = 1); 0.10 keeps
                                   every pick on the 966c2d0 data and picks the TK = 128 rows at decode */
    cm.bscale_load_us = 0.010;  /* v91: grid search on the picks of gemm_e4m3_block_0f89b76.json (H200) and
                                   gemm_e4m3_block_h100_32df701.json; flat from 0.0075 to 0.02 */
    cm.tail_units = 0.0;        /* launches of their own; the megakernel sets MKG_MK_TAIL_UNITS */
    cm.tail_per_tile = 0;
    return cm;
}

/* Tensor efficiency at wgmma N = wn: the fitted values at N = 32, 64, 128, 192 and 256
 * (eff_wn[4] .. eff_wn[0]). A width between two points that is not a multiple of 64 (N = 176,
 * which has no point of its own) takes the lower of its two neighbours: interpolated between
 * 128 and 192 it came out ahead of both, and with the ping-pong rows in the tables (v68) the
 * model then picked n176 on 25 of the 45 rows at M >= 512, where it measured 2-8% behind the
 * n128 / n256 rows on most (bench/NOTES.md, v68). Multiples of 64 keep the linear value. */
static double mkg_eff(const mkg_cost_model *cm, const mkg_schedule_info *i, int wn)
{
    static const int at[5] = {256, 192, 128, 64, 32};
    double e = wn >= at[0] ? cm->eff_wn[0] : cm->eff_wn[4];
    for (int j = 0; j + 1 < 5; ++j)
        if (wn < at[j] && wn >= at[j + 1]) {
            const double f = (double)(wn - at[j + 1]) / (double)(at[j] - at[j + 1]);
            e = cm->eff_wn[j + 1] + f * (cm->eff_wn[j] - cm->eff_wn[j + 1]);
            if (wn % 64 != 0)
                e = cm->eff_wn[j] < cm->eff_wn[j + 1] ? cm->eff_wn[j] : cm->eff_wn[j + 1];
        }
    const int p = i->swap_ab ? i->tile_n : i->tile_m;
    return e * (p == 64 ? cm->eff_p64 : 1.0);
}

/* DRAM bytes of one GEMM under the schedule's raster: the operand swept across a band
 * is re-read once per band unless it fits in L2. */
static double mkg_dram_bytes(const mkg_cost_model *cm, const mkg_schedule_info *i, int m, int n, int k, mkg_dtype out)
{
    const double a = 2.0 * m * k, b = 2.0 * n * k, c = (double)mkg_dtype_size(out) * m * n;
    const int tiles_m = mkg_ceil_div(m, i->tile_m), tiles_n = mkg_ceil_div(n, i->tile_n);
    const double l2 = cm->l2_mb * 1e6;
    if (i->raster == MKG_RASTER_M) {
        const int bands = mkg_ceil_div(tiles_m, i->group < 1 ? 1 : i->group);
        return a + (b <= l2 ? b : b * bands) + c;
    }
    const int bands = mkg_ceil_div(tiles_n, i->group < 1 ? 1 : i->group);
    return b + (a <= l2 ? a : a * bands) + c;
}

/* The model's terms for one schedule (see the file header). */
typedef struct mkg_cost_terms {
    int units, waves;
    double fill;                /* busy fraction of the last wave */
    double eff;                 /* tensor efficiency used */
    double t_unit, t_compute, t_memory, t_parts, t_total;
} mkg_cost_terms;

static int mkg_cost_eval(const mkg_cost_model *cm, int s, int m, int n, int k, int kc, mkg_dtype in, mkg_dtype out,
                         int bscaled, int sms, mkg_cost_terms *t)
{
    const mkg_schedule_info *i = mkg_schedule_get(s);
    if (!i || m < 1 || n < 1 || k < 1 || sms < 1 || (int)in < 0 || in >= MKG_DTYPE_COUNT)
        return 0;
    /* NOTE: the terms below count 16-bit elements along K (tile_k, the stage bytes, the DRAM
     * bytes, the tensor rate of sm_tflops). Another input dtype is the 16-bit GEMM of the same
     * K bytes: a 128-byte stage row holds 128 e4m3 or 32 fp32 elements, and wgmma runs e4m3 at
     * twice and tf32 at half the 16-bit rate per element, so the flops of the 16-bit GEMM of
     * K * size / 2 elements take the same tensor time. */
    const long long k16 = ((long long)k * (long long)mkg_dtype_size(in) + 1) / 2;
    const long long kc16 = ((long long)kc * (long long)mkg_dtype_size(in) + 1) / 2;
    if (k16 > 0x7fffffffLL || kc16 > 0x7fffffffLL)
        return 0;
    k = (int)k16;
    kc = (int)kc16;
    const int chunks = mkg_chunk_count(k, kc);
    const int splits = mkg_split_count(i->split, chunks);
    t->units = mkg_ceil_div(m, i->tile_m) * mkg_ceil_div(n, i->tile_n) * splits;
    t->waves = mkg_ceil_div(t->units, sms);
    t->fill = (double)t->units / ((double)t->waves * sms);
    const int active = t->units < sms ? t->units : sms;
    const int kt = mkg_ceil_div(k, i->tile_k);
    const int kct = mkg_chunk_ktiles(k, kc, i->tile_k);
    int kt_unit = mkg_ceil_div(chunks, splits) * kct;
    if (kt_unit > kt)
        kt_unit = kt;

    t->eff = mkg_eff(cm, i, mkg_schedule_wgmma_n(s));
    const double flop_unit = 2.0 * i->tile_m * i->tile_n * (double)kt_unit * i->tile_k;
    const double t_mma = flop_unit / (cm->sm_tflops * 1e6 * t->eff);
    const double stage_bytes = (double)(i->tile_m + i->tile_n) * i->tile_k * 2.0;
    const double share_gbps = cm->l2_tbps * 1e3 / active;                    /* GB/s = bytes/ns */
    const double inflight_gbps = i->stages * stage_bytes / (cm->mem_latency_us * 1e3);
    const double stream_gbps = share_gbps < inflight_gbps ? share_gbps : inflight_gbps;
    const double t_stream = stage_bytes * kt_unit / (stream_gbps * 1e3);
    const double t_epi = (double)mkg_dtype_size(out) * i->tile_m * i->tile_n / (cm->epi_gbps * 1e3);
    /* NOTE: a ping-pong row stores one warpgroup's tile while the other's mainloop runs, so only
     * the CTA's last epilogue is exposed (one per launch, not one per unit). */
    const double t_stages = kt_unit * cm->stage_us;
    double t_busy = t_mma > t_stream ? t_mma : t_stream;
    if (t_stages > t_busy)
        t_busy = t_stages;
    t->t_unit = t_busy + (i->pingpong ? 0.0 : t_epi) + cm->unit_us;
    if (bscaled) {
        /* NOTE: per chunk step, a swap row's thread loads the token scales of its wgmma N / 4
         * column pairs (mkg_block_scales_load), scattered 4-byte loads: m64n64k64_s12_swap measured
         * 0.14 us more per step than m64n64k64_s6_rn on 1B down M = 128 (v91 in bench/NOTES.md). */
        const int loads = i->swap_ab ? 2 + mkg_schedule_wgmma_n(s) / 4 : 3;
        t->t_unit += (double)mkg_ceil_div(chunks, splits) * loads * cm->bscale_load_us;
    }
    /* NOTE: in a megakernel a layer's input lands by 64-row blocks over the producing task's span, so
     * the units of the last block start late, and a row of fewer, longer units ends later: session 50
     * measured 1B o at prefill 2048 2.6% faster on m128n128 (256 units) than on m128n256 (128), which
     * waves alone rank the other way (bench/NOTES.md, v105). tail_per_tile: a split row's tail is
     * its whole tile (every chunk): charged per unit, the tail made the 1B down layer's sk4 row the
     * pick at prefill 1024 (25% slower), per tile it took down off sk4 at 512 (10% faster). Only past
     * four row blocks (M > 256): at 256 the tail's picks (down on a swap row) measured 9% slower. */
    const double tail = m > 256 ? cm->tail_units * (cm->tail_per_tile ? (double)splits : 1.0) : 0.0;
    t->t_compute = (t->waves + tail) * t->t_unit + (i->pingpong ? t_epi : 0.0);
    t->t_memory = mkg_dram_bytes(cm, i, m, n, k, out) / (cm->dram_tbps * 1e6);
    t->t_parts = 0.0;
    if (splits > 1 && i->cluster == 1) {
        /* NOTE: a tile's partials are TM x TN floats per chunk (mkg_schedule_workspace_bytes; a
         * cluster split-K row keeps them in shared memory). With many chunks they dwarf the
         * operands: block-scaled FP8 (kc = 128) on 1B down at M = 512 stores 268 MB in m128n128
         * sk4, measured 264 us against 47 us unsplit (v23's run). All of a GEMM's partials are
         * set against the L2 at once, not those in flight: a coarse step (~3x) at 40 MB, far
         * from the decode splits (a few MB) and the block-scaled ones (100s of MB). */
        const double part = (double)mkg_ceil_div(m, i->tile_m) * mkg_ceil_div(n, i->tile_n) * chunks * i->tile_m *
                            i->tile_n * 4.0;
        t->t_parts = 2.0 * part / ((part <= cm->l2_mb * 1e6 ? cm->l2_tbps : cm->dram_tbps) * 1e6);
    }
    const double t_split = splits > 1 ? cm->split_us * splits : 0.0;
    const double p = cm->overlap_p;
    t->t_total = pow(pow(t->t_compute, p) + pow(t->t_memory + t->t_parts, p), 1.0 / p) + cm->launch_us + t_split;
    return 1;
}

double mkg_cost_predict_us(const mkg_cost_model *cm, int s, int m, int n, int k, int kc, mkg_dtype in, mkg_dtype out,
                           int sms)
{
    mkg_cost_terms t;
    return mkg_cost_eval(cm, s, m, n, k, kc, in, out, 0, sms, &t) ? t.t_total : -1.0;
}

int mkg_plan_eligible(const mkg_layer_desc *l, int s)
{
    /* The library must run s on this layer (dtype, chunk fold capability). */
    const mkg_gemm_desc d = mkg_layer_gemm_desc(l, 1, l->kc);
    if (mkg_schedule_check(&d, s) != MKG_OK)
        return 0;
    /* Layers run in dispatch kernels and megakernels, which are not cluster launches. Ping-pong
     * rows pass mkg_schedule_check only on one-chunk layers with a plain store and no megakernel
     * dependency, which one-chunk dispatch kernels run (mkg_dispatch_consume_units_one). */
    if (mkg_schedule_shipped_only(s))
        return 0;
    /* Invariant mode: the determinism contract covers every row for a given kc (the GPU
     * tests find all rows bitwise identical), so no row is excluded. Fast mode may use any. */
    return 1;
}

/* 1 if schedule c should win a tie in the model against schedule b at M = m. In order:
 *  - the deeper stages (TK): fewer barrier round trips per K (v52 measured them faster);
 *  - fewer tiles along M: each weight tile is streamed by fewer units (the model counts a
 *    re-read that L2 should catch once; v59 measured m64n32 one token tile against m32n64 two,
 *    equal in the model, 12.8 against 15.8 us on 8B o at M = 64);
 *  - more stages in flight (m128n64 s8 against s6: equal in the model, 7% faster geomean over
 *    every public shape in v59's run and faster wherever m128n64 was picked). */
static int mkg_tie_better(int c, int b, int m)
{
    const mkg_schedule_info *x = mkg_schedule_get(c), *y = mkg_schedule_get(b);
    if (x->tile_k != y->tile_k)
        return x->tile_k > y->tile_k;
    const int xm = mkg_ceil_div(m, x->tile_m), ym = mkg_ceil_div(m, y->tile_m);
    if (xm != ym)
        return xm < ym;
    return x->stages > y->stages;
}

mkg_status mkg_plan_pick(const mkg_cost_model *cm, const mkg_layer_desc *l, const mkg_gpu_info *g, int m, int *s)
{
    if (!cm || !l || !g || !s)
        return MKG_ERR_NULL_OUT;
    mkg_layer_desc lk = *l;
    lk.kc = mkg_layer_kc(l, g->sms);
    int best = -1;
    double best_us = 0.0;
    for (int c = 0; c < MKG_SCHED_COUNT; ++c) {
        if (!mkg_plan_eligible(&lk, c))
            continue;
        /* NOTE: a descriptor the model cannot evaluate (M or the SM count below 1) gets no pick
         * (MKG_ERR_SCHEDULE_INELIGIBLE); before v91 its -1 counted as the fastest time. */
        mkg_cost_terms t;
        if (!mkg_cost_eval(cm, c, m, l->n, l->k, lk.kc, l->in_type, l->c_type, l->a_block_scales != NULL, g->sms,
                           &t))
            continue;
        const double us = t.t_total;
        /* A tie (both DRAM-bound: the same bytes, the same soft maximum): mkg_tie_better. */
        const int wins_tie = best >= 0 && us <= best_us * (1.0 + 1e-9) && mkg_tie_better(c, best, m);
        if (best < 0 || us < best_us * (1.0 - 1e-9) || wins_tie) {
            best = c;
            best_us = us;
        }
    }
    if (best < 0)
        return MKG_ERR_SCHEDULE_INELIGIBLE;
    *s = best;
    return MKG_OK;
}

/* One phrase for what puts `a` ahead of `b`. */
static const char *mkg_reason(const mkg_cost_terms *a, const mkg_cost_terms *b)
{
    if (b->t_total - a->t_total < 0.005)
        return "a tie in the model; deeper stages, then fewer M tiles, then more stages win it, else the earlier row";
    if (b->t_parts - a->t_parts > 0.5 * (b->t_total - a->t_total))
        return "the other writes and reads back a partial per K chunk of each tile (split)";
    if (a->t_memory >= a->t_compute && b->t_memory >= b->t_compute && a->t_compute < b->t_compute)
        return "both are DRAM-bound; it streams its units faster (fewer bytes per unit, more in flight)";
    if (a->waves < b->waves)
        return "fewer waves over the SMs";
    if (a->waves == b->waves && a->t_unit < b->t_unit)
        return "the same waves with a shorter unit (better tensor efficiency or streaming)";
    if (a->t_memory < b->t_memory)
        return "less DRAM traffic (L2 reuse of its raster band)";
    return "lower predicted time overall";
}

int mkg_plan_explain(const mkg_cost_model *cm, const mkg_layer_desc *l, const mkg_gpu_info *g, int m, char *buf,
                     size_t size)
{
    int best = -1, second = -1;
    size_t len = 0;
    if (mkg_plan_pick(cm, l, g, m, &best) != MKG_OK)
        return snprintf(buf, size, "no eligible schedule\n");
    mkg_layer_desc lk = *l;
    lk.kc = mkg_layer_kc(l, g->sms);
    mkg_cost_terms tb, t2, t;
    memset(&t2, 0, sizeof t2);
    const int bscaled = l->a_block_scales != NULL;
    mkg_cost_eval(cm, best, m, l->n, l->k, lk.kc, l->in_type, l->c_type, bscaled, g->sms, &tb);
#define MKG_EMIT(...)                                                                              \
    do {                                                                                           \
        int w_ = snprintf(buf ? buf + len : NULL, len < size ? size - len : 0, __VA_ARGS__);      \
        len += w_ > 0 ? (size_t)w_ : 0;                                                            \
    } while (0)
    MKG_EMIT("layer N=%d K=%d kc=%d M=%d on %s (%d SMs), %s mode\n", l->n, l->k, lk.kc, m, g->name, g->sms,
             l->mode == MKG_MODE_FAST ? "fast" : "invariant");
    MKG_EMIT("  %-32s %6s %5s %6s %6s %10s %10s %10s %10s\n", "schedule", "units", "waves", "fill", "eff",
             "compute_us", "dram_us", "parts_us", "predicted");
    for (int c = 0; c < MKG_SCHED_COUNT; ++c) {
        const mkg_schedule_info *i = mkg_schedule_get(c);
        if (!mkg_plan_eligible(&lk, c)) {
            const mkg_gemm_desc d = mkg_layer_gemm_desc(&lk, 1, lk.kc);
            if (mkg_schedule_shipped_only(c))
                MKG_EMIT("  %-32s not eligible: cluster rows run in the shipped kernel only\n", i->name);
            else if (i->pingpong)
                MKG_EMIT("  %-32s not eligible: ping-pong rows run one K chunk with a plain store\n", i->name);
            else if (mkg_schedule_check(&d, c) == MKG_ERR_SCHEDULE_K_DEPTH)
                MKG_EMIT("  %-32s not eligible: K %d / KC %d not in an even number of 128-byte K tiles\n",
                         i->name, l->k, lk.kc);
            else if (l->a_block_scales)
                MKG_EMIT("  %-32s not eligible: wgmma N %d cannot apply block scales per K chunk\n", i->name,
                         mkg_schedule_wgmma_n(c));
            else
                MKG_EMIT("  %-32s not eligible: wgmma N %d cannot fold %d K chunks\n", i->name,
                         mkg_schedule_wgmma_n(c), mkg_chunk_count(l->k, lk.kc));
            continue;
        }
        mkg_cost_eval(cm, c, m, l->n, l->k, lk.kc, l->in_type, l->c_type, bscaled, g->sms, &t);
        if (c != best && (second < 0 || t.t_total < t2.t_total)) {
            second = c;
            t2 = t;
        }
        MKG_EMIT("  %-32s %6d %5d %5.0f%% %6.2f %10.2f %10.2f %10.2f %10.2f%s\n", i->name, t.units, t.waves,
                 100.0 * t.fill, t.eff, t.t_compute, t.t_memory, t.t_parts, t.t_total, c == best ? "  <- chosen" : "");
    }
    MKG_EMIT("  chosen %s: %d units in %d wave%s (last wave %.0f%% busy), %s-bound (compute %.1f us, DRAM %.1f us)",
             mkg_schedule_get(best)->name, tb.units, tb.waves, tb.waves == 1 ? "" : "s", 100.0 * tb.fill,
             tb.t_memory > tb.t_compute ? "DRAM" : "compute", tb.t_compute, tb.t_memory);
    if (second >= 0)
        MKG_EMIT("; beats %s (%.2f us) by %.2f us: %s\n", mkg_schedule_get(second)->name, t2.t_total,
                 t2.t_total - tb.t_total, mkg_reason(&tb, &t2));
    else
        MKG_EMIT("; the only eligible schedule\n");
#undef MKG_EMIT
    return (int)len;
}
