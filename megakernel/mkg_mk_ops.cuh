/* mkg_mk_ops.cuh - the non-GEMM ops of the sample model step (mkg_model.h) as device
 * functions of a 256-thread group: RMSNorm, RoPE, decode attention over the KV cache, causal
 * prefill attention (both on tensor cores, mma.sync). The megakernel runs them as tasks; the reference path
 * (mkg_reference_model.cu) wraps each in a plain kernel, so both run the same code.
 *
 * Group contract: all 256 threads call an op with their tid (0..255, tid % 32 = lane) and the
 * group's named barrier; ops sync only through mkg_bar_sync_any(bar, 256) and end with one, so on
 * return the group's global writes are issued and scratch (<= 32 KB) is free. Activations
 * (x, qkv) are read bypassing L1 (other SMs write them in the same launch). bf16 storage,
 * FP32 math, fixed reduction orders.
 */
#ifndef MKG_MK_OPS_CUH
#define MKG_MK_OPS_CUH

#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

#include "mkg_model.h"
#include "mkg_ptx_sm90.cuh"
#include "mkg_deps_sm90.cuh"

#define MKG_OP_THREADS 256
#define MKG_OP_HEAD_DIM 64      /* the ops are written for head_dim 64 (RoPE pairs i, i + 32) */
#define MKG_OP_MAX_GROUP 4      /* at most 4 query heads per KV head */
#define MKG_OP_LOG2E 1.4426950408889634f

/* Scratch of each op (bytes); rmsnorm needs none. */
#define MKG_OP_DECODE_SCRATCH_BYTES 9744   /* q 1 KB + current k, v 256 B + 8 warp partials 8.5 KB + flag */
#define MKG_OP_PREFILL_SCRATCH_BYTES 24704 /* q table 16 KB / two bf16 K, V tiles 16 KB, frequencies */

static_assert(MKG_OP_DECODE_SCRATCH_BYTES <= 32768, "decode scratch over 32 KB");
static_assert(MKG_OP_PREFILL_SCRATCH_BYTES <= 32768, "prefill scratch over 32 KB");

// ---- bf16 packing ------------------------------------------------------------------------

/* 8 bf16 (one 16-byte load) to FP32; element 2k sits in the low half of word k. Exact. */
static __device__ __forceinline__ void mkg_op_unpack8(uint4 u, float f[8])
{
    f[0] = __uint_as_float(u.x << 16);
    f[1] = __uint_as_float(u.x & 0xFFFF0000u);
    f[2] = __uint_as_float(u.y << 16);
    f[3] = __uint_as_float(u.y & 0xFFFF0000u);
    f[4] = __uint_as_float(u.z << 16);
    f[5] = __uint_as_float(u.z & 0xFFFF0000u);
    f[6] = __uint_as_float(u.w << 16);
    f[7] = __uint_as_float(u.w & 0xFFFF0000u);
}

static __device__ __forceinline__ unsigned int mkg_op_pack2(float lo, float hi)
{
    return (unsigned int)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
           ((unsigned int)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16);
}

static __device__ __forceinline__ uint4 mkg_op_pack8(const float f[8])
{
    uint4 u;
    u.x = mkg_op_pack2(f[0], f[1]);
    u.y = mkg_op_pack2(f[2], f[3]);
    u.z = mkg_op_pack2(f[4], f[5]);
    u.w = mkg_op_pack2(f[6], f[7]);
    return u;
}

static __device__ __forceinline__ float mkg_op_round_bf16(float v)
{
    return __bfloat162float(__float2bfloat16_rn(v));
}

/* Element offset of (layer, seq, kv head, position 0) in k_cache / v_cache: the device twin of
 * mkg_model_cache_at (head_dim 64). */
static __device__ __forceinline__ size_t mkg_op_cache_base(const mkg_model_config *c, int layer, int seq, int head)
{
    return (((size_t)layer * c->max_batch + seq) * c->kv_heads + head) * (size_t)c->max_ctx * MKG_OP_HEAD_DIM;
}

// ---- RMSNorm -----------------------------------------------------------------------------

// x, y are (rows, h) bf16 at row stride h, g is (h): for r in row0 .. row0+rows-1,
// RMSNorm lives in mkg_mk_norm.cuh (one reduction order for any number of rows).

// ---- RoPE (Llama / HF rotate-half, head_dim 64) ------------------------------------------

/* cos and sin of pos * theta^(-2i/64) for pair i (< 32). */
static __device__ __forceinline__ float mkg_op_rope_inv_freq(int i, float theta)
{
    return powf(theta, -(float)(2 * i) / 64.0f);
}

/* cos and sin of pos * inv_freq (inv_freq from mkg_op_rope_inv_freq: the same bits as
 * mkg_op_rope_cs). */
static __device__ __forceinline__ void mkg_op_rope_cs_freq(int pos, float inv_freq, float *c, float *s)
{
    const float angle = (float)pos * inv_freq;
    *c = cosf(angle);
    *s = sinf(angle);
}

static __device__ __forceinline__ void mkg_op_rope_cs(int pos, int i, float theta, float *c, float *s)
{
    mkg_op_rope_cs_freq(pos, mkg_op_rope_inv_freq(i, theta), c, s);
}

/* Rotates pair (x0 = x[i], x1 = x[i + 32]): o0 = x0 c - x1 s, o1 = x1 c + x0 s. The products are
 * rounded before the fused add in a fixed way, so every caller gets the same bits. */
static __device__ __forceinline__ void mkg_op_rope_pair(float x0, float x1, float c, float s, float *o0, float *o1)
{
    *o0 = fmaf(x0, c, -__fmul_rn(x1, s));
    *o1 = fmaf(x1, c, __fmul_rn(x0, s));
}

// ---- decode attention --------------------------------------------------------------------

