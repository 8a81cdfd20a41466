/* mkg_bench_dispatch.h - the benchmark's dispatched path: a persistent kernel that runs
 * one layer of an uploaded mkg_table through the device dispatcher, as a megakernel would
 * (read the layer's current M in device memory, take its bucket, switch to the schedule).
 *
 * The engine (mkg_bench_gemm_lib.c) uploads one table per measured row, one layer per
 * rotation set, and times this launch next to the host-launched schedules and cuBLASLt.
 * Call mkg_bench_dispatch_init() once before the first launch: it sets the kernels'
 * shared-memory attribute, which must not happen inside a stream capture.
 */
#ifndef MKG_BENCH_DISPATCH_H
#define MKG_BENCH_DISPATCH_H

#include <cuda_runtime_api.h>

#include "mkg_layer.h"
#include "mkg_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the dispatch kernel is built in; 0 in a build with MKG_BENCH_DISPATCH=OFF (a quick
 * GPU-machine build: mkg_bench_dispatch_none.c), where the benchmark reports the oracle for
 * the dispatched path and launch returns cudaErrorNotSupported. */
int mkg_bench_dispatch_available(void);

/* The order in which the dispatch kernel deals units to its CTAs, from MKG_DISPATCH_ORDER in the
 * environment (read once): 3 (default) mkg_cta_rank_for_row by mkg_row_spreads: rows of at most
 * 64 rows or one M tile even CTAs first, longer rows with several M tiles in CTA order, so TPC
 * neighbours share a tile (v82-v83 in bench/NOTES.md); 1 even CTAs first for every row
 * (mkg_cta_rank_spread; v71's default); 0 CTA b takes units b, b + grid, ... (before v71); 2 as 1
 * by %smid instead of blockIdx (a diagnostic; launches whose grid is not the SM count use 1).
 * Values outside 0..3 give 3 (atoi: text reads as 0). JSON dispatch_order. */
int mkg_bench_dispatch_order(void);

/* 1 when a chunk-stepping kernel for input dtype dt is built in (bf16 and e4m3): it runs layers of
 * several K chunks and block-scaled e4m3 layers, on the rows that fold chunks. */
int mkg_bench_dispatch_chunked_available(mkg_dtype dt);

/* Lets every kernel use MKG_LAUNCH_SMEM_BYTES of dynamic shared memory. */
cudaError_t mkg_bench_dispatch_init(void);

/* Runs layer `layer` of a table (rows, count, m_cur, err: mkg_table_rows/count/m/error)
 * at its current M with input dtype dt (bf16, fp16, fp32 for tf32 math, or e4m3; any other
 * returns cudaErrorInvalidValue): `grid` CTAs (the SM count) of
 * MKG_LAUNCH_THREADS threads, asynchronous on stream. chunked = 0: the kernel compiled for plain
 * stores of C in the input's own type, bf16 for e4m3 (MKG_EPI_STORE, no dependency signal), one
 * K chunk; a bad table entry, or a layer of another kind (MKG_DISPATCH_NOT_PLAIN, or
 * MKG_DISPATCH_CHUNKED for a chunked or block-scaled layer), sets the error word and runs
 * nothing. chunked = 1: the chunk-stepping kernel (mkg_bench_dispatch_chunked_available; else
 * cudaErrorInvalidValue), which runs those layers too. */
cudaError_t mkg_bench_dispatch_launch(mkg_dtype dt, int chunked, const mkg_layer_dev *rows, int count,
                                      const int *m_cur, unsigned int *err, int layer, int grid, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif /* MKG_BENCH_DISPATCH_H */
