// racecheck_named_barrier_probe.cu - does compute-sanitizer's racecheck honour a named
// barrier that covers only part of the CTA? The megakernel's non-GEMM ops sync the 256
// consumer threads of a 384-thread CTA with `bar.sync 3, 256`; racecheck reported
// write/read pairs across that barrier (bench/NOTES.md). This kernel does the same pattern
// (thread 128 writes shared memory, bar.sync 3, 256, threads 128..383 read it), then the
// same with a full-CTA barrier. Build and run on the GPU machine:
//   nvcc -gencode arch=compute_90a,code=sm_90a -lineinfo tools/racecheck_named_barrier_probe.cu -o /tmp/probe
//   compute-sanitizer --tool racecheck /tmp/probe
#include <cstdio>

__global__ void probe(int *out, int partial)
{
    __shared__ int flag[4];
    for (int it = 0; it < 4; ++it) {
        if (partial) {
            if (threadIdx.x >= 128) {
                if (threadIdx.x == 128)
                    flag[it] = it + 1;
                asm volatile("bar.sync 3, 256;" ::: "memory");
                out[threadIdx.x] += flag[it];
                asm volatile("bar.sync 3, 256;" ::: "memory");
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
    for (int partial = 0; partial < 2; ++partial) {
        cudaMemset(out, 0, 384 * sizeof(int));
        probe<<<1, 384>>>(out, partial);
        int h[384];
        cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
        printf("%s barrier: out[200] = %d (expect 10)\n", partial ? "partial (bar.sync 3, 256)" : "full", h[200]);
    }
    return 0;
}
