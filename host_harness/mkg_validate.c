/* mkg_validate.c - descriptor validation: the first problem found, by name.
 *
 * Checks follow the operand contract of SPEC section 2: sizes >= 1, K * element
 * size a multiple of 16 bytes, 16-byte aligned base pointers, leading dimensions
 * at least the row length and multiples of 16 bytes. Nothing here touches CUDA.
 */
#include <math.h>
#include <stdint.h>

#include "mkg_gemm.h"
#include "mkg_tile_order.h"

#define MKG_INT_MAX 2147483647LL

/* fp32 inputs run as tf32 (10-bit mantissa) on the tensor cores, FP32 accumulate;
 * e4m3 inputs (FP8, per-tensor scales) as wgmma k32 e4m3. */
static int mkg_is_input_dtype(mkg_dtype t)
{
    return t == MKG_DTYPE_BF16 || t == MKG_DTYPE_FP16 || t == MKG_DTYPE_FP32 || t == MKG_DTYPE_E4M3;
}

static int mkg_scale_ok(float s)
{
    return isfinite(s) && s != 0.0f;
}

static int mkg_is_output_dtype(mkg_dtype t)
{
    return t == MKG_DTYPE_BF16 || t == MKG_DTYPE_FP16 || t == MKG_DTYPE_FP32;
}

static int mkg_aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

mkg_status mkg_gemm_validate(const mkg_gemm_desc *d)
{
    if (!d)
        return MKG_ERR_NULL_DESC;
    if (d->m < 1)
        return MKG_ERR_BAD_M;
    if (d->n < 1)
        return MKG_ERR_BAD_N;
    if (d->k < 1)
        return MKG_ERR_BAD_K;
    if (!mkg_is_input_dtype(d->a_type))
        return MKG_ERR_BAD_IN_DTYPE;
    if (d->b_type != d->a_type)
        return MKG_ERR_DTYPE_MISMATCH;
    if (!mkg_is_output_dtype(d->c_type))
        return MKG_ERR_BAD_OUT_DTYPE;
    if ((int)d->epilogue < 0 || d->epilogue >= MKG_EPI_COUNT)
        return MKG_ERR_BAD_EPILOGUE;
    /* NOTE: chunk edges must fall on stage edges (a stage row is 128 bytes: 64 16-bit,
     * 32 fp32 or 128 fp8 elements). */
    const int kc_unit = d->a_type == MKG_DTYPE_E4M3 ? 128 : 64;
    if (d->kc < 0 || (d->kc > 0 && d->kc < d->k && d->kc % kc_unit != 0))
        return MKG_ERR_BAD_KC;
    if (d->a_type == MKG_DTYPE_E4M3 &&
        (!mkg_scale_ok(d->a_scale) || !mkg_scale_ok(d->b_scale) || !mkg_scale_ok(d->a_scale * d->b_scale)))
        return MKG_ERR_BAD_SCALE;
    if (d->a_block_scales || d->b_block_scales) {
        if (d->a_type != MKG_DTYPE_E4M3 || !d->a_block_scales || !d->b_block_scales ||
            ((uintptr_t)d->a_block_scales & 3u) != 0 || ((uintptr_t)d->b_block_scales & 3u) != 0 ||
            d->ld_a_block_scales < d->m || d->ld_a_block_scales > MKG_INT_MAX || d->kc != MKG_BLOCK_SCALE_K)
            return MKG_ERR_BAD_BLOCK_SCALES;
        /* NOTE: the consumers read the scales (ld.global.nc) at the start of each chunk, not
         * after the producer's dependency wait, so scales written by an upstream task could be
         * read stale: not allowed until that wait covers them. */
        if (d->deps.wait)
            return MKG_ERR_BAD_BLOCK_SCALES;
    }

    const long long in_size = (long long)mkg_dtype_size(d->a_type);
    const long long out_size = (long long)mkg_dtype_size(d->c_type);
    if (((long long)d->k * in_size) % 16 != 0)
        return MKG_ERR_K_ALIGN;
    if (d->lda > MKG_INT_MAX || d->ldb > MKG_INT_MAX || d->ldc > MKG_INT_MAX)
        return MKG_ERR_DIM_TOO_LARGE;

    if (!d->a)
        return MKG_ERR_NULL_A;
    if (!d->b)
        return MKG_ERR_NULL_B;
    if (!d->c)
        return MKG_ERR_NULL_C;
    if (!mkg_aligned16(d->a))
        return MKG_ERR_MISALIGNED_A;
    if (!mkg_aligned16(d->b))
        return MKG_ERR_MISALIGNED_B;
    if (!mkg_aligned16(d->c))
        return MKG_ERR_MISALIGNED_C;

    if (d->lda < d->k)
        return MKG_ERR_LDA_TOO_SMALL;
    if ((d->lda * in_size) % 16 != 0)
        return MKG_ERR_LDA_ALIGN;
    if (d->ldb < d->k)
        return MKG_ERR_LDB_TOO_SMALL;
    if ((d->ldb * in_size) % 16 != 0)
        return MKG_ERR_LDB_ALIGN;
    if (d->epilogue == MKG_EPI_SILU_MUL && (d->n % 16 != 0 || d->ldc < d->n / 2))
        return MKG_ERR_SILU_N;
    if (d->ldc < mkg_gemm_c_cols(d))
        return MKG_ERR_LDC_TOO_SMALL;
    if ((d->ldc * out_size) % 16 != 0)
        return MKG_ERR_LDC_ALIGN;
    if (d->epilogue == MKG_EPI_RESIDUAL) {
        if (!d->aux)
            return MKG_ERR_NULL_AUX;
        if (!mkg_aligned16(d->aux) || d->ld_aux < d->n || d->ld_aux > MKG_INT_MAX || (d->ld_aux * out_size) % 16 != 0)
            return MKG_ERR_MISALIGNED_AUX;
    }
    if (d->deps.wait && !d->deps.stall)
        return MKG_ERR_DEPS_NO_STALL;
    if (d->deps.flags & ~MKG_DEPS_KNOWN)
        return MKG_ERR_DEPS_FLAGS;
    return MKG_OK;
}

