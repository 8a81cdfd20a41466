/* mkg_mk_norm.cuh - RMSNorm of a few rows on a group of 256 threads, with one
 * canonical reduction order whatever the number of rows (batch invariance).
 *
 * The row's 16-byte chunks c = 0, 1, ... belong to virtual thread v = c % 256; v sums
 * its chunks in increasing c (8 elements each, fmaf in order); the 32 v of virtual warp
 * w = v / 32 are combined by an xor butterfly; the 8 warp sums are added w = 0, 1, ...
 * Fewer than 8 rows: every thread is one virtual thread of the current row (all 256
 * threads on one row, fast at decode batch 1). 8 rows or more: each warp takes a row and
 * each lane plays v = lane + 32 w for w = 0..7 (the row in registers where it is at most 256
 * chunks). All paths give the same bits.
 */
#ifndef MKG_MK_NORM_CUH
#define MKG_MK_NORM_CUH

#include "mkg_mk_ops.cuh"

// ss + the squares of one chunk's 8 elements, in order.
static __device__ __forceinline__ float mkg_norm_ss8(uint4 x, float ss)
{
    float f[8];
    mkg_op_unpack8(x, f);
#pragma unroll
    for (int i = 0; i < 8; ++i)
        ss = fmaf(f[i], f[i], ss);
    return ss;
}

// Partial sum of squares of virtual thread v of one row (x: the row, chunks = h / 8).
static __device__ __forceinline__ float mkg_norm_partial(const uint4 *x, int chunks, int v)
{
    float ss = 0.0f;
    for (int c = v; c < chunks; c += MKG_OP_THREADS)
        ss = mkg_norm_ss8(__ldcg(x + c), ss);
    return ss;
}

static __device__ __forceinline__ float mkg_norm_butterfly(float ss)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        ss += __shfl_xor_sync(0xFFFFFFFFu, ss, o);
    return ss;
}

// bf16(x * rs * g) of one chunk.
static __device__ __forceinline__ uint4 mkg_norm_scale8(uint4 x, uint4 g, float rs)
{
    float f[8], w[8];
    mkg_op_unpack8(x, f);
    mkg_op_unpack8(g, w);
#pragma unroll
    for (int i = 0; i < 8; ++i)
        f[i] = __fmul_rn(__fmul_rn(f[i], rs), w[i]);
    return mkg_op_pack8(f);
}

// y = bf16(x * rsqrt(mean(x^2) + eps) * g) for the chunks of virtual threads v0, v0 + step, ...
static __device__ __forceinline__ void mkg_norm_scale(const uint4 *x, const uint4 *g, uint4 *y, int chunks, int v0,
                                                      int step, float rs, bool dry)
{
    for (int c = v0; c < chunks; c += step) {
        const uint4 v = mkg_norm_scale8(__ldcg(x + c), __ldg(g + c), rs);
        if (!dry)
            y[c] = v;
    }
}

// Asks the L2 for the norm weight g (h bf16, 16-byte aligned), one request per 128-byte line,
// e.g. before the rows are ready.
static __device__ __forceinline__ void mkg_norm_prefetch_weight(const __nv_bfloat16 *g, int h, int tid)
{
    for (int c = 8 * tid; c < (h >> 3); c += 8 * MKG_OP_THREADS)
        mkg_prefetch_l2((const uint4 *)g + c);
}

// All 256 threads on one row: rsqrt(mean(x^2) + eps) from each warp's butterfly sum s, the
// 8 warp sums added w = 0, 1, ... (red: 8 floats of shared memory; a group barrier inside).
static __device__ __forceinline__ float mkg_norm_rs(float s, float *red, int warp, int lane, int h, float eps, int bar)
{
    if (lane == 0)
        red[warp] = s;
    mkg_bar_sync_any(bar, MKG_OP_THREADS);
    float ss = red[0];
#pragma unroll
    for (int w = 1; w < MKG_OP_THREADS / 32; ++w)
        ss += red[w];
    return rsqrtf(ss / (float)h + eps);
}