// Tensor-core helpers of the decode op (PTX ISA: warp-level matrix instructions, mma.sync
// m16n8k16 .bf16 with FP32 accumulation, and movmatrix). Fragments, for lane = 4 gid + tig:
//   A (16 x 16, row):  reg 0 (row gid, cols 2 tig, 2 tig + 1), reg 1 (row gid + 8, same cols),
//                      reg 2 (row gid, cols 2 tig + 8, + 9), reg 3 (row gid + 8, cols + 8)
//   B (16 x 8, col):   reg 0 (rows 2 tig, 2 tig + 1, col gid), reg 1 (rows + 8)
//   C (16 x 8, FP32):  c0, c1 (row gid, cols 2 tig, 2 tig + 1), c2, c3 (row gid + 8)
// A register holds its two bf16 in order: the lower column (A) or row (B) in the low half.
static __device__ __forceinline__ void mkg_op_mma_bf16(float d[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                                       uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* Transposes an 8 x 8 bf16 matrix held in the C / A-row layout (lane: row gid, cols 2 tig,
 * 2 tig + 1): afterwards the lane holds rows 2 tig, 2 tig + 1 of column gid. */
static __device__ __forceinline__ uint32_t mkg_op_movmatrix_trans(uint32_t x)
{
    uint32_t y;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(y) : "r"(x));
    return y;
}

static __device__ __forceinline__ uint32_t mkg_op_word(uint4 u, int i)   // i a constant after unrolling
{
    return i == 0 ? u.x : i == 1 ? u.y : i == 2 ? u.z : u.w;
}

/* bf16x2 of (a, b) (a in the low half) when lo == 0; else of the remainders a - bf16(a),
 * b - bf16(b) (exact in FP32), so hi + lo carries a and b to about 2^-17 relative. */
static __device__ __forceinline__ uint32_t mkg_op_split_pack(float a, float b, bool lo)
{
    const uint32_t h = mkg_op_pack2(a, b);
    const uint32_t r = mkg_op_pack2(a - __uint_as_float(h << 16), b - __uint_as_float(h & 0xFFFF0000u));
    return lo ? r : h;
}

#define MKG_OP_DECODE_DEPTH 3   /* key blocks (16 positions) in flight per warp, in registers */
#define MKG_OP_PREFETCH_ROWS 256 /* cache rows (32 KB) of one L2 prefetch request of decode attention */

/* Asks for [p, p + bytes) to be brought into L2 (cp.async.bulk.prefetch, sm_90): a hint that
 * holds no register and no shared memory; p 16-byte aligned, bytes a multiple of 16. */
static __device__ __forceinline__ void mkg_op_prefetch_l2(const void *p, uint32_t bytes)
{
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}

// One key block of 16 positions r0 .. r0 + 15 (r0 = 16 blk) in a lane's registers
// (gid = lane >> 2, tig = lane & 3; chunk c of a row = its 16 bytes 16 c .. 16 c + 15):
//   k[0], k[1]: row r0 + gid, chunks tig, tig + 4     k[2], k[3]: row r0 + gid + 8, same chunks
//   v[0], v[1]: rows r0 + 2 tig, r0 + 2 tig + 1, chunk gid    v[2], v[3]: rows + 8
// so every load instruction of the warp covers whole 32-byte sectors.
struct mkg_op_kv16 {
    uint4 k[4];
    uint4 v[4];
};

// Issues the loads of block blk into *b (zeros when blk >= blk_end: nothing is read). With
// kl = kc + 8 gid + tig, vl = vc + 16 tig + gid (the lane's uint4 of block 0): cache rows < pos
// by __ldg (written by earlier launches); row pos from scratch (this op's k, v; called after
// the barrier that publishes them); rows > pos zeros (masked; V must stay finite: p = 0 times
// NaN would be NaN).
// NOTE: predicated loads, no branches around them: with a uniform fast path and a patch of
// row pos at consume time, ptxas spilled the in-flight blocks inside the megakernel's item
// function (this form: no spills there).
static __device__ __forceinline__ void mkg_op_decode_load(mkg_op_kv16 *b, const uint4 *kl, const uint4 *vl, int blk,
                                                          int blk_end, int pos, const uint4 *s_k4, const uint4 *s_v4,
                                                          int gid, int tig)
{
    const uint32_t off = (uint32_t)blk * 128u;   // 128 uint4 (16 rows) a block
    const uint4 *kp = kl + off, *vp = vl + off;
    const int lim = blk < blk_end ? pos : -1;    // rows < lim come from the cache
    const int rk = 16 * blk + gid, rv = 16 * blk + 2 * tig;
    const int kr[4] = {rk, rk, rk + 8, rk + 8}, ko[4] = {0, 4, 64, 68};
    const int vr[4] = {rv, rv + 1, rv + 8, rv + 9}, vo[4] = {0, 8, 64, 72};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        uint4 x = make_uint4(0, 0, 0, 0), y = make_uint4(0, 0, 0, 0);
        if (kr[i] < lim)
            x = __ldg(kp + ko[i]);
        if (vr[i] < lim)
            y = __ldg(vp + vo[i]);
        b->k[i] = x;
        b->v[i] = y;
    }
    if (16 * blk + 15 >= pos && blk < blk_end) {   // warp-uniform: the block holding pos
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            if (kr[i] == pos)
                b->k[i] = s_k4[tig + 4 * (i & 1)];
            if (vr[i] == pos)
                b->v[i] = s_v4[gid];
        }
    }
}

/* 2^x by ex2.approx.ftz (one MUFU op; exp2f adds a subnormal range fix-up): 2^-inf = +0. */
static __device__ __forceinline__ float mkg_op_ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// Consumes block blk of a warp: scores S = K Q^T (rows = positions; Q^T column n < 4 is
// bf16(q of head n), column 4 + n the remainder q - bf16(q), so S[., n] + S[., n + 4] is the
// score of head n), online softmax (log2 domain) per head, then O^T += V^T P^T with P^T split
// the same way (column n: bf16(p), column 4 + n: the remainder).
//   qb[s]   Q^T fragments of k-step s (dims of k-step s for tig: see mkg_op_attention_decode)
//   acc[i]  O^T m-tile i: rows gid, gid + 8 = dims 8 gid + 2 i, 8 gid + 2 i + 1; cols 2 tig,
//           2 tig + 1 (heads 2 (tig & 1), + 1; bf16 part when tig < 2, remainder part else)
//   m, l    running max and (lane-partial) denominator of heads 2 (tig & 1), + 1
static __device__ __forceinline__ void mkg_op_decode_block(const mkg_op_kv16 *b, int blk, int pos,
                                                           const uint32_t qb[4][2], float acc[4][4], float m[2],
                                                           float l[2], int gid, int tig)
{
    const int r0 = 16 * blk;

    // ---- scores: k-step s covers dims 8 tig + 32 (s >> 1) + 4 (s & 1) + {0, 1} (A reg 0, 1) and
    // + {2, 3} (A reg 2, 3): words 2 (s & 1), 2 (s & 1) + 1 of chunk tig + 4 (s >> 1). Two
    // independent chains (k-steps 0, 1 and 2, 3), added in that order.
    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f}, c2[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int s = 0; s < 4; ++s) {
        const uint4 lo = b->k[s >> 1], hi = b->k[2 + (s >> 1)];
        const int w = 2 * (s & 1);
        if (s < 2)
            mkg_op_mma_bf16(c, mkg_op_word(lo, w), mkg_op_word(hi, w), mkg_op_word(lo, w + 1), mkg_op_word(hi, w + 1),
                            qb[s][0], qb[s][1]);
        else
            mkg_op_mma_bf16(c2, mkg_op_word(lo, w), mkg_op_word(hi, w), mkg_op_word(lo, w + 1), mkg_op_word(hi, w + 1),
                            qb[s][0], qb[s][1]);
    }
    // sc[e]: head 2 (tig & 1) + (e & 1), position r0 + gid + 8 (e >> 1); the bf16 and
    // remainder parts sit in lanes tig, tig ^ 2 (the sum is bit-identical in both).
    float sc[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        const float a = c[e] + c2[e];
        sc[e] = a + __shfl_xor_sync(0xFFFFFFFFu, a, 2);
    }
    if (r0 + 15 > pos) {   // warp-uniform: mask positions past pos
#pragma unroll
        for (int e = 0; e < 4; ++e)
            if (r0 + gid + 8 * (e >> 1) > pos)
                sc[e] = -INFINITY;
    }

    // ---- online softmax per head (block max over the 16 positions: rows, then xor over gid).
    float al[2];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        float mx = fmaxf(sc[j], sc[j + 2]);
        mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 4));
        mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 8));
        mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 16));
        const float mn = fmaxf(m[j], mx);   // row r0 <= pos: finite
        al[j] = mkg_op_ex2(m[j] - mn);
        m[j] = mn;
    }
    float p[4];
#pragma unroll
    for (int e = 0; e < 4; ++e)
        p[e] = mkg_op_ex2(sc[e] - m[e & 1]);   // masked: 2^-inf = 0
#pragma unroll
    for (int j = 0; j < 2; ++j)
        l[j] = fmaf(l[j], al[j], p[j]) + p[j + 2];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e)
            acc[i][e] *= al[e & 1];

    // ---- P^T (16 positions x 8 columns) as the B fragment: the scores' C layout, packed, is
    // the A-row layout of two 8 x 8 tiles (positions 0-7, 8-15); movmatrix transposes each.
    const bool lo = tig >= 2;
    const uint32_t pb0 = mkg_op_movmatrix_trans(mkg_op_split_pack(p[0], p[1], lo));
    const uint32_t pb1 = mkg_op_movmatrix_trans(mkg_op_split_pack(p[2], p[3], lo));

    // ---- O^T += V^T P^T: m-tile i, row gid = dim 8 gid + 2 i, row gid + 8 = dim 8 gid + 2 i + 1
    // (the low / high halves of word i of chunk gid); k = positions 2 tig, 2 tig + 1 (v[0],
    // v[1]) and + 8, + 9 (v[2], v[3]).
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const uint32_t x0 = mkg_op_word(b->v[0], i), x1 = mkg_op_word(b->v[1], i);
        const uint32_t x2 = mkg_op_word(b->v[2], i), x3 = mkg_op_word(b->v[3], i);
        mkg_op_mma_bf16(acc[i], __byte_perm(x0, x1, 0x5410), __byte_perm(x0, x1, 0x7632), __byte_perm(x2, x3, 0x5410),
                        __byte_perm(x2, x3, 0x7632), pb0, pb1);
    }
}

