/* mkg_epilogue_sm90.cuh - writes a consumer warpgroup's FP32 accumulators to C.
 *
 * The accumulator fragment of wgmma m64nNk16 (PTX ISA 9.7.15.5.1, "Figure 148"):
 * thread t of the warpgroup (warp w = t / 32, lane l) holds, for j = 0 .. N/8-1,
 *   d[4j+0], d[4j+1] at row 16w + l/4,     columns 8j + 2(l%4) + {0, 1}
 *   d[4j+2], d[4j+3] at row 16w + l/4 + 8, columns 8j + 2(l%4) + {0, 1}
 * MMA rows are X (A rows = M; with swap_ab, B rows = N) and MMA columns are Y.
 * Stores are bounded exactly by M and N: nothing outside the M x N block of C
 * is written, whatever the tile padding.
 */
#ifndef MKG_EPILOGUE_SM90_CUH
#define MKG_EPILOGUE_SM90_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "mkg_gemm.h"

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

// d: WN/2 accumulators of a 64 x WN warpgroup tile whose row 0 is X index x0
// and column 0 is Y index y0. m is the current M.
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
#pragma unroll
    for (int j = 0; j < WN / 8; ++j) {
        const int y = yc + 8 * j;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int x = xr + 8 * h;
            const float v0 = d[4 * j + 2 * h];
            const float v1 = d[4 * j + 2 * h + 1];
            if constexpr (!SWAP) {
                // X = row of C (m), Y = column of C (n)
                if (x < m) {
                    const long long base = (long long)x * ldc + y;
                    if (y + 1 < n)
                        mkg_store2<OT>(c, base, v0, v1);
                    else if (y < n)
                        mkg_store1<OT>(c, base, v0);
                }
            } else {
                // X = column of C (n), Y = row of C (m)
                if (x < n) {
                    if (y < m)
                        mkg_store1<OT>(c, (long long)y * ldc + x, v0);
                    if (y + 1 < m)
                        mkg_store1<OT>(c, (long long)(y + 1) * ldc + x, v1);
                }
            }
        }
    }
}

template <int WN, int SWAP>
static __device__ __forceinline__ void mkg_epilogue_store(const mkg_gemm_params *p, int m, const float *d,
                                                          int x0, int y0)
{
    switch (p->c_type) {
    case MKG_DTYPE_BF16: mkg_epilogue_store_as<WN, SWAP, MKG_DTYPE_BF16>(p, m, d, x0, y0); break;
    case MKG_DTYPE_FP16: mkg_epilogue_store_as<WN, SWAP, MKG_DTYPE_FP16>(p, m, d, x0, y0); break;
    default:             mkg_epilogue_store_as<WN, SWAP, MKG_DTYPE_FP32>(p, m, d, x0, y0); break;
    }
}

#endif /* MKG_EPILOGUE_SM90_CUH */
