// attn_prefill_probe.cu - the megakernel's prefill attention op (mkg_op_attention_prefill) alone:
// one layer of the 1B shape (32 query heads, 8 KV heads of 64) at a prefill of N tokens from
// position 0, one item (64 queries x one KV head) per CTA and one CTA per SM (a dynamic allocation
// over half the SM, as in the megakernel):
//   ref   the reference kernel's form (this step's keys rotated tile by tile)
//   once  the megakernel's rotate-once form, the step's flags set ahead (no item waits)
// Each prints the time per launch (CUDA events over R launches, L2-warm: one layer's keys and qkv
// fit), TFLOPS of the causal products and the items' globaltimer spans, fitted against the keys each
// item attends (time per 32 keys + a fixed part per item; busy: the items' summed spans over the SMs x
// the launch's span). Outputs are poisoned first; the rotate-once output is compared bit for bit
// with the reference form's; the exit status is 1 on a non-finite output, a difference or a stall.
// Session 51 also ran it with an op that took tile and softmax-step sizes and a RoPE table as
// parameters (bench/NOTES.md, v106; bench/patches/v106_prefill_attention_rope_table.patch).
// Usage: mkg_attn_prefill_probe [N (2048)] [R (20)]. Built with PROBE_MAX_THREADS=384
// (mkg_attn_prefill_probe_168) the kernels get the megakernel's register budget.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mkg_check.h"
#include "probe_common.h"
#include "mkg_mk_ops.cuh"

#define PROBE_BAR 1
// Built with -DPROBE_MAX_THREADS=384 the kernels get the megakernel's register budget (168 a thread;
// its items run on 256 of 384 threads), with 256 (the default) the reference kernel's.
#ifndef PROBE_MAX_THREADS
#define PROBE_MAX_THREADS MKG_OP_THREADS
#endif

__device__ __forceinline__ void probe_stamp(unsigned long long *stamps, int tid, bool end)
{
    if (tid == 0)
        stamps[2 * (blockIdx.y * gridDim.x + blockIdx.x) + (end ? 1 : 0)] = mkg_globaltimer();
}

__global__ void __launch_bounds__(PROBE_MAX_THREADS, 1)
    probe_ref(const mkg_model_config cfg, const __nv_bfloat16 *qkv, int tokens, __nv_bfloat16 *kc,
              __nv_bfloat16 *vc, __nv_bfloat16 *attn, unsigned long long *stamps)
{
    __shared__ __align__(1024) unsigned char scratch[MKG_OP_PREFILL_SCRATCH_BYTES];
    extern __shared__ __align__(1024) unsigned char pad[];   // occupancy only
    (void)pad;
    const int t0 = (gridDim.x - 1 - blockIdx.x) * 64;
    probe_stamp(stamps, threadIdx.x, false);
    mkg_op_attention_prefill(&cfg, 0, qkv, t0, min(64, tokens - t0), 0, blockIdx.y, kc, vc, attn, scratch,
                             threadIdx.x, PROBE_BAR);
    probe_stamp(stamps, threadIdx.x, true);
}

__global__ void __launch_bounds__(PROBE_MAX_THREADS, 1)
    probe_once(const mkg_model_config cfg, const __nv_bfloat16 *qkv, int tokens, __nv_bfloat16 *kc,
               __nv_bfloat16 *vc, __nv_bfloat16 *attn, unsigned int *flags, unsigned int *stall,
               unsigned long long *stamps)
{
    extern __shared__ __align__(1024) unsigned char scratch[];
    const int t0 = (gridDim.x - 1 - blockIdx.x) * 64;
    mkg_op_rope_once once;
    once.flags = flags;
    once.kvh = cfg.kv_heads;
    once.pair = -1;
    once.pair_rows = 0;
    once.appended = 0;
    once.stall = stall;
    once.tag = 1u;
    once.timeout_ns = 1000000000ull;
    probe_stamp(stamps, threadIdx.x, false);
    mkg_op_attention_prefill(&cfg, 0, qkv, t0, min(64, tokens - t0), 0, blockIdx.y, kc, vc, attn, scratch,
                             threadIdx.x, PROBE_BAR, &once);
    probe_stamp(stamps, threadIdx.x, true);
}

