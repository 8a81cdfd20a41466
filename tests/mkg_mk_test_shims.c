/* mkg_mk_test_shims.c - see mkg_mk_test_shims.h. */
#include "mkg_mk_test_shims.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "mkg_harness.h"
#include "mkg_model.h"
#include "mkg_reference_model.h"

static uint64_t mkg_shim_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

/* uniform[-a, a] as bf16 bits */
static uint16_t mkg_shim_rand_bf16(uint64_t *s, float a)
{
    const double u = (double)mkg_shim_next(s) / (double)(1ull << 53);
    return mkg_float_to_bf16_bits((float)((2.0 * u - 1.0) * a));
}

static double mkg_shim_b(uint16_t h)
{
    return (double)mkg_bf16_bits_to_float(h);
}

/* Rotates pair (x0 = x[i], x1 = x[i + 32]) of a head at position pos in FP64. */
static void mkg_shim_rope(const double *x, double *y, int pos, double theta)
{
    for (int i = 0; i < 32; ++i) {
        const double a = (double)pos * pow(theta, -(double)(2 * i) / 64.0);
        const double c = cos(a), s = sin(a);
        y[i] = x[i] * c - x[i + 32] * s;
        y[i + 32] = x[i + 32] * c + x[i] * s;
    }
}

int mkg_shim_prefill_attention_check(int tokens, int pos0, unsigned long long seed, mkg_attn_check *out)
{
    memset(out, 0, sizeof *out);
    mkg_model_config c = mkg_model_config_llama32_1b();
    c.layers = 1;
    c.max_ctx = pos0 + tokens;
    c.max_batch = 1;
    c.max_tokens = tokens;
    mkg_model m;
    int e = mkg_model_create(&c, &m);
    if (e)
        return e;
    const int QH = c.q_heads, KVH = c.kv_heads, G = QH / KVH, D = 64, qkv_n = mkg_model_qkv_n(&c);
    const size_t cache_n = (size_t)KVH * c.max_ctx * D;   /* layer 0, seq 0 (max_batch 1) */
    uint16_t *qkv = (uint16_t *)malloc((size_t)tokens * qkv_n * 2);
    uint16_t *kc0 = (uint16_t *)malloc(cache_n * 2), *vc0 = (uint16_t *)malloc(cache_n * 2);
    uint16_t *kc1 = (uint16_t *)malloc(cache_n * 2), *vc1 = (uint16_t *)malloc(cache_n * 2);
    uint16_t *attn = (uint16_t *)malloc((size_t)tokens * QH * D * 2);
    double *keys = (double *)malloc((size_t)(pos0 + tokens) * D * sizeof(double));
    double *vals = (double *)malloc((size_t)(pos0 + tokens) * D * sizeof(double));
    double *w = (double *)malloc((size_t)(pos0 + tokens) * sizeof(double));
    if (!qkv || !kc0 || !vc0 || !kc1 || !vc1 || !attn || !keys || !vals || !w) {
        e = (int)cudaErrorMemoryAllocation;
        goto done;
    }
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < (size_t)tokens * qkv_n; ++i)
        qkv[i] = mkg_shim_rand_bf16(&st, 2.0f);
    memset(attn, 0xFF, (size_t)tokens * QH * D * 2);   /* NaN: rows the op does not write show up */
    if ((e = (int)cudaMemcpy(m.qkv, qkv, (size_t)tokens * qkv_n * 2, cudaMemcpyHostToDevice)) != 0 ||
        (e = (int)cudaMemcpy(m.attn, attn, (size_t)tokens * QH * D * 2, cudaMemcpyHostToDevice)) != 0 ||
        (e = (int)cudaMemcpy(kc0, m.k_cache, cache_n * 2, cudaMemcpyDeviceToHost)) != 0 ||
        (e = (int)cudaMemcpy(vc0, m.v_cache, cache_n * 2, cudaMemcpyDeviceToHost)) != 0 ||
        (e = mkg_ref_attention_run(&m, 0, tokens, 1, pos0, 0)) != 0 ||
        (e = (int)cudaDeviceSynchronize()) != 0 ||
        (e = (int)cudaMemcpy(attn, m.attn, (size_t)tokens * QH * D * 2, cudaMemcpyDeviceToHost)) != 0 ||
        (e = (int)cudaMemcpy(kc1, m.k_cache, cache_n * 2, cudaMemcpyDeviceToHost)) != 0 ||
        (e = (int)cudaMemcpy(vc1, m.v_cache, cache_n * 2, cudaMemcpyDeviceToHost)) != 0)
        goto done;

    double amax = 0, adiff = 0, kmax = 0, kdiff = 0;
    out->v_exact = 1;
    out->others_untouched = 1;
    for (int g = 0; g < KVH; ++g) {
        const size_t base = (size_t)g * c.max_ctx * D;
        for (int p = 0; p < pos0 + tokens; ++p) {
            const uint16_t *k1 = kc1 + base + (size_t)p * D, *v1 = vc1 + base + (size_t)p * D;
            if (p < pos0) {   /* earlier context: the cache as it was */
                if (memcmp(k1, kc0 + base + (size_t)p * D, D * 2) || memcmp(v1, vc0 + base + (size_t)p * D, D * 2))
                    out->others_untouched = 0;
                for (int d = 0; d < D; ++d) {
                    keys[(size_t)p * D + d] = mkg_shim_b(k1[d]);
                    vals[(size_t)p * D + d] = mkg_shim_b(v1[d]);
                }
                continue;
            }
            const uint16_t *row = qkv + (size_t)(p - pos0) * qkv_n;
            double x[64];
            for (int d = 0; d < D; ++d)
                x[d] = mkg_shim_b(row[(QH + g) * D + d]);
            mkg_shim_rope(x, keys + (size_t)p * D, p, c.rope_theta);
            for (int d = 0; d < D; ++d) {
                vals[(size_t)p * D + d] = mkg_shim_b(row[(QH + KVH + g) * D + d]);
                if (v1[d] != row[(QH + KVH + g) * D + d])
                    out->v_exact = 0;
                const double r = keys[(size_t)p * D + d];
                kmax = fmax(kmax, fabs(r));
                kdiff = fmax(kdiff, fabs(mkg_shim_b(k1[d]) - r));
            }
        }
        for (int h = g * G; h < (g + 1) * G; ++h)
            for (int t = 0; t < tokens; ++t) {
                const int p = pos0 + t;
                double q[64], qr[64], o[64] = {0}, mx = -INFINITY, sum = 0;
                for (int d = 0; d < D; ++d)
                    q[d] = mkg_shim_b(qkv[(size_t)t * qkv_n + h * D + d]);
                mkg_shim_rope(q, qr, p, c.rope_theta);
                for (int j = 0; j <= p; ++j) {
                    double s = 0;
                    for (int d = 0; d < D; ++d)
                        s += qr[d] * keys[(size_t)j * D + d];
                    w[j] = s / 8.0;
                    mx = fmax(mx, w[j]);
                }
                for (int j = 0; j <= p; ++j) {
                    w[j] = exp(w[j] - mx);
                    sum += w[j];
                }
                for (int j = 0; j <= p; ++j)
                    for (int d = 0; d < D; ++d)
                        o[d] += w[j] * vals[(size_t)j * D + d];
                for (int d = 0; d < D; ++d) {
                    const double r = o[d] / sum, a = mkg_shim_b(attn[((size_t)t * QH + h) * D + d]);
                    amax = fmax(amax, fabs(r));
                    adiff = isnan(a) ? INFINITY : fmax(adiff, fabs(a - r));
                }
            }
    }
    out->attn_err = amax > 0 ? adiff / amax : adiff;
    out->k_err = kmax > 0 ? kdiff / kmax : kdiff;
done:
    free(qkv);
    free(kc0);
    free(vc0);
    free(kc1);
    free(vc1);
    free(attn);
    free(keys);
    free(vals);
    free(w);
    mkg_model_destroy(&m);
    return e;
}
