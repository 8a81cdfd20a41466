// placement_probe.cu - does it matter which CTAs of a one-CTA-per-SM grid do the work?
//
// A persistent kernel launched with one CTA per SM runs units u = blockIdx.x, + grid, ...; with
// fewer units than SMs only CTAs 0 .. units - 1 work. If the hardware places consecutive CTAs on
// SMs of the same GPC, those units share a fraction of the chip's L2 / memory bandwidth. This
// program measures it: a weight-streaming kernel (each active CTA reads its own 2 MB slice with
// 16-byte loads from all 384 threads, 16 in flight per thread, inputs rotated through more than L2) with the same 132 CTAs
// resident, and active sets of the first n CTAs or n CTAs spread over the index range
// (CTA floor(j * grid / n) for j < n). It also prints the SM each CTA landed on.
// Usage: build/bench/mkg_placement_probe   (needs an sm_90 GPU; target mkg_placement_probe)
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "mkg_check.h"

#define CK(call) MKG_CUDA_CHECK(call)

#define SLICE_BYTES (2u << 20)
#define THREADS 384
#define SMEM_BYTES (200 * 1024)
#define UNROLL 16                          /* 16-byte loads in flight per thread: 96 KB per SM */

__device__ unsigned int g_smid[1024];
__device__ float g_sink[1024];

// mode 0: the first n CTAs work; mode 1: n CTAs spread over the grid.
__global__ void __launch_bounds__(THREADS, 1) k_stream(const uint4 *src, int n, int mode)
{
    extern __shared__ unsigned char smem[];
    if (threadIdx.x == 0) {
        unsigned int id;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
        g_smid[blockIdx.x] = id;
        smem[0] = 1;
    }
    const int grid = (int)gridDim.x, b = (int)blockIdx.x;
    int slot = -1;
    if (mode == 0) {
        slot = b < n ? b : -1;
    } else {
        // The j with floor(j * grid / n) == b, if any.
        const int j = (b * n + grid - 1) / grid;
        if (j < n && (j * grid) / n == b)
            slot = j;
    }
    if (slot < 0)
        return;
    const uint4 *p = src + (size_t)slot * (SLICE_BYTES / 16);
    float acc = 0.0f;
    for (unsigned int i = threadIdx.x; i < SLICE_BYTES / 16; i += UNROLL * THREADS) {
        uint4 v[UNROLL];
#pragma unroll
        for (int q = 0; q < UNROLL; ++q)
            v[q] = __ldcs(p + i + q * THREADS);
#pragma unroll
        for (int q = 0; q < UNROLL; ++q)
            acc += __uint_as_float(v[q].x ^ v[q].y ^ v[q].z ^ v[q].w);
    }
    if (acc == 1234.5f)
        g_sink[b] = acc;
}

static void *g_smid_ptr(void)
{
    void *p = NULL;
    CK(cudaGetSymbolAddress(&p, g_smid));
    return p;
}

int main(void)
{
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaFuncSetAttribute((const void *)k_stream, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
    const int sets = 8;                                   // rotated input sets: 8 x 132 x 2 MB > L2
    const size_t set_bytes = (size_t)sms * SLICE_BYTES;
    uint4 *buf = NULL;
    CK(cudaMalloc((void **)&buf, set_bytes * sets));
    CK(cudaMemset(buf, 0x3c, set_bytes * sets));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));

    k_stream<<<sms, THREADS, SMEM_BYTES>>>(buf, sms, 0);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    unsigned int smid[1024];
    CK(cudaMemcpyFromSymbol(smid, g_smid, sizeof(unsigned int) * sms));
    printf("SM of CTA b (b = 0 .. %d):\n", sms - 1);
    for (int b = 0; b < sms; ++b)
        printf("%3u%s", smid[b], b % 22 == 21 ? "\n" : " ");
    printf("\n");

    // Where the hardware puts a grid of exactly n CTAs (one per SM, as the shipped kernel's
    // min(units, SMs) grid), against the first n CTAs of the full grid above.
    for (int n : {8, 16, 32, 64}) {
        CK(cudaMemset(g_smid_ptr(), 0xff, sizeof(unsigned int) * 1024));
        k_stream<<<n, THREADS, SMEM_BYTES>>>(buf, n, 0);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        unsigned int got[1024];
        CK(cudaMemcpyFromSymbol(got, g_smid, sizeof(unsigned int) * n));
        printf("grid of %d CTAs, SM of CTA b:", n);
        for (int b = 0; b < n; ++b)
            printf(" %u", got[b]);
        printf("\n");
    }
    printf("\n");

    const int ns[] = {8, 16, 32, 48, 64, 96, 128, 132};
    printf("active CTAs   first n (GB/s)   spread n (GB/s)   spread / first\n");
    for (int ni = 0; ni < (int)(sizeof ns / sizeof ns[0]); ++ni) {
        const int n = ns[ni] > sms ? sms : ns[ni];
        double gbps[2];
        for (int mode = 0; mode < 2; ++mode) {
            const int reps = 40;
            for (int r = 0; r < 4; ++r)
                k_stream<<<sms, THREADS, SMEM_BYTES>>>(buf + (size_t)(r % sets) * (set_bytes / 16), n, mode);
            CK(cudaEventRecord(e0));
            for (int r = 0; r < reps; ++r)
                k_stream<<<sms, THREADS, SMEM_BYTES>>>(buf + (size_t)(r % sets) * (set_bytes / 16), n, mode);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            float ms = 0.0f;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            gbps[mode] = (double)n * SLICE_BYTES * reps / (ms * 1e-3) / 1e9;
        }
        printf("%8d      %10.0f       %10.0f        %6.3f\n", n, gbps[0], gbps[1], gbps[1] / gbps[0]);
    }
    CK(cudaFree(buf));
    return 0;
}