typedef struct probe_ctx {
    mkg_model_config cfg;
    int tokens, reps, nb, sms;
    __nv_bfloat16 *qkv, *kc, *vc, *attn;
    unsigned int *flags, *stall;
    unsigned long long *stamps;
    size_t attn_elems;
} probe_ctx;

#define PROBE_ONE_CTA (120 * 1024)   // a dynamic allocation over half the SM: one CTA per SM

static void probe_launch(const probe_ctx *c, int once)
{
    const dim3 grid(c->nb, c->cfg.kv_heads);
    if (!once)
        probe_ref<<<grid, MKG_OP_THREADS, PROBE_ONE_CTA>>>(c->cfg, c->qkv, c->tokens, c->kc, c->vc, c->attn, c->stamps);
    else
        probe_once<<<grid, MKG_OP_THREADS, PROBE_ONE_CTA>>>(c->cfg, c->qkv, c->tokens, c->kc, c->vc, c->attn, c->flags,
                                                            c->stall, c->stamps);
    MKG_CUDA_CHECK(cudaGetLastError());
}

// Runs a form once (poisoned output, copied to got), then times c->reps launches and prints the
// line. want: the output to compare with (null: none). False if an output is not finite or differs
// from want.
static bool probe_run(const probe_ctx *c, int once, __nv_bfloat16 *got, const __nv_bfloat16 *want,
                      const char *want_name)
{
    const int items = c->nb * c->cfg.kv_heads;
    MKG_CUDA_CHECK(cudaMemset(c->attn, 0xFF, c->attn_elems * 2));   // poison: NaN bf16
    probe_launch(c, once);
    MKG_CUDA_CHECK(cudaDeviceSynchronize());
    MKG_CUDA_CHECK(cudaMemcpy(got, c->attn, c->attn_elems * 2, cudaMemcpyDeviceToHost));
    size_t ndiff = 0, bad = 0;
    double maxd = 0.0;
    for (size_t i = 0; i < c->attn_elems; ++i) {
        const float a = __bfloat162float(got[i]);
        bad += !isfinite(a);
        if (want) {
            const float b = __bfloat162float(want[i]);
            ndiff += memcmp(&got[i], &want[i], 2) != 0;
            maxd = fabs(a - b) > maxd ? fabs(a - b) : maxd;
        }
    }
    cudaEvent_t e0, e1;
    MKG_CUDA_CHECK(cudaEventCreate(&e0));
    MKG_CUDA_CHECK(cudaEventCreate(&e1));
    MKG_CUDA_CHECK(cudaEventRecord(e0));
    for (int r = 0; r < c->reps; ++r)
        probe_launch(c, once);
    MKG_CUDA_CHECK(cudaEventRecord(e1));
    MKG_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0.0f;
    MKG_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    const double us = 1000.0 * ms / c->reps;
    // causal products: 2 x 2 x 64 flops per (query head, query, attended key)
    const double flops = 256.0 * c->cfg.q_heads * ((double)c->tokens * (c->tokens + 1) / 2.0);
    unsigned long long *st = (unsigned long long *)malloc((size_t)items * 16);
    MKG_CUDA_CHECK(cudaMemcpy(st, c->stamps, (size_t)items * 16, cudaMemcpyDeviceToHost));
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    unsigned long long t_first = ~0ull, t_last = 0;
    for (int i = 0; i < items; ++i) {
        const int rb = c->nb - 1 - i % c->nb;
        const int last = rb * 64 + (rb * 64 + 64 <= c->tokens ? 64 : c->tokens - rb * 64);
        const double x = (double)last / 32.0, y = (double)(st[2 * i + 1] - st[2 * i]) / 1000.0;   // x: 32-key units
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
        t_first = st[2 * i] < t_first ? st[2 * i] : t_first;
        t_last = st[2 * i + 1] > t_last ? st[2 * i + 1] : t_last;
    }
    const double b = (items * sxy - sx * sy) / (items * sxx - sx * sx), a = (sy - b * sx) / items;
    const double span = (t_last - t_first) / 1000.0;
    printf("%-4s %8.1f us %6.1f TFLOPS | item mean %6.1f us = %5.3f us / 32 keys + %5.2f | "
           "busy %.2f | %zu non-finite",
           once ? "once" : "ref", us, flops / us * 1e-6, sy / items, b, a, sy / (c->sms * span), bad);
    if (want)
        printf(" | vs %s: %zu of %zu differ, max |d| %.3g", want_name, ndiff, c->attn_elems, maxd);
    printf("\n");
    free(st);
    MKG_CUDA_CHECK(cudaEventDestroy(e0));
    MKG_CUDA_CHECK(cudaEventDestroy(e1));
    return bad == 0 && ndiff == 0;
}

