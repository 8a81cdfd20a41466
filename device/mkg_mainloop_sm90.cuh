/* mkg_mainloop_sm90.cuh - one work unit of a schedule: the producer's TMA loads
 * and the consumers' wgmma mainloop, chunk combine and epilogue.
 *
 * A unit is one TM x TN tile of C over a contiguous range of the layer's canonical
 * K chunks (all of them unless the schedule splits K). The producer thread streams
 * the range's K tiles of A (TM x KH TK) and B (TN x KH TK) into the ring; each stage is
 * KH sub-tiles of one TMA box per operand (TK elements = one 128-byte row, 128-byte
 * swizzled), all landing on full[slot]. KH = 2 (128-deep stages of 16-bit input) halves the
 * barrier round trips per K and doubles the wgmma issued between two full-barrier waits.
 * The two consumer warpgroups split the MMA tile:
 *   X = the operand on the 64-row MMA side (A, or B when SWAP), P rows
 *   Y = the operand on the wgmma N side    (B, or A when SWAP), Q rows
 *   P == 128: warpgroup w takes X rows 64w .. 64w+63, all Q columns
 *   P == 64 : both take the 64 X rows, warpgroup w takes Y rows w Q/2 .. (w+1) Q/2 - 1
 *
 * Determinism (SPEC section 5): every chunk is accumulated from zero (its first
 * k16 step has scale-d = 0) in increasing k, and chunk partials are added in
 * increasing chunk order in FP32, starting from chunk 0's partial:
 *   one unit per tile: partials fold in registers (a second accumulator set);
 *   split units:       each chunk's partial goes to the workspace, and the unit that
 *                      arrives last at the tile's counter folds chunk 0, 1, ... from it.
 * Both orders are the same left fold, so C's bits depend on KC, never on the schedule.
 */
#ifndef MKG_MAINLOOP_SM90_CUH
#define MKG_MAINLOOP_SM90_CUH

#include <stdint.h>

#include "mkg_deps_sm90.cuh"
#include "mkg_epilogue_sm90.cuh"
#include "mkg_gemm.h"
#include "mkg_pipeline_sm90.cuh"
#include "mkg_ptx_sm90.cuh"
#include "mkg_tile_order.h"
#include "mkg_wgmma_sm90.cuh"

// Bytes per input element (device code takes the dtype as a template argument).
template <int DT>
static __device__ __forceinline__ constexpr int mkg_dtype_bytes(void)
{
    return DT == MKG_DTYPE_FP32 ? 4 : DT == MKG_DTYPE_E4M3 ? 1 : 2;
}

// FP8 inputs: the per-tensor scale product, applied once to the FP32 result of the whole
// chunk fold (split or not) right before the epilogue, so every schedule rounds the same
// value. A no-op for the other input dtypes.
template <int DT, int NV>
static __device__ __forceinline__ void mkg_apply_input_scale(const mkg_gemm_params *p, float *d)
{
    if constexpr (DT == MKG_DTYPE_E4M3) {
        const float a = p->alpha;
#pragma unroll
        for (int i = 0; i < NV; ++i)
            d[i] *= a;
    }
}

// FP8 block scales (mkg_gemm_desc::a_block_scales): chunk c is K block c (kc = 128), and its
// unscaled partial d joins the fold with its scale: tot = fma(d, factor, tot), rounded once
// (mkg_block_scales_fold), tot starting at -0.0f. Element d[4j + 2h + e] is MMA row xr + 8h,
// column yc + 8j + e (see mkg_epilogue_sm90.cuh); MMA rows are M rows and columns N columns, or
// the other way round under SWAP. Its factor is sa(row, c) * sb(col / 128, c), rounded once.
// Explicit _rn operations, so no schedule contracts or splits them otherwise; split and cluster
// rows keep raw chunk partials and fold them the same way in chunk order, so every schedule and
// split rounds the same values (v94: before, d * factor was rounded and then added, 64 more
// FP32 instructions per chunk at WN = 128). Rows and columns past M and N read the last valid
// scale; they are never stored.
//
// The factors' inputs are loaded at the start of the chunk's step, so that their L2 latency
// overlaps the stage's wait and its wgmma (v19: loaded after the drain, they doubled the step).
// Non-swap: a warpgroup's WN columns start at a multiple of WN (y0 = tile * TN + wg * WN, TN =
// WN or 2 WN) and WN divides 128, so they sit in one 128-column block: one weight scale.
template <int WN, int SWAP>
struct mkg_bscale_in {
    float fx[2];                  // X rows xr, xr + 8
    float fy[SWAP ? WN / 4 : 1];  // SWAP: column yc + 8j + e at 2j + e; else the columns' block
};

template <int WN, int SWAP>
static __device__ __forceinline__ mkg_bscale_in<WN, SWAP> mkg_block_scales_load(const mkg_gemm_params *p, int m,
                                                                               int x0, int y0, int c)
{
    static_assert(SWAP || 128 % WN == 0, "non-swap block scales: one 128-column block per warpgroup span");
    mkg_bscale_in<WN, SWAP> f;
    const int t = threadIdx.x & 127, lane = t & 31;
    const int xr = x0 + (t >> 5) * 16 + (lane >> 2);
    const int yc = y0 + 2 * (lane & 3);
    const int kb = (p->k + 127) / 128;
    const float *sa = p->a_bscales + (long long)c * p->ld_a_bscales;   // row i: sa[i]
    const float *sb = p->b_bscales + c;                                 // column block nb: sb[nb * kb]
    const int rows = SWAP ? p->n : m, cols = SWAP ? m : p->n;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int x = min(xr + 8 * h, rows - 1);
        f.fx[h] = SWAP ? __ldg(sb + (long long)(x >> 7) * kb) : __ldg(sa + x);
    }
    if constexpr (SWAP) {
#pragma unroll
        for (int j = 0; j < WN / 8; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e)
                f.fy[2 * j + e] = __ldg(sa + min(yc + 8 * j + e, cols - 1));
    } else {
        f.fy[0] = __ldg(sb + (long long)(min(y0, cols - 1) >> 7) * kb);
    }
    return f;
}

// tot = fma(d, sa * sb, first ? -0.0f : tot) per element: one chunk's step of the block-scaled fold.
template <int WN, int SWAP>
static __device__ __forceinline__ void mkg_block_scales_fold(const mkg_bscale_in<WN, SWAP> &f, const float *d,
                                                             float *tot, bool first)
{
#pragma unroll
    for (int j = 0; j < WN / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const float fy = f.fy[SWAP ? 2 * j + e : 0];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float s = SWAP ? __fmul_rn(fy, f.fx[h]) : __fmul_rn(f.fx[h], fy);   // sa * sb
                const int i = 4 * j + 2 * h + e;
                tot[i] = __fmaf_rn(d[i], s, first ? -0.0f : tot[i]);
            }
        }
    }
}

