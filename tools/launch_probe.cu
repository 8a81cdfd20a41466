// launch_probe.cu - where the fixed part of a small GEMM launch goes.
//
// The decode and small-grid rows cost ~3.3-3.5 us more than their K loop (bench/NOTES.md).
// This program answers where, on the H200, under the bench's conditions (CUDA-graph replay,
// inputs rotated through more than L2):
//   1. The launch floor: per-launch time of graphs of empty 132 x 384 kernels, with a 4-byte
//      parameter, with mkg_gemm_params by value (2.4 KB), and with that plus the shipped
//      kernel's dynamic shared memory; and the gap between one kernel's last exit and the
//      next one's first entry (globaltimer).
//   2. The phase timeline of the shipped kernel itself, instantiated here with probe hooks
//      (MKG_PROBE in device/): per CTA, globaltimer at entry (0), after barrier init (1),
//      producer start (2; inside it the role branch next (13), the producers' branch reached (11)
//      and setmaxnreg.dec done (12)), and per consumer warpgroup w the first full stage (3 + 4w), the
//      K loop drained (4 + 4w), the epilogue issued (5 + 4w) and its stores read (6 + 4w).
//   3. The same timeline for the bench's one-GEMM dispatch kernel (the schedule picked on the
//      device from a one-layer table, as in bench/mkg_bench_dispatch.cu), cases marked "disp":
//      point 2 is then "schedule picked" (after mkg_dispatch_begin) instead of producer start.
//      Points 14-16 time the pick itself: 14 the pick warp done, 16 its row words loaded, and 15
//      thread 0 at the CTA barrier (also in the shipped kernel; d5 in bench/NOTES.md).
// Usage: mkg_launch_probe [--out FILE.json]   (needs an sm_90 GPU; prints a table; MKG_PROBE_CASES
// lists the cases to run, all by default)
#include <cuda.h>
#include <cuda_runtime.h>
#include "mkg_check.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#define PROBE_LAUNCHES 64
#define PROBE_CTAS 160
#define PROBE_POINTS 17

__device__ unsigned long long g_probe_t[PROBE_LAUNCHES][PROBE_CTAS][PROBE_POINTS];
__device__ unsigned int g_probe_epoch;
__device__ unsigned int g_probe_arrived;

