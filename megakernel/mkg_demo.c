/* mkg_demo.c - main of mkg_demo, the README's demo: the sample megakernel.
 *
 *   mkg_demo [--layers N] [--out megakernel.json] [--trace trace.json] [--trace-batch B]
 *            [--trace-prefill trace.json] [--commit STR] [--replays N]
 *
 * Plans the Llama-3.2-1B-shaped model (random weights from a seed) and prints every
 * GEMM's schedule per step size. On a compute-capability-9.0 GPU it then runs decode
 * steps (batch 1, 8, 64) and prefill (512 and 2048 tokens) as one megakernel launch
 * each, checks them against the reference path (cuBLAS + plain kernels, same weights),
 * and prints time per step, the weight-bytes / copy-bandwidth floor and the ratio to
 * the CUDA-graph-replayed reference. Without such a GPU it prints the plan and says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mkg_mk_runner.h"
#include "mkgemm.h"

#define MKG_DEMO_MAX_CASES 12

static const mkg_mk_case mkg_demo_cases[] = {
    {"decode", 1, 1000, 1},
    {"decode", 8, 1000, 1},
    {"decode", 64, 1000, 1},
    {"prefill", 512, 0, 0},
    {"prefill", 2048, 0, 0},
};

typedef struct mkg_demo_args {
    int layers, replays;
    int trace_batch;                /* --trace-batch B: the decode step of B tokens gets --trace (default 1) */
    const char *out, *trace, *trace_prefill, *commit;
    const char *prefill;            /* --prefill N,N,...: these prefill steps instead of 512 and 2048 */
} mkg_demo_args;

static void mkg_demo_parse(int argc, char **argv, mkg_demo_args *a)
{
    a->layers = 16;
    a->replays = 20;
    a->trace_batch = 1;
    a->out = a->trace = a->trace_prefill = a->prefill = NULL;
    a->commit = getenv("MKG_COMMIT") ? getenv("MKG_COMMIT") : "unknown";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--layers"))
            a->layers = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--replays"))
            a->replays = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--out"))
            a->out = argv[i + 1];
        else if (!strcmp(argv[i], "--trace"))
            a->trace = argv[i + 1];
        else if (!strcmp(argv[i], "--trace-batch"))
            a->trace_batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--prefill"))
            a->prefill = argv[i + 1];
        else if (!strcmp(argv[i], "--trace-prefill"))
            a->trace_prefill = argv[i + 1];
        else if (!strcmp(argv[i], "--commit"))
            a->commit = argv[i + 1];
    }
    if (a->layers < 1)
        a->layers = 1;
}

static void mkg_demo_json_row(FILE *f, int first, const mkg_model_config *c, const mkg_mk_case *k,
                              const mkg_mk_result *r, double copy_tbps)
{
    fprintf(f, "%s    {\"model\": \"llama32_1b_shape_%dL\", \"phase\": \"%s\", \"batch\": %d, \"tokens\": %d, "
               "\"mkg_us\": %.2f, \"ref_graph_us\": %.2f, \"floor_us\": %.2f, \"copy_tbps\": %.3f, "
               "\"max_rel_err\": %.3e, \"logits_rel_err\": %.3e, \"repeat_bitexact\": %s, \"status\": \"%s\"}",
            first ? "" : ",\n", c->layers, k->phase, strcmp(k->phase, "decode") ? 1 : k->tokens, k->tokens, r->mkg_us,
            r->ref_graph_us, r->floor_us, copy_tbps, r->x_rel_err, r->logits_rel_err,
            r->repeat_bitexact ? "true" : "false", mkg_status_name(r->status));
}

