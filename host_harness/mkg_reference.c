/* mkg_reference.c - host element conversions and the CPU FP64 reference GEMM.
 *
 * The reference reads the exact 16-bit inputs, widens them to double and sums in
 * increasing k; with |A|, |B| <= 1 and K <= 2^20 its own error is far below any
 * tolerance used against it.
 */
#include <math.h>
#include <string.h>

#include "mkg_harness.h"

float mkg_bf16_bits_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t mkg_float_to_bf16_bits(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu))
        return (uint16_t)((u >> 16) | 0x0040u);             /* quiet NaN */
    u += 0x7FFFu + ((u >> 16) & 1u);                         /* round to nearest even */
    return (uint16_t)(u >> 16);
}

float mkg_fp16_bits_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1Fu;
    const uint32_t man = h & 0x3FFu;
    float f;
    if (exp == 0x1F) {
        uint32_t u = sign | 0x7F800000u | (man << 13);
        memcpy(&f, &u, sizeof f);
        return f;
    }
    if (exp == 0) {
        f = ldexpf((float)man, -24);                         /* subnormal or zero */
        return sign ? -f : f;
    }
    uint32_t u = sign | ((exp + 112u) << 23) | (man << 13);
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t mkg_float_to_fp16_bits(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const float a = fabsf(v);
    if (isnan(v))
        return (uint16_t)(sign | 0x7E00u);
    if (a >= 65520.0f)                                       /* rounds to infinity */
        return (uint16_t)(sign | 0x7C00u);
    if (a < 6.103515625e-05f) {                              /* subnormal range: units of 2^-24 */
        const float q = nearbyintf(a * 16777216.0f);         /* default mode: nearest even */
        return (uint16_t)(sign | (uint16_t)q);
    }
    int e;
    const float fr = frexpf(a, &e);                          /* a = fr * 2^e, fr in [0.5, 1) */
    float mant = nearbyintf(fr * 2048.0f);                   /* 11 significant bits */
    if (mant >= 2048.0f) {
        mant = 1024.0f;
        ++e;
    }
    const uint32_t exp = (uint32_t)(e - 1 + 15);
    if (exp >= 31)
        return (uint16_t)(sign | 0x7C00u);
    return (uint16_t)(sign | (exp << 10) | ((uint32_t)mant - 1024u));
}

/* OCP FP8 e4m3: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities, S.1111.111 is NaN. */
float mkg_e4m3_bits_to_float(uint8_t b)
{
    const int e = (b >> 3) & 15, m = b & 7;
    float v;
    if (e == 15 && m == 7)
        v = NAN;
    else if (e == 0)
        v = ldexpf((float)m, -9);                       /* subnormal: m / 8 * 2^-6 */
    else
        v = ldexpf(1.0f + (float)m / 8.0f, e - 7);
    return (b & 0x80) ? -v : v;
}

/* Nearest e4m3 value, ties to even mantissa, saturating to +-448 (as the device fill's
 * __nv_fp8_e4m3(float) conversion); NaN -> 0x7f. A search over the 127 finite codes. */
uint8_t mkg_float_to_e4m3_bits(float v)
{
    if (isnan(v))
        return 0x7f;
    const uint8_t sign = signbit(v) ? 0x80 : 0x00;
    const float a = fabsf(v);
    uint8_t best = 0;
    float best_d = INFINITY;
    for (int c = 0; c < 0x7f; ++c) {
        const float d = fabsf(mkg_e4m3_bits_to_float((uint8_t)c) - a);
        if (d < best_d || (d == best_d && (c & 1) == 0)) {
            best = (uint8_t)c;
            best_d = d;
        }
    }
    return (uint8_t)(sign | best);
}

float mkg_load_float(const void *p, mkg_dtype t, size_t idx)
{
    switch (t) {
    case MKG_DTYPE_BF16: return mkg_bf16_bits_to_float(((const uint16_t *)p)[idx]);
    case MKG_DTYPE_FP16: return mkg_fp16_bits_to_float(((const uint16_t *)p)[idx]);
    case MKG_DTYPE_E4M3: return mkg_e4m3_bits_to_float(((const uint8_t *)p)[idx]);
    default:             return ((const float *)p)[idx];
    }
}

void mkg_store_float(void *p, mkg_dtype t, size_t idx, float v)
{
    switch (t) {
    case MKG_DTYPE_BF16: ((uint16_t *)p)[idx] = mkg_float_to_bf16_bits(v); break;
    case MKG_DTYPE_FP16: ((uint16_t *)p)[idx] = mkg_float_to_fp16_bits(v); break;
    case MKG_DTYPE_E4M3: ((uint8_t *)p)[idx] = mkg_float_to_e4m3_bits(v); break;
    default:             ((float *)p)[idx] = v; break;
    }
}

void mkg_ref_gemm_cpu(const void *a, const void *b, mkg_dtype in, int m, int n, int k, long long lda,
                      long long ldb, double *r, long long ldr)
{
    for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
            double acc = 0.0;
            for (int kk = 0; kk < k; ++kk)
                acc += (double)mkg_load_float(a, in, (size_t)i * (size_t)lda + (size_t)kk) *
                       (double)mkg_load_float(b, in, (size_t)j * (size_t)ldb + (size_t)kk);
            r[(size_t)i * (size_t)ldr + (size_t)j] = acc;
        }
    }
}
