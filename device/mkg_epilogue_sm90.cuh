/* mkg_epilogue_sm90.cuh - writes a consumer warpgroup's FP32 accumulators to C.
 *
 * The accumulator fragment of wgmma m64nNk16 (PTX ISA 9.7.15.5.1, "Figure 148"):
 * thread t of the warpgroup (warp w = t / 32, lane l) holds, for j = 0 .. N/8-1,
 *   d[4j+0], d[4j+1] at row 16w + l/4,     columns 8j + 2(l%4) + {0, 1}
 *   d[4j+2], d[4j+3] at row 16w + l/4 + 8, columns 8j + 2(l%4) + {0, 1}
 * MMA rows are X (A rows = M; with swap_ab, B rows = N) and MMA columns are Y.
 *
 * Two paths write the same bits (each value rounded once by __float2*_rn):
 *   staged: the warpgroup converts its tile chunk by chunk (128 bytes of C columns
 *           x 64 rows, or x WN token rows with swap_ab) into a 128B-swizzled staging
 *           buffer and one thread hands it to a TMA store, which clips at the M and
 *           N the C tensor map was encoded with. Two buffers per warpgroup alternate,
 *           so the warpgroup returns to its next tile's wgmma while the copy drains.
 *   direct: per-element global stores bounded by the runtime M and N; used when a
 *           warpgroup tile is narrower than one chunk, or when the runtime M is below
 *           the encoded M (megakernel decode steps) and the tile crosses it, or when the
 *           tile reaches into a partial 16-byte unit at a ragged N edge.
 * Either way nothing outside the M x N block of C is written.
 * Fused epilogues (MKG_EPI_RESIDUAL, MKG_EPI_SILU_MUL) and GEMMs that signal
 * megakernel dependencies (deps.done) take the direct path; SiLU-mul pairs columns
 * c and c+8 of a tile, which the fragment above keeps in one thread in both
 * orientations (Y columns 8j and 8(j+1); with swap_ab, X rows r and r+8).
 */
#ifndef MKG_EPILOGUE_SM90_CUH
#define MKG_EPILOGUE_SM90_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "mkg_deps_sm90.cuh"
#include "mkg_gemm.h"

// MKG_DISPATCH_WIDE (0 by default; the sample megakernel defines 1 before the device headers):
// the chunk-stepping dispatcher (a CHUNKS = 1 pick) also runs layers of one K chunk without block
// scales on the rows with wgmma N > MKG_CHUNKED_MAX_WN (one unit per step, no chunk fold), fused
// epilogues and dependency counts included. Off, those rows' fused paths are not compiled (in the
// shipped kernel's 128-accumulator rows they spilled) and the host refuses them for such layers
// outside a dispatcher built with it (mkg_schedule_check: only layers that count megakernel
// dependencies; mkg_gemm_launch_ex: never).
#ifndef MKG_DISPATCH_WIDE
#define MKG_DISPATCH_WIDE 0
#endif
// MKG_EPI_STAGED_FUSED (0 by default; the sample megakernel defines 1): fused epilogues and counted
// stores of tiles that are not swapped and lie inside C go through the staging buffers and TMA
// stores (mkg_epilogue_fused_staged_as). Off in the shipped and dispatch kernels, whose run-time
// epilogue variants it made spill more (m64n256 140 -> 168 B, m128n128 s6 16 -> 144 B).
#ifndef MKG_EPI_STAGED_FUSED
#define MKG_EPI_STAGED_FUSED 0
#endif
// MKG_EPI_OT_ONLY (-1 by default; the sample megakernel, all bf16, defines MKG_DTYPE_BF16): the
// run-time epilogue (OT < 0) compiles stores of that output type only, and the dispatcher refuses a
// layer with another (MKG_DISPATCH_BAD_DTYPE). A third of the fused epilogue code: with v101's wide
// rows the megakernel's ptxas took ~10 GB.
#ifndef MKG_EPI_OT_ONLY
#define MKG_EPI_OT_ONLY -1
#endif
// MKG_EPI_DEFER_COUNT (0 by default; the sample megakernel defines 1): a staged tile's count waits
// for the warpgroup's next epilogue or the end of the task's units (mkg_epilogue_flush, which the
// chunk-stepping dispatcher calls after its loop), by when its TMA stores have completed, instead
// of waiting for them right away.
#ifndef MKG_EPI_DEFER_COUNT
#define MKG_EPI_DEFER_COUNT 0
#endif
#include "mkg_pipeline_sm90.cuh"
#include "mkg_ptx_sm90.cuh"

template <int OT>
static __device__ __forceinline__ void mkg_store1(void *c, long long idx, float v)
{
    if constexpr (OT == MKG_DTYPE_BF16)
        ((__nv_bfloat16 *)c)[idx] = __float2bfloat16_rn(v);
    else if constexpr (OT == MKG_DTYPE_FP16)
        ((__half *)c)[idx] = __float2half_rn(v);
    else
        ((float *)c)[idx] = v;
}