static __device__ __forceinline__ unsigned long long probe_now(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__shared__ unsigned long long s_probe[PROBE_POINTS];   // this CTA's stamps of the running launch

// The first thread of the calling warpgroup stamps `point` into shared memory (no global
// round trip on the timeline); probe_done copies the warpgroup's stamps out afterwards.
static __device__ __forceinline__ void probe_mark(int point)
{
    if ((threadIdx.x & 127) == 0)
        s_probe[point] = probe_now();
}

// Any thread stamps `point` (MKG_PROBE_ANY: the dispatch kernel's pick warp, d5).
static __device__ __forceinline__ void probe_mark_any(int point)
{
    s_probe[point] = probe_now();
}

// Called once by the producer thread and once by each consumer warpgroup's first thread
// after their last mark: copies this warpgroup's stamps (producer 0..2 and 11..16, consumer w
// 3 + 4w .. 6 + 4w) to the launch's slot; the last of the 3 x grid arrivals starts the
// next launch's epoch.
static __device__ __forceinline__ void probe_done(void)
{
    if ((threadIdx.x & 127) == 0) {
        const int w = (int)threadIdx.x / 128;
        const unsigned int e = *(volatile unsigned int *)&g_probe_epoch;
        if (e < PROBE_LAUNCHES && blockIdx.x < PROBE_CTAS) {
            const int p0 = w == 0 ? 0 : 3 + 4 * (w - 1), p1 = w == 0 ? 3 : p0 + 4;
            for (int q = p0; q < p1; ++q)
                g_probe_t[e][blockIdx.x][q] = s_probe[q];
            if (w == 0)                                 // the producer's points inside `prod`
                for (int q = 11; q < PROBE_POINTS; ++q)
                    g_probe_t[e][blockIdx.x][q] = s_probe[q];
        }
        __threadfence();
        if (atomicAdd(&g_probe_arrived, 1u) == 3u * gridDim.x - 1u) {
            g_probe_arrived = 0u;
            __threadfence();
            atomicAdd(&g_probe_epoch, 1u);
        }
    }
}

// Per-stage marks (MKG_PROBE_STAGE): SM clock (32 bit) of events 0, 1, 2 (warpgroup 0 saw the
// stage) and 4 (warpgroup 0 released the stage before) for K tiles 0..31 of the CTA's current
// unit, stored straight to global memory (a store does not stall the thread; no shared memory
// is left over beside the launch's budget). The last launch's marks stay.
#define STAGE_EVENTS 4
#define STAGE_TILES 32
__device__ unsigned int g_stage[PROBE_CTAS][STAGE_EVENTS][STAGE_TILES];

static __device__ __forceinline__ void probe_stage(int ev, int kt)
{
    if ((threadIdx.x & 127) == 0 && kt >= 0 && kt < STAGE_TILES && ev != 3 && ev != 5 &&
        blockIdx.x < PROBE_CTAS) {
        unsigned int c;
        asm volatile("mov.u32 %0, %%clock;" : "=r"(c));
        g_stage[blockIdx.x][ev == 4 ? 3 : ev][kt] = c;
    }
}

#define MKG_PROBE_STAGE(ev, kt) probe_stage(ev, kt)
#define MKG_PROBE(point) probe_mark(point)
#define MKG_PROBE_ANY(point) probe_mark_any(point)
#define MKG_PROBE_DONE() probe_done()
// A name of its own, so these instantiations never meet the library's (same template
// arguments, no hooks) at link time.
#define mkg_gemm_persistent_sm90 mkg_probe_persistent_sm90
#include "mkg_gemm_sm90.cuh"
#undef mkg_gemm_persistent_sm90
// The bench's dispatch kernel with the marks, under a name of its own as above.
#define mkg_bench_dispatch_kernel mkg_probe_dispatch_kernel
#include "mkg_bench_dispatch_kernel.cuh"
#undef mkg_bench_dispatch_kernel
#include "probe_common.h"

#include "mkg_gemm.h"
#include "mkg_schedules.h"

#define CK(call) MKG_CUDA_CHECK(call)   /* mkg_check.h: prints the call and exits */

// ---- 1. launch floor ------------------------------------------------------------------

__device__ unsigned long long g_floor_t[2][512];   // [entry, exit] per launch (CTA 0 / last)

__global__ void __launch_bounds__(384, 1) k_small(int x)
{
    if (x == -7 && threadIdx.x == 0)
        g_floor_t[0][0] = 1;
}

__global__ void __launch_bounds__(384, 1) k_params(const __grid_constant__ mkg_gemm_params p, int x)
{
    if (x == -7 && threadIdx.x == 0)
        g_floor_t[0][0] = (unsigned long long)p.m;
}

// Stamps the earliest entry and the latest exit of launch number `i` over its CTAs.
__global__ void __launch_bounds__(384, 1) k_stamp(const __grid_constant__ mkg_gemm_params p, int i)
{
    if (threadIdx.x == 0) {
        atomicMin(&g_floor_t[0][i], probe_now());
        if (p.m == -7)
            g_floor_t[0][0] = 0;
        atomicMax(&g_floor_t[1][i], probe_now());
    }
}

static float graph_us_per_launch(cudaStream_t st, int launches, void (*enqueue)(cudaStream_t, int, void *),
                                 void *ctx)
{
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < launches; ++i)
        enqueue(st, i, ctx);
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e0, st));
    const int reps = 10;
    for (int r = 0; r < reps; ++r)
        CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaStreamSynchronize(st));
    float ms = 0.0f;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    return 1000.0f * ms / (float)(reps * launches);
}

struct floor_ctx {
    mkg_gemm_params *p;
    size_t smem;
};

static void enq_small(cudaStream_t st, int i, void *)
{
    k_small<<<132, 384, 0, st>>>(i);
}
static void enq_params(cudaStream_t st, int i, void *c)
{
    const floor_ctx *f = (const floor_ctx *)c;
    k_params<<<132, 384, f->smem, st>>>(*f->p, i);
}
static void enq_stamp(cudaStream_t st, int i, void *c)
{
    const floor_ctx *f = (const floor_ctx *)c;
    k_stamp<<<132, 384, f->smem, st>>>(*f->p, i);
}

// ---- 2. phase timeline of the shipped kernel ----------------------------------------

struct probe_case {
    const char *name;
    int m, n, k;
    const char *schedule;
    int rotate;     /* 1: rotate inputs through > 2 x L2 (as the bench); 0: one set, L2-resident */
    int dispatch;   /* 1: the one-GEMM dispatch kernel (a one-layer table per input set) */
    int kc;         /* canonical K chunk (0: K, one chunk) */
    int chunked;    /* 1: the chunked instantiation (CH = 1, as MKG_KV_CHUNKED_STORE), even for one chunk */
};

