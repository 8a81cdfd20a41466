/* mkg_mainloop_sm90.cuh - one work unit of a schedule: the producer's TMA loads
 * and the consumers' wgmma mainloop plus epilogue.
 *
 * A unit is one TM x TN tile of C over all of K. The producer thread streams
 * ceil(K / TK) stages of A (TM x TK) and B (TN x TK) into the ring; each stage
 * is one TMA box per operand, 128-byte swizzled, landing on full[slot].
 * The two consumer warpgroups split the MMA tile:
 *   X = the operand on the 64-row MMA side (A, or B when SWAP), P rows
 *   Y = the operand on the wgmma N side    (B, or A when SWAP), Q rows
 *   P == 128: warpgroup w takes X rows 64w .. 64w+63, all Q columns
 *   P == 64 : both take the 64 X rows, warpgroup w takes Y rows w Q/2 .. (w+1) Q/2 - 1
 * Accumulation order for an element is fixed: k16 steps in increasing k, the
 * first one with scale-d = 0, so C's bits do not depend on the schedule.
 */
#ifndef MKG_MAINLOOP_SM90_CUH
#define MKG_MAINLOOP_SM90_CUH

#include <stdint.h>

#include "mkg_epilogue_sm90.cuh"
#include "mkg_gemm.h"
#include "mkg_pipeline_sm90.cuh"
#include "mkg_ptx_sm90.cuh"
#include "mkg_tile_order.h"
#include "mkg_wgmma_sm90.cuh"

// Compile-time facts of one schedule row, checked against the launch shape.
template <int TM, int TN, int TK, int ST, int SWAP>
struct mkg_shape {
    static constexpr int P = SWAP ? TN : TM;                     // MMA rows per tile
    static constexpr int Q = SWAP ? TM : TN;                     // MMA columns per tile
    static constexpr int WN = P == 128 ? Q : Q / 2;              // wgmma N of one consumer
    static constexpr uint32_t A_BYTES = TM * TK * 2;             // (TM, TK) bf16/fp16, 128B swizzle
    static constexpr uint32_t B_BYTES = TN * TK * 2;             // (TN, TK)
    static constexpr uint32_t STAGE_BYTES = A_BYTES + B_BYTES;
    static constexpr uint32_t X_OFF = SWAP ? A_BYTES : 0;        // X operand inside a stage
    static constexpr uint32_t Y_OFF = SWAP ? 0 : A_BYTES;        // Y operand inside a stage
    static_assert(TK * 2 == 128, "one stage row is one 128-byte swizzle span");
    static_assert(P == 64 || P == 128, "two consumer warpgroups cover 64 or 128 MMA rows");
    static_assert(WN % 8 == 0 && WN >= 8 && WN <= 256, "wgmma N is 8..256 in steps of 8");
    static_assert(TM % 8 == 0 && TN % 8 == 0, "tiles are whole 1024-byte swizzle atoms");
    static_assert(TM <= 256 && TN <= 256, "a TMA box is at most 256 rows");
    static_assert(ST >= 3 && ST <= MKG_LAUNCH_MAX_STAGES, "3 .. MAX_STAGES stages");
    static_assert(ST * STAGE_BYTES <= MKG_LAUNCH_RING_BYTES, "ring exceeds the launch-wide budget");
    static_assert(MKG_LAUNCH_CONSUMERS == 2, "the warpgroup split assumes two consumers");
};

// Work units of a schedule for an M x N output.
template <int TM, int TN>
static __device__ __forceinline__ int mkg_unit_count(int m, int n)
{
    return mkg_ceil_div(m, TM) * mkg_ceil_div(n, TN);
}

// ---- producer: one elected thread --------------------------------------------------