// Two horizontally adjacent elements; idx is even and C rows are 16-byte
// aligned, so the pair is naturally aligned for one 4- or 8-byte store.
template <int OT>
static __device__ __forceinline__ void mkg_store2(void *c, long long idx, float v0, float v1)
{
    if constexpr (OT == MKG_DTYPE_BF16)
        *(__nv_bfloat162 *)((__nv_bfloat16 *)c + idx) = __floats2bfloat162_rn(v0, v1);
    else if constexpr (OT == MKG_DTYPE_FP16)
        *(__half2 *)((__half *)c + idx) = __floats2half2_rn(v0, v1);
    else
        *(float2 *)((float *)c + idx) = make_float2(v0, v1);
}

// Residual values read through L2 (a megakernel's other SMs wrote them this launch).
// A residual pair as loaded (two 16-bit values in one word, fp32 in two), and its two values.
template <int OT>
struct mkg_res_raw {
    typedef unsigned int type;
    static __device__ __forceinline__ type load(const void *a, long long idx)
    {
        return __ldcg((const unsigned int *)((const unsigned short *)a + idx));
    }
    static __device__ __forceinline__ float2 get(type u)
    {
        if constexpr (OT == MKG_DTYPE_BF16)
            return __bfloat1622float2(*(const __nv_bfloat162 *)&u);
        else
            return __half22float2(*(const __half2 *)&u);
    }
};

template <>
struct mkg_res_raw<MKG_DTYPE_FP32> {
    typedef float2 type;
    static __device__ __forceinline__ type load(const void *a, long long idx)
    {
        return __ldcg((const float2 *)((const float *)a + idx));
    }
    static __device__ __forceinline__ float2 get(type v) { return v; }
};

template <int OT>
static __device__ __forceinline__ float2 mkg_load2_cg(const void *a, long long idx)
{
    return mkg_res_raw<OT>::get(mkg_res_raw<OT>::load(a, idx));
}

template <int OT>
static __device__ __forceinline__ float mkg_load1_cg(const void *a, long long idx)
{
    if constexpr (OT == MKG_DTYPE_FP32) {
        return __ldcg((const float *)a + idx);
    } else {
        const unsigned short u = __ldcg((const unsigned short *)a + idx);
        if constexpr (OT == MKG_DTYPE_BF16)
            return __bfloat162float(__ushort_as_bfloat16(u));
        else
            return __half2float(__ushort_as_half(u));
    }
}

// d: WN/2 accumulators of a 64 x WN warpgroup tile whose row 0 is X index x0
// and column 0 is Y index y0. m is the current M. Under MKG_EPI_RESIDUAL the residual
// p->aux is added before rounding.
// NOTE: a runtime flag, not a template: a second instantiation spilled in chunked kernels.
template <int WN, int SWAP, int OT>
static __device__ __forceinline__ void mkg_epilogue_store_as(const mkg_gemm_params *p, int m, const float *d,
                                                             int x0, int y0)
{
    const int t = threadIdx.x & 127;
    const int lane = t & 31;
    const int xr = x0 + (t >> 5) * 16 + (lane >> 2);
    const int yc = y0 + 2 * (lane & 3);
    const long long ldc = p->ldc;
    void *c = p->c;
    const int n = p->n;
    const bool res = p->epilogue == MKG_EPI_RESIDUAL;
    const long long ldr = p->ld_aux;
    const void *aux = p->aux;
#pragma unroll
    for (int j = 0; j < WN / 8; ++j) {
        const int y = yc + 8 * j;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int x = xr + 8 * h;
            float v0 = d[4 * j + 2 * h];
            float v1 = d[4 * j + 2 * h + 1];
            if constexpr (!SWAP) {
                // X = row of C (m), Y = column of C (n)
                if (x < m) {
                    const long long base = (long long)x * ldc + y;
                    if (y + 1 < n) {
                        if (res) {
                            const float2 rv = mkg_load2_cg<OT>(aux, (long long)x * ldr + y);
                            v0 += rv.x, v1 += rv.y;
                        }
                        mkg_store2<OT>(c, base, v0, v1);
                    } else if (y < n) {
                        if (res)
                            v0 += mkg_load1_cg<OT>(aux, (long long)x * ldr + y);
                        mkg_store1<OT>(c, base, v0);
                    }
                }
            } else {
                // X = column of C (n), Y = row of C (m)
                if (x < n) {
                    if (y < m) {
                        if (res)
                            v0 += mkg_load1_cg<OT>(aux, (long long)y * ldr + x);
                        mkg_store1<OT>(c, (long long)y * ldc + x, v0);
                    }
                    if (y + 1 < m) {
                        if (res)
                            v1 += mkg_load1_cg<OT>(aux, (long long)(y + 1) * ldr + x);
                        mkg_store1<OT>(c, (long long)(y + 1) * ldc + x, v1);
                    }
                }
            }
        }
    }
}

