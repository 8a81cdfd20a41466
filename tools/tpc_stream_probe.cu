// tpc_stream_probe.cu - does a TPC limit how fast its two SMs stream from DRAM through TMA?
//
// v71 (bench/NOTES.md): a decode row with 64 units ran 8B down M = 1 in 47 us when its units sat
// on both SMs of 32 TPCs and in 32-33 us on one SM of each of 64 TPCs. This probe takes the GEMM
// out: one CTA per SM (200 KB of shared memory), the active SMs chosen by %smid, each streaming
// its own fresh 8 MB (16 KB boxes of a bf16 matrix, 128-byte swizzle, ST boxes in flight on one
// thread, as the GEMM producer keeps its ring full) and nothing else. Sets of n active SMs:
//   tpc1:   one SM of each of n TPCs (smid even, smid / 2 < n)
//   tpc2:   both SMs of every other TPC, n / 2 TPCs over the same smid range (TPC t = smid / 2 even)
//   first:  smid < n (both SMs of the first n / 2 TPCs, packed into the first GPCs)
// A TPC is the SM pair (2t, 2t + 1) (bench/results/placement_probe_h200.txt). Prints GB/s per set
// (median of 7 launches) and the count of CTAs that found themselves active (must equal n).
// Usage: mkg_tpc_stream_probe   (needs an sm_90 GPU)
#include <algorithm>
#include <vector>

#include "probe_common.h"

#define SMEM_BYTES (200 * 1024)
#define BOX_ROWS 128                           // 128 rows x 128 bytes = 16 KB per box
#define BOX_BYTES (BOX_ROWS * 128)
#define ITERS 512                              // boxes per active CTA: 8 MB
#define ST 8                                   // boxes in flight per CTA (128 KB)

__device__ unsigned int g_active;

static __device__ bool probe_active(int smid, int n, int set)
{
    if (set == 0)
        return smid % 2 == 0 && smid / 2 < n;
    if (set == 1)
        return (smid / 2) % 2 == 0 && smid / 4 < n / 2;
    return smid < n;
}

// Thread 0 of an active CTA streams boxes slot by slot: before reusing slot s it waits for the
// box that last landed there, so ST boxes are always in flight. Each active SM reads the rows of
// its own slice (by %smid), so no two CTAs share a line.
__global__ void __launch_bounds__(128, 1) k_stream(const __grid_constant__ CUtensorMap map, int n, int set, int sms)
{
    extern __shared__ __align__(1024) unsigned char smem[];
    const int smid = mkg_smid();
    if (smid >= sms || !probe_active(smid, n, set) || threadIdx.x != 0)
        return;
    atomicAdd(&g_active, 1u);
    const uint32_t base = (mkg_smem_addr(smem) + 1023u) & ~1023u;
    const uint32_t full = base + ST * BOX_BYTES;
    for (int s = 0; s < ST; ++s)
        mkg_mbarrier_init(full + 8u * s, 1);
    mkg_fence_mbarrier_init();
    const int row0 = smid * ITERS * BOX_ROWS;
    for (int i = 0; i < ITERS; ++i) {
        const int s = i % ST;
        if (i >= ST)
            mkg_mbarrier_wait_parity(full + 8u * s, (uint32_t)((i / ST - 1) & 1));
        mkg_mbarrier_arrive_expect_tx(full + 8u * s, BOX_BYTES);
        mkg_tma_load_2d(base + (uint32_t)s * BOX_BYTES, &map, full + 8u * s, 0, row0 + i * BOX_ROWS);
    }
    for (int i = ITERS; i < ITERS + ST; ++i)
        mkg_mbarrier_wait_parity(full + 8u * (i % ST), (uint32_t)((i / ST - 1) & 1));
}

int main()
{
    cudaDeviceProp prop;
    if (!probe_sm90(&prop))
        return 0;
    const int sms = prop.multiProcessorCount;
    const size_t rows = (size_t)sms * ITERS * BOX_ROWS;       // every SM's slice: 132 x 8 MB
    uint16_t *x = NULL;
    MKG_CUDA_CHECK(cudaMalloc(&x, rows * 64 * sizeof(uint16_t)));
    probe_fill_bf16<<<1024, 256>>>(x, rows * 64, 7u);
    MKG_CUDA_CHECK(cudaGetLastError());
    CUtensorMap map;
    encode(&map, x, (int)rows, 64, BOX_ROWS);
    MKG_CUDA_CHECK(cudaFuncSetAttribute(k_stream, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
    cudaEvent_t e0, e1;
    MKG_CUDA_CHECK(cudaEventCreate(&e0));
    MKG_CUDA_CHECK(cudaEventCreate(&e1));
    static const char *names[3] = {"tpc1 ", "tpc2 ", "first"};
    printf("%s, %d SMs: %d boxes of %d KB per active SM, %d in flight; GB/s = bytes read / kernel time "
           "(median of 7)\n", prop.name, sms, ITERS, BOX_BYTES / 1024, ST);
    printf("  n    tpc1 (1 SM per TPC)   tpc2 (2 SMs per TPC)   first (smid < n)   tpc1/tpc2\n");
    for (int n : {8, 16, 24, 32, 48, 64}) {
        double gbs[3];
        for (int set = 0; set < 3; ++set) {
            std::vector<float> ms;
            unsigned int active = 0;
            for (int r = 0; r < 8; ++r) {
                const unsigned int zero = 0;
                MKG_CUDA_CHECK(cudaMemcpyToSymbol(g_active, &zero, sizeof zero));
                MKG_CUDA_CHECK(cudaEventRecord(e0));
                k_stream<<<sms, 128, SMEM_BYTES>>>(map, n, set, sms);
                MKG_CUDA_CHECK(cudaEventRecord(e1));
                MKG_CUDA_CHECK(cudaEventSynchronize(e1));
                MKG_CUDA_CHECK(cudaGetLastError());
                float t = 0.0f;
                MKG_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
                MKG_CUDA_CHECK(cudaMemcpyFromSymbol(&active, g_active, sizeof active));
                if (r > 0)
                    ms.push_back(t);            // the first launch warms up
            }
            std::sort(ms.begin(), ms.end());
            const double bytes = (double)active * ITERS * BOX_BYTES;
            gbs[set] = bytes / (ms[ms.size() / 2] * 1e-3) / 1e9;
            if ((int)active != n)
                printf("  note: set %s n=%d found %u active CTAs\n", names[set], n, active);
        }
        printf("%4d   %10.0f            %10.0f             %10.0f       %6.3f\n", n, gbs[0], gbs[1], gbs[2],
               gbs[0] / gbs[1]);
    }
    MKG_CUDA_CHECK(cudaFree(x));
    return 0;
}
