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
//
// Second part (session 36: the dispatch kernel's 1B down M = 512 row, 128 units of 128 K steps that
// read their 24 KB stages from the L2, ran 38.0 us when TPC neighbours held units with no operand in
// common and 33.5 us when they shared B's tile): every SM streams from the L2 (a slice of 256 KB,
// 16 boxes, read 32 times: 8 MB per SM, the whole footprint <= 33 MB; then 64 KB slices, <= 8 MB,
// to rule out the L2's capacity), and the slice an SM reads is
//   diff:  its own (slice = smid: no two SMs read the same lines)
//   pair:  its TPC's (slice = smid / 2: both SMs of a TPC read the same lines at about the same time)
//   gpc8:  one slice per 16 consecutive SMs (slice = smid / 16: about a GPC reads the same lines)
//   all:   slice 0 for every SM (one 256 KB slice, every SM)
// with n = all SMs active. If `pair` reads faster than `diff`, the two SMs of a TPC share a path
// to the L2 that serves the same line once; a unit order could then put units that share an
// operand on one TPC.
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

// Thread 0 of an active CTA streams ITERS boxes slot by slot: before reusing slot s it waits for
// the box that last landed there, so ST boxes are always in flight. Box i is rows row0 +
// (i % period) * BOX_ROWS: period ITERS reads ITERS fresh boxes, a smaller one reads the same
// `period` boxes over and over.
static __device__ void stream_boxes(const CUtensorMap *map, int row0, int period)
{
    extern __shared__ __align__(1024) unsigned char smem[];
    atomicAdd(&g_active, 1u);
    const uint32_t base = (mkg_smem_addr(smem) + 1023u) & ~1023u;
    const uint32_t full = base + ST * BOX_BYTES;
    for (int s = 0; s < ST; ++s)
        mkg_mbarrier_init(full + 8u * s, 1);
    mkg_fence_mbarrier_init();
    for (int i = 0; i < ITERS; ++i) {
        const int s = i % ST;
        if (i >= ST)
            mkg_mbarrier_wait_parity(full + 8u * s, (uint32_t)((i / ST - 1) & 1));
        mkg_mbarrier_arrive_expect_tx(full + 8u * s, BOX_BYTES);
        mkg_tma_load_2d(base + (uint32_t)s * BOX_BYTES, map, full + 8u * s, 0, row0 + (i % period) * BOX_ROWS);
    }
    for (int i = ITERS; i < ITERS + ST; ++i)
        mkg_mbarrier_wait_parity(full + 8u * (i % ST), (uint32_t)((i / ST - 1) & 1));
}

// The active SMs of set `set` each read their own slice (by %smid), so no two CTAs share a line.
__global__ void __launch_bounds__(128, 1) k_stream(const __grid_constant__ CUtensorMap map, int n, int set, int sms)
{
    const int smid = mkg_smid();
    if (smid < sms && probe_active(smid, n, set) && threadIdx.x == 0)
        stream_boxes(&map, smid * ITERS * BOX_ROWS, ITERS);
}

// All SMs active, each reading slice diff: smid, pair: smid / 2, gpc8: smid / 16, all: 0 (mode 0-3)
// of an L2-resident matrix, slice_boxes boxes per slice.
__global__ void __launch_bounds__(128, 1) k_stream_l2(const __grid_constant__ CUtensorMap map, int mode, int sms,
                                                      int slice_boxes)
{
    const int smid = mkg_smid();
    const int slice = mode == 0 ? smid : mode == 1 ? smid / 2 : mode == 2 ? smid / 16 : 0;
    if (smid < sms && threadIdx.x == 0)
        stream_boxes(&map, slice * slice_boxes * BOX_ROWS, slice_boxes);
}

// Both kernels take (map, three ints); `k` launched on every SM.
typedef void (*probe_kernel)(const CUtensorMap, int, int, int);