// ---- staged path -----------------------------------------------------------------

template <int OT>
static __device__ __forceinline__ uint32_t mkg_pack2(float v0, float v1)
{
    if constexpr (OT == MKG_DTYPE_BF16) {
        __nv_bfloat162 h = __floats2bfloat162_rn(v0, v1);
        return *(uint32_t *)&h;
    } else {
        __half2 h = __floats2half2_rn(v0, v1);
        return *(uint32_t *)&h;
    }
}

template <int OT>
static __device__ __forceinline__ void mkg_st_shared_elem(uint32_t addr, float v)
{
    if constexpr (OT == MKG_DTYPE_BF16) {
        __nv_bfloat16 h = __float2bfloat16_rn(v);
        mkg_st_shared_b16(addr, *(uint16_t *)&h);
    } else if constexpr (OT == MKG_DTYPE_FP16) {
        __half h = __float2half_rn(v);
        mkg_st_shared_b16(addr, *(uint16_t *)&h);
    } else {
        mkg_st_shared_b32(addr, __float_as_uint(v));
    }
}

// Chunk geometry of the staged path for a (64, WN) warpgroup tile and output type OT.
template <int WN, int SWAP, int OT>
struct mkg_epi_shape {
    static constexpr int OSZ = OT == MKG_DTYPE_FP32 ? 4 : 2;
    static constexpr int CW = 128 / OSZ;                      // C columns per chunk (128 bytes)
    static constexpr int ROWS = SWAP ? WN : 64;               // C rows per chunk
    static constexpr int CHUNKS = SWAP ? 64 / CW : WN / CW;
    static constexpr bool OK = SWAP ? true : WN % CW == 0;    // chunks tile the warpgroup exactly
    static_assert(ROWS * 128 <= MKG_LAUNCH_EPI_BYTES / 4, "a chunk fits one staging buffer");
};

// Staging buffers: warpgroup w owns NB buffers of MKG_EPI_BUF_BYTES at base + (w NB + b) * 8 KB,
// used round robin (r->epi counts the chunks this warpgroup has stored). Before a buffer is
// rewritten, the store that last read it (NB chunks ago) must have finished reading.
//   NB < CHUNKS:  chunk by chunk, each waiting for the store NB chunks back (the launch-wide
//                 area: 2 buffers per warpgroup, which megakernels and the dispatch kernel use);
//   NB >= CHUNKS: the whole warpgroup tile in one pass, two barriers per tile, and no wait on
//                 this tile's own stores: their reads overlap the next tile's mainloop. The
//                 shipped kernel gives a schedule whatever the launch-wide budget leaves past its
//                 ring (mkg_shape::EPI_BUFS), so rows with a smaller ring get more buffers.
#define MKG_EPI_BUF_BYTES (8 * 1024)

template <int WN, int SWAP, int OT>
static __device__ __forceinline__ void mkg_epilogue_chunk_to_smem(const float *d, int ch, uint32_t buf)
{
    typedef mkg_epi_shape<WN, SWAP, OT> E;
    const int t = threadIdx.x & 127;
    const int lane = t & 31;
    const int xr = (t >> 5) * 16 + (lane >> 2);                // X row of d[4j + 2h + e] is xr + 8h
    const int yc = 2 * (lane & 3);                            // Y column is 8j + yc + e
    if constexpr (!SWAP) {
        // chunk = 64 X rows (C rows) x CW Y columns (C columns)
#pragma unroll
        for (int jj = 0; jj < E::CW / 8; ++jj) {
            const int j = ch * (E::CW / 8) + jj;
            const int col = 8 * jj + yc;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const uint32_t a = buf + mkg_sw128_offset(xr + 8 * h, col * E::OSZ);
                const float v0 = d[4 * j + 2 * h], v1 = d[4 * j + 2 * h + 1];
                if constexpr (OT == MKG_DTYPE_FP32)
                    mkg_st_shared_v2_b32(a, __float_as_uint(v0), __float_as_uint(v1));
                else
                    mkg_st_shared_b32(a, mkg_pack2<OT>(v0, v1));
            }
        }
    } else {
        // chunk = WN Y rows (C rows: tokens) x CW X columns (C columns: weights)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int col = xr + 8 * h - ch * E::CW;
            if (col >= 0 && col < E::CW) {
#pragma unroll
                for (int j = 0; j < WN / 8; ++j)
#pragma unroll
                    for (int e = 0; e < 2; ++e)
                        mkg_st_shared_elem<OT>(buf + mkg_sw128_offset(8 * j + yc + e, col * E::OSZ),
                                               d[4 * j + 2 * h + e]);
            }
        }
    }
}

static __device__ __forceinline__ float mkg_silu_mul(float gate, float up);
static __device__ __forceinline__ void mkg_epilogue_flush(mkg_ring *r);