int main(int argc, char **argv)
{
    cudaDeviceProp prop;
    if (!probe_sm90(&prop))
        return 0;
    printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    probe_ctx c;
    memset(&c, 0, sizeof c);
    c.cfg.hidden = 2048;
    c.cfg.layers = 1;
    c.cfg.q_heads = 32;
    c.cfg.kv_heads = 8;
    c.cfg.head_dim = 64;
    c.cfg.rope_theta = 500000.0f;
    c.cfg.max_batch = 1;
    c.tokens = argc > 1 ? atoi(argv[1]) : 2048;
    c.reps = argc > 2 ? atoi(argv[2]) : 20;
    c.cfg.max_ctx = c.tokens;
    c.cfg.max_tokens = c.tokens;
    c.nb = (c.tokens + 63) / 64;
    c.sms = prop.multiProcessorCount;
    const size_t qkv_elems = (size_t)c.tokens * (32 + 16) * 64, cache_elems = (size_t)8 * c.tokens * 64;
    c.attn_elems = (size_t)c.tokens * 32 * 64;
    MKG_CUDA_CHECK(cudaMalloc((void **)&c.qkv, qkv_elems * 2));
    MKG_CUDA_CHECK(cudaMalloc((void **)&c.kc, cache_elems * 2));
    MKG_CUDA_CHECK(cudaMalloc((void **)&c.vc, cache_elems * 2));
    MKG_CUDA_CHECK(cudaMalloc((void **)&c.attn, c.attn_elems * 2));
    MKG_CUDA_CHECK(cudaMalloc((void **)&c.flags, (size_t)c.nb * 8 * 4));
    MKG_CUDA_CHECK(cudaMalloc((void **)&c.stall, 4));
    MKG_CUDA_CHECK(cudaMalloc((void **)&c.stamps, (size_t)c.nb * 8 * 16));
    probe_fill_bf16<<<264, 256>>>((uint16_t *)c.qkv, qkv_elems, 12345u);
    MKG_CUDA_CHECK(cudaGetLastError());
    MKG_CUDA_CHECK(cudaMemset(c.kc, 0, cache_elems * 2));
    MKG_CUDA_CHECK(cudaMemset(c.vc, 0, cache_elems * 2));
    MKG_CUDA_CHECK(cudaMemset(c.stall, 0, 4));
    // every flag set: the rotate-once items read the keys a reference run appended (same bits)
    unsigned int *ones = (unsigned int *)malloc((size_t)c.nb * 8 * 4);
    for (int i = 0; i < c.nb * 8; ++i)
        ones[i] = 1u;
    MKG_CUDA_CHECK(cudaMemcpy(c.flags, ones, (size_t)c.nb * 8 * 4, cudaMemcpyHostToDevice));
    free(ones);

    MKG_CUDA_CHECK(cudaFuncSetAttribute(probe_ref, cudaFuncAttributeMaxDynamicSharedMemorySize, PROBE_ONE_CTA));
    MKG_CUDA_CHECK(cudaFuncSetAttribute(probe_once, cudaFuncAttributeMaxDynamicSharedMemorySize, PROBE_ONE_CTA));
    printf("tokens %d, items %d, one CTA per SM\n", c.tokens, c.nb * 8);
    __nv_bfloat16 *want = (__nv_bfloat16 *)malloc(c.attn_elems * 2), *got = (__nv_bfloat16 *)malloc(c.attn_elems * 2);
    bool ok = probe_run(&c, 0, want, NULL, NULL);   // fills the cache; the reference form's output
    ok = probe_run(&c, 1, got, want, "ref") && ok;
    unsigned int stall = 0;
    MKG_CUDA_CHECK(cudaMemcpy(&stall, c.stall, 4, cudaMemcpyDeviceToHost));
    printf("stall word %u\n", stall);
    free(want);
    free(got);
    return ok && stall == 0 ? 0 : 1;
}
