// racecheck_named_barrier_probe.cu - does compute-sanitizer's racecheck honour a named
// barrier that covers only part of the CTA? The megakernel's non-GEMM ops sync the 256
// consumer threads of a 384-thread CTA with `bar.sync 3, 256`; racecheck reported
// write/read pairs across that barrier (bench/NOTES.md). This program does the same pattern
// (thread 128 writes shared memory, barrier, threads 128..383 read it, barrier) four ways:
//   mode 0: __syncthreads (whole CTA)
//   mode 1: bar.sync 3, 256 with immediate operands, inline
//   mode 2: bar.sync with register operands (as mkg_bar_sync emits it) in a __noinline__
//           function on dynamic shared memory, after 128-thread barriers 1 and 2 (as the
//           megakernel's GEMM epilogue uses them)
//   mode 3: as mode 2, but the writer first spins ~1 ms on a global word with __nanosleep
//           inside a divergent branch (the megakernel's bounded dependency wait), the
//           consumer warpgroups raise their registers with setmaxnreg and the producer
//           warpgroup lowers its own and waits on an mbarrier the writer arrives on
//   mode 4: as mode 3, but the item's data sits where the megakernel's scratch does (shared
//           offset 0x30800, in a 200+ KB dynamic allocation) and 160 threads (5 warps, as
//           attention decode's q/k rotation) write after trig code with a slow path, then all
//           256 read words other warps wrote
//   mode 5: the megakernel's traffic around the items: one CTA per SM, a producer thread streaming
//           16 KB bulk copies (cp.async.bulk, mbarrier complete_tx) into an 8-slot ring that both
//           consumer warpgroups drain between items (full / empty mbarriers, 128-thread barriers
//           1 and 2), and items whose thread 0 first waits (bounded, __nanosleep) for another
//           CTA's previous item through a global counter, then writes a flag and 160 threads a
//           table before `barrier.sync 3, 256`; 32 rounds. Writes nothing racy by construction.
// Modes 0..4 gave 0 hazards on the H200 (bench/results/racecheck_probe_h200.txt). Mode 5's first
// run (session 25, bench/results/racecheck_probe5_7cf536b.txt) read each slot with a plain load and
// racecheck reported that read against the next bulk copy into the slot (see the NOTE in probe5);
// the read is gone, and the run with it was cut by its time limit before mode 5's summary. Build and run on the GPU machine (argument: the first mode to run):
//   nvcc -gencode arch=compute_90a,code=sm_90a -lineinfo tools/racecheck_named_barrier_probe.cu -o /tmp/probe
//   compute-sanitizer --tool racecheck --racecheck-report all /tmp/probe
#include <cstdio>
#include <cstdlib>

