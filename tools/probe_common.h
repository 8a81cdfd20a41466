/* probe_common.h - what the probe tools share (tools/rate_probe.cu, tools/mimic_probe.cu,
 * tools/launch_probe.cu):
 *   encode()             a row-major bf16 matrix of rows x cols as a tensor map, box {64 columns,
 *                        box_rows}, 128-byte swizzle, L2 promotion 256 B (as the library's maps),
 *                        through the driver entry point obtained from the runtime; exits on failure;
 *                        encode_promo() the same with another L2 promotion;
 *   probe_fill_bf16      fresh hashed bf16 values in [-0.5, 0.5) (never all zeros);
 *   probe_wgmma_drain<H> retire every wgmma of the warpgroup and fence its H accumulators;
 *   probe_sm90()         line-buffered stdout and device 0's properties; false (with a "skip" line)
 *                        without a CUDA device or on anything but sm_90.
 */
#ifndef MKG_PROBE_COMMON_H
#define MKG_PROBE_COMMON_H

#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mkg_check.h"
#include "mkg_ptx_sm90.cuh"

typedef CUresult (*probe_encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                    const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                    CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

/* As encode(), with the L2 promotion given (CU_TENSOR_MAP_L2_PROMOTION_*). */
static inline void encode_promo(CUtensorMap *map, const void *ptr, int rows, int cols, int box_rows,
                                CUtensorMapL2promotion promo);

static inline void encode(CUtensorMap *map, const void *ptr, int rows, int cols, int box_rows)
{
    encode_promo(map, ptr, rows, cols, box_rows, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
}

static inline void encode_promo(CUtensorMap *map, const void *ptr, int rows, int cols, int box_rows,
                                CUtensorMapL2promotion promo)
{
    static probe_encode_fn enc = NULL;
    if (!enc) {
        void *fn = NULL;
        enum cudaDriverEntryPointQueryResult q;
        MKG_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
        enc = (probe_encode_fn)fn;
    }
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)cols * 2};
    const cuuint32_t box[2] = {64, (cuuint32_t)box_rows};
    const cuuint32_t es[2] = {1, 1};
    if (enc(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)ptr, dims, strides, box, es,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, promo,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
        fprintf(stderr, "cuTensorMapEncodeTiled failed\n");
        exit(1);
    }
}

static inline bool probe_sm90(cudaDeviceProp *prop)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (cudaGetDeviceProperties(prop, 0) != cudaSuccess) {
        (void)cudaGetLastError();
        printf("skip: no usable CUDA device\n");
        return false;
    }
    if (prop->major != 9) {
        printf("skip: needs an sm_90 GPU (found %s, sm_%d%d)\n", prop->name, prop->major, prop->minor);
        return false;
    }
    return true;
}

__global__ void probe_fill_bf16(uint16_t *x, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        const float v = ((float)(h & 0xffffu) / 65535.0f - 0.5f);
        uint32_t u;
        memcpy(&u, &v, 4);
        x[i] = (uint16_t)(u >> 16);                 // bf16 by truncation
    }
}

template <int H>
static __device__ __forceinline__ void probe_wgmma_drain(float *d)
{
    mkg_wgmma_wait_group<0>();
#pragma unroll
    for (int i = 0; i < H; ++i)
        mkg_fence_operand(d[i]);
}

#endif /* MKG_PROBE_COMMON_H */