// ---- decode attention's canonical split --------------------------------------------------
//
// The nb = ceil((pos + 1) / 16) key blocks of one (token, KV head) are cut into
// MKG_OP_DECODE_RANGES contiguous ranges, range v = blocks [v nb / 64, (v + 1) nb / 64), and the
// ranges into MKG_OP_DECODE_GROUPS groups of 8 (group g = ranges 8 g .. 8 g + 7 = blocks
// [g nb / 8, (g + 1) nb / 8)). A range is one warp's online softmax over its blocks, from
// (m, l, o) = (-1e30, 0, 0). The result is a fold of folds: each group folds its non-empty ranges
// in order, then the non-empty groups are folded in order, both starting from (-1e30, 0, 0), and
// out = o / l. Every fold is mkg_op_fold, so the bits depend on the inputs and pos only, never on
// which CTA or warp ran a range: one CTA may run a whole item (part -1: warp w runs group w's
// ranges one after another) or 8 CTAs one group each (part = the group: warp w runs range
// 8 part + w), and both give the same bits (Megakernel.LogitsAreBatchInvariant: batch 1 splits,
// batch 8 does not).
#define MKG_OP_DECODE_GROUPS 8
#define MKG_OP_DECODE_RANGES (MKG_OP_DECODE_GROUPS * 8)
static_assert(MKG_OP_THREADS / 32 == MKG_OP_DECODE_GROUPS && MKG_OP_DECODE_RANGES == 8 * MKG_OP_DECODE_GROUPS,
              "decode attention: one warp per group (part -1) and per range of a group (part >= 0)");
/* Workspace of one split item (floats): o (groups, 4 heads, 64), then m (groups, 4), l (groups, 4). */
#define MKG_OP_DECODE_WS_FLOATS (MKG_OP_DECODE_GROUPS * MKG_OP_MAX_GROUP * (MKG_OP_HEAD_DIM + 2))

// Blocks [*b0, *b1) of warp `warp`: group `warp` (part < 0) or range 8 part + warp.
static __device__ __forceinline__ void mkg_op_decode_span(int nb, int part, int warp, int *b0, int *b1)
{
    if (part < 0) {
        *b0 = (warp * nb) / MKG_OP_DECODE_GROUPS;
        *b1 = ((warp + 1) * nb) / MKG_OP_DECODE_GROUPS;
    } else {
        const int v = 8 * part + warp;
        *b0 = (v * nb) / MKG_OP_DECODE_RANGES;
        *b1 = ((v + 1) * nb) / MKG_OP_DECODE_RANGES;
    }
}

// Folds the partial (m, l) into the running (*M, *L) and returns the weights of the running and
// the new o (o' = mkg_op_fold_o(o, a, o_new, b)). Rounding pinned (fmaf, __fmul_rn, ex2.approx):
// every fold of the op runs this code, in registers or from memory.
static __device__ __forceinline__ void mkg_op_fold(float *M, float *L, float m, float l, float *a, float *b)
{
    const float mn = fmaxf(*M, m);
    *a = mkg_op_ex2(*M - mn);
    *b = mkg_op_ex2(m - mn);
    *L = fmaf(*L, *a, __fmul_rn(l, *b));
    *M = mn;
}

static __device__ __forceinline__ float mkg_op_fold_o(float o, float a, float o_new, float b)
{
    return fmaf(o, a, __fmul_rn(o_new, b));
}

// Step 0 of mkg_op_attention_decode, callable on its own (before the item's input is
// ready: the cache rows < pos were written by earlier launches): thread tid's warp asks for
// its blocks' cache rows (mkg_op_decode_span of part) to be brought into L2. The rows of a span
// are contiguous in each cache, so lanes 0..15 ask for k and lanes 16..31 for v, in pieces of
// MKG_OP_PREFETCH_ROWS rows (one piece each at decode's usual contexts).
// NOTE: a hint, not loads into registers: registers live across the RoPE code (its trig
// slow path) made ptxas spill them inside the megakernel's item function.
// NOTE: few, large requests (v121 in bench/NOTES.md): one 2 KB request per block and cache kept
// the warps of a decode batch-64 item issuing for ~5 us before their wait.
static __device__ __forceinline__ void mkg_op_attention_decode_prefetch(const mkg_model_config *cfg, int layer,
                                                                        int seq, int pos, int g,
                                                                        const __nv_bfloat16 *k_cache,
                                                                        const __nv_bfloat16 *v_cache, int tid,
                                                                        int part = -1)
{
    const size_t cbase = mkg_op_cache_base(cfg, layer, seq, g);
    const int warp = tid >> 5, lane = tid & 31;
    const int nb = (pos + 16) >> 4;
    int blk0, blk1;
    mkg_op_decode_span(nb, part, warp, &blk0, &blk1);
    const int r0 = 16 * blk0, rows = min(16 * blk1, pos) - r0;   // cache rows r0 .. r0 + rows - 1
    const __nv_bfloat16 *src = (lane < 16 ? k_cache : v_cache) + cbase + (size_t)r0 * 64;
    for (int j = lane & 15; j * MKG_OP_PREFETCH_ROWS < rows; j += 16)
        mkg_op_prefetch_l2(src + (size_t)j * MKG_OP_PREFETCH_ROWS * 64,
                           (uint32_t)min(MKG_OP_PREFETCH_ROWS, rows - j * MKG_OP_PREFETCH_ROWS) * 128u);
}

// A range's partial completed in place: l summed over gid (xor 4, 8, 16), O = bf16 part +
// remainder part (xor 2, bit-identical in both lanes).
static __device__ __forceinline__ void mkg_op_decode_complete(float acc[4][4], float l[2])
{
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        l[j] += __shfl_xor_sync(0xFFFFFFFFu, l[j], 4);
        l[j] += __shfl_xor_sync(0xFFFFFFFFu, l[j], 8);
        l[j] += __shfl_xor_sync(0xFFFFFFFFu, l[j], 16);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e)
            acc[i][e] += __shfl_xor_sync(0xFFFFFFFFu, acc[i][e], 2);
}

// The last fold (over groups) and the store (st = false: the fold only, for a dry pass), by
// thread (h = tid / 64, d = tid % 64), h < G:
// group partials at o[(grp 4 + h) 64 + d], m[grp 4 + h], l[grp 4 + h] (shared memory, or the
// workspace: CG = true reads bypass L1, written by other CTAs in this launch).
template <bool CG>
static __device__ __forceinline__ void mkg_op_decode_final(const float *o, const float *m, const float *l, int nb,
                                                           int h, int d, __nv_bfloat16 *dst, bool st = true)
{
    // NOTE: every group's values are loaded before the first fold, so the workspace reads go out
    // together (one L2 round trip for the CTA that folds, not one per group).
    float gm[MKG_OP_DECODE_GROUPS], gl[MKG_OP_DECODE_GROUPS], go[MKG_OP_DECODE_GROUPS];
#pragma unroll
    for (int grp = 0; grp < MKG_OP_DECODE_GROUPS; ++grp) {
        const int i = grp * MKG_OP_MAX_GROUP + h;
        gm[grp] = CG ? __ldcg(m + i) : m[i];
        gl[grp] = CG ? __ldcg(l + i) : l[i];
        go[grp] = CG ? __ldcg(o + i * MKG_OP_HEAD_DIM + d) : o[i * MKG_OP_HEAD_DIM + d];
    }
    float M = -1e30f, L = 0.0f, O = 0.0f;
#pragma unroll
    for (int grp = 0; grp < MKG_OP_DECODE_GROUPS; ++grp) {
        if ((grp * nb) / MKG_OP_DECODE_GROUPS == ((grp + 1) * nb) / MKG_OP_DECODE_GROUPS)
            continue;                                         // an empty group
        float a, b;
        mkg_op_fold(&M, &L, gm[grp], gl[grp], &a, &b);
        O = mkg_op_fold_o(O, a, go[grp], b);
    }
    const __nv_bfloat16 y = __float2bfloat16_rn(O * (1.0f / L));
    if (st)
        *dst = y;
}