// Output chunk ch of a SiLU-mul tile (not swapped): 64 rows x CW output columns of the 64 x WN / 2
// output tile, computed from the accumulators as they are written (no second register tile).
// Output column q is gate column q / 8 * 16 + q % 8 times SiLU, up is 8 columns further: thread
// values d[8 J + i] and d[8 J + 4 + i] of accumulator column group pair J (as mkg_epilogue_silu_as).
template <int WN, int OT>
static __device__ __forceinline__ void mkg_epilogue_chunk_silu_to_smem(const float *d, int ch, uint32_t buf)
{
    typedef mkg_epi_shape<WN / 2, 0, OT> E;
    const int t = threadIdx.x & 127;
    const int lane = t & 31;
    const int xr = (t >> 5) * 16 + (lane >> 2);
    const int yc = 2 * (lane & 3);
#pragma unroll
    for (int jj = 0; jj < E::CW / 8; ++jj) {
        const int J = ch * (E::CW / 8) + jj;                  // output column group of 8
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const uint32_t a = buf + mkg_sw128_offset(xr + 8 * h, (8 * jj + yc) * E::OSZ);
            const float v0 = mkg_silu_mul(d[8 * J + 2 * h], d[8 * J + 4 + 2 * h]);
            const float v1 = mkg_silu_mul(d[8 * J + 2 * h + 1], d[8 * J + 4 + 2 * h + 1]);
            if constexpr (OT == MKG_DTYPE_FP32)
                mkg_st_shared_v2_b32(a, __float_as_uint(v0), __float_as_uint(v1));
            else
                mkg_st_shared_b32(a, mkg_pack2<OT>(v0, v1));
        }
    }
}

// The residual words of a warpgroup tile (not swapped) as loaded (mkg_res_raw: two 16-bit values
// in one word, fp32 two words): chunk ch's pairs of thread t at v[ch % D], D chunks in flight.
// v103: D = CHUNKS where that costs at most 64 registers (16-bit outputs: every chunk, so the tile
// pays one L2 round trip instead of one per chunk), else the chunks go through D slots in turn.
template <int WN, int OT>
struct mkg_epi_res {
    typedef mkg_epi_shape<WN, 0, OT> E;
    typedef typename mkg_res_raw<OT>::type raw_t;
    static constexpr int REGS = (E::CW / 8) * 2 * (int)(sizeof(raw_t) / 4);   // per chunk
    static constexpr int D = E::CHUNKS < 1 ? 1 : 64 / REGS >= E::CHUNKS ? E::CHUNKS : 64 / REGS > 1 ? 64 / REGS : 1;
    raw_t v[D][E::CW / 8][2];
};

// Issues the loads of chunk ch's residual pairs into slot ch % D.
template <int WN, int OT>
static __device__ __forceinline__ void mkg_epilogue_chunk_res_load(const mkg_gemm_params *p, int ch, int x0, int y0,
                                                                   mkg_epi_res<WN, OT> *rs)
{
    typedef mkg_epi_shape<WN, 0, OT> E;
    const int t = threadIdx.x & 127;
    const int lane = t & 31;
    const int xr = (t >> 5) * 16 + (lane >> 2);
    const int yc = 2 * (lane & 3);
    const long long ldr = p->ld_aux;
#pragma unroll
    for (int jj = 0; jj < E::CW / 8; ++jj)
#pragma unroll
        for (int h = 0; h < 2; ++h)
            rs->v[ch % mkg_epi_res<WN, OT>::D][jj][h] =
                mkg_res_raw<OT>::load(p->aux, (long long)(x0 + xr + 8 * h) * ldr + y0 + ch * E::CW + 8 * jj + yc);
}

// mkg_epilogue_chunk_to_smem (not swapped) with the residual added from slot ch % D (loaded by
// mkg_epilogue_chunk_res_load), as mkg_epilogue_store_as adds it (the same bits). The tile lies
// wholly inside C (the staged path's condition).
template <int WN, int OT>
static __device__ __forceinline__ void mkg_epilogue_chunk_res_to_smem(const float *d, int ch, uint32_t buf,
                                                                      const mkg_epi_res<WN, OT> *rs)
{
    typedef mkg_epi_shape<WN, 0, OT> E;
    const int t = threadIdx.x & 127;
    const int lane = t & 31;
    const int xr = (t >> 5) * 16 + (lane >> 2);
    const int yc = 2 * (lane & 3);
#pragma unroll
    for (int jj = 0; jj < E::CW / 8; ++jj) {
        const int j = ch * (E::CW / 8) + jj;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const uint32_t a = buf + mkg_sw128_offset(xr + 8 * h, (8 * jj + yc) * E::OSZ);
            const float2 r2 = mkg_res_raw<OT>::get(rs->v[ch % mkg_epi_res<WN, OT>::D][jj][h]);
            const float v0 = d[4 * j + 2 * h] + r2.x, v1 = d[4 * j + 2 * h + 1] + r2.y;
            if constexpr (OT == MKG_DTYPE_FP32)
                mkg_st_shared_v2_b32(a, __float_as_uint(v0), __float_as_uint(v1));
            else
                mkg_st_shared_b32(a, mkg_pack2<OT>(v0, v1));
        }
    }
}