static const void *probe_kernel(int s, int chunked)
{
    const mkg_schedule_info *i = mkg_schedule_get(s);
    // The 128-deep decode row as the bench runs it: the one-chunk plain-store kernel (MKG_KV_STORE)
    // or the chunked one compiled for the same store (MKG_KV_CHUNKED_STORE), to split the chunked
    // kernel's extra ~2 us (v60 / v61 in bench/NOTES.md) from the cost of a chunk edge.
    if (i->tile_m == 16 && i->tile_n == 64 && i->tile_k == 128 && i->stages == 8 && i->swap_ab && i->split == 1 &&
        i->cluster == 1)
        return chunked ? (const void *)mkg_probe_persistent_sm90<MKG_DTYPE_BF16, 16, 64, 64, 8, 1, 1, 1, 0,
                                                                 MKG_DTYPE_BF16, 2>
                       : (const void *)mkg_probe_persistent_sm90<MKG_DTYPE_BF16, 16, 64, 64, 8, 1, 0, 1, 0,
                                                                 MKG_DTYPE_BF16, 2>;
    if (chunked)
        return NULL;
    if (i->tile_m == 128 && i->tile_n == 64 && i->stages == 6 && !i->swap_ab && i->cluster == 1 && !i->pingpong)
        return (const void *)mkg_probe_persistent_sm90<MKG_DTYPE_BF16, 128, 64, 64, 6, 0, 0, 1, 0>;
    if (i->tile_m == 16 && i->tile_n == 64 && i->stages == 16 && i->swap_ab)
        return (const void *)mkg_probe_persistent_sm90<MKG_DTYPE_BF16, 16, 64, 64, 16, 1, 0, 1, 0>;
    if (i->tile_m == 128 && i->tile_n == 128 && i->stages == 6 && !i->swap_ab && i->cluster == 1 && !i->pingpong)
        return (const void *)mkg_probe_persistent_sm90<MKG_DTYPE_BF16, 128, 128, 64, 6, 0, 0, 1, 0>;
    // The large cooperative rows: what a unit's end costs (K loop drained -> epilogue issued ->
    // stores read) against its K loop, one unit per CTA.
    if (i->tile_m == 128 && i->tile_n == 256 && i->stages == 4 && !i->swap_ab && i->cluster == 1 && !i->pingpong)
        return (const void *)mkg_probe_persistent_sm90<MKG_DTYPE_BF16, 128, 256, 64, 4, 0, 0, 1, 0>;
    if (i->tile_m == 128 && i->tile_n == 256 && i->stages == 3 && !i->swap_ab && i->cluster == 1 && !i->pingpong)
        return (const void *)mkg_probe_persistent_sm90<MKG_DTYPE_BF16, 128, 256, 64, 3, 0, 0, 1, 0>;
    // Ping-pong (v68: the same row in the dispatch kernel, against the shipped one).
    if (i->tile_m == 128 && i->tile_n == 128 && i->stages == 6 && i->raster == MKG_RASTER_M && i->pingpong)
        return (const void *)mkg_probe_persistent_sm90<MKG_DTYPE_BF16, 128, 128, 64, 6, 0, 0, 1, 1>;
    // The same in clusters of two (B multicast; a slot is free once both CTAs released it).
    if (i->tile_m == 128 && i->tile_n == 256 && i->stages == 4 && !i->swap_ab && i->cluster == 2 && !i->pingpong)
        return (const void *)mkg_probe_persistent_sm90<MKG_DTYPE_BF16, 128, 256, 64, 4, 0, 0, 2, 0>;
    return NULL;
}