// One token (row tok of qkv and attn) of sequence seq at position pos, KV head g and its
// G = q_heads / kv_heads query heads g G .. g G + G - 1 (G <= 4).
//   qkv  (tokens, (QH + 2 KVH) 64)  q head h at column 64 h, k head g at 64 (QH + g),
//                                   v head g at 64 (QH + KVH + g)
//   attn (tokens, QH 64)            output head h at column 64 h
//   k_cache, v_cache (layers, max_batch, KVH, max_ctx, 64)
// Writes the rotated k (bf16) and v of this token at (layer, seq, g, pos), then
// attn = softmax(q k^T / 8) v over positions 0 .. pos; key pos is this op's own k and v (from
// scratch), keys < pos come from the cache (written by earlier launches, __ldg).
//
// Work split: see "decode attention's canonical split" above. part -1: this CTA runs the whole
// item; part 0..7: group `part` only, into ws (MKG_OP_DECODE_WS_FLOATS, this item's), and the
// last of the item's 8 CTAs to arrive on *ctr (zero before the step; a counter per item and
// layer) folds the groups and stores attn. Every part rotates q and k (part <= 0 writes the
// cache row). Returns true where this call stored attn (the same on every thread).
// Before the q / k rotation every warp asks for its cache rows to be prefetched into L2 (bulk
// prefetch: no registers; prefetched = true: the caller did it already,
// mkg_op_attention_decode_prefetch, e.g. before the qkv row was ready; phase: thread 0 stamps
// the ends of steps 1, 4 and 5 there, for a timeline; rope_cs: this thread's RoPE cos / sin of
// pos, computed by the caller, e.g. before the wait), so HBM latency overlaps the prologue and
// the whole range streams at once; the warp then keeps MKG_OP_DECODE_DEPTH blocks in flight in
// registers (a ring: a block's registers are reloaded with block + DEPTH once consumed; mostly
// L2 hits by then). Per block, tensor cores (mma.sync bf16, FP32 accumulation) compute the
// scores of 16 positions x 4 heads and add P V into the warp's O^T (64 dims x 4 heads); q and p
// enter as bf16 plus a bf16 remainder (the 4 spare columns of the n = 8 operand), so they carry
// ~16 significant bits (FP32 math otherwise). Online softmax per range in the log2 domain. No
// value is combined by a racing atomic: the counter only elects the CTA that folds.
//
// dry: the same code with every global store, the cache append and the counter left out (the
// reads go on, of whatever is there): run before the item's input is ready, it brings the op's
// instructions into the SM's instruction cache, out of which the GEMM code run in between has
// pushed them (pass phase = nullptr). Scratch is left undefined.
//
// Scratch (MKG_OP_DECODE_SCRATCH_BYTES):
//   [0, 1024)     q    (4, 64) FP32, rotated, times 0.125 log2(e)
//   [1024, 1152)  k    (64) bf16, rotated, this token's
//   [1152, 1280)  v    (64) bf16, this token's
//   [1280, 1408)  m    (8 warps, 4) FP32 max (log2 domain) of each warp's partial: its range
//                      (part >= 0) or its group's fold (part < 0)
//   [1408, 1536)  l    (8, 4) FP32 softmax denominators of the same partials
//   [1536, 9728)  o    (8, 4, 64) FP32 unnormalised outputs of the same partials
//   [9728, 9732)  the "last to arrive" flag (split parts)
static __device__ __forceinline__ bool mkg_op_attention_decode(const mkg_model_config *cfg, int layer,
                                                               const __nv_bfloat16 *qkv, int tok, int seq, int pos,
                                                               int g, __nv_bfloat16 *k_cache,
                                                               __nv_bfloat16 *v_cache, __nv_bfloat16 *attn,
                                                               unsigned char *scratch, int tid, int bar,
                                                               bool prefetched = false,
                                                               volatile unsigned long long *phase = nullptr,
                                                               const float2 *rope_cs = nullptr, int part = -1,
                                                               float *ws = nullptr, unsigned int *ctr = nullptr,
                                                               bool dry = false)
{
    const int G = cfg->q_heads / cfg->kv_heads;
    const int qkv_n = (cfg->q_heads + 2 * cfg->kv_heads) * MKG_OP_HEAD_DIM;
    const float theta = cfg->rope_theta;
    float *s_q = (float *)scratch;
    __nv_bfloat16 *s_k = (__nv_bfloat16 *)(scratch + 1024);
    __nv_bfloat16 *s_v = (__nv_bfloat16 *)(scratch + 1152);
    float *s_m = (float *)(scratch + 1280);
    float *s_l = (float *)(scratch + 1408);
    float *s_o = (float *)(scratch + 1536);
    volatile unsigned int *s_last = (volatile unsigned int *)(scratch + 9728);
    const __nv_bfloat16 *row = qkv + (size_t)tok * qkv_n;
    const size_t cbase = mkg_op_cache_base(cfg, layer, seq, g);

    // ---- 0. this warp's blocks; their cache rows (< pos) into L2 (unless the caller asked
    // already, before the item's input was ready).
    const int warp = tid >> 5, lane = tid & 31, gid = lane >> 2, tig = lane & 3;
    const int nb = (pos + 16) >> 4;
    int blk0, blk1;
    mkg_op_decode_span(nb, part, warp, &blk0, &blk1);
    if (!prefetched && !dry)
        mkg_op_attention_decode_prefetch(cfg, layer, seq, pos, g, k_cache, v_cache, tid, part);

    // ---- 1. rotate q (G heads) and k, copy v. Thread tid < 32 (G + 1) rotates pair i = tid % 32
    // of q head h = tid / 32, or of k when h == G (one copy of the trig code for both); the next
    // 32 threads copy v. Part <= 0 appends them to the cache.
    const bool append = part <= 0 && !dry;
    if (tid < G * 32 + 32) {
        const int h = tid >> 5, i = tid & 31;
        const __nv_bfloat16 *src = row + (h < G ? g * G + h : cfg->q_heads + g) * MKG_OP_HEAD_DIM;
        float c, s, o0, o1;
        if (rope_cs) {
            c = rope_cs->x;
            s = rope_cs->y;
        } else {
            mkg_op_rope_cs(pos, i, theta, &c, &s);
        }
        mkg_op_rope_pair(__bfloat162float(__ldcg(src + i)), __bfloat162float(__ldcg(src + i + 32)), c, s, &o0, &o1);
        if (h < G) {
            s_q[h * 64 + i] = __fmul_rn(o0 * 0.125f, MKG_OP_LOG2E);
            s_q[h * 64 + i + 32] = __fmul_rn(o1 * 0.125f, MKG_OP_LOG2E);
        } else {
            const __nv_bfloat16 k0 = __float2bfloat16_rn(o0), k1 = __float2bfloat16_rn(o1);
            s_k[i] = k0;
            s_k[i + 32] = k1;
            if (append) {
                k_cache[cbase + (size_t)pos * 64 + i] = k0;
                k_cache[cbase + (size_t)pos * 64 + i + 32] = k1;
            }
        }
    } else if (tid < G * 32 + 64) {
        const int i = tid - G * 32 - 32;
        const __nv_bfloat16 *src = row + (cfg->q_heads + cfg->kv_heads + g) * MKG_OP_HEAD_DIM;
        const __nv_bfloat16 v0 = __ldcg(src + i), v1 = __ldcg(src + i + 32);
        s_v[i] = v0;
        s_v[i + 32] = v1;
        if (append) {
            v_cache[cbase + (size_t)pos * 64 + i] = v0;
            v_cache[cbase + (size_t)pos * 64 + i + 32] = v1;
        }
    }
    mkg_bar_sync_any(bar, MKG_OP_THREADS);
    if (phase && tid == 0)
        phase[0] = mkg_globaltimer();

    // ---- 2. Q^T fragments: column gid is head gid & 3, bf16 part (gid < 4) or remainder;
    // k-step s, reg e: dims 8 tig + 32 (s >> 1) + 4 (s & 1) + 2 e + {0, 1} (heads >= G: zero).
    uint32_t qb[4][2];
    {
        const int h = gid & 3;
#pragma unroll
        for (int s = 0; s < 4; ++s)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                float2 f = make_float2(0.0f, 0.0f);
                if (h < G)
                    f = *(const float2 *)(s_q + h * 64 + 8 * tig + 32 * (s >> 1) + 4 * (s & 1) + 2 * e);
                qb[s][e] = mkg_op_split_pack(f.x, f.y, gid >= 4);
            }
    }
    float acc[4][4], m[2], l[2];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e)
            acc[i][e] = 0.0f;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        // NOTE: a finite start, not -inf: 2^(m - m_new) stays 0 (never inf - inf = NaN), also in
        // a range's first fold (mkg_op_fold: ex2(-1e30 - m) = 0); empty ranges are skipped.
        m[j] = -1e30f;
        l[j] = 0.0f;
    }

    // ---- 3. the warp's blocks in order through a ring of DEPTH register buffers: buffer d is
    // reloaded with block + DEPTH once block is consumed (uniform trip count per warp). At the
    // end of each range (part < 0: the group's 8 ranges; else the warp's one range) the range's
    // partial is completed (l summed over gid: xor 4, 8, 16; O = bf16 part + remainder part: xor
    // 2, bit-identical in both lanes) and, part < 0, folded into the group's running fold (go,
    // gm, gl: lanes tig < 2 hold heads 2 tig, 2 tig + 1; the others the same values).
    const uint4 *s_k4 = (const uint4 *)s_k, *s_v4 = (const uint4 *)s_v;
    const uint4 *kl = (const uint4 *)(k_cache + cbase) + 8 * gid + tig;
    const uint4 *vl = (const uint4 *)(v_cache + cbase) + 16 * tig + gid;
    const int wi = warp * MKG_OP_MAX_GROUP + 2 * tig;        // slot index of head 2 tig (+ j)
    float *w_o = s_o + wi * 64 + 8 * gid;                      // head 2 tig + j at w_o + 64 j
    // The next range end after block b (part < 0; the warp's group is ranges 8 warp .. 8 warp + 7).
    int r = 0, r_end = blk1;
    if (part < 0) {
        while (r < 7 && ((8 * warp + r + 1) * nb) / MKG_OP_DECODE_RANGES <= blk0)
            ++r;
        r_end = ((8 * warp + r + 1) * nb) / MKG_OP_DECODE_RANGES;
    }
    // part < 0: the group's running fold, in registers (every lane; lanes tig, tig ^ 2 alike).
    float go[4][4], gm[2] = {-1e30f, -1e30f}, gl[2] = {0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e)
            go[i][e] = 0.0f;
    mkg_op_kv16 buf[MKG_OP_DECODE_DEPTH];