template <int WN, int SWAP, int OT>
static __device__ __forceinline__ void mkg_epilogue_chunk_store(const mkg_gemm_params *p, int ch, uint32_t buf,
                                                                int x0, int y0)
{
    typedef mkg_epi_shape<WN, SWAP, OT> E;
    const CUtensorMap *map = &p->c_map[mkg_box_class(E::ROWS)];
    if constexpr (!SWAP)
        mkg_tma_store_2d(map, buf, y0 + ch * E::CW, x0);
    else
        mkg_tma_store_2d(map, buf, x0 + ch * E::CW, y0);
    mkg_bulk_commit_group();
}

// The chunk writers of the staged path: d as it is, with the residual added, or SiLU-mul of pairs.
#define MKG_EPI_CHUNK_PLAIN 0
#define MKG_EPI_CHUNK_RES 1                 /* mkg_epilogue_chunk_res_to_smem */
#define MKG_EPI_CHUNK_SILU 2                /* mkg_epilogue_chunk_silu_to_smem: WN is the output's */

template <int WN, int SWAP, int OT, int MODE>
static __device__ __forceinline__ void mkg_epilogue_chunk_write(const float *d, int ch, uint32_t buf,
                                                                mkg_epi_res<WN, OT> *rs, const mkg_gemm_params *p,
                                                                int x0, int y0)
{
    static_assert(MODE == MKG_EPI_CHUNK_PLAIN || !SWAP, "fused staged chunks are for tiles that are not swapped");
    if constexpr (MODE == MKG_EPI_CHUNK_RES) {
        mkg_epilogue_chunk_res_to_smem<WN, OT>(d, ch, buf, rs);
        // The slot is free again: the chunk D further on takes it (its words fly during this chunk's store).
        if (ch + mkg_epi_res<WN, OT>::D < mkg_epi_shape<WN, 0, OT>::CHUNKS)
            mkg_epilogue_chunk_res_load<WN, OT>(p, ch + mkg_epi_res<WN, OT>::D, x0, y0, rs);
    } else if constexpr (MODE == MKG_EPI_CHUNK_SILU)
        mkg_epilogue_chunk_silu_to_smem<2 * WN, OT>(d, ch, buf);
    else
        mkg_epilogue_chunk_to_smem<WN, SWAP, OT>(d, ch, buf);
}

// MODE: the chunk writer (mkg_epilogue_chunk_write); under MKG_EPI_CHUNK_SILU, WN and y0 are the
// output tile's (half the accumulator tile's) and d holds the accumulators.
// Under MKG_EPI_CHUNK_RES the first D chunks' residual words are loaded before anything waits, and
// the warpgroup's deferred count (mkg_epilogue_flush) is published while they are in flight; the
// other modes publish it first.
template <int WN, int SWAP, int OT, int NB, int MODE = MKG_EPI_CHUNK_PLAIN>
static __device__ __forceinline__ void mkg_epilogue_staged_as(const mkg_gemm_params *p, const float *d, int x0,
                                                              int y0, mkg_ring *r, uint32_t base, int wg)
{
    typedef mkg_epi_shape<WN, SWAP, OT> E;
    static_assert(NB >= 2 && NB <= 8, "2 .. 8 staging buffers per warpgroup");
    const bool issuer = (threadIdx.x & 127) == 0;
    const int bar = MKG_LAUNCH_BAR_EPI + wg;
    const uint32_t mine = base + (uint32_t)(wg * NB) * MKG_EPI_BUF_BYTES;
    mkg_epi_res<WN, OT> rs;
    if constexpr (MODE == MKG_EPI_CHUNK_RES) {
#pragma unroll
        for (int ch = 0; ch < mkg_epi_res<WN, OT>::D; ++ch)
            mkg_epilogue_chunk_res_load<WN, OT>(p, ch, x0, y0, &rs);
    }
    mkg_epilogue_flush(r);
    if constexpr (NB >= E::CHUNKS) {
        // The last NB - CHUNKS stores may still read; the ones before them used our buffers.
        if (issuer)
            mkg_bulk_wait_group_read<NB - E::CHUNKS>();
        mkg_bar_sync(bar, 128);
#pragma unroll
        for (int ch = 0; ch < E::CHUNKS; ++ch) {
            mkg_epilogue_chunk_write<WN, SWAP, OT, MODE>(
                d, ch, mine + (uint32_t)((r->epi + ch) % NB) * MKG_EPI_BUF_BYTES, &rs, p, x0, y0);
        }
        mkg_fence_proxy_async_shared();
        mkg_bar_sync(bar, 128);
        if (issuer) {
#pragma unroll
            for (int ch = 0; ch < E::CHUNKS; ++ch)
                mkg_epilogue_chunk_store<WN, SWAP, OT>(
                    p, ch, mine + (uint32_t)((r->epi + ch) % NB) * MKG_EPI_BUF_BYTES, x0, y0);
        }
        r->epi = (r->epi + E::CHUNKS) % NB;
    } else {
#pragma unroll
        for (int ch = 0; ch < E::CHUNKS; ++ch) {
            const uint32_t buf = mine + r->epi * MKG_EPI_BUF_BYTES;   // r->epi is kept below NB
            r->epi = (r->epi + 1) % NB;
            // The store that last read this buffer was issued NB chunks ago.
            if (issuer)
                mkg_bulk_wait_group_read<NB - 1>();
            mkg_bar_sync(bar, 128);
            mkg_epilogue_chunk_write<WN, SWAP, OT, MODE>(d, ch, buf, &rs, p, x0, y0);
            mkg_fence_proxy_async_shared();
            mkg_bar_sync(bar, 128);
            if (issuer)
                mkg_epilogue_chunk_store<WN, SWAP, OT>(p, ch, buf, x0, y0);
        }
    }
}