template <int TM, int TN, int TK, int ST, int SWAP>
static __device__ __forceinline__ void mkg_gemm_produce_unit(const mkg_gemm_params *p, int m, int unit,
                                                             int raster, int group, mkg_ring *r,
                                                             const mkg_smem *sm)
{
    typedef mkg_shape<TM, TN, TK, ST, SWAP> S;
    const mkg_tile t = mkg_tile_of_unit(unit, mkg_ceil_div(m, TM), mkg_ceil_div(p->n, TN), raster, group);
    const CUtensorMap *map_a = &p->a_map[mkg_box_class(TM)];
    const CUtensorMap *map_b = &p->b_map[mkg_box_class(TN)];
    const int ktiles = mkg_ceil_div(p->k, TK);
    for (int kt = 0; kt < ktiles; ++kt) {
        const uint32_t s = r->slot;
        mkg_ring_wait_empty(r, sm, s);
        const uint32_t full = sm->full + 8u * s;
        const uint32_t stage = sm->ring + s * S::STAGE_BYTES;
        mkg_mbarrier_arrive_expect_tx(full, S::STAGE_BYTES);
        mkg_tma_load_2d(stage, map_a, full, kt * TK, t.m * TM);
        mkg_tma_load_2d(stage + S::A_BYTES, map_b, full, kt * TK, t.n * TN);
        mkg_ring_advance<ST>(r);
    }
}

// ---- consumers: 2 warpgroups, wg = 0 or 1 -------------------------------------------

template <int DT, int TM, int TN, int TK, int ST, int SWAP>
static __device__ __forceinline__ void mkg_gemm_consume_unit(const mkg_gemm_params *p, int m, int unit,
                                                             int raster, int group, mkg_ring *r,
                                                             const mkg_smem *sm, int wg)
{
    typedef mkg_shape<TM, TN, TK, ST, SWAP> S;
    constexpr int WN = S::WN;
    const mkg_tile t = mkg_tile_of_unit(unit, mkg_ceil_div(m, TM), mkg_ceil_div(p->n, TN), raster, group);
    const int ktiles = mkg_ceil_div(p->k, TK);
    const uint32_t x_row = S::P == 128 ? 64u * wg : 0u;          // this warpgroup's X rows
    const uint32_t y_row = S::P == 128 ? 0u : (uint32_t)(WN * wg); // this warpgroup's Y rows
    const bool releaser = (threadIdx.x & 127) == 0;

    float d[WN / 2];                                              // (64, WN) fp32 fragment
#pragma unroll
    for (int i = 0; i < WN / 2; ++i)
        d[i] = 0.0f;                                              // overwritten: first k16 has scale-d = 0
    uint32_t prev = 0;
    for (int kt = 0; kt < ktiles; ++kt) {
        const uint32_t s = r->slot;
        mkg_ring_wait_full(r, sm, s);
        const uint32_t stage = sm->ring + s * S::STAGE_BYTES;
        const uint64_t dx = mkg_wgmma_desc_sw128(stage + S::X_OFF + x_row * 128u);
        const uint64_t dy = mkg_wgmma_desc_sw128(stage + S::Y_OFF + y_row * 128u);
        mkg_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < TK / 16; ++kk)
            mkg_wgmma_m64k16<WN, DT>(d, dx + kk * MKG_WGMMA_DESC_K16_STEP, dy + kk * MKG_WGMMA_DESC_K16_STEP,
                                     (kt | kk) != 0);
        mkg_wgmma_commit_group();
        // Keep one stage of wgmma in flight; the one before it has now retired,
        // so its slot goes back to the producer.
        if (kt > 0) {
            mkg_wgmma_wait_group<1>();
            if (releaser)
                mkg_mbarrier_arrive(sm->empty + 8u * prev);
        }
        prev = s;
        mkg_ring_advance<ST>(r);
    }
    mkg_wgmma_wait_group<0>();
#pragma unroll
    for (int i = 0; i < WN / 2; ++i)
        mkg_fence_operand(d[i]);
    if (releaser)
        mkg_mbarrier_arrive(sm->empty + 8u * prev);

    const int x0 = (SWAP ? t.n * TN : t.m * TM) + (int)x_row;
    const int y0 = (SWAP ? t.m * TM : t.n * TN) + (int)y_row;
    mkg_epilogue_store<WN, SWAP>(p, m, d, x0, y0, r, sm, wg);
}

#endif /* MKG_MAINLOOP_SM90_CUH */