// Rows row0 .. row0+rows-1 of x (row stride h, a multiple of 8) into y. red: 8 floats
// of shared memory. Ends with a group barrier. dry: the same code without the stores of y
// (run before x is ready, to bring the instructions into the SM; see mkg_op_attention_decode).
static __device__ __forceinline__ void mkg_op_rmsnorm_rows(const __nv_bfloat16 *x, const __nv_bfloat16 *g,
                                                           __nv_bfloat16 *y, int row0, int rows, int h, float eps,
                                                           float *red, int tid, int bar, bool dry = false)
{
    const int warp = tid >> 5, lane = tid & 31, chunks = h >> 3;
    const uint4 *gw = (const uint4 *)g;
    if (rows < 8 && chunks <= MKG_OP_THREADS) {
        // One chunk per thread at most: the row stays in registers between the sum and the
        // scale (one L2 round trip instead of two); the same arithmetic as below.
        const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
        for (int r = 0; r < rows; ++r) {
            const uint4 *xr = (const uint4 *)(x + (size_t)(row0 + r) * h);
            const uint4 xv = tid < chunks ? __ldcg(xr + tid) : zero;
            const uint4 gv = tid < chunks ? __ldg(gw + tid) : zero;
            const float rs = mkg_norm_rs(mkg_norm_butterfly(tid < chunks ? mkg_norm_ss8(xv, 0.0f) : 0.0f), red,
                                         warp, lane, h, eps, bar);
            const uint4 yv = mkg_norm_scale8(xv, gv, rs);
            if (tid < chunks && !dry)
                ((uint4 *)(y + (size_t)(row0 + r) * h))[tid] = yv;
            mkg_bar_sync_any(bar, MKG_OP_THREADS);          // red is reused by the next row
        }
    } else if (rows < 8) {
        for (int r = 0; r < rows; ++r) {
            const uint4 *xr = (const uint4 *)(x + (size_t)(row0 + r) * h);
            const float rs = mkg_norm_rs(mkg_norm_butterfly(mkg_norm_partial(xr, chunks, tid)), red, warp, lane, h,
                                         eps, bar);
            mkg_norm_scale(xr, gw, (uint4 *)(y + (size_t)(row0 + r) * h), chunks, tid, MKG_OP_THREADS, rs, dry);
            mkg_bar_sync_any(bar, MKG_OP_THREADS);          // red is reused by the next row
        }
    } else if (chunks <= MKG_OP_THREADS) {
        // 8 rows or more, at most one chunk per virtual thread: a warp per row, lane l holding
        // chunks l + 32 w (w = 0..7) of its row and of g in registers, so a row costs one L2
        // round trip, and the next row's loads go out before this row's arithmetic (the loop
        // below reloads x and stores chunk by chunk: ~9 round trips a row; decode batch 64 took
        // ~24 us less a norm this way, bench/NOTES.md v98). The same arithmetic as below.
        constexpr int W = MKG_OP_THREADS / 32;
        const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
        uint4 gv[W], xv[W], xn[W];
#pragma unroll
        for (int w = 0; w < W; ++w) {
            const int c = lane + 32 * w;
            gv[w] = c < chunks ? __ldg(gw + c) : zero;
            xv[w] = c < chunks && warp < rows ? __ldcg((const uint4 *)(x + (size_t)(row0 + warp) * h) + c) : zero;
        }
        for (int r = warp; r < rows; r += W) {
            const bool next = r + W < rows;
#pragma unroll
            for (int w = 0; w < W; ++w) {
                const int c = lane + 32 * w;
                xn[w] = c < chunks && next ? __ldcg((const uint4 *)(x + (size_t)(row0 + r + W) * h) + c) : zero;
            }
            float ss = 0.0f;
#pragma unroll
            for (int w = 0; w < W; ++w) {
                const float s = mkg_norm_butterfly(lane + 32 * w < chunks ? mkg_norm_ss8(xv[w], 0.0f) : 0.0f);
                ss = w == 0 ? s : ss + s;
            }
            const float rs = rsqrtf(ss / (float)h + eps);
            uint4 *yr = (uint4 *)(y + (size_t)(row0 + r) * h);
#pragma unroll
            for (int w = 0; w < W; ++w) {
                const int c = lane + 32 * w;
                if (c < chunks && !dry)
                    yr[c] = mkg_norm_scale8(xv[w], gv[w], rs);
                xv[w] = xn[w];
            }
        }
        mkg_bar_sync_any(bar, MKG_OP_THREADS);
    } else {
        for (int r = warp; r < rows; r += MKG_OP_THREADS / 32) {
            const uint4 *xr = (const uint4 *)(x + (size_t)(row0 + r) * h);
            float ss = 0.0f;
#pragma unroll
            for (int w = 0; w < MKG_OP_THREADS / 32; ++w) {
                const float s = mkg_norm_butterfly(mkg_norm_partial(xr, chunks, lane + 32 * w));
                ss = w == 0 ? s : ss + s;
            }
            const float rs = rsqrtf(ss / (float)h + eps);
            mkg_norm_scale(xr, gw, (uint4 *)(y + (size_t)(row0 + r) * h), chunks, lane, 32, rs, dry);
        }
        mkg_bar_sync_any(bar, MKG_OP_THREADS);
    }
}

#endif /* MKG_MK_NORM_CUH */