// Waits until every TMA store this warpgroup issued has read its staging buffer.
// Call once after the last unit (shared memory must outlive the copies).
static __device__ __forceinline__ void mkg_epilogue_drain(void)
{
    // NOTE: .read: the staging buffers must outlive the stores' reads of them; the writes
    // themselves complete before the grid does (and before a PDL dependant's griddepcontrol.wait
    // returns), so waiting for them here only held every CTA for one more memory round trip.
    if ((threadIdx.x & 127) == 0)
        mkg_bulk_wait_group_read<0>();
}

template <int WN, int SWAP, int OT, int NB>
static __device__ __forceinline__ void mkg_epilogue_as(const mkg_gemm_params *p, int m, const float *d, int x0,
                                                       int y0, mkg_ring *r, uint32_t base, int wg)
{
    // The C tensor map clips at the encoded M; below it, a tile crossing the runtime M goes direct.
    const bool rows_ok = (SWAP ? y0 + WN : x0 + 64) <= m || m == p->m;
    // NOTE: at the N edge a TMA store writes whole 16-byte units (seen on the H200: N = 1 bf16
    // rewrote columns 1..7), so a tile reaching into a partial 16-byte unit of a row goes direct.
    constexpr int UNIT = 16 / mkg_epi_shape<WN, SWAP, OT>::OSZ;
    const int n = p->n;
    const bool cols_ok = n % UNIT == 0 || (SWAP ? x0 + 64 : y0 + WN) <= n - n % UNIT;
    if (mkg_epi_shape<WN, SWAP, OT>::OK && rows_ok && cols_ok)
        mkg_epilogue_staged_as<WN, SWAP, OT, NB>(p, d, x0, y0, r, base, wg);
    else
        mkg_epilogue_store_as<WN, SWAP, OT>(p, m, d, x0, y0);
}

// ---- fused and signalling path ------------------------------------------------------

// NOTE: fast exp and divide: the IEEE divide's slow-path subroutine call, once per output
// pair in every fused tile, cost registers (spills) in the megakernel.
static __device__ __forceinline__ float mkg_silu_mul(float gate, float up)
{
    return __fdividef(gate, 1.0f + __expf(-gate)) * up;
}

// Direct stores of MKG_EPI_SILU_MUL (same fragment walk as mkg_epilogue_store_as): gate at
// tile column (or, swapped, row) q with q % 16 < 8, up at q + 8; C column = gate's / 16 * 8 + q % 8.
template <int WN, int SWAP, int OT>
static __device__ __forceinline__ void mkg_epilogue_silu_as(const mkg_gemm_params *p, int m, const float *d,
                                                            int x0, int y0)
{
    const int t = threadIdx.x & 127;
    const int lane = t & 31;
    const int xr = x0 + (t >> 5) * 16 + (lane >> 2);
    const int yc = y0 + 2 * (lane & 3);
    const long long ldc = p->ldc;
    void *c = p->c;
    const int n = p->n;
    if constexpr (!SWAP) {
#pragma unroll
        for (int jj = 0; jj < WN / 16; ++jj) {
            const int y = yc + 16 * jj;                       // gate column (even; n % 16 == 0)
            const int oc = (y0 + 16 * jj) / 2 + 2 * (lane & 3);
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int x = xr + 8 * h;
                if (x < m && y < n)
                    mkg_store2<OT>(c, (long long)x * ldc + oc,
                                   mkg_silu_mul(d[8 * jj + 2 * h], d[8 * jj + 4 + 2 * h]),
                                   mkg_silu_mul(d[8 * jj + 2 * h + 1], d[8 * jj + 4 + 2 * h + 1]));
            }
        }
    } else {
        const int oc = (x0 + 16 * (t >> 5)) / 2 + (lane >> 2);
        if (xr < n) {
#pragma unroll
            for (int j = 0; j < WN / 8; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e)
                    if (yc + 8 * j + e < m)
                        mkg_store1<OT>(c, (long long)(yc + 8 * j + e) * ldc + oc,
                                       mkg_silu_mul(d[4 * j + e], d[4 * j + 2 + e]));
        }
    }
}

