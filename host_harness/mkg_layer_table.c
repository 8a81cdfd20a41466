/* mkg_layer_table.c - layer validation, per-bucket planning, and the versioned
 * table file written by autotune runs and read back at startup.
 *
 * File format (text, one item per line, a checksum over everything before it):
 *   mkgemm-schedule-table 2
 *   library <MKG_VERSION_STRING>
 *   gpu <device name>
 *   sms <multiprocessors>
 *   layers <count>
 *   layer <i> n <N> k <K> in <dtype> out <dtype> kc <KC> mmax <m_max> bscales <0|1> buckets <B>
 *   <schedule name of bucket 0> ... <schedule name of bucket B-1>     (one per line)
 *   checksum <16 hex digits of FNV-1a 64>
 * Loading checks every field against the caller's GPU and layer list and only then
 * writes the plans, so a bad file leaves the cost-model plans in place. Format 2 added
 * bscales (1: the layer has e4m3 block scales); a format-1 file reads as another version.
 * kc is the plan's chunk: the layer's own when it names one or has block scales, else any chunk
 * valid for the layer (a caller's plans may use another than the planner's; 0 is one chunk).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mkg_layer.h"
#include "mkg_plan.h"
#include "mkgemm.h"

#define MKG_TABLE_FORMAT 2
#define MKG_TABLE_MAX_BYTES (16u << 20)

int mkg_layer_kc(const mkg_layer_desc *l, int sms)
{
    if (l->kc > 0)
        return l->kc;
    return l->a_block_scales ? MKG_BLOCK_SCALE_K : mkg_plan_kc(l->n, l->k, sms);
}

mkg_gemm_desc mkg_layer_gemm_desc(const mkg_layer_desc *l, int m, int kc)
{
    mkg_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.m = m;
    d.n = l->n;
    d.k = l->k;
    d.a_type = d.b_type = l->in_type;
    d.c_type = l->c_type;
    d.a = l->a;
    d.b = l->b;
    d.c = l->c;
    d.lda = l->lda;
    d.ldb = l->ldb;
    d.ldc = l->ldc;
    d.epilogue = l->epilogue;
    d.aux = l->aux;
    d.ld_aux = l->ld_aux;
    d.deps = l->deps;
    /* NOTE: kc 0 is one chunk, except with block scales, whose 128-deep K block is the chunk. */
    d.kc = kc == 0 && l->a_block_scales ? MKG_BLOCK_SCALE_K : kc;
    d.a_scale = l->a_scale;
    d.b_scale = l->b_scale;
    d.a_block_scales = l->a_block_scales;
    d.ld_a_block_scales = l->ld_a_block_scales;
    d.b_block_scales = l->b_block_scales;
    return d;
}

mkg_status mkg_layers_validate(const mkg_layer_desc *layers, int count, int *bad)
{
    if (bad)
        *bad = -1;
    if (!layers || count < 1)
        return MKG_ERR_NULL_DESC;
    for (int i = 0; i < count; ++i) {
        const mkg_layer_desc *l = &layers[i];
        mkg_status st = MKG_OK;
        if (l->m_max < 1 || mkg_bucket_count(l->m_max) > MKG_MAX_BUCKETS)
            st = MKG_ERR_BAD_M_MAX;
        else if ((int)l->mode < 0 || l->mode >= MKG_MODE_COUNT)
            st = MKG_ERR_BAD_MODE;
        else {
            /* Every input dtype of mkg_gemm_validate, e4m3 with its per-tensor or block scales checked
             * there (ld_a_block_scales against m_max). */
            const mkg_gemm_desc d = mkg_layer_gemm_desc(l, l->m_max, l->kc);
            st = mkg_gemm_validate(&d);
        }
        if (st != MKG_OK) {
            if (bad)
                *bad = i;
            return st;
        }
    }
    return MKG_OK;
}

mkg_status mkg_layers_plan(const mkg_cost_model *cm, const mkg_layer_desc *layers, int count,
                           const mkg_gpu_info *g, mkg_layer_plan *plans)
{
    int bad;
    mkg_status st = mkg_layers_validate(layers, count, &bad);
    if (st != MKG_OK)
        return st;
    if (!cm || !g || !plans)
        return MKG_ERR_NULL_OUT;
    for (int i = 0; i < count; ++i) {
        mkg_layer_plan p;
        memset(&p, 0, sizeof p);
        p.kc = mkg_layer_kc(&layers[i], g->sms);
        p.buckets = mkg_bucket_count(layers[i].m_max);
        for (int b = 0; b < p.buckets; ++b) {
            /* NOTE: plan at the bucket's largest M (capped at m_max): the slowest step it covers. */
            int m = mkg_bucket_upper(b), s = -1;
            if (m > layers[i].m_max)
                m = layers[i].m_max;
            st = mkg_plan_pick(cm, &layers[i], g, m, &s);
            if (st != MKG_OK)
                return st;
            p.schedule[b] = (unsigned char)s;
        }
        plans[i] = p;
    }
    return MKG_OK;
}