// Compile-time facts of one schedule row, checked against the launch shape.
template <int TM, int TN, int TK, int ST, int SWAP, int KH = 1>
struct mkg_shape {
    static constexpr int P = SWAP ? TN : TM;                     // MMA rows per tile
    static constexpr int Q = SWAP ? TM : TN;                     // MMA columns per tile
    static constexpr int WN = P == 128 ? Q : Q / 2;              // wgmma N of one consumer
    static constexpr bool CHUNKED = WN <= MKG_CHUNKED_MAX_WN;    // can fold/split K chunks
    static constexpr uint32_t A_BYTES = TM * 128u;               // (TM, TK): 128-byte rows, 128B swizzle
    static constexpr uint32_t B_BYTES = TN * 128u;               // (TN, TK)
    static constexpr int K_STEPS = 128 / 32;                     // wgmma K steps of 32 bytes per row
    static constexpr uint32_t SUB_BYTES = A_BYTES + B_BYTES;     // one K sub-tile: A, then B
    static constexpr uint32_t STAGE_BYTES = KH * SUB_BYTES;      // KH sub-tiles in increasing k
    // Most producer threads (mkg_ring_mine) the row takes where the caller offers them: two where
    // its stage is at most 24 KB. One issuing thread lands about one stage per ~400-700 cycles
    // whatever its size, and these stages carry less tensor work than that (v57: m16n64 swap
    // +13-16%, m128n64 and m64n64 +10-15%; the 32-48 KB stages of the larger rows lost 0.5-2%,
    // so they keep one; four producers measured ~1% under two, v57b).
    static constexpr int PRODUCERS = STAGE_BYTES <= 24u * 1024u ? 2 : 1;
    static constexpr uint32_t X_OFF = SWAP ? A_BYTES : 0;        // X operand inside a stage
    static constexpr uint32_t Y_OFF = SWAP ? 0 : A_BYTES;        // Y operand inside a stage
    // Shipped kernel only (one schedule per launch): epilogue staging right after this row's
    // ring, as many 8 KB buffers per consumer as the launch-wide ring + staging budget leaves.
    static constexpr uint32_t EPI_OFF = ST * STAGE_BYTES;
    static constexpr int EPI_FREE = (int)((MKG_LAUNCH_RING_BYTES + MKG_LAUNCH_EPI_BYTES - EPI_OFF) /
                                          (MKG_LAUNCH_CONSUMERS * 8u * 1024u));
    static constexpr int EPI_BUFS = EPI_FREE > 8 ? 8 : EPI_FREE;
    static_assert(TK == 64 || TK == 32 || TK == 128,
                  "one stage row is one 128-byte swizzle span: 64 16-bit, 32 fp32 or 128 fp8 elements");
    static_assert(P == 64 || P == 128, "two consumer warpgroups cover 64 or 128 MMA rows");
    static_assert(WN % 8 == 0 && WN >= 8 && WN <= 256, "wgmma N is 8..256 in steps of 8");
    static_assert(TM % 8 == 0 && TN % 8 == 0, "tiles are whole 1024-byte swizzle atoms");
    static_assert(TM <= 256 && TN <= 256, "a TMA box is at most 256 rows");
    static_assert(ST >= 3 && ST <= MKG_LAUNCH_MAX_STAGES, "3 .. MAX_STAGES stages");
    static_assert(KH == 1 || KH == 2, "a stage is one or two K sub-tiles");
    static_assert(SUB_BYTES % 1024 == 0, "every sub-tile starts on a 1024-byte swizzle atom");
    static_assert(ST * STAGE_BYTES <= MKG_LAUNCH_RING_BYTES, "ring exceeds the launch-wide budget");
    static_assert(MKG_LAUNCH_CONSUMERS == 2, "the warpgroup split assumes two consumers");
};

// Where one unit sits: its tile, and the chunks and K tiles it covers.
typedef struct mkg_unit {
    mkg_tile t;
    int tile;           /* tile index in unit order */
    int splits;         /* units per tile (1: no split) */
    int chunks;         /* canonical chunks of K */
    int c0, c1;         /* chunks [c0, c1) of this unit */
    int kct, kt;        /* K tiles per chunk, K tiles in all */
} mkg_unit;

// CL > 1 (cluster rows): `unit` numbers cluster tiles (CL x TM rows, never split) and
// `rank` is this CTA's place in its cluster; every CTA of a cluster runs the same units.
// ONE: the caller knows K is one chunk (the one-chunk kernels): no chunk or split arithmetic, so
// the producer's path to its first load has mkg_tile_of_unit's divisions only (v34: it had 9).
// KH: K sub-tiles per stage (a K tile is KH TK deep).
template <int TM, int TN, int TK, int CL = 1, bool ONE = false, int KH = 1>
static __device__ __forceinline__ mkg_unit mkg_unit_of(const mkg_gemm_params *p, int m, int unit, int raster,
                                                       int group, int split, uint32_t rank = 0)
{
    mkg_unit u;
    if constexpr (ONE) {
        u.chunks = u.splits = 1;
        u.tile = unit;
        u.c0 = 0;
        u.c1 = 1;
        u.kct = u.kt = mkg_ceil_div(p->k, TK * KH);
        u.t = mkg_tile_of_cluster_unit(u.tile, (int)rank, CL, mkg_ceil_div(m, TM), mkg_ceil_div(p->n, TN), raster,
                                       group);
        return u;
    }
    // NOTE: the chunk count comes from the host and the split arithmetic divides by multiplying
    // (mkg_div_split). A division of a register by a register is a MUFU-based sequence of the vector
    // pipe, so its result, and every loop bounded by it, leaves the uniform datapath: the chunked
    // kernel's K loop then kept its ring slot and parity in vector registers and rebuilt each wgmma
    // descriptor through R2UR, ~20% more cycles per stage than the one-chunk kernel's loop (v63's
    // probe, v64 in bench/NOTES.md). Now the unit's chunk range and K-tile bounds come from kernel
    // parameters, blockIdx and gridDim by uniform operations. Same ranges as mkg_split_range.
    u.chunks = p->chunks;
    u.splits = CL > 1 ? 1 : mkg_split_count(split, u.chunks);
    if (u.splits == 1) {
        u.tile = unit;                                // an unsplit unit is its tile and runs every chunk
        u.c0 = 0;
        u.c1 = u.chunks;
    } else {
        u.tile = mkg_div_split(unit, u.splits);
        const int s = unit - u.tile * u.splits;
        u.c0 = mkg_div_split(s * u.chunks, u.splits);
        u.c1 = mkg_div_split((s + 1) * u.chunks, u.splits);
    }
    u.kct = u.chunks == 1 ? mkg_ceil_div(p->k, TK * KH) : p->kc / (TK * KH);
    u.kt = mkg_ceil_div(p->k, TK * KH);
    u.t = mkg_tile_of_cluster_unit(u.tile, (int)rank, CL, mkg_ceil_div(m, TM), mkg_ceil_div(p->n, TN), raster,
                                   group);
    return u;
}

// Work units of a schedule for an M x N output (K split as the params' chunks allow);
// for cluster rows, units per cluster.
template <int TM, int TN, int CL = 1, bool ONE = false>
static __device__ __forceinline__ int mkg_unit_count(const mkg_gemm_params *p, int m, int split)
{
    if constexpr (CL > 1 || ONE)
        return mkg_ceil_div(m, TM * CL) * mkg_ceil_div(p->n, TN);
    return mkg_ceil_div(m, TM) * mkg_ceil_div(p->n, TN) * mkg_split_count(split, p->chunks);
}

// ---- producer: one elected thread --------------------------------------------------

// L2 policies of a unit's operand loads. A GEMM whose M fits one tile reads each B (weight)
// tile once, so B streams under evict-first and does not push the L2's other lines (code,
// the A rows every unit shares, split-K partials) out; so does every B with
// MKG_DEPS_B_EVICT_FIRST (a megakernel's weights). A standalone one-tile GEMM's A is read by
// this launch only: evict-first too, so its lines are not kept past the launch either. A
// megakernel's A (activations, deps.wait set) keeps the default policy. MKG_DEPS_L2_DEFAULT
// turns the one-tile rule off (the bench's --l2-hints 0).
// NOTE: a load without evict-first is issued unhinted. An explicit createpolicy
// L2::evict_normal operand is not the default: with it, rows that live on L2 reuse ran up
// to 1.6x slower (v70's first run, ac5a36f).
struct mkg_load_policy {
    uint64_t first;     // the evict-first policy
    bool a, b;          // A / B loads under it
};

template <int TM>
static __device__ __forceinline__ mkg_load_policy mkg_load_policies(const mkg_gemm_params *p, int m)
{
    const bool once = m <= TM && !(p->deps.flags & MKG_DEPS_L2_DEFAULT);
    mkg_load_policy q;
    q.first = mkg_l2_policy_evict_first();
    q.b = once || (p->deps.flags & MKG_DEPS_B_EVICT_FIRST);
    q.a = once && !p->deps.wait;
    return q;
}