// Median time (ms) of `runs` launches of k<<<sms, 128, SMEM_BYTES>>>(*map, a, b, c), after one more
// that is not timed (it warms up, or brings an L2-resident slice in); *active: the CTAs of the
// last launch that counted themselves in g_active.
static float median_launch_ms(probe_kernel k, const CUtensorMap *map, int a, int b, int c, int sms, int runs,
                              unsigned int *active)
{
    cudaEvent_t e0, e1;
    MKG_CUDA_CHECK(cudaEventCreate(&e0));
    MKG_CUDA_CHECK(cudaEventCreate(&e1));
    std::vector<float> ms;
    for (int r = 0; r <= runs; ++r) {
        const unsigned int zero = 0;
        MKG_CUDA_CHECK(cudaMemcpyToSymbol(g_active, &zero, sizeof zero));
        MKG_CUDA_CHECK(cudaEventRecord(e0));
        k<<<sms, 128, SMEM_BYTES>>>(*map, a, b, c);
        MKG_CUDA_CHECK(cudaEventRecord(e1));
        MKG_CUDA_CHECK(cudaEventSynchronize(e1));
        MKG_CUDA_CHECK(cudaGetLastError());
        float t = 0.0f;
        MKG_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
        MKG_CUDA_CHECK(cudaMemcpyFromSymbol(active, g_active, sizeof *active));
        if (r > 0)
            ms.push_back(t);
    }
    MKG_CUDA_CHECK(cudaEventDestroy(e0));
    MKG_CUDA_CHECK(cudaEventDestroy(e1));
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

static void l2_sharing(const uint16_t *x, int sms, int slice_boxes)
{
    CUtensorMap map;
    encode_promo(&map, x, sms * slice_boxes * BOX_ROWS, 64, BOX_ROWS, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
    MKG_CUDA_CHECK(cudaFuncSetAttribute(k_stream_l2, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
    static const char *names[4] = {"diff (slice = smid)", "pair (slice = smid / 2)", "gpc8 (slice = smid / 16)",
                                   "all (slice 0)"};
    printf("L2-resident sharing, all %d SMs, %d KB slices, %d boxes of %d KB per SM, %d in flight; GB/s = "
           "bytes read by all SMs / kernel time (median of 15)\n", sms, slice_boxes * BOX_BYTES / 1024, ITERS,
           BOX_BYTES / 1024, ST);
    double diff = 0.0;
    for (int mode = 0; mode < 4; ++mode) {
        unsigned int active = 0;
        const float ms = median_launch_ms(k_stream_l2, &map, mode, sms, slice_boxes, sms, 15, &active);
        const double gbs = (double)active * ITERS * BOX_BYTES / (ms * 1e-3) / 1e9;
        if (mode == 0)
            diff = gbs;
        printf("  %-26s %8.0f GB/s  %6.0f GB/s per SM  %.3f of diff  (%u CTAs active)\n", names[mode], gbs,
               gbs / active, gbs / diff, active);
    }
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
    static const char *names[3] = {"tpc1 ", "tpc2 ", "first"};
    printf("%s, %d SMs: %d boxes of %d KB per active SM, %d in flight; GB/s = bytes read / kernel time "
           "(median of 7)\n", prop.name, sms, ITERS, BOX_BYTES / 1024, ST);
    printf("  n    tpc1 (1 SM per TPC)   tpc2 (2 SMs per TPC)   first (smid < n)   tpc1/tpc2\n");
    for (int n : {8, 16, 24, 32, 48, 64}) {
        double gbs[3];
        for (int set = 0; set < 3; ++set) {
            unsigned int active = 0;
            const float ms = median_launch_ms(k_stream, &map, n, set, sms, sms, 7, &active);
            gbs[set] = (double)active * ITERS * BOX_BYTES / (ms * 1e-3) / 1e9;
            if ((int)active != n)
                printf("  note: set %s n=%d found %u active CTAs\n", names[set], n, active);
        }
        printf("%4d   %10.0f            %10.0f             %10.0f       %6.3f\n", n, gbs[0], gbs[1], gbs[2],
               gbs[0] / gbs[1]);
    }
    l2_sharing(x, sms, 16);          // 256 KB slices: 33 MB in all
    l2_sharing(x, sms, 4);           // 64 KB slices: 8 MB in all, far below the L2's size
    MKG_CUDA_CHECK(cudaFree(x));
    return 0;
}