// ---- table file --------------------------------------------------------------------------

static uint64_t mkg_fnv1a64(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

mkg_status mkg_table_save(const char *path, const mkg_gpu_info *g, const mkg_layer_desc *layers,
                          const mkg_layer_plan *plans, int count)
{
    if (!path || !g || !layers || !plans || count < 1)
        return MKG_ERR_NULL_OUT;
    size_t cap = 4096 + (size_t)count * (256 + MKG_MAX_BUCKETS * 48), len = 0;
    char *text = (char *)malloc(cap);
    if (!text)
        return MKG_ERR_OUT_OF_MEMORY;
#define MKG_PUT(...) len += (size_t)snprintf(text + len, cap - len, __VA_ARGS__)
    MKG_PUT("mkgemm-schedule-table %d\nlibrary %s\ngpu %s\nsms %d\nlayers %d\n", MKG_TABLE_FORMAT,
            MKG_VERSION_STRING, g->name, g->sms, count);
    for (int i = 0; i < count; ++i) {
        const mkg_layer_desc *l = &layers[i];
        /* kc as the device row holds it (a block-scaled layer's plan may say 0 for its 128-deep block) */
        MKG_PUT("layer %d n %d k %d in %s out %s kc %d mmax %d bscales %d buckets %d\n", i, l->n, l->k,
                mkg_dtype_name(l->in_type), mkg_dtype_name(l->c_type), mkg_layer_gemm_desc(l, 1, plans[i].kc).kc,
                l->m_max, l->a_block_scales != NULL, plans[i].buckets);
        for (int b = 0; b < plans[i].buckets; ++b) {
            const mkg_schedule_info *s = mkg_schedule_get(plans[i].schedule[b]);
            MKG_PUT("%s\n", s ? s->name : "?");
        }
    }
#undef MKG_PUT
    mkg_status st = MKG_OK;
    FILE *f = fopen(path, "w");
    if (!f)
        st = MKG_ERR_TABLE_MISSING;
    else {
        if (fwrite(text, 1, len, f) != len ||
            fprintf(f, "checksum %016" PRIx64 "\n", mkg_fnv1a64(text, len)) < 0)
            st = MKG_ERR_TABLE_MISSING;
        if (fclose(f) != 0)
            st = MKG_ERR_TABLE_MISSING;
    }
    free(text);
    return st;
}

/* Reads the next line of text (at *pos) into line; 0 at the end of the text. */
static int mkg_next_line(const char *text, size_t n, size_t *pos, char *line, size_t size)
{
    if (*pos >= n)
        return 0;
    size_t e = *pos;
    while (e < n && text[e] != '\n')
        ++e;
    const size_t len = e - *pos < size - 1 ? e - *pos : size - 1;
    memcpy(line, text + *pos, len);
    line[len] = '\0';
    *pos = e < n ? e + 1 : e;
    return 1;
}

/* 1 if a table file may give layer l the chunk kc: the layer's own chunk when it names one or
 * has block scales; when it leaves the chunk to the library, any chunk valid for it, since the
 * file may hold a caller's plans (mkg_table_create takes them with their own kc, and
 * mkg_table_save writes that kc; 0 is one chunk). */
static int mkg_table_kc_ok(const mkg_layer_desc *l, int kc, int sms)
{
    if (kc == mkg_layer_kc(l, sms))
        return 1;
    if (l->kc > 0 || l->a_block_scales)
        return 0;
    mkg_layer_desc lk = *l;
    lk.kc = kc;
    int bad;
    return mkg_layers_validate(&lk, 1, &bad) == MKG_OK;
}

static mkg_status mkg_table_parse(const char *text, size_t body, const mkg_gpu_info *g,
                                  const mkg_layer_desc *layers, mkg_layer_plan *out, int count)
{
    char line[512], name[128];
    size_t pos = 0;
    int format = 0, sms = 0, n_layers = 0;
    if (!mkg_next_line(text, body, &pos, line, sizeof line) ||
        sscanf(line, "mkgemm-schedule-table %d", &format) != 1)
        return MKG_ERR_TABLE_CORRUPT;
    if (format != MKG_TABLE_FORMAT)
        return MKG_ERR_TABLE_VERSION;
    if (!mkg_next_line(text, body, &pos, line, sizeof line) || strncmp(line, "library ", 8) != 0)
        return MKG_ERR_TABLE_CORRUPT;
    if (strcmp(line + 8, MKG_VERSION_STRING) != 0)
        return MKG_ERR_TABLE_VERSION;
    if (!mkg_next_line(text, body, &pos, line, sizeof line) || strncmp(line, "gpu ", 4) != 0)
        return MKG_ERR_TABLE_CORRUPT;
    const int gpu_ok = strcmp(line + 4, g->name) == 0;
    if (!mkg_next_line(text, body, &pos, line, sizeof line) || sscanf(line, "sms %d", &sms) != 1)
        return MKG_ERR_TABLE_CORRUPT;
    if (!gpu_ok || sms != g->sms)
        return MKG_ERR_TABLE_GPU;
    if (!mkg_next_line(text, body, &pos, line, sizeof line) || sscanf(line, "layers %d", &n_layers) != 1)
        return MKG_ERR_TABLE_CORRUPT;
    if (n_layers != count)
        return MKG_ERR_TABLE_LAYER;
    for (int i = 0; i < count; ++i) {
        int idx, n, k, kc, mmax, bscales, buckets;
        char in[16], o[16];
        if (!mkg_next_line(text, body, &pos, line, sizeof line) ||
            sscanf(line, "layer %d n %d k %d in %15s out %15s kc %d mmax %d bscales %d buckets %d", &idx, &n, &k, in,
                   o, &kc, &mmax, &bscales, &buckets) != 9 || idx != i || (bscales != 0 && bscales != 1))
            return MKG_ERR_TABLE_CORRUPT;
        const mkg_layer_desc *l = &layers[i];
        if (n != l->n || k != l->k || strcmp(in, mkg_dtype_name(l->in_type)) != 0 ||
            strcmp(o, mkg_dtype_name(l->c_type)) != 0 || !mkg_table_kc_ok(l, kc, g->sms) || mmax != l->m_max ||
            bscales != (l->a_block_scales != NULL))
            return MKG_ERR_TABLE_LAYER;
        if (buckets != mkg_bucket_count(l->m_max))
            return MKG_ERR_TABLE_CORRUPT;
        out[i].kc = kc;
        out[i].buckets = buckets;
        for (int b = 0; b < buckets; ++b) {
            if (!mkg_next_line(text, body, &pos, line, sizeof line) || sscanf(line, "%127s", name) != 1)
                return MKG_ERR_TABLE_CORRUPT;
            const int s = mkg_schedule_find(name);
            if (s < 0)
                return MKG_ERR_TABLE_CORRUPT;
            mkg_layer_desc lk = *l;
            lk.kc = kc;
            if (!mkg_plan_eligible(&lk, s))
                return MKG_ERR_TABLE_CORRUPT;
            out[i].schedule[b] = (unsigned char)s;
        }
    }
    return pos == body ? MKG_OK : MKG_ERR_TABLE_CORRUPT;
}

mkg_status mkg_table_load(const char *path, const mkg_gpu_info *g, const mkg_layer_desc *layers,
                          mkg_layer_plan *plans, int count)
{
    if (!path || !g || !layers || !plans || count < 1)
        return MKG_ERR_NULL_OUT;
    FILE *f = fopen(path, "rb");
    if (!f)
        return MKG_ERR_TABLE_MISSING;
    char *text = (char *)malloc(MKG_TABLE_MAX_BYTES + 1);
    mkg_layer_plan *tmp = (mkg_layer_plan *)calloc((size_t)count, sizeof *tmp);
    if (!text || !tmp) {
        fclose(f);
        free(text);
        free(tmp);
        return MKG_ERR_OUT_OF_MEMORY;
    }
    const size_t n = fread(text, 1, MKG_TABLE_MAX_BYTES, f);
    fclose(f);
    text[n] = '\0';

    /* The last line must be "checksum <16 hex>\n"; without it the file ended early. */
    mkg_status st = MKG_ERR_TABLE_TRUNCATED;
    const char *tag = NULL;
    for (size_t i = n; i-- > 0;)
        if ((i == 0 || text[i - 1] == '\n') && strncmp(text + i, "checksum ", 9) == 0) {
            tag = text + i;
            break;
        }
    if (tag && n >= 26 && text[n - 1] == '\n' && (size_t)(text + n - tag) == 9 + 16 + 1) {
        const size_t body = (size_t)(tag - text);
        uint64_t want = 0;
        if (sscanf(tag + 9, "%16" SCNx64, &want) != 1 || want != mkg_fnv1a64(text, body))
            st = MKG_ERR_TABLE_CORRUPT;
        else
            st = mkg_table_parse(text, body, g, layers, tmp, count);
    }
    if (st == MKG_OK)
        memcpy(plans, tmp, (size_t)count * sizeof *tmp);
    free(tmp);
    free(text);
    return st;
}