// One operand load, under the evict-first policy when `first` is set, else unhinted.
static __device__ __forceinline__ void mkg_tma_load_2d_pol(uint32_t dst, const CUtensorMap *map, uint32_t bar, int c0,
                                                           int c1, bool first, uint64_t policy)
{
    if (first)
        mkg_tma_load_2d_hint(dst, map, bar, c0, c1, policy);
    else
        mkg_tma_load_2d(dst, map, bar, c0, c1);
}

// Megakernel GEMMs (deps.wait set) split a unit's loads in two: B (weights) of the
// first stages goes out before A's rows are ready, so the weight stream overlaps the
// wait; then A lands in those stages and the rest of the unit follows. Returns the
// number of stages started (0 under MKG_DEPS_READY_IN_ORDER when A is complete already)
// and the A rows [*row0, *row1) to wait for.
// NP: producer threads sharing the ring (mkg_ring_mine); this one fills its own slots only.
template <int TM, int TN, int TK, int ST, int SWAP, bool ONE = false, int KH = 1, int NP = 1>
static __device__ __forceinline__ int mkg_gemm_produce_b_first(const mkg_gemm_params *p, int m, int unit, int raster,
                                                               int group, int split, mkg_ring *r, const mkg_smem *sm,
                                                               int *row0, int *row1)
{
    typedef mkg_shape<TM, TN, TK, ST, SWAP, KH> S;
    const mkg_unit u = mkg_unit_of<TM, TN, TK, 1, ONE, KH>(p, m, unit, raster, group, split);
    *row0 = u.t.m * TM;
    *row1 = u.t.m * TM + TM;
    // MKG_DEPS_READY_IN_ORDER: input complete already (the producer reached the unit late, e.g.
    // after a ring layout change): B first would only queue A's loads behind the unit's first
    // stages of B in this SM's TMA unit, and the ring would refill in bursts.
    if (NP == 1 && (p->deps.flags & MKG_DEPS_READY_IN_ORDER) &&
        mkg_dep_ready_rows(p->deps.wait, p->deps.wait_per_row, m, *row0, *row1))
        return 0;
    const CUtensorMap *map_b = &p->b_map[mkg_box_class(TN)];
    const int kt0 = u.c0 * u.kct;
    const int cap = (int)((p->deps.flags >> MKG_DEPS_PRE_SHIFT) & 0xffu);
    const int pre = min(cap ? min(cap, ST) : ST, min(u.c1 * u.kct, u.kt) - kt0);
    const mkg_load_policy pol = mkg_load_policies<TM>(p, m);
    for (int i = 0; i < pre; ++i) {
        const uint32_t s = r->slot;
        if (!mkg_ring_mine<NP>(s)) {
            mkg_ring_advance<ST>(r);                  // the other producer's slot
            continue;
        }
        mkg_ring_wait_empty(r, sm, s);
        const uint32_t full = sm->full + 8u * s;
        mkg_mbarrier_arrive_expect_tx(full, S::STAGE_BYTES);
#pragma unroll
        for (int h = 0; h < KH; ++h)
            mkg_tma_load_2d_pol(sm->ring + s * S::STAGE_BYTES + h * S::SUB_BYTES + S::A_BYTES, map_b, full,
                                ((kt0 + i) * KH + h) * TK, u.t.n * TN, pol.b, pol.first);
        mkg_ring_advance<ST>(r);
    }
    if ((p->deps.flags & MKG_DEPS_L2_TAIL) && mkg_producer_rank<NP>() == 0) {
        const int tail = (int)((p->deps.flags >> MKG_DEPS_TAIL_SHIFT) & 0xffu);
        const int kt_end = min(min(u.c1 * u.kct, u.kt), tail ? kt0 + pre + tail : 0x7fffffff);
        for (int kt = kt0 + pre; kt < kt_end; ++kt)
#pragma unroll
            for (int h = 0; h < KH; ++h)
                mkg_tma_prefetch_l2_2d(map_b, (kt * KH + h) * TK, u.t.n * TN);
    }
    if (p->deps.flags & MKG_DEPS_A_MAP_PREFETCH)
        mkg_prefetch_tensormap(&p->a_map[mkg_box_class(TM)]);
    return pre;
}

// The rest of a unit's loads after `pre` B-only stages (pre = 0: the whole unit).
// CL > 1: this CTA loads its own A and the rank-th 1/CL of the B tile, multicast to
// every CTA of the cluster; each CTA's full barrier still expects a whole stage.
// PFM: first prefetch.tensormap the unit's A and B maps (callers whose maps sit in global
// memory, not in kernel parameters; see mkg_dispatch_produce).
template <int TM, int TN, int TK, int ST, int SWAP, int CL = 1, bool ONE = false, int KH = 1, int NP = 1,
          bool PFM = false>
static __device__ __forceinline__ void mkg_gemm_produce_rest(const mkg_gemm_params *p, int m, int unit, int raster,
                                                             int group, int split, mkg_ring *r, const mkg_smem *sm,
                                                             int pre)
{
    static_assert(NP == 1 || CL == 1, "cluster rows keep one producer");
    static_assert(NP <= ST, "every producer owns a slot (mkg_ring_mine)");
    typedef mkg_shape<TM, TN, TK, ST, SWAP, KH> S;
    static_assert(CL == 1 || (!SWAP && (TN / CL) % 8 == 0), "cluster rows multicast whole swizzle atoms of B");
    static_assert(CL == 1 || KH == 1, "cluster rows stage one K sub-tile");
    const uint32_t rank = CL > 1 ? mkg_cluster_ctarank() : 0u;
    const mkg_unit u = mkg_unit_of<TM, TN, TK, CL, ONE, KH>(p, m, unit, raster, group, split, rank);
    const CUtensorMap *map_a = &p->a_map[mkg_box_class(TM)];
    const CUtensorMap *map_b = &p->b_map[mkg_box_class(TN / CL)];
    if constexpr (PFM) {
        mkg_prefetch_tensormap(map_a);
        mkg_prefetch_tensormap(map_b);
    }
    const int kt0 = u.c0 * u.kct;
    const int kt_end = min(u.c1 * u.kct, u.kt);
    const uint32_t slot0 = (r->slot + (uint32_t)(ST - pre)) % (uint32_t)ST;
    const mkg_load_policy pol = mkg_load_policies<TM>(p, m);
    for (int i = 0; i < pre; ++i) {
        const uint32_t s = (slot0 + (uint32_t)i) % (uint32_t)ST;
        if (!mkg_ring_mine<NP>(s))
            continue;                                 // armed by the other producer, which loads its A
#pragma unroll
        for (int h = 0; h < KH; ++h)
            mkg_tma_load_2d_pol(sm->ring + s * S::STAGE_BYTES + h * S::SUB_BYTES, map_a, sm->full + 8u * s,
                                ((kt0 + i) * KH + h) * TK, u.t.m * TM, pol.a, pol.first);
    }
    for (int kt = kt0 + pre; kt < kt_end; ++kt) {
        const uint32_t s = r->slot;
        if (!mkg_ring_mine<NP>(s)) {
            mkg_ring_advance<ST>(r);                  // the other producer's slot
            continue;
        }
        MKG_PROBE_STAGE(0, kt - kt0);
        mkg_ring_wait_empty(r, sm, s);
        const uint32_t full = sm->full + 8u * s;
        const uint32_t stage = sm->ring + s * S::STAGE_BYTES;
        mkg_mbarrier_arrive_expect_tx(full, S::STAGE_BYTES);
#pragma unroll
        for (int h = 0; h < KH; ++h) {
            const uint32_t sub = stage + h * S::SUB_BYTES;
            const int k0 = (kt * KH + h) * TK;
            mkg_tma_load_2d_pol(sub, map_a, full, k0, u.t.m * TM, pol.a, pol.first);
            if constexpr (CL > 1)
                mkg_tma_load_2d_multicast(sub + S::A_BYTES + rank * (TN / CL) * 128u, map_b, full, k0,
                                          u.t.n * TN + (int)rank * (TN / CL), (uint16_t)((1u << CL) - 1u));
            else
                mkg_tma_load_2d_pol(sub + S::A_BYTES, map_b, full, k0, u.t.n * TN, pol.b, pol.first);
        }
        MKG_PROBE_STAGE(1, kt - kt0);
        mkg_ring_advance<ST>(r);
    }
    r->fills += (uint32_t)(kt_end - kt0);             // the unit's stages, with the `pre` ones
}

