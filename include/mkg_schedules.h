/* mkg_schedules.h - the schedule table: every compile-time tile schedule, once.
 *
 * MKG_SCHEDULE_LIST is the single source of a schedule's numbers. The enum, the
 * names, the host metadata (mkg_schedule_info), the tests, the benchmark and the
 * device dispatch switch all expand from it.
 *
 * Columns:
 *   TM, TN  output tile in C terms (rows of M, columns of N)
 *   TK      K depth of one pipeline stage, in 16-bit elements: 64 (one 128-byte swizzled
 *           row per operand row) or 128 (two such K sub-tiles behind one full barrier: half
 *           the barrier round trips per K, twice the wgmma between waits; no cluster, no
 *           ping-pong, and K (and KC, when K is chunked) in an even number of 64-deep tiles so
 *           that the k16 steps, zero padding included, are those of the TK = 64 rows)
 *   ST      pipeline stages in the shared-memory ring
 *   RASTER  work-unit order, MKG_RASTER_M or MKG_RASTER_N
 *   GROUP   band width of the raster, in tiles (L2 reuse)
 *   SWAP    1: compute C^T = B . A^T so the weight rows fill the 64-row MMA side and
 *           the token dimension (TM = 8..64) becomes the wgmma N
 *   SPLIT   most K splits per tile: a tile's canonical K chunks (the layer's KC) are
 *           shared out over up to SPLIT work units whose partials meet in a workspace
 *   CL      CTAs per thread-block cluster. Two kinds of cluster row, both run in the shipped
 *           persistent kernel only (launched with a cluster dimension), no deps:
 *           - along M (SWAP = 0, SPLIT = 1): the CL CTAs compute vertically adjacent tiles
 *             of one tile column, each loads 1/CL of the shared B tile and multicasts it to
 *             all (a third less L2 -> SM traffic for n256); one K chunk.
 *           - along K (SWAP = 1, SPLIT = CL, "cluster split-K"): the CL CTAs share one tile,
 *             CTA r runs split r of its canonical K chunks (as a SPLIT row's unit r would),
 *             and rank 0 folds the others' chunk partials, chunk by chunk in increasing
 *             order, out of their shared memory (no workspace, no counter, no global round
 *             trip). For decode layers with too few 64-row weight tiles to fill the GPU;
 *             the layer needs at least CL chunks. Same bits as every other row (the fold
 *             is the same left fold of the same chunk partials).
 *   PP      1: ping-pong consumers. Each consumer warpgroup computes whole TM x TN tiles
 *           (two m64 wgmma row blocks) on alternate work units, so one warpgroup's
 *           epilogue runs while the other's mainloop keeps the tensor cores busy (the
 *           cooperative rows, PP = 0, split each tile between the two and idle the tensor
 *           cores through every epilogue). One K chunk, a plain store, no swap, no split,
 *           no cluster; the shipped kernel and one-chunk dispatch kernels (not megakernels).
 *
 * TN need not be a power of two (a multiple of 8 with a TMA box class, mkg_box_class): n176
 * ping-pong cuts 8B gate_up at M = 2048 into 20 full waves of 132 tiles, not 19 with the last
 * 18% busy (v55: +2.4% in bf16). Narrower widths that fill a wave on small grids lose: there the
 * per-SM operand supply sets the rate, and they stage more bytes per FLOP (v55, m128n96).
 *
 * Launch-wide properties, shared by every row compiled into one kernel, are the
 * MKG_LAUNCH_* constants below; device code static_asserts each row against them.
 */
#ifndef MKG_SCHEDULES_H
#define MKG_SCHEDULES_H

