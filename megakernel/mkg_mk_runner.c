/* mkg_mk_runner.c - the megakernel against its reference path (see mkg_mk_runner.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mkg_mk_runner.h"
#include "mkg_nvtx.h"

struct mkg_mk_runner {
    mkg_model md;
    mkg_mk *mk;
    mkg_ref_model *ref;
    cudaStream_t s;
    unsigned short *x_ref, *logits_ref;     /* host copies of the reference outputs */
    unsigned short *x_mk, *logits_mk;       /* host copies of the first megakernel run */
    unsigned short *x_mk2, *logits_mk2;
    double copy_tbps;
};

#define MKG_RUN_TRY(call)               \
    do {                                \
        const int e_ = (int)(call);     \
        if (e_ != 0)                    \
            return e_;                  \
    } while (0)

static float mkg_bf16_to_float(unsigned short h)
{
    const unsigned int u = (unsigned int)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void mkg_mk_runner_destroy(mkg_mk_runner *r)
{
    if (!r)
        return;
    mkg_mk_destroy(r->mk);
    mkg_ref_model_destroy(r->ref);
    mkg_model_destroy(&r->md);
    if (r->s)
        cudaStreamDestroy(r->s);
    free(r->x_ref);
    free(r->logits_ref);
    free(r->x_mk);
    free(r->logits_mk);
    free(r->x_mk2);
    free(r->logits_mk2);
    free(r);
}

int mkg_mk_runner_create(const mkg_model_config *c, mkg_mk_runner **out)
{
    *out = NULL;
    mkg_mk_runner *r = (mkg_mk_runner *)calloc(1, sizeof *r);
    if (!r)
        return cudaErrorMemoryAllocation;
    const size_t xs = (size_t)c->max_tokens * c->hidden, ls = (size_t)c->max_tokens * c->vocab;
    r->x_ref = (unsigned short *)malloc(xs * 2);
    r->x_mk = (unsigned short *)malloc(xs * 2);
    r->x_mk2 = (unsigned short *)malloc(xs * 2);
    r->logits_ref = (unsigned short *)malloc(ls * 2);
    r->logits_mk = (unsigned short *)malloc(ls * 2);
    r->logits_mk2 = (unsigned short *)malloc(ls * 2);
    int e = (!r->x_ref || !r->x_mk || !r->x_mk2 || !r->logits_ref || !r->logits_mk || !r->logits_mk2)
                ? (int)cudaErrorMemoryAllocation : 0;
    if (!e)
        e = cudaStreamCreateWithFlags(&r->s, cudaStreamNonBlocking);
    if (!e)
        e = mkg_model_create(c, &r->md);
    if (!e)
        e = mkg_ref_model_create(&r->ref);
    if (!e) {
        const mkg_status st = mkg_mk_create(&r->md, NULL, &r->mk);
        e = st == MKG_OK ? 0 : 2000 + (int)st;
    }
    if (e) {
        mkg_mk_runner_destroy(r);
        return e;
    }
    *out = r;
    return 0;
}

mkg_mk *mkg_mk_runner_mk(mkg_mk_runner *r)
{
    return r->mk;
}

mkg_model *mkg_mk_runner_model(mkg_mk_runner *r)
{
    return &r->md;
}

cudaStream_t mkg_mk_runner_stream(mkg_mk_runner *r)
{
    return r->s;
}

double mkg_mk_runner_copy_tbps(mkg_mk_runner *r)
{
    const size_t bytes = (size_t)1 << 30;
    void *a = NULL, *b = NULL;
    cudaEvent_t e0, e1;
    double best = 0.0;
    if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) {
        cudaFree(a);
        return 0.0;
    }
    cudaMemset(a, 1, bytes);
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int i = 0; i < 6; ++i) {
        float ms = 0.0f;
        cudaEventRecord(e0, r->s);
        cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, r->s);
        cudaEventRecord(e1, r->s);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms, e0, e1);
        const double tbps = 2.0 * (double)bytes / (ms * 1e-3) / 1e12;
        if (i > 0 && tbps > best)
            best = tbps;
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    r->copy_tbps = best;
    return best;
}