// A stage handed to the A writer (mkg_gemm_produce_b_for_a), one 8-byte entry: word 0 holds the
// stage's offset in the ring / 1024 (bits 0-8), its slot (9-12), KH - 1 (13), TM / 8 (14-18),
// SUB_BYTES / 1024 (19-25) and the entry's round tag (26-31: (n / MKG_AQ_ENTRIES + 1) mod 64 for the
// n-th entry, so a zeroed queue holds no entry of round 0); word 1 the stage's first K sub-tile kt * KH
// (bits 0-7), the caller's tag (8-17) and the unit (18-31). Word 0's bits 0-25 all set end the queue.
#define MKG_AQ_END 0x3ffffffu
#define MKG_AQ_ROUND_SHIFT 26

static __device__ __forceinline__ uint32_t mkg_aq_round_tag(uint32_t n)
{
    return (n / MKG_AQ_ENTRIES + 1u) & 63u;
}

// The producer thread: stage (w0, w1) is armed, its B expected; the writer may fill its A. The entry
// goes out as one strong 8-byte store that carries its round tag (the writer polls the entry itself):
// no release store, whose membar most likely waited for the TMA loads just issued (v97's first run:
// ~1.5 us a stage; v97b in bench/NOTES.md). The count of entries pushed is this thread's alone.
// NOTE: at most MKG_AQ_ENTRIES entries are ever unread: an entry names an armed slot whose A is not
// written yet, a slot is armed again only after its consumers, and so the writer, finished it,
// and MKG_AQ_ENTRIES >= any ring's stage count. So no check of the reader's count.
static __device__ __forceinline__ void mkg_aq_push(const mkg_smem *sm, uint32_t w0, uint32_t w1)
{
    const uint32_t q = mkg_aq_at(sm);
    const uint32_t n = mkg_ld_shared_b32(q);
    w0 |= mkg_aq_round_tag(n) << MKG_AQ_ROUND_SHIFT;
    mkg_st_relaxed_cta_shared_b64(q + 8u + 8u * (n % MKG_AQ_ENTRIES), (uint64_t)w1 << 32 | w0);
    mkg_st_shared_b32(q, n + 1u);
}

// Megakernel GEMMs whose A the CTA's A writers bring in themselves (the RMSNorm that feeds the
// GEMM, run inside it: mkg_megakernel.cu): every stage of unit `unit` with B only, and no
// dependency wait (the writers wait for the rows). The stage's full barrier expects the whole
// stage's bytes, B's and A's (the writers' bulk copies, mkg_bulk_load), and gets no arrival here:
// the writer arrives once it issued A's copies, so the phase completes when both landed. Each
// armed stage goes to the writers through the queue (mkg_aq_push), tagged with `tag`.
template <int TM, int TN, int TK, int ST, int SWAP, int KH = 1>
static __device__ __forceinline__ void mkg_gemm_produce_b_for_a(const mkg_gemm_params *p, int m, int unit, int raster,
                                                                int group, int split, mkg_ring *r, const mkg_smem *sm,
                                                                uint32_t tag)
{
    typedef mkg_shape<TM, TN, TK, ST, SWAP, KH> S;
    static_assert(S::STAGE_BYTES % 1024u == 0 && ST * S::STAGE_BYTES / 1024u <= 512u && TM / 8 < 32 && KH <= 2 &&
                      S::SUB_BYTES / 1024u < 128u,
                  "a stage's facts fit the A writer's queue entry");
    const mkg_unit u = mkg_unit_of<TM, TN, TK, 1, false, KH>(p, m, unit, raster, group, split);
    const CUtensorMap *map_b = &p->b_map[mkg_box_class(TN)];
    const int kt0 = u.c0 * u.kct, kt_end = min(u.c1 * u.kct, u.kt);
    const mkg_load_policy pol = mkg_load_policies<TM>(p, m);
    const uint32_t shape = (uint32_t)(KH - 1) << 13 | (uint32_t)(TM / 8) << 14 | (S::SUB_BYTES / 1024u) << 19;
    for (int kt = kt0; kt < kt_end; ++kt) {
        const uint32_t s = r->slot;
        mkg_ring_wait_empty(r, sm, s);
        const uint32_t full = sm->full + 8u * s;
        mkg_mbarrier_expect_tx(full, S::STAGE_BYTES);
#pragma unroll
        for (int h = 0; h < KH; ++h)
            mkg_tma_load_2d_pol(sm->ring + s * S::STAGE_BYTES + h * S::SUB_BYTES + S::A_BYTES, map_b, full,
                                (kt * KH + h) * TK, u.t.n * TN, pol.b, pol.first);
        mkg_aq_push(sm, s * (S::STAGE_BYTES / 1024u) | s << 9 | shape,
                    (uint32_t)(kt * KH) | tag << 8 | (uint32_t)unit << 18);
        mkg_ring_advance<ST>(r);
    }
    r->fills += (uint32_t)(kt_end - kt0);
}

// Waits (bounded) for A rows [row0, row1) of a megakernel GEMM; on a stall the loads
// go out anyway, the consumers drain, and the grid exits with the stall recorded.
// With deps.stamps set, unit's {t_reached, now} go to the timeline after the wait.
static __device__ __forceinline__ void mkg_gemm_wait_a_rows(const mkg_gemm_params *p, int m, int row0, int row1,
                                                            int unit, uint64_t t_reached, bool stamp = true)
{
    mkg_dep_wait_rows(p->deps.wait, p->deps.wait_per_row, m, row0, row1, p->deps.stall, p->deps.tag,
                      p->deps.timeout_ns);
    mkg_fence_proxy_async_global();
    if (p->deps.stamps && stamp) {
        p->deps.stamps[2 * unit] = t_reached;
        p->deps.stamps[2 * unit + 1] = mkg_globaltimer();
    }
}

// The producer's arrival at a unit, for the timeline (0 when it is off).
static __device__ __forceinline__ uint64_t mkg_gemm_stamp_reached(const mkg_gemm_params *p)
{
    return p->deps.stamps ? mkg_globaltimer() : 0;
}

// All TMA loads of one unit (with the dependency split when p->deps.wait is set).
template <int TM, int TN, int TK, int ST, int SWAP, bool ONE = false, int KH = 1, int NP = 1>
static __device__ __forceinline__ void mkg_gemm_produce_unit(const mkg_gemm_params *p, int m, int unit,
                                                             int raster, int group, int split, mkg_ring *r,
                                                             const mkg_smem *sm)
{
    int pre = 0;
    if (p->deps.wait) {
        int row0, row1;
        const uint64_t t_reached = mkg_gemm_stamp_reached(p);
        pre = mkg_gemm_produce_b_first<TM, TN, TK, ST, SWAP, ONE, KH, NP>(p, m, unit, raster, group, split, r, sm,
                                                                          &row0, &row1);
        mkg_gemm_wait_a_rows(p, m, row0, row1, unit, t_reached, mkg_producer_rank<NP>() == 0);
    }
    mkg_gemm_produce_rest<TM, TN, TK, ST, SWAP, 1, ONE, KH, NP>(p, m, unit, raster, group, split, r, sm, pre);
}

// ---- consumers: 2 warpgroups, wg = 0 or 1 -------------------------------------------

