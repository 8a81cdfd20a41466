/* mkg_plan.h - planner decisions made on the host from a layer's shape.
 *
 * mkg_plan_kc picks a layer's canonical K chunk (SPEC section 5) from N and K
 * alone, never from M: the chunking fixes the layer's bits, so it must not move
 * when the batch size does.
 */
#ifndef MKG_PLAN_H
#define MKG_PLAN_H

#ifdef __cplusplus
extern "C" {
#endif

/* Weight rows of one decode work unit (the m16n64 / m32n64 / m64n64 swap rows): a layer of at
 * least SMs / 4 such units keeps one chunk. NOTE: 128 (the m*n128 swap rows) cut 8B down
 * (K 14336, 64 units of 64 rows) into 4 chunks, which lost 6% at M = 1..32 against one chunk
 * once the 64-row units ran two producers (session 24, bench/NOTES.md). */
#define MKG_PLAN_DECODE_ROWS 64
/* Smallest chunk. Every chunk edge drains the wgmma pipeline and folds the partial;
 * on the H200 that cost ~70% at KC = 256 and ~10% at KC ~ 1000 for large M (NOTES.md),
 * so chunks stay at least 32 stages deep. */
#define MKG_PLAN_MIN_KC 2048

/** The layer's canonical K chunk in invariant mode: K (one chunk) for every layer.
 *  NOTE: measured on the H200 (bench/NOTES.md, v3), chunking the narrow public layers at
 *  KC = 2048..2880 cost 11% at M >= 512 (wgmma N 256 tiles cannot fold, and every chunk
 *  edge drains the pipeline), while split-K bought nothing on standalone decode launches,
 *  which are launch-bound. Until the fold is overlapped, one chunk is the largest KC. */
int mkg_plan_kc(int n, int k, int sms);

/** The decode-parallel chunk for an N x K layer that opts into split-K: K when N / MKG_PLAN_DECODE_ROWS
 *  decode tiles cover a quarter of the GPU or K < 3 * MKG_PLAN_MIN_KC, else the smallest
 *  multiple of 128 (>= MKG_PLAN_MIN_KC; a whole stage for every input dtype, fp8 included)
 *  that gives decode at most `sms` work units (one wave). */
int mkg_plan_kc_decode(int n, int k, int sms);

/** Smallest chunk of mkg_plan_kc_cluster: 16 (16-bit) or 8 (fp8) stage rows of 128 bytes deep. A
 *  chunk edge costs large-M tiles a fold (~10% at KC ~ 1000 in session 3, NOTES.md). */
#define MKG_PLAN_CLUSTER_MIN_KC 1024

/** The decode chunk for the cluster split-K rows (mkg_schedules.h): K split into 4 or else 2
 *  chunks, the most for which N / MKG_PLAN_DECODE_ROWS tiles times the chunks fit one wave of
 *  `sms` CTAs and a chunk is at least MKG_PLAN_CLUSTER_MIN_KC deep (a multiple of 256); K when
 *  neither does. From N and K alone, like every KC. */
int mkg_plan_kc_cluster(int n, int k, int sms);

/** mkg_plan_kc_decode with another smallest chunk (a multiple of 128) in place of
 *  MKG_PLAN_MIN_KC, to measure the trade between decode parallelism and the fold price. */
int mkg_plan_kc_decode_min(int n, int k, int sms, int min_kc);

#ifdef __cplusplus
}
#endif
#endif /* MKG_PLAN_H */