int mkg_mk_runner_inputs(mkg_mk_runner *r, const mkg_mk_case *c, unsigned long long seed)
{
    const int prefill = strcmp(c->phase, "prefill") == 0;
    MKG_RUN_TRY(mkg_model_fill_x(&r->md, c->tokens, seed, r->s));
    if (c->lm_head)                         /* NaN: a step that writes no logits reads as one */
        MKG_RUN_TRY(cudaMemsetAsync(r->md.logits, 0xff, (size_t)c->tokens * r->md.cfg.vocab * 2, r->s));
    if (!prefill) {
        int pos[4096];
        for (int i = 0; i < c->tokens && i < 4096; ++i)
            pos[i] = (c->pos + 7 * i) % r->md.cfg.max_ctx;
        MKG_RUN_TRY(cudaMemcpyAsync(r->md.pos, pos, (size_t)c->tokens * sizeof(int), cudaMemcpyHostToDevice, r->s));
        MKG_RUN_TRY(cudaStreamSynchronize(r->s));
    }
    return 0;
}

static double mkg_rel_err(const unsigned short *a, const unsigned short *ref, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; ++i) {
        const double x = mkg_bf16_to_float(a[i]), y = mkg_bf16_to_float(ref[i]);
        const double d = fabs(x - y);
        if (!(d <= num))
            num = isnan(d) ? INFINITY : d;
        if (fabs(y) > den)
            den = fabs(y);
    }
    return den > 0.0 ? num / den : num;
}

static int mkg_mk_runner_mk_step(mkg_mk_runner *r, const mkg_mk_case *c, mkg_mk_result *out)
{
    const int prefill = strcmp(c->phase, "prefill") == 0;
    mkg_status st = mkg_mk_step(r->mk, c->tokens, prefill, prefill ? c->pos : 0, c->lm_head, r->s);
    if (st == MKG_OK)
        st = mkg_mk_check(r->mk, r->s, out->stall, &out->dispatch_err);
    out->status = st;
    return st == MKG_OK ? 0 : 2000 + (int)st;
}

static int mkg_mk_runner_copy_out(mkg_mk_runner *r, const mkg_mk_case *c, unsigned short *x, unsigned short *logits)
{
    const mkg_model_config *cfg = &r->md.cfg;
    MKG_RUN_TRY(cudaMemcpy(x, r->md.x, (size_t)c->tokens * cfg->hidden * 2, cudaMemcpyDeviceToHost));
    if (c->lm_head)
        MKG_RUN_TRY(cudaMemcpy(logits, r->md.logits, (size_t)c->tokens * cfg->vocab * 2, cudaMemcpyDeviceToHost));
    return 0;
}

// Median microseconds of `replays` launches of each graph, alternating between them.
static int mkg_mk_time_pair(cudaStream_t s, cudaGraphExec_t ga, cudaGraphExec_t gb, int replays, double *ua,
                            double *ub)
{
    double *ta = (double *)malloc(sizeof(double) * (size_t)replays);
    double *tb = (double *)malloc(sizeof(double) * (size_t)replays);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    int e = 0;
    for (int w = 0; w < 3 && !e; ++w)
        e = cudaGraphLaunch(ga, s) || cudaGraphLaunch(gb, s);
    for (int i = 0; i < replays && !e; ++i) {
        for (int k = 0; k < 2 && !e; ++k) {
            float ms = 0.0f;
            cudaEventRecord(e0, s);
            e = cudaGraphLaunch(k ? gb : ga, s);
            cudaEventRecord(e1, s);
            if (!e)
                e = cudaEventSynchronize(e1);
            cudaEventElapsedTime(&ms, e0, e1);
            (k ? tb : ta)[i] = 1000.0 * ms;
        }
    }
    for (int i = 1; i < replays; ++i)        /* insertion sort: replays is small */
        for (int j = i; j > 0 && ta[j] < ta[j - 1]; --j) {
            double t = ta[j]; ta[j] = ta[j - 1]; ta[j - 1] = t;
        }
    for (int i = 1; i < replays; ++i)
        for (int j = i; j > 0 && tb[j] < tb[j - 1]; --j) {
            double t = tb[j]; tb[j] = tb[j - 1]; tb[j - 1] = t;
        }
    *ua = ta[replays / 2];
    *ub = tb[replays / 2];
    free(ta);
    free(tb);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return e;
}