static __device__ __forceinline__ void bar_sync_reg(int id, int threads)
{
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

static __device__ __noinline__ void item(volatile unsigned int *flag, int *out, int it, int tid, int id, int n,
                                         const volatile unsigned int *go)
{
    if (tid == 0) {
        if (go) {
            const long long t0 = clock64();
            while (*go == 0u && clock64() - t0 < 2000000)   // ~1 ms: go is never set
                __nanosleep(256);
        }
        *flag = (unsigned int)it + 1u;
    }
    bar_sync_reg(id, n);
    out[tid + 128] += (int)*flag;
    bar_sync_reg(id, n);
}

// Per-warpgroup work between the 128-thread barriers 1 and 2, then one item.
static __device__ __forceinline__ void consumer_step(unsigned int *dyn, int *out, int it, int id, int n,
                                                     const unsigned int *go)
{
    const int wg = threadIdx.x / 128 - 1;
    dyn[64 + threadIdx.x] = it;
    bar_sync_reg(1 + wg, 128);
    out[threadIdx.x] += (int)dyn[64 + (threadIdx.x ^ 1)] * 0;
    bar_sync_reg(1 + wg, 128);
    item(dyn + 4, out, it, threadIdx.x - 128, id, n, go);
}

__global__ void probe(int *out, int mode, int id, int n)
{
    __shared__ int flag[4];
    extern __shared__ unsigned int dyn[];
    for (int it = 0; it < 4; ++it) {
        if (mode == 1) {
            if (threadIdx.x >= 128) {
                if (threadIdx.x == 128)
                    flag[it] = it + 1;
                asm volatile("bar.sync 3, 256;" ::: "memory");
                out[threadIdx.x] += flag[it];
                asm volatile("bar.sync 3, 256;" ::: "memory");
            }
        } else if (mode == 2) {
            if (threadIdx.x >= 128)
                consumer_step(dyn, out, it, id, n, nullptr);
        } else {
            if (threadIdx.x == 128)
                flag[it] = it + 1;
            __syncthreads();
            out[threadIdx.x] += flag[it];
            __syncthreads();
        }
    }
}

// Modes 3 and 4: the per-item mbarrier (one arrival per phase), initialised before any role starts.
static __device__ unsigned int item_barrier(unsigned long long *mbar)
{
    const unsigned int bar = (unsigned int)__cvta_generic_to_shared(mbar);
    if (threadIdx.x == 0)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
    __syncthreads();
    return bar;
}

// Modes 3 and 4: the producer warpgroup waits out one mbarrier phase per item.
static __device__ void producer_waits(unsigned int bar)
{
    for (int it = 0; it < 4; ++it) {
        unsigned int done = 0;
        while (!done)
            asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                         "selp.u32 %0, 1, 0, p;\n\t}"
                         : "=r"(done) : "r"(bar), "r"((unsigned int)(it & 1)) : "memory");
    }
}

// Modes 3 and 4: warpgroup 0 gives up registers and waits on the item mbarrier (as the library's
// producer does); warpgroups 1 and 2 take registers and run item(it) four times, thread 128
// arriving on the mbarrier after each.
template <typename Item>
static __device__ __forceinline__ void producer_consumer_roles(unsigned long long *mbar, Item item)
{
    const unsigned int bar = item_barrier(mbar);
    if (threadIdx.x < 128) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 56;" ::: "memory");
        producer_waits(bar);
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 224;" ::: "memory");
        for (int it = 0; it < 4; ++it) {
            item(it);
            if (threadIdx.x == 128)
                asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
        }
    }
}

// Mode 3 is its own kernel: setmaxnreg needs every path of a kernel to agree on it.
__global__ void __launch_bounds__(384, 1) probe3(int *out, int id, int n, const unsigned int *go)
{
    __shared__ __align__(8) unsigned long long mbar;
    extern __shared__ unsigned int dyn[];
    producer_consumer_roles(&mbar, [&](int it) { consumer_step(dyn, out, it, id, n, go); });
}

// Mode 4's item: writers threads write after sinf's slow path (large arguments), barrier, every
// thread reads a word another warp wrote, barrier.
static __device__ __noinline__ void item_many(unsigned int *s, int *out, int it, int tid, int id, int n,
                                              int writers)
{
    if (tid < writers)
        s[tid] = __float_as_uint(sinf((float)(tid + 1) * 12345.678f + (float)it));
    bar_sync_reg(id, n);
    out[tid + 128] += (int)(s[(tid * 37 + 64) % writers] >> 31);
    bar_sync_reg(id, n);
}

__global__ void __launch_bounds__(384, 1) probe4(int *out, int id, int n, const unsigned int *go, unsigned int off)
{
    __shared__ __align__(8) unsigned long long mbar;
    extern __shared__ unsigned int dyn[];
    producer_consumer_roles(&mbar, [&](int it) {
        const int wg = threadIdx.x / 128 - 1;
        dyn[64 + threadIdx.x] = it;
        bar_sync_reg(1 + wg, 128);
        out[threadIdx.x] += (int)dyn[64 + (threadIdx.x ^ 1)] * 0;
        bar_sync_reg(1 + wg, 128);
        if (threadIdx.x == 128 && go) {
            const long long t0 = clock64();
            while (*(const volatile unsigned int *)go == 0u && clock64() - t0 < 2000000)
                __nanosleep(256);
        }
        item_many(dyn + off / 4, out, it, threadIdx.x - 128, id, n, 160);
    });
}