#pragma unroll
    for (int d = 0; d < MKG_OP_DECODE_DEPTH; ++d)
        mkg_op_decode_load(&buf[d], kl, vl, blk0 + d, blk1, pos, s_k4, s_v4, gid, tig);
    for (int b0 = blk0; b0 < blk1; b0 += MKG_OP_DECODE_DEPTH) {
#pragma unroll
        for (int d = 0; d < MKG_OP_DECODE_DEPTH; ++d) {
            if (b0 + d < blk1) {
                mkg_op_decode_block(&buf[d], b0 + d, pos, qb, acc, m, l, gid, tig);
                mkg_op_decode_load(&buf[d], kl, vl, b0 + d + MKG_OP_DECODE_DEPTH, blk1, pos, s_k4, s_v4, gid, tig);
                if (part < 0 && b0 + d + 1 == r_end) {      // warp-uniform: range 8 warp + r ends
                    mkg_op_decode_complete(acc, l);
#pragma unroll
                    for (int j = 0; j < 2; ++j) {
                        float wa, wb;
                        mkg_op_fold(&gm[j], &gl[j], m[j], l[j], &wa, &wb);
#pragma unroll
                        for (int i = 0; i < 4; ++i) {
                            go[i][j] = mkg_op_fold_o(go[i][j], wa, acc[i][j], wb);
                            go[i][j + 2] = mkg_op_fold_o(go[i][j + 2], wa, acc[i][j + 2], wb);
                        }
                    }
#pragma unroll
                    for (int i = 0; i < 4; ++i)
#pragma unroll
                        for (int e = 0; e < 4; ++e)
                            acc[i][e] = 0.0f;
                    m[0] = m[1] = -1e30f;
                    l[0] = l[1] = 0.0f;
                    do
                        ++r;
                    while (r < 7 && ((8 * warp + r + 1) * nb) / MKG_OP_DECODE_RANGES <= b0 + d + 1);
                    r_end = ((8 * warp + r + 1) * nb) / MKG_OP_DECODE_RANGES;
                }
            }
        }
    }

    // ---- 4. the warp's partial into its slot: part >= 0, its one range; part < 0, its group's
    // fold (empty: (-1e30, 0, 0), skipped by the folds that read the slots).
    if (part >= 0) {
        mkg_op_decode_complete(acc, l);
    } else {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            m[j] = gm[j];
            l[j] = gl[j];
        }
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[i][e] = go[i][e];
    }
    if (tig < 2) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
#pragma unroll
            for (int i = 0; i < 4; ++i)
                *(float2 *)(w_o + 64 * j + 2 * i) = make_float2(acc[i][j], acc[i][j + 2]);
            if (gid == 0) {
                s_m[wi + j] = m[j];
                s_l[wi + j] = l[j];
            }
        }
    }
    mkg_bar_sync_any(bar, MKG_OP_THREADS);
    if (phase && tid == 0)
        phase[1] = mkg_globaltimer();

    // ---- 5. thread (h = tid / 64, d = tid % 64): part < 0, the final fold over the 8 group
    // slots and the store; part >= 0, the fold over the group's 8 ranges into ws, then the last
    // CTA of the item to arrive folds the 8 groups from ws and stores.
    const int h = tid >> 6, d = tid & 63;
    __nv_bfloat16 *dst = attn + (size_t)tok * cfg->q_heads * MKG_OP_HEAD_DIM + (g * G + h) * MKG_OP_HEAD_DIM + d;
    bool stored = true;
    if (part < 0) {
        if (h < G)
            mkg_op_decode_final<false>(s_o, s_m, s_l, nb, h, d, dst, !dry);
    } else {
        float *ws_o = ws, *ws_m = ws + MKG_OP_DECODE_GROUPS * MKG_OP_MAX_GROUP * MKG_OP_HEAD_DIM;
        float *ws_l = ws_m + MKG_OP_DECODE_GROUPS * MKG_OP_MAX_GROUP;
        if (h < G) {
            float M = -1e30f, L = 0.0f, O = 0.0f;
            for (int w = 0; w < MKG_OP_THREADS / 32; ++w) {
                const int v = 8 * part + w;
                if ((v * nb) / MKG_OP_DECODE_RANGES == ((v + 1) * nb) / MKG_OP_DECODE_RANGES)
                    continue;                                     // an empty range
                const int i = w * MKG_OP_MAX_GROUP + h;
                float a, b;
                mkg_op_fold(&M, &L, s_m[i], s_l[i], &a, &b);
                O = mkg_op_fold_o(O, a, s_o[i * MKG_OP_HEAD_DIM + d], b);
            }
            const int i = part * MKG_OP_MAX_GROUP + h;
            if (!dry)
                __stcg(ws_o + i * MKG_OP_HEAD_DIM + d, O);
            if (d == 0 && !dry) {
                __stcg(ws_m + i, M);
                __stcg(ws_l + i, L);
            }
        }
        // Release: every thread's workspace stores before the barrier, thread 0's acq_rel arrival
        // after it; the last to arrive acquires every part's stores, and the barrier after its
        // arrival orders the CTA's reads after them (__ldcg: not from this SM's L1; v113).
        mkg_bar_sync_any(bar, MKG_OP_THREADS);
        if (tid == 0)
            *s_last = !dry && mkg_atom_acq_rel_gpu_add_u32(ctr, 1u) == MKG_OP_DECODE_GROUPS - 1 ? 1u : 0u;
        mkg_bar_sync_any(bar, MKG_OP_THREADS);
        stored = *s_last != 0u;
        if (stored || dry) {
            if (h < G)
                mkg_op_decode_final<true>(ws_o, ws_m, ws_l, nb, h, d, dst, !dry);
        }
    }
    mkg_bar_sync_any(bar, MKG_OP_THREADS);
    if (phase && tid == 0)
        phase[2] = mkg_globaltimer();
    return stored && !dry;
}

// ---- cp.async (PTX ISA: data movement, cp.async) -----------------------------------------

// NOTE: .cg caches in L2 only, like __ldcg: qkv rows are written by other SMs in the same launch.
static __device__ __forceinline__ void mkg_cp_async_cg_16(void *smem_dst, const void *gmem_src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(mkg_smem_addr(smem_dst)), "l"(gmem_src)
                 : "memory");
}

static __device__ __forceinline__ void mkg_cp_async_commit_group(void)
{
    asm volatile("cp.async.commit_group;" ::: "memory");
}

static __device__ __forceinline__ void mkg_cp_async_wait_all(void)
{
    asm volatile("cp.async.wait_all;" ::: "memory");
}

// ---- prefill attention -------------------------------------------------------------------