// The chunk fold's starting value (mkg_gemm_consume_step): -0.0f, the identity of IEEE addition
// (-0 + x == x for every x, +0 included), so a unit's first chunk folds like the others.
template <int N>
static __device__ __forceinline__ void mkg_fold_reset(float *tot)
{
#pragma unroll
    for (int i = 0; i < N; ++i)
        tot[i] = -0.0f;
}

// Partials of (tile, chunk, warpgroup): 64 x WN floats laid out so that thread t's
// float4 number q sits at q * 512 + 4 t (each warp moves 512 contiguous bytes).
template <int WN>
static __device__ __forceinline__ float *mkg_partial_at(const mkg_gemm_params *p, const mkg_unit *u, int c, int wg)
{
    return p->partials + ((size_t)(u->tile * u->chunks + c) * 2 + wg) * (64 * WN) + 4 * (threadIdx.x & 127);
}

template <int WN>
static __device__ __forceinline__ void mkg_partial_store(float *at, const float *d)
{
#pragma unroll
    for (int q = 0; q < WN / 8; ++q)
        mkg_st_global_v4(at + 512 * q, d[4 * q], d[4 * q + 1], d[4 * q + 2], d[4 * q + 3]);
}

// d = partial(chunk 0) + partial(1) + ... in chunk order (d: the fold registers).
// GROUPED: the loads of G chunks go out together before their adds (at most 32 floats in
// flight per thread): a warp issues in order, so one chunk at a time costs one L2 round trip
// per chunk. The adds keep the chunk order, so the bits are those of the one-chunk-at-a-time
// fold. NOTE: the shipped kernel only; in the megakernel the extra live registers raised its
// spills from 1364 / 2496 to 2112 / 4936 bytes.
template <int WN, bool GROUPED>
static __device__ __forceinline__ void mkg_partial_fold(const mkg_gemm_params *p, const mkg_unit *u, int wg, float *d)
{
    constexpr int V = WN / 8;                                     // float4 per chunk per thread
    constexpr int G = !GROUPED || V >= 8 ? 1 : 8 / V;            // chunks loaded together
    for (int c0 = 0; c0 < u->chunks; c0 += G) {
        float4 v[G][V];
#pragma unroll
        for (int g = 0; g < G; ++g) {
            if (c0 + g < u->chunks) {
                const float *at = mkg_partial_at<WN>(p, u, c0 + g, wg);
#pragma unroll
                for (int q = 0; q < V; ++q)
                    v[g][q] = mkg_ld_global_cg_v4(at + 512 * q);
            }
        }
#pragma unroll
        for (int g = 0; g < G; ++g) {
            if (c0 + g < u->chunks) {
#pragma unroll
                for (int q = 0; q < V; ++q) {
                    if (c0 + g == 0) {
                        d[4 * q] = v[g][q].x, d[4 * q + 1] = v[g][q].y, d[4 * q + 2] = v[g][q].z,
                        d[4 * q + 3] = v[g][q].w;
                    } else {
                        d[4 * q] += v[g][q].x, d[4 * q + 1] += v[g][q].y, d[4 * q + 2] += v[g][q].z,
                            d[4 * q + 3] += v[g][q].w;
                    }
                }
            }
        }
    }
}

// The block-scaled form of mkg_partial_fold: tot = the fold of every chunk's raw partial with its
// scales (mkg_block_scales_fold), in chunk order; d (free by now) holds one chunk's partial.
template <int WN, int SWAP>
static __device__ __forceinline__ void mkg_partial_fold_bscaled(const mkg_gemm_params *p, const mkg_unit *u, int wg,
                                                                int m, int x0, int y0, float *d, float *tot)
{
    for (int c = 0; c < u->chunks; ++c) {
        const mkg_bscale_in<WN, SWAP> f = mkg_block_scales_load<WN, SWAP>(p, m, x0, y0, c);
        const float *at = mkg_partial_at<WN>(p, u, c, wg);
#pragma unroll
        for (int q = 0; q < WN / 8; ++q) {
            const float4 v = mkg_ld_global_cg_v4(at + 512 * q);
            d[4 * q] = v.x, d[4 * q + 1] = v.y, d[4 * q + 2] = v.z, d[4 * q + 3] = v.w;
        }
        mkg_block_scales_fold<WN, SWAP>(f, d, tot, c == 0);
    }
}

// Chunk d joins the fold tot: with its block scales where the layer has them (bfold, e4m3 only),
// else added; FIP adds in place (tot entered the unit's first chunk as -0.0f), else the unit's
// first chunk (first) starts the fold.
template <int DT, int WN, int SWAP, bool FIP>
static __device__ __forceinline__ void mkg_chunk_fold(bool bfold, const mkg_bscale_in<WN, SWAP> &f, const float *d,
                                                      float *tot, bool first)
{
    if constexpr (DT == MKG_DTYPE_E4M3) {
        if (bfold)
            mkg_block_scales_fold<WN, SWAP>(f, d, tot, !FIP && first);
    }
    if (!bfold) {
        if constexpr (FIP) {
#pragma unroll
            for (int i = 0; i < WN / 2; ++i)
                tot[i] += d[i];
        } else {
#pragma unroll
            for (int i = 0; i < WN / 2; ++i)
                tot[i] = first ? d[i] : tot[i] + d[i];
        }
    }
}

// Split units: counts this warpgroup's arrival at its tile; true for the last one,
// which then owns the fold (and leaves the counter at 0 for the next launch).
static __device__ __forceinline__ bool mkg_split_arrive_last(const mkg_gemm_params *p, const mkg_unit *u,
                                                             const mkg_smem *sm, int wg)
{
    const int bar = MKG_LAUNCH_BAR_EPI + wg;
    // The warpgroup's partials before the barrier, thread 0's acq_rel count after it: the release
    // publishes them all, and the last arrival's acquire, with the barrier after it, orders the
    // warpgroup's partial reads after every other arrival's (as mkg_dep_signal; v113).
    mkg_bar_sync(bar, 128);
    if ((threadIdx.x & 127) == 0) {
        unsigned int *cnt = p->counters + 2 * u->tile + wg;
        const bool last = mkg_atom_acq_rel_gpu_add_u32(cnt, 1u) == (unsigned int)(u->splits - 1);
        if (last)
            atomicExch(cnt, 0u);
        mkg_st_shared_b32(sm->flag + 4u * wg, last ? 1u : 0u);
    }
    mkg_bar_sync(bar, 128);
    return mkg_warp_uniform((int)mkg_ld_shared_b32(sm->flag + 4u * wg)) != 0;   // a uniform branch
}

// Chunks [*c0, *c1) of work unit `unit`: the consumer runs one step per chunk.
static __device__ __forceinline__ void mkg_unit_chunk_range(const mkg_gemm_params *p, int unit, int split, int *c0,
                                                            int *c1)
{
    const int chunks = mkg_chunk_count(p->k, p->kc);
    const int splits = mkg_split_count(split, chunks);
    mkg_split_range(unit % splits, splits, chunks, c0, c1);
}