int main(int argc, char **argv)
{
    mkg_demo_args args;
    mkg_demo_parse(argc, argv, &args);
    mkg_model_config cfg = mkg_model_config_llama32_1b();
    cfg.layers = args.layers;
    printf("mkgemm %s sample megakernel: Llama-3.2-1B shape (hidden %d, %d layers, %d/%d heads of %d, FFN %d, "
           "vocab %d), bf16, random weights (seed %llu)\n\n",
           MKG_VERSION_STRING, cfg.hidden, cfg.layers, cfg.q_heads, cfg.kv_heads, cfg.head_dim, cfg.ffn, cfg.vocab,
           cfg.seed);
    const int ms[] = {1, 8, 64, 512, 2048};
    printf("Per-layer GEMM schedules (cost model, invariant mode; the device dispatcher picks by the step's M):\n");
    mkg_mk_plan_print(&cfg, ms, 5, stdout);
    const mkg_status dev = mkg_device_check();
    if (dev != MKG_OK) {
        printf("\nmkg_demo cannot run the megakernel here: %s (%s).\n"
               "It needs an NVIDIA Hopper GPU of compute capability 9.0 (H100 or H200); the plan above is all it "
               "can show.\n",
               mkg_status_string(dev), mkg_status_name(dev));
        return 0;
    }
    mkg_mk_runner *run = NULL;
    const int e = mkg_mk_runner_create(&cfg, &run);
    if (e) {
        fprintf(stderr, "mkg_demo: setting up the model failed (code %d)\n", e);
        return 1;
    }
    const double copy = mkg_mk_runner_copy_tbps(run);
    printf("\ndevice-to-device copy bandwidth: %.2f TB/s (read + write)\n\n", copy);
    printf("%-8s %6s  %10s %10s %10s %8s %8s %10s %10s %7s  %s\n", "phase", "tokens", "mk us", "ref us", "floor us",
           "vs ref", "floor %", "x err", "logit err", "repeat", "status");
    FILE *json = args.out ? fopen(args.out, "w") : NULL;
    if (json) {
        char date[32];
        const time_t now = time(NULL);
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        struct cudaDeviceProp prop;
        cudaGetDeviceProperties(&prop, 0);
        int clk = 0;
        cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
        fprintf(json, "{\n  \"commit\": \"%s\",\n  \"date\": \"%s\",\n  \"gpu\": \"%s\",\n  \"sms\": %d,\n"
                      "  \"clocks_mhz\": {\"sm_max\": %d},\n  \"copy_tbps\": %.3f,\n  \"opts\": %u,\n"
                      "  \"tma_l2_promotion\": %d,\n  \"rows\": [\n",
                args.commit, date, prop.name, prop.multiProcessorCount, clk / 1000, copy,
                mkg_mk_opts(mkg_mk_runner_mk(run)), mkg_tma_l2_promotion());
    }
    int failed = 0;
    mkg_mk_case list[MKG_DEMO_MAX_CASES];
    int cases = (int)(sizeof mkg_demo_cases / sizeof mkg_demo_cases[0]);
    memcpy(list, mkg_demo_cases, sizeof mkg_demo_cases);
    if (args.prefill) {
        cases = 3;                                   /* the decode steps, then the listed prefills */
        for (const char *p = args.prefill; *p && cases < MKG_DEMO_MAX_CASES;) {
            const int n = atoi(p);
            if (n >= 1 && n <= cfg.max_tokens)
                list[cases++] = (mkg_mk_case){"prefill", n, 0, 0};
            else
                fprintf(stderr, "mkg_demo: --prefill %d is outside 1 .. %d, skipped\n", n, cfg.max_tokens);
            p = strchr(p, ',');
            if (!p)
                break;
            ++p;
        }
    }
    for (int i = 0; i < cases; ++i) {
        const mkg_mk_case *k = &list[i];
        mkg_mk_result r;
        const int ce = mkg_mk_runner_case(run, k, args.replays, &r);
        if (ce) {
            fprintf(stderr, "mkg_demo: %s %d failed (code %d)\n", k->phase, k->tokens, ce);
            failed = 1;
            break;
        }
        const int ok = r.status == MKG_OK && r.repeat_bitexact && r.x_rel_err < 0.05 && r.logits_rel_err < 0.05;
        failed |= !ok;
        printf("%-8s %6d  %10.1f %10.1f %10.1f %7.2fx %7.1f%% %10.2e %10.2e %7s  %s", k->phase, k->tokens, r.mkg_us,
               r.ref_graph_us, r.floor_us, r.ref_graph_us / r.mkg_us, 100.0 * r.floor_us / r.mkg_us, r.x_rel_err,
               r.logits_rel_err, r.repeat_bitexact ? "bitwise" : "DIFFERS", mkg_status_name(r.status));
        if (r.status == MKG_ERR_STALLED)
            printf(" (task %u, row block %u, target %u, seen %u)", r.stall[0] - 1, r.stall[1], r.stall[2], r.stall[3]);
        if (r.status == MKG_ERR_DISPATCH)
            printf(" (table row %u, reason %u)", (r.dispatch_err >> 8) - 1, r.dispatch_err & 0xff);
        printf("\n");
        fflush(stdout);
        if (json)
            mkg_demo_json_row(json, i == 0, &cfg, k, &r, copy);
        const int last = i == cases - 1;
        const int traced_decode = !strcmp(k->phase, "decode") && k->tokens == args.trace_batch;
        const char *trace = traced_decode ? args.trace : last ? args.trace_prefill : NULL;
        if (trace) {
            /* the same step once more with the device timeline on */
            mkg_mk *mk = mkg_mk_runner_mk(run);
            const int prefill = strcmp(k->phase, "prefill") == 0;
            if (mkg_mk_set_timeline(mk, prefill ? 4096 : 512) == MKG_OK && mkg_mk_runner_inputs(run, k, 7) == 0 &&
                mkg_mk_step(mk, k->tokens, prefill, prefill ? k->pos : 0, k->lm_head, mkg_mk_runner_stream(run)) ==
                    MKG_OK &&
                mkg_mk_check(mk, mkg_mk_runner_stream(run), NULL, NULL) == MKG_OK &&
                mkg_mk_write_trace(mk, trace) == MKG_OK)
                printf("         (timeline of this step written to %s)\n", trace);
            mkg_mk_set_timeline(mk, 0);
        }
    }
    if (json) {
        fprintf(json, "\n  ]\n}\n");
        fclose(json);
    }
    printf("\nvs ref = graph-replayed reference time / megakernel time (above 1: the megakernel is faster);\n"
           "floor = bytes the step must read (weights, KV cache) / copy bandwidth; errors are max |diff| / max |ref|.\n");
    mkg_mk_runner_destroy(run);
    return failed;
}