static double median(std::vector<double> v)
{
    if (v.empty())
        return 0.0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

struct phase_row {
    double us_per_launch, gap, spread, init, prod, first, loop, epi, drain, total;
    double branch, dealloc, slot;   // prod split at points 11 and 12 (d3 in bench/NOTES.md)
    double rank, jump;              // branch split at point 13 (d4)
    double pick, arrive;            // 0 -> 14 the pick done, 0 -> 15 thread 0 at the barrier (d5)
    double load;                    // 0 -> 16 the pick's row words are in (d5)
    int grid;
};

// Whether `name` is one of the comma-separated names in `list`.
static bool probe_listed(const char *list, const char *name)
{
    const size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        const size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

static phase_row run_case(const probe_case *pc, cudaStream_t st)
{
    const int s = mkg_schedule_find(pc->schedule);
    const void *kernel = s < 0             ? NULL
                         : pc->dispatch ? (const void *)mkg_probe_dispatch_kernel<MKG_DTYPE_BF16, MKG_DTYPE_BF16>
                                        : probe_kernel(s, pc->chunked);
    if (!kernel) {
        fprintf(stderr, "launch_probe: no probe kernel for %s\n", pc->schedule);
        exit(1);
    }
    const mkg_schedule_info *info = mkg_schedule_get(s);
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, MKG_LAUNCH_SMEM_BYTES));
    // Rotate through more than twice the 60 MB L2, as the bench does.
    const size_t a_elems = (size_t)pc->m * pc->k, b_elems = (size_t)pc->n * pc->k, c_elems = (size_t)pc->m * pc->n;
    const size_t set_bytes = 2 * (a_elems + b_elems + c_elems);
    int sets = pc->rotate ? (int)((128ull << 20) / set_bytes) + 1 : 1;
    if (sets > 32)
        sets = 32;
    std::vector<mkg_gemm_params> params(sets);
    std::vector<mkg_table *> tables(sets, nullptr);
    std::vector<void *> bufs;
    for (int i = 0; i < sets; ++i) {
        uint16_t *a, *b, *c;
        CK(cudaMalloc(&a, 2 * a_elems));
        CK(cudaMalloc(&b, 2 * b_elems));
        CK(cudaMalloc(&c, 2 * c_elems));
        bufs.push_back(a), bufs.push_back(b), bufs.push_back(c);
        probe_fill_bf16<<<264, 256, 0, st>>>(a, a_elems, 17u * i + 1u);
        probe_fill_bf16<<<264, 256, 0, st>>>(b, b_elems, 17u * i + 2u);
        CK(cudaGetLastError());
        mkg_gemm_desc d;
        memset(&d, 0, sizeof(d));
        d.m = pc->m, d.n = pc->n, d.k = pc->k;
        d.a_type = d.b_type = d.c_type = MKG_DTYPE_BF16;
        d.a = a, d.b = b, d.c = c;
        d.lda = d.ldb = pc->k, d.ldc = pc->n;
        d.epilogue = MKG_EPI_STORE;
        d.kc = pc->kc ? pc->kc : pc->k;
        const mkg_status ms = mkg_gemm_encode_params(&d, &params[i]);
        if (ms != MKG_OK) {
            fprintf(stderr, "launch_probe: encode %s: %s\n", pc->name, mkg_status_string(ms));
            exit(1);
        }
        if (pc->dispatch) {
            // One layer, every M bucket planned with the case's schedule.
            mkg_layer_desc l;
            memset(&l, 0, sizeof l);
            l.n = pc->n, l.k = pc->k;
            l.in_type = l.c_type = MKG_DTYPE_BF16;
            l.a = a, l.b = b, l.c = c;
            l.lda = l.ldb = pc->k, l.ldc = pc->n;
            l.epilogue = MKG_EPI_STORE;
            l.m_max = pc->m;
            l.mode = MKG_MODE_INVARIANT;
            l.kc = pc->k;
            mkg_layer_plan pl;
            memset(&pl, 0, sizeof pl);
            pl.kc = pc->k;
            pl.buckets = mkg_bucket_count(pc->m);
            for (int b2 = 0; b2 < pl.buckets; ++b2)
                pl.schedule[b2] = (unsigned char)s;
            mkg_status ts = mkg_table_create(&l, 1, &pl, &tables[i]);
            if (ts == MKG_OK)
                ts = mkg_table_set_m(tables[i], 0, pc->m, st);
            if (ts != MKG_OK) {
                fprintf(stderr, "launch_probe: table %s: %s\n", pc->name, mkg_status_string(ts));
                exit(1);
            }
        }
    }
    CK(cudaStreamSynchronize(st));
    const int units = ((pc->m + info->tile_m - 1) / info->tile_m) * ((pc->n + info->tile_n - 1) / info->tile_n);
    int grid = units < 132 ? units : 132;
    grid -= grid % info->cluster;                    // whole clusters
    int raster = info->raster, group = info->group, split = 1;

    const int launches = PROBE_LAUNCHES;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    const mkg_layer_dev *drows[32];
    int *dm[32];
    unsigned int *derr[32];
    int dcount = 1, dlayer = 0;
    for (int i = 0; pc->dispatch && i < sets; ++i) {
        drows[i] = mkg_table_rows(tables[i]);
        dm[i] = mkg_table_m(tables[i]);
        derr[i] = mkg_table_error(tables[i]);
    }
    for (int i = 0; i < launches; ++i) {
        int producers = mkg_launch_producers(), order = 3;   // the bench's default unit order (v83)
        void *args[7] = {&params[i % sets], &raster, &group, &split, &producers, NULL, NULL};
        if (pc->dispatch) {
            args[0] = &drows[i % sets], args[1] = &dcount, args[2] = &dm[i % sets], args[3] = &derr[i % sets];
            args[4] = &dlayer, args[5] = &producers, args[6] = &order;
        }
        cudaLaunchConfig_t cfg;
        cudaLaunchAttribute attr[1];
        memset(&cfg, 0, sizeof cfg);
        memset(attr, 0, sizeof attr);
        cfg.gridDim = dim3(grid);
        cfg.blockDim = dim3(MKG_LAUNCH_THREADS);
        cfg.dynamicSmemBytes = MKG_LAUNCH_SMEM_BYTES;
        cfg.stream = st;
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = (unsigned)info->cluster;
        attr[0].val.clusterDim.y = attr[0].val.clusterDim.z = 1;
        cfg.attrs = attr;
        cfg.numAttrs = info->cluster > 1 ? 1 : 0;
        CK(cudaLaunchKernelExC(&cfg, kernel, args));
    }
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, st));                     // warm: code, tensor maps, page tables
    CK(cudaStreamSynchronize(st));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const unsigned int zero = 0;
    // One timed replay per round with the epoch reset before it; the stamps kept are the
    // last round's (every round writes them all).
    float best = 1e30f;
    for (int r = 0; r < 5; ++r) {
        CK(cudaMemcpyToSymbolAsync(g_probe_epoch, &zero, 4, 0, cudaMemcpyHostToDevice, st));
        CK(cudaEventRecord(e0, st));
        CK(cudaGraphLaunch(ge, st));
        CK(cudaEventRecord(e1, st));
        CK(cudaStreamSynchronize(st));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        best = ms < best ? ms : best;
    }
    static unsigned long long t[PROBE_LAUNCHES][PROBE_CTAS][PROBE_POINTS];
    CK(cudaMemcpyFromSymbol(t, g_probe_t, sizeof(t)));
    unsigned int epoch = 0;
    CK(cudaMemcpyFromSymbol(&epoch, g_probe_epoch, 4));
    if (epoch != (unsigned int)launches) {
        fprintf(stderr, "launch_probe: %s: %u epochs recorded, %d launches\n", pc->name, epoch, launches);
        exit(1);
    }
    std::vector<double> gap, spread, init, prod, first, loop, epi, drain, total, branch, dealloc, slot, rank, jump;
    std::vector<double> pick, arrive, load;
    for (int e = 2; e < launches - 1; ++e) {
        unsigned long long emin = ~0ull, emax = 0, xmax = 0, nmin = ~0ull;
        for (int b = 0; b < grid; ++b) {
            emin = std::min(emin, t[e][b][0]);
            emax = std::max(emax, t[e][b][0]);
            xmax = std::max(xmax, std::max(t[e][b][6], t[e][b][10]));
            nmin = std::min(nmin, t[e + 1][b][0]);
        }
        gap.push_back((double)(nmin - xmax) * 1e-3);
        spread.push_back((double)(emax - emin) * 1e-3);
        total.push_back((double)(xmax - emin) * 1e-3);
        for (int b = 0; b < grid; ++b) {
            const unsigned long long *q = t[e][b];
            init.push_back((double)(long long)(q[1] - q[0]) * 1e-3);
            prod.push_back((double)(long long)(q[2] - q[1]) * 1e-3);
            branch.push_back((double)(long long)(q[11] - q[1]) * 1e-3);
            rank.push_back((double)(long long)(q[13] - q[1]) * 1e-3);
            jump.push_back((double)(long long)(q[11] - q[13]) * 1e-3);
            pick.push_back(pc->dispatch ? (double)(long long)(q[14] - q[0]) * 1e-3 : 0.0);   // none when shipped
            arrive.push_back((double)(long long)(q[15] - q[0]) * 1e-3);
            load.push_back(pc->dispatch ? (double)(long long)(q[16] - q[0]) * 1e-3 : 0.0);
            dealloc.push_back((double)(long long)(q[12] - q[11]) * 1e-3);
            slot.push_back((double)(long long)(q[2] - q[12]) * 1e-3);
            first.push_back((double)(long long)(q[3] - q[2]) * 1e-3);
            loop.push_back((double)(long long)(q[4] - q[3]) * 1e-3);
            epi.push_back((double)(long long)(q[5] - q[4]) * 1e-3);
            drain.push_back((double)(long long)(q[6] - q[5]) * 1e-3);
        }
    }
    {
        // Per-stage timeline of the last launch (SM cycles), medians over CTAs, K tiles 0..31.
        static unsigned int gs[PROBE_CTAS][STAGE_EVENTS][STAGE_TILES];
        CK(cudaMemcpyFromSymbol(gs, g_stage, sizeof(gs)));
        const int kts = (int)std::min<long>(STAGE_TILES, (pc->k + 63) / 64);
        printf("  %s stages (SM cycles, medians over %d CTAs): kt  prod.wait+issue  issue->seen(wg0)  "
               "seen-interval(wg0)  seen->released(wg0)  stages issued ahead of the one seen\n",
               pc->name, grid);
        for (int kt = 0; kt < kts; ++kt) {
            std::vector<double> pw, lat, iv, hold, ahead;
            for (int b = 0; b < grid; ++b) {
                const unsigned int *e0 = gs[b][0], *e1 = gs[b][1], *e2 = gs[b][2], *e4 = gs[b][3];
                pw.push_back((double)(int)(e1[kt] - e0[kt]));
                lat.push_back((double)(int)(e2[kt] - e1[kt]));
                iv.push_back(kt ? (double)(int)(e2[kt] - e2[kt - 1]) : 0.0);
                hold.push_back(kt + 1 < kts ? (double)(int)(e4[kt] - e2[kt]) : 0.0);
                int n = 0;
                for (int j = kt + 1; j < kts; ++j)
                    n += (int)(e1[j] - e2[kt]) <= 0;
                ahead.push_back(n);
            }
            printf("  %2d %8.0f %8.0f %8.0f %8.0f %5.0f\n", kt, median(pw), median(lat), median(iv), median(hold),
                   median(ahead));
        }
    }
    phase_row row;
    row.us_per_launch = 1000.0 * best / launches;
    row.gap = median(gap), row.spread = median(spread), row.total = median(total);
    row.init = median(init), row.prod = median(prod), row.first = median(first);
    row.loop = median(loop), row.epi = median(epi), row.drain = median(drain);
    row.branch = median(branch), row.dealloc = median(dealloc), row.slot = median(slot);
    row.rank = median(rank), row.jump = median(jump);
    row.pick = median(pick), row.arrive = median(arrive), row.load = median(load);
    row.grid = grid;
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    for (int i = 0; pc->dispatch && i < sets; ++i) {
        unsigned int word = 0;
        if (mkg_table_take_error(tables[i], &word, st) != MKG_OK || word) {
            fprintf(stderr, "launch_probe: %s: dispatch error word 0x%x\n", pc->name, word);
            exit(1);
        }
        mkg_table_destroy(tables[i]);
    }
    for (void *p : bufs)
        CK(cudaFree(p));
    return row;
}