// One step: chunk c of work unit `unit`. The caller owns the accumulators d and the
// fold tot (mkg_shape<...>::WN / 2 floats each, d zeroed once before the first step; with FIP,
// tot set by mkg_fold_reset once before the first step, and each unit's last step leaves it so)
// and runs a unit's steps back to back, chunks in increasing order.
// NOTE: steps are flat on purpose. With the chunk loop nested inside the unit loop,
// ptxas serialized every wgmma (advisory C7520, "WG.AR in divergent path"); one loop
// over (unit, chunk) steps with the drain at the end of each keeps them pipelined.
// ONE: the caller knows the GEMM has a single chunk and no split (every unit is one
// step), so d restarts per unit and the epilogue reads d (no fold).
// CL > 1: a released slot is released in every CTA of the cluster (their producers
// multicast into it), and only one-chunk units run.
// XE: staged epilogue stores use the shared memory past this row's ring (mkg_shape::EPI_BUFS
// buffers per consumer), only where nothing else runs on the ring (the shipped kernel).
// pu: the unit's mkg_unit_of, when the caller keeps it across the unit's steps (the shipped
// kernel: per step its integer divisions cost more than a 128-deep e4m3 chunk's wgmma, v23);
// NULL: computed here. bs: the caller's block-scale carry (shipped kernel): a step loads the
// next chunk's scales while its own chunk runs, and only a unit's first chunk waits for its own.
// CK > 1: a cluster split-K row (mkg_schedules.h) in a cluster of CK CTAs; `unit` is tile * CK +
// this CTA's rank (the SPLIT = CK unit of that rank), and CL stays 1 (each CTA has its own ring).
// A peer (rank > 0) leaves each chunk's partial in its shared memory past the ring (XE staging
// space, which only rank 0 stores C through); rank 0 folds them in after its own chunks.
template <int DT, int TM, int TN, int TK, int ST, int SWAP, bool ONE = !mkg_shape<TM, TN, TK, ST, SWAP>::CHUNKED,
          int CL = 1, bool XE = false, int OT = -1, int KH = 1, int CK = 1,
          bool FIP = XE && DT == MKG_DTYPE_E4M3>
static __device__ __forceinline__ void mkg_gemm_consume_step(const mkg_gemm_params *p, int m, int unit, int c,
                                                             int raster, int group, int split, mkg_ring *r,
                                                             const mkg_smem *sm, int wg, float *d, float *tot,
                                                             const mkg_unit *pu = nullptr,
                                                             mkg_bscale_in<mkg_shape<TM, TN, TK, ST, SWAP>::WN, SWAP>
                                                                 *bs = nullptr)
{
    typedef mkg_shape<TM, TN, TK, ST, SWAP, KH> S;
    constexpr int WN = S::WN;
    static_assert(CL == 1 || ONE, "cluster rows run one chunk per unit");
    static_assert(TK * mkg_dtype_bytes<DT>() == 128, "a stage row is 128 bytes of the input dtype");
    mkg_unit u = pu ? *pu
                    : mkg_unit_of<TM, TN, TK, CL, ONE, KH>(p, m, unit, raster, group, split,
                                                  CL > 1 ? mkg_cluster_ctarank() : 0u);
    if constexpr (!XE) {
        // Callers without XE (the dispatch kernels, megakernels) read p from global memory, so
        // the unit's chunk and K-tile counts are per-lane values to ptxas, and the K loop bounded
        // by them would carry the ring's slot and parity in vector registers (mkg_warp_uniform).
        // The shipped kernel's p is a kernel parameter: uniform already.
        u.splits = mkg_warp_uniform(u.splits);
        u.chunks = mkg_warp_uniform(u.chunks);
        u.c0 = mkg_warp_uniform(u.c0);
        u.c1 = mkg_warp_uniform(u.c1);
        u.kct = mkg_warp_uniform(u.kct);
        u.kt = mkg_warp_uniform(u.kt);
    }
    const uint32_t x_row = S::P == 128 ? 64u * wg : 0u;          // this warpgroup's X rows
    const uint32_t y_row = S::P == 128 ? 0u : (uint32_t)(WN * wg); // this warpgroup's Y rows
    const bool releaser = (threadIdx.x & 127) == 0;
    const int kb = c * u.kct, ke = min(kb + u.kct, u.kt);
    const int x0 = (SWAP ? u.t.n * TN : u.t.m * TM) + (int)x_row;
    const int y0 = (SWAP ? u.t.m * TM : u.t.n * TN) + (int)y_row;
    const bool bscaled = DT == MKG_DTYPE_E4M3 && !ONE && p->a_bscales;
    mkg_bscale_in<WN, SWAP> bsf;
    if constexpr (DT == MKG_DTYPE_E4M3 && !ONE) {
        if (bscaled) {
            if (!bs) {
                bsf = mkg_block_scales_load<WN, SWAP>(p, m, x0, y0, c);
            } else {
                bsf = c == u.c0 ? mkg_block_scales_load<WN, SWAP>(p, m, x0, y0, c) : *bs;
                if (c + 1 < u.c1)
                    *bs = mkg_block_scales_load<WN, SWAP>(p, m, x0, y0, c + 1);
            }
        }
    }
    static_assert(ONE || S::CHUNKED, "kernels with wgmma N > MKG_CHUNKED_MAX_WN run one chunk per unit");
    if constexpr (ONE) {
        // NOTE: the epilogue reads d on data-dependent paths; restarting d unconditionally
        // here keeps ptxas from serializing the next unit's wgmma behind those reads (C7520).
#pragma unroll
        for (int i = 0; i < WN / 2; ++i)
            d[i] = 0.0f;
    }
    uint32_t prev = 0;
    for (int kt = kb; kt < ke; ++kt) {
        const uint32_t s = r->slot;
        mkg_ring_wait_full(r, sm, s);
        MKG_PROBE_STAGE(2 + wg, kt - kb);
        if (kt == kb && c == u.c0)
            MKG_PROBE(3 + 4 * wg);                        // the unit's first stage (not each chunk's)
        const uint32_t stage = sm->ring + s * S::STAGE_BYTES;
        mkg_wgmma_fence();
#pragma unroll
        for (int h = 0; h < KH; ++h) {
            const uint64_t dx = mkg_wgmma_desc_sw128(stage + h * S::SUB_BYTES + S::X_OFF + x_row * 128u);
            const uint64_t dy = mkg_wgmma_desc_sw128(stage + h * S::SUB_BYTES + S::Y_OFF + y_row * 128u);
#pragma unroll
            for (int kk = 0; kk < S::K_STEPS; ++kk)
                mkg_wgmma_m64k16<WN, DT>(d, dx + kk * MKG_WGMMA_DESC_K16_STEP, dy + kk * MKG_WGMMA_DESC_K16_STEP,
                                         (kt != kb) || (h != 0) || (kk != 0));
        }
        mkg_wgmma_commit_group();
        // Keep one stage of wgmma in flight; the one before it has now retired,
        // so its slot goes back to the producer.
        if (kt > kb) {
            mkg_wgmma_wait_group<1>();
            if (releaser)
                mkg_ring_release<CL>(sm, prev);
            MKG_PROBE_STAGE(4 + wg, kt - 1 - kb);
        }
        prev = s;
        mkg_ring_advance<ST>(r);
    }
    mkg_wgmma_wait_group<0>();
#pragma unroll
    for (int i = 0; i < WN / 2; ++i)
        mkg_fence_operand(d[i]);
    MKG_PROBE(4 + 4 * wg);
    if (releaser)
        mkg_ring_release<CL>(sm, prev);

    constexpr int EPI_NB = XE ? S::EPI_BUFS : 2;                  // staging buffers per consumer
    const uint32_t epi = XE ? sm->ring + S::EPI_OFF : sm->epi;
    if constexpr (ONE) {
        if (CL > 1 && x0 >= m)
            return;                                   // the odd last tile row of a cluster: nothing to store
        mkg_apply_input_scale<DT, WN / 2>(p, d);
        mkg_epilogue_store<WN, SWAP, EPI_NB, OT>(p, m, d, x0, y0, r, epi, wg);
    } else {
        // Block-scaled chunks join the fold with their scales (mkg_block_scales_fold); d stays raw.
        bool bfold = false;
        if constexpr (DT == MKG_DTYPE_E4M3)
            bfold = bscaled;
        if constexpr (CK > 1) {
            static_assert(CL == 1 && XE, "cluster split-K: the shipped kernel, one ring per CTA");
            static_assert(S::EPI_OFF + 2u * 64u * WN * 4u <= MKG_LAUNCH_RING_BYTES + MKG_LAUNCH_EPI_BYTES,
                          "a peer's chunk partial fits past the ring (the host checks how many chunks)");
            const uint32_t rank = mkg_cluster_ctarank();
            // Phase of this cluster's fold barriers: tiles it ran before this one, mod 2.
            const uint32_t ph = (uint32_t)((u.tile - (int)(blockIdx.x / CK)) / (int)(gridDim.x / CK)) & 1u;
            // Chunk i's partial of warpgroup wg: 64 x WN floats at part + i * 512 WN bytes, thread
            // t's float4 q at + 2048 q + 16 t (a warp moves 512 contiguous bytes).
            const uint32_t part = sm->ring + S::EPI_OFF + (uint32_t)wg * 256u * WN + 16u * (threadIdx.x & 127);
            if (rank != 0) {
                if (c == u.c0)                        // rank 0 has read this CTA's previous tile
                    mkg_mbarrier_wait_parity_cluster(mkg_fold_bar(sm, MKG_LAUNCH_CONSUMERS + wg), ph ^ 1u);
                const uint32_t at = part + (uint32_t)(c - u.c0) * 512u * WN;
#pragma unroll
                for (int q = 0; q < WN / 8; ++q)
                    mkg_st_shared_v4_f32(at + 2048u * q, d[4 * q], d[4 * q + 1], d[4 * q + 2], d[4 * q + 3]);
                if (c + 1 == u.c1)
                    mkg_mbarrier_arrive_release_cluster(mkg_mapa(mkg_fold_bar(sm, wg), 0u));
                return;
            }
            mkg_chunk_fold<DT, WN, SWAP, false>(bfold, bsf, d, tot, c == u.c0);   // rank 0's own chunks
            if (c + 1 < u.c1)
                return;
            // The left fold goes on through rank 1's chunks, then rank 2's, ...: chunk order.
            mkg_mbarrier_wait_parity_cluster(mkg_fold_bar(sm, wg), ph);
#pragma unroll 1
            for (int pr = 1; pr < CK; ++pr) {
                int pc0, pc1;
                mkg_split_range(pr, CK, u.chunks, &pc0, &pc1);
                const uint32_t peer = mkg_mapa(part, (uint32_t)pr);
#pragma unroll 1
                for (int i = 0; i < pc1 - pc0; ++i) {
                    float4 v[WN / 8];
#pragma unroll
                    for (int q = 0; q < WN / 8; ++q)
                        v[q] = mkg_ld_shared_cluster_v4(peer + (uint32_t)i * 512u * WN + 2048u * q);
                    if constexpr (DT == MKG_DTYPE_E4M3) {
                        if (bfold) {
                            const mkg_bscale_in<WN, SWAP> f = mkg_block_scales_load<WN, SWAP>(p, m, x0, y0, pc0 + i);
#pragma unroll
                            for (int q = 0; q < WN / 8; ++q)
                                d[4 * q] = v[q].x, d[4 * q + 1] = v[q].y, d[4 * q + 2] = v[q].z, d[4 * q + 3] = v[q].w;
                            mkg_block_scales_fold<WN, SWAP>(f, d, tot, false);
                            continue;
                        }
                    }
#pragma unroll
                    for (int q = 0; q < WN / 8; ++q) {
                        tot[4 * q] += v[q].x;
                        tot[4 * q + 1] += v[q].y;
                        tot[4 * q + 2] += v[q].z;
                        tot[4 * q + 3] += v[q].w;
                    }
                }
            }
#pragma unroll 1
            for (int pr = 1; pr < CK; ++pr)
                mkg_mbarrier_arrive_release_cluster(mkg_mapa(mkg_fold_bar(sm, MKG_LAUNCH_CONSUMERS + wg), (uint32_t)pr));
            mkg_apply_input_scale<DT, WN / 2>(p, tot);
            mkg_epilogue_store<WN, SWAP, EPI_NB, OT>(p, m, tot, x0, y0, r, epi, wg);
            return;
        }
        const bool partials = u.splits > 1;
        if (partials)
            mkg_partial_store<WN>(mkg_partial_at<WN>(p, &u, c, wg), d);
        // FIP (e4m3 in the shipped kernel and in the one-layer chunk-stepping dispatch consumers):
        // tot enters a unit's first chunk as -0.0f (mkg_fold_reset: the caller's, then each unit's
        // last step below), and -0 + x is x bit for bit, so the fold is one in-place FADD per
        // accumulator (an FFMA with block scales, v94). `tot = c == c0 ? d : tot + d` compiles to an
        // FADD and an FSEL per accumulator on every chunk, a third of a block-scaled chunk's FP32 work
        // before v94 (v93: block-scaled e4m3 +16%, H100). NOTE: the other dtypes keep the select: tot live between units made the 16-bit and
        // tf32 chunked shipped kernels at WN = 128 spill (224 B stores) and the megakernel's spill
        // stores rise from 1932 to 3312 bytes; their chunks span several stages, so the FSEL is cheap.
        mkg_chunk_fold<DT, WN, SWAP, FIP>(bfold, bsf, d, tot, c == u.c0);
        if (c + 1 < u.c1)
            return;                                   // the unit's next chunk follows on this CTA
        if (partials) {
            if (!mkg_split_arrive_last(p, &u, sm, wg)) {
                if constexpr (FIP)
                    mkg_fold_reset<WN / 2>(tot);
                return;
            }
            if constexpr (DT == MKG_DTYPE_E4M3) {
                if (bfold)
                    mkg_partial_fold_bscaled<WN, SWAP>(p, &u, wg, m, x0, y0, d, tot);
                else
                    mkg_partial_fold<WN, XE>(p, &u, wg, tot);
            } else {
                mkg_partial_fold<WN, XE>(p, &u, wg, tot);
            }
        }
        mkg_apply_input_scale<DT, WN / 2>(p, tot);
        mkg_epilogue_store<WN, SWAP, EPI_NB, OT>(p, m, tot, x0, y0, r, epi, wg);
        if constexpr (FIP)
            mkg_fold_reset<WN / 2>(tot);
    }
}

