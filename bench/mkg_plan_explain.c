/* mkg_plan_explain.c - prints the planner's reasoning for a layer at given M values.
 *
 *   mkg_plan_explain --n N --k K --m M[,M...] [--dtype bf16|fp16|tf32|e4m3] [--kc KC] [--block-scales 0|1]
 *                    [--sms S] [--gpu NAME]
 *   mkg_plan_explain --picks [--sms S]   (stdin: lines "N K M DTYPE KC BLOCK"; stdout: the pick's name per line)
 *
 * tf32: fp32 operands and C; e4m3: FP8 operands (per-tensor scales 1, or block scales), bf16 C. The
 * --picks form serves tools/pick_vs_oracle.py, which sets the model's picks against measured JSON.
 *
 * Needs no GPU: it runs the analytic cost model (mkg_cost_model_h200) that the
 * layer table uses, lists every eligible schedule with its predicted time and
 * the terms behind it, and says why the winner won.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mkgemm.h"

static mkg_dtype mkg_parse_dtype(const char *d)
{
    return !strcmp(d, "bf16")   ? MKG_DTYPE_BF16
           : !strcmp(d, "fp16") ? MKG_DTYPE_FP16
           : !strcmp(d, "tf32") ? MKG_DTYPE_FP32
           : !strcmp(d, "e4m3") ? MKG_DTYPE_E4M3
                                : MKG_DTYPE_COUNT;
}

/* The layer's fields that the model reads; `placeholder` stands in for every pointer (validation
 * checks only that they are set and aligned). */
static void mkg_layer_set(mkg_layer_desc *l, int n, int k, mkg_dtype in, int kc, int block, float *placeholder)
{
    l->n = n;
    l->k = k;
    l->in_type = in;
    l->c_type = in == MKG_DTYPE_E4M3 ? MKG_DTYPE_BF16 : in;
    l->kc = kc;
    l->a = l->b = l->c = placeholder;
    l->lda = l->ldb = k;
    l->ldc = n;
    l->a_block_scales = l->b_block_scales = block ? placeholder : NULL;
}

/* --picks: one pick per stdin line "N K M DTYPE KC BLOCK" (DTYPE as --dtype; KC 0: the planner's); a
 * layer that fails validation prints its status name instead. */
static int mkg_picks(mkg_layer_desc *l, const mkg_gpu_info *g, float *placeholder)
{
    const mkg_cost_model cm = mkg_cost_model_h200();
    char dt[16];
    int n, k, m, kc, block;
    while (scanf("%d %d %d %15s %d %d", &n, &k, &m, dt, &kc, &block) == 6) {
        const mkg_dtype in = mkg_parse_dtype(dt);
        if (in == MKG_DTYPE_COUNT || m < 1) {
            printf("bad-line\n");
            continue;
        }
        mkg_layer_set(l, n, k, in, kc, block, placeholder);
        l->m_max = m;
        l->ld_a_block_scales = m;
        int s = -1;
        mkg_status st = mkg_layers_validate(l, 1, NULL);
        if (st == MKG_OK)
            st = mkg_plan_pick(&cm, l, g, m, &s);
        printf("%s\n", st == MKG_OK ? mkg_schedule_get(s)->name : mkg_status_name(st));
    }
    return 0;
}

static int mkg_parse_ms(const char *arg, int *ms, int max)
{
    int count = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", arg);
    for (char *tok = strtok(buf, ","); tok && count < max; tok = strtok(NULL, ","))
        ms[count++] = atoi(tok);
    return count;
}

int main(int argc, char **argv)
{
    float placeholder[16];
    mkg_layer_desc l;
    memset(&l, 0, sizeof l);
    l.in_type = l.c_type = MKG_DTYPE_BF16;
    l.epilogue = MKG_EPI_STORE;
    l.mode = MKG_MODE_INVARIANT;
    l.a_scale = l.b_scale = 1.0f;
    mkg_gpu_info g;
    snprintf(g.name, sizeof g.name, "NVIDIA H200");
    g.sms = 132;
    int ms[64], nm = 0, block = 0;
    const int picks = argc > 1 && !strcmp(argv[1], "--picks");   /* first, and takes no value */
    for (int i = 1 + picks; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--n"))
            l.n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--k"))
            l.k = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--kc"))
            l.kc = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--block-scales"))
            block = atoi(argv[i + 1]) != 0;
        else if (!strcmp(argv[i], "--m"))
            nm = mkg_parse_ms(argv[i + 1], ms, 64);
        else if (!strcmp(argv[i], "--sms"))
            g.sms = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--gpu"))
            snprintf(g.name, sizeof g.name, "%s", argv[i + 1]);
        else if (!strcmp(argv[i], "--dtype")) {
            const char *d = argv[i + 1];
            l.in_type = mkg_parse_dtype(d);
            if (l.in_type == MKG_DTYPE_COUNT) {
                fprintf(stderr, "--dtype must be bf16, fp16, tf32 or e4m3, got '%s'\n", d);
                return 2;
            }
            l.c_type = l.in_type == MKG_DTYPE_E4M3 ? MKG_DTYPE_BF16 : l.in_type;
        } else {
            fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (picks)
        return mkg_picks(&l, &g, placeholder);
    if (l.n < 1 || l.k < 1 || nm == 0) {
        fprintf(stderr, "usage: %s --n N --k K --m M[,M...] [--dtype bf16|fp16|tf32|e4m3] [--kc KC] "
                        "[--block-scales 0|1] [--sms S] [--gpu NAME]\n       %s --picks [--sms S] < lines\n",
                argv[0], argv[0]);
        return 2;
    }
    if (block && l.in_type != MKG_DTYPE_E4M3) {
        fprintf(stderr, "--block-scales 1 needs --dtype e4m3\n");
        return 2;
    }
    mkg_layer_set(&l, l.n, l.k, l.in_type, l.kc, block, placeholder);
    const mkg_cost_model cm = mkg_cost_model_h200();
    for (int i = 0; i < nm; ++i) {
        char buf[16384];
        l.m_max = l.ld_a_block_scales = ms[i];
        mkg_plan_explain(&cm, &l, &g, ms[i], buf, sizeof buf);
        fputs(buf, stdout);
        fputs("\n", stdout);
    }
    return 0;
}
