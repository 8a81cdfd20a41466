/* mkg_tile_order.h - which output tile a work unit computes.
 *
 * A schedule cuts C (M x N) into tiles_m x tiles_n tiles of TM x TN and numbers
 * them as work units 0 .. units-1. The persistent loop hands units out in
 * increasing order (unit = blockIdx.x + i * gridDim.x), so this numbering sets
 * which tiles are in flight together and therefore the L2 reuse:
 *   MKG_RASTER_M: bands of GROUP tile rows; inside a band, m moves fastest.
 *                 A wave shares GROUP row tiles of A and streams B columns.
 *   MKG_RASTER_N: bands of GROUP tile columns; inside a band, n moves fastest.
 * swap_ab does not change the numbering: tiles are always in C's coordinates.
 * Host and device both call these (tests prove every tile is covered once).
 */
#ifndef MKG_TILE_ORDER_H
#define MKG_TILE_ORDER_H

#include "mkg_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mkg_tile {
    int m;      /* tile row index: rows m*TM .. m*TM+TM-1 of C */
    int n;      /* tile column index: columns n*TN .. n*TN+TN-1 of C */
} mkg_tile;

static MKG_HD int mkg_ceil_div(int a, int b)
{
    return (a + b - 1) / b;
}

/* Tile of work unit u (0 <= u < tiles_m * tiles_n). group < 1 is read as 1. */
static MKG_HD mkg_tile mkg_tile_of_unit(int u, int tiles_m, int tiles_n, int raster, int group)
{
    mkg_tile t;
    int g = group < 1 ? 1 : group;
    if (raster == MKG_RASTER_M) {
        int per_band = g * tiles_n;                 /* units in a full band */
        int band = u / per_band;
        int first = band * g;
        int rows = tiles_m - first < g ? tiles_m - first : g;
        int r = u - band * per_band;
        t.m = first + r % rows;
        t.n = r / rows;
    } else {
        int per_band = g * tiles_m;
        int band = u / per_band;
        int first = band * g;
        int cols = tiles_n - first < g ? tiles_n - first : g;
        int r = u - band * per_band;
        t.n = first + r % cols;
        t.m = r / cols;
    }
    return t;
}

/* Tile of CTA `rank` (0 <= rank < cl) of a cluster running cluster unit u: cluster
 * tiles are cl tile rows high and numbered as mkg_tile_of_unit numbers tiles; the
 * CTAs of a cluster take its rows in rank order. Tiles past tiles_m (an odd last
 * cluster row) are computed on zero-filled A and never stored. */
static MKG_HD mkg_tile mkg_tile_of_cluster_unit(int u, int rank, int cl, int tiles_m, int tiles_n, int raster,
                                                int group)
{
    mkg_tile t = mkg_tile_of_unit(u, mkg_ceil_div(tiles_m, cl), tiles_n, raster, group);
    t.m = t.m * cl + rank;
    return t;
}

/* CTA b's place in unit order when a one-CTA-per-SM grid deals work units (or task items) to
 * ranks 0, 1, 2, ...: even CTAs first, then odd ones. Such a grid puts CTAs 2i and 2i + 1 on the
 * two SMs of one TPC (bench/results/placement_probe_h200.txt), so a row with fewer units than
 * SMs runs on one SM of each of its TPCs instead of both SMs of half of them (v71 in
 * bench/NOTES.md). A bijection of [0, grid) for every grid >= 1 (a CPU test checks it). */
static MKG_HD int mkg_cta_rank_spread(int b, int grid)
{
    return (b & 1) ? (grid + 1) / 2 + (b >> 1) : (b >> 1);
}

/* Whether a row of m rows in tiles_m tiles along M deals its units in the spread order
 * (mkg_cta_rank_spread) rather than in CTA order. Rows of at most 64 rows are weight streams:
 * consecutive units share at most a few activation rows and read weight tiles of their own, so
 * one unit per TPC while they fit (v71 in bench/NOTES.md; v82: two tiles of 16 rows in CTA order
 * lost 4-12%). A longer row with several M tiles: CTA order, so the two CTAs of a TPC run
 * consecutive units, which share an A or a B tile that the L2 delivers to both SMs of a TPC at
 * 1.6-1.8x its rate for distinct lines (tools/tpc_stream_probe.cu; v82: 1B down M = 512
 * 39.2 -> 32.4 us). A row with one M tile shares nothing worth a TPC either way: spread. */