// ---- mode 5 -------------------------------------------------------------------------------

#define P5_SLOTS 8
#define P5_SLOT_BYTES 16384u
#define P5_STAGES 8                     /* ring stages per unit (one unit per round) */
#define P5_ROUNDS 32
#define P5_SCRATCH (P5_SLOTS * P5_SLOT_BYTES)  /* the items' scratch, past the ring (as sm.epi) */
#define P5_DYN (P5_SCRATCH + 16384u + 1024u)

static __device__ __forceinline__ void p5_wait(unsigned int bar, unsigned int parity)
{
    unsigned int done = 0;
    while (!done)
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
}

static __device__ __forceinline__ void p5_bar(int id, int n)
{
    asm volatile("barrier.sync %0, %1;" ::"r"(id), "r"(n) : "memory");   // as mkg_bar_sync_any
}

// 256 consumer threads (tid 0..255): one item of round r. Thread 0 waits for CTA (b + 1)'s
// item of round r - 1 (bounded), writes the flag; threads < 160 write a table; every thread
// reads another warp's word; the last barrier orders the reads before the next item's writes.
static __device__ __noinline__ void p5_item(unsigned int *scratch, unsigned int *ctr, int *out, int r, int tid)
{
    volatile unsigned int *flag = scratch + 1024;
    if (tid == 0) {
        const unsigned int next = (blockIdx.x + 1) % gridDim.x;
        const long long t0 = clock64();
        while (r > 0 && *(volatile unsigned int *)(ctr + next) < (unsigned int)r && clock64() - t0 < 4000000)
            __nanosleep(128);
        *flag = (unsigned int)r + 1u;
    }
    if (tid < 160)
        scratch[tid] = __float_as_uint(sinf((float)(tid + 1) * 12345.678f + (float)r));
    p5_bar(3, 256);
    out[blockIdx.x * 256 + tid] += (int)*flag + (int)(scratch[(tid * 37 + 64) % 160] >> 31);
    p5_bar(3, 256);
    if (tid == 0) {
        __threadfence();
        atomicAdd(ctr + blockIdx.x, 1u);
    }
}

__global__ void __launch_bounds__(384, 1) probe5(const uint4 *src, size_t src_slots, unsigned int *ctr, int *out)
{
    extern __shared__ __align__(1024) unsigned char p5_smem[];
    __shared__ __align__(8) unsigned long long full[P5_SLOTS], empty[P5_SLOTS];
    const unsigned int ring = (unsigned int)__cvta_generic_to_shared(p5_smem);
    if (threadIdx.x == 0) {
        for (int s = 0; s < P5_SLOTS; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"((unsigned int)__cvta_generic_to_shared(full + s)));
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 2;" ::"r"((unsigned int)__cvta_generic_to_shared(empty + s)));
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x < 128) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 56;" ::: "memory");
        if (threadIdx.x == 0) {
            for (int i = 0; i < P5_ROUNDS * P5_STAGES; ++i) {
                const int s = i % P5_SLOTS, use = i / P5_SLOTS;
                if (use > 0)
                    p5_wait((unsigned int)__cvta_generic_to_shared(empty + s), (unsigned int)((use - 1) & 1));
                const unsigned int fb = (unsigned int)__cvta_generic_to_shared(full + s);
                asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(fb), "r"(P5_SLOT_BYTES)
                             : "memory");
                const uint4 *from = src + ((size_t)(blockIdx.x * 131 + i) % src_slots) * (P5_SLOT_BYTES / 16);
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                             ::"r"(ring + s * P5_SLOT_BYTES), "l"(from), "r"(P5_SLOT_BYTES), "r"(fb)
                             : "memory");
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 224;" ::: "memory");
        const int tid = threadIdx.x - 128, wg = tid / 128;
        unsigned int *scratch = (unsigned int *)(p5_smem + P5_SCRATCH);
        unsigned int acc = 0;
        for (int r = 0; r < P5_ROUNDS; ++r) {
            for (int k = 0; k < P5_STAGES; ++k) {                  // a "GEMM unit": drain 8 stages
                const int i = r * P5_STAGES + k, s = i % P5_SLOTS;
                p5_wait((unsigned int)__cvta_generic_to_shared(full + s), (unsigned int)((i / P5_SLOTS) & 1));
                // NOTE: no generic read of the slot: racecheck flags a consumer's plain load of a slot
                // and the producer's next bulk copy into it as a WAR hazard although the empty
                // mbarrier orders them (session 25's first run of this mode: 100 such records); the
                // megakernel's GEMM consumers read slots only through wgmma, which it does not track.
                acc += (unsigned int)s;
                asm volatile("bar.sync %0, 128;" ::"r"(1 + wg) : "memory");
                if (tid % 128 == 0)
                    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];"
                                 ::"r"((unsigned int)__cvta_generic_to_shared(empty + s)) : "memory");
            }
            p5_item(scratch, ctr, out, r, tid);
        }
        out[gridDim.x * 256 + blockIdx.x] = (int)(acc & 1u);
    }
}