// ---- ping-pong consumers (PP rows; the shipped kernel only) ---------------------------
//
// One consumer warpgroup computes the whole TM = 128 x TN tile of a work unit (one K chunk,
// no split): per 32-byte K step two wgmma m64nTN, A rows 0..63 into d and rows 64..127 into
// d + TN / 2, on the same B descriptor. The warpgroups take alternate units of the CTA, so
// while one runs a unit's epilogue the other's mainloop keeps the tensor cores busy. Each
// slot is consumed by one warpgroup, which arrives on its empty barrier for both (it counts
// MKG_LAUNCH_CONSUMERS arrivals).
// Hand-off: a warpgroup walks past the other's unit in the ring without waiting (skip), so
// before its own K loop it waits on named barrier MKG_LAUNCH_BAR_PP + wg until the other
// warpgroup has passed the full barrier of every K tile of the previous unit. Without it the
// skipper could run two or more phases ahead of a slot's full barrier, and a parity wait
// cannot tell those phases apart (it would read a slot still holding an older K tile).
// With it, every earlier use of each slot has landed and this use is at most one phase
// ahead: the next fill needs this warpgroup's own release.

// K tiles of a one-chunk, unsplit unit, as the producer loads them (mkg_gemm_produce_rest).
template <int TK>
static __device__ __forceinline__ int mkg_pp_ktiles(const mkg_gemm_params *p)
{
    return min(mkg_chunk_ktiles(p->k, p->kc, TK), mkg_ceil_div(p->k, TK));
}