// The direct path of any epilogue kind.
template <int WN, int SWAP, int OT>
static __device__ __forceinline__ void mkg_epilogue_direct_as(const mkg_gemm_params *p, int m, const float *d,
                                                              int x0, int y0)
{
    if (p->epilogue == MKG_EPI_SILU_MUL)
        mkg_epilogue_silu_as<WN, SWAP, OT>(p, m, d, x0, y0);
    else
        mkg_epilogue_store_as<WN, SWAP, OT>(p, m, d, x0, y0);   // STORE or RESIDUAL
}

// After a warpgroup's direct stores: counts the elements of C it wrote into its
// 64-row block's deps.done counter (a warpgroup tile never straddles two blocks).
template <int WN, int SWAP>
static __device__ __forceinline__ void mkg_epilogue_signal(const mkg_gemm_params *p, int m, int x0, int y0, int wg)
{
    mkg_bar_sync(MKG_LAUNCH_BAR_EPI + wg, 128);
    if ((threadIdx.x & 127) != 0)
        return;
    const int r0 = SWAP ? y0 : x0, c0 = SWAP ? x0 : y0;
    const int rows = max(0, min(SWAP ? WN : 64, m - r0));
    int cols = max(0, min(SWAP ? 64 : WN, p->n - c0));
    if (p->epilogue == MKG_EPI_SILU_MUL)
        cols /= 2;
    if (rows > 0 && cols > 0)
        mkg_dep_signal(p->deps.done, r0 / MKG_DEP_ROWS, (unsigned int)(rows * cols));
}

// v102: a fused epilogue or a counted store of a tile that is not swapped and lies wholly inside
// C (rows below the runtime M; the N edge as mkg_epilogue_as checks it) goes through the staging
// buffers and TMA stores, as plain stores do: under a prefill's TMA traffic the direct path's
// per-thread stores took 5-6 us a unit (qkv, gate_up) and with the residual 13-15 us (o, down).
// SiLU-mul writes the 64 x WN / 2 output tile chunk by chunk from the accumulator pairs
// (mkg_epilogue_chunk_silu_to_smem); the residual is added chunk by chunk. The bits are
// the direct path's (the same arithmetic, each value rounded once). With deps.done the issuing
// thread waits for its stores to complete before the count (mkg_epilogue_signal_staged).
// False: the tile goes direct.
template <int WN, int OT, int NB>
static __device__ __forceinline__ bool mkg_epilogue_fused_staged_as(const mkg_gemm_params *p, int m, const float *d,
                                                                    int x0, int y0, mkg_ring *r, uint32_t base,
                                                                    int wg)
{
    const bool silu = p->epilogue == MKG_EPI_SILU_MUL;
    const int n = silu ? p->n / 2 : p->n, y = silu ? y0 / 2 : y0, w = silu ? WN / 2 : WN;
    constexpr int UNIT = 16 / mkg_epi_shape<WN, 0, OT>::OSZ;
    const bool cols_ok = n % UNIT == 0 || y + w <= n - n % UNIT;
    if (x0 + 64 > m || !cols_ok)
        return false;
    if (silu) {
        if constexpr (WN % 16 == 0 && mkg_epi_shape<WN / 2, 0, OT>::OK) {
            mkg_epilogue_staged_as<WN / 2, 0, OT, NB, MKG_EPI_CHUNK_SILU>(p, d, x0, y, r, base, wg);
            return true;
        }
        return false;
    }
    if constexpr (mkg_epi_shape<WN, 0, OT>::OK) {
        if (p->epilogue == MKG_EPI_RESIDUAL) {
            if (y0 + WN > p->n)
                return false;                      // the residual is read only inside C
            mkg_epilogue_staged_as<WN, 0, OT, NB, MKG_EPI_CHUNK_RES>(p, d, x0, y0, r, base, wg);
        } else {
            mkg_epilogue_staged_as<WN, 0, OT, NB>(p, d, x0, y0, r, base, wg);
        }
        return true;
    }
    return false;
}

// The issuing thread's count left in r: waits until its TMA stores are complete, orders them
// before its generic accesses, then adds the elements with release (mkg_dep_signal).
static __device__ __forceinline__ void mkg_epilogue_publish(mkg_ring *r)
{
    mkg_bulk_wait_group<0>();
    mkg_fence_proxy_async_global();
    mkg_dep_signal(r->pend, 0, r->pend_n);
    r->pend = nullptr;
}

