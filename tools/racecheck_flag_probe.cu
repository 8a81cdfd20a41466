// racecheck_flag_probe.cu - which shared-memory flag handoffs does compute-sanitizer's racecheck
// take for synchronization? The megakernel hands work between single threads of a CTA through
// shared words polled in a loop (bench/NOTES.md, session 58): the A-writer queue (a relaxed 8-byte
// store / load), the row makers' row word and the two producers' dependency gate (a CTA-scope
// release store / acquire load). racecheck 2026.4 reports those pairs and nothing else. Here one
// thread (warp 0, lane 0) publishes rounds 1..ROUNDS in a shared word, each after a short delay,
// and another (warp 1, lane 0) polls for each round, one way per mode:
//   mode 0: st.relaxed.cta / ld.relaxed.cta, b64 (the queue as it is)
//   mode 1: st.release.cta / ld.acquire.cta, u32 (the row word and the gate as they are)
//   mode 2: atom.relaxed.cta.exch / atom.relaxed.cta.or 0, b64
//   mode 3: atom.release.cta.exch / atom.acquire.cta.or 0, u32
//   mode 4: as mode 3, and a plain payload word written once before round 1's release and read once
//           after its acquire
// Build and run on the GPU machine, one process per mode so each gets its own summary:
//   nvcc -gencode arch=compute_90a,code=sm_90a -lineinfo tools/racecheck_flag_probe.cu -o /tmp/flagprobe
//   for m in 0 1 2 3 4; do compute-sanitizer --tool racecheck /tmp/flagprobe $m; done
#include <cstdio>
#include <cstdlib>

#define ROUNDS 16

static __device__ __forceinline__ unsigned int smem_addr(const void *p)
{
    return (unsigned int)__cvta_generic_to_shared(p);
}

static __device__ __forceinline__ void publish(int mode, unsigned int a, unsigned int v)
{
    if (mode == 0)
        asm volatile("st.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(a), "l"((unsigned long long)v) : "memory");
    else if (mode == 1)
        asm volatile("st.release.cta.shared::cta.u32 [%0], %1;" ::"r"(a), "r"(v) : "memory");
    else if (mode == 2)
        asm volatile("{ .reg .b64 t; atom.relaxed.cta.shared::cta.exch.b64 t, [%0], %1; }" ::"r"(a),
                     "l"((unsigned long long)v) : "memory");
    else
        asm volatile("{ .reg .b32 t; atom.release.cta.shared::cta.exch.b32 t, [%0], %1; }" ::"r"(a), "r"(v)
                     : "memory");
}

static __device__ __forceinline__ unsigned int look(int mode, unsigned int a)
{
    unsigned long long w = 0;
    unsigned int v = 0;
    if (mode == 0) {
        asm volatile("ld.relaxed.cta.shared::cta.b64 %0, [%1];" : "=l"(w) : "r"(a) : "memory");
        v = (unsigned int)w;
    } else if (mode == 1) {
        asm volatile("ld.acquire.cta.shared::cta.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
    } else if (mode == 2) {
        asm volatile("atom.relaxed.cta.shared::cta.or.b64 %0, [%1], 0;" : "=l"(w) : "r"(a) : "memory");
        v = (unsigned int)w;
    } else {
        asm volatile("atom.acquire.cta.shared::cta.or.b32 %0, [%1], 0;" : "=r"(v) : "r"(a) : "memory");
    }
    return v;
}

__global__ void probe(int mode, int *out)
{
    __shared__ __align__(8) unsigned long long flag;
    __shared__ int payload;
    if (threadIdx.x == 0) {
        flag = 0;
        payload = 0;
    }
    __syncthreads();
    const unsigned int a = smem_addr(&flag);
    int seen = 0;
    if (threadIdx.x == 0) {
        for (unsigned int r = 1; r <= ROUNDS; ++r) {
            __nanosleep(2000);
            if (mode == 4 && r == 1)
                payload = 7;
            publish(mode, a, r);
        }
    } else if (threadIdx.x == 32) {
        for (unsigned int r = 1; r <= ROUNDS; ++r) {
            while (look(mode, a) < r)
                __nanosleep(100);
            seen += mode == 4 && r == 1 ? payload : 1;
        }
        out[blockIdx.x] = seen;
    }
}

int main(int argc, char **argv)
{
    const int mode = argc > 1 ? atoi(argv[1]) : 0, ctas = 4;
    int *out = nullptr, h[ctas];
    if (cudaMalloc(&out, sizeof h) != cudaSuccess)
        return 1;
    probe<<<ctas, 64>>>(mode, out);
    const cudaError_t e = cudaDeviceSynchronize();
    cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
    const int expect = mode == 4 ? ROUNDS + 6 : ROUNDS;
    printf("flag probe mode %d: CTA 0 saw %d (expect %d), %s\n", mode, h[0], expect, cudaGetErrorString(e));
    cudaFree(out);
    return e != cudaSuccess || h[0] != expect;
}