// d: TN floats, owned by the caller. wait >= 0: the named barrier to wait on before the K loop
// (the other warpgroup's hand-off). signal >= 0: arrive on that named barrier for the other
// warpgroup (it runs the CTA's next unit) once every K tile of this unit has landed.
// NOTE: the hand-off is as early as the protocol allows (v39): the unit's set-up (coordinates,
// zeroed accumulators) runs before the wait, and the signal goes out right after the last
// full-barrier wait, so the next warpgroup's first wgmma queue behind this unit's last two
// stages. Signalled after the loop's last wait_group, the tensor pipe drained at every tile
// edge: measured +1.2% at 8192^3 bf16, +3% on K = 2048 rows, +2-6% in e4m3 (bench/NOTES.md).
// XE: the shipped kernel (params in kernel parameter space; C staged past this row's ring,
// mkg_shape::EPI_BUFS buffers). Otherwise a dispatcher's call (params in global memory, C staged
// in the launch-wide epilogue area, two buffers per warpgroup): the unit's K tile count is then
// made warp-uniform (mkg_warp_uniform), so that the K loop it bounds stays on the uniform datapath.
template <int DT, int TM, int TN, int TK, int ST, int OT = -1, bool XE = true>
static __device__ __forceinline__ void mkg_gemm_consume_pp(const mkg_gemm_params *p, int m, int unit, int raster,
                                                           int group, mkg_ring *r, const mkg_smem *sm, int wg,
                                                           float *d, int wait, int signal)
{
    typedef mkg_shape<TM, TN, TK, ST, 0> S;
    constexpr int H = TN / 2;                                     // accumulators per m64 half
    static_assert(TM == 128 && S::WN == TN, "ping-pong rows: 128-row tiles, one warpgroup per tile");
    static_assert(TK * mkg_dtype_bytes<DT>() == 128, "a stage row is 128 bytes of the input dtype");
    const mkg_unit u = mkg_unit_of<TM, TN, TK, 1, true>(p, m, unit, raster, group, 1);   // one chunk
    const bool releaser = (threadIdx.x & 127) == 0;
    const int ke = XE ? mkg_pp_ktiles<TK>(p) : mkg_warp_uniform(mkg_pp_ktiles<TK>(p));
#pragma unroll
    for (int i = 0; i < TN; ++i)
        d[i] = 0.0f;
    if (wait >= 0)
        mkg_bar_sync(wait, 256);
    uint32_t prev = 0;
    for (int kt = 0; kt < ke; ++kt) {
        const uint32_t s = r->slot;
        mkg_ring_wait_full(r, sm, s);
        if (kt == ke - 1 && signal >= 0)
            mkg_bar_arrive(signal, 256);                          // every K tile of this unit has landed
        const uint32_t stage = sm->ring + s * S::STAGE_BYTES;
        const uint64_t dx0 = mkg_wgmma_desc_sw128(stage);
        const uint64_t dx1 = mkg_wgmma_desc_sw128(stage + 64u * 128u);
        const uint64_t dy = mkg_wgmma_desc_sw128(stage + S::A_BYTES);
        mkg_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < S::K_STEPS; ++kk) {
            const uint32_t acc = (kt != 0) || (kk != 0);
            mkg_wgmma_m64k16<TN, DT>(d, dx0 + kk * MKG_WGMMA_DESC_K16_STEP, dy + kk * MKG_WGMMA_DESC_K16_STEP, acc);
            mkg_wgmma_m64k16<TN, DT>(d + H, dx1 + kk * MKG_WGMMA_DESC_K16_STEP, dy + kk * MKG_WGMMA_DESC_K16_STEP,
                                     acc);
        }
        mkg_wgmma_commit_group();
        if (kt > 0) {
            mkg_wgmma_wait_group<1>();
            if (releaser) {
                mkg_ring_release<1>(sm, prev);
                mkg_ring_release<1>(sm, prev);
            }
        }
        prev = s;
        mkg_ring_advance<ST>(r);
    }
    mkg_wgmma_wait_group<0>();
#pragma unroll
    for (int i = 0; i < TN; ++i)
        mkg_fence_operand(d[i]);
    if (releaser) {
        mkg_ring_release<1>(sm, prev);
        mkg_ring_release<1>(sm, prev);
    }
    const int x0 = u.t.m * TM, y0 = u.t.n * TN;
    constexpr int EPI_NB = XE ? S::EPI_BUFS : 2;                  // staging buffers per consumer
    const uint32_t epi = XE ? sm->ring + S::EPI_OFF : sm->epi;
    mkg_apply_input_scale<DT, TN>(p, d);
    mkg_epilogue_store<TN, 0, EPI_NB, OT>(p, m, d, x0, y0, r, epi, wg);
    mkg_epilogue_store<TN, 0, EPI_NB, OT>(p, m, d + H, x0 + 64, y0, r, epi, wg);
}

// The other warpgroup's unit: walk past its K tiles in the ring without touching them.
template <int TK, int ST, bool XE = true>
static __device__ __forceinline__ void mkg_gemm_skip_pp(const mkg_gemm_params *p, mkg_ring *r)
{
    const int kt = XE ? mkg_pp_ktiles<TK>(p) : mkg_warp_uniform(mkg_pp_ktiles<TK>(p));
    for (int k = 0; k < kt; ++k)
        mkg_ring_advance<ST>(r);
}

// Consumer warpgroup wg of a ping-pong row: this CTA's units first, first + stride, ... < units
// (every bound warp-uniform). Unit i of the CTA runs on warpgroup i & 1 (mkg_gemm_consume_pp;
// warpgroup w waits on named barrier MKG_LAUNCH_BAR_PP + w); the other warpgroup walks past its
// K tiles. The last unit's warpgroup signals too, and the other waits for it before returning:
// every arrive has its matching wait within the call, and both warpgroups leave with every fill
// of the call landed, so another call (any row, pingpong or not) may follow on the same ring.
// NOTE: without that last hand-off the skipper of the last unit left up to two phases ahead of a
// slot's full barrier, and the next layer of a dispatch kernel read stale stages or hung (v68's
// first GPU run: Dispatch.PingPongRowsFromTheTable). XE as for mkg_gemm_consume_pp.
template <int DT, int TM, int TN, int TK, int ST, int OT = -1, bool XE = true>
static __device__ __forceinline__ void mkg_gemm_consume_pp_units(const mkg_gemm_params *p, int m, int first,
                                                                 int stride, int units, int raster, int group,
                                                                 mkg_ring *r, const mkg_smem *sm, int wg)
{
    float dp[TN];                                                 // (128, TN): two (64, TN) halves
    const int mine = first < units ? (units - first + stride - 1) / stride : 0;
    int i = 0;
    for (int u = first; u < units; u += stride, ++i) {
        if ((i & 1) == wg)
            mkg_gemm_consume_pp<DT, TM, TN, TK, ST, OT, XE>(p, m, u, raster, group, r, sm, wg, dp,
                                                            i > 0 ? MKG_LAUNCH_BAR_PP + wg : -1,
                                                            MKG_LAUNCH_BAR_PP + (1 - wg));
        else
            mkg_gemm_skip_pp<TK, ST, XE>(p, r);
    }
    if (mine > 0 && ((mine - 1) & 1) != wg)
        mkg_bar_sync(MKG_LAUNCH_BAR_PP + wg, 256);                // the last unit's K tiles have landed
}

// Runs every chunk of work unit `unit` (a loop around mkg_gemm_consume_step for
// callers that own no step loop; see the NOTE above for when to prefer steps).
template <int DT, int TM, int TN, int TK, int ST, int SWAP>
static __device__ __forceinline__ void mkg_gemm_consume_unit(const mkg_gemm_params *p, int m, int unit, int raster,
                                                             int group, int split, mkg_ring *r, const mkg_smem *sm,
                                                             int wg, float *d, float *tot)
{
    // The unit once, and block scales one chunk ahead, as in the shipped kernel's step loop (v23).
    const mkg_unit u = mkg_unit_of<TM, TN, TK>(p, m, unit, raster, group, split);
    mkg_bscale_in<mkg_shape<TM, TN, TK, ST, SWAP>::WN, SWAP> bs{};
    for (int c = u.c0; c < u.c1; ++c)
        mkg_gemm_consume_step<DT, TM, TN, TK, ST, SWAP>(p, m, unit, c, raster, group, split, r, sm, wg, d, tot, &u,
                                                        &bs);
}

#endif /* MKG_MAINLOOP_SM90_CUH */