// After mkg_epilogue_fused_staged_as: the warpgroup's issuing thread (the only one whose bulk groups
// hold the tile) waits until its stores are complete, orders them before its generic accesses, and
// counts the elements as mkg_epilogue_signal does.
// MKG_EPI_DEFER_COUNT: the count stays in r (pend, pend_n) for mkg_epilogue_flush.
template <int WN>
static __device__ __forceinline__ void mkg_epilogue_signal_staged(const mkg_gemm_params *p, int m, int x0, int y0,
                                                                  mkg_ring *r)
{
    if ((threadIdx.x & 127) != 0)
        return;
    const int rows = max(0, min(64, m - x0));
    int cols = max(0, min(WN, p->n - y0));
    if (p->epilogue == MKG_EPI_SILU_MUL)
        cols /= 2;
    if (rows <= 0 || cols <= 0)
        return;
    r->pend = p->deps.done + x0 / MKG_DEP_ROWS;
    r->pend_n = (uint32_t)(rows * cols);
    if constexpr (!MKG_EPI_DEFER_COUNT)
        mkg_epilogue_publish(r);
}

// MKG_EPI_DEFER_COUNT: the warpgroup's issuing thread publishes a deferred count (its stores,
// issued an epilogue or a task's end ago, have completed by now: the wait returns at once).
static __device__ __forceinline__ void mkg_epilogue_flush(mkg_ring *r)
{
    if constexpr (MKG_EPI_DEFER_COUNT) {
        if ((threadIdx.x & 127) == 0 && r->pend)
            mkg_epilogue_publish(r);
    }
}

// Staged stores go through NB buffers per warpgroup at shared address epi_base (see
// mkg_epilogue_staged_as); NB = 2 at mkg_smem::epi is the launch-wide area.
// OT < 0: the output type and epilogue kind are read from p at run time. OT >= 0: the caller
// knows at compile time that C is of type OT with a plain store (MKG_EPI_STORE, no deps
// signal), and only that path is compiled.
// The run-time epilogue for output type T: a plain store (staged where it can be), else the fused
// or counted paths (staged under MKG_EPI_STAGED_FUSED where the tile allows, else direct).
template <int WN, int SWAP, int NB, int T>
static __device__ __forceinline__ void mkg_epilogue_store_one(const mkg_gemm_params *p, int m, const float *d,
                                                              int x0, int y0, mkg_ring *r, uint32_t epi_base,
                                                              int wg)
{
    if (p->epilogue == MKG_EPI_STORE && !p->deps.done) {
        mkg_epilogue_as<WN, SWAP, T, NB>(p, m, d, x0, y0, r, epi_base, wg);
        return;
    }
    // NOTE: fused epilogues exist for chunk-capable rows only (wgmma N <= 128; the host
    // refuses other rows for them) unless MKG_DISPATCH_WIDE: in the shipped kernel's
    // 128-accumulator rows the extra paths spilled.
    if constexpr (WN <= MKG_CHUNKED_MAX_WN || MKG_DISPATCH_WIDE) {
        if constexpr (!SWAP && MKG_EPI_STAGED_FUSED) {
            if (mkg_epilogue_fused_staged_as<WN, T, NB>(p, m, d, x0, y0, r, epi_base, wg)) {
                MKG_PROBE_EPI();
                if (p->deps.done)
                    mkg_epilogue_signal_staged<WN>(p, m, x0, y0, r);
                return;
            }
        }
        mkg_epilogue_flush(r);
        mkg_epilogue_direct_as<WN, SWAP, T>(p, m, d, x0, y0);
        MKG_PROBE_EPI();
        if (p->deps.done)
            mkg_epilogue_signal<WN, SWAP>(p, m, x0, y0, wg);
    }
}

template <int WN, int SWAP, int NB = 2, int OT = -1>
static __device__ __forceinline__ void mkg_epilogue_store(const mkg_gemm_params *p, int m, const float *d,
                                                          int x0, int y0, mkg_ring *r, uint32_t epi_base,
                                                          int wg)
{
    if constexpr (OT >= 0) {
        mkg_epilogue_as<WN, SWAP, OT, NB>(p, m, d, x0, y0, r, epi_base, wg);
    } else if constexpr (MKG_EPI_OT_ONLY >= 0) {
        mkg_epilogue_store_one<WN, SWAP, NB, MKG_EPI_OT_ONLY>(p, m, d, x0, y0, r, epi_base, wg);
    } else {
        switch (p->c_type) {
        case MKG_DTYPE_BF16:
            mkg_epilogue_store_one<WN, SWAP, NB, MKG_DTYPE_BF16>(p, m, d, x0, y0, r, epi_base, wg);
            break;
        case MKG_DTYPE_FP16:
            mkg_epilogue_store_one<WN, SWAP, NB, MKG_DTYPE_FP16>(p, m, d, x0, y0, r, epi_base, wg);
            break;
        default:
            mkg_epilogue_store_one<WN, SWAP, NB, MKG_DTYPE_FP32>(p, m, d, x0, y0, r, epi_base, wg);
            break;
        }
    }
}

#endif /* MKG_EPILOGUE_SM90_CUH */