// Mode 5 on every SM; returns the CUDA status.
static cudaError_t run_mode5(int sms)
{
    const size_t slots = 4096;                                   // 64 MB of source: larger than the L2
    uint4 *src = nullptr;
    unsigned int *ctr = nullptr;
    int *out5 = nullptr;
    cudaMalloc(&src, slots * P5_SLOT_BYTES);
    cudaMalloc(&ctr, (size_t)sms * sizeof(unsigned int));
    cudaMalloc(&out5, (size_t)sms * 257 * sizeof(int));
    cudaMemset(src, 0x5a, slots * P5_SLOT_BYTES);
    cudaMemset(ctr, 0, (size_t)sms * sizeof(unsigned int));
    cudaMemset(out5, 0, (size_t)sms * 257 * sizeof(int));
    cudaFuncSetAttribute(probe5, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)P5_DYN);
    probe5<<<sms, 384, P5_DYN>>>(src, slots, ctr, out5);
    cudaError_t e = cudaDeviceSynchronize();
    unsigned int c0 = 0;
    cudaMemcpy(&c0, ctr, sizeof c0, cudaMemcpyDeviceToHost);
    printf("mode 5: %d CTAs x %d rounds of an 8-stage bulk-copy ring and an item, CTA 0 counted %u items, %s\n", sms,
           P5_ROUNDS, c0, cudaGetErrorString(e));
    cudaFree(src);
    cudaFree(ctr);
    cudaFree(out5);
    return e;
}

int main(int argc, char **argv)
{
    const int first = argc > 1 ? atoi(argv[1]) : 0;
    int *out;
    unsigned int *go;
    cudaMalloc(&out, 384 * sizeof(int));
    cudaMalloc(&go, sizeof(unsigned int));
    cudaMemset(go, 0, sizeof(unsigned int));
    const char *what[5] = {"full (__syncthreads)", "partial (bar.sync 3, 256)", "partial, register operands, noinline",
                           "partial, writer spins first, setmaxnreg, producer on an mbarrier",
                           "as 3, data at shared 0x30800 in 210 KB, 5 writer warps after sinf"};
    const unsigned int off = 0x30800u, dyn4 = off + 16384u;
    cudaFuncSetAttribute(probe4, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn4);
    for (int mode = first; mode < 5; ++mode) {
        cudaMemset(out, 0, 384 * sizeof(int));
        if (mode == 4)
            probe4<<<1, 384, dyn4>>>(out, 3, 256, go, off);
        else if (mode == 3)
            probe3<<<1, 384, 4096>>>(out, 3, 256, go);
        else
            probe<<<1, 384, 4096>>>(out, mode, 3, 256);
        int h[384];
        cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
        if (mode < 4)
            printf("%s barrier: out[200] = %d (expect 10), %s\n", what[mode], h[200],
                   cudaGetErrorString(cudaGetLastError()));
        else
            printf("%s barrier: out[200] = %d, %s\n", what[mode], h[200], cudaGetErrorString(cudaGetLastError()));
    }
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    return run_mode5(sms) == cudaSuccess ? 0 : 1;
}