// ldmatrix (PTX ISA: warp-level matrix load): four 8 x 8 b16 matrices; lane l gives the row
// address of matrix l / 8, row l % 8, and receives of matrix j (register j) row l / 4, columns
// 2 (l % 4), + 1 (.trans: rows 2 (l % 4), + 1 of column l / 4).
static __device__ __forceinline__ void mkg_op_ldmatrix_x4(uint32_t r[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

static __device__ __forceinline__ void mkg_op_ldmatrix_x4_trans(uint32_t r[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

#define MKG_OP_PREFILL_KEYS 32   /* keys per tile */

// Scratch offsets (bytes) of the prefill op. A key tile is K (32 keys, 64 dims) bf16, 4 KB,
// then V the same; a row is 128 bytes, and its 16-byte chunk c sits at c ^ (key % 8), so the
// eight rows an ldmatrix phase reads hit eight different bank groups.
#define MKG_OP_PREFILL_TABLE 0      /* q cos / sin (32 pairs, 64 queries) float2, 16 KB: prologue only */
#define MKG_OP_PREFILL_BUF0 16384   /* tiles 0, 2, 4, ... (8 KB) */
#define MKG_OP_PREFILL_BUF1 0       /* tiles 1, 3, 5, ... (8 KB, over the table once it is consumed) */
#define MKG_OP_PREFILL_FREQ 24576   /* RoPE inverse frequencies of the 32 pairs, FP32 */
static_assert(MKG_OP_PREFILL_FREQ + 128 <= MKG_OP_PREFILL_SCRATCH_BYTES, "prefill scratch layout");
static_assert(MKG_OP_PREFILL_BUF0 + 8192 <= MKG_OP_PREFILL_FREQ, "tile buffer 0 overlaps the frequencies");
static_assert(32 * 64 * 8 <= MKG_OP_PREFILL_BUF0, "the q cos / sin table overlaps tile buffer 0");

/* Byte offset of dims 8 chunk .. 8 chunk + 7 of key row `key` in a K or V tile. */
static __device__ __forceinline__ uint32_t mkg_op_tile_off(int key, int chunk)
{
    return (uint32_t)(key * 128 + ((chunk ^ (key & 7)) << 4));
}

// Issues the copies of key tile T (positions 32 T .. 32 T + 31) into the tile at `tile`, one
// 16-byte chunk of K and of V per thread (key tid / 8, chunk tid % 8), and commits them.
// kp < pos0: the cache (rotated already); pos0 <= kp < n_keys: qkv row kp - pos0 (raw k);
// beyond n_keys: zeros (masked keys need finite V: p = 0 times NaN would be NaN).
static __device__ __forceinline__ void mkg_op_prefill_stage(unsigned char *tile, const __nv_bfloat16 *kc,
                                                            const __nv_bfloat16 *vc, const __nv_bfloat16 *qkv_k,
                                                            const __nv_bfloat16 *qkv_v, int qkv_n, int T, int pos0,
                                                            int n_keys, int tid)
{
    const int key = tid >> 3, c = tid & 7, kp = T * MKG_OP_PREFILL_KEYS + key;
    uint4 *dk = (uint4 *)(tile + mkg_op_tile_off(key, c));
    uint4 *dv = (uint4 *)(tile + 4096 + mkg_op_tile_off(key, c));
    if (kp < pos0) {
        mkg_cp_async_cg_16(dk, (const uint4 *)(kc + (size_t)kp * 64) + c);
        mkg_cp_async_cg_16(dv, (const uint4 *)(vc + (size_t)kp * 64) + c);
    } else if (kp < n_keys) {
        const size_t off = (size_t)(kp - pos0) * qkv_n;
        mkg_cp_async_cg_16(dk, (const uint4 *)(qkv_k + off) + c);
        mkg_cp_async_cg_16(dv, (const uint4 *)(qkv_v + off) + c);
    } else {
        *dk = make_uint4(0, 0, 0, 0);
        *dv = make_uint4(0, 0, 0, 0);
    }
    mkg_cp_async_commit_group();
}

// Rotates n RoPE pairs (k0[j], k1[j]) of the key at position kp in shared memory, pair j with
// inverse frequency freq[j], rounding each to bf16 in place.
// NOTE: a loop, not unrolled, over shared memory, not a register array: cosf / sinf inline a
// large slow path (Payne-Hanek) that is kept once.
static __device__ __forceinline__ void mkg_op_rope_pairs_smem(__nv_bfloat16 *k0, __nv_bfloat16 *k1, int n, int kp,
                                                              const float *freq)
{
#pragma unroll 1
    for (int j = 0; j < n; ++j) {
        float c, s, r0, r1;
        mkg_op_rope_cs_freq(kp, freq[j], &c, &s);
        mkg_op_rope_pair(__bfloat162float(k0[j]), __bfloat162float(k1[j]), c, s, &r0, &r1);
        k0[j] = __float2bfloat16_rn(r0);
        k1[j] = __float2bfloat16_rn(r1);
    }
}

// Rotates the keys of this step in the landed tile T: thread (key lj = tid / 8, lc = tid % 8)
// owns RoPE pairs 4 lc .. 4 lc + 3 (dims 4 lc + j and 32 + 4 lc + j) of its key kp, if
// pos0 <= kp < n_keys, rounding to bf16 in place. One of this item's tokens
// (kp >= pos0 + t0) is also appended to the cache: rotated k, raw v.
static __device__ __forceinline__ void mkg_op_prefill_convert(unsigned char *tile, const float *s_freq,
                                                              __nv_bfloat16 *kc, __nv_bfloat16 *vc, int T, int pos0,
                                                              int t0, int n_keys, int tid)
{
    const int lj = tid >> 3, lc = tid & 7, kp = T * MKG_OP_PREFILL_KEYS + lj;
    if (kp < pos0 || kp >= n_keys)
        return;
    const uint32_t o0 = mkg_op_tile_off(lj, lc >> 1) + (lc & 1) * 8;       // dims 4 lc .. 4 lc + 3
    const uint32_t o1 = mkg_op_tile_off(lj, 4 + (lc >> 1)) + (lc & 1) * 8; // dims 32 + 4 lc ..
    __nv_bfloat16 *k0 = (__nv_bfloat16 *)(tile + o0), *k1 = (__nv_bfloat16 *)(tile + o1);
    mkg_op_rope_pairs_smem(k0, k1, 4, kp, s_freq + 4 * lc);
    if (kp >= pos0 + t0) {   // one of this item's tokens
        uint2 *gk = (uint2 *)(kc + (size_t)kp * 64) + lc;
        uint2 *gv = (uint2 *)(vc + (size_t)kp * 64) + lc;
        gk[0] = *(const uint2 *)(tile + o0);
        gk[8] = *(const uint2 *)(tile + o1);
        gv[0] = *(const uint2 *)(tile + 4096 + o0);
        gv[8] = *(const uint2 *)(tile + 4096 + o1);
    }
}

// Rotate-once mode of mkg_op_attention_prefill (the megakernel's MKG_MK_OPT_ROPE_ONCE): each item
// rotates and appends only its own tokens' keys, flags them, and reads every other key of the step
// from the cache once the items holding them have flagged theirs. flags[rb * kvh + g]: row block
// rb of this step has appended KV head g's keys (zeroed per step). A wait that times out records the
// stall (mkg_dep_wait) and the item goes on, so the grid still drains.
// pair (>= 0): this item also appends and flags the keys of item `pair` (row block pair / kvh, KV
// head pair % kvh, pair_rows tokens), which runs later on the same CTA with `appended` set: it then
// neither appends nor flags its own (the megakernel's MKG_MK_OPT_ATTN_FOLD, where every block's keys
// are flagged during the first round of items).
typedef struct mkg_op_rope_once {
    unsigned int *flags;
    int kvh;
    int pair, pair_rows, appended;
    unsigned int *stall;
    unsigned int tag;
    unsigned long long timeout_ns;
} mkg_op_rope_once;

// Rotate-once: thread (key lj = tid / 4, q = tid % 4) rotates RoPE pairs 8 q .. 8 q + 7 of key
// row lj (token t0 + lj, position pos0 + t0 + lj) as mkg_op_prefill_convert does (the same bits),
// through its own 32 bytes of `rows` (8 KB of scratch: no other thread touches them), and appends
// the rotated k and the raw v to the cache.
static __device__ __forceinline__ void mkg_op_prefill_own_keys(unsigned char *rows, const float *s_freq,
                                                               const __nv_bfloat16 *qkv_k, const __nv_bfloat16 *qkv_v,
                                                               int qkv_n, __nv_bfloat16 *kc, __nv_bfloat16 *vc,
                                                               int t0, int tcount, int pos0, int tid)
{
    const int lj = tid >> 2, q = tid & 3, kp = pos0 + t0 + lj;
    if (lj >= tcount)
        return;
    const size_t off = (size_t)(t0 + lj) * qkv_n;
    __nv_bfloat16 *k0 = (__nv_bfloat16 *)(rows + lj * 128) + 8 * q, *k1 = k0 + 32;
    *(uint4 *)k0 = __ldcg((const uint4 *)(qkv_k + off) + q);
    *(uint4 *)k1 = __ldcg((const uint4 *)(qkv_k + off) + 4 + q);
    const uint4 v0 = __ldcg((const uint4 *)(qkv_v + off) + q), v1 = __ldcg((const uint4 *)(qkv_v + off) + 4 + q);
    mkg_op_rope_pairs_smem(k0, k1, 8, kp, s_freq + 8 * q);
    uint4 *gk = (uint4 *)(kc + (size_t)kp * 64), *gv = (uint4 *)(vc + (size_t)kp * 64);
    gk[q] = *(const uint4 *)k0;
    gk[4 + q] = *(const uint4 *)k1;
    gv[q] = v0;
    gv[4 + q] = v1;
}

// Queries t0 .. t0 + tcount - 1 (tcount <= 64; rows of qkv and attn) of one sequence (seq 0)
// whose step token t sits at position pos0 + t, KV head g and its G query heads; causal:
// query at position p attends positions 0 .. p. Shapes as in mkg_op_attention_decode.
// Keys < pos0 come from the cache. Keys >= pos0 are this step's: they come from the qkv rows,
// rotated and rounded to bf16 here, never from the cache, because other work items append
// those positions concurrently. This item appends its own tokens' rotated k and v to the cache
// (seq 0, positions pos0 + t0 ..): each is converted exactly once, by the tile holding it.
//
// Tensor cores (mma.sync m16n8k16 bf16, FP32 accumulation), flash-attention style: warp w
// takes head g G + w / 2 and query rows 32 (w % 2) .. + 31 (two m16 tiles). q is rotated in
// FP32 and rounded to bf16 (times 1/8, exact), the scores are scaled by log2(e) in FP32, online
// softmax per row in the log2 domain, P enters P V as bf16. Keys stream through shared memory
// in tiles of 32 (K and V bf16, swizzled; the next tile's copies in flight by cp.async while
// one is consumed); a warp stops at the last key its queries attend. Fixed order everywhere:
// the result depends on the inputs only.
//
// Scratch (MKG_OP_PREFILL_SCRATCH_BYTES): offsets MKG_OP_PREFILL_*.
static __device__ __forceinline__ void mkg_op_attention_prefill(const mkg_model_config *cfg, int layer,
                                                                const __nv_bfloat16 *qkv, int t0, int tcount,
                                                                int pos0, int g, __nv_bfloat16 *k_cache,
                                                                __nv_bfloat16 *v_cache, __nv_bfloat16 *attn,
                                                                unsigned char *scratch, int tid, int bar,
                                                                const mkg_op_rope_once *once = nullptr)
{
    const int G = cfg->q_heads / cfg->kv_heads;
    const int qkv_n = (cfg->q_heads + 2 * cfg->kv_heads) * MKG_OP_HEAD_DIM;
    const float theta = cfg->rope_theta;
    const size_t cbase = mkg_op_cache_base(cfg, layer, 0, g);
    __nv_bfloat16 *kc = k_cache + cbase, *vc = v_cache + cbase;
    const __nv_bfloat16 *qkv_k = qkv + (cfg->q_heads + g) * MKG_OP_HEAD_DIM;
    const __nv_bfloat16 *qkv_v = qkv + (cfg->q_heads + cfg->kv_heads + g) * MKG_OP_HEAD_DIM;
    float *s_freq = (float *)(scratch + MKG_OP_PREFILL_FREQ);

    const int warp = tid >> 5, lane = tid & 31, gid = lane >> 2, tig = lane & 3;
    const int hh = warp >> 1, rb = 32 * (warp & 1);  // head g G + hh, query rows rb .. rb + 31
    const int n_keys = pos0 + t0 + tcount;           // keys 0 .. n_keys - 1 are attended by someone
    const int ntiles = (n_keys + MKG_OP_PREFILL_KEYS - 1) / MKG_OP_PREFILL_KEYS;
    const int warp_active = rb < tcount && hh < G;
    const int warp_last = warp_active ? pos0 + t0 + min(rb + 31, tcount - 1) : -1;

    // Rotate-once: every key below n_keys comes from the cache (kp < src0), after the flags.
    const int src0 = once ? n_keys : pos0;
    if (!once)
        mkg_op_prefill_stage(scratch + MKG_OP_PREFILL_BUF0, kc, vc, qkv_k, qkv_v, qkv_n, 0, pos0, n_keys, tid);

    // ---- q cos / sin table (32 pairs, 64 queries; query-minor) and the pairs' frequencies.
    // NOTE: the table keeps one copy of the trig code; unrolled cosf / sinf per fragment
    // element made the prologue ~14k instructions.
    float2 *s_cs = (float2 *)(scratch + MKG_OP_PREFILL_TABLE);
    if (tid < 32)
        s_freq[tid] = mkg_op_rope_inv_freq(tid, theta);
#pragma unroll 1
    for (int e = tid; e < 32 * 64; e += MKG_OP_THREADS) {
        float c, s;
        mkg_op_rope_cs(pos0 + t0 + (e & 63), e >> 6, theta, &c, &s);
        s_cs[e] = make_float2(c, s);
    }
    mkg_bar_sync_any(bar, MKG_OP_THREADS);

    if (once) {
        // ---- this item's keys into the cache, its flag, then the flags of the step's earlier
        // row blocks (lanes of warp 0, one block each); the barrier hands their acquires on.
        // With a pair, its keys too (the same rows of scratch, each thread its own, one after the other).
        if (!once->appended)
            mkg_op_prefill_own_keys(scratch + MKG_OP_PREFILL_BUF0, s_freq, qkv_k, qkv_v, qkv_n, kc, vc, t0, tcount,
                                    pos0, tid);
        if (once->pair >= 0) {
            const int pg = once->pair % once->kvh;
            const size_t pbase = mkg_op_cache_base(cfg, layer, 0, pg);
            mkg_op_prefill_own_keys(scratch + MKG_OP_PREFILL_BUF0, s_freq,
                                    qkv + (cfg->q_heads + pg) * MKG_OP_HEAD_DIM,
                                    qkv + (cfg->q_heads + cfg->kv_heads + pg) * MKG_OP_HEAD_DIM, qkv_n, k_cache + pbase,
                                    v_cache + pbase, 64 * (once->pair / once->kvh), once->pair_rows, pos0, tid);
        }
        mkg_bar_sync_any(bar, MKG_OP_THREADS);
        const int rb = t0 / 64;
        if (tid == 0 && !once->appended)
            mkg_dep_signal(once->flags, rb * once->kvh + g, 1u);
        if (tid == 0 && once->pair >= 0)
            mkg_dep_signal(once->flags, once->pair, 1u);     // pair = its block * kvh + its head
        if (tid < 32)
            for (int b = tid; b < rb; b += 32)
                mkg_dep_wait(once->flags + b * once->kvh + g, 1u, once->stall, once->tag, (unsigned int)b,
                             once->timeout_ns);
        mkg_bar_sync_any(bar, MKG_OP_THREADS);
        mkg_op_prefill_stage(scratch + MKG_OP_PREFILL_BUF0, kc, vc, qkv_k, qkv_v, qkv_n, 0, src0, n_keys, tid);
    }

    // ---- Q fragments (A operand, rows rb + 16 mt + gid + 8 h): k-step s, register h + 2 e holds
    // dims 16 s + 8 e + 2 tig, + 1. Dim d (s < 2) and d + 32 (s + 2) are one RoPE pair.
    uint32_t qf[2][4][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = rb + 16 * mt + gid + 8 * h;
            const bool live = warp_active && row < tcount;
            const __nv_bfloat16 *src = qkv + (size_t)(t0 + row) * qkv_n + (g * G + hh) * MKG_OP_HEAD_DIM;
#pragma unroll
            for (int s = 0; s < 2; ++s)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int d = 16 * s + 8 * e + 2 * tig;
                    uint32_t lo = 0, hi = 0;
                    if (live) {
                        const uint32_t x = __ldcg((const unsigned int *)(src + d));
                        const uint32_t y = __ldcg((const unsigned int *)(src + d + 32));
                        float r0[2], r1[2];
#pragma unroll
                        for (int u = 0; u < 2; ++u) {
                            const float2 cs = s_cs[(d + u) * 64 + row];
                            const float x0 = __uint_as_float(u ? x & 0xFFFF0000u : x << 16);
                            const float x1 = __uint_as_float(u ? y & 0xFFFF0000u : y << 16);
                            mkg_op_rope_pair(x0, x1, cs.x, cs.y, &r0[u], &r1[u]);
                        }
                        lo = mkg_op_pack2(r0[0] * 0.125f, r0[1] * 0.125f);
                        hi = mkg_op_pack2(r1[0] * 0.125f, r1[1] * 0.125f);
                    }
                    qf[mt][s][h + 2 * e] = lo;
                    qf[mt][s + 2][h + 2 * e] = hi;
                }
        }

    float o[2][8][4], m[2][2], l[2][2];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
        for (int dt = 0; dt < 8; ++dt)
#pragma unroll
            for (int r = 0; r < 4; ++r)
                o[mt][dt][r] = 0.0f;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            m[mt][h] = -1e30f;   // finite start: see mkg_op_attention_decode
            l[mt][h] = 0.0f;
        }
    }
    const int lrow = lane & 7, lmat = lane >> 3;     // this lane's ldmatrix row and matrix

    // ---- key tiles.
    for (int T = 0; T < ntiles; ++T) {
        const int tile0 = T * MKG_OP_PREFILL_KEYS;
        unsigned char *tile = scratch + ((T & 1) ? MKG_OP_PREFILL_BUF1 : MKG_OP_PREFILL_BUF0);
        mkg_cp_async_wait_all();
        mkg_bar_sync_any(bar, MKG_OP_THREADS);   // tile T landed; tile T - 1 (or the q table) consumed
        if (!once) {
            mkg_op_prefill_convert(tile, s_freq, kc, vc, T, pos0, t0, n_keys, tid);
            mkg_bar_sync_any(bar, MKG_OP_THREADS);   // tile T rotated
        }
        if (T + 1 < ntiles)
            mkg_op_prefill_stage(scratch + ((T & 1) ? MKG_OP_PREFILL_BUF0 : MKG_OP_PREFILL_BUF1), kc, vc, qkv_k,
                                 qkv_v, qkv_n, T + 1, src0, n_keys, tid);
        if (tile0 > warp_last)
            continue;                        // warp-uniform: no query of this warp attends the tile
        const uint32_t ks = mkg_smem_addr(tile), vs = ks + 4096;

        // S = Q K^T: n-tile nt = keys tile0 + 8 nt .. + 7; k-steps in order 0 .. 3.
        float sc[2][4][4];
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
            for (int nt = 0; nt < 4; ++nt)
#pragma unroll
                for (int r = 0; r < 4; ++r)
                    sc[mt][nt][r] = 0.0f;
#pragma unroll
        for (int sp = 0; sp < 2; ++sp)
#pragma unroll
            for (int nt = 0; nt < 4; ++nt) {
                uint32_t b[4];   // b0, b1 of k-step 2 sp, then of 2 sp + 1
                mkg_op_ldmatrix_x4(b, ks + mkg_op_tile_off(8 * nt + lrow, 4 * sp + lmat));
#pragma unroll
                for (int mt = 0; mt < 2; ++mt) {
                    mkg_op_mma_bf16(sc[mt][nt], qf[mt][2 * sp][0], qf[mt][2 * sp][1], qf[mt][2 * sp][2],
                                    qf[mt][2 * sp][3], b[0], b[1]);
                    mkg_op_mma_bf16(sc[mt][nt], qf[mt][2 * sp + 1][0], qf[mt][2 * sp + 1][1],
                                    qf[mt][2 * sp + 1][2], qf[mt][2 * sp + 1][3], b[2], b[3]);
                }
            }

        // Online softmax per row (rows gid, gid + 8 of each m-tile; a row's 32 keys sit in the
        // four lanes of one gid: xor 1, 2).
        const bool edge = tile0 + MKG_OP_PREFILL_KEYS - 1 > pos0 + t0 + rb;   // warp-uniform: masking needed
        uint32_t pa[2][2][4];                // P as A fragments: m-tile, 16-key k-step
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int pq = pos0 + t0 + rb + 16 * mt + gid + 8 * h;
                float mx = -INFINITY;
#pragma unroll
                for (int nt = 0; nt < 4; ++nt)
#pragma unroll
                    for (int u = 0; u < 2; ++u) {
                        float v = sc[mt][nt][2 * h + u] * MKG_OP_LOG2E;
                        if (edge && tile0 + 8 * nt + 2 * tig + u > pq)
                            v = -INFINITY;
                        sc[mt][nt][2 * h + u] = v;
                        mx = fmaxf(mx, v);
                    }
                mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 2));
                const float mn = fmaxf(m[mt][h], mx);
                const float al = mkg_op_ex2(m[mt][h] - mn);
                m[mt][h] = mn;
                float sum = 0.0f;
#pragma unroll
                for (int nt = 0; nt < 4; ++nt)
#pragma unroll
                    for (int u = 0; u < 2; ++u) {
                        const float p = mkg_op_ex2(sc[mt][nt][2 * h + u] - mn);   // masked: 2^-inf = 0
                        sc[mt][nt][2 * h + u] = p;
                        sum += p;
                    }
                l[mt][h] = fmaf(l[mt][h], al, sum);
#pragma unroll
                for (int dt = 0; dt < 8; ++dt) {
                    o[mt][dt][2 * h] *= al;
                    o[mt][dt][2 * h + 1] *= al;
                }
            }