#include "mkg_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*  name                          TM   TN   TK  ST  RASTER        GROUP SWAP SPLIT CL  PP */
#define MKG_SCHEDULE_LIST(X)                                                             \
    X(m128n256k64_s4_rm_g8,          128, 256, 64, 4, MKG_RASTER_M,  8,    0,    1,  1,  0) \
    X(m128n256k64_s4_rn_g8,          128, 256, 64, 4, MKG_RASTER_N,  8,    0,    1,  1,  0) \
    X(m128n256k64_s3_rm_g16,         128, 256, 64, 3, MKG_RASTER_M, 16,    0,    1,  1,  0) \
    X(m128n192k64_s4_rm_g8,          128, 192, 64, 4, MKG_RASTER_M,  8,    0,    1,  1,  0) \
    X(m128n128k64_s6_rm_g8,          128, 128, 64, 6, MKG_RASTER_M,  8,    0,    1,  1,  0) \
    X(m128n128k64_s6_rn_g8,          128, 128, 64, 6, MKG_RASTER_N,  8,    0,    1,  1,  0) \
    X(m128n128k64_s6_rn_g8_sk4,      128, 128, 64, 6, MKG_RASTER_N,  8,    0,    4,  1,  0) \
    X(m128n64k64_s6_rn_g8,           128,  64, 64, 6, MKG_RASTER_N,  8,    0,    1,  1,  0) \
    X(m128n64k64_s6_rn_g8_sk4,       128,  64, 64, 6, MKG_RASTER_N,  8,    0,    4,  1,  0) \
    X(m64n256k64_s4_rm_g8,            64, 256, 64, 4, MKG_RASTER_M,  8,    0,    1,  1,  0) \
    X(m64n128k64_s5_rn_g8,            64, 128, 64, 5, MKG_RASTER_N,  8,    0,    1,  1,  0) \
    X(m64n64k64_s6_rn_g8,             64,  64, 64, 6, MKG_RASTER_N,  8,    0,    1,  1,  0) \
    X(m8n128k64_s8_swap_rn_g8,         8, 128, 64, 8, MKG_RASTER_N,  8,    1,    1,  1,  0) \
    X(m16n128k64_s8_swap_rn_g8,       16, 128, 64, 8, MKG_RASTER_N,  8,    1,    1,  1,  0) \
    X(m16n128k64_s8_swap_rn_g8_sk16,  16, 128, 64, 8, MKG_RASTER_N,  8,    1,   16,  1,  0) \
    X(m32n128k64_s8_swap_rn_g8,       32, 128, 64, 8, MKG_RASTER_N,  8,    1,    1,  1,  0) \
    X(m32n128k64_s8_swap_rn_g8_sk8,   32, 128, 64, 8, MKG_RASTER_N,  8,    1,    8,  1,  0) \
    X(m64n128k64_s8_swap_rn_g8,       64, 128, 64, 8, MKG_RASTER_N,  8,    1,    1,  1,  0) \
    X(m64n128k64_s8_swap_rn_g8_sk8,   64, 128, 64, 8, MKG_RASTER_N,  8,    1,    8,  1,  0) \
    X(m128n256k64_s4_rm_g8_c2,       128, 256, 64, 4, MKG_RASTER_M,  8,    0,    1,  2,  0) \
    X(m128n256k64_s4_rn_g8_c2,       128, 256, 64, 4, MKG_RASTER_N,  8,    0,    1,  2,  0) \
    X(m128n128k64_s6_rm_g8_c2,       128, 128, 64, 6, MKG_RASTER_M,  8,    0,    1,  2,  0) \
    X(m128n128k64_s6_rn_g8_c2,       128, 128, 64, 6, MKG_RASTER_N,  8,    0,    1,  2,  0) \
    X(m128n256k64_s3_rn_g8,          128, 256, 64, 3, MKG_RASTER_N,  8,    0,    1,  1,  0) \
    X(m128n128k64_s6_rn_g8_pp,       128, 128, 64, 6, MKG_RASTER_N,  8,    0,    1,  1,  1) \
    X(m128n128k64_s6_rm_g8_pp,       128, 128, 64, 6, MKG_RASTER_M,  8,    0,    1,  1,  1) \
    X(m128n64k64_s8_rn_g8,           128,  64, 64, 8, MKG_RASTER_N,  8,    0,    1,  1,  0) \
    X(m8n128k64_s11_swap_rn_g8,        8, 128, 64,11, MKG_RASTER_N,  8,    1,    1,  1,  0) \
    X(m128n192k64_s4_rm_g16_pp,      128, 192, 64, 4, MKG_RASTER_M, 16,    0,    1,  1,  1) \
    X(m16n64k64_s16_swap_rn_g8,       16,  64, 64,16, MKG_RASTER_N,  8,    1,    1,  1,  0) \
    X(m16n64k64_s16_swap_rn_g8_sk8,   16,  64, 64,16, MKG_RASTER_N,  8,    1,    8,  1,  0) \
    X(m16n64k128_s8_swap_rn_g8,       16,  64,128, 8, MKG_RASTER_N,  8,    1,    1,  1,  0) \
    X(m8n128k128_s5_swap_rn_g8,        8, 128,128, 5, MKG_RASTER_N,  8,    1,    1,  1,  0) \
    X(m32n128k128_s4_swap_rn_g8,      32, 128,128, 4, MKG_RASTER_N,  8,    1,    1,  1,  0) \
    X(m16n64k128_s8_swap_rn_g8_sk8,   16,  64,128, 8, MKG_RASTER_N,  8,    1,    8,  1,  0) \
    X(m128n176k64_s5_rm_g16_pp,      128, 176, 64, 5, MKG_RASTER_M, 16,    0,    1,  1,  1) \
    X(m32n64k128_s8_swap_rn_g8,       32,  64,128, 8, MKG_RASTER_N,  8,    1,    1,  1,  0) \
    X(m32n64k128_s8_swap_rn_g8_sk8,   32,  64,128, 8, MKG_RASTER_N,  8,    1,    8,  1,  0) \
    X(m64n64k64_s12_swap_rn_g8,       64,  64, 64,12, MKG_RASTER_N,  8,    1,    1,  1,  0) \
    X(m64n64k64_s12_swap_rn_g8_sk8,   64,  64, 64,12, MKG_RASTER_N,  8,    1,    8,  1,  0) \
    X(m64n32k128_s8_rn_g8_sk8,        64,  32,128, 8, MKG_RASTER_N,  8,    0,    8,  1,  0) \
    X(m16n64k128_s8_swap_rn_g8_sk2_c2, 16,  64,128, 8, MKG_RASTER_N,  8,    1,    2,  2,  0) \
    X(m16n64k128_s8_swap_rn_g8_sk4_c4, 16,  64,128, 8, MKG_RASTER_N,  8,    1,    4,  4,  0) \
    X(m32n64k128_s8_swap_rn_g8_sk2_c2, 32,  64,128, 8, MKG_RASTER_N,  8,    1,    2,  2,  0)