int main(int argc, char **argv)
{
    const char *out = NULL;
    for (int i = 1; i < argc; ++i)
        if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
    int dev = 0;
    cudaDeviceProp prop;
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    if (prop.major != 9) {
        fprintf(stderr, "launch_probe: needs a compute capability 9.0 GPU (found %d.%d)\n", prop.major, prop.minor);
        return 2;
    }
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CK(cudaFuncSetAttribute(k_params, cudaFuncAttributeMaxDynamicSharedMemorySize, MKG_LAUNCH_SMEM_BYTES));
    CK(cudaFuncSetAttribute(k_stamp, cudaFuncAttributeMaxDynamicSharedMemorySize, MKG_LAUNCH_SMEM_BYTES));

    mkg_gemm_params hp;
    memset(&hp, 0, sizeof(hp));
    hp.m = 1;
    floor_ctx f0 = {&hp, 0}, f1 = {&hp, MKG_LAUNCH_SMEM_BYTES};
    const float us_small = graph_us_per_launch(st, 200, enq_small, NULL);
    const float us_params = graph_us_per_launch(st, 200, enq_params, &f0);
    const float us_params_smem = graph_us_per_launch(st, 200, enq_params, &f1);
    // Gap between graph-launched kernels: earliest entry of i + 1 minus latest exit of i.
    std::vector<unsigned long long> init0(512, ~0ull), init1(512, 0ull);
    CK(cudaMemcpyToSymbol(g_floor_t, init0.data(), 512 * 8, 0));
    CK(cudaMemcpyToSymbol(g_floor_t, init1.data(), 512 * 8, 512 * 8));
    const float us_stamp = graph_us_per_launch(st, 100, enq_stamp, &f1);
    CK(cudaMemcpyToSymbol(g_floor_t, init0.data(), 512 * 8, 0));
    CK(cudaMemcpyToSymbol(g_floor_t, init1.data(), 512 * 8, 512 * 8));
    {
        // one more replay, stamps only from it
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
        for (int i = 0; i < 100; ++i)
            enq_stamp(st, i, &f1);
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        CK(cudaGraphLaunch(ge, st));
        CK(cudaStreamSynchronize(st));
        CK(cudaMemcpyToSymbol(g_floor_t, init0.data(), 512 * 8, 0));
        CK(cudaMemcpyToSymbol(g_floor_t, init1.data(), 512 * 8, 512 * 8));
        CK(cudaGraphLaunch(ge, st));
        CK(cudaStreamSynchronize(st));
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
    }
    static unsigned long long ft[2][512];
    CK(cudaMemcpyFromSymbol(ft, g_floor_t, sizeof(ft)));
    std::vector<double> fgap, fdur;
    for (int i = 2; i < 99; ++i) {
        fgap.push_back((double)(ft[0][i + 1] - ft[1][i]) * 1e-3);
        fdur.push_back((double)(ft[1][i] - ft[0][i]) * 1e-3);
    }
    printf("launch floor (graph of 200 launches, 132 x 384 threads, us per launch):\n");
    printf("  int param %.2f | mkg_gemm_params by value (%zu B) %.2f | + %d B dynamic smem %.2f | stamping %.2f\n",
           us_small, sizeof(mkg_gemm_params), us_params, MKG_LAUNCH_SMEM_BYTES, us_params_smem, us_stamp);
    printf("  globaltimer: median gap last exit -> next first entry %.3f us, first entry -> last exit %.3f us\n",
           median(fgap), median(fdur));

    static const probe_case cases[] = {
        {"tiny_128x64x64", 128, 64, 64, "m128n64k64_s6_rn_g8", 1, 0},
        {"tiny_128x64x64_l2", 128, 64, 64, "m128n64k64_s6_rn_g8", 0, 0},
        {"square_768", 768, 768, 768, "m128n64k64_s6_rn_g8", 1, 0},
        {"square_768_l2", 768, 768, 768, "m128n64k64_s6_rn_g8", 0, 0},
        {"square_768_n128", 768, 768, 768, "m128n128k64_s6_rn_g8", 1, 0},
        {"square_1024", 1024, 1024, 1024, "m128n64k64_s6_rn_g8", 1, 0},
        {"llama32_1b_o_m512", 512, 2048, 2048, "m128n64k64_s6_rn_g8", 1, 0},
        {"llama32_1b_o_m1", 1, 2048, 2048, "m16n64k64_s16_swap_rn_g8", 1, 0},
        {"llama32_1b_o_m1_k64", 1, 2048, 64, "m16n64k64_s16_swap_rn_g8", 1, 0},
        {"llama32_1b_o_m1_k64_l2", 1, 2048, 64, "m16n64k64_s16_swap_rn_g8", 0, 0},
        {"n256s4_1024x4096x4096", 1024, 4096, 4096, "m128n256k64_s4_rn_g8", 1, 0},
        {"n256s3_1024x4096x4096", 1024, 4096, 4096, "m128n256k64_s3_rn_g8", 1, 0},
        {"n256s4_1024x4096x2048", 1024, 4096, 2048, "m128n256k64_s4_rn_g8", 1, 0},
        {"n256s4c2_1024x4096x4096", 1024, 4096, 4096, "m128n256k64_s4_rn_g8_c2", 1, 0},
        {"n256s4_1024x4096x4096_l2", 1024, 4096, 4096, "m128n256k64_s4_rn_g8", 0, 0},
        {"disp_square_768", 768, 768, 768, "m128n64k64_s6_rn_g8", 1, 1},
        {"disp_square_768_l2", 768, 768, 768, "m128n64k64_s6_rn_g8", 0, 1},
        {"disp_llama32_1b_o_m512", 512, 2048, 2048, "m128n64k64_s6_rn_g8", 1, 1},
        {"disp_llama32_1b_o_m1", 1, 2048, 2048, "m16n64k64_s16_swap_rn_g8", 1, 1},
        {"disp_n256s4_1024x4096x4096", 1024, 4096, 4096, "m128n256k64_s4_rn_g8", 1, 1},
        // Many units per CTA (~4 waves): the dispatch kernel against the shipped one past its start
        // (v68); the ping-pong rows have no stamps past the producer start (launch column only).
        {"n256s4_4096", 4096, 4096, 4096, "m128n256k64_s4_rn_g8", 1, 0},
        {"disp_n256s4_4096", 4096, 4096, 4096, "m128n256k64_s4_rn_g8", 1, 1},
        {"n128pp_4096", 4096, 4096, 4096, "m128n128k64_s6_rm_g8_pp", 1, 0},
        {"disp_n128pp_4096", 4096, 4096, 4096, "m128n128k64_s6_rm_g8_pp", 1, 1},
        // The chunked kernel against the one-chunk kernel on one decode row (session 26's next step).
        {"1b_o_m1_k128_one", 1, 2048, 2048, "m16n64k128_s8_swap_rn_g8", 1, 0, 0, 0},
        {"1b_o_m1_k128_ch1", 1, 2048, 2048, "m16n64k128_s8_swap_rn_g8", 1, 0, 2048, 1},
        {"1b_o_m1_k128_ch2", 1, 2048, 2048, "m16n64k128_s8_swap_rn_g8", 1, 0, 1024, 1},
        {"1b_down_m1_k128_one", 1, 2048, 8192, "m16n64k128_s8_swap_rn_g8", 1, 0, 0, 0},
        {"1b_down_m1_k128_ch4", 1, 2048, 8192, "m16n64k128_s8_swap_rn_g8", 1, 0, 2048, 1},
    };
    const int ncases = (int)(sizeof(cases) / sizeof(cases[0]));
    phase_row rows[sizeof(cases) / sizeof(cases[0])];
    printf("\nshipped kernel phases (us; medians over %d graph-replayed launches, inputs rotated through > L2\n"
           "except _l2 cases; per-CTA phases are medians over CTAs; gap = last exit to next launch's first\n"
           "entry, inflated by the probe's own end-of-launch atomics)\n",
           PROBE_LAUNCHES - 3);
    printf("%-22s %4s %7s %6s %6s %6s %6s %6s %7s %6s %6s %6s  (prod = %6s %7s %6s; branch = %5s %5s; "
           "init: %5s %5s %6s)\n",
           "case", "grid", "launch", "gap", "spread", "init", "prod", "first", "kloop", "epi", "drain", "total",
           "branch", "dealloc", "slot", "rank", "jump", "load", "pick", "arrive");
    // MKG_PROBE_CASES=name,name,...: only the cases whose names are listed (a build with
    // -DMKG_BENCH_DISPATCH_ONLY_SHAPE holds the dispatch rows of one tile shape only).
    const char *only = getenv("MKG_PROBE_CASES");
    bool ran[sizeof(cases) / sizeof(cases[0])] = {};
    for (int i = 0; i < ncases; ++i) {
        if (only && !probe_listed(only, cases[i].name))
            continue;
        ran[i] = true;
        rows[i] = run_case(&cases[i], st);
        const phase_row &r = rows[i];
        printf("%-22s %4d %7.2f %6.2f %6.2f %6.2f %6.2f %6.2f %7.2f %6.2f %6.2f %6.2f  (prod = %6.2f %7.2f %6.2f; "
               "branch = %5.2f %5.2f; init: %5.2f %5.2f %6.2f)\n",
               cases[i].name, r.grid, r.us_per_launch, r.gap, r.spread, r.init, r.prod, r.first, r.loop, r.epi, r.drain,
               r.total, r.branch, r.dealloc, r.slot, r.rank, r.jump, r.load, r.pick, r.arrive);
    }
    if (out) {
        FILE *fp = fopen(out, "w");
        if (!fp) {
            perror(out);
            return 1;
        }
        fprintf(fp, "{\"gpu\": \"%s\", \"floor_us\": {\"int_param\": %.3f, \"params_by_value\": %.3f, "
                    "\"params_and_smem\": %.3f, \"stamp\": %.3f, \"gap\": %.3f, \"duration\": %.3f},\n \"cases\": [\n",
                prop.name, us_small, us_params, us_params_smem, us_stamp, median(fgap), median(fdur));
        int last = -1;
        for (int i = 0; i < ncases; ++i)
            if (ran[i])
                last = i;
        for (int i = 0; i < ncases; ++i) {
            if (!ran[i])
                continue;
            const phase_row &r = rows[i];
            fprintf(fp,
                    "  {\"case\": \"%s\", \"rotate\": %d, \"M\": %d, \"N\": %d, \"K\": %d, \"schedule\": \"%s\", \"dispatch\": %d, \"grid\": %d, "
                    "\"us_per_launch\": %.3f, \"gap\": %.3f, \"entry_spread\": %.3f, \"init\": %.3f, \"producer_start\": %.3f, "
                    "\"first_stage\": %.3f, \"k_loop\": %.3f, \"epilogue\": %.3f, \"drain\": %.3f, \"total\": %.3f, "
                    "\"prod_branch\": %.3f, \"prod_dealloc\": %.3f, \"prod_slot\": %.3f, \"branch_rank\": %.3f, "
                    "\"branch_jump\": %.3f, \"load\": %.3f, \"pick\": %.3f, \"arrive\": %.3f}%s\n",
                    cases[i].name, cases[i].rotate, cases[i].m, cases[i].n, cases[i].k, cases[i].schedule,
                    cases[i].dispatch, r.grid, r.us_per_launch,
                    r.gap, r.spread, r.init, r.prod, r.first, r.loop, r.epi, r.drain, r.total, r.branch, r.dealloc,
                    r.slot, r.rank, r.jump, r.load, r.pick, r.arrive, i < last ? "," : "");
        }
        fprintf(fp, " ]}\n");
        fclose(fp);
    }
    CK(cudaStreamDestroy(st));
    return 0;
}
