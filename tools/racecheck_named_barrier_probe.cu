// racecheck_named_barrier_probe.cu - does compute-sanitizer's racecheck honour a named
// barrier that covers only part of the CTA? The megakernel's non-GEMM ops sync the 256
// consumer threads of a 384-thread CTA with `bar.sync 3, 256`; racecheck reported
// write/read pairs across that barrier (bench/NOTES.md). This kernel does the same pattern
// (thread 128 writes shared memory, barrier, threads 128..383 read it, barrier) three ways:
//   mode 0: __syncthreads (whole CTA)
//   mode 1: bar.sync 3, 256 with immediate operands, inline
//   mode 2: bar.sync with register operands (as mkg_bar_sync emits it) in a __noinline__
//           function on dynamic shared memory, after 128-thread barriers 1 and 2 (as the
//           megakernel's GEMM epilogue uses them)
// Build and run on the GPU machine:
//   nvcc -gencode arch=compute_90a,code=sm_90a -lineinfo tools/racecheck_named_barrier_probe.cu -o /tmp/probe
//   compute-sanitizer --tool racecheck --racecheck-report all /tmp/probe
#include <cstdio>

static __device__ __forceinline__ void bar_sync_reg(int id, int threads)
{
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

static __device__ __noinline__ void item(volatile unsigned int *flag, int *out, int it, int tid, int id, int n)
{
    if (tid == 0)
        *flag = (unsigned int)it + 1u;
    bar_sync_reg(id, n);
    out[tid + 128] += (int)*flag;
    bar_sync_reg(id, n);
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
            if (threadIdx.x >= 128) {
                const int wg = threadIdx.x / 128 - 1;
                dyn[64 + threadIdx.x] = it;          // per-warpgroup work between 128-thread barriers
                bar_sync_reg(1 + wg, 128);
                out[threadIdx.x] += (int)dyn[64 + (threadIdx.x ^ 1)] * 0;
                bar_sync_reg(1 + wg, 128);
                item(dyn + 4, out, it, threadIdx.x - 128, id, n);
            }
        } else {
            if (threadIdx.x == 128)
                flag[it] = it + 1;
            __syncthreads();
            out[threadIdx.x] += flag[it];
            __syncthreads();
        }
    }
}

int main()
{
    int *out;
    cudaMalloc(&out, 384 * sizeof(int));
    const char *what[3] = {"full (__syncthreads)", "partial (bar.sync 3, 256)", "partial, register operands, noinline"};
    for (int mode = 0; mode < 3; ++mode) {
        cudaMemset(out, 0, 384 * sizeof(int));
        probe<<<1, 384, 4096>>>(out, mode, 3, 256);
        int h[384];
        cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
        printf("%s barrier: out[200] = %d (expect 10), %s\n", what[mode], h[200],
               cudaGetErrorString(cudaGetLastError()));
    }
    return 0;
}