#define MKG_SPREAD_MAX_M 64      /* rows of at most this many rows are weight streams (above) */

static MKG_HD int mkg_row_spreads(int m, int tiles_m)
{
    return tiles_m <= 1 || m <= MKG_SPREAD_MAX_M;
}

/* CTA b's rank on a one-CTA-per-SM grid; spread: the row's mkg_row_spreads. The spread order
 * (spread != 0) or b itself. A bijection of [0, grid) for every grid >= 1 (a CPU test). */
static MKG_HD int mkg_cta_rank_for_row(int b, int grid, int spread)
{
    return spread ? mkg_cta_rank_spread(b, grid) : b;
}

/* ---- canonical K chunks and split-K ---------------------------------------------
 * A layer's K is cut into chunks of KC elements (KC a multiple of the stage depth
 * TK, or KC >= K for one chunk). A schedule with SPLIT s cuts every tile's chunks
 * into min(s, chunks) contiguous ranges, one work unit each; units of one tile are
 * consecutive (unit = tile * splits + split), so they run side by side. */

static MKG_HD int mkg_chunk_count(int k, int kc)
{
    return (kc <= 0 || kc >= k) ? 1 : mkg_ceil_div(k, kc);
}

/* K tiles (of tk elements) per chunk; the last chunk may be shorter. */
static MKG_HD int mkg_chunk_ktiles(int k, int kc, int tk)
{
    return mkg_chunk_count(k, kc) == 1 ? mkg_ceil_div(k, tk) : kc / tk;
}

static MKG_HD int mkg_split_count(int split, int chunks)
{
    return split < 1 ? 1 : split < chunks ? split : chunks;
}

/* Chunks [*c0, *c1) of split s out of `splits` over `chunks` chunks (0 <= s < splits <= chunks).
 * NOTE: 32-bit unsigned arithmetic: s * chunks < splits * chunks, and both are at most K / 64 and
 * a schedule's SPLIT (<= 16), far below 2^32; a 64-bit division is a software routine on the GPU
 * (two of them sat on the chunked kernels' path to their first load). */
static MKG_HD void mkg_split_range(int s, int splits, int chunks, int *c0, int *c1)
{
    *c0 = (int)((unsigned)s * (unsigned)chunks / (unsigned)splits);
    *c1 = (int)((unsigned)(s + 1) * (unsigned)chunks / (unsigned)splits);
}

/* n / d for 0 <= n < 2^27 and 2 <= d <= MKG_MAX_SPLIT, without a division: the high word of
 * n * ceil(2^32 / d) is exact for n < 2^32 / d (n / d + n e / 2^32 with 0 <= e < 1 stays below the
 * next integer). Device code divides work units and chunks by a split count this way (a
 * multiply-high of uniform values stays on the uniform datapath; mkg_unit_of); a CPU test checks
 * it against the division. */
#define MKG_MAX_SPLIT 16
static MKG_HD int mkg_div_split(int n, int d)
{
#define MKG_M(x) (0xFFFFFFFFu / (x) + 1u)
    const unsigned int mul = d == 2 ? MKG_M(2) : d == 3 ? MKG_M(3) : d == 4 ? MKG_M(4) : d == 5 ? MKG_M(5)
                           : d == 6 ? MKG_M(6) : d == 7 ? MKG_M(7) : d == 8 ? MKG_M(8) : d == 9 ? MKG_M(9)
                           : d == 10 ? MKG_M(10) : d == 11 ? MKG_M(11) : d == 12 ? MKG_M(12)
                           : d == 13 ? MKG_M(13) : d == 14 ? MKG_M(14) : d == 15 ? MKG_M(15) : MKG_M(16);
#undef MKG_M
    return (int)(((unsigned long long)(unsigned int)n * mul) >> 32);
}

#ifdef __cplusplus
}
#endif
#endif /* MKG_TILE_ORDER_H */