mkg_status mkg_schedule_check(const mkg_gemm_desc *d, int s)
{
    const mkg_schedule_info *info = mkg_schedule_get(s);
    if (!info)
        return MKG_ERR_UNKNOWN_SCHEDULE;
    if (!d)
        return MKG_ERR_NULL_DESC;
    /* NOTE: every row stages 128-byte rows: TK = 64 16-bit elements in the table (32 fp32 or
     * 128 e4m3 in the kernel tables); TK = 128 rows stage two such K sub-tiles. */
    if (!mkg_is_input_dtype(d->a_type) || (info->tile_k != 64 && info->tile_k != 128))
        return MKG_ERR_SCHEDULE_INELIGIBLE;
    /* A two-sub-tile stage must not add a wholly zero-filled 128-byte K tile that the
     * one-sub-tile rows do not run, nor straddle a chunk edge: their wgmma k16 steps, zero
     * padding included, are then the same chunk by chunk, and so are C's bits (a zero tile
     * would turn a -0 accumulator into +0). So K, and KC when K is chunked, span an even
     * number of 128-byte K tiles. */
    if (info->tile_k == 128) {
        const int sub = 128 / (int)mkg_dtype_size(d->a_type);
        if (mkg_ceil_div(d->k, sub) % 2 != 0 || (mkg_chunk_count(d->k, d->kc) > 1 && (d->kc / sub) % 2 != 0))
            return MKG_ERR_SCHEDULE_K_DEPTH;
    }
    /* More than one K chunk needs a kernel compiled with the chunk fold (wgmma N <= 128,
     * cooperative consumers: no ping-pong row); so do fused epilogues, megakernel dependencies
     * (see mkg_epilogue_store) and fp8 block scales (applied to each chunk's partial, even when
     * K is one chunk). */
    const int chunks = mkg_chunk_count(d->k, d->kc);
    const int ck = mkg_schedule_cluster_k(s);
    if (ck > 1) {
        /* Cluster split-K (shipped kernel, chunked instantiation only): every CTA of a cluster
         * runs at least one chunk of its tile, a peer's chunk partials (one 64 x WN fp32 block
         * per consumer warpgroup and chunk) fit in its shared memory past the ring, and no
         * megakernel dependency (wait or signal): the rows run in cluster launches only. */
        const int stage_bytes = (info->tile_m + info->tile_n) * info->tile_k * 2;
        const int free_bytes = MKG_LAUNCH_RING_BYTES + MKG_LAUNCH_EPI_BYTES - info->stages * stage_bytes;
        if (chunks < ck || d->deps.done || d->deps.wait ||
            mkg_ceil_div(chunks, ck) * MKG_LAUNCH_CONSUMERS * 64 * mkg_schedule_wgmma_n(s) * 4 > free_bytes)
            return MKG_ERR_SCHEDULE_INELIGIBLE;
        return MKG_OK;
    }
    /* Multicast cluster rows load A without the dependency wait (mkg_gemm_produce_rest). */
    if (info->cluster > 1 && d->deps.wait)
        return MKG_ERR_SCHEDULE_INELIGIBLE;
    const int needs_chunk_row = chunks > 1 || d->epilogue != MKG_EPI_STORE || d->deps.done || d->a_block_scales;
    if (needs_chunk_row && (mkg_schedule_shipped_only(s) || info->pingpong))
        return MKG_ERR_SCHEDULE_INELIGIBLE;
    /* Rows with wgmma N > 128 do not fold chunks. On a layer of one chunk that counts megakernel
     * dependencies (deps.done), a dispatcher built with MKG_DISPATCH_WIDE (the sample megakernel)
     * runs them with the fused epilogues and the count; mkg_gemm_launch_ex refuses such a layer. */
    if (needs_chunk_row && mkg_schedule_wgmma_n(s) > MKG_CHUNKED_MAX_WN &&
        (chunks > 1 || d->a_block_scales || !d->deps.done))
        return MKG_ERR_SCHEDULE_INELIGIBLE;
    return MKG_OK;
}
