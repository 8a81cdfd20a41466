/* mkg_plan_explain.c - prints the planner's reasoning for a layer at given M values.
 *
 *   mkg_plan_explain --n N --k K --m M[,M...] [--dtype bf16|fp16|tf32|e4m3] [--kc KC] [--sms S] [--gpu NAME]
 *
 * tf32: fp32 operands and C; e4m3: FP8 operands (per-tensor scales 1), bf16 C.
 *
 * Needs no GPU: it runs the analytic cost model (mkg_cost_model_h200) that the
 * layer table uses, lists every eligible schedule with its predicted time and
 * the terms behind it, and says why the winner won.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mkgemm.h"

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
    mkg_layer_desc l;
    memset(&l, 0, sizeof l);
    l.in_type = l.c_type = MKG_DTYPE_BF16;
    l.epilogue = MKG_EPI_STORE;
    l.mode = MKG_MODE_INVARIANT;
    l.a_scale = l.b_scale = 1.0f;
    mkg_gpu_info g;
    snprintf(g.name, sizeof g.name, "NVIDIA H200");
    g.sms = 132;
    int ms[64], nm = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--n"))
            l.n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--k"))
            l.k = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--kc"))
            l.kc = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--m"))
            nm = mkg_parse_ms(argv[i + 1], ms, 64);
        else if (!strcmp(argv[i], "--sms"))
            g.sms = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--gpu"))
            snprintf(g.name, sizeof g.name, "%s", argv[i + 1]);
        else if (!strcmp(argv[i], "--dtype")) {
            const char *d = argv[i + 1];
            l.in_type = !strcmp(d, "bf16")   ? MKG_DTYPE_BF16
                        : !strcmp(d, "fp16") ? MKG_DTYPE_FP16
                        : !strcmp(d, "tf32") ? MKG_DTYPE_FP32
                        : !strcmp(d, "e4m3") ? MKG_DTYPE_E4M3
                                             : MKG_DTYPE_COUNT;
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
    if (l.n < 1 || l.k < 1 || nm == 0) {
        fprintf(stderr, "usage: %s --n N --k K --m M[,M...] [--dtype bf16|fp16|tf32|e4m3] [--kc KC] [--sms S] "
                        "[--gpu NAME]\n",
                argv[0]);
        return 2;
    }
    const mkg_cost_model cm = mkg_cost_model_h200();
    for (int i = 0; i < nm; ++i) {
        char buf[16384];
        mkg_plan_explain(&cm, &l, &g, ms[i], buf, sizeof buf);
        fputs(buf, stdout);
        fputs("\n", stdout);
    }
    return 0;
}
