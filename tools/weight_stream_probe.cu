// weight_stream_probe.cu - how fast can 132 SMs stream a weight matrix through TMA, by box shape?
//
// Issue 4 asks the decode rows (M <= 16, weights >= 32 MB) for 90% of the device-to-device copy
// bandwidth; they read at 0.78-0.81 of it, as cuBLASLt does (bench/NOTES.md). This probe takes
// the GEMM out and asks whether the loads themselves can do better, and in which shape. One CTA
// per SM, thread 0 keeps ST stages in flight (each stage waits only for the box that last landed
// in its slot, as a producer whose consumers never hold it up), and the whole matrix (512 MB,
// larger than L2) is dealt out as a flat list of (tile, k step) steps in equal contiguous ranges.
// A stage is KB boxes of {64 bf16 = 128 bytes of k, R rows}, 128-byte swizzle, as the library's
// B operand (R = 64 for the m16n64 swap rows, 128 for m8n128):
//   gemm:    W is N x K row-major; a tile is R rows; a step loads k .. k + 64 KB - 1 of its rows
//            (R separate 128-byte pieces per box, rows 2K bytes apart), walking k within the tile;
//   packed:  the same bytes laid out tile by tile (every box 128 x R contiguous bytes): what a
//            weight prepack at startup would give.
// Prints GB/s (bytes read / kernel time, median of 7) and its ratio to the copy bandwidth measured
// the way mkg_bench_gemm does ((read + write) bytes / time of a 256 MB cudaMemcpy).
// Usage: mkg_weight_stream_probe   (needs an sm_90 GPU)
#include <algorithm>
#include <vector>

#include "probe_common.h"

#define SMEM_BYTES (200 * 1024)
#define TOTAL_BYTES (512ull << 20)

// layout 0: gemm (map over N x K), 1: packed (map over rows x 64, tile-major).
__global__ void __launch_bounds__(128, 1) k_wstream(const __grid_constant__ CUtensorMap map, int layout, int tiles,
                                                     int ksteps, int box_rows, int kb, int st)
{
    extern __shared__ __align__(1024) unsigned char smem[];
    if (threadIdx.x != 0)
        return;
    const uint32_t base = (mkg_smem_addr(smem) + 1023u) & ~1023u;
    const uint32_t box_bytes = (uint32_t)box_rows * 128u, stage_bytes = box_bytes * (uint32_t)kb;
    const uint32_t full = base + (uint32_t)st * stage_bytes;
    for (int s = 0; s < st; ++s)
        mkg_mbarrier_init(full + 8u * s, 1);
    mkg_fence_mbarrier_init();
    const long long total = (long long)tiles * ksteps;
    const long long i0 = total * blockIdx.x / gridDim.x, i1 = total * (blockIdx.x + 1) / gridDim.x;
    for (long long i = i0; i < i1; ++i) {
        const int n = (int)(i - i0), s = n % st;
        if (n >= st)
            mkg_mbarrier_wait_parity(full + 8u * s, (uint32_t)((n / st - 1) & 1));
        mkg_mbarrier_arrive_expect_tx(full + 8u * s, stage_bytes);
        const int t = (int)(i / ksteps), ks = (int)(i % ksteps);
        for (int j = 0; j < kb; ++j) {
            const uint32_t dst = base + (uint32_t)s * stage_bytes + (uint32_t)j * box_bytes;
            if (layout == 0)
                mkg_tma_load_2d(dst, &map, full + 8u * s, (ks * kb + j) * 64, t * box_rows);
            else
                mkg_tma_load_2d(dst, &map, full + 8u * s, 0, (int)((i * kb + j) * box_rows));
        }
    }
    const int count = (int)(i1 - i0);
    for (int n = count > st ? count - st : 0; n < count; ++n)
        mkg_mbarrier_wait_parity(full + 8u * (n % st), (uint32_t)((n / st) & 1));
}