typedef enum mkg_schedule {
#define MKG_X_ENUM(name, tm, tn, tk, st, raster, group, swap, split, cl, pp) MKG_SCHED_##name,
    MKG_SCHEDULE_LIST(MKG_X_ENUM)
#undef MKG_X_ENUM
    MKG_SCHED_COUNT
} mkg_schedule;

/* ---- launch-wide properties (every row above runs under these) ------------ */
#define MKG_LAUNCH_THREADS       384        /* 1 producer + 2 consumer warpgroups */
#define MKG_LAUNCH_CONSUMERS     2          /* consumer warpgroups */
#define MKG_LAUNCH_PRODUCER_REGS 40         /* setmaxnreg.dec for the producer warpgroup */
#define MKG_LAUNCH_PRODUCERS     2          /* TMA-issuing threads offered to a row (mkg_launch_producers) */
#define MKG_LAUNCH_CONSUMER_REGS 232        /* setmaxnreg.inc for consumer warpgroups */
#define MKG_LAUNCH_MAX_STAGES    16         /* mbarrier pairs reserved in shared memory */
#define MKG_LAUNCH_RING_BYTES    (192 * 1024) /* operand ring: STAGES * (TM + TN) * 128 bytes */
#define MKG_LAUNCH_EPI_BYTES     (32 * 1024)  /* epilogue staging: 2 consumers x 2 buffers x 8 KB */
#define MKG_LAUNCH_BAR_EPI       1          /* named barriers 1, 2: one per consumer warpgroup */
#define MKG_LAUNCH_BAR_PP        3          /* named barriers 3, 4: ping-pong hand-off to consumer 0, 1
                                               (the shipped kernel and one-chunk dispatch kernels; free in
                                               a kernel that runs no ping-pong row) */
#define MKG_LAUNCH_SMEM_BYTES    (MKG_LAUNCH_RING_BYTES + MKG_LAUNCH_EPI_BYTES + 1024 + 512) /* + barriers, flags, alignment */
#define MKG_LAUNCH_MAX_CLUSTER   4          /* largest CL column (CTAs per cluster) */

/* Host-side metadata of one row. */
typedef struct mkg_schedule_info {
    const char *name;
    int tile_m, tile_n, tile_k, stages;
    int raster, group, swap_ab, split;
    int cluster;        /* CTAs per cluster (CL column) */
    int pingpong;       /* 1: ping-pong consumers (PP column) */
} mkg_schedule_info;

/** Metadata of schedule s, or NULL when s is not a table row. */
const mkg_schedule_info *mkg_schedule_get(int s);

/** Schedule id by name, or -1 when no row has that name. */
int mkg_schedule_find(const char *name);

/** CTAs of a cluster that share one tile's K chunks: CL for a cluster split-K row (CL > 1 with
 *  SWAP), 1 for every other row (and for unknown s). */
int mkg_schedule_cluster_k(int s);

/** wgmma N of one consumer warpgroup of schedule s (0 if s is unknown). */
int mkg_schedule_wgmma_n(int s);

/** 1 if schedule s runs in the shipped persistent kernel only (cluster rows: a cluster launch):
 *  never in a dispatch table or megakernel, one K chunk. Ping-pong rows also run one K chunk with
 *  a plain store, in the shipped kernel and in one-chunk dispatch kernels
 *  (mkg_dispatch_consume_units_one), never in a chunk-stepping caller (the megakernel). */
int mkg_schedule_shipped_only(int s);

#ifdef __cplusplus
}
#endif
#endif /* MKG_SCHEDULES_H */
