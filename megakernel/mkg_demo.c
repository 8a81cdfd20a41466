/* mkg_demo.c - main of mkg_demo, the README's demo until the sample megakernel exists.
 *
 * Prints the schedule table (one line per row of MKG_SCHEDULE_LIST), then checks
 * for a compute-capability-9.0 GPU. Without one it says why it cannot run and
 * exits 0. With one it measures a few square and LLM shapes in bf16 through the
 * benchmark engine (bench/mkg_bench_gemm.h: rotated inputs, CUDA-graph replay,
 * FP64-checked) and prints mkgemm's best schedule (the oracle) against the best
 * of cuBLASLt's heuristic candidates.
 */
#include <stdio.h>

#include "mkg_bench_gemm.h"

// ---- the schedule table ------------------------------------------------------------------

static void mkg_demo_print_schedules(void)
{
    printf("mkgemm %s: %d compile-time schedules, %d threads per CTA, %d KiB operand ring\n\n",
           MKG_VERSION_STRING, MKG_SCHED_COUNT, MKG_LAUNCH_THREADS, MKG_LAUNCH_RING_BYTES / 1024);
    printf("%-30s %4s %4s %4s %3s %7s %6s %5s %6s %10s\n", "schedule", "TM", "TN", "TK", "ST", "raster", "group",
           "swap", "split", "ring KiB");
    for (int s = 0; s < MKG_SCHED_COUNT; ++s) {
        const mkg_schedule_info *i = mkg_schedule_get(s);
        const int ring = i->stages * (i->tile_m + i->tile_n) * i->tile_k * 2;   /* 16-bit inputs */
        printf("%-30s %4d %4d %4d %3d %7s %6d %5s %6d %10d\n", i->name, i->tile_m, i->tile_n, i->tile_k, i->stages,
               i->raster == MKG_RASTER_M ? "M" : "N", i->group, i->swap_ab ? "yes" : "no", i->split, ring / 1024);
    }
    printf("\n");
}

// ---- the benchmark -----------------------------------------------------------------------

typedef struct mkg_demo_case {
    const char *shape;
    int m, n, k;
} mkg_demo_case;

static const mkg_demo_case mkg_demo_cases[] = {
    {"square_4096", 4096, 4096, 4096},
    {"llama3_8b_gate_up", 16, 28672, 4096},
    {"llama3_8b_gate_up", 4096, 28672, 4096},
    {"llama32_1b_qkv", 1, 3072, 2048},
    {"llama32_1b_qkv", 512, 3072, 2048},
};

static void mkg_demo_run(void)
{
    const int count = (int)(sizeof mkg_demo_cases / sizeof mkg_demo_cases[0]);
    mkg_bench_cfg cfg;
    mkg_bench_init(&cfg, 20);
    printf("%s, %d SMs; bf16 in and out, FP32 accumulate; median of %d CUDA-graph replays\n\n", cfg.gpu, cfg.sms,
           cfg.replays);
    printf("%-18s %5s %6s %5s  %-26s %10s %12s %7s %9s %8s\n", "shape", "M", "N", "K", "mkgemm oracle",
           "mkgemm us", "cuBLASLt us", "ratio", "rel err", "bitexact");
    fflush(stdout);
    for (int i = 0; i < count; ++i) {
        const mkg_demo_case *c = &mkg_demo_cases[i];
        mkg_bench_row r;
        mkg_bench_gemm_row(&cfg, c->shape, c->m, c->n, c->k, MKG_DTYPE_BF16, &r);
        printf("%-18s %5d %6d %5d  %-26s %10.2f %12.2f %7.3f %9.2e %8s\n", r.shape, r.m, r.n, r.k,
               mkg_schedule_get(r.oracle)->name, r.oracle_us, r.cublas_best_us, mkg_bench_ratio(&r),
               r.max_rel_err, r.bitexact ? "yes" : "NO");
        fflush(stdout);
    }
    printf("\nratio = cuBLASLt best / mkgemm oracle time: above 1 means mkgemm is faster.\n");
    mkg_bench_release(&cfg);
}

// ---- main --------------------------------------------------------------------------------

int main(void)
{
    mkg_demo_print_schedules();
    const mkg_status dev = mkg_device_check();
    if (dev != MKG_OK) {
        printf("mkg_demo cannot run the GEMM benchmark here: %s (%s).\n"
               "It needs an NVIDIA Hopper GPU of compute capability 9.0 (H100 or H200); "
               "the schedule table above is all it can show.\n",
               mkg_status_string(dev), mkg_status_name(dev));
        return 0;
    }
    mkg_demo_run();
    return 0;
}