static double median_ms(std::vector<float> &v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main()
{
    cudaDeviceProp prop;
    if (!probe_sm90(&prop))
        return 0;
    const int sms = prop.multiProcessorCount;
    void *w = NULL, *dst = NULL;
    MKG_CUDA_CHECK(cudaMalloc(&w, TOTAL_BYTES));
    MKG_CUDA_CHECK(cudaMalloc(&dst, 256u << 20));
    probe_fill_bf16<<<2048, 256>>>((uint16_t *)w, TOTAL_BYTES / 2, 11u);
    MKG_CUDA_CHECK(cudaGetLastError());
    MKG_CUDA_CHECK(cudaFuncSetAttribute(k_wstream, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
    cudaEvent_t e0, e1;
    MKG_CUDA_CHECK(cudaEventCreate(&e0));
    MKG_CUDA_CHECK(cudaEventCreate(&e1));

    // Copy bandwidth as the bench measures it: 256 MB device to device, (read + write) / time.
    std::vector<float> cms;
    for (int r = 0; r < 8; ++r) {
        MKG_CUDA_CHECK(cudaEventRecord(e0));
        MKG_CUDA_CHECK(cudaMemcpyAsync(dst, w, 256u << 20, cudaMemcpyDeviceToDevice));
        MKG_CUDA_CHECK(cudaEventRecord(e1));
        MKG_CUDA_CHECK(cudaEventSynchronize(e1));
        float t = 0.0f;
        MKG_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
        if (r > 0)
            cms.push_back(t);
    }
    const double copy_gbs = 2.0 * (256u << 20) / (median_ms(cms) * 1e-3) / 1e9;
    printf("%s, %d SMs, one CTA each; 512 MB matrix; copy bandwidth (256 MB cudaMemcpy, read + write): %.0f GB/s\n",
           prop.name, sms, copy_gbs);
    printf("layout  K      rows kb st  stage KB  promo   GB/s   of copy\n");

    struct cfg { int layout, k, rows, kb, st, promo; };
    const cfg cfgs[] = {
        {0, 2048, 64, 2, 8, 2}, {0, 4096, 64, 2, 8, 2}, {0, 8192, 64, 2, 8, 2}, {0, 14336, 64, 2, 8, 2},
        {1, 4096, 64, 2, 8, 2},
        {0, 4096, 64, 2, 4, 2}, {0, 4096, 64, 2, 12, 2}, {1, 4096, 64, 2, 4, 2}, {1, 4096, 64, 2, 12, 2},
        {0, 4096, 64, 2, 8, 0}, {0, 4096, 64, 2, 8, 1}, {1, 4096, 64, 2, 8, 0},
        {0, 4096, 128, 2, 5, 2}, {1, 4096, 128, 2, 5, 2}, {0, 4096, 128, 2, 6, 2},
        {0, 4096, 64, 4, 6, 2}, {0, 4096, 32, 4, 12, 2}, {0, 4096, 64, 1, 16, 2}, {1, 4096, 64, 1, 16, 2},
        {0, 2048, 128, 2, 5, 2}, {0, 8192, 64, 2, 12, 2},
    };
    static const CUtensorMapL2promotion promos[3] = {
        CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B};
    static const char *promo_names[3] = {"none", "128B", "256B"};
    for (const cfg &c : cfgs) {
        const int step_elems = 64 * c.kb;                                  // k per step
        const int n_rows = (int)(TOTAL_BYTES / 2 / c.k) / c.rows * c.rows;  // whole tiles
        const int tiles = n_rows / c.rows, ksteps = c.k / step_elems;
        const uint32_t stage = (uint32_t)c.rows * 128u * c.kb;
        if ((size_t)c.st * stage + c.st * 8 + 1024 > SMEM_BYTES) {
            printf("skip config: %d stages of %u bytes do not fit\n", c.st, stage);
            continue;
        }
        CUtensorMap map;
        if (c.layout == 0)
            encode_promo(&map, w, n_rows, c.k, c.rows, promos[c.promo]);
        else
            encode_promo(&map, w, (int)((long long)n_rows * c.k / 64), 64, c.rows, promos[c.promo]);
        std::vector<float> ms;
        for (int r = 0; r < 8; ++r) {
            MKG_CUDA_CHECK(cudaEventRecord(e0));
            k_wstream<<<sms, 128, SMEM_BYTES>>>(map, c.layout, tiles, ksteps, c.rows, c.kb, c.st);
            MKG_CUDA_CHECK(cudaEventRecord(e1));
            MKG_CUDA_CHECK(cudaEventSynchronize(e1));
            MKG_CUDA_CHECK(cudaGetLastError());
            float t = 0.0f;
            MKG_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
            if (r > 0)
                ms.push_back(t);
        }
        const double bytes = (double)tiles * ksteps * stage;
        const double gbs = bytes / (median_ms(ms) * 1e-3) / 1e9;
        printf("%-7s %5d  %4d %2d %2d  %8.0f  %5s  %6.0f   %6.3f\n", c.layout ? "packed" : "gemm", c.k, c.rows, c.kb,
               c.st, stage / 1024.0, promo_names[c.promo], gbs, gbs / copy_gbs);
    }
    MKG_CUDA_CHECK(cudaFree(w));
    MKG_CUDA_CHECK(cudaFree(dst));
    return 0;
}