#pragma unroll
            for (int kk = 0; kk < 2; ++kk) {
                pa[mt][kk][0] = mkg_op_pack2(sc[mt][2 * kk][0], sc[mt][2 * kk][1]);
                pa[mt][kk][1] = mkg_op_pack2(sc[mt][2 * kk][2], sc[mt][2 * kk][3]);
                pa[mt][kk][2] = mkg_op_pack2(sc[mt][2 * kk + 1][0], sc[mt][2 * kk + 1][1]);
                pa[mt][kk][3] = mkg_op_pack2(sc[mt][2 * kk + 1][2], sc[mt][2 * kk + 1][3]);
            }
        }

        // O += P V: k-step kk = keys 16 kk .. + 15, n-tile dt = dims 8 dt .. + 7.
#pragma unroll
        for (int kk = 0; kk < 2; ++kk)
#pragma unroll
            for (int dp = 0; dp < 4; ++dp) {
                uint32_t b[4];   // b0, b1 of n-tile 2 dp, then of 2 dp + 1
                mkg_op_ldmatrix_x4_trans(b, vs + mkg_op_tile_off(16 * kk + 8 * (lmat & 1) + lrow, 2 * dp + (lmat >> 1)));
#pragma unroll
                for (int mt = 0; mt < 2; ++mt) {
                    mkg_op_mma_bf16(o[mt][2 * dp], pa[mt][kk][0], pa[mt][kk][1], pa[mt][kk][2], pa[mt][kk][3], b[0],
                                    b[1]);
                    mkg_op_mma_bf16(o[mt][2 * dp + 1], pa[mt][kk][0], pa[mt][kk][1], pa[mt][kk][2], pa[mt][kk][3],
                                    b[2], b[3]);
                }
            }
    }

    // ---- output: attn row t0 + row, head g G + hh; a row's denominator summed over its 4 lanes.
    if (warp_active) {
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float sum = l[mt][h];
                sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 1);
                sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 2);
                const int row = rb + 16 * mt + gid + 8 * h;
                if (row < tcount) {
                    const float inv = 1.0f / sum;
                    unsigned int *dst = (unsigned int *)(attn + (size_t)(t0 + row) * cfg->q_heads * MKG_OP_HEAD_DIM +
                                                         (g * G + hh) * MKG_OP_HEAD_DIM) + tig;
#pragma unroll
                    for (int dt = 0; dt < 8; ++dt)
                        dst[4 * dt] = mkg_op_pack2(o[mt][dt][2 * h] * inv, o[mt][dt][2 * h + 1] * inv);
                }
            }
    }
    mkg_bar_sync_any(bar, MKG_OP_THREADS);
}

#endif /* MKG_MK_OPS_CUH */