int mkg_mk_runner_case(mkg_mk_runner *r, const mkg_mk_case *c, int replays, mkg_mk_result *out)
{
    memset(out, 0, sizeof *out);
    const mkg_model_config *cfg = &r->md.cfg;
    const int prefill = strcmp(c->phase, "prefill") == 0;
    const unsigned long long seed = 0x5eedull + 1000003ull * (unsigned long long)c->tokens + (unsigned)prefill;
    mkg_nvtx_push("mkg_mk_runner_case");
    // Reference, then the megakernel twice, each from the same x.
    MKG_RUN_TRY(mkg_mk_runner_inputs(r, c, seed));
    MKG_RUN_TRY(mkg_ref_model_step(r->ref, &r->md, c->tokens, prefill, c->pos, c->lm_head, r->s));
    MKG_RUN_TRY(cudaStreamSynchronize(r->s));
    MKG_RUN_TRY(mkg_mk_runner_copy_out(r, c, r->x_ref, r->logits_ref));
    for (int k = 0; k < 2; ++k) {
        MKG_RUN_TRY(mkg_mk_runner_inputs(r, c, seed));
        if (mkg_mk_runner_mk_step(r, c, out) != 0) {
            mkg_nvtx_pop();
            return 0;                       /* out->status says why */
        }
        MKG_RUN_TRY(mkg_mk_runner_copy_out(r, c, k ? r->x_mk2 : r->x_mk, k ? r->logits_mk2 : r->logits_mk));
    }
    const size_t xs = (size_t)c->tokens * cfg->hidden, ls = (size_t)c->tokens * cfg->vocab;
    out->x_rel_err = mkg_rel_err(r->x_mk, r->x_ref, xs);
    out->logits_rel_err = c->lm_head ? mkg_rel_err(r->logits_mk, r->logits_ref, ls) : 0.0;
    out->repeat_bitexact = memcmp(r->x_mk, r->x_mk2, xs * 2) == 0 &&
                           (!c->lm_head || memcmp(r->logits_mk, r->logits_mk2, ls * 2) == 0);

    // Bytes a step must read: every weight once (+ the KV cache it attends over).
    const size_t lm = c->lm_head ? 0 : r->md.lm_head_bytes;
    double bytes = (double)(r->md.weight_bytes - lm);
    const double kv_row = 2.0 * cfg->kv_heads * cfg->head_dim * 2.0 * cfg->layers;   /* k + v, bf16, all layers */
    if (!prefill)
        for (int i = 0; i < c->tokens; ++i)
            bytes += kv_row * (double)((c->pos + 7 * i) % cfg->max_ctx + 1);
    out->read_bytes = bytes;
    if (r->copy_tbps <= 0.0)
        mkg_mk_runner_copy_tbps(r);
    out->floor_us = bytes / (r->copy_tbps * 1e12) * 1e6;

    if (replays > 0) {
        cudaGraph_t g[2] = {NULL, NULL};
        cudaGraphExec_t ge[2] = {NULL, NULL};
        for (int k = 0; k < 2; ++k) {
            MKG_RUN_TRY(cudaStreamBeginCapture(r->s, cudaStreamCaptureModeThreadLocal));
            const int e = k == 0 ? mkg_ref_model_step(r->ref, &r->md, c->tokens, prefill, c->pos, c->lm_head, r->s)
                                 : (int)mkg_mk_step(r->mk, c->tokens, prefill, prefill ? c->pos : 0, c->lm_head, r->s);
            MKG_RUN_TRY(cudaStreamEndCapture(r->s, &g[k]));
            MKG_RUN_TRY(e);
            MKG_RUN_TRY(cudaGraphInstantiate(&ge[k], g[k], 0));
        }
        MKG_RUN_TRY(mkg_mk_time_pair(r->s, ge[0], ge[1], replays, &out->ref_graph_us, &out->mkg_us));
        for (int k = 0; k < 2; ++k) {
            cudaGraphExecDestroy(ge[k]);
            cudaGraphDestroy(g[k]);
        }
        unsigned int stall[4], de;
        const mkg_status st = mkg_mk_check(r->mk, r->s, stall, &de);
        if (st != MKG_OK && out->status == MKG_OK) {
            out->status = st;
            memcpy(out->stall, stall, sizeof stall);
            out->dispatch_err = de;
        }
    }
    mkg_nvtx_pop();
    return 0;
}

int mkg_mk_runner_logits_row(mkg_mk_runner *r, int row, unsigned short *host)
{
    const mkg_model_config *cfg = &r->md.cfg;
    return (int)cudaMemcpy(host, (const unsigned short *)r->md.logits + (size_t)row * cfg->vocab,
                           (size_t)cfg->vocab * 2, cudaMemcpyDeviceToHost);
}
